//! Database failures that are the environment's, not the request's: a full disk, a database
//! that cannot be reached or is shutting down. They are answered as such (507, 503 with
//! `Retry-After`) rather than as a fault of the server (500), so a client knows that
//! nothing was written and that trying again later is right.

use sqlx::error::DatabaseError;

/// Why the database could not do its part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// No space left: SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full` (53100). The write
    /// was not kept; writes succeed again once space is freed, without a restart.
    StorageFull,
    /// The database cannot be reached or is failing for now: no connection within the
    /// pool's timeout, a closed pool (shutting down), a broken connection, an I/O error
    /// (`SQLITE_IOERR`), a locked or read-only file, PostgreSQL shutting down or refusing
    /// connections, out of memory or other resources.
    Unavailable,
}

/// The outage `error` is, or `None` for an error of the request or the server itself
/// (a constraint, a bug in a statement, a corrupt file).
pub fn outage(error: &sqlx::Error) -> Option<Outage> {
    match error {
        sqlx::Error::Database(e) => database_outage(e.as_ref()),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Some(Outage::Unavailable),
        _ => None,
    }
}

fn database_outage(e: &dyn DatabaseError) -> Option<Outage> {
    let code = e.code()?;
    if e.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        return sqlite_outage(code.parse().ok()?);
    }
    postgres_outage(&code)
}

/// SQLite's primary result code is the low byte of the extended one.
fn sqlite_outage(extended: i32) -> Option<Outage> {
    const BUSY: i32 = 5;
    const LOCKED: i32 = 6;
    const NOMEM: i32 = 7;
    const READONLY: i32 = 8;
    const IOERR: i32 = 10;
    const FULL: i32 = 13;
    const CANTOPEN: i32 = 14;
    match extended & 0xff {
        FULL => Some(Outage::StorageFull),
        BUSY | LOCKED | NOMEM | READONLY | IOERR | CANTOPEN => Some(Outage::Unavailable),
        _ => None,
    }
}

/// By SQLSTATE: class 53 (insufficient resources; 53100 is `disk_full`), class 08
/// (connection exception), 57P01–57P03 (shutting down, cannot connect now), 58030 (I/O).
fn postgres_outage(sqlstate: &str) -> Option<Outage> {
    match sqlstate {
        "53100" => Some(Outage::StorageFull),
        "57P01" | "57P02" | "57P03" | "58030" => Some(Outage::Unavailable),
        s if s.starts_with("53") || s.starts_with("08") => Some(Outage::Unavailable),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_full_is_storage_full_and_extended_io_errors_are_unavailable() {
        assert_eq!(sqlite_outage(13), Some(Outage::StorageFull));
        assert_eq!(sqlite_outage(10 | (4 << 8)), Some(Outage::Unavailable), "SQLITE_IOERR_WRITE");
        assert_eq!(sqlite_outage(5 | (1 << 8)), Some(Outage::Unavailable), "SQLITE_BUSY_RECOVERY");
        assert_eq!(sqlite_outage(19 | (8 << 8)), None, "SQLITE_CONSTRAINT_UNIQUE is the request's");
        assert_eq!(sqlite_outage(11), None, "a corrupt file is the server's fault");
    }

    #[test]
    fn postgres_disk_full_is_storage_full_and_shutdowns_are_unavailable() {
        assert_eq!(postgres_outage("53100"), Some(Outage::StorageFull));
        assert_eq!(postgres_outage("53300"), Some(Outage::Unavailable), "too_many_connections");
        assert_eq!(postgres_outage("57P01"), Some(Outage::Unavailable), "admin_shutdown");
        assert_eq!(postgres_outage("08006"), Some(Outage::Unavailable), "connection_failure");
        assert_eq!(postgres_outage("23505"), None, "unique_violation");
        assert_eq!(postgres_outage("40001"), None);
    }

    #[test]
    fn pool_and_connection_failures_are_unavailable() {
        assert_eq!(outage(&sqlx::Error::PoolTimedOut), Some(Outage::Unavailable));
        assert_eq!(outage(&sqlx::Error::PoolClosed), Some(Outage::Unavailable));
        assert_eq!(outage(&sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into())), Some(Outage::Unavailable));
        assert_eq!(outage(&sqlx::Error::RowNotFound), None);
    }
}
