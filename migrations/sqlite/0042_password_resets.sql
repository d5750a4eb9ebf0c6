-- Password reset links (the dashboard's "Forgot your password?" and an admin's "Send a
-- password reset link"): the token's SHA-256, never the token; one hour; used once. A new
-- link makes the user's earlier ones stop working; rows older than a day are deleted as the
-- next link of the user is made, so a user has at most the hour's few.
CREATE TABLE password_resets (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users (id),
    token_hash    BLOB    NOT NULL UNIQUE,
    -- The admin who sent it; NULL when the user asked for it.
    requested_by  INTEGER REFERENCES users (id),
    ip            TEXT,
    created_at    TEXT    NOT NULL,
    expires_at    TEXT    NOT NULL,
    used_at       TEXT
);
CREATE INDEX password_resets_by_user ON password_resets (user_id, created_at);
CREATE INDEX password_resets_by_ip ON password_resets (ip, created_at);
