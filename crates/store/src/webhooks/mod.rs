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

mod outbox;

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::{commit_audited, now, on_pool, record_audit, Store, StoreError, Ts, Undecryptable, READ_SNAPSHOT};
use crate::{indexed_by, BRAND_LOCK};
pub use outbox::{insert_event, AttemptResult, ClaimedEvent, DueDelivery, DueKey, DueWindow};
use rehome_domain::audit::AuditEntry;
use rehome_domain::event::Event;
use rehome_domain::precondition::Precondition;
use rehome_domain::view::{AttemptRecord, DeliveryRecord, WebhookEndpointRecord};
use rehome_domain::webhook::{after_rotation, read_previous, DeliveryStatus, FailureClass};
use rehome_domain::wire::UnknownValue;

/// `status = 'pending'` for `column`, with the status written into the SQL text rather than
/// bound, so that the partial indexes on pending events (`WHERE status = 'pending'`) apply.
fn pending(column: &str) -> String {
    format!("{column} = '{}'", DeliveryStatus::Pending.as_str())
}

/// `status = '<status>'` for `column`, written into the text like [`pending`].
fn status_is(column: &str, status: DeliveryStatus) -> String {
    format!("{column} = '{}'", status.as_str())
}

/// Where the brand's delivery log of one status (or all) is read from: the index (named on
/// SQLite, which plans without statistics) and the condition, its status in the text so
/// the partial indexes apply. None of them is moved by a delivery but the brand's pending
/// events, which it leaves: pending events from those (the brand's due events on SQLite),
/// dead ones from their own partial index, delivered ones from the brand's list (most of
/// it).
fn log_filter(status: Option<DeliveryStatus>) -> (&'static str, String) {
    let brand = "e.brand_id = $1";
    match status {
        None => ("webhook_events_brand", brand.to_owned()),
        Some(DeliveryStatus::Pending) => ("webhook_events_brand_due", format!("{brand} AND {}", pending("e.status"))),
        Some(DeliveryStatus::Dead) => {
            ("webhook_events_brand_dead", format!("{brand} AND {}", status_is("e.status", DeliveryStatus::Dead)))
        }
        Some(status @ DeliveryStatus::Delivered) => {
            ("webhook_events_brand", format!("{brand} AND {}", status_is("e.status", status)))
        }
    }
}

/// One page of the log, newest first. On SQLite a pending page sorts the brand's due
/// events (few beside its list); PostgreSQL reads them in order from
/// `webhook_events_brand_pending`, which it has for that (its migration 0038 says why).
fn log_page(store: &Store, status: Option<DeliveryStatus>) -> String {
    let (index, matching) = log_filter(status);
    format!(
        "{} WHERE {matching} ORDER BY e.seq DESC LIMIT $2 OFFSET $3",
        delivery_select(indexed_by(index).pick(store))
    )
}

/// How many of the brand's events have `status` (or any), counted from indexes alone:
/// delivered ones as the brand's events less its pending and dead ones (the three statuses
/// are all there are), so no count reads the brand's delivered events one by one.
fn log_count(store: &Store, status: Option<DeliveryStatus>) -> String {
    let count = |status: Option<DeliveryStatus>| {
        let (index, matching) = log_filter(status);
        format!("(SELECT COUNT(*) FROM webhook_events e {} WHERE {matching})", indexed_by(index).pick(store))
    };
    match status {
        Some(DeliveryStatus::Delivered) => format!(
            "SELECT {} - {} - {}",
            count(None),
            count(Some(DeliveryStatus::Pending)),
            count(Some(DeliveryStatus::Dead))
        ),
        other => format!("SELECT {}", count(other)),
    }
}

/// Queues the brand's dead events again (created at or after `$2`, when given), read from
/// their own partial index.
fn replay_dead_sql(store: &Store) -> String {
    format!(
        "UPDATE webhook_events {} SET status = $4, window_start = $3, window_attempts = 0, next_attempt_at = $3,
             lease_owner = NULL, lease_until = NULL
         WHERE brand_id = $1 AND {} AND ($2 IS NULL OR created_at >= $2)",
        indexed_by("webhook_events_brand_dead").pick(store),
        status_is("status", DeliveryStatus::Dead)
    )
}

