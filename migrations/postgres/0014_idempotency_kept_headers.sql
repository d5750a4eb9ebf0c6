-- The kept headers of an idempotent answer (decisions 11.5); see
-- migrations/sqlite/0022_idempotency_kept_headers.sql.
ALTER TABLE idempotency_keys ADD COLUMN headers TEXT;
