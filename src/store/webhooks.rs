//! Webhook endpoints, the event outbox and the record of delivery attempts.
//!
//! An event row is written by [`insert_event`] on the caller's connection, inside the
//! transaction of the change that causes it: it commits or rolls back with that change.
//! Workers claim due rows with a lease (`lease_owner`, `lease_until`) through a
//! conditional UPDATE, so two workers (or processes) never both own a row, and a row
//! whose owner died becomes claimable again when its lease runs out.
//!
//! Event bodies are stored sealed (`body_sealed`, see [`super::Sealer`]) with the event id
//! as associated data; `body` stays empty. Rows from before migration 0008 held the clear
//! `body`: [`Store::open`] seals them, and [`ClaimedEvent::envelope`] reads either form.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::{now, on_conn, on_pool, on_unique, Conn, Db, Dialect, Sealer, Store, StoreError, Ts, Undecryptable};
use crate::domain::event::Event;

#[derive(Debug, Clone, FromRow)]
pub struct WebhookEndpointRecord {
    pub brand_id: i64,
    pub url: String,
    pub enabled: bool,
    pub signing_secret: String,
    pub secret_rotated_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const ENDPOINT_COLUMNS: &str = "brand_id, url, enabled, signing_secret, secret_rotated_at, created_at, updated_at";

/// One event as the delivery log shows it.
#[derive(Debug, Clone, FromRow)]
pub struct DeliveryRecord {
    pub event_id: String,
    #[sqlx(rename = "type")]
    pub event_type: String,
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub seq: i64,
}

/// A pending event with no enabled endpoint is not being tried: the log says so
/// (`no_endpoint`, no next attempt) instead of showing a due time that will not be kept.
const DELIVERY_SELECT: &str = "SELECT e.seq, e.id AS event_id, e.type, e.status, e.attempts, e.last_status_code,
        CASE WHEN e.status = 'pending' AND NOT COALESCE(ep.enabled, FALSE) THEN 'no_endpoint' ELSE e.last_error END
            AS last_error,
        CASE WHEN e.status = 'pending' AND NOT COALESCE(ep.enabled, FALSE) THEN NULL ELSE e.next_attempt_at END
            AS next_attempt_at,
        e.created_at, e.delivered_at
     FROM webhook_events e LEFT JOIN webhook_endpoints ep ON ep.brand_id = e.brand_id";

#[derive(Debug, Clone, FromRow)]
pub struct AttemptRecord {
    pub attempted_at: DateTime<Utc>,
    pub url: String,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// A due event that may be claimed, with where it goes.
#[derive(Debug, Clone, FromRow)]
pub struct DueDelivery {
    pub seq: i64,
    pub brand_id: i64,
    pub url: String,
    pub signing_secret: String,
}

/// An event a worker now holds the lease of.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedEvent {
    pub seq: i64,
    pub id: String,
    pub brand_id: i64,
    #[sqlx(rename = "type")]
    pub event_type: String,
    /// The clear envelope of a row written before migration 0008 and not sealed yet; empty
    /// once sealed.
    pub body: String,
    /// `nonce ‖ ciphertext ‖ tag` of the envelope, the event id as associated data.
    pub body_sealed: Option<Vec<u8>>,
    pub window_attempts: i64,
    pub window_start: DateTime<Utc>,
}

impl ClaimedEvent {
    /// The exact envelope bytes frozen at emission, opened with the data key (a clear body
    /// from before migration 0008 needs none).
    pub fn envelope(&self, sealer: Option<&Sealer>) -> Result<Vec<u8>, Undecryptable> {
        match (&self.body_sealed, sealer) {
            (Some(sealed), Some(sealer)) => sealer.open(self.id.as_bytes(), sealed),
            (Some(_), None) => Err(Undecryptable),
            (None, _) => Ok(self.body.clone().into_bytes()),
        }
    }
}

/// The result of one attempt and what becomes of the event.
#[derive(Debug, Clone)]
pub struct AttemptResult {
    pub seq: i64,
    pub attempted_at: DateTime<Utc>,
    pub url: String,
    pub status_code: Option<u16>,
    pub error: Option<&'static str>,
    pub duration_ms: i64,
    /// `delivered`, `pending` (retry at `next_attempt_at`) or `dead`.
    pub status: &'static str,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// Records `event` (its envelope bytes sealed with `sealer`, bound to the event id) on the
/// caller's connection. Call it inside the transaction of the change that causes the event,
/// with `&mut *tx`; inside the store, [`Store::insert_event`] passes the store's sealer:
///
/// ```ignore
/// let mut tx = pool.begin().await?;
/// // … the change …
/// self.insert_event(&mut tx, &event).await?;
/// tx.commit().await?;
/// state.outbox.wake(); // optional: deliver now rather than at the next poll
/// ```
pub async fn insert_event(conn: Conn<'_>, sealer: &Sealer, event: &Event) -> Result<(), StoreError> {
    let sealed = sealer
        .seal(event.id.as_bytes(), event.envelope().as_bytes())
        .map_err(|e| StoreError::Sealing(e.to_string()))?;
    on_conn!(conn, |c| {
        sqlx::query(
            "INSERT INTO webhook_events (id, brand_id, type, body, body_sealed, created_at, window_start,
                                         next_attempt_at)
             VALUES ($1, $2, $3, '', $4, $5, $5, $5)",
        )
        .bind(&event.id)
        .bind(event.brand_id)
        .bind(event.event_type.as_str())
        .bind(&sealed)
        .bind(Ts::from(event.created_at))
        .execute(&mut *c)
        .await
        .map_err(|e| on_unique(e, "event id"))?;
        Ok(())
    })
}

/// Each enabled endpoint's oldest due events, then the oldest of those. PostgreSQL gets the
/// per-endpoint step as a LATERAL join (an index scan per endpoint); SQLite, which has no
/// LATERAL, as `IN` over a correlated subquery, which it plans that way.
const DUE_WEBHOOKS: Dialect = Dialect {
    sqlite: "SELECT e.seq, e.brand_id, ep.url, ep.signing_secret
             FROM webhook_endpoints ep JOIN webhook_events e ON e.seq IN (
                 SELECT d.seq FROM webhook_events d
                 WHERE d.brand_id = ep.brand_id AND d.status = 'pending' AND d.next_attempt_at <= $1
                   AND (d.lease_until IS NULL OR d.lease_until <= $1)
                 ORDER BY d.next_attempt_at, d.seq LIMIT $2)
             WHERE ep.enabled
             ORDER BY e.next_attempt_at, e.seq LIMIT $3",
    postgres: "SELECT e.seq, e.brand_id, ep.url, ep.signing_secret
             FROM webhook_endpoints ep CROSS JOIN LATERAL (
                 SELECT d.seq, d.brand_id, d.next_attempt_at FROM webhook_events d
                 WHERE d.brand_id = ep.brand_id AND d.status = 'pending' AND d.next_attempt_at <= $1
                   AND (d.lease_until IS NULL OR d.lease_until <= $1)
                 ORDER BY d.next_attempt_at, d.seq LIMIT $2) e
             WHERE ep.enabled
             ORDER BY e.next_attempt_at, e.seq LIMIT $3",
};

impl Store {
    /// [`insert_event`] with the store's data key: records `event` on `conn`, the caller's
    /// transaction.
    pub async fn insert_event(&self, conn: Conn<'_>, event: &Event) -> Result<(), StoreError> {
        insert_event(conn, self.sealer()?, event).await
    }

