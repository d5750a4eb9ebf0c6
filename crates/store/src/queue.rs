//! Tables whose rows are work leased to one worker at a time: the thumbnails of `photos`,
//! the image imports of `listing_images` and the `mail_outbox` (the webhook outbox claims
//! per endpoint, in `store::webhooks`, but is released here too).
//!
//! A worker claims due rows with a lease (`lease_owner` and a lease column), records the
//! outcome only while it still holds the lease, and a row whose worker died becomes
//! claimable again when the lease runs out. Every claim counts an attempt; where a queue
//! caps its attempts, a row that used them all without an outcome (a worker that keeps
//! dying on it) is failed instead of being claimed forever. On PostgreSQL the rows are
//! locked as they are taken, skipping those another node is taking; SQLite has a single
//! writer.

use chrono::{DateTime, Utc};

use crate::skip_locked;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{Encode, FromRow, Postgres, Sqlite, Type};

use super::{now, on_conn, on_pool, Conn, Store, StoreError, Ts};
use rehome_domain::listing::ImageStatus;

const PENDING: &str = ImageStatus::Pending.as_str();
const FAILED: &str = ImageStatus::Failed.as_str();

/// Where a queue's rows are and how a claim finds the due ones. In `from`, `pending` and
/// `order` the queue's table is `q`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeasedQueue {
    pub table: &'static str,
    /// The table as `q`, with what `pending` reads joined to it.
    pub from: &'static str,
    /// When a row waits for an outcome.
    pub pending: &'static str,
    /// Whether every row has a `next_attempt_at` (the claim then reads it as its index
    /// does); otherwise a row without one is due at once.
    pub always_scheduled: bool,
    /// The column that holds the end of the lease.
    pub lease: &'static str,
    /// Whether the rows have an `updated_at` that every change sets.
    pub touched: bool,
    pub order: &'static str,
    /// The columns a claim answers.
    pub returning: &'static str,
}

/// The status and error columns of a queue whose outcome is a status (`pending`, `done`,
/// `failed`), as [`Store::fail_leased`] and [`Store::give_up_leased`] write them, and
/// what a row given up on says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcomes {
    pub status: &'static str,
    pub error: &'static str,
    /// The error column's value on a row given up on (SQL).
    pub gave_up: &'static str,
}

/// A lease on one named piece of work (a row per key), so that one node at a time runs it:
/// the periodic jobs' `job_leases`, the months of `remittance_runs`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NamedLease {
    pub table: &'static str,
    /// The key column.
    pub key: &'static str,
    /// Further columns a first claim writes, and their values (`$4` is `now`).
    pub also_insert: (&'static str, &'static str),
    /// When an existing row may be taken (the table's columns qualified; `$4` is `now`).
    pub free: &'static str,
}

/// A value both backends bind.
pub(crate) trait Bound:
    for<'q> Encode<'q, Sqlite> + Type<Sqlite> + for<'q> Encode<'q, Postgres> + Type<Postgres> + Send
{
}
impl<T> Bound for T where
    T: for<'q> Encode<'q, Sqlite> + Type<Sqlite> + for<'q> Encode<'q, Postgres> + Type<Postgres> + Send
{
}

/// A claim's result row on both backends.
pub(crate) trait ClaimRow: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin {}
impl<T> ClaimRow for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin {}

impl LeasedQueue {
    fn touch(&self, param: &str) -> String {
        if self.touched {
            format!(", updated_at = {param}")
        } else {
            String::new()
        }
    }
}

