//! What operators watch and keep: the depth of the background queues, the pools' use, and
//! a consistent copy of a SQLite database taken while the server runs.

use std::path::Path;

use super::{on_pool, Db, SqliteStore, Store, StoreError, Ts};

/// Work waiting in the queues, read at once (the operating metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepths {
    /// Webhook events not yet delivered nor dead.
    pub webhooks: i64,
    /// When the oldest of them was emitted (or replayed), if any.
    pub oldest_webhook: Option<Ts>,
    /// Mail neither sent nor given up.
    pub mail: i64,
    pub thumbnails: i64,
    pub imports: i64,
}

/// Connections of the store's pools (both, on SQLite).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolUsage {
    pub idle: usize,
    pub in_use: usize,
}

impl Store {
    /// The queues' depths, in one statement over their partial indexes.
    pub async fn queue_depths(&self) -> Result<QueueDepths, StoreError> {
        let sql = "SELECT (SELECT COUNT(*) FROM webhook_events WHERE status = 'pending'),
                          (SELECT MIN(window_start) FROM webhook_events WHERE status = 'pending'),
                          (SELECT COUNT(*) FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL),
                          (SELECT COUNT(*) FROM photos WHERE thumb_status = 'pending'),
                          (SELECT COUNT(*) FROM listing_images WHERE status = 'pending')";
        on_pool!(self, read, |pool| {
            let (webhooks, oldest_webhook, mail, thumbnails, imports): (i64, Option<Ts>, i64, i64, i64) =
                sqlx::query_as(sql).fetch_one(pool).await?;
            Ok(QueueDepths { webhooks, oldest_webhook, mail, thumbnails, imports })
        })
    }

    /// Idle and lent connections over the store's pools.
    pub fn pool_usage(&self) -> PoolUsage {
        let pools = match &self.db {
            Db::Sqlite { read, write } => [read.usage(), write.usage()],
            // `read` and `write` are one pool.
            Db::Postgres { read, .. } => [read.usage(), (0, 0)],
        };
        pools.iter().fold(PoolUsage::default(), |sum, &(idle, in_use)| PoolUsage {
            idle: sum.idle + idle,
            in_use: sum.in_use + in_use,
        })
    }
}

impl SqliteStore {
    /// Writes a consistent copy of the database to the new file `to` with `VACUUM INTO`: one
    /// read transaction on a connection of the store, so writers go on meanwhile (WAL) and
    /// the copy is the database as of that transaction's start, whole and checked by SQLite.
    /// (PostgreSQL is copied by pg_dump.) The data key is not in the database: the copy needs
    /// the same key to open sealed values.
    pub async fn backup(&self, to: &Path) -> Result<(), StoreError> {
        let Some(to) = to.to_str() else {
            return Err(StoreError::Database(sqlx::Error::Configuration(
                "the backup's path must be valid UTF-8".into(),
            )));
        };
        sqlx::query("VACUUM INTO $1").bind(to).execute(self.reader()).await.map(drop).map_err(StoreError::from)
    }
}
