-- Rotation with an overlap (decisions 11.4); see migrations/sqlite/0012_webhook_rotation.sql.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN previous_expires_at TIMESTAMPTZ;
