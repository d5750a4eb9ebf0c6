-- Partner workspaces, their users and API keys.
CREATE TABLE brands (
    id          INTEGER PRIMARY KEY,
    slug        TEXT    NOT NULL UNIQUE,
    name        TEXT    NOT NULL,
    created_at  TEXT    NOT NULL
);

CREATE TABLE users (
    id          INTEGER PRIMARY KEY,
    brand_id    INTEGER NOT NULL REFERENCES brands (id),
    name        TEXT    NOT NULL,
    email       TEXT    NOT NULL,
    role        TEXT    NOT NULL CHECK (role IN ('admin', 'member')),
    created_at  TEXT    NOT NULL,
    UNIQUE (brand_id, email)
);

CREATE TABLE api_keys (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users (id),
    -- First characters of the secret's random part, in clear, to find the row.
    lookup        TEXT    NOT NULL,
    -- SHA-256 of the whole secret; the secret itself is never stored.
    secret_hash   BLOB    NOT NULL,
    scopes        TEXT    NOT NULL,
    -- Requests per minute; NULL means the server's default tier.
    rate_limit    INTEGER CHECK (rate_limit IS NULL OR rate_limit > 0),
    expires_at    TEXT,
    revoked_at    TEXT,
    last_used_at  TEXT,
    last_used_ip  TEXT,
    created_at    TEXT    NOT NULL
);
CREATE INDEX api_keys_lookup ON api_keys (lookup);

-- Manufacturer brands of listings: a built-in catalogue (brand_id NULL) plus the names each
-- partner creates on first use, visible to that partner only.
CREATE TABLE manufacturer_brands (
    id          INTEGER PRIMARY KEY,
    brand_id    INTEGER REFERENCES brands (id),
    name        TEXT    NOT NULL,
    -- Lower-cased name: matching is case-insensitive.
    name_key    TEXT    NOT NULL,
    created_at  TEXT    NOT NULL
);
CREATE UNIQUE INDEX manufacturer_brands_name ON manufacturer_brands (COALESCE(brand_id, 0), name_key);
