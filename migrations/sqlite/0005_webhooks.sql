-- Webhooks: each brand's endpoint, the transactional outbox of events, and every
-- delivery attempt.

-- One endpoint per brand. The signing secret is stored as given to the partner, not
-- hashed: every delivery is signed with it, so the server must be able to read it back.
-- Responses show only a hint of it after the one that created it.
CREATE TABLE webhook_endpoints (
    brand_id           INTEGER PRIMARY KEY REFERENCES brands (id),
    url                TEXT    NOT NULL,
    enabled            BOOLEAN NOT NULL,
    signing_secret     TEXT    NOT NULL,
    secret_rotated_at  TEXT    NOT NULL,
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL
);

-- The outbox: one row per event, written in the transaction of the change that caused it.
-- `body` holds the exact envelope bytes, frozen at emission: retries and replays send
-- them unchanged. A row is the event and its delivery state at once.
CREATE TABLE webhook_events (
    seq               INTEGER PRIMARY KEY,
    id                TEXT    NOT NULL UNIQUE,               -- evt_…, the envelope id
    brand_id          INTEGER NOT NULL REFERENCES brands (id),
    type              TEXT    NOT NULL,
    body              TEXT    NOT NULL,
    created_at        TEXT    NOT NULL,
    status            TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    -- All attempts ever made, and those since the current retry window opened (the
    -- back-off position; a replay opens a new window and resets it).
    attempts          INTEGER NOT NULL DEFAULT 0,
    window_attempts   INTEGER NOT NULL DEFAULT 0,
    -- Start of the current retry window: created_at, or the time of the last replay.
    -- Failed attempts are retried until window_start + REHOME_WEBHOOK_RETRY_WINDOW_S.
    window_start      TEXT    NOT NULL,
    -- When pending: the earliest time of the next attempt. NULL once delivered or dead.
    next_attempt_at   TEXT,
    -- A worker that claimed the row owns it until lease_until; an expired lease (a
    -- crashed worker) makes the row claimable again.
    lease_owner       TEXT,
    lease_until       TEXT,
    last_status_code  INTEGER,
    last_error        TEXT,
    delivered_at      TEXT
);
-- Due events in time order (next wake-up, expiry sweep) and per brand (fair claiming).
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_events_brand_due ON webhook_events (brand_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_events_brand ON webhook_events (brand_id, seq);

CREATE TABLE webhook_attempts (
    id            INTEGER PRIMARY KEY,
    event_seq     INTEGER NOT NULL REFERENCES webhook_events (seq),
    attempted_at  TEXT    NOT NULL,
    url           TEXT    NOT NULL,
    -- The HTTP status when one was received, else NULL and `error` says why.
    status_code   INTEGER,
    -- Error class: timeout, connection_failed, address_refused, or http_status.
    error         TEXT,
    duration_ms   INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_seq, id);
