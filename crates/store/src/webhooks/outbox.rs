//! The event outbox: events written on the caller's transaction, sealed at rest, and the
//! worker's side (due events, leases, attempts, parking).

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::pending;
use crate::{indexed_by, skip_locked, Dialect, BY_ROWID};
use crate::{on_conn, on_pool, placeholders, Conn, Db, Sealer, Store, StoreError, Ts, Undecryptable};
use rehome_domain::event::Event;
use rehome_domain::webhook::{DeliveryStatus, FailureClass};

/// Most attempts recorded per statement: 7 parameters each, well under both backends'
/// limits on bound parameters (SQLite 32,766, PostgreSQL 65,535).
const RECORD_BATCH: usize = 500;

/// A due event that may be claimed, with where it goes.
#[derive(Debug, Clone, FromRow)]
pub struct DueDelivery {
    pub seq: i64,
    pub brand_id: i64,
    pub url: String,
    pub signing_secret: String,
    /// The secrets replaced by rotations, a JSON array (`domain::webhook::read_previous`);
    /// those whose overlap has ended are left out when signing (decisions 11.4).
    pub previous_secrets: String,
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
    pub error: Option<FailureClass>,
    pub duration_ms: i64,
    /// `Pending` means a retry at `next_attempt_at`.
    pub status: DeliveryStatus,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The start of the answer's body (`domain::webhook::answer_excerpt`).
    pub response_excerpt: Option<String>,
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
        // Not for an endpoint that left this type out of its `event_types` (decisions 15.3);
        // a test event (`ping`) always.
        sqlx::query(
            "INSERT INTO webhook_events (id, brand_id, type, body, body_sealed, created_at, window_start,
                                         next_attempt_at)
             SELECT $1, $2, $3, '', $4, $5, $5, $5
             WHERE $3 = 'ping' OR NOT EXISTS (
                 SELECT 1 FROM webhook_endpoints ep
                 WHERE ep.brand_id = $2 AND ',' || ep.event_types || ',' NOT LIKE '%,' || $3 || ',%')",
        )
        .bind(&event.id)
        .bind(event.brand_id)
        .bind(event.event_type.as_str())
        .bind(&sealed)
        .bind(Ts::from(event.created_at))
        .execute(&mut *c)
        .await?;
        Ok(())
    })
}

/// Each enabled endpoint's oldest due events, then the oldest of those. PostgreSQL gets the
/// per-endpoint step as a LATERAL join (an index scan per endpoint); SQLite, which has no
/// LATERAL, as `IN` over a correlated subquery, which it plans that way.
static DUE_WEBHOOKS: LazyLock<Dialect<String>> = LazyLock::new(|| {
    let due = format!(
        "d.brand_id = ep.brand_id AND {} AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)",
        pending("d.status")
    );
    let sqlite = format!(
        "SELECT e.seq, e.brand_id, ep.url, ep.signing_secret,
                ep.previous_secrets
         FROM webhook_endpoints ep JOIN webhook_events e ON e.seq IN (
             SELECT d.seq FROM webhook_events d WHERE {due} ORDER BY d.next_attempt_at, d.seq LIMIT $2)
         WHERE ep.enabled
         ORDER BY e.next_attempt_at, e.seq LIMIT $3"
    );
    let postgres = format!(
        "SELECT e.seq, e.brand_id, ep.url, ep.signing_secret,
                ep.previous_secrets
         FROM webhook_endpoints ep CROSS JOIN LATERAL (
             SELECT d.seq, d.brand_id, d.next_attempt_at FROM webhook_events d
             WHERE {due} ORDER BY d.next_attempt_at, d.seq LIMIT $2) e
         WHERE ep.enabled
         ORDER BY e.next_attempt_at, e.seq LIMIT $3"
    );
    Dialect { sqlite, postgres }
});

/// A row of [`Store::due_webhooks_window`]: the endpoint's columns are null when the brand has none enabled.
#[derive(FromRow)]
struct WindowRow {
    seq: i64,
    brand_id: i64,
    next_attempt_at: Ts,
    url: Option<String>,
    signing_secret: Option<String>,
    previous_secrets: Option<String>,
}

/// An event's place in the due order: its `next_attempt_at`, then its `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DueKey {
    pub at: DateTime<Utc>,
    pub seq: i64,
}

