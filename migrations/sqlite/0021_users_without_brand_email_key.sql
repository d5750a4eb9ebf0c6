-- A removed member can be invited again as a new person (issue 36): the table-level
-- UNIQUE (brand_id, email) of 0001 made an invitation revive the removed member's row
-- (their id, so their old audit entries and keys read as the new person's). Who may hold an
-- email is `users_live_email` (one live user per email across all brands). SQLite cannot drop
-- a table constraint: the table is rebuilt the documented way (sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"): a new table, the rows copied with their ids,
-- the old table dropped, the new one renamed to the old name (so every reference to `users`
-- now means it), its indexes made again. Migrations run with foreign keys off and every
-- reference is checked after them (`store::migrate_sqlite`). Columns as 0001 and 0010 left
-- them, in the same order.
CREATE TABLE users_rebuilt (
    id              INTEGER PRIMARY KEY,
    brand_id        INTEGER NOT NULL REFERENCES brands (id),
    name            TEXT    NOT NULL,
    email           TEXT    NOT NULL,
    role            TEXT    NOT NULL CHECK (role IN ('admin', 'member')),
    created_at      TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('invited', 'active', 'removed')),
    password_hash   TEXT,
    totp_secret     BLOB,
    totp_pending    BLOB,
    totp_last_step  INTEGER,
    last_login_at   TEXT,
    removed_at      TEXT
);
INSERT INTO users_rebuilt (id, brand_id, name, email, role, created_at, status, password_hash, totp_secret,
                           totp_pending, totp_last_step, last_login_at, removed_at)
    SELECT id, brand_id, name, email, role, created_at, status, password_hash, totp_secret, totp_pending,
           totp_last_step, last_login_at, removed_at
    FROM users;
DROP TABLE users;
ALTER TABLE users_rebuilt RENAME TO users;
CREATE UNIQUE INDEX users_live_email ON users (lower(email)) WHERE status <> 'removed';
CREATE INDEX users_brand ON users (brand_id);
