//! The connection pool of either backend: sqlx connections, held by deadpool.
//!
//! sqlx's own pool checks every connection as it comes back, each time: a `ping` on
//! release, a round trip to PostgreSQL (a `Sync` and its `ReadyForQuery`) or a hand-off to
//! SQLite's connection thread, after every statement run on the pool. That doubled the
//! context switches of a listing read and held a PostgreSQL connection busy for a second
//! round trip (issue 19: a bare server reading one row went from 14.6k to 20.5k reads a
//! second on PostgreSQL without it). The check is there for a connection left mid-use (a
//! request dropped while its statement or transaction ran, an I/O error), and only such a
//! connection needs it: here a connection is *unsettled* from the moment it is handed out
//! until the work it was lent for completes; one given back unsettled is checked at once,
//! in the background (see `Drop for PoolConnection`), and any connection is checked before
//! use if it sat idle longer than [`CHECK_IDLE_AFTER`]. A check that
//! fails, or a connection older than [`MAX_LIFETIME`], drops the connection and the pool
//! opens another.
//!
//! The pool is an [`Executor`] like sqlx's (`query.fetch_one(&pool)`), and hands out
//! transactions ([`Pool::begin`]) and connections ([`Pool::acquire`]).
//!
//! ## A full disk, and why a check also asks whether a transaction is still open
//!
//! sqlx does not ask the database whether a transaction is open: it counts `BEGIN`s it sent
//! (its *depth*) and, when the count is above zero, begins and commits a nested
//! transaction as `SAVEPOINT` / `RELEASE` instead of `BEGIN` / `COMMIT`. SQLite, on
//! `SQLITE_FULL` and `SQLITE_IOERR` (and `SQLITE_NOMEM`, `SQLITE_BUSY` in some states),
//! may roll the whole transaction back by itself ("Response To Errors Within A
//! Transaction", sqlite.org/lang_transaction.html). The `ROLLBACK` then sent for the
//! failed request fails ("no transaction is active") and sqlx's count stays at one: the
//! connection looks as if inside a transaction while SQLite is not. The next request's
//! `begin` sends `SAVEPOINT` (which does open a transaction), and the first failure on it
//! sends `ROLLBACK TO SAVEPOINT`, which undoes the work but leaves the transaction open.
//! From then on every request's "commit" is the `RELEASE` of a savepoint nested in that
//! transaction: it succeeds, the handler answers 201, and nothing ever reaches the file
//! or another connection; the next automatic rollback undoes hundreds of acknowledged
//! writes at once and their ids are handed out again (issue 35: 1,492 of 1,500 creates
//! acknowledged on a full disk, the largest id 455). Reproduced on a 1 MiB tmpfs: the
//! first `SQLITE_FULL` left the depth at 1 with SQLite outside any transaction, the second
//! left SQLite inside one for good.
//!
//! So a connection is trusted with a new transaction only when sqlx's count is zero: the
//! check of an unsettled connection (every connection whose work failed or was dropped)
//! runs the queued rollback, then refuses a connection whose count is not back to zero,
//! and the pool closes it (closing rolls back whatever SQLite still holds) and opens a
//! fresh one; [`Pool::begin`] refuses such a connection too rather than nest in it. The
//! write that met the error was answered an error; nothing after it is lost.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use deadpool::managed::{self, Metrics, PoolError, RecycleError, RecycleResult};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream};
use futures_util::StreamExt;
use sqlx::{ConnectOptions, Connection, Database, Describe, Either, Execute, Executor, TransactionManager};

/// A connection idle for longer than this is checked (a round trip) before it is handed out:
/// a database restarted in the meantime, a firewall that dropped it.
pub const CHECK_IDLE_AFTER: Duration = Duration::from_secs(30);

/// A connection is closed and replaced once this old (sqlx's default), so that server-side
/// state (plan caches, memory) does not grow for ever and a fail-over is followed.
pub const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);

/// Up to `size` connections of one database, opened as needed.
pub struct Pool<DB: Database> {
    inner: managed::Pool<Connector<DB>>,
    /// How long a caller waits for a connection, a connection takes to open, and a check.
    timeout: Duration,
    /// The statement that begins a transaction, when not the database's plain `BEGIN`
    /// ([`Pool::beginning_with`]).
    begin: Option<&'static str>,
}

