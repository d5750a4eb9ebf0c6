-- Listing sync (decisions 11.2); see migrations/sqlite/0015_listing_sync.sql.
CREATE INDEX listings_sync ON listings (brand_id, updated_at, id);

CREATE TABLE listing_clocks (
    brand_id BIGINT PRIMARY KEY REFERENCES brands (id),
    micros   BIGINT NOT NULL
);
