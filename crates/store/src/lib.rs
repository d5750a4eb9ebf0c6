//! The storage boundary. Handlers call these methods and never see SQL or a pool.
//!
//! SQL is written once with `$N` placeholders, which both SQLite and PostgreSQL bind by
//! number, and run on whichever backend the database URL selected (see [`on_pool!`]): the
//! body of a method is compiled once per backend, with that backend's pool. Where the two
//! dialects differ (JSON aggregation, row locks) a method picks its SQL with
//! [`Store::is_postgres`]. Values cross the boundary in types both backends encode natively:
//! `i64`, `bool`, text, bytes, `NaiveDate` and [`Ts`] for instants.

mod audit;
mod brand_orders;
mod brands;
mod bulk_drafts;
mod collections;
mod copy;
mod deployment;
mod idempotency;
mod invitations;
mod keys;
mod listings;
mod mail;
mod operating;
mod orders;
mod outage;
mod password_resets;
mod payment_holds;
mod payout_links;
mod payouts;
mod photos;
pub(crate) mod pool;
mod queue;
mod rate_limits;
mod recovery;
mod redemptions;
mod retention;
mod sealer;
mod sessions;
mod settings;
mod sign_in;
mod team;
mod users;
mod wallet;
mod warehouses;
mod webhooks;

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{PgConnection, Postgres, Sqlite, SqliteConnection};

use pool::Pool;

pub(crate) use audit::commit_audited;
pub use audit::record_audit;

pub use brands::BrandInsert;
pub use bulk_drafts::{DraftInsert, NewBulkDraft};
pub use collections::{BuyerNotice, CollectionChange, CollectionInsert, CollectionNews, NewCollection};
pub use copy::{copy_sqlite_to_postgres, CopiedTable};
pub use idempotency::MAX_BATCH as MAX_IDEMPOTENCY_BATCH;
pub use invitations::{InvitationChange, Resend as InvitationResend};
pub use keys::{KeySecret, NewKeyRecord, RollOutcome};
pub use listings::{ImageSlot, ImageSource, ListingEdit, ListingUpdate, NewListing};
pub use mail::{enqueue_mail, ClaimedMail, MailBody, MailOutcome, MailRecord, NewMail};
pub use operating::{PoolUsage, QueueDepths};
pub use orders::StockRefusal;
pub use orders::{BuyerInsert, BuyerOrder, OrderCompletion, OrderPlacement, OwnedMail};
pub use outage::{outage, Outage};
pub use password_resets::{NewReset, ResetIssue, ResetTarget};
pub use payment_holds::{HoldInsert, HoldSettlement};
pub use payout_links::PayoutLinkRecord;
pub use photos::{ClaimedImport, ClaimedThumbnail, NewPhoto, THUMBNAIL_ATTEMPTS};
pub use rate_limits::{PgStore, RateTake};
pub use redemptions::{CodeSpend, NewRedemption, RedemptionCursor, RedemptionInsert};

pub(crate) use rehome_domain::limits::LIST_COUNT_CAP;
pub(crate) use rehome_domain::time::Ts;
pub use retention::Batch as PrunedBatch;
pub use sealer::{default_key_path, SealError, Sealer, Undecryptable, DEFAULT_KEY_FILE, KEY_LEN, NONCE_LEN};
pub use sessions::{CodeCompletion, CodeProof, NewSession, OwnSession, SessionRecord};
pub use sign_in::{Acceptance, AccountRecord, AttemptKeys, Reservation, TotpRecord};
pub use team::{MemberRemoval, RemovalOutcome, RoleUpdate};
pub use users::{MemberInsert, NewMember, UserInsert, UserRecord};
pub use wallet::{Balances, MonthSales, NewLedgerEntry, StatementMail, StatementRender};
pub use warehouses::WarehouseWriteError;
pub use webhooks::{
    insert_event, AttemptResult, ClaimedEvent, DueDelivery, DueKey, DueWindow, EndpointChange, EndpointInsert,
};

/// Failures of the storage layer. Business outcomes (a taken slug, a listing not on sale, an
/// order already completed) are not errors here: each store method that can meet one
/// answers with a typed result of its own, which the use case must match.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// An event was to be written by a store opened without the data key, or sealing failed.
    #[error("cannot encrypt an event body: {0}")]
    Sealing(String),
}

