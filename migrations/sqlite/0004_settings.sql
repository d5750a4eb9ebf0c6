-- Brand settings: one public profile and one billing entity per brand, each created on its
-- first save. Text fields never set are empty strings.
CREATE TABLE brand_profiles (
    brand_id       INTEGER PRIMARY KEY REFERENCES brands (id),
    display_name   TEXT    NOT NULL,
    tagline        TEXT    NOT NULL DEFAULT '',
    description    TEXT    NOT NULL DEFAULT '',
    support_email  TEXT    NOT NULL DEFAULT '',
    support_phone  TEXT    NOT NULL DEFAULT '',
    logo_url       TEXT    NOT NULL DEFAULT '',
    accent_color   TEXT    NOT NULL DEFAULT '',
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);

CREATE TABLE billing_entities (
    brand_id        INTEGER PRIMARY KEY REFERENCES brands (id),
    company_name    TEXT    NOT NULL DEFAULT '',
    address_1       TEXT    NOT NULL DEFAULT '',
    address_2       TEXT    NOT NULL DEFAULT '',
    city            TEXT    NOT NULL DEFAULT '',
    postcode        TEXT    NOT NULL DEFAULT '',
    country         TEXT    NOT NULL DEFAULT 'United Kingdom',
    company_number  TEXT    NOT NULL DEFAULT '',
    vat_number      TEXT    NOT NULL DEFAULT '',
    invoice_email   TEXT    NOT NULL DEFAULT '',
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);

-- One row per brand whose warehouse address book has changed. Every change to a brand's
-- warehouses first bumps its revision in the same transaction: on PostgreSQL the row lock
-- this takes serialises the brand's warehouse changes until commit, so none can act on a
-- stale view of which warehouse is the default (SQLite has a single writer anyway).
CREATE TABLE warehouse_books (
    brand_id  INTEGER PRIMARY KEY REFERENCES brands (id),
    revision  INTEGER NOT NULL
);
