//! API keys: only the hash and a lookup prefix of each secret are stored.

use chrono::{DateTime, Utc};

use super::{now, on_conn, on_pool, record_audit, Conn, Store, StoreError, Ts};
use crate::Dialect;
use crate::BRAND_LOCK;
use rehome_domain::audit::AuditEntry;
use rehome_domain::key_request::{key_active, rolled_expiry};
use rehome_domain::user::Scopes;
use rehome_domain::view::{KeyOwner, KeyRecord};

pub struct NewKeyRecord<'a> {
    pub user_id: i64,
    pub label: &'a str,
    pub lookup: &'a str,
    pub hash: &'a [u8; 32],
    pub scopes: Scopes,
    pub rate_limit: Option<u32>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// The brand's keys: `WHERE u.brand_id = …` scopes every read to one brand.
const KEY_SELECT: &str = "SELECT k.id, k.label, k.lookup, k.scopes, k.user_id, k.created_at, k.expires_at,
        k.last_used_at, k.last_used_ip, k.revoked_at, k.rate_limit
    FROM api_keys k JOIN users u ON u.id = k.user_id";

/// The secret part of a new key: what the database keeps of it.
pub struct KeySecret<'a> {
    pub lookup: &'a str,
    pub hash: &'a [u8; 32],
}

/// What a roll did.
#[derive(Debug, Clone)]
pub enum RollOutcome {
    /// The new key (the old one now expires within the overlap).
    Rolled(Box<KeyRecord>),
    NotFound,
    /// The key is revoked or expired: there is nothing to roll over from.
    Inactive,
}

