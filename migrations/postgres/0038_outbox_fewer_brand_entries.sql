-- A delivery moved three entries keyed by brand: out of the brand's due events and, in
-- (status, brand_id, seq), from 'pending' to 'delivered'. The delivery log by status is now
-- read from indexes a delivery does not move, or moves once or twice: a brand's pending
-- events from this partial index in their order (PostgreSQL cannot be told which index to
-- read, so the one that gives both the filter and the order is there to be chosen whatever
-- the statistics; SQLite, told by name, sorts the brand's due events instead and writes
-- one entry less), its dead ones from their partial index (a delivery never touches it),
-- its delivered ones from its list (webhook_events_brand), counted as the list less the
-- other two.
DROP INDEX webhook_events_status_brand;
CREATE INDEX webhook_events_brand_dead ON webhook_events (brand_id, seq) WHERE status = 'dead';
CREATE INDEX webhook_events_brand_pending ON webhook_events (brand_id, seq) WHERE status = 'pending';
