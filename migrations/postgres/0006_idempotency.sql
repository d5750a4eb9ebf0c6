-- Idempotency keys (decisions 11.1); see migrations/sqlite/0014_idempotency.sql.
CREATE TABLE idempotency_keys (
    key_id        BIGINT      NOT NULL REFERENCES api_keys (id),
    idem_key      TEXT        NOT NULL,
    fingerprint   BYTEA       NOT NULL,
    state         TEXT        NOT NULL CHECK (state IN ('running', 'done')),
    status        BIGINT,
    content_type  TEXT,
    body          BYTEA,
    created_at    TIMESTAMPTZ NOT NULL,
    lease_until   TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