impl<DB: Database> Clone for Pool<DB> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), timeout: self.timeout, begin: self.begin }
    }
}

impl<DB: Database> fmt::Debug for Pool<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.inner.status();
        f.debug_struct("Pool")
            .field("database", &DB::NAME)
            .field("max_size", &status.max_size)
            .field("size", &status.size)
            .field("available", &status.available)
            .finish()
    }
}

/// Opens the pool's connections and checks them before reuse.
pub struct Connector<DB: Database> {
    options: <DB::Connection as Connection>::Options,
}

/// A connection as the pool holds it.
pub struct Held<C> {
    conn: C,
    /// Lent out and not yet known to have finished its work: checked before its next use.
    unsettled: bool,
    /// How many times it was checked (for tests).
    checks: u32,
}

impl<DB: Database> managed::Manager for Connector<DB> {
    type Type = Held<DB::Connection>;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<Self::Type, sqlx::Error> {
        Ok(Held { conn: self.options.connect().await?, unsettled: false, checks: 0 })
    }

    async fn recycle(&self, held: &mut Self::Type, metrics: &Metrics) -> RecycleResult<sqlx::Error> {
        if metrics.age() > MAX_LIFETIME {
            return Err(RecycleError::message("past its lifetime"));
        }
        if held.unsettled || metrics.last_used() > CHECK_IDLE_AFTER {
            held.checks += 1;
            check::<DB>(&mut held.conn).await?;
            held.unsettled = false;
        }
        Ok(())
    }
}

/// The check of a connection before it serves again: it answers, and it is outside any
/// transaction as sqlx counts them (see the module documentation: a count left above zero
/// would make the next transaction a savepoint nested in one that never ends).
async fn check<DB: Database>(conn: &mut DB::Connection) -> Result<(), sqlx::Error> {
    // For PostgreSQL the ping also reads what a dropped statement left unread and sends the
    // rollback of a dropped transaction; SQLite's thread runs the queued rollback before it.
    conn.ping().await?;
    match DB::TransactionManager::get_transaction_depth(conn) {
        0 => Ok(()),
        depth => Err(left_in_transaction(depth)),
    }
}

fn left_in_transaction(depth: usize) -> sqlx::Error {
    sqlx::Error::Protocol(format!(
        "the connection was left inside a transaction (depth {depth}) its rollback did not end"
    ))
}

impl<DB: Database> Pool<DB> {
    /// A pool of up to `size` connections made with `options`; waiting for a connection (or
    /// for one to open) fails after `timeout`. One connection is opened now, so that a
    /// database that cannot be reached is known at once.
    pub async fn connect(
        options: <DB::Connection as Connection>::Options,
        size: usize,
        timeout: Duration,
    ) -> Result<Self, sqlx::Error> {
        let pool = Self::lazy(options, size, timeout)?;
        pool.acquire().await?.settle();
        Ok(pool)
    }

    /// As [`Pool::connect`], opening nothing until first used.
    pub fn lazy(
        options: <DB::Connection as Connection>::Options,
        size: usize,
        timeout: Duration,
    ) -> Result<Self, sqlx::Error> {
        let inner = managed::Pool::builder(Connector { options })
            .max_size(size)
            // Idle connections in turn, as sqlx's pool hands them out. A performance choice,
            // not a correctness one: the "stale reads" once seen with last-in-first-out
            // (issue 30 item 7) were fresh reads overtaken by another node's write while this
            // node slept in SQLite's busy handler; see `Store::update_listing_locked` and
            // tests/api/pool_stale.rs, which passes with either order.
            .queue_mode(managed::QueueMode::Fifo)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .map_err(|e| sqlx::Error::Configuration(e.into()))?;
        Ok(Self { inner, timeout, begin: None })
    }

    /// A connection of the pool, unsettled until [`PoolConnection::settle`] (it is
    /// checked before its next use otherwise).
    pub async fn acquire(&self) -> Result<PoolConnection<DB>, sqlx::Error> {
        let mut object = self.inner.get().await.map_err(pool_error)?;
        object.unsettled = true;
        Ok(PoolConnection { object: Some(object), check_timeout: self.timeout })
    }

