//! Facts about the deployment the command line reads and the server writes: the public URL
//! the server serves under.

use super::{on_pool, Store, StoreError};

const PUBLIC_URL: &str = "public_url";

impl Store {
    /// Records the public URL the server serves under (each start, the latest wins).
    pub async fn record_public_url(&self, url: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(
                "INSERT INTO deployment (name, value) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            )
            .bind(PUBLIC_URL)
            .bind(url)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// The public URL the last server started on this database recorded, if any.
    pub async fn recorded_public_url(&self) -> Result<Option<String>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT value FROM deployment WHERE name = $1")
                .bind(PUBLIC_URL)
                .fetch_optional(pool)
                .await?)
        })
    }
}
