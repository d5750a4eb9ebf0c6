-- Listings at size (issue 34); SQLite: migrations/sqlite/0026_listings_at_scale.sql.
--
-- 1. The brands' kept counts by channel too: a list page filtered by status and channel
--    reads its `total` here instead of counting hundreds of thousands of index entries.
DROP TRIGGER listing_counts ON listings;
DROP TABLE listing_counts;
CREATE TABLE listing_counts (
    brand_id BIGINT NOT NULL,
    status   TEXT   NOT NULL,
    channel  TEXT   NOT NULL,
    live     BIGINT NOT NULL
);
CREATE INDEX listing_counts_brand ON listing_counts (brand_id, status, channel, live);
INSERT INTO listing_counts (brand_id, status, channel, live)
    SELECT brand_id, status, channel, COUNT(*) FROM listings WHERE deleted_at IS NULL
    GROUP BY brand_id, status, channel;

CREATE OR REPLACE FUNCTION rehome_listing_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.deleted_at IS NULL) = (NEW.deleted_at IS NULL)
       AND OLD.brand_id = NEW.brand_id AND OLD.status = NEW.status AND OLD.channel = NEW.channel THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        INSERT INTO listing_counts (brand_id, status, channel, live) VALUES (OLD.brand_id, OLD.status, OLD.channel, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.deleted_at IS NULL THEN
        INSERT INTO listing_counts (brand_id, status, channel, live) VALUES (NEW.brand_id, NEW.status, NEW.channel, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER listing_counts AFTER INSERT OR DELETE OR UPDATE OF deleted_at, brand_id, status, channel ON listings
    FOR EACH ROW EXECUTE FUNCTION rehome_listing_counts();

-- 2. `q` words (decisions 11.2) found through trigram indexes (pg_trgm) of the very
--    expressions the rule compares, `lower(title)` and `lower(COALESCE(sku, ''))`: the
--    rule's `LIKE` is answered by the index, unchanged.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX listings_title_trgm ON listings USING gin (lower(title) gin_trgm_ops);
CREATE INDEX listings_sku_trgm ON listings USING gin (lower(COALESCE(sku, '')) gin_trgm_ops);