#[derive(Clone, Debug)]
enum Db {
    /// Reads go to a pool of connections; writes to a single connection, so SQLite's one
    /// writer is queued in-process instead of failing with SQLITE_BUSY on lock upgrades.
    Sqlite { read: Pool<Sqlite>, write: Pool<Sqlite> },
    /// One pool (`read` and `write` are clones of it): PostgreSQL takes concurrent writers,
    /// and every invariant is kept by constraints, conditional updates and row locks.
    Postgres { read: Pool<Postgres>, write: Pool<Postgres> },
}

/// Runs `$body` with `$pool` bound to the chosen pool (`read` or `write`) of whichever
/// backend is configured. The body is compiled once per backend.
macro_rules! on_pool {
    ($store:expr, $which:ident, |$pool:ident| $body:expr) => {
        match &$store.db {
            $crate::Db::Sqlite { $which: $pool, .. } => $body,
            $crate::Db::Postgres { $which: $pool, .. } => $body,
        }
    };
}
pub(crate) use on_pool;

/// A connection (or transaction) of either backend, for helpers that run inside a
/// caller's transaction: pass `(&mut *tx).into()`.
pub enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

impl Conn<'_> {
    /// The same connection for one more helper, this one kept for the next.
    pub fn reborrow(&mut self) -> Conn<'_> {
        match self {
            Conn::Sqlite(c) => Conn::Sqlite(c),
            Conn::Postgres(c) => Conn::Postgres(c),
        }
    }
}

impl<'c> From<&'c mut SqliteConnection> for Conn<'c> {
    fn from(conn: &'c mut SqliteConnection) -> Self {
        Self::Sqlite(conn)
    }
}

impl<'c> From<&'c mut PgConnection> for Conn<'c> {
    fn from(conn: &'c mut PgConnection) -> Self {
        Self::Postgres(conn)
    }
}

/// Runs `$body` with `$conn` bound to the backend connection inside a [`Conn`].
macro_rules! on_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::Conn::Sqlite($c) => $body,
            $crate::Conn::Postgres($c) => $body,
        }
    };
}
pub(crate) use on_conn;

/// What differs between the backends, picked for a store with [`Dialect::pick`]: SQL text
/// written out (`&'static str`, [`Dialect::of`]) or built once from other pieces
/// (`String`), or a setting (how many brands a transaction takes). The one way to say
/// "which database" above the store, which cannot ask the store which it is.
pub struct Dialect<T = &'static str> {
    pub sqlite: T,
    pub postgres: T,
}

impl<T> Dialect<T> {
    /// The text `store` runs.
    pub fn pick(&self, store: &Store) -> &T {
        if store.is_postgres() {
            &self.postgres
        } else {
            &self.sqlite
        }
    }

    /// Both texts made into others alike.
    pub fn map<U>(&self, f: impl Fn(&T) -> U) -> Dialect<U> {
        Dialect { sqlite: f(&self.sqlite), postgres: f(&self.postgres) }
    }
}

impl Dialect {
    pub fn of(&self, store: &Store) -> &'static str {
        self.pick(store)
    }
}

/// Held until commit: serialises one brand's changes of a kind (its team, its settings,
/// its keys, its drafts) across nodes. On SQLite the one writer serialises them already.
pub(crate) const BRAND_LOCK: Dialect =
    Dialect { sqlite: "SELECT $1", postgres: "SELECT id FROM brands WHERE id = $1 FOR UPDATE" };

/// The first statement of a read transaction that must see one snapshot (a page and its
/// count): PostgreSQL's default (read committed) takes one per statement; a SQLite
/// transaction reads one snapshot from its first read on.
pub(crate) const READ_SNAPSHOT: Dialect =
    Dialect { sqlite: "SELECT 1", postgres: "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ" };

/// `INDEXED BY index` for a table of a statement the worker runs all the time, on SQLite;
/// nothing on PostgreSQL, whose planner has statistics. SQLite plans without any (nothing
/// runs `ANALYZE`), and among the partial indexes of the pending events it may take one
/// that reads or sorts every pending event: a million under a backlog.
pub(crate) fn indexed_by(index: &str) -> Dialect<String> {
    Dialect { sqlite: format!("INDEXED BY {index}"), postgres: String::new() }
}