    /// Records an event in a transaction of its own (for changes that write nothing else).
    pub async fn emit_event(&self, event: &Event) -> Result<(), StoreError> {
        let sealer = self.sealer()?;
        on_pool!(self, write, |pool| {
            let mut conn = pool.acquire().await?;
            insert_event((&mut *conn).into(), sealer, event).await
        })
    }

    /// Seals the bodies still stored in clear (rows written before migration 0008 of a
    /// SQLite database), in one transaction, and empties their `body`. On SQLite,
    /// `secure_delete` is on meanwhile, so the clear bytes are zeroed rather than left in free
    /// space, and the WAL is then checkpointed and truncated. New PostgreSQL databases never
    /// hold clear bodies, but one filled by other means is sealed the same way, its rows
    /// locked so that nodes starting together seal each once. Does nothing without a sealer.
    /// Returns the rows sealed.
    pub(crate) async fn seal_clear_events(&self) -> Result<u64, StoreError> {
        let Some(sealer) = &self.sealer else {
            return Ok(0);
        };
        let sealed = match &self.db {
            Db::Sqlite { write: pool, .. } => {
                let mut conn = pool.acquire().await?;
                let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM webhook_events WHERE body_sealed IS NULL")
                    .fetch_one(&mut *conn)
                    .await?;
                if pending == 0 {
                    return Ok(0);
                }
                let previous: i64 = sqlx::query_scalar("PRAGMA secure_delete").fetch_one(&mut *conn).await?;
                sqlx::query("PRAGMA secure_delete = ON").execute(&mut *conn).await?;
                let sealed = async {
                    use sqlx::Connection;
                    // `BEGIN IMMEDIATE` takes the write lock before reading, so two processes
                    // starting at once seal each row once.
                    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
                    let sealed = seal_rows((&mut *tx).into(), sealer).await?;
                    tx.commit().await?;
                    Ok::<_, StoreError>(sealed)
                }
                .await;
                sqlx::query(&format!("PRAGMA secure_delete = {previous}")).execute(&mut *conn).await?;
                let sealed = sealed?;
                if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut *conn).await {
                    tracing::warn!(error = %e, "cannot checkpoint the WAL after sealing event bodies");
                }
                sealed
            }
            Db::Postgres { write: pool, .. } => {
                let mut tx = pool.begin().await?;
                let sealed = seal_rows((&mut *tx).into(), sealer).await?;
                tx.commit().await?;
                sealed
            }
        };
        if sealed > 0 {
            tracing::info!(count = sealed, "sealed event bodies stored in clear before the data key");
        }
        Ok(sealed)
    }

