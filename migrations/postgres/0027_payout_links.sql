-- A customer's link to choose a payout on a page (decisions 14.6). SQLite: 0035.
CREATE TABLE payout_links (
    token_sha256 TEXT        NOT NULL PRIMARY KEY,
    order_id     BIGINT      NOT NULL REFERENCES orders (id),
    customer_id  TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    used_at      TIMESTAMPTZ
);
CREATE INDEX payout_links_order ON payout_links (order_id);

-- The dashboard's Orders page: a brand's orders, newest first.
CREATE INDEX orders_brand_recent ON orders (brand_id, id);

-- A brand's page on the storefront: its listings on sale, newest first (SQLite: 0035).
CREATE INDEX listings_market_brand ON listings (brand_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;