impl Store {
    /// Takes the lease of up to `limit` due rows of `queue` (in its order) for `owner` until
    /// `lease_until`, counting an attempt on each, on `conn` (a caller's transaction).
    pub(crate) async fn claim_leased<T: ClaimRow>(
        &self,
        conn: Conn<'_>,
        queue: &LeasedQueue,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<T>, StoreError> {
        let LeasedQueue { table, from, pending, lease, order, returning, .. } = queue;
        let sql = format!(
            "UPDATE {table} SET lease_owner = $1, {lease} = $2, attempts = attempts + 1{touch}
             WHERE id IN (SELECT q.id FROM {from}
                          WHERE {pending} AND {due} AND (q.{lease} IS NULL OR q.{lease} <= $3)
                          ORDER BY {order} LIMIT $4 {lock})
             RETURNING {returning}",
            touch = queue.touch("$3"),
            due = if queue.always_scheduled {
                "q.next_attempt_at <= $3"
            } else {
                "(q.next_attempt_at IS NULL OR q.next_attempt_at <= $3)"
            },
            lock = skip_locked("q").pick(self),
        );
        on_conn!(conn, |c| {
            Ok(sqlx::query_as::<_, T>(&sql)
                .bind(owner)
                .bind(Ts::from(lease_until))
                .bind(Ts::from(now))
                .bind(limit)
                .fetch_all(&mut *c)
                .await?)
        })
    }

    /// Fails the rows of `queue` that used `max_attempts` claims without an outcome and whose
    /// lease ran out, on `conn`; answers `returning` of each (unqualified: SQLite's
    /// `RETURNING` does not see the table's alias).
    pub(crate) async fn give_up_leased<T: ClaimRow>(
        &self,
        conn: Conn<'_>,
        (queue, outcomes): (&LeasedQueue, &Outcomes),
        now: DateTime<Utc>,
        max_attempts: i64,
        returning: &str,
    ) -> Result<Vec<T>, StoreError> {
        let LeasedQueue { table, pending, lease, .. } = queue;
        let Outcomes { status, error, gave_up } = outcomes;
        // `pending` reads `q`: the table is named so here too.
        let sql = format!(
            "UPDATE {table} AS q SET {status} = '{FAILED}', {error} = {gave_up},
                 lease_owner = NULL, {lease} = NULL{touch}
             WHERE {pending} AND q.attempts >= $2 AND (q.{lease} IS NULL OR q.{lease} <= $1)
             RETURNING {returning}",
            touch = queue.touch("$1"),
        );
        on_conn!(conn, |c| {
            Ok(sqlx::query_as::<_, T>(&sql).bind(Ts::from(now)).bind(max_attempts).fetch_all(&mut *c).await?)
        })
    }

    /// Records a failed attempt on a row of `queue`, if `owner` still holds its lease: back
    /// to pending until `retry_at`, or failed for good when `None`.
    pub(crate) async fn fail_leased(
        &self,
        (queue, outcomes): (&LeasedQueue, &Outcomes),
        owner: &str,
        id: i64,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        let Outcomes { status, error: error_column, .. } = outcomes;
        let (table, lease) = (queue.table, queue.lease);
        let sql = format!(
            "UPDATE {table} SET {status} = CASE WHEN $1 IS NULL THEN '{FAILED}' ELSE '{PENDING}' END,
                 next_attempt_at = $1, {error_column} = $2, lease_owner = NULL, {lease} = NULL{touch}
             WHERE id = $4 AND lease_owner = $5",
            touch = queue.touch("$3"),
        );
        on_pool!(self, write, |pool| {
            sqlx::query(&sql)
                .bind(retry_at.map(Ts::from))
                .bind(error)
                .bind(now())
                .bind(id)
                .bind(owner)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Takes `lease` of `key` for `owner` until `lease_until`, when no row of it exists yet or
    /// its row is free at `now`. Answers whether `owner` now holds it.
    pub(crate) async fn take_lease<K: Bound>(
        &self,
        lease: &NamedLease,
        key: K,
        owner: &str,
        now: Ts,
        lease_until: Ts,
    ) -> Result<bool, StoreError> {
        let NamedLease { table, key: column, also_insert: (columns, values), free } = lease;
        let sql = format!(
            "INSERT INTO {table} ({column}, lease_owner, leased_until{columns}) VALUES ($1, $2, $3{values})
             ON CONFLICT ({column}) DO UPDATE SET lease_owner = excluded.lease_owner,
                 leased_until = excluded.leased_until
             WHERE {free}
             RETURNING 1"
        );
        on_pool!(self, write, |pool| {
            let taken: Option<i32> =
                sqlx::query_scalar(&sql).bind(key).bind(owner).bind(lease_until).bind(now).fetch_optional(pool).await?;
            Ok(taken.is_some())
        })
    }

    /// Gives up the leases `owner` holds on `table` (whose lease column is `lease`): a worker
    /// stopping, so another node or the next start takes the work at once.
    pub(crate) async fn release_leases(&self, table: &str, lease: &str, owner: &str) -> Result<u64, StoreError> {
        let sql = format!("UPDATE {table} SET lease_owner = NULL, {lease} = NULL WHERE lease_owner = $1");
        on_pool!(self, write, |pool| Ok(sqlx::query(&sql).bind(owner).execute(pool).await?.rows_affected()))
    }
}