    pub async fn webhook_endpoint(&self, brand_id: i64) -> Result<Option<WebhookEndpointRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE brand_id = $1"))
                .bind(brand_id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// Creates the brand's endpoint; `Conflict` when it already has one.
    pub async fn create_webhook_endpoint(
        &self,
        brand_id: i64,
        url: &str,
        enabled: bool,
        secret: &str,
    ) -> Result<WebhookEndpointRecord, StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query_as(&format!(
                "INSERT INTO webhook_endpoints
                     (brand_id, url, enabled, signing_secret, secret_rotated_at, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $5, $5) RETURNING {ENDPOINT_COLUMNS}"
            ))
            .bind(brand_id)
            .bind(url)
            .bind(enabled)
            .bind(secret)
            .bind(now())
            .fetch_one(pool)
            .await
            .map_err(|e| on_unique(e, "webhook endpoint"))
        })
    }

    /// Changes the URL and/or the enabled flag of the brand's endpoint.
    pub async fn update_webhook_endpoint(
        &self,
        brand_id: i64,
        url: Option<&str>,
        enabled: Option<bool>,
    ) -> Result<WebhookEndpointRecord, StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query_as(&format!(
                "UPDATE webhook_endpoints SET url = COALESCE($2, url), enabled = COALESCE($3, enabled), updated_at = $4
                 WHERE brand_id = $1 RETURNING {ENDPOINT_COLUMNS}"
            ))
            .bind(brand_id)
            .bind(url)
            .bind(enabled)
            .bind(now())
            .fetch_optional(pool)
            .await?
            .ok_or(StoreError::NotFound)
        })
    }

    /// Replaces the signing secret; deliveries signed from now on use the new one.
    pub async fn rotate_webhook_secret(
        &self,
        brand_id: i64,
        secret: &str,
    ) -> Result<WebhookEndpointRecord, StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query_as(&format!(
                "UPDATE webhook_endpoints SET signing_secret = $2, secret_rotated_at = $3, updated_at = $3
                 WHERE brand_id = $1 RETURNING {ENDPOINT_COLUMNS}"
            ))
            .bind(brand_id)
            .bind(secret)
            .bind(now())
            .fetch_optional(pool)
            .await?
            .ok_or(StoreError::NotFound)
        })
    }

    /// One page of the brand's delivery log, newest first, and the number of matches.
    pub async fn webhook_deliveries(
        &self,
        brand_id: i64,
        status: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<DeliveryRecord>, i64), StoreError> {
        on_pool!(self, read, |pool| {
            let rows = sqlx::query_as(&format!(
                "{DELIVERY_SELECT} WHERE e.brand_id = $1 AND ($2 IS NULL OR e.status = $2)
                 ORDER BY e.seq DESC LIMIT $3 OFFSET $4"
            ))
            .bind(brand_id)
            .bind(status)
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await?;
            let total = sqlx::query_scalar(
                "SELECT COUNT(*) FROM webhook_events WHERE brand_id = $1 AND ($2 IS NULL OR status = $2)",
            )
            .bind(brand_id)
            .bind(status)
            .fetch_one(pool)
            .await?;
            Ok((rows, total))
        })
    }

    /// One event of the brand's log with its attempts, oldest first.
    pub async fn webhook_delivery(
        &self,
        brand_id: i64,
        event_id: &str,
    ) -> Result<(DeliveryRecord, Vec<AttemptRecord>), StoreError> {
        on_pool!(self, read, |pool| {
            let delivery: DeliveryRecord =
                sqlx::query_as(&format!("{DELIVERY_SELECT} WHERE e.brand_id = $1 AND e.id = $2"))
                    .bind(brand_id)
                    .bind(event_id)
                    .fetch_optional(pool)
                    .await?
                    .ok_or(StoreError::NotFound)?;
            let attempts = sqlx::query_as(
                "SELECT attempted_at, url, status_code, error, duration_ms FROM webhook_attempts
                 WHERE event_seq = $1 ORDER BY id",
            )
            .bind(delivery.seq)
            .fetch_all(pool)
            .await?;
            Ok((delivery, attempts))
        })
    }

    /// Queues the brand's event again for immediate delivery, same id and bytes, and opens a
    /// new retry window. An attempt in flight keeps running but no longer decides the state.
    pub async fn replay_webhook(&self, brand_id: i64, event_id: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query(
                "UPDATE webhook_events
                 SET status = 'pending', window_start = $3, window_attempts = 0, next_attempt_at = $3,
                     lease_owner = NULL, lease_until = NULL
                 WHERE brand_id = $1 AND id = $2",
            )
            .bind(brand_id)
            .bind(event_id)
            .bind(now())
            .execute(pool)
            .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound);
            }
            Ok(())
        })
    }

    /// Due, unleased events whose brand has an enabled endpoint: at most `per_brand` of each
    /// brand (its oldest), at most `limit` in all, oldest first. Taking a few of every brand
    /// keeps one brand's backlog from hiding the others' events.
    pub async fn due_webhooks(
        &self,
        at: DateTime<Utc>,
        per_brand: i64,
        limit: i64,
    ) -> Result<Vec<DueDelivery>, StoreError> {
        let sql = DUE_WEBHOOKS.of(self);
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(sql).bind(Ts::from(at)).bind(per_brand).bind(limit).fetch_all(pool).await?)
        })
    }

    /// Takes the lease of those `seqs` that are still pending and unleased; returns the
    /// events actually claimed (another worker may have been first to some).
    pub async fn claim_webhooks(
        &self,
        seqs: &[i64],
        owner: &str,
        at: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Vec<ClaimedEvent>, StoreError> {
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (4..4 + seqs.len()).map(|n| format!("${n}")).collect();
        // The rows are locked (on PostgreSQL, skipping those another node holds) and
        // re-checked as they are taken, so each event is leased by one worker at a time.
        let sql = format!(
            "UPDATE webhook_events SET lease_owner = $1, lease_until = $3
             WHERE seq IN (SELECT seq FROM webhook_events
                           WHERE status = 'pending' AND (lease_until IS NULL OR lease_until <= $2) AND seq IN ({})
                           {})
             RETURNING seq, id, brand_id, type, body, body_sealed, window_attempts, window_start",
            placeholders.join(", "),
            self.skip_locked("webhook_events")
        );
        on_pool!(self, write, |pool| {
            let mut query = sqlx::query_as(&sql).bind(owner).bind(Ts::from(at)).bind(Ts::from(lease_until));
            for seq in seqs {
                query = query.bind(seq);
            }
            Ok(query.fetch_all(pool).await?)
        })
    }

    /// Records attempts in one transaction. The event's state changes only where `owner`
    /// still holds the lease (a replay in the meantime takes precedence); the attempt
    /// itself is always recorded.
    pub async fn record_webhook_attempts(&self, owner: &str, results: &[AttemptResult]) -> Result<(), StoreError> {
        if results.is_empty() {
            return Ok(());
        }
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            for r in results {
                sqlx::query(
                    "INSERT INTO webhook_attempts (event_seq, attempted_at, url, status_code, error, duration_ms)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(r.seq)
                .bind(Ts::from(r.attempted_at))
                .bind(&r.url)
                .bind(r.status_code.map(i64::from))
                .bind(r.error)
                .bind(r.duration_ms)
                .execute(&mut *tx)
                .await?;
                let finished_at = r.attempted_at + chrono::TimeDelta::milliseconds(r.duration_ms);
                sqlx::query(
                    "UPDATE webhook_events SET
                         attempts = attempts + 1, last_status_code = $3, last_error = $4,
                         window_attempts = CASE WHEN lease_owner = $2 THEN window_attempts + 1 ELSE window_attempts END,
                         status = CASE WHEN lease_owner = $2 THEN $5 ELSE status END,
                         next_attempt_at = CASE WHEN lease_owner = $2 THEN $6 ELSE next_attempt_at END,
                         delivered_at = CASE WHEN lease_owner = $2 AND $5 = 'delivered' THEN $7 ELSE delivered_at END,
                         lease_until = CASE WHEN lease_owner = $2 THEN NULL ELSE lease_until END,
                         lease_owner = CASE WHEN lease_owner = $2 THEN NULL ELSE lease_owner END
                     WHERE seq = $1",
                )
                .bind(r.seq)
                .bind(owner)
                .bind(r.status_code.map(i64::from))
                .bind(r.error)
                .bind(r.status)
                .bind(r.next_attempt_at.map(Ts::from))
                .bind(Ts::from(finished_at))
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// Gives up leases of `owner` (a worker stopping with nothing in flight for them).
    pub async fn release_webhook_leases(&self, owner: &str) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            Ok(sqlx::query("UPDATE webhook_events SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1")
                .bind(owner)
                .execute(pool)
                .await?
                .rows_affected())
        })
    }

    /// The earliest future due time of an event that has an enabled endpoint.
    pub async fn next_webhook_due(&self, after: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar(
                "SELECT e.next_attempt_at FROM webhook_events e
                 WHERE e.status = 'pending' AND e.next_attempt_at > $1
                   AND EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.brand_id = e.brand_id AND ep.enabled)
                 ORDER BY e.next_attempt_at LIMIT 1",
            )
            .bind(Ts::from(after))
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Parks as dead (`no_endpoint`) the pending events whose retry window opened before
    /// `window_opened_before` and whose brand has no enabled endpoint.
    pub async fn park_undeliverable_webhooks(
        &self,
        window_opened_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            Ok(sqlx::query(
                "UPDATE webhook_events SET status = 'dead', next_attempt_at = NULL, last_error = 'no_endpoint'
                 WHERE status = 'pending' AND window_start <= $1 AND (lease_until IS NULL OR lease_until <= $2)
                   AND NOT EXISTS (SELECT 1 FROM webhook_endpoints ep
                                   WHERE ep.brand_id = webhook_events.brand_id AND ep.enabled)",
            )
            .bind(Ts::from(window_opened_before))
            .bind(Ts::from(at))
            .execute(pool)
            .await?
            .rows_affected())
        })
    }

    /// Event counts by status (all brands), for operators and benchmarks.
    pub async fn webhook_status_counts(&self) -> Result<HashMap<String, i64>, StoreError> {
        on_pool!(self, read, |pool| {
            let rows: Vec<(String, i64)> =
                sqlx::query_as("SELECT status, COUNT(*) FROM webhook_events GROUP BY status").fetch_all(pool).await?;
            Ok(rows.into_iter().collect())
        })
    }
}

/// Seals every clear body on `conn`, the caller's transaction (on PostgreSQL the rows are
/// locked as they are read, so a concurrent sealer waits and then finds them sealed).
async fn seal_rows(conn: Conn<'_>, sealer: &Sealer) -> Result<u64, StoreError> {
    let lock = if matches!(conn, Conn::Postgres(_)) { " FOR UPDATE" } else { "" };
    let select = format!("SELECT seq, id, body FROM webhook_events WHERE body_sealed IS NULL{lock}");
    on_conn!(conn, |c| {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(&select).fetch_all(&mut *c).await?;
        for (seq, id, body) in &rows {
            let sealed = sealer.seal(id.as_bytes(), body.as_bytes()).map_err(|e| StoreError::Sealing(e.to_string()))?;
            sqlx::query("UPDATE webhook_events SET body = '', body_sealed = $2 WHERE seq = $1 AND body_sealed IS NULL")
                .bind(seq)
                .bind(sealed)
                .execute(&mut *c)
                .await?;
        }
        Ok(rows.len() as u64)
    })
}
