//! The audit log API: a brand's entries, newest first.
