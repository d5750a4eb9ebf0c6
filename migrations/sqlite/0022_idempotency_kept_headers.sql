-- An idempotent replay answers the kept headers too (decisions 11.5): the first answer's
-- `ETag`, `Location` and `Content-Disposition`, as a JSON array of [name, value] pairs.
ALTER TABLE idempotency_keys ADD COLUMN headers TEXT;
