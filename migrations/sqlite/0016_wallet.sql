-- The wallet (decisions 10): each brand's ledger of what its sales earn, the statements
-- (remittances) that pay it, and the monthly runs' leases.
-- Timestamps are RFC 3339 UTC with a fixed six-digit fraction, so text order is time order.

-- What sold, as it was when it sold: a later edit of the listing never changes the money
-- of a sale (NULL on orders placed before this migration: the listing's then).
ALTER TABLE orders ADD COLUMN title TEXT;
ALTER TABLE orders ADD COLUMN delivery_contribution_gbp INTEGER;

-- A statement: every entry of the brand available at `period_end` and not yet paid.
-- `billing` is the billing entity as it was at issue (JSON), never updated.
CREATE TABLE remittances (
    id                INTEGER PRIMARY KEY,
    brand_id          INTEGER NOT NULL REFERENCES brands (id),
    number            INTEGER NOT NULL CHECK (number > 0),
    period_end        TEXT    NOT NULL,
    issued_at         TEXT    NOT NULL,
    billing           TEXT    NOT NULL,
    line_count        INTEGER NOT NULL CHECK (line_count >= 0),
    gross_pence       INTEGER NOT NULL,
    commission_pence  INTEGER NOT NULL,
    vat_pence         INTEGER NOT NULL,
    delivery_pence    INTEGER NOT NULL,
    amount_pence      INTEGER NOT NULL,
    -- Sequential per brand: the next number is taken under the brand's lock.
    UNIQUE (brand_id, number)
);

-- One entry per settled sale or credit trade-in; `order_id` is unique, so an order can
-- never earn twice. Pending until `available_at`, available after, paid once on a statement.
CREATE TABLE ledger_entries (
    id                INTEGER PRIMARY KEY,
    brand_id          INTEGER NOT NULL REFERENCES brands (id),
    type              TEXT    NOT NULL CHECK (type IN ('sale', 'trade_in')),
    order_id          INTEGER NOT NULL UNIQUE REFERENCES orders (id),
    listing_id        INTEGER NOT NULL REFERENCES listings (id),
    title             TEXT    NOT NULL,
    quantity          INTEGER NOT NULL CHECK (quantity > 0),
    gross_pence       INTEGER NOT NULL CHECK (gross_pence >= 0),
    commission_pence  INTEGER NOT NULL CHECK (commission_pence >= 0),
    vat_pence         INTEGER NOT NULL CHECK (vat_pence >= 0),
    delivery_pence    INTEGER NOT NULL CHECK (delivery_pence >= 0),
    amount_pence      INTEGER NOT NULL CHECK (amount_pence >= 0),
    delivered_at      TEXT    NOT NULL,
    available_at      TEXT    NOT NULL,
    created_at        TEXT    NOT NULL,
    remittance_id     INTEGER REFERENCES remittances (id)
);
CREATE INDEX ledger_entries_brand ON ledger_entries (brand_id, id);
CREATE INDEX ledger_entries_unpaid ON ledger_entries (available_at, brand_id) WHERE remittance_id IS NULL;
CREATE INDEX ledger_entries_remittance ON ledger_entries (remittance_id, id);

-- The monthly runs: the node that holds a period's lease runs it; `finished_at` once done.
CREATE TABLE remittance_runs (
    period_end    TEXT PRIMARY KEY,
    lease_owner   TEXT,
    leased_until  TEXT,
    finished_at   TEXT
);
