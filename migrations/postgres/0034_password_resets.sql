-- Password reset links; see migrations/sqlite/0042_password_resets.sql.
CREATE TABLE password_resets (
    id            BIGSERIAL   PRIMARY KEY,
    user_id       BIGINT      NOT NULL REFERENCES users (id),
    token_hash    BYTEA       NOT NULL UNIQUE,
    requested_by  BIGINT      REFERENCES users (id),
    ip            TEXT,
    created_at    TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    used_at       TIMESTAMPTZ
);
CREATE INDEX password_resets_by_user ON password_resets (user_id, created_at);
CREATE INDEX password_resets_by_ip ON password_resets (ip, created_at);
