//! The brands' counts of live listings by status and channel (migrations sqlite/0017 and
//! postgres/0009, by channel since the 0050s): rows of +1 and -1 that triggers on `listings`
//! append, summed by a list page filtered by status and channel alone (or not at all) for its
//! `total`, and folded here so that a sum reads one or a few rows.

use crate::store::{on_pool, Store, StoreError};

impl Store {
    /// Folds the count rows of up to `limit` (brand, status, channel) triples into one row each; returns
    /// how many were folded. Safe beside writers and beside folds on other nodes: a fold
    /// deletes the rows it sums in the transaction that writes their sum, and rows added
    /// meanwhile (or deleted first by another fold) are not in that sum.
    pub async fn fold_listing_counts(&self, limit: i64) -> Result<usize, StoreError> {
        let counts: Vec<(i64, String, String)> = on_pool!(self, read, |pool| {
            sqlx::query_as(
                "SELECT brand_id, status, channel FROM listing_counts GROUP BY brand_id, status, channel
                 HAVING COUNT(*) > 1 LIMIT $1",
            )
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
        for (brand_id, status, channel) in &counts {
            on_pool!(self, write, |pool| {
                let mut tx = pool.begin().await?;
                let rows: Vec<i64> = sqlx::query_scalar(
                    "DELETE FROM listing_counts WHERE brand_id = $1 AND status = $2 AND channel = $3 RETURNING live",
                )
                .bind(brand_id)
                .bind(status)
                .bind(channel)
                .fetch_all(&mut *tx)
                .await?;
                let live: i64 = rows.iter().sum();
                if live != 0 {
                    sqlx::query("INSERT INTO listing_counts (brand_id, status, channel, live) VALUES ($1, $2, $3, $4)")
                        .bind(brand_id)
                        .bind(status)
                        .bind(channel)
                        .bind(live)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            });
        }
        Ok(counts.len())
    }
}

#[cfg(test)]
mod tests {
    use sqlx::Connection;

    use crate::store::{on_pool, Store};

    async fn rows(store: &Store) -> Vec<(i64, String, i64)> {
        on_pool!(store, read, |pool| {
            sqlx::query_as("SELECT brand_id, status, live FROM listing_counts ORDER BY brand_id, status, live")
                .fetch_all(pool)
                .await
                .unwrap()
        })
    }

    async fn append(store: &Store, brand_id: i64, status: &str, live: i64) {
        on_pool!(store, write, |pool| {
            sqlx::query("INSERT INTO listing_counts (brand_id, status, channel, live) VALUES ($1, $2, 'exchange', $3)")
                .bind(brand_id)
                .bind(status)
                .bind(live)
                .execute(pool)
                .await
                .unwrap();
        });
    }

    async fn folding_keeps_every_sum_in_one_row_and_drops_the_zeros(store: &Store) {
        let changes = [(1, "active", [1, 1, 1, 1, 1, -1, -1].as_slice()), (1, "draft", &[1]), (2, "active", &[1, -1])];
        for (brand_id, status, lives) in changes {
            for &live in lives {
                append(store, brand_id, status, live).await;
            }
        }
        assert_eq!(store.fold_listing_counts(100).await.unwrap(), 2, "two pairs had several rows");
        assert_eq!(rows(store).await, [(1, "active".to_owned(), 3), (1, "draft".to_owned(), 1)]);
        assert_eq!(store.fold_listing_counts(100).await.unwrap(), 0, "nothing left to fold");
        on_pool!(store, write, |pool| {
            sqlx::query("DELETE FROM listing_counts").execute(pool).await.unwrap();
        });
        for brand_id in 1..=3 {
            append(store, brand_id, "active", 1).await;
            append(store, brand_id, "active", 1).await;
        }
        assert_eq!(store.fold_listing_counts(2).await.unwrap(), 2, "a batch at a time");
        assert_eq!(store.fold_listing_counts(2).await.unwrap(), 1);
        let sums: Vec<i64> = rows(store).await.into_iter().map(|(_, _, live)| live).collect();
        assert_eq!(sums, [2, 2, 2]);
    }

    #[tokio::test]
    async fn on_sqlite_folding_keeps_every_sum_in_one_row() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}", dir.path().join("r.db").display()), None).await.unwrap();
        folding_keeps_every_sum_in_one_row_and_drops_the_zeros(&store).await;
    }

    /// On a database of its own on the server of `REHOME_TEST_POSTGRES` (CI sets it).
    #[tokio::test]
    async fn on_postgres_folding_keeps_every_sum_in_one_row() {
        let Some(admin) = std::env::var("REHOME_TEST_POSTGRES").ok().filter(|u| !u.trim().is_empty()) else {
            eprintln!("skipped: set REHOME_TEST_POSTGRES to a PostgreSQL URL");
            return;
        };
        let name = format!("rehome_counts_{}", std::process::id());
        let mut server = sqlx::PgConnection::connect(&admin).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut server).await.unwrap();
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut server).await.unwrap();
        let (base, _) = admin.rsplit_once('/').unwrap();
        let store = Store::open(&format!("{base}/{name}"), None).await.unwrap();
        folding_keeps_every_sum_in_one_row_and_drops_the_zeros(&store).await;
        store.close().await;
        sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)")).execute(&mut server).await.unwrap();
    }
}
