//! Invitations: issuing a single-use link (72 h) and accepting it.
