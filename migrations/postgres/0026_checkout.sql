-- Buying on the storefront (decisions 14.3, 14.5). SQLite: migrations/sqlite/0034, which
-- says why each column is there.
CREATE TABLE order_buyers (
    order_id     BIGINT      PRIMARY KEY REFERENCES orders (id),
    token_sha256 TEXT        NOT NULL UNIQUE,
    name         TEXT        NOT NULL,
    email        TEXT        NOT NULL,
    phone        TEXT,
    postcode     TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX order_buyers_created ON order_buyers (created_at);

CREATE TABLE site_secrets (
    name   TEXT NOT NULL PRIMARY KEY,
    secret TEXT NOT NULL
);
