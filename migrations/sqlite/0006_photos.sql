-- Photos: uploaded (upload-photo) or imported from a listing's `images` URLs. Files live in
-- the media store under names the service chose; rows hold the names, never URLs, so a
-- change of REHOME_PUBLIC_URL moves every URL with it.
CREATE TABLE photos (
    id               INTEGER PRIMARY KEY,
    brand_id         INTEGER NOT NULL REFERENCES brands (id),
    -- The uploader; NULL for imports (the listing's seller is on the listing).
    user_id          INTEGER REFERENCES users (id),
    source           TEXT    NOT NULL CHECK (source IN ('upload', 'import')),
    -- Media name of the original: `<32 hex>.<ext>`.
    name             TEXT    NOT NULL UNIQUE,
    mime             TEXT    NOT NULL,
    -- Sanitised client file name (display only; never a path).
    filename         TEXT    NOT NULL,
    byte_size        INTEGER NOT NULL,
    width            INTEGER NOT NULL,
    height           INTEGER NOT NULL,
    -- Thumbnails (the background job): names once done.
    thumb_status     TEXT    NOT NULL DEFAULT 'pending' CHECK (thumb_status IN ('pending', 'done', 'failed')),
    medium_name      TEXT,
    large_name       TEXT,
    thumb_error      TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT,
    -- A worker that claimed the row owns it until lease_until (as webhook_events).
    lease_owner      TEXT,
    lease_until      TEXT,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);
CREATE INDEX photos_brand ON photos (brand_id, id);
-- The thumbnail worker's queue.
CREATE INDEX photos_thumbs_pending ON photos (id) WHERE thumb_status = 'pending';

-- The image import worker's lease and retry time on the queue of migration 0003.
ALTER TABLE listing_images ADD COLUMN next_attempt_at TEXT;
ALTER TABLE listing_images ADD COLUMN lease_owner TEXT;
ALTER TABLE listing_images ADD COLUMN lease_until TEXT;
