//! Dashboard sessions: looking one up by its cookie token, idle and absolute expiry, sign-out.
