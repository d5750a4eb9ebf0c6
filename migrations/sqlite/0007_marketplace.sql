-- Marketplace flows: each brand's payout options, orders placed by buyers, the customers'
-- payout choices (redemptions) and the collection of sold clearance items.
-- Timestamps are RFC 3339 UTC with a fixed six-digit fraction, so text order is time order.

-- One row per brand that changed its payout options; absent means the defaults.
CREATE TABLE payout_options (
    brand_id              INTEGER PRIMARY KEY REFERENCES brands (id),
    credit_enabled        BOOLEAN NOT NULL,
    cash_enabled          BOOLEAN NOT NULL,
    credit_boost_percent  INTEGER NOT NULL CHECK (credit_boost_percent BETWEEN 100 AND 200),
    code_validity_days    INTEGER NOT NULL CHECK (code_validity_days BETWEEN 1 AND 1095),
    updated_at            TEXT    NOT NULL
);

-- A sale on the marketplace. Channel and unit price are copied from the listing at the
-- time of sale, so later edits of the listing never change what was sold.
CREATE TABLE orders (
    id                  INTEGER PRIMARY KEY,
    brand_id            INTEGER NOT NULL REFERENCES brands (id),
    listing_id          INTEGER NOT NULL REFERENCES listings (id),
    channel             TEXT    NOT NULL CHECK (channel IN ('clearance', 'exchange')),
    quantity            INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_pence    INTEGER NOT NULL CHECK (unit_price_pence > 0),
    -- The buyer's 10-day delivery window, inclusive dates.
    buyer_window_start  TEXT    NOT NULL,
    buyer_window_end    TEXT    NOT NULL,
    status              TEXT    NOT NULL CHECK (status IN ('placed', 'completed')),
    completed_at        TEXT,
    created_at          TEXT    NOT NULL
);
-- The collections list: a brand's clearance orders in window order.
CREATE INDEX orders_brand_channel ON orders (brand_id, channel, buyer_window_start, id);

-- A customer's payout choice for a sold exchange item: at most one per order.
-- A credit code is never stored: only the SHA-256 of its normalised form (for lookup; the
-- code carries about 78 random bits, so the hash cannot be reversed by search) and a hint.
CREATE TABLE redemptions (
    id                  TEXT    PRIMARY KEY,              -- red_…
    brand_id            INTEGER NOT NULL REFERENCES brands (id),
    order_id            INTEGER NOT NULL UNIQUE REFERENCES orders (id),
    customer_id         TEXT    NOT NULL,
    customer_choice     TEXT    NOT NULL CHECK (customer_choice IN ('credit', 'cash')),
    credit_destination  TEXT    CHECK (credit_destination IN ('existing_order', 'code')),
    value_pence         INTEGER NOT NULL CHECK (value_pence >= 0),
    code_hash           BLOB    UNIQUE,
    code_hint           TEXT,
    expires_at          TEXT,
    original_order_id   TEXT,
    related_listing_id  INTEGER NOT NULL,
    sale_completed_at   TEXT    NOT NULL,
    created_at          TEXT    NOT NULL,
    -- Set once, when the code is spent at checkout.
    redeemed_at         TEXT,
    redeemed_order_reference TEXT,
    CHECK ((credit_destination = 'code') = (code_hash IS NOT NULL))
);
-- Polling walks a brand's redemptions in (created_at, id) order.
CREATE INDEX redemptions_brand_created ON redemptions (brand_id, created_at, id);

-- The confirmed collection of a sold clearance item: at most one per order.
CREATE TABLE collections (
    id               TEXT    PRIMARY KEY,                 -- col_…
    brand_id         INTEGER NOT NULL REFERENCES brands (id),
    order_id         INTEGER NOT NULL UNIQUE REFERENCES orders (id),
    scheduled_for    TEXT    NOT NULL,
    scheduled_at     TEXT    NOT NULL,
    -- Copied at scheduling time, so the event and later reads agree even if the address
    -- book changes.
    warehouse_id     TEXT,
    warehouse_label  TEXT    NOT NULL
);