async fn insert_key(conn: Conn<'_>, key: &NewKeyRecord<'_>) -> Result<i64, StoreError> {
    on_conn!(conn, |c| {
        Ok(sqlx::query_scalar(
            "INSERT INTO api_keys (user_id, label, lookup, secret_hash, scopes, rate_limit, expires_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(key.user_id)
        .bind(key.label)
        .bind(key.lookup)
        .bind(&key.hash[..])
        .bind(key.scopes.to_string())
        .bind(key.rate_limit.map(i64::from))
        .bind(key.expires_at.map(Ts::from))
        .bind(now())
        .fetch_one(&mut *c)
        .await?)
    })
}

/// A key's row held until a roll commits, so two rolls of one key cannot both succeed; on
/// SQLite the one writer serialises them already.
const KEY_ROW_LOCK: Dialect = Dialect { sqlite: "", postgres: " FOR UPDATE OF k" };

impl Store {
    /// Creates a key of the brand and records `entry(key id)`, in one transaction.
    pub async fn create_brand_key(
        &self,
        brand_id: i64,
        key: NewKeyRecord<'_>,
        entry: impl FnOnce(i64) -> AuditEntry,
    ) -> Result<KeyRecord, StoreError> {
        let created = self.insert_brand_key(brand_id, key, entry, None).await?;
        created.ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }

    /// As [`Store::create_brand_key`], only if the brand created fewer than `most` keys
    /// since `since`, counted under the brand's row lock: `None` otherwise.
    pub async fn create_brand_key_within(
        &self,
        brand_id: i64,
        key: NewKeyRecord<'_>,
        entry: impl FnOnce(i64) -> AuditEntry,
        (since, most): (Ts, i64),
    ) -> Result<Option<KeyRecord>, StoreError> {
        self.insert_brand_key(brand_id, key, entry, Some((since, most))).await
    }

    async fn insert_brand_key(
        &self,
        brand_id: i64,
        key: NewKeyRecord<'_>,
        entry: impl FnOnce(i64) -> AuditEntry,
        limit: Option<(Ts, i64)>,
    ) -> Result<Option<KeyRecord>, StoreError> {
        let lock = BRAND_LOCK.of(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if let Some((since, most)) = limit {
                // Under the brand's row lock, so that keys created at once are counted in turn.
                sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
                let recent: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM api_keys k JOIN users u ON u.id = k.user_id
                     WHERE u.brand_id = $1 AND k.created_at >= $2",
                )
                .bind(brand_id)
                .bind(since)
                .fetch_one(&mut *tx)
                .await?;
                if recent >= most {
                    return Ok(None);
                }
            }
            let id = insert_key((&mut *tx).into(), &key).await?;
            record_audit((&mut *tx).into(), &entry(id)).await?;
            let created = sqlx::query_as(&format!("{KEY_SELECT} WHERE k.id = $1 AND u.brand_id = $2"))
                .bind(id)
                .bind(brand_id)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(created))
        })
    }

    /// The brand of a key's user; `None` when no key has this id.
    pub async fn key_brand(&self, key_id: i64) -> Result<Option<i64>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT u.brand_id FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.id = $1")
                .bind(key_id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// Revokes a key of the brand, recording `entry` when it was not revoked yet; `None`
    /// when the brand has no such key. Revoking twice keeps the first time.
    pub async fn revoke_brand_key(
        &self,
        brand_id: i64,
        key_id: i64,
        entry: AuditEntry,
    ) -> Result<Option<KeyRecord>, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let revoked = sqlx::query(
                "UPDATE api_keys SET revoked_at = $1
                 WHERE id = $2 AND revoked_at IS NULL AND user_id IN (SELECT id FROM users WHERE brand_id = $3)",
            )
            .bind(now())
            .bind(key_id)
            .bind(brand_id)
            .execute(&mut *tx)
            .await?;
            if revoked.rows_affected() > 0 {
                record_audit((&mut *tx).into(), &entry).await?;
            }
            let key = sqlx::query_as(&format!("{KEY_SELECT} WHERE k.id = $1 AND u.brand_id = $2"))
                .bind(key_id)
                .bind(brand_id)
                .fetch_optional(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(key)
        })
    }

    /// Replaces a live key of the brand with a new one (same label, scopes, user and rate
    /// limit); the old one keeps working for `hours` more at most. Records `entry(old, new)`.
    pub async fn roll_key(
        &self,
        brand_id: i64,
        key_id: i64,
        secret: KeySecret<'_>,
        hours: i64,
        entry: impl FnOnce(i64, i64) -> AuditEntry,
    ) -> Result<RollOutcome, StoreError> {
        let lock = KEY_ROW_LOCK.of(self);
        let at = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let old: Option<KeyRecord> =
                sqlx::query_as(&format!("{KEY_SELECT} WHERE k.id = $1 AND u.brand_id = $2{lock}"))
                    .bind(key_id)
                    .bind(brand_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(old) = old else {
                return Ok(RollOutcome::NotFound);
            };
            let expires = old.expires_at.map(Ts::get);
            if !key_active(old.revoked_at.map(Ts::get), expires, at.get()) {
                return Ok(RollOutcome::Inactive);
            }
            let until = Ts::from(rolled_expiry(expires, at.get(), hours));
            sqlx::query("UPDATE api_keys SET expires_at = $1 WHERE id = $2")
                .bind(until)
                .bind(key_id)
                .execute(&mut *tx)
                .await?;
            let scopes = old.scopes.parse::<Scopes>().unwrap_or(Scopes { read: true, write: true });
            let new = NewKeyRecord {
                user_id: old.user_id,
                label: &old.label,
                lookup: secret.lookup,
                hash: secret.hash,
                scopes,
                rate_limit: old.rate_limit.and_then(|n| u32::try_from(n).ok()),
                expires_at: None,
            };
            let new_id = insert_key((&mut *tx).into(), &new).await?;
            record_audit((&mut *tx).into(), &entry(key_id, new_id)).await?;
            let new = sqlx::query_as(&format!("{KEY_SELECT} WHERE k.id = $1 AND u.brand_id = $2"))
                .bind(new_id)
                .bind(brand_id)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(RollOutcome::Rolled(Box::new(new)))
        })
    }

    /// The brand's keys, newest first, revoked ones included.
    pub async fn brand_keys(&self, brand_id: i64) -> Result<Vec<KeyRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!("{KEY_SELECT} WHERE u.brand_id = $1 ORDER BY k.id DESC"))
                .bind(brand_id)
                .fetch_all(pool)
                .await?)
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
                .bind(Ts::from(at))
                .bind(ip)
                .bind(key_id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }
}