/// `NOT INDEXED` on SQLite (rows found by their rowid only), for a statement that names its
/// rows by key and also filters on a column an index leads with: without statistics SQLite
/// may scan that index instead of looking the few rows up (a claim of 16 events by `seq`
/// once read the 700,000 entries of `status = 'pending'`, 60 ms each time).
pub(crate) const BY_ROWID: Dialect = Dialect { sqlite: "NOT INDEXED", postgres: "" };

/// The row-lock clause a queue's claim ends its `SELECT` with: on PostgreSQL the rows (of
/// the table aliased `of`) are locked and rows another node has locked are skipped, so
/// concurrent claims never wait on or take the same row. SQLite has one writer, so no clause
/// is needed (nor understood).
pub(crate) fn skip_locked(of: &str) -> Dialect<String> {
    Dialect { sqlite: String::new(), postgres: format!("FOR UPDATE OF {of} SKIP LOCKED") }
}

/// True for a `postgres://` or `postgresql://` URL.
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
    /// Seals event bodies at rest; `None` for a store that never writes events (the admin
    /// commands of the CLI).
    sealer: Option<Sealer>,
    /// How a listing reads in a listing event (decisions 15.3): the API's summary, handed to
    /// the store by the server at start (`set_listing_view`); without it no listing event
    /// is written.
    listing_view: listings::events::ViewSlot,
}

impl Store {
    /// Opens the database named by `url` with the data key of its default key file (beside
    /// the database, created if missing): what `rehome serve` does when neither
    /// `REHOME_DATA_KEY` nor `REHOME_DATA_KEY_FILE` is set.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let sealer = Sealer::load(None, None, url)?;
        Self::open(url, Some(sealer)).await
    }

    /// Opens the database named by `url` (SQLite by default, PostgreSQL for a
    /// `postgres://` URL; a SQLite file is created if needed) and runs pending migrations.
    /// With a `sealer`, event bodies still stored in clear (written before migration 0008)
    /// are sealed now; without one, writing an event fails.
    pub async fn open(url: &str, sealer: Option<Sealer>) -> anyhow::Result<Self> {
        let db = if is_postgres_url(url) {
            let pool = open_postgres(url).await?;
            Db::Postgres { read: pool.clone(), write: pool }
        } else {
            let (read, write) = open_sqlite(url).await?;
            Db::Sqlite { read, write }
        };
        Self::ready(db, sealer).await
    }

    /// The store over `db`, its catalogue seeded and its clear event bodies sealed.
    async fn ready(db: Db, sealer: Option<Sealer>) -> anyhow::Result<Self> {
        let store = Self { db, sealer, listing_view: Default::default() };
        store.seed_manufacturer_brands().await?;
        store.seal_clear_events().await.context("sealing stored event bodies")?;
        Ok(store)
    }

    /// True when the database is PostgreSQL (several nodes may share it). Inside the store
    /// only: above it a difference is a [`Dialect`].
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self.db, Db::Postgres { .. })
    }

    /// How many writing transactions one task may usefully hold at once: one on SQLite (one
    /// writer at a time), on PostgreSQL up to 4 and at most half the pool, so the node's
    /// other work still finds connections.
    pub fn write_concurrency(&self) -> usize {
        match &self.db {
            Db::Sqlite { .. } => 1,
            Db::Postgres { write, .. } => (write.max_size() / 2).clamp(1, 4),
        }
    }

    /// The operations only PostgreSQL has (shared rate limits), or `None` on SQLite: what
    /// needs them cannot be built over a SQLite store.
    pub fn postgres(&self) -> Option<PgStore> {
        match &self.db {
            Db::Postgres { write, .. } => Some(PgStore::new(write.clone())),
            Db::Sqlite { .. } => None,
        }
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
        on_pool!(self, read, |pool| pool.close().await);
        on_pool!(self, write, |pool| pool.close().await);
    }
}

/// A store opened on SQLite, known to be from its opening: what applies to SQLite alone
/// (the source of a copy, a backup) takes one and never asks the backend again.
pub struct SqliteStore {
    store: Store,
    read: Pool<Sqlite>,
}

