//! Rate limit quotas shared by every node: counted in PostgreSQL by `rehome_rate_take`
//! (see migrations/postgres/0001_schema.sql). A single SQLite node counts in memory instead.

use super::{Db, Store, StoreError};

/// One request taken from a shared quota, as the database's clock saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct RateTake {
    /// The request was admitted (and counted).
    pub allowed: bool,
    pub remaining: i64,
    /// Milliseconds until the whole quota is available again.
    pub reset_ms: i64,
    /// When refused, milliseconds until one more request would pass; else 0.
    pub retry_ms: i64,
}

impl Store {
    /// Takes one request from `bucket`'s quota of `limit` per `window_ms`, atomically across
    /// every node on the database. PostgreSQL only: on SQLite this is an error.
    pub async fn take_rate(&self, bucket: &str, limit: u32, window_ms: u64) -> Result<RateTake, StoreError> {
        let Db::Postgres { write: pool, .. } = &self.db else {
            return Err(unsupported());
        };
        Ok(sqlx::query_as("SELECT allowed, remaining, reset_ms, retry_ms FROM rehome_rate_take($1, $2, $3)")
            .bind(bucket)
            .bind(i64::from(limit))
            .bind(i64::try_from(window_ms).unwrap_or(i64::MAX))
            .fetch_one(pool)
            .await?)
    }

    /// Drops the counts of buckets idle for a whole window; returns how many slots went.
    /// PostgreSQL only: on SQLite this is an error.
    pub async fn sweep_rates(&self, window_ms: u64) -> Result<i64, StoreError> {
        let Db::Postgres { write: pool, .. } = &self.db else {
            return Err(unsupported());
        };
        Ok(sqlx::query_scalar("SELECT rehome_rate_sweep($1)")
            .bind(i64::try_from(window_ms).unwrap_or(i64::MAX))
            .fetch_one(pool)
            .await?)
    }
}

fn unsupported() -> StoreError {
    StoreError::Database(sqlx::Error::Configuration(
        "shared rate limits need PostgreSQL; a SQLite node counts in memory".into(),
    ))
}
