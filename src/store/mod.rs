//! The storage boundary. Handlers call these methods and never see SQL or a pool.
//!
//! SQL is written once with `$N` placeholders, which both SQLite and PostgreSQL bind by
//! number, and run on whichever backend the database URL selected (see [`on_pool!`]).

mod brands;
mod collections;
mod keys;
mod listings;
mod orders;
mod payouts;
mod photos;
mod redemptions;
mod sealer;
mod settings;
mod users;
mod warehouses;
mod webhooks;

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

pub use brands::BrandRecord;
pub use collections::{CollectionFilter, CollectionRow, NewCollection};
pub use keys::{KeyOwner, NewKeyRecord};
pub use listings::{
    ImageSource, ListingFilter, ListingImage, ListingPage, ListingRecord, ListingSummaryRecord, ListingUpdate,
    NewListing, Removal, SavedListing,
};
pub use orders::OrderRecord;
pub use photos::{ClaimedImport, ClaimedThumbnail, NewPhoto, PhotoRecord, THUMBNAIL_ATTEMPTS};
pub use redemptions::{NewRedemption, RedemptionCursor, RedemptionRecord};
pub use sealer::{default_key_path, SealError, Sealer, Undecryptable, DEFAULT_KEY_FILE, KEY_LEN, NONCE_LEN};
pub use users::UserRecord;
pub use webhooks::{
    insert_event, AttemptRecord, AttemptResult, ClaimedEvent, DeliveryRecord, DueDelivery, WebhookEndpointRecord,
};

/// Errors the storage layer reports in the language of the domain.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("already exists: {0}")]
    Conflict(&'static str),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// An event was to be written by a store opened without the data key, or sealing failed.
    #[error("cannot encrypt an event body: {0}")]
    Sealing(String),
}

impl From<StoreError> for crate::error::ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Database(e) => e.into(),
            other => crate::error::ApiError::Internal(other.into()),
        }
    }
}

/// Maps a unique-constraint violation to [`StoreError::Conflict`].
fn on_unique(e: sqlx::Error, what: &'static str) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict(what),
        _ => StoreError::Database(e),
    }
}

#[derive(Clone, Debug)]
enum Db {
    /// Reads go to a pool of connections; writes to a single connection, so SQLite's one
    /// writer is queued in-process instead of failing with SQLITE_BUSY on lock upgrades.
    Sqlite { read: SqlitePool, write: SqlitePool },
}

/// Runs `$body` with `$pool` bound to the chosen pool (`read` or `write`) of whichever
/// backend is configured. A second backend is one more arm here.
macro_rules! on_pool {
    ($store:expr, $which:ident, |$pool:ident| $body:expr) => {
        match &$store.db {
            $crate::store::Db::Sqlite { $which: $pool, .. } => $body,
        }
    };
}
pub(crate) use on_pool;

#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
    /// Seals event bodies at rest; `None` for a store that never writes events (the admin
    /// commands of the CLI).
    sealer: Option<Sealer>,
}

impl Store {
    /// Opens the database named by `url` with the data key of its default key file (beside
    /// the database, created if missing): what `rehome serve` does when neither
    /// `REHOME_DATA_KEY` nor `REHOME_DATA_KEY_FILE` is set.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let sealer = Sealer::load(None, None, url)?;
        Self::open(url, Some(sealer)).await
    }

    /// Opens (creating if needed) the database named by `url` and runs pending migrations.
    /// With a `sealer`, event bodies still stored in clear (written before migration 0008)
    /// are sealed now; without one, writing an event fails.
    pub async fn open(url: &str, sealer: Option<Sealer>) -> anyhow::Result<Self> {
        let url = normalise_sqlite_url(url);
        let options = SqliteConnectOptions::from_str(&url)
            .with_context(|| format!("invalid database URL {url}"))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .with_context(|| format!("cannot open database {url}"))?;
        sqlx::migrate!("./migrations/sqlite").run(&write).await.context("running migrations")?;
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options.read_only(true))
            .await
            .with_context(|| format!("cannot open database {url}"))?;
        let store = Self { db: Db::Sqlite { read, write }, sealer };
        store.seed_manufacturer_brands().await?;
        store.seal_clear_events().await.context("sealing stored event bodies")?;
        Ok(store)
    }

    /// The data key's sealer; an error for a store opened without one.
    pub fn sealer(&self) -> Result<&Sealer, StoreError> {
        self.sealer.as_ref().ok_or_else(|| StoreError::Sealing("the store was opened without the data key".into()))
    }

    /// True when the database answers a trivial query.
    pub async fn ping(&self) -> bool {
        on_pool!(self, read, |pool| sqlx::query("SELECT 1").execute(pool).await.is_ok())
    }

    pub async fn close(&self) {
        match &self.db {
            Db::Sqlite { read, write } => {
                read.close().await;
                write.close().await;
            }
        }
    }
}

/// Accepts `sqlite://path`, `sqlite:path` or a bare file path.
fn normalise_sqlite_url(url: &str) -> String {
    if url.starts_with("sqlite:") {
        url.to_owned()
    } else {
        format!("sqlite://{url}")
    }
}

/// RFC 3339 UTC with a fixed six-digit fraction, so that text order is time order (the
/// listings' timestamps, which lists sort by).
pub(crate) fn now_text() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}
