-- Payment by Stripe Checkout (decisions 14.4). PostgreSQL: migrations/postgres/0028.
--
-- A buyer's purchase while it waits for payment: its stock is already taken from the listing
-- (by the same conditional update as an order), so nobody else can buy it, and the order is
-- written only when the payment is confirmed, from what the hold kept (the price the buyer
-- was asked to pay). A hold is `pending` until it is `paid` (then `order_id` names its order)
-- or `released` (its stock given back). The job queue claims a pending hold when
-- `next_attempt_at` comes (its end, then each retry while the payment service cannot be
-- asked), asks the payment service how the payment stands and settles it.
--
-- The buyer's details are kept here only while the hold is pending: a paid hold's move to
-- `order_buyers`, a released hold's are cleared. The page token is stored as its SHA-256
-- only, as for `order_buyers`.
CREATE TABLE payment_holds (
    id                         INTEGER PRIMARY KEY,
    brand_id                   INTEGER NOT NULL REFERENCES brands (id),
    listing_id                 INTEGER NOT NULL REFERENCES listings (id),
    channel                    TEXT    NOT NULL,
    quantity                   INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_pence           INTEGER NOT NULL CHECK (unit_price_pence > 0),
    -- The brand's name as the buyer saw it, for the confirmation mail.
    brand_name                 TEXT    NOT NULL,
    title                      TEXT    NOT NULL,
    delivery_contribution_gbp  INTEGER NOT NULL,
    buyer_window_start         TEXT    NOT NULL,
    buyer_window_end           TEXT    NOT NULL,
    -- The page token sealed with the data key, for the confirmation mail's link (until settled).
    token_sealed               BLOB,
    token_sha256               TEXT    NOT NULL UNIQUE,
    name                       TEXT,
    email                      TEXT,
    phone                      TEXT,
    postcode                   TEXT,
    -- The payment service's session (Stripe: `cs_…`) and the page where the buyer pays.
    provider                   TEXT    NOT NULL,
    session_id                 TEXT    UNIQUE,
    session_url                TEXT,
    status                     TEXT    NOT NULL CHECK (status IN ('pending', 'paid', 'released')),
    order_id                   INTEGER UNIQUE REFERENCES orders (id),
    held_until                 TEXT    NOT NULL,
    -- The job queue's columns (store::queue).
    next_attempt_at            TEXT    NOT NULL,
    attempts                   INTEGER NOT NULL DEFAULT 0,
    lease_owner                TEXT,
    leased_until               TEXT,
    last_error                 TEXT,
    created_at                 TEXT    NOT NULL,
    updated_at                 TEXT    NOT NULL
);
CREATE INDEX payment_holds_due ON payment_holds (next_attempt_at) WHERE status = 'pending';
CREATE INDEX payment_holds_updated ON payment_holds (updated_at) WHERE status <> 'pending';