/// The due events at the head of the outbox ([`Store::due_webhooks_window`]).
#[derive(Debug, Clone, Default)]
pub struct DueWindow {
    /// Those of the window whose brand has an enabled endpoint, oldest first.
    pub due: Vec<DueDelivery>,
    /// The place of the first of `due` (the first event that has somewhere to go), where the
    /// next window may start.
    pub first: Option<DueKey>,
    /// Whether the window held every due, unleased event from where it started (it was
    /// not full).
    pub complete: bool,
}

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
            insert_event((&mut *conn).into(), sealer, event).await?;
            conn.settle();
            Ok(())
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
    /// brand (its oldest), at most `limit` in all, oldest first. Taking a few of every brand
    /// keeps one brand's backlog from hiding the others' events.
    pub async fn due_webhooks(
        &self,
        at: DateTime<Utc>,
        per_brand: i64,
        limit: i64,
    ) -> Result<Vec<DueDelivery>, StoreError> {
        let sql = DUE_WEBHOOKS.pick(self);
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(sql).bind(Ts::from(at)).bind(per_brand).bind(limit).fetch_all(pool).await?)
        })
    }

    /// The `window` oldest due, unleased events from `from` on (the head of the outbox when
    /// `None`), those whose brand has an enabled endpoint with where they go. Its cost
    /// depends on the window, not on the backlog or the number of endpoints, so the worker
    /// looks here first and asks [`Store::due_webhooks`] (a probe per endpoint) only when the
    /// window's events cannot fill its free slots: one brand's backlog ahead of everyone
    /// else's, or events whose endpoint is paused.
    ///
    /// Starting from where the last window found its first event skips the head of the due
    /// index that PostgreSQL keeps until a vacuum: the entries of events delivered since,
    /// which every read from the head would walk again.
    pub async fn due_webhooks_window(
        &self,
        at: DateTime<Utc>,
        window: i64,
        from: Option<DueKey>,
    ) -> Result<DueWindow, StoreError> {
        // A bounded scan of the due index, whatever the backlog: at most `window` rows past
        // the leased ones, from `from` (the epoch and seq 0 when reading from the head).
        let sql = format!(
            "SELECT e.seq, e.brand_id, e.next_attempt_at, ep.url, ep.signing_secret, ep.previous_secrets
             FROM (SELECT d.seq, d.brand_id, d.next_attempt_at FROM webhook_events d {}
                   WHERE {} AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
                     AND d.next_attempt_at >= $3 AND (d.next_attempt_at > $3 OR d.seq >= $4)
                   ORDER BY d.next_attempt_at, d.seq LIMIT $2) e
             LEFT JOIN webhook_endpoints ep ON ep.brand_id = e.brand_id AND ep.enabled
             ORDER BY e.next_attempt_at, e.seq",
            indexed_by("webhook_events_due").pick(self),
            pending("d.status")
        );
        let from = from.unwrap_or(DueKey { at: DateTime::UNIX_EPOCH, seq: 0 });
        let rows: Vec<WindowRow> = on_pool!(self, read, |pool| {
            Ok::<_, StoreError>(
                sqlx::query_as(&sql)
                    .bind(Ts::from(at))
                    .bind(window)
                    .bind(Ts::from(from.at))
                    .bind(from.seq)
                    .fetch_all(pool)
                    .await?,
            )
        })?;
        let complete = (rows.len() as i64) < window;
        let mut first = None;
        let due = rows
            .into_iter()
            .filter_map(|row| {
                let key = DueKey { at: row.next_attempt_at.get(), seq: row.seq };
                let due = DueDelivery {
                    seq: row.seq,
                    brand_id: row.brand_id,
                    url: row.url?,
                    signing_secret: row.signing_secret?,
                    previous_secrets: row.previous_secrets?,
                };
                first.get_or_insert(key);
                Some(due)
            })
            .collect();
        Ok(DueWindow { due, first, complete })
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
             WHERE seq IN (SELECT seq FROM webhook_events {}
                           WHERE {} AND (lease_until IS NULL OR lease_until <= $2) AND seq IN ({})
                           {})
             RETURNING seq, id, brand_id, type, body, body_sealed, window_attempts, window_start",
            BY_ROWID.of(self),
            pending("status"),
            placeholders.join(", "),
            skip_locked("webhook_events").pick(self)
        );
        on_pool!(self, write, |pool| {
            let mut query = sqlx::query_as(&sql).bind(owner).bind(Ts::from(at)).bind(Ts::from(lease_until));
            for seq in seqs {
                query = query.bind(seq);
            }
            Ok(query.fetch_all(pool).await?)
        })
    }

    /// Records attempts in one transaction: the attempt rows in one multi-row `INSERT`, the
    /// events' new states in one `UPDATE … FROM (VALUES …)` (for a batch of hundreds, four
    /// statements rather than two per attempt). The event's state changes only where `owner`
    /// still holds the lease (a replay in the meantime takes precedence); the attempt itself
    /// is always recorded.
    pub async fn record_webhook_attempts(&self, owner: &str, results: &[AttemptResult]) -> Result<(), StoreError> {
        if results.is_empty() {
            return Ok(());
        }
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            for chunk in results.chunks(RECORD_BATCH) {
                let rows = placeholders(chunk.len(), 7, |p| format!("({})", p.join(", ")));
                let insert = format!(
                    "INSERT INTO webhook_attempts
                         (event_seq, attempted_at, url, status_code, error, duration_ms, response_excerpt)
                     VALUES {rows}"
                );
                let mut query = sqlx::query(&insert);
                for r in chunk {
                    query = query
                        .bind(r.seq)
                        .bind(Ts::from(r.attempted_at))
                        .bind(&r.url)
                        .bind(r.status_code.map(i64::from))
                        .bind(r.error.map(FailureClass::as_str))
                        .bind(r.duration_ms)
                        .bind(r.response_excerpt.as_deref());
                }
                query.execute(&mut *tx).await?;
                // Every right-hand side reads the row as it was, so each CASE sees the lease
                // before it is released. `r` is (seq, status code, error, status, next
                // attempt, finished at, delivered), the owner after the rows.
                let owner_param = format!("${}", chunk.len() * 7 + 1);
                let update = format!(
                    "UPDATE webhook_events SET
                         attempts = attempts + 1, last_status_code = r.column2, last_error = r.column3,
                         window_attempts = CASE WHEN lease_owner = {o} THEN window_attempts + 1 ELSE window_attempts END,
                         status = CASE WHEN lease_owner = {o} THEN r.column4 ELSE status END,
                         next_attempt_at = CASE WHEN lease_owner = {o} THEN r.column5 ELSE next_attempt_at END,
                         delivered_at = CASE WHEN lease_owner = {o} AND r.column7 THEN r.column6 ELSE delivered_at END,
                         lease_until = CASE WHEN lease_owner = {o} THEN NULL ELSE lease_until END,
                         lease_owner = CASE WHEN lease_owner = {o} THEN NULL ELSE lease_owner END
                     FROM (VALUES {rows}) AS r
                     WHERE webhook_events.seq = r.column1",
                    o = owner_param
                );
                let mut query = sqlx::query(&update);
                for r in chunk {
                    let finished_at = r.attempted_at + chrono::TimeDelta::milliseconds(r.duration_ms);
                    query = query
                        .bind(r.seq)
                        .bind(r.status_code.map(i64::from))
                        .bind(r.error.map(FailureClass::as_str))
                        .bind(r.status.as_str())
                        .bind(r.next_attempt_at.map(Ts::from))
                        .bind(Ts::from(finished_at))
                        .bind(r.status == DeliveryStatus::Delivered);
                }
                query.bind(owner).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// Gives up leases of `owner` (a worker stopping with nothing in flight for them).
    pub async fn release_webhook_leases(&self, owner: &str) -> Result<u64, StoreError> {
        self.release_leases("webhook_events", "lease_until", owner).await
    }

    /// The earliest future due time of an event that has an enabled endpoint.
    pub async fn next_webhook_due(&self, after: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, StoreError> {
        let sql = format!(
            "SELECT e.next_attempt_at FROM webhook_events e {}
             WHERE {} AND e.next_attempt_at > $1
               AND EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.brand_id = e.brand_id AND ep.enabled)
             ORDER BY e.next_attempt_at LIMIT 1",
            indexed_by("webhook_events_due").pick(self),
            pending("e.status")
        );
        on_pool!(self, read, |pool| { Ok(sqlx::query_scalar(&sql).bind(Ts::from(after)).fetch_optional(pool).await?) })
    }

    /// Parks as dead (`no_endpoint`) the pending events whose retry window opened before
    /// `window_opened_before` and whose brand has no enabled endpoint.
    pub async fn park_undeliverable_webhooks(
        &self,
        window_opened_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let sql = format!(
            "UPDATE webhook_events {} SET status = $3, next_attempt_at = NULL, last_error = $4
             WHERE {} AND window_start <= $1 AND (lease_until IS NULL OR lease_until <= $2)
               AND NOT EXISTS (SELECT 1 FROM webhook_endpoints ep
                               WHERE ep.brand_id = webhook_events.brand_id AND ep.enabled)",
            indexed_by("webhook_events_window").pick(self),
            pending("status")
        );
        on_pool!(self, write, |pool| {
            Ok(sqlx::query(&sql)
                .bind(Ts::from(window_opened_before))
                .bind(Ts::from(at))
                .bind(DeliveryStatus::Dead.as_str())
                .bind(FailureClass::NoEndpoint.as_str())
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