    /// A transaction on a connection of the pool: committed by [`Transaction::commit`],
    /// rolled back otherwise.
    pub async fn begin(&self) -> Result<Transaction<DB>, sqlx::Error> {
        let mut conn = self.acquire().await?;
        let depth = DB::TransactionManager::get_transaction_depth(&conn);
        if depth != 0 {
            // Never nest in a transaction nobody will end: close this connection instead.
            conn.discard();
            return Err(left_in_transaction(depth));
        }
        DB::TransactionManager::begin(&mut conn, self.begin.map(std::borrow::Cow::Borrowed)).await?;
        Ok(Transaction { conn, open: true })
    }

    /// This pool's transactions begin with `statement`: SQLite's writers take the write
    /// lock at `BEGIN IMMEDIATE`, waiting for it there (the busy timeout). A deferred
    /// transaction that reads first and writes later cannot wait: when another process
    /// (a second node on the same file) committed since its read, SQLite refuses the write
    /// at once (`SQLITE_BUSY_SNAPSHOT`), which would answer 503.
    pub fn beginning_with(mut self, statement: &'static str) -> Self {
        self.begin = Some(statement);
        self
    }

    /// The most connections the pool opens.
    pub fn max_size(&self) -> usize {
        self.inner.status().max_size
    }

    /// Connections open and idle, and open and lent out (the operating metrics).
    pub fn usage(&self) -> (usize, usize) {
        let status = self.inner.status();
        (status.available, status.size.saturating_sub(status.available))
    }

    /// Closes the pool: waiting and later callers get `PoolClosed`; idle connections are
    /// closed now, each properly (PostgreSQL's `Terminate`, SQLite's thread joined), and
    /// connections in use when they come back.
    pub async fn close(&self) {
        let idle = self.inner.retain(|_, _| false).removed;
        self.inner.close();
        for held in idle {
            let _ = held.conn.close().await;
        }
    }
}

fn pool_error(error: PoolError<sqlx::Error>) -> sqlx::Error {
    match error {
        PoolError::Backend(e) => e,
        PoolError::Timeout(_) => sqlx::Error::PoolTimedOut,
        PoolError::Closed => sqlx::Error::PoolClosed,
        other => sqlx::Error::Configuration(other.to_string().into()),
    }
}

/// A connection lent by the pool; it goes back when dropped.
pub struct PoolConnection<DB: Database> {
    /// `None` only once dropped.
    object: Option<managed::Object<Connector<DB>>>,
    /// How long its check may take if it is returned unsettled (the pool's timeout).
    check_timeout: Duration,
}

impl<DB: Database> PoolConnection<DB> {
    /// Marks the work it was lent for as finished: no check before its next use.
    pub fn settle(&mut self) {
        if let Some(object) = &mut self.object {
            object.unsettled = false;
        }
    }

    /// Takes the connection out of the pool: it is closed, and the pool opens another.
    fn discard(&mut self) {
        if let Some(object) = self.object.take() {
            drop(managed::Object::take(object));
        }
    }

    fn held(&self) -> &Held<DB::Connection> {
        self.object.as_ref().expect("a connection not yet dropped")
    }

    fn held_mut(&mut self) -> &mut Held<DB::Connection> {
        self.object.as_mut().expect("a connection not yet dropped")
    }
}

/// An unsettled connection is checked now, in the background, rather than when next used:
/// a transaction dropped open on PostgreSQL keeps its row locks until its rollback is sent,
/// and a request waiting on those locks must not wait for this connection's next turn. Its
/// check settles it and it goes back; a failed check drops it.
impl<DB: Database> Drop for PoolConnection<DB> {
    fn drop(&mut self) {
        let Some(mut object) = self.object.take() else { return };
        if !object.unsettled {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let timeout = self.check_timeout;
        runtime.spawn(async move {
            object.checks += 1;
            // Bounded: a connection whose peer went silent must not hold its place in the
            // pool for ever.
            match tokio::time::timeout(timeout, check::<DB>(&mut object.conn)).await {
                Ok(Ok(())) => object.unsettled = false,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "a pooled connection failed its check and is closed");
                    drop(managed::Object::take(object));
                }
                Err(_) => {
                    tracing::warn!("a pooled connection did not answer its check in time and is closed");
                    drop(managed::Object::take(object));
                }
            }
        });
    }
}