/// The event types of an endpoint as stored when none were chosen: the spec's two.
pub const DEFAULT_EVENT_TYPES: &str = "redemption.created,collection.scheduled";

/// The outcome of creating a brand's endpoint.
#[derive(Debug)]
pub enum EndpointInsert {
    Created(WebhookEndpointRecord),
    /// The brand has one already (another request may have created it meanwhile).
    AlreadyExists,
}

/// What a conditional change of the endpoint found.
#[derive(Debug)]
pub enum EndpointChange {
    Changed(WebhookEndpointRecord),
    /// The brand has no endpoint.
    Missing,
    /// The guard refused the endpoint as it stood (`If-Match`): nothing changed.
    PreconditionFailed,
}

const ENDPOINT_COLUMNS: &str =
    "brand_id, url, enabled, signing_secret, secret_rotated_at, created_at, updated_at, event_types";

#[derive(FromRow)]
struct DeliveryRow {
    event_id: String,
    #[sqlx(rename = "type")]
    event_type: String,
    status: String,
    attempts: i64,
    last_status_code: Option<i64>,
    last_error: Option<String>,
    next_attempt_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    delivered_at: Option<DateTime<Utc>>,
    seq: i64,
}

impl TryFrom<DeliveryRow> for DeliveryRecord {
    type Error = StoreError;

    fn try_from(r: DeliveryRow) -> Result<Self, StoreError> {
        Ok(Self {
            event_id: r.event_id,
            event_type: r.event_type,
            status: r.status.parse().map_err(undecodable)?,
            attempts: r.attempts,
            last_status_code: r.last_status_code,
            last_error: r.last_error.map(|e| e.parse()).transpose().map_err(undecodable)?,
            next_attempt_at: r.next_attempt_at,
            created_at: r.created_at,
            delivered_at: r.delivered_at,
            seq: r.seq,
        })
    }
}

/// A stored status or failure class this build does not know.
fn undecodable(e: UnknownValue) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(Box::new(e)))
}

/// A pending event with no enabled endpoint is not being tried: the log says so
/// (`no_endpoint`, no next attempt) instead of showing a due time that will not be kept.
static DELIVERY_COLUMNS: LazyLock<String> = LazyLock::new(|| {
    let waiting = format!("{} AND NOT COALESCE(ep.enabled, FALSE)", pending("e.status"));
    format!(
        "SELECT e.seq, e.id AS event_id, e.type, e.status, e.attempts, e.last_status_code,
            CASE WHEN {waiting} THEN '{no_endpoint}' ELSE e.last_error END AS last_error,
            CASE WHEN {waiting} THEN NULL ELSE e.next_attempt_at END AS next_attempt_at,
            e.created_at, e.delivered_at",
        no_endpoint = FailureClass::NoEndpoint.as_str()
    )
});

/// The log's rows with their endpoint, the events read through `index` (an `INDEXED BY`
/// clause, or nothing).
fn delivery_select(index: &str) -> String {
    format!(
        "{} FROM webhook_events e {index} LEFT JOIN webhook_endpoints ep ON ep.brand_id = e.brand_id",
        *DELIVERY_COLUMNS
    )
}

#[derive(FromRow)]
struct AttemptRow {
    attempted_at: DateTime<Utc>,
    url: String,
    status_code: Option<i64>,
    error: Option<String>,
    duration_ms: i64,
    response_excerpt: Option<String>,
}

impl TryFrom<AttemptRow> for AttemptRecord {
    type Error = StoreError;

    fn try_from(r: AttemptRow) -> Result<Self, StoreError> {
        Ok(Self {
            attempted_at: r.attempted_at,
            url: r.url,
            status_code: r.status_code,
            error: r.error.map(|e| e.parse()).transpose().map_err(undecodable)?,
            duration_ms: r.duration_ms,
            response_excerpt: r.response_excerpt,
        })
    }
}