impl SqliteStore {
    /// Opens `url`, which must name a SQLite database.
    pub async fn open(url: &str, sealer: Option<Sealer>) -> anyhow::Result<Self> {
        if is_postgres_url(url) {
            anyhow::bail!("{url} is a PostgreSQL URL, not a SQLite database");
        }
        let (read, write) = open_sqlite(url).await?;
        let store = Store::ready(Db::Sqlite { read: read.clone(), write }, sealer).await?;
        Ok(Self { store, read })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The pool of read connections (WAL: they read while the writer writes).
    pub(crate) fn reader(&self) -> &Pool<Sqlite> {
        &self.read
    }

    pub async fn close(&self) {
        self.store.close().await;
    }
}

/// A store opened on PostgreSQL, known to be from its opening.
pub struct PostgresStore {
    store: Store,
    pool: Pool<Postgres>,
}

impl PostgresStore {
    /// Opens `url`, which must be a PostgreSQL URL (`postgres://…`).
    pub async fn open(url: &str, sealer: Option<Sealer>) -> anyhow::Result<Self> {
        if !is_postgres_url(url) {
            anyhow::bail!("{url} is not a PostgreSQL URL (postgres://…)");
        }
        let pool = open_postgres(url).await?;
        let store = Store::ready(Db::Postgres { read: pool.clone(), write: pool.clone() }, sealer).await?;
        Ok(Self { store, pool })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn pool(&self) -> &Pool<Postgres> {
        &self.pool
    }

    pub async fn close(&self) {
        self.store.close().await;
    }
}

/// The read and write pools of a SQLite database, migrated.
async fn open_sqlite(url: &str) -> anyhow::Result<(Pool<Sqlite>, Pool<Sqlite>)> {
    let url = normalise_sqlite_url(url);
    let options = SqliteConnectOptions::from_str(&url)
        .with_context(|| format!("invalid database URL {url}"))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true)
        .pragma("soft_heap_limit", SQLITE_MEMORY.load(Ordering::Relaxed).to_string());
    migrate_sqlite(&options).await.with_context(|| format!("cannot migrate database {url}"))?;
    let write = Pool::<Sqlite>::connect(options.clone(), 1, SQLITE_WAIT)
        .await
        .with_context(|| format!("cannot open database {url}"))?
        .beginning_with("BEGIN IMMEDIATE");
    let read = Pool::<Sqlite>::connect(options.read_only(true), sqlite_readers(), SQLITE_WAIT)
        .await
        .with_context(|| format!("cannot open database {url}"))?;
    Ok((read, write))
}

/// Runs the pending migrations on a connection of their own with foreign keys off, then,
/// if any ran, checks every reference. A migration that rebuilds a table SQLite cannot alter
/// in place (0021 `users`) must drop the old table while other tables still refer to it,
/// which SQLite allows only with foreign keys off ("Making Other Kinds Of Table Schema
/// Changes", step 1), and sqlx runs each migration inside a transaction, where the pragma
/// cannot change. The check reads every row that refers to another (about 5 s at a million
/// listings, issue 34), so a start with nothing to migrate, where every write since the last
/// check ran with foreign keys on, does not pay it.
async fn migrate_sqlite(options: &SqliteConnectOptions) -> anyhow::Result<()> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = options.clone().foreign_keys(false).connect().await.context("cannot open it")?;
    let before = applied_migrations(&mut conn).await?;
    sqlx::migrate!("../../migrations/sqlite").run(&mut conn).await.context("running migrations")?;
    if applied_migrations(&mut conn).await? == before {
        conn.close().await.ok();
        return Ok(());
    }
    let broken: Vec<(String, Option<i64>)> =
        sqlx::query_as("SELECT \"table\", rowid FROM pragma_foreign_key_check").fetch_all(&mut conn).await?;
    conn.close().await.ok();
    if let Some((table, row)) = broken.first() {
        let row = row.map_or_else(|| "?".to_owned(), |r| r.to_string());
        anyhow::bail!(
            "after migrating, {} rows refer to rows that do not exist (first: {table} row {row})",
            broken.len()
        );
    }
    Ok(())
}

/// How many migrations the SQLite database records as applied (none before the first).
async fn applied_migrations(conn: &mut sqlx::SqliteConnection) -> anyhow::Result<i64> {
    let table: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
            .fetch_one(&mut *conn)
            .await?;
    if table == 0 {
        return Ok(0);
    }
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations").fetch_one(&mut *conn).await?)
}

