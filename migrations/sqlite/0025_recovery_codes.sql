-- Two-step recovery codes (decisions 9.7, issue 31): ten single-use codes made at
-- enrolment, each usable once instead of a two-step code. Only the SHA-256 of a code is
-- stored (a code holds 50 random bits and every guess counts against the sign-in limits).
CREATE TABLE recovery_codes (
    id          INTEGER PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id),
    code_hash   BLOB    NOT NULL UNIQUE,
    created_at  TEXT    NOT NULL,
    used_at     TEXT
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id);
