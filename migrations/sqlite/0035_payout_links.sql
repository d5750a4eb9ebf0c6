-- A customer's link to choose a payout on a page (decisions 14.6). PostgreSQL: 0027.
-- Single use, 14 days. Only the SHA-256 of the link's token is stored.
CREATE TABLE payout_links (
    token_sha256 TEXT    NOT NULL PRIMARY KEY,
    order_id     INTEGER NOT NULL REFERENCES orders (id),
    customer_id  TEXT    NOT NULL,
    created_at   TEXT    NOT NULL,
    expires_at   TEXT    NOT NULL,
    used_at      TEXT
);
CREATE INDEX payout_links_order ON payout_links (order_id);

-- The dashboard's Orders page: a brand's orders, newest first.
CREATE INDEX orders_brand_recent ON orders (brand_id, id);

-- A brand's page on the storefront: its listings on sale, newest first, without walking the
-- whole catalogue's index (PostgreSQL planned that for the biggest brand: 88 ms at 1M).
CREATE INDEX listings_market_brand ON listings (brand_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;