/// The placeholders of a multi-row statement: `rows` groups of `columns` parameters,
/// numbered `$1`… row by row, each group written by `each`, joined by commas.
pub(crate) fn placeholders(rows: usize, columns: usize, each: impl Fn(&[String]) -> String) -> String {
    (0..rows)
        .map(|r| {
            let params: Vec<String> = (1..=columns).map(|c| format!("${}", r * columns + c)).collect();
            each(&params)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Read connections on SQLite: two per core. In WAL mode readers run side by side, one per
/// core at a time, and each connection is a thread of its own: more of them than that only
/// compete with the server's workers for the cores. On 2 cores, 8 connections gave a detail
/// read's p99 of 5.3–6.4 ms at 64 clients and 4 gave 3.7–4.1 ms at the same rate (issue 19).
/// Statements hold a read connection only while they run, so fewer never starve a caller.
fn sqlite_readers() -> usize {
    std::thread::available_parallelism().map_or(4, |cores| cores.get() * 2).clamp(2, 32)
}

/// The most memory SQLite keeps, all connections together, before it recycles page-cache
/// pages (`PRAGMA soft_heap_limit`, process-wide): the default of `REHOME_SQLITE_MEMORY_MIB`.
/// The bundled SQLite is built with `SQLITE_ENABLE_MEMORY_MANAGEMENT`, so every connection's
/// page cache, and each one's temporary database's, draws on one pool whose size is the sum
/// of their `cache_size`s (2 MB each): under the read load at a million listings it held
/// about 30 MB, a third of the node's memory (issue 34, `docs/performance.md`, "Memory under
/// the read load on SQLite"). It is a soft limit: a statement that needs more gets it, and
/// gives it back when it ends. The price is more page reads from the OS's cache for searches
/// whose index pages no longer stay cached (measured there).
pub const DEFAULT_SQLITE_MEMORY_MIB: u64 = 8;

/// The limit in bytes (0: none) that SQLite connections opened from now on set.
static SQLITE_MEMORY: AtomicU64 = AtomicU64::new(DEFAULT_SQLITE_MEMORY_MIB << 20);

/// Sets how much memory, in MiB, SQLite keeps for all this process's connections (0: no
/// limit), for the connections opened after it ([`DEFAULT_SQLITE_MEMORY_MIB`] until then).
/// Process-wide, as SQLite's own limit is.
pub fn limit_sqlite_memory(mib: u64) {
    SQLITE_MEMORY.store(mib.saturating_mul(1 << 20), Ordering::Relaxed);
}

/// How long a SQLite caller waits for a connection (sqlx's default).
const SQLITE_WAIT: Duration = Duration::from_secs(30);

/// How long a PostgreSQL caller waits for a connection, or for one to open.
const POSTGRES_WAIT: Duration = Duration::from_secs(10);

/// Connections per node: `max_connections` in the URL's query, else 10. Every node holds
/// up to this many, so nodes × pool size must stay below the server's `max_connections`.
const DEFAULT_PG_POOL: usize = 10;

/// The pool of a PostgreSQL database, migrated.
async fn open_postgres(url: &str) -> anyhow::Result<Pool<Postgres>> {
    let (url, pool_size) = split_pool_size(url)?;
    // JIT compilation pays off for long analytical queries, never for these short ones: on
    // a table not yet analysed its cost estimate can trigger half a second of compiling for
    // a query that runs in a millisecond.
    let options = PgConnectOptions::from_str(&url).context("invalid PostgreSQL URL")?.options([("jit", "off")]);
    let pool =
        Pool::<Postgres>::connect(options, pool_size, POSTGRES_WAIT).await.context("cannot connect to PostgreSQL")?;
    // Several nodes may start at once: sqlx takes an advisory lock around migrations, so
    // one migrates and the others wait and find nothing left to do.
    let mut conn = pool.acquire().await?;
    sqlx::migrate!("../../migrations/postgres").run(&mut *conn).await.context("running migrations")?;
    conn.settle();
    drop(conn);
    Ok(pool)
}

/// Takes `max_connections=N` out of a PostgreSQL URL's query (sqlx does not know it).
fn split_pool_size(url: &str) -> anyhow::Result<(String, usize)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), DEFAULT_PG_POOL));
    };
    let mut size = DEFAULT_PG_POOL;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("max_connections=") {
            Some(n) => {
                size = n.parse().ok().filter(|n| *n > 0).context("max_connections must be a positive integer")?
            }
            None => kept.push(pair),
        }
    }
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    Ok((url, size))
}

