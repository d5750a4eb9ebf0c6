-- The storefront (decisions 14): the catalogue across every brand, its kept facet counts,
-- and the views counted once per visitor per day. SQLite: migrations/sqlite/0033.
--
-- A listing is in the catalogue while it is live, active and in stock; the three partial
-- indexes below hold only such listings, so a catalogue page walks just them, in its order.
CREATE INDEX listings_market_recent ON listings (created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;
CREATE INDEX listings_market_category ON listings (category, created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;
-- What a buyer pays (the sale price when set), for the price sorts and range.
CREATE INDEX listings_market_price ON listings ((COALESCE(sale_price_pence, regular_price_pence)), id)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;

-- The catalogue's facet counts, kept like `listing_counts`: rows of +1 and -1 appended by the
-- trigger below and folded by every node (`Store::fold_market_counts`). Each change is
-- counted twice: under its brand and under brand 0, every brand's.
CREATE TABLE market_counts (
    brand_id  BIGINT NOT NULL,
    category  TEXT   NOT NULL,
    condition TEXT   NOT NULL,
    channel   TEXT   NOT NULL,
    live      BIGINT NOT NULL
);
CREATE INDEX market_counts_brand ON market_counts (brand_id, category, condition, channel, live);
INSERT INTO market_counts (brand_id, category, condition, channel, live)
    SELECT brand_id, category, condition, channel, COUNT(*) FROM listings
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0
    GROUP BY brand_id, category, condition, channel;
INSERT INTO market_counts (brand_id, category, condition, channel, live)
    SELECT 0, category, condition, channel, COUNT(*) FROM listings
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0
    GROUP BY category, condition, channel;

CREATE OR REPLACE FUNCTION rehome_market_counts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was BOOLEAN := TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL AND OLD.status = 'active' AND OLD.quantity > 0;
    now_is BOOLEAN := TG_OP IN ('UPDATE', 'INSERT') AND NEW.deleted_at IS NULL AND NEW.status = 'active' AND NEW.quantity > 0;
BEGIN
    IF TG_OP = 'UPDATE' AND was = now_is AND (NOT now_is OR (OLD.brand_id = NEW.brand_id
       AND OLD.category = NEW.category AND OLD.condition = NEW.condition AND OLD.channel = NEW.channel)) THEN
        RETURN NULL;
    END IF;
    IF was THEN
        INSERT INTO market_counts (brand_id, category, condition, channel, live)
            VALUES (OLD.brand_id, OLD.category, OLD.condition, OLD.channel, -1), (0, OLD.category, OLD.condition, OLD.channel, -1);
    END IF;
    IF now_is THEN
        INSERT INTO market_counts (brand_id, category, condition, channel, live)
            VALUES (NEW.brand_id, NEW.category, NEW.condition, NEW.channel, 1), (0, NEW.category, NEW.condition, NEW.channel, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER market_counts AFTER INSERT OR DELETE
    OR UPDATE OF deleted_at, brand_id, status, quantity, category, condition, channel ON listings
    FOR EACH ROW EXECUTE FUNCTION rehome_market_counts();

-- Views of listing pages, one per visitor, listing and day (decisions 14.2); see the SQLite
-- migration for why no address is kept.
CREATE TABLE view_salts (
    day  TEXT NOT NULL PRIMARY KEY,
    salt TEXT NOT NULL
);
CREATE TABLE listing_views (
    day     TEXT NOT NULL,
    visitor TEXT NOT NULL,
    PRIMARY KEY (day, visitor)
);
