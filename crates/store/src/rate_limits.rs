//! Rate limit quotas shared by every node: counted in PostgreSQL by `rehome_rate_take`
//! (see migrations/postgres/0001_schema.sql). A single SQLite node counts in memory instead,
//! so these operations live on [`PgStore`], which only a PostgreSQL store hands out.

use sqlx::Postgres;

use super::pool::Pool;

use super::StoreError;

/// A handle on a PostgreSQL store for what only PostgreSQL does; from
/// [`Store::postgres`](super::Store::postgres).
#[derive(Clone, Debug)]
pub struct PgStore {
    pub(super) pool: Pool<Postgres>,
}

/// Requests taken from a shared quota, as the database's clock saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct RateTake {
    /// How many of the requests asked for were admitted (and counted): 0 when refused.
    pub granted: i64,
    pub remaining: i64,
    /// Milliseconds until the whole quota is available again.
    pub reset_ms: i64,
    /// When refused, milliseconds until one more request would pass; else 0.
    pub retry_ms: i64,
    /// The slot the granted requests were counted in: where unspent ones are given back.
    pub at_slot: i64,
}

impl RateTake {
    pub fn allowed(&self) -> bool {
        self.granted > 0
    }
}

impl PgStore {
    pub(super) fn new(pool: Pool<Postgres>) -> Self {
        Self { pool }
    }

    /// A handle whose every call fails at once, as when the database is down: for tests of
    /// what callers do without an answer.
    pub async fn unreachable() -> Self {
        let options = "postgres://rehome@127.0.0.1:1/unreachable".parse().expect("a valid URL");
        let pool = Pool::<Postgres>::lazy(options, 1, std::time::Duration::from_secs(1)).expect("a pool");
        pool.close().await;
        Self { pool }
    }

    /// Takes up to `want` requests (at least one) from `bucket`'s quota of `limit` per
    /// `window_ms`, atomically across every node on the database; a batch must be spent
    /// within 200 ms (see `rehome_rate_take`).
    pub async fn take_rate(&self, bucket: &str, limit: u32, window_ms: u64, want: u32) -> Result<RateTake, StoreError> {
        Ok(sqlx::query_as(
            "SELECT granted, remaining, reset_ms, retry_ms, at_slot FROM rehome_rate_take($1, $2, $3, $4)",
        )
        .bind(bucket)
        .bind(i64::from(limit))
        .bind(i64::try_from(window_ms).unwrap_or(i64::MAX))
        .bind(i64::from(want))
        .fetch_one(&self.pool)
        .await?)
    }

    /// Uncounts `count` requests taken in a batch counted in `at_slot` and never spent, so
    /// that other nodes may use them.
    pub async fn give_back_rate(&self, bucket: &str, at_slot: i64, count: u32) -> Result<(), StoreError> {
        sqlx::query("SELECT rehome_rate_give_back($1, $2, $3)")
            .bind(bucket)
            .bind(at_slot)
            .bind(i64::from(count))
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
