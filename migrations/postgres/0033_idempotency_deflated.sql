-- Kept answers are stored compactly; see migrations/sqlite/0041_idempotency_deflated.sql.
-- (A BYTEA is compressed by TOAST only past about 2 kB: a listing's answer is not.)
ALTER TABLE idempotency_keys ADD COLUMN body_deflated BIGINT NOT NULL DEFAULT 0;