impl Store {
    pub async fn webhook_endpoint(&self, brand_id: i64) -> Result<Option<WebhookEndpointRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE brand_id = $1"))
                .bind(brand_id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// Creates the brand's endpoint, unless it has one.
    pub async fn create_webhook_endpoint(
        &self,
        brand_id: i64,
        url: &str,
        enabled: bool,
        secret: &str,
        event_types: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<EndpointInsert, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let created = sqlx::query_as(&format!(
                "INSERT INTO webhook_endpoints
                     (brand_id, url, enabled, signing_secret, secret_rotated_at, created_at, updated_at, event_types)
                 VALUES ($1, $2, $3, $4, $5, $5, $5, $6) RETURNING {ENDPOINT_COLUMNS}"
            ))
            .bind(brand_id)
            .bind(url)
            .bind(enabled)
            .bind(secret)
            .bind(now())
            .bind(event_types.unwrap_or(DEFAULT_EVENT_TYPES))
            .fetch_one(&mut *tx)
            .await;
            match created {
                Ok(endpoint) => {
                    record_audit((&mut *tx).into(), audit).await?;
                    tx.commit().await?;
                    Ok(EndpointInsert::Created(endpoint))
                }
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(EndpointInsert::AlreadyExists),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// Changes the URL and/or the enabled flag of the brand's endpoint. With a `guard`, the
    /// endpoint as it stands is read in the same transaction, under the brand's row lock on
    /// PostgreSQL (SQLite has one writer), and nothing changes unless the guard accepts it.
    pub async fn update_webhook_endpoint(
        &self,
        brand_id: i64,
        url: Option<&str>,
        enabled: Option<bool>,
        event_types: Option<&str>,
        guard: Option<Precondition<'_, Option<WebhookEndpointRecord>>>,
        audit: &AuditEntry,
    ) -> Result<EndpointChange, StoreError> {
        let lock = BRAND_LOCK.of(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if let Some(guard) = guard {
                sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
                let current: Option<WebhookEndpointRecord> =
                    sqlx::query_as(&format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE brand_id = $1"))
                        .bind(brand_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                if !guard(&current) {
                    return Ok(EndpointChange::PreconditionFailed);
                }
            }
            let updated = sqlx::query_as(&format!(
                "UPDATE webhook_endpoints SET url = COALESCE($2, url), enabled = COALESCE($3, enabled), updated_at = $4,
                     event_types = COALESCE($5, event_types)
                 WHERE brand_id = $1 RETURNING {ENDPOINT_COLUMNS}"
            ))
            .bind(brand_id)
            .bind(url)
            .bind(enabled)
            .bind(now())
            .bind(event_types)
            .fetch_optional(&mut *tx)
            .await?;
            Ok(commit_audited(tx, updated, audit).await?.map_or(EndpointChange::Missing, EndpointChange::Changed))
        })
    }

    /// Replaces the signing secret; deliveries signed from now on use the new one, and the
    /// previous ones [`after_rotation`] keeps. `None` when the brand has no endpoint.
    pub async fn rotate_webhook_secret(
        &self,
        brand_id: i64,
        secret: &str,
        previous_until: Option<Ts>,
        audit: &AuditEntry,
    ) -> Result<Option<WebhookEndpointRecord>, StoreError> {
        on_pool!(self, write, |pool| {
            // Read, then write only if the secret is still the one read (another rotation
            // may run at once): the loser reads again.
            for _ in 0..5 {
                let mut tx = pool.begin().await?;
                let row: Option<(String, String)> = sqlx::query_as(
                    "SELECT signing_secret, previous_secrets FROM webhook_endpoints WHERE brand_id = $1",
                )
                .bind(brand_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((current, stored)) = row else { return Ok(None) };
                let now = chrono::Utc::now();
                let kept = after_rotation(read_previous(&stored), current.clone(), previous_until.map(Ts::get), now);
                let kept = serde_json::to_string(&kept).unwrap_or_else(|_| "[]".to_owned());
                let rotated: Option<WebhookEndpointRecord> = sqlx::query_as(&format!(
                    "UPDATE webhook_endpoints
                     SET previous_secrets = $4, signing_secret = $2, secret_rotated_at = $3, updated_at = $3
                     WHERE brand_id = $1 AND signing_secret = $5 RETURNING {ENDPOINT_COLUMNS}"
                ))
                .bind(brand_id)
                .bind(secret)
                .bind(Ts::from(now))
                .bind(kept)
                .bind(&current)
                .fetch_optional(&mut *tx)
                .await?;
                if rotated.is_some() {
                    return commit_audited(tx, rotated, audit).await;
                }
            }
            Err(StoreError::Database(sqlx::Error::RowNotFound))
        })
    }

    /// One page of the brand's delivery log (of one status, or all), newest first, and the
    /// number of matches.
    pub async fn webhook_deliveries(
        &self,
        brand_id: i64,
        status: Option<DeliveryStatus>,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<DeliveryRecord>, i64), StoreError> {
        // One statement shape per filter, each served by its own index (`log_filter`): a
        // brand's log of a million events holds a handful of dead ones, found and counted
        // without reading the rest.
        let select = log_page(self, status);
        let count = log_count(self, status);
        let snapshot = READ_SNAPSHOT.of(self);
        on_pool!(self, read, |pool| {
            // One snapshot: the worker moves events between statuses all the time.
            let mut tx = pool.begin().await?;
            sqlx::query(snapshot).execute(&mut *tx).await?;
            let rows = sqlx::query_as::<_, DeliveryRow>(&select)
                .bind(brand_id)
                .bind(limit)
                .bind(offset)
                .fetch_all(&mut *tx)
                .await?;
            let total = sqlx::query_scalar::<_, i64>(&count).bind(brand_id).fetch_one(&mut *tx).await?;
            tx.commit().await?;
            let rows = rows.into_iter().map(DeliveryRecord::try_from).collect::<Result<_, _>>()?;
            Ok((rows, total))
        })
    }

    /// How many of the brand's events have `status`, from indexes alone (`log_count`): the
    /// few dead ones of a million are counted without reading the rest.
    pub async fn webhook_event_count(&self, brand_id: i64, status: DeliveryStatus) -> Result<i64, StoreError> {
        let sql = log_count(self, Some(status));
        on_pool!(self, read, |pool| { Ok(sqlx::query_scalar(&sql).bind(brand_id).fetch_one(pool).await?) })
    }

    /// One event of the brand's log with its attempts, oldest first; `None` when the brand
    /// has no such event.
    pub async fn webhook_delivery(
        &self,
        brand_id: i64,
        event_id: &str,
    ) -> Result<Option<(DeliveryRecord, Vec<AttemptRecord>)>, StoreError> {
        let select = format!("{} WHERE e.brand_id = $1 AND e.id = $2", delivery_select(""));
        on_pool!(self, read, |pool| {
            let row: Option<DeliveryRow> =
                sqlx::query_as(&select).bind(brand_id).bind(event_id).fetch_optional(pool).await?;
            let Some(row) = row else {
                return Ok(None);
            };
            let delivery = DeliveryRecord::try_from(row)?;
            let attempts: Vec<AttemptRow> = sqlx::query_as(
                "SELECT attempted_at, url, status_code, error, duration_ms, response_excerpt FROM webhook_attempts
                 WHERE event_seq = $1 ORDER BY id",
            )
            .bind(delivery.seq)
            .fetch_all(pool)
            .await?;
            let attempts = attempts.into_iter().map(AttemptRecord::try_from).collect::<Result<_, _>>()?;
            Ok(Some((delivery, attempts)))
        })
    }

    /// The bytes the brand's event sends (its envelope), opened with the data key: `None`
    /// when the brand has no such event, `Some(Err(_))` when its body does not open here.
    pub async fn webhook_event_envelope(
        &self,
        brand_id: i64,
        event_id: &str,
    ) -> Result<Option<Result<Vec<u8>, Undecryptable>>, StoreError> {
        let sealer = self.sealer.as_ref();
        on_pool!(self, read, |pool| {
            let event: Option<ClaimedEvent> = sqlx::query_as(
                "SELECT seq, id, brand_id, type, body, body_sealed, window_attempts, window_start
                 FROM webhook_events WHERE brand_id = $1 AND id = $2",
            )
            .bind(brand_id)
            .bind(event_id)
            .fetch_optional(pool)
            .await?;
            Ok(event.map(|e| e.envelope(sealer)))
        })
    }

    /// Queues the brand's event again for immediate delivery, same id and bytes, and opens a
    /// new retry window. An attempt in flight keeps running but no longer decides the state.
    /// False when the brand has no such event.
    pub async fn replay_webhook(&self, brand_id: i64, event_id: &str, audit: &AuditEntry) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let done = sqlx::query(
                "UPDATE webhook_events
                 SET status = $4, window_start = $3, window_attempts = 0, next_attempt_at = $3,
                     lease_owner = NULL, lease_until = NULL
                 WHERE brand_id = $1 AND id = $2",
            )
            .bind(brand_id)
            .bind(event_id)
            .bind(now())
            .bind(DeliveryStatus::Pending.as_str())
            .execute(&mut *tx)
            .await?;
            let replayed = (done.rows_affected() > 0).then_some(());
            Ok(commit_audited(tx, replayed, audit).await?.is_some())
        })
    }
}

impl Store {
    /// Queues every dead event of the brand (created at or after `since`) again for
    /// immediate delivery, with a fresh retry window, in one statement; the audit entry is
    /// written with them when there was any. Answers how many.
    pub async fn replay_dead_webhooks(
        &self,
        brand_id: i64,
        since: Option<Ts>,
        audit: &AuditEntry,
    ) -> Result<u64, StoreError> {
        let replay = replay_dead_sql(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let done = sqlx::query(&replay)
                .bind(brand_id)
                .bind(since)
                .bind(now())
                .bind(DeliveryStatus::Pending.as_str())
                .execute(&mut *tx)
                .await?;
            let replayed = (done.rows_affected() > 0).then_some(done.rows_affected());
            Ok(commit_audited(tx, replayed, audit).await?.unwrap_or(0))
        })
    }

    /// Records `event` and its audit entry in one transaction (a test event).
    pub async fn emit_audited_event(&self, event: &Event, audit: &AuditEntry) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            self.insert_event((&mut *tx).into(), event).await?;
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statuses the schema allows are exactly the enum's wire names, on both backends.
    #[test]
    fn the_schema_allows_exactly_the_delivery_statuses() {
        let allowed = DeliveryStatus::ALL.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
        let check = format!("status IN ({allowed})");
        for schema in [
            include_str!("../../../../migrations/sqlite/0005_webhooks.sql"),
            include_str!("../../../../migrations/postgres/0001_schema.sql"),
        ] {
            assert!(schema.contains(&check), "{check}");
        }
    }
}

/// The delivery log's statements read the index chosen for their filter, whatever the
/// planner knows: SQLite by name (it has no statistics), PostgreSQL because the status is in
/// the text, so its partial indexes apply (checked with sequential scans turned off, which
/// leaves only the indexes the statement can use).
#[cfg(test)]
mod log_plans {
    use super::*;
    use crate::on_pool;

