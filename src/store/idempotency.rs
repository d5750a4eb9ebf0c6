//! Idempotency keys: claimed by inserting a row (the primary key makes exactly one claimer
//! win, on one node or many), completed with the kept answer, released on failure.

use sqlx::FromRow;

use super::{on_pool, Store, StoreError, Ts};
use crate::domain::idempotency::Kept;

/// What claiming a key did.
#[derive(Debug)]
pub enum Claim {
    /// This request holds the key: run it, then [`Store::complete_idempotency`] or
    /// [`Store::release_idempotency`].
    Claimed,
    /// The key is held or done: what it holds.
    Held(Kept),
}

#[derive(FromRow)]
struct Row {
    fingerprint: Vec<u8>,
    state: String,
    status: Option<i64>,
    content_type: Option<String>,
    body: Option<Vec<u8>>,
}

/// A request's claim on an idempotency key of an API key.
#[derive(Debug, Clone, Copy)]
pub struct KeyClaim<'a> {
    pub key_id: i64,
    pub key: &'a str,
    pub fingerprint: &'a [u8; 32],
    pub now: Ts,
    /// The request holds the key until then at the latest (its node may die).
    pub lease_until: Ts,
    pub expires_at: Ts,
}

impl Store {
    /// Claims the key for the request. A row past its expiry, or left `running` past its
    /// lease by a node that died, is taken over (in the same statement).
    pub async fn claim_idempotency(&self, claim: KeyClaim<'_>) -> Result<Claim, StoreError> {
        // A holder that fails between our insert and our read releases the key: claim again.
        for _ in 0..3 {
            if let Some(outcome) = self.try_claim(claim).await? {
                return Ok(outcome);
            }
        }
        Ok(Claim::Held(Kept::Running { fingerprint: claim.fingerprint.to_vec() }))
    }

    async fn try_claim(&self, claim: KeyClaim<'_>) -> Result<Option<Claim>, StoreError> {
        let KeyClaim { key_id, key, fingerprint, now, lease_until, expires_at } = claim;
        on_pool!(self, write, |pool| {
            // One statement: a new key is inserted; a key past its expiry, or left running past
            // its lease by a node that died, is taken over; a live one is left as it is.
            let inserted = sqlx::query(
                "INSERT INTO idempotency_keys (key_id, idem_key, fingerprint, state, created_at, lease_until, expires_at)
                 VALUES ($1, $2, $3, 'running', $4, $5, $6)
                 ON CONFLICT (key_id, idem_key) DO UPDATE SET
                     fingerprint = excluded.fingerprint, state = 'running', status = NULL, content_type = NULL,
                     body = NULL, created_at = excluded.created_at, lease_until = excluded.lease_until,
                     expires_at = excluded.expires_at
                 WHERE idempotency_keys.expires_at <= $4
                    OR (idempotency_keys.state = 'running' AND idempotency_keys.lease_until <= $4)",
            )
            .bind(key_id)
            .bind(key)
            .bind(&fingerprint[..])
            .bind(now)
            .bind(lease_until)
            .bind(expires_at)
            .execute(pool)
            .await?;
            if inserted.rows_affected() == 1 {
                return Ok(Some(Claim::Claimed));
            }
            let row: Option<Row> = sqlx::query_as(
                "SELECT fingerprint, state, status, content_type, body FROM idempotency_keys
                 WHERE key_id = $1 AND idem_key = $2",
            )
            .bind(key_id)
            .bind(key)
            .fetch_optional(pool)
            .await?;
            Ok(match row {
                Some(row) if row.state == "done" => Some(Claim::Held(Kept::Done {
                    fingerprint: row.fingerprint,
                    status: row.status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200),
                    content_type: row.content_type,
                    body: row.body.unwrap_or_default(),
                })),
                Some(row) => Some(Claim::Held(Kept::Running { fingerprint: row.fingerprint })),
                None => None,
            })
        })
    }

    /// Keeps the 2xx answer of the request that holds the key.
    pub async fn complete_idempotency(
        &self,
        key_id: i64,
        key: &str,
        status: u16,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(
                "UPDATE idempotency_keys SET state = 'done', status = $3, content_type = $4, body = $5
                 WHERE key_id = $1 AND idem_key = $2",
            )
            .bind(key_id)
            .bind(key)
            .bind(i64::from(status))
            .bind(content_type)
            .bind(body)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Forgets a key whose request did not succeed, so that a corrected retry may run.
    pub async fn release_idempotency(&self, key_id: i64, key: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("DELETE FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2 AND state = 'running'")
                .bind(key_id)
                .bind(key)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Deletes up to `limit` expired keys; answers how many.
    pub async fn sweep_idempotency(&self, now: Ts, limit: i64) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query(
                "DELETE FROM idempotency_keys WHERE (key_id, idem_key) IN (
                     SELECT key_id, idem_key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2)",
            )
            .bind(now)
            .bind(limit)
            .execute(pool)
            .await?;
            Ok(done.rows_affected())
        })
    }
}
