-- Idempotency keys (decisions 11.1): per API key, kept 24 hours, in the database so that
-- every node sees them. A row is `running` while its first request runs (a duplicate then
-- answers 409) and `done` with the kept 2xx answer, which repeats replay. A non-2xx answer
-- deletes the row, so a corrected retry may run.
CREATE TABLE idempotency_keys (
    key_id        INTEGER NOT NULL REFERENCES api_keys (id),
    idem_key      TEXT    NOT NULL,
    -- SHA-256 of the method, the path with its query and the body.
    fingerprint   BLOB    NOT NULL,
    state         TEXT    NOT NULL CHECK (state IN ('running', 'done')),
    status        INTEGER,
    content_type  TEXT,
    body          BLOB,
    created_at    TEXT    NOT NULL,
    -- A `running` row whose node died is taken over after this instant.
    lease_until   TEXT    NOT NULL,
    expires_at    TEXT    NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
