//! API keys: list, create, roll and revoke a brand's keys.
