-- Every previous signing secret whose overlap has not ended keeps signing (issue 32), not
-- only the last one replaced: a JSON array, newest first, of {"secret", "expires_at"}
-- (RFC 3339), at most 5 (domain::webhook::MAX_PREVIOUS_SECRETS). The single
-- previous_secret / previous_expires_at of migration 0012 moves into it and is no longer read.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secrets TEXT NOT NULL DEFAULT '[]';
UPDATE webhook_endpoints
SET previous_secrets = json_array(json_object('secret', previous_secret, 'expires_at', previous_expires_at))
WHERE previous_secret IS NOT NULL AND previous_expires_at IS NOT NULL;
UPDATE webhook_endpoints SET previous_secret = NULL, previous_expires_at = NULL;
