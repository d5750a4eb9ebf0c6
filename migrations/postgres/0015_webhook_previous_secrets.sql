-- Every previous signing secret still in its overlap; see
-- migrations/sqlite/0023_webhook_previous_secrets.sql.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secrets TEXT NOT NULL DEFAULT '[]';
UPDATE webhook_endpoints
SET previous_secrets = json_build_array(json_build_object(
        'secret', previous_secret,
        'expires_at', to_char(previous_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))::text
WHERE previous_secret IS NOT NULL AND previous_expires_at IS NOT NULL;
UPDATE webhook_endpoints SET previous_secret = NULL, previous_expires_at = NULL;
