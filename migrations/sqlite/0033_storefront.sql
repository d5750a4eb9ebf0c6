-- The storefront (decisions 14): the catalogue across every brand, its kept facet counts,
-- and the views counted once per visitor per day. PostgreSQL: migrations/postgres/0025.
--
-- A listing is in the catalogue while it is live, active and in stock; the three partial
-- indexes below hold only such listings, so a catalogue page walks just them, in its order.
CREATE INDEX listings_market_recent ON listings (created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;
CREATE INDEX listings_market_category ON listings (category, created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;
-- What a buyer pays (the sale price when set), for the price sorts and range.
CREATE INDEX listings_market_price ON listings (COALESCE(sale_price_pence, regular_price_pence), id)
    WHERE deleted_at IS NULL AND status = 'active' AND quantity > 0;

-- The catalogue's facet counts, kept like `listing_counts`: rows of +1 and -1 appended by the
-- triggers below and folded by every node (`Store::fold_market_counts`). Each change is
-- counted twice: under its brand and under brand 0, every brand's, so that the catalogue's
-- counts sum a few dozen rows whatever the number of brands or listings.
CREATE TABLE market_counts (
    brand_id  INTEGER NOT NULL,
    category  TEXT    NOT NULL,
    condition TEXT    NOT NULL,
    channel   TEXT    NOT NULL,
    live      INTEGER NOT NULL
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

CREATE TRIGGER market_counts_insert AFTER INSERT ON listings
WHEN NEW.deleted_at IS NULL AND NEW.status = 'active' AND NEW.quantity > 0
BEGIN
    INSERT INTO market_counts (brand_id, category, condition, channel, live)
        VALUES (NEW.brand_id, NEW.category, NEW.condition, NEW.channel, 1), (0, NEW.category, NEW.condition, NEW.channel, 1);
END;

CREATE TRIGGER market_counts_delete AFTER DELETE ON listings
WHEN OLD.deleted_at IS NULL AND OLD.status = 'active' AND OLD.quantity > 0
BEGIN
    INSERT INTO market_counts (brand_id, category, condition, channel, live)
        VALUES (OLD.brand_id, OLD.category, OLD.condition, OLD.channel, -1), (0, OLD.category, OLD.condition, OLD.channel, -1);
END;

CREATE TRIGGER market_counts_update
AFTER UPDATE OF deleted_at, brand_id, status, quantity, category, condition, channel ON listings
WHEN ((OLD.deleted_at IS NULL AND OLD.status = 'active' AND OLD.quantity > 0)
      <> (NEW.deleted_at IS NULL AND NEW.status = 'active' AND NEW.quantity > 0))
  OR ((NEW.deleted_at IS NULL AND NEW.status = 'active' AND NEW.quantity > 0)
      AND (OLD.brand_id <> NEW.brand_id OR OLD.category <> NEW.category OR OLD.condition <> NEW.condition
           OR OLD.channel <> NEW.channel))
BEGIN
    INSERT INTO market_counts (brand_id, category, condition, channel, live)
        SELECT OLD.brand_id, OLD.category, OLD.condition, OLD.channel, -1
        WHERE OLD.deleted_at IS NULL AND OLD.status = 'active' AND OLD.quantity > 0
        UNION ALL
        SELECT 0, OLD.category, OLD.condition, OLD.channel, -1
        WHERE OLD.deleted_at IS NULL AND OLD.status = 'active' AND OLD.quantity > 0;
    INSERT INTO market_counts (brand_id, category, condition, channel, live)
        SELECT NEW.brand_id, NEW.category, NEW.condition, NEW.channel, 1
        WHERE NEW.deleted_at IS NULL AND NEW.status = 'active' AND NEW.quantity > 0
        UNION ALL
        SELECT 0, NEW.category, NEW.condition, NEW.channel, 1
        WHERE NEW.deleted_at IS NULL AND NEW.status = 'active' AND NEW.quantity > 0;
END;

-- Views of listing pages, one per visitor, listing and day (decisions 14.2). A visitor is a
-- hash of the day's salt, the address, the user agent and the listing: no address is kept,
-- and once a day's salt is deleted its hashes cannot be tied to anyone. Both tables hold
-- today's rows only: a new day's salt deletes the earlier days.
CREATE TABLE view_salts (
    day  TEXT NOT NULL PRIMARY KEY,
    salt TEXT NOT NULL
);
CREATE TABLE listing_views (
    day     TEXT NOT NULL,
    visitor TEXT NOT NULL,
    PRIMARY KEY (day, visitor)
);