/// Accepts `sqlite://path`, `sqlite:path` or a bare file path.
fn normalise_sqlite_url(url: &str) -> String {
    if url.starts_with("sqlite:") {
        url.to_owned()
    } else {
        format!("sqlite://{url}")
    }
}

/// The current time, as stored.
pub(crate) fn now() -> Ts {
    Ts::now()
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_size_comes_out_of_the_url() {
        let (url, size) = split_pool_size("postgres://u@h/db?max_connections=25&sslmode=disable").unwrap();
        assert_eq!((url.as_str(), size), ("postgres://u@h/db?sslmode=disable", 25));
        let (url, size) = split_pool_size("postgres://u@h/db").unwrap();
        assert_eq!((url.as_str(), size), ("postgres://u@h/db", DEFAULT_PG_POOL));
        assert!(split_pool_size("postgres://u@h/db?max_connections=0").is_err());
    }

    /// Every connection, read and write, carries the limit (it is process-wide, so the
    /// last one set wins: they all set the same).
    #[tokio::test]
    async fn sqlite_keeps_its_memory_under_the_limit_on_every_connection() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("h.db").display());
        let (read, write) = open_sqlite(&url).await.unwrap();
        for pool in [&read, &write] {
            let mut conn = pool.acquire().await.unwrap();
            let limit: i64 = sqlx::query_scalar("PRAGMA soft_heap_limit").fetch_one(&mut *conn).await.unwrap();
            assert_eq!(limit, (DEFAULT_SQLITE_MEMORY_MIB << 20) as i64);
        }
    }

    /// The reference check runs after a start that migrated, not at every start: a start
    /// with nothing to migrate opens a database without reading every row that refers to
    /// another, even one with a reference broken behind the server's back.
    #[tokio::test]
    async fn a_start_with_nothing_to_migrate_does_not_check_every_reference() {
        use sqlx::{ConnectOptions, Connection};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let (read, write) = open_sqlite(&url).await.expect("migrated and checked");
        let applied = applied_migrations(&mut write.acquire().await.unwrap()).await.unwrap();
        assert_eq!(applied, sqlx::migrate!("../../migrations/sqlite").iter().count() as i64);
        drop((read, write));
        let options = SqliteConnectOptions::from_str(&normalise_sqlite_url(&url)).unwrap().foreign_keys(false);
        let mut conn = options.connect().await.unwrap();
        sqlx::query(
            "INSERT INTO listing_images (listing_id, position, source_url, status, created_at, updated_at)
             VALUES (999, 0, 'https://img.example/a.jpg', 'pending', '2026-11-27T00:00:00Z', '2026-11-27T00:00:00Z')",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
        open_sqlite(&url).await.expect("nothing to migrate: opened without the check");
    }

    #[test]
    fn backend_from_scheme() {
        assert!(is_postgres_url("postgres://h/db") && is_postgres_url("postgresql://h/db"));
        assert!(!is_postgres_url("sqlite://rehome.db") && !is_postgres_url("rehome.db"));
    }

    /// A typed store is the backend its name says, or is not opened at all (before touching
    /// any database).
    #[tokio::test]
    async fn typed_stores_open_only_their_backend() {
        let refused = PostgresStore::open("sqlite::memory:", None).await.err().map(|e| e.to_string());
        assert_eq!(refused.as_deref(), Some("sqlite::memory: is not a PostgreSQL URL (postgres://…)"));
        let refused = SqliteStore::open("postgres://nobody@127.0.0.1:1/none", None).await.err().map(|e| e.to_string());
        assert_eq!(
            refused.as_deref(),
            Some("postgres://nobody@127.0.0.1:1/none is a PostgreSQL URL, not a SQLite database")
        );
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("typed.db").display());
        let sqlite = SqliteStore::open(&url, None).await.map_err(|e| format!("{e:#}"));
        assert!(sqlite.as_ref().is_ok_and(|s| !s.store().is_postgres()), "{:?}", sqlite.as_ref().err());
        if let Ok(store) = sqlite {
            store.close().await;
        }
    }
}
