//! Dashboard sessions and sign-in records: only the SHA-256 of each session token is stored.
