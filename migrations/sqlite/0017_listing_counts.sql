-- How many live (not trashed) listings each brand has in each status, kept by triggers on
-- `listings` as rows of +1 and -1 (issue 19): a list page filtered by status alone (the
-- default, `active`) or not at all reads its `total` here rather than counting the brand's
-- listings one by one (a quarter of the page's cost at 1,000 listings). A change appends a
-- row, so writers never wait on one another for a counter; a background job folds the rows
-- of each brand and status into one (`Store::fold_listing_counts`).
CREATE TABLE listing_counts (
    brand_id INTEGER NOT NULL,
    status   TEXT    NOT NULL,
    live     INTEGER NOT NULL
);

-- Covers the sums.
CREATE INDEX listing_counts_brand ON listing_counts (brand_id, status, live);

INSERT INTO listing_counts (brand_id, status, live)
    SELECT brand_id, status, COUNT(*) FROM listings WHERE deleted_at IS NULL GROUP BY brand_id, status;

CREATE TRIGGER listing_counts_insert AFTER INSERT ON listings
WHEN NEW.deleted_at IS NULL
BEGIN
    INSERT INTO listing_counts (brand_id, status, live) VALUES (NEW.brand_id, NEW.status, 1);
END;

CREATE TRIGGER listing_counts_delete AFTER DELETE ON listings
WHEN OLD.deleted_at IS NULL
BEGIN
    INSERT INTO listing_counts (brand_id, status, live) VALUES (OLD.brand_id, OLD.status, -1);
END;

CREATE TRIGGER listing_counts_update AFTER UPDATE OF deleted_at, brand_id, status ON listings
WHEN (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.brand_id <> NEW.brand_id OR OLD.status <> NEW.status
BEGIN
    INSERT INTO listing_counts (brand_id, status, live)
        SELECT OLD.brand_id, OLD.status, -1 WHERE OLD.deleted_at IS NULL;
    INSERT INTO listing_counts (brand_id, status, live)
        SELECT NEW.brand_id, NEW.status, 1 WHERE NEW.deleted_at IS NULL;
END;
