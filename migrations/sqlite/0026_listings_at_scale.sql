-- Listings at size (issue 34).
--
-- 1. The brands' kept counts by channel too: a list page filtered by status and channel
--    (the big brand's "active clearance" page) reads its `total` here instead of counting
--    hundreds of thousands of index entries (tens of milliseconds at 500,000 listings).
DROP TRIGGER listing_counts_insert;
DROP TRIGGER listing_counts_delete;
DROP TRIGGER listing_counts_update;
DROP INDEX listing_counts_brand;
DROP TABLE listing_counts;
CREATE TABLE listing_counts (
    brand_id INTEGER NOT NULL,
    status   TEXT    NOT NULL,
    channel  TEXT    NOT NULL,
    live     INTEGER NOT NULL
);
CREATE INDEX listing_counts_brand ON listing_counts (brand_id, status, channel, live);
INSERT INTO listing_counts (brand_id, status, channel, live)
    SELECT brand_id, status, channel, COUNT(*) FROM listings WHERE deleted_at IS NULL
    GROUP BY brand_id, status, channel;

CREATE TRIGGER listing_counts_insert AFTER INSERT ON listings
WHEN NEW.deleted_at IS NULL
BEGIN
    INSERT INTO listing_counts (brand_id, status, channel, live) VALUES (NEW.brand_id, NEW.status, NEW.channel, 1);
END;

CREATE TRIGGER listing_counts_delete AFTER DELETE ON listings
WHEN OLD.deleted_at IS NULL
BEGIN
    INSERT INTO listing_counts (brand_id, status, channel, live) VALUES (OLD.brand_id, OLD.status, OLD.channel, -1);
END;

CREATE TRIGGER listing_counts_update AFTER UPDATE OF deleted_at, brand_id, status, channel ON listings
WHEN (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.brand_id <> NEW.brand_id
    OR OLD.status <> NEW.status OR OLD.channel <> NEW.channel
BEGIN
    INSERT INTO listing_counts (brand_id, status, channel, live)
        SELECT OLD.brand_id, OLD.status, OLD.channel, -1 WHERE OLD.deleted_at IS NULL;
    INSERT INTO listing_counts (brand_id, status, channel, live)
        SELECT NEW.brand_id, NEW.status, NEW.channel, 1 WHERE NEW.deleted_at IS NULL;
END;

-- 2. `q` words (decisions 11.2) found through a trigram index of titles and SKUs rather than
--    by reading every listing of the brand: the index answers a superset (it folds case
--    beyond ASCII), and the list query keeps the rule itself (`lower(…) LIKE lower(…)`) on
--    what it answers, so the matches are exactly the rule's. Words under three characters
--    have no trigram: they are checked by the rule alone, as before.
CREATE VIRTUAL TABLE listings_search USING fts5(
    title, sku, content = 'listings', content_rowid = 'id', tokenize = 'trigram case_sensitive 0'
);
INSERT INTO listings_search (listings_search) VALUES ('rebuild');

CREATE TRIGGER listings_search_insert AFTER INSERT ON listings
BEGIN
    INSERT INTO listings_search (rowid, title, sku) VALUES (NEW.id, NEW.title, NEW.sku);
END;

CREATE TRIGGER listings_search_delete AFTER DELETE ON listings
BEGIN
    INSERT INTO listings_search (listings_search, rowid, title, sku) VALUES ('delete', OLD.id, OLD.title, OLD.sku);
END;

CREATE TRIGGER listings_search_update AFTER UPDATE OF title, sku ON listings
BEGIN
    INSERT INTO listings_search (listings_search, rowid, title, sku) VALUES ('delete', OLD.id, OLD.title, OLD.sku);
    INSERT INTO listings_search (rowid, title, sku) VALUES (NEW.id, NEW.title, NEW.sku);
END;
