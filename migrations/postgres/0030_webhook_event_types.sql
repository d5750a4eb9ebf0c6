-- The event types an endpoint receives (decisions 15.3). SQLite: migrations/sqlite/0038.
ALTER TABLE webhook_endpoints ADD COLUMN event_types TEXT NOT NULL DEFAULT 'redemption.created,collection.scheduled';
