-- Listing sync (decisions 11.2): `GET /v1/listings?updated_since=` walks a brand's listings,
-- trashed ones too, in (updated_at, id) order.
CREATE INDEX listings_sync ON listings (brand_id, updated_at, id);

-- Each brand's listing clock: the last `updated_at` handed to a change of its listings, in
-- microseconds since the epoch. A change takes the next instant (never earlier than the last
-- one) from this row, and holds the row until it commits, so the brand's changes commit in
-- the order of their `updated_at`: a sync walk never passes a change that commits later.
CREATE TABLE listing_clocks (
    brand_id INTEGER PRIMARY KEY REFERENCES brands (id),
    micros   INTEGER NOT NULL
);
