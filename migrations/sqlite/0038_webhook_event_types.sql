-- The event types an endpoint receives (decisions 15.3): the spec's two by default; the
-- listing events only when the brand asks for them. Comma-separated type names.
-- PostgreSQL: migrations/postgres/0030.
ALTER TABLE webhook_endpoints ADD COLUMN event_types TEXT NOT NULL DEFAULT 'redemption.created,collection.scheduled';