    async fn plans(store: &Store) -> Vec<(String, String)> {
        let postgres = store.is_postgres();
        let explain = if postgres { "EXPLAIN " } else { "EXPLAIN QUERY PLAN " };
        let column = if postgres { 0 } else { 3 };
        let mut statements = vec![("Some(Dead) replay".to_owned(), replay_dead_sql(store), 5)];
        for status in [None, Some(DeliveryStatus::Pending), Some(DeliveryStatus::Delivered), Some(DeliveryStatus::Dead)]
        {
            statements.push((format!("{status:?} page"), log_page(store, status), 3));
            statements.push((format!("{status:?} count"), log_count(store, status), 1));
        }
        let mut plans = Vec::new();
        for (what, sql, params) in statements {
            let lines: Vec<String> = on_pool!(store, read, |pool| {
                let mut tx = pool.begin().await.unwrap();
                if postgres {
                    sqlx::query("SET LOCAL enable_seqscan = off").execute(&mut *tx).await.unwrap();
                }
                let sql = format!("{explain}{sql}");
                let mut query = sqlx::query(&sql).bind(1_i64);
                query = match params {
                    3 => query.bind(20_i64).bind(0_i64),
                    5 => query.bind(None::<Ts>).bind(crate::now()).bind("pending"),
                    _ => query,
                };
                let rows = query.fetch_all(&mut *tx).await.unwrap();
                tx.rollback().await.unwrap();
                rows.iter().map(|row| sqlx::Row::get::<String, _>(row, column)).collect()
            });
            plans.push((what, lines.join("\n")));
        }
        plans
    }

