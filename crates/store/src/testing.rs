//! Fresh stores for the store's own tests, on either backend.

use sqlx::Connection;

use super::Store;

/// A store on a new SQLite file, which lives as long as the directory.
pub async fn sqlite_store() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("sqlite://{}", dir.path().join("t.db").display()), None).await.unwrap();
    (store, dir)
}

/// A store on a database of its own, `rehome_<tag>_<pid>`, on the server of
/// `REHOME_TEST_POSTGRES` (CI sets it); `None` without it, and the test skips.
pub struct PostgresStore {
    pub store: Store,
    admin: String,
    name: String,
}

impl PostgresStore {
    pub async fn new(tag: &str) -> Option<Self> {
        let Some(admin) = std::env::var("REHOME_TEST_POSTGRES").ok().filter(|u| !u.trim().is_empty()) else {
            eprintln!("skipped: set REHOME_TEST_POSTGRES to a PostgreSQL URL");
            return None;
        };
        let name = format!("rehome_{tag}_{}", std::process::id());
        let mut server = sqlx::PgConnection::connect(&admin).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut server).await.unwrap();
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut server).await.unwrap();
        let (base, _) = admin.rsplit_once('/').unwrap();
        let store = Store::open(&format!("{base}/{name}"), None).await.unwrap();
        Some(Self { store, admin, name })
    }

    /// Closes the store and drops its database.
    pub async fn finish(self) {
        self.store.close().await;
        let mut server = sqlx::PgConnection::connect(&self.admin).await.unwrap();
        sqlx::query(&format!("DROP DATABASE {} WITH (FORCE)", self.name)).execute(&mut server).await.unwrap();
    }
}
