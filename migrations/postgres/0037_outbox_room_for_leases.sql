-- A claim writes only an event's lease (`lease_owner`, `lease_until`), which no index holds,
-- so PostgreSQL can make it a heap-only (HOT) update, the new row version beside the old on
-- the same page and no index entry written, if the page has room. Packed full, as rows are
-- inserted by default, every claim moved its row to another page and wrote a new entry in
-- each of the table's eight indexes. New pages now keep 30 % free for those versions; pages
-- written before keep their packing until the table is rewritten (`VACUUM FULL`), which a
-- migration does not do to a live outbox.
ALTER TABLE webhook_events SET (fillfactor = 70);
