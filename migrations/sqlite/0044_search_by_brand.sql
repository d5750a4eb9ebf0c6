-- A search that costs what it finds: the brand in the text index.
--
-- The trigram index of migration 0026 held titles and SKUs of every brand, so a brand's
-- search read the candidates of every brand (a word common elsewhere cost a small brand
-- 18 ms for 50 matches at 300,000 listings). The index now holds each listing's brand as a
-- third column, `b<id>b` (a generated column of `listings`, so a `rebuild` reads it like the
-- others), and a search asks for its words AND its brand: FTS5 intersects the lists inside
-- the index and hands back the brand's candidates alone. The delimiters keep brand 1 from
-- matching brand 12 (`b1b` is no part of `b12b`), and the words are asked of the title and
-- SKU columns only, so no word matches a brand token.
ALTER TABLE listings ADD COLUMN search_brand TEXT GENERATED ALWAYS AS ('b' || brand_id || 'b') VIRTUAL;

DROP TRIGGER listings_search_insert;
DROP TRIGGER listings_search_delete;
DROP TRIGGER listings_search_update;
DROP TABLE listings_search;

CREATE VIRTUAL TABLE listings_search USING fts5(
    title, sku, search_brand, content = 'listings', content_rowid = 'id', tokenize = 'trigram case_sensitive 0'
);
INSERT INTO listings_search (listings_search) VALUES ('rebuild');

CREATE TRIGGER listings_search_insert AFTER INSERT ON listings
BEGIN
    INSERT INTO listings_search (rowid, title, sku, search_brand) VALUES (NEW.id, NEW.title, NEW.sku, NEW.search_brand);
END;

CREATE TRIGGER listings_search_delete AFTER DELETE ON listings
BEGIN
    INSERT INTO listings_search (listings_search, rowid, title, sku, search_brand)
        VALUES ('delete', OLD.id, OLD.title, OLD.sku, OLD.search_brand);
END;

CREATE TRIGGER listings_search_update AFTER UPDATE OF title, sku, brand_id ON listings
BEGIN
    INSERT INTO listings_search (listings_search, rowid, title, sku, search_brand)
        VALUES ('delete', OLD.id, OLD.title, OLD.sku, OLD.search_brand);
    INSERT INTO listings_search (rowid, title, sku, search_brand) VALUES (NEW.id, NEW.title, NEW.sku, NEW.search_brand);
END;
