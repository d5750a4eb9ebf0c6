-- Listings: money in integer pence, multi-value fields as JSON text, soft deletion.
CREATE TABLE listings (
    id                         INTEGER PRIMARY KEY,
    brand_id                   INTEGER NOT NULL REFERENCES brands (id),
    -- The seller: the user whose key created the listing; only they may change it.
    user_id                    INTEGER NOT NULL REFERENCES users (id),
    status                     TEXT    NOT NULL CHECK (status IN ('active', 'draft', 'closed')),
    channel                    TEXT    NOT NULL CHECK (channel IN ('clearance', 'exchange')),
    title                      TEXT    NOT NULL,
    description                TEXT,
    category                   TEXT    NOT NULL,
    condition                  TEXT    NOT NULL,
    regular_price_pence        INTEGER NOT NULL CHECK (regular_price_pence > 0),
    sale_price_pence           INTEGER CHECK (sale_price_pence > 0 AND sale_price_pence < regular_price_pence),
    rrp_pence                  INTEGER CHECK (rrp_pence > 0),
    delivery_contribution_gbp  INTEGER NOT NULL CHECK (delivery_contribution_gbp IN (0, 30, 60, 129)),
    -- Manufacturer brand, in the spelling of the manufacturer_brands entry it matched.
    manufacturer_brand         TEXT,
    colour                     TEXT,
    fabric                     TEXT,
    age_years                  TEXT,
    available_from             TEXT,
    quantity                   INTEGER NOT NULL CHECK (quantity >= 0),
    measurements               TEXT    NOT NULL DEFAULT '[]',
    exposed_to                 TEXT    NOT NULL DEFAULT '[]',
    faults                     TEXT    NOT NULL DEFAULT '[]',
    sku                        TEXT,
    warehouse_location         TEXT,
    -- The collection warehouse (warehouses.id); kept without a foreign key so the address
    -- book can change without touching listings.
    warehouse_id               TEXT,
    view_count                 INTEGER NOT NULL DEFAULT 0,
    -- Bumped by every update: a PATCH writes only over the version it validated against.
    version                    INTEGER NOT NULL DEFAULT 1,
    -- RFC 3339 UTC with a fixed six-digit fraction, so text order is time order.
    created_at                 TEXT    NOT NULL,
    updated_at                 TEXT    NOT NULL,
    deleted_at                 TEXT
);

-- The list page and its count read only these indexes; trashed rows are not in them.
-- With a status filter (the default `active`): equality on (brand, status), newest first,
-- channel checked inside the index.
CREATE INDEX listings_brand_status_recent
    ON listings (brand_id, status, created_at DESC, id DESC, channel)
    WHERE deleted_at IS NULL;
-- With `status=any`: newest first across statuses, channel checked inside the index.
CREATE INDEX listings_brand_recent
    ON listings (brand_id, created_at DESC, id DESC, channel, status)
    WHERE deleted_at IS NULL;

-- The ordered images of each listing. An entry comes from a URL to import (decisions 3.10)
-- or from an uploaded photo (attachment_id); `url` is set once the image is ready.
CREATE TABLE listing_images (
    id             INTEGER PRIMARY KEY,
    listing_id     INTEGER NOT NULL REFERENCES listings (id),
    position       INTEGER NOT NULL,
    source_url     TEXT,
    attachment_id  INTEGER,
    status         TEXT    NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
    url            TEXT,
    error          TEXT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    CHECK (source_url IS NOT NULL OR attachment_id IS NOT NULL),
    UNIQUE (listing_id, position)
);
-- The import worker's queue.
CREATE INDEX listing_images_pending ON listing_images (created_at) WHERE status = 'pending';
