-- Buying on the storefront (decisions 14.3, 14.5). PostgreSQL: migrations/postgres/0026.
--
-- The buyer of an order placed from a listing's page: only what the order page and its mails
-- need, kept apart from the order (which the brand's books keep) so that the retention job can
-- delete it whole after its period (docs/security.md). The order page's token is never
-- stored: only its SHA-256 (the token carries 128 random bits, so the hash cannot be searched).
CREATE TABLE order_buyers (
    order_id     INTEGER PRIMARY KEY REFERENCES orders (id),
    token_sha256 TEXT    NOT NULL UNIQUE,
    name         TEXT    NOT NULL,
    email        TEXT    NOT NULL,
    phone        TEXT,
    postcode     TEXT    NOT NULL,
    created_at   TEXT    NOT NULL
);
CREATE INDEX order_buyers_created ON order_buyers (created_at);

-- Secrets the storefront makes for itself on first use and every node shares (the key of
-- its anti-forgery tokens).
CREATE TABLE site_secrets (
    name   TEXT NOT NULL PRIMARY KEY,
    secret TEXT NOT NULL
);
