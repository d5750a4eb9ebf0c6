-- A search that costs what it finds: the brand in the text index
-- (SQLite: migrations/sqlite/0044_search_by_brand.sql).
--
-- The trigram indexes of migration 0018 held the titles and SKUs of every brand, one index
-- each, and a brand's search either crossed their matches of every brand with the brand or
-- walked the brand's rows testing each: which one depended on the statistics. One GIN index
-- now holds the brand and the words (btree_gin for the brand's key), so a search reads the
-- brand's matching listings alone. Its text is the title and the SKU joined by a line
-- break, lower-cased: a search word has no white space, so it is found in the joined text
-- exactly when it is in one of the two. The brand is indexed as `brand_id + 0`, the form
-- the search writes, which no b-tree index on `brand_id` serves, and the index is not
-- partial (trashed rows are checked on the candidates), so that the search's statement,
-- which names only the brand and the words, has this one index to read
-- (store/listings/search.rs). The storefront's catalogue, which searches every
-- brand, reads the same index by its words alone.
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE INDEX listings_words ON listings
    USING gin ((brand_id + 0), (lower(title) || E'\n' || lower(COALESCE(sku, ''))) gin_trgm_ops);
DROP INDEX listings_title_trgm;
DROP INDEX listings_sku_trgm;