    /// Two brands' events: one with a long log of mostly delivered events and a few pending
    /// and dead, one whose events are all pending (as under a backlog).
    async fn seed(store: &Store) {
        let mut brands = Vec::new();
        for slug in ["long", "backlog"] {
            let crate::BrandInsert::Created(brand) = store.create_brand(slug, slug).await.unwrap() else {
                panic!("slug taken")
            };
            brands.push(brand.id);
        }
        let at = crate::now();
        on_pool!(store, write, |pool| {
            let mut tx = pool.begin().await.unwrap();
            for n in 0..3_100_i64 {
                let (brand, status) = match n {
                    0..50 => (brands[0], "dead"),
                    50..100 => (brands[0], "pending"),
                    100..3_000 => (brands[0], "delivered"),
                    _ => (brands[1], "pending"),
                };
                let pending = status == "pending";
                sqlx::query(
                    "INSERT INTO webhook_events (id, brand_id, type, body, created_at, status, window_start,
                       next_attempt_at, delivered_at)
                     VALUES ($1, $2, 'listing.updated', '', $3, $4, $3, $5, $6)",
                )
                .bind(format!("evt_{n}"))
                .bind(brand)
                .bind(at)
                .bind(status)
                .bind(pending.then_some(at))
                .bind((status == "delivered").then_some(at))
                .execute(&mut *tx)
                .await
                .unwrap();
            }
            tx.commit().await.unwrap();
        });
    }

