-- Bulk import drafts (issue 31 item 4): a file uploaded on the dashboard is kept here for
-- review until it is imported, discarded or expires (24 hours after upload). `file` holds
-- the bytes as uploaded (at most the import's 5 MiB), and is cleared once the draft is
-- committed; `result` then holds what the import did (JSON), for the page that shows it.
-- A brand has at most a few live drafts (usecases::bulk::drafts::MAX_LIVE_DRAFTS);
-- expired ones are deleted by the retention job and when the brand uploads again.
CREATE TABLE bulk_drafts (
    id            INTEGER PRIMARY KEY,
    brand_id      INTEGER NOT NULL REFERENCES brands (id),
    user_id       INTEGER NOT NULL REFERENCES users (id),
    filename      TEXT    NOT NULL,
    mode          TEXT    NOT NULL,
    file          BLOB,
    row_count     INTEGER NOT NULL,
    created_at    TEXT    NOT NULL,
    expires_at    TEXT    NOT NULL,
    committed_at  TEXT,
    result        TEXT
);
CREATE INDEX bulk_drafts_brand ON bulk_drafts (brand_id, expires_at);
CREATE INDEX bulk_drafts_expiry ON bulk_drafts (expires_at);
