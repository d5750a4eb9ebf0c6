-- A delivery moved three entries keyed by brand: out of the brand's due events and, in
-- (status, brand_id, seq), from 'pending' to 'delivered'. Spread over the brands, each was a
-- page written to the WAL and again by the checkpoint: 9.5 of the 10.9 pages a delivery
-- wrote at a million pending. The delivery log by status is now read from indexes a
-- delivery does not move, or moves once: a brand's pending events from its due events
-- (webhook_events_brand_due), its dead ones from this partial index (a delivery never
-- touches it), its delivered ones from its list (webhook_events_brand), counted as the
-- list less the other two.
DROP INDEX webhook_events_status_brand;
CREATE INDEX webhook_events_brand_dead ON webhook_events (brand_id, seq) WHERE status = 'dead';
