-- Kept answers are stored compactly (issue 52 item 5): a body of a few hundred bytes or more
-- is kept deflated (RFC 1951), marked here; rows kept before are as they were.
ALTER TABLE idempotency_keys ADD COLUMN body_deflated INTEGER NOT NULL DEFAULT 0;