impl<DB: Database> Deref for PoolConnection<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.held().conn
    }
}

impl<DB: Database> DerefMut for PoolConnection<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.held_mut().conn
    }
}

/// A transaction on a pooled connection. Dropped without [`commit`](Self::commit) or
/// [`rollback`](Self::rollback), it is rolled back before the connection is used again.
pub struct Transaction<DB: Database> {
    conn: PoolConnection<DB>,
    open: bool,
}

impl<DB: Database> Transaction<DB> {
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        DB::TransactionManager::commit(&mut self.conn).await?;
        self.open = false;
        self.conn.settle();
        Ok(())
    }

    pub async fn rollback(mut self) -> Result<(), sqlx::Error> {
        DB::TransactionManager::rollback(&mut self.conn).await?;
        self.open = false;
        self.conn.settle();
        Ok(())
    }
}

impl<DB: Database> Drop for Transaction<DB> {
    fn drop(&mut self) {
        if self.open {
            // Queued on the connection, which stays unsettled: its check, run as it goes
            // back to the pool, sends it (PostgreSQL) or waits for it (SQLite's thread runs
            // it in order).
            DB::TransactionManager::start_rollback(&mut self.conn);
        }
    }
}

impl<DB: Database> Deref for Transaction<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.conn
    }
}

impl<DB: Database> DerefMut for Transaction<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.conn
    }
}