    async fn each_filter_reads_its_own_index(store: &Store) {
        seed(store).await;
        let postgres = store.is_postgres();
        for analysed in [false, true] {
            if analysed {
                on_pool!(store, write, |pool| {
                    sqlx::query("ANALYZE").execute(pool).await.unwrap();
                });
            }
            for (what, plan) in plans(store).await {
                let what = format!("{what} (analysed: {analysed})");
                check(postgres, &what, &plan);
            }
        }
    }

    fn check(postgres: bool, what: &str, plan: &str) {
        let statement = what.split(" (").next().unwrap_or_default();
        let wanted: &[&str] = match statement {
            "None page" | "None count" | "Some(Delivered) page" => &["webhook_events_brand "],
            "Some(Pending) page" if postgres => &["webhook_events_brand_pending"],
            "Some(Pending) page" | "Some(Pending) count" => &["webhook_events_brand_due"],
            "Some(Dead) page" | "Some(Dead) count" | "Some(Dead) replay" => &["webhook_events_brand_dead"],
            "Some(Delivered) count" => {
                &["webhook_events_brand ", "webhook_events_brand_due", "webhook_events_brand_dead"]
            }
            other => panic!("no index named for {other}"),
        };
        // A page of every status (or of delivered ones, most of the log) may walk the whole
        // table newest first where PostgreSQL knows the brand is most of it.
        let walks_all = postgres
            && matches!(statement, "None page" | "Some(Delivered) page")
            && plan.contains("Index Scan Backward using webhook_events_pkey");
        for index in wanted.iter().filter(|_| !walks_all) {
            // PostgreSQL counts from whichever index of the events it finds cheaper (where
            // the brand is nearly all of them, every pending event), never from the table.
            let counted = postgres && statement.ends_with("count");
            assert!(plan.contains(index) || counted, "{what} reads {index}:\n{plan}");
        }
        assert!(!plan.contains("Seq Scan on webhook_events"), "{what} scans every event:\n{plan}");
        if !postgres {
            // A full scan of the events reads `SCAN e` (or the table) with no index.
            assert!(
                !plan.lines().any(|l| {
                    let l = l.trim();
                    (l.starts_with("SCAN e") || l.starts_with("SCAN webhook_events")) && !l.contains("INDEX")
                }),
                "{what} scans every event:\n{plan}"
            );
        }
        if statement.ends_with("count") {
            assert!(!plan.contains("webhook_events_delivered"), "{what}:\n{plan}");
        }
    }

    #[tokio::test]
    async fn on_sqlite_each_filter_of_the_delivery_log_reads_its_own_index() {
        let (store, _dir) = crate::testing::sqlite_store().await;
        each_filter_reads_its_own_index(&store).await;
    }

    #[tokio::test]
    async fn on_postgres_each_filter_of_the_delivery_log_reads_its_own_index() {
        let Some(pg) = crate::testing::PostgresStore::new("delivery_log_plans").await else { return };
        each_filter_reads_its_own_index(&pg.store).await;
        pg.finish().await;
    }
}
