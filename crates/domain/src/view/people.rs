//! Brands, people and keys as the use cases answer them: members, invitations, the audit
//! log, API keys (the key list, and a key's owner as a request's check reads it).

use chrono::{DateTime, Utc};

use crate::time::Ts;

/// A user as the team API shows them.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct MemberRecord {
    pub id: i64,
    pub brand_id: i64,
    pub name: String,
    pub email: String,
    pub role: String,
    /// `invited`, `active` or `removed`.
    pub status: String,
    pub totp_enrolled: bool,
    pub created_at: Ts,
    pub last_login_at: Option<Ts>,
}

/// An invitation that can still be accepted, with its user.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct InvitationRecord {
    pub user_id: i64,
    pub email: String,
    pub name: String,
    pub brand_name: String,
    pub expires_at: Ts,
}

/// A stored entry, as the audit log API shows it.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct AuditRecord {
    pub id: i64,
    pub at: Ts,
    pub actor_type: String,
    pub actor_id: Option<i64>,
    pub actor_display: String,
    pub action: String,
    pub target: Option<String>,
    pub ip: Option<String>,
}

/// Which entries a read of the audit log keeps: actions starting with one of `prefixes`
/// (any when empty), by `actor` (anyone when `None`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditFilter {
    pub prefixes: &'static [&'static str],
    pub actor: Option<(crate::audit::ActorType, i64)>,
}

/// A key row with its user and brand: everything a request needs to know about its caller.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct KeyOwner {
    pub key_id: i64,
    pub secret_hash: Vec<u8>,
    pub scopes: String,
    pub rate_limit: Option<i64>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub user_id: i64,
    pub user_name: String,
    pub role: String,
    pub brand_id: i64,
    pub brand_slug: String,
}

/// A key as the key list shows it (never its secret).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct KeyRecord {
    pub id: i64,
    pub label: String,
    /// The first characters of the secret's random part.
    pub lookup: String,
    /// `read`, `write` or `read,write`.
    pub scopes: String,
    pub user_id: i64,
    pub created_at: Ts,
    pub expires_at: Option<Ts>,
    pub last_used_at: Option<Ts>,
    pub last_used_ip: Option<String>,
    pub revoked_at: Option<Ts>,
    /// Requests per minute; `None`: the server's default.
    pub rate_limit: Option<i64>,
}

#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct BrandRecord {
    pub id: i64,
    pub slug: String,
    pub name: String,
}
