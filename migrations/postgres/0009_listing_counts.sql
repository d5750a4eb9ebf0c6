-- How many live (not trashed) listings each brand has in each status, kept by a trigger on
-- `listings` as rows of +1 and -1 (issue 19): a list page filtered by status alone (the
-- default, `active`) or not at all reads its `total` here rather than counting the brand's
-- listings one by one (a third of the page's cost in the database at 1,000 listings). A
-- change appends a row, so concurrent writers of one brand never wait on a counter row's
-- lock; a background job folds the rows of each brand and status into one
-- (`Store::fold_listing_counts`).
CREATE TABLE listing_counts (
    brand_id BIGINT NOT NULL,
    status   TEXT   NOT NULL,
    live     BIGINT NOT NULL
);

-- Covers the sums.
CREATE INDEX listing_counts_brand ON listing_counts (brand_id, status, live);

INSERT INTO listing_counts (brand_id, status, live)
    SELECT brand_id, status, COUNT(*) FROM listings WHERE deleted_at IS NULL GROUP BY brand_id, status;

CREATE FUNCTION rehome_listing_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.deleted_at IS NULL) = (NEW.deleted_at IS NULL)
       AND OLD.brand_id = NEW.brand_id AND OLD.status = NEW.status THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        INSERT INTO listing_counts (brand_id, status, live) VALUES (OLD.brand_id, OLD.status, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.deleted_at IS NULL THEN
        INSERT INTO listing_counts (brand_id, status, live) VALUES (NEW.brand_id, NEW.status, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER listing_counts AFTER INSERT OR DELETE OR UPDATE OF deleted_at, brand_id, status ON listings
    FOR EACH ROW EXECUTE FUNCTION rehome_listing_counts();
