//! Invitation links: only the SHA-256 of each token is stored.