/// Each statement on a connection of its own, settled when the statement completes.
impl<'p, DB: Database> Executor<'p> for &'_ Pool<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    type Database = DB;

    /// The results are read whole before they are streamed: a stream cannot borrow the
    /// connection it owns. Every rehome statement reads its results whole anyway.
    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, sqlx::Error>>
    where
        E: 'q + Execute<'q, DB>,
    {
        let pool = self.clone();
        let results = async move {
            let mut conn = match pool.acquire().await {
                Ok(conn) => conn,
                Err(e) => return vec![Err(e)],
            };
            let results: Vec<_> = (&mut *conn).fetch_many(query).collect().await;
            if results.iter().all(Result::is_ok) {
                conn.settle();
            }
            results
        };
        stream::once(results).flat_map(stream::iter).boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<Option<DB::Row>, sqlx::Error>>
    where
        E: 'q + Execute<'q, DB>,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let row = (&mut *conn).fetch_optional(query).await?;
            conn.settle();
            Ok(row)
        })
    }

    fn execute<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<DB::QueryResult, sqlx::Error>>
    where
        E: 'q + Execute<'q, DB>,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let done = (&mut *conn).execute(query).await?;
            conn.settle();
            Ok(done)
        })
    }

    fn fetch_all<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<Vec<DB::Row>, sqlx::Error>>
    where
        E: 'q + Execute<'q, DB>,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let rows = (&mut *conn).fetch_all(query).await?;
            conn.settle();
            Ok(rows)
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement<'q>, sqlx::Error>> {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let statement = (&mut *conn).prepare_with(sql, parameters).await?;
            conn.settle();
            Ok(statement)
        })
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, Result<Describe<DB>, sqlx::Error>> {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let described = (&mut *conn).describe(sql).await?;
            conn.settle();
            Ok(described)
        })
    }
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqliteConnectOptions;
    use sqlx::Sqlite;

    use super::*;

    async fn sqlite_pool(dir: &tempfile::TempDir, size: usize, timeout: Duration) -> Pool<Sqlite> {
        let options = SqliteConnectOptions::new().filename(dir.path().join("p.db")).create_if_missing(true);
        Pool::<Sqlite>::connect(options, size, timeout).await.unwrap()
    }

    /// Checks made so far on the pool's one connection (taken straight from deadpool, so
    /// that taking it changes nothing).
    async fn checks(pool: &Pool<Sqlite>) -> u32 {
        pool.inner.get().await.unwrap().checks
    }

    #[tokio::test]
    async fn a_connection_whose_statements_completed_is_reused_without_a_check() {
        let dir = tempfile::tempdir().unwrap();
        let pool = sqlite_pool(&dir, 1, Duration::from_secs(5)).await;
        sqlx::query("CREATE TABLE t (n INTEGER)").execute(&pool).await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1), (2), (3)").execute(&pool).await.unwrap();
        let rows: Vec<(i64,)> = sqlx::query_as("SELECT n FROM t ORDER BY n").fetch_all(&pool).await.unwrap();
        assert_eq!(rows, [(1,), (2,), (3,)]);
        let one: (i64,) = sqlx::query_as("SELECT n FROM t WHERE n = 2").fetch_one(&pool).await.unwrap();
        assert_eq!(one, (2,));
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (4)").execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(checks(&pool).await, 0);
    }

    #[tokio::test]
    async fn a_connection_left_mid_use_is_checked_before_its_next_use() {
        let dir = tempfile::tempdir().unwrap();
        let pool = sqlite_pool(&dir, 1, Duration::from_secs(5)).await;
        drop(pool.acquire().await.unwrap());
        assert_eq!(checks(&pool).await, 1, "a connection lent and never settled");
        assert!(sqlx::query("SELECT nonsense FROM nowhere").execute(&pool).await.is_err());
        assert_eq!(checks(&pool).await, 2, "a statement that failed");
        pool.acquire().await.unwrap().settle();
        assert_eq!(checks(&pool).await, 2, "a connection settled by its user");
    }

    #[tokio::test]
    async fn a_transaction_dropped_uncommitted_is_rolled_back_before_the_connection_serves_again() {
        let dir = tempfile::tempdir().unwrap();
        let pool = sqlite_pool(&dir, 1, Duration::from_secs(5)).await;
        sqlx::query("CREATE TABLE t (n INTEGER)").execute(&pool).await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1)").execute(&mut *tx).await.unwrap();
        drop(tx);
        // The same (only) connection: a new transaction begins, and the row never was.
        let mut tx = pool.begin().await.unwrap();
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM t").fetch_one(&mut *tx).await.unwrap();
        assert_eq!(n, 0);
        tx.rollback().await.unwrap();
    }

    /// What SQLite does on `SQLITE_FULL` (see the module documentation), played by hand: the
    /// transaction ends under sqlx (a bare `ROLLBACK`, as SQLite's own), the request fails,
    /// the next request fails too. A transaction committed after that must be in the file,
    /// visible from another connection. Before the check counted transactions, it was the
    /// release of a savepoint inside a transaction that never ended.
    #[tokio::test]
    async fn a_transaction_sqlite_rolled_back_by_itself_leaves_no_transaction_open_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let pool = sqlite_pool(&dir, 1, Duration::from_secs(5)).await;
        let other = sqlite_pool(&dir, 1, Duration::from_secs(5)).await;
        sqlx::query("CREATE TABLE t (n INTEGER)").execute(&pool).await.unwrap();

        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1)").execute(&mut *tx).await.unwrap();
        sqlx::query("ROLLBACK").execute(&mut *tx).await.unwrap();
        drop(tx);
        if let Ok(mut tx) = pool.begin().await {
            sqlx::query("INSERT INTO t VALUES (2)").execute(&mut *tx).await.unwrap();
            drop(tx);
        }
        for n in [3, 4] {
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("INSERT INTO t VALUES ($1)").bind(n).execute(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
        }

        let seen: Vec<i64> = sqlx::query_scalar("SELECT n FROM t ORDER BY n").fetch_all(&other).await.unwrap();
        assert_eq!(seen, [3, 4], "what was committed, seen from another connection");
        let mut conn = pool.acquire().await.unwrap();
        assert_eq!(<Sqlite as Database>::TransactionManager::get_transaction_depth(&conn), 0);
        sqlx::query("BEGIN").execute(&mut *conn).await.expect("SQLite is outside any transaction");
        sqlx::query("ROLLBACK").execute(&mut *conn).await.unwrap();
        conn.settle();
    }

    #[tokio::test]
    async fn a_caller_waits_at_most_the_timeout_and_a_closed_pool_refuses_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let pool = sqlite_pool(&dir, 1, Duration::from_millis(100)).await;
        let held = pool.acquire().await.unwrap();
        assert!(matches!(pool.acquire().await, Err(sqlx::Error::PoolTimedOut)));
        drop(held);
        pool.close().await;
        assert!(matches!(pool.acquire().await, Err(sqlx::Error::PoolClosed)));
        assert!(matches!(sqlx::query("SELECT 1").execute(&pool).await, Err(sqlx::Error::PoolClosed)));
    }

    #[tokio::test]
    async fn a_database_that_cannot_be_opened_fails_the_connect() {
        let options = SqliteConnectOptions::new().filename("/nonexistent/dir/p.db");
        let opened = Pool::<Sqlite>::connect(options, 1, Duration::from_secs(5)).await;
        assert!(matches!(opened, Err(sqlx::Error::Database(_))), "{opened:?}");
    }

    /// The PostgreSQL server of `REHOME_TEST_POSTGRES`, if set (CI sets it).
    async fn postgres_pool(size: usize) -> Option<Pool<sqlx::Postgres>> {
        postgres_pool_waiting(size, Duration::from_secs(5)).await
    }

    async fn postgres_pool_waiting(size: usize, timeout: Duration) -> Option<Pool<sqlx::Postgres>> {
        let Some(url) = std::env::var("REHOME_TEST_POSTGRES").ok().filter(|u| !u.trim().is_empty()) else {
            eprintln!("skipped: set REHOME_TEST_POSTGRES to a PostgreSQL URL");
            return None;
        };
        Some(Pool::<sqlx::Postgres>::connect(url.parse().unwrap(), size, timeout).await.unwrap())
    }

    /// A transaction dropped open (a request that failed or went away) must not keep its
    /// locks until its connection happens to serve again: the rollback is sent at once.
    #[tokio::test]
    async fn on_postgres_a_transaction_dropped_open_releases_its_locks_at_once() {
        let Some(pool) = postgres_pool(2).await else { return };
        let key: i64 = rand_key();
        let mut other = pool.acquire().await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(key).execute(&mut *tx).await.unwrap();
        let locked: bool =
            sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(key).fetch_one(&mut *other).await.unwrap();
        assert!(!locked, "held by the open transaction");
        drop(tx);
        let mut released = false;
        for _ in 0..50 {
            released =
                sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(key).fetch_one(&mut *other).await.unwrap();
            if released {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(released, "the dropped transaction still holds its lock");
        sqlx::query("SELECT pg_advisory_unlock($1)").bind(key).execute(&mut *other).await.unwrap();
        other.settle();
    }

    /// A statement abandoned mid-way (its request went away) leaves nothing behind for the
    /// next user of the connection.
    #[tokio::test]
    async fn on_postgres_a_statement_abandoned_mid_way_leaves_the_connection_clean() {
        let Some(pool) = postgres_pool(1).await else { return };
        let slow = sqlx::query_scalar::<_, i32>("SELECT 7 FROM pg_sleep(0.3)").fetch_one(&pool);
        assert!(tokio::time::timeout(Duration::from_millis(50), slow).await.is_err());
        let n: i32 = sqlx::query_scalar("SELECT 1").fetch_one(&pool).await.unwrap();
        assert_eq!(n, 1);
        let mut tx = pool.begin().await.unwrap();
        let n: i32 = sqlx::query_scalar("SELECT 2").fetch_one(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(n, 2);
    }

    /// A connection whose check does not answer within the pool's timeout (here a statement
    /// still running on the server) is closed, and the pool opens another in its place.
    #[tokio::test]
    async fn on_postgres_a_check_that_does_not_answer_in_time_closes_the_connection() {
        let Some(pool) = postgres_pool_waiting(1, Duration::from_millis(300)).await else { return };
        let backend = "SELECT pg_backend_pid()";
        let first: i32 = sqlx::query_scalar(backend).fetch_one(&pool).await.unwrap();
        let slow = sqlx::query("SELECT pg_sleep(3)").execute(&pool);
        assert!(tokio::time::timeout(Duration::from_millis(50), slow).await.is_err());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let second: i32 = sqlx::query_scalar(backend).fetch_one(&pool).await.unwrap();
        assert_ne!(first, second, "the unanswered connection was replaced");
    }

    fn rand_key() -> i64 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        0x7265_686f_0000_0000 | i64::from(nanos)
    }
}
