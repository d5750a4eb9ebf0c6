-- The warehouse address book of each brand. Exactly one warehouse of a brand is the
-- default whenever it has any: the partial unique index refuses a second default, and
-- transactions make sure a brand with warehouses never ends with none.
CREATE TABLE warehouses (
    id             TEXT    PRIMARY KEY,            -- UUID
    brand_id       INTEGER NOT NULL REFERENCES brands (id),
    label          TEXT    NOT NULL,
    contact_name   TEXT    NOT NULL DEFAULT '',
    contact_email  TEXT    NOT NULL DEFAULT '',
    contact_phone  TEXT    NOT NULL DEFAULT '',
    address_1      TEXT    NOT NULL DEFAULT '',
    address_2      TEXT    NOT NULL DEFAULT '',
    city           TEXT    NOT NULL DEFAULT '',
    postcode       TEXT    NOT NULL DEFAULT '',
    country        TEXT    NOT NULL DEFAULT 'United Kingdom',
    is_default     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE UNIQUE INDEX warehouses_one_default ON warehouses (brand_id) WHERE is_default;
CREATE INDEX warehouses_brand ON warehouses (brand_id, created_at);
