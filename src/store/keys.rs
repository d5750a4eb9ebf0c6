//! API keys: only the hash and a lookup prefix of each secret are stored.

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::{now, on_pool, Store, StoreError};
use crate::domain::user::Scopes;

pub struct NewKeyRecord<'a> {
    pub user_id: i64,
    pub lookup: &'a str,
    pub hash: &'a [u8; 32],
    pub scopes: Scopes,
    pub rate_limit: Option<u32>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A key row with its user and brand: everything a request needs to know about its caller.
#[derive(Debug, Clone, FromRow)]
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

impl Store {
    pub async fn create_key(&self, key: NewKeyRecord<'_>) -> Result<i64, StoreError> {
        on_pool!(self, write, |pool| {
            Ok(sqlx::query_scalar(
                "INSERT INTO api_keys (user_id, lookup, secret_hash, scopes, rate_limit, expires_at, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(key.user_id)
            .bind(key.lookup)
            .bind(&key.hash[..])
            .bind(key.scopes.to_string())
            .bind(key.rate_limit.map(i64::from))
            .bind(key.expires_at)
            .bind(now())
            .fetch_one(pool)
            .await?)
        })
    }

    /// Marks a key revoked; revoking twice keeps the first time. False when no key has this id.
    pub async fn revoke_key(&self, key_id: i64) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2")
                .bind(now())
                .bind(key_id)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    /// The keys whose secret starts with `lookup` (almost always zero or one).
    pub async fn keys_by_lookup(&self, lookup: &str) -> Result<Vec<KeyOwner>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT k.id AS key_id, k.secret_hash, k.scopes, k.rate_limit, k.expires_at, k.revoked_at,
                        k.last_used_at, u.id AS user_id, u.name AS user_name, u.role,
                        b.id AS brand_id, b.slug AS brand_slug
                 FROM api_keys k JOIN users u ON u.id = k.user_id JOIN brands b ON b.id = u.brand_id
                 WHERE k.lookup = $1 AND u.status <> 'removed'",
            )
            .bind(lookup)
            .fetch_all(pool)
            .await?)
        })
    }

    pub async fn touch_key(&self, key_id: i64, at: DateTime<Utc>, ip: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("UPDATE api_keys SET last_used_at = $1, last_used_ip = $2 WHERE id = $3")
                .bind(at)
                .bind(ip)
                .bind(key_id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }
}
