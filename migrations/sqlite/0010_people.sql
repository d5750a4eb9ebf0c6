-- People: passwords, two-step codes, sessions, invitations, sign-in failures, the audit log
-- and the mail outbox (decisions section 8). PostgreSQL: migrations/postgres/0002_people.sql,
-- the same columns in the same order.

-- The partner admin's brand-wide rule: everyone signs in with a two-step code.
ALTER TABLE brands ADD COLUMN require_totp INTEGER NOT NULL DEFAULT 0 CHECK (require_totp IN (0, 1));

-- `invited`: created by an invitation not yet accepted (no password); `active`; `removed`:
-- taken off the team (the row stays: listings, keys and the audit log refer to it).
ALTER TABLE users ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('invited', 'active', 'removed'));
-- Argon2id in PHC string form; NULL until the person sets a password.
ALTER TABLE users ADD COLUMN password_hash TEXT;
-- The TOTP secret, sealed with the data key (the user id as associated data); NULL when not
-- enrolled. `totp_pending` holds a secret offered for enrolment until it is confirmed.
ALTER TABLE users ADD COLUMN totp_secret BLOB;
ALTER TABLE users ADD COLUMN totp_pending BLOB;
-- The last 30-second step whose code was accepted: each code is accepted at most once.
ALTER TABLE users ADD COLUMN totp_last_step INTEGER;
ALTER TABLE users ADD COLUMN last_login_at TEXT;
ALTER TABLE users ADD COLUMN removed_at TEXT;
-- An email belongs to one live user across all brands (sign-in is by email alone).
CREATE UNIQUE INDEX users_live_email ON users (lower(email)) WHERE status <> 'removed';

-- A key's name, shown in the key list; rolled keys keep it.
ALTER TABLE api_keys ADD COLUMN label TEXT NOT NULL DEFAULT '';

-- Dashboard sessions. The cookie holds a random token; only its SHA-256 is stored.
-- `stage`: `code` (password accepted, the two-step code is awaited), `enrol` (the brand
-- requires two-step and the user must enrol first), `full` (signed in).
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY,
    token_hash    BLOB    NOT NULL UNIQUE,
    user_id       INTEGER NOT NULL REFERENCES users (id),
    stage         TEXT    NOT NULL CHECK (stage IN ('code', 'enrol', 'full')),
    -- The per-session token every dashboard form carries.
    csrf_token    TEXT    NOT NULL,
    ip            TEXT,
    created_at    TEXT    NOT NULL,
    last_seen_at  TEXT    NOT NULL,
    ended_at      TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Invitation links: single use, valid 72 hours; only the SHA-256 of the token is stored.
CREATE TABLE invitations (
    id          INTEGER PRIMARY KEY,
    token_hash  BLOB    NOT NULL UNIQUE,
    user_id     INTEGER NOT NULL REFERENCES users (id),
    created_at  TEXT    NOT NULL,
    expires_at  TEXT    NOT NULL,
    used_at     TEXT
);
CREATE INDEX invitations_user ON invitations (user_id);

-- Failed sign-ins, for the per-account lockout and the per-address limit. `user_id` is NULL
-- for an unknown email.
CREATE TABLE sign_in_failures (
    id       INTEGER PRIMARY KEY,
    user_id  INTEGER REFERENCES users (id),
    ip       TEXT    NOT NULL,
    at       TEXT    NOT NULL
);
CREATE INDEX sign_in_failures_user ON sign_in_failures (user_id, at);
CREATE INDEX sign_in_failures_ip ON sign_in_failures (ip, at);

-- The audit log: append only, never edited. `actor_type` is `user`, `key` or `operator`.
CREATE TABLE audit_log (
    id             INTEGER PRIMARY KEY,
    brand_id       INTEGER NOT NULL REFERENCES brands (id),
    at             TEXT    NOT NULL,
    actor_type     TEXT    NOT NULL CHECK (actor_type IN ('user', 'key', 'operator')),
    actor_id       INTEGER,
    actor_display  TEXT    NOT NULL,
    action         TEXT    NOT NULL,
    target         TEXT,
    ip             TEXT
);
CREATE INDEX audit_log_brand ON audit_log (brand_id, id);

-- Mail waiting to be sent, written in the transaction of what caused it (an invitation, a
-- statement), retried until the SMTP server takes it: like the webhook outbox, never lost.
CREATE TABLE mail_outbox (
    id               INTEGER PRIMARY KEY,
    brand_id         INTEGER REFERENCES brands (id),
    to_address       TEXT    NOT NULL,
    subject          TEXT    NOT NULL,
    text_body        TEXT    NOT NULL,
    -- An optional attachment (a statement PDF).
    attachment_name  TEXT,
    attachment_type  TEXT,
    attachment       BLOB,
    created_at       TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    -- A worker's claim: no other worker takes the row before this instant.
    leased_until     TEXT,
    last_error       TEXT,
    sent_at          TEXT
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL;
