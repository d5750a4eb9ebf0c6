-- Rotation with an overlap (decisions 11.4): until `previous_expires_at` every delivery is
-- signed with the new secret and with `previous_secret`, so receivers can switch over.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN previous_expires_at TEXT;
