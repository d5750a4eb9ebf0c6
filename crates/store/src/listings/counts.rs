//! The brands' counts of live listings by status and channel (migrations sqlite/0017 and
//! postgres/0009, by channel since the 0050s): rows of +1 and -1 that triggers on `listings`
//! append, summed by a list page filtered by status and channel alone (or not at all) for its
//! `total`, and folded here so that a sum reads one or a few rows.

use crate::{on_pool, Store, StoreError};

/// A table of kept counts: `brand_id`, the text columns it counts by, and `live`.
struct Kept {
    table: &'static str,
    /// The text columns after `brand_id`.
    by: &'static [&'static str],
}

const LISTING_COUNTS: Kept = Kept { table: "listing_counts", by: &["status", "channel"] };
/// The storefront's facet counts (migrations sqlite/0033, postgres/0025), brand 0 every brand's.
const MARKET_COUNTS: Kept = Kept { table: "market_counts", by: &["category", "condition", "channel"] };

impl Store {
    /// Folds the count rows of up to `limit` (brand, status, channel) triples into one row each; returns
    /// how many were folded. Safe beside writers and beside folds on other nodes: a fold
    /// deletes the rows it sums in the transaction that writes their sum, and rows added
    /// meanwhile (or deleted first by another fold) are not in that sum.
    pub async fn fold_listing_counts(&self, limit: i64) -> Result<usize, StoreError> {
        self.fold_counts(&LISTING_COUNTS, limit).await
    }

    /// [`Store::fold_listing_counts`] for the storefront's facet counts.
    pub async fn fold_market_counts(&self, limit: i64) -> Result<usize, StoreError> {
        self.fold_counts(&MARKET_COUNTS, limit).await
    }

    async fn fold_counts(&self, kept: &Kept, limit: i64) -> Result<usize, StoreError> {
        use sqlx::Row;
        let Kept { table, by } = kept;
        let columns = by.join(", ");
        let matched: Vec<String> = by.iter().enumerate().map(|(i, c)| format!(" AND {c} = ${}", i + 2)).collect();
        let matched = matched.concat();
        let values: Vec<String> = (1..=by.len() + 2).map(|n| format!("${n}")).collect();
        let select = format!(
            "SELECT brand_id, {columns} FROM {table} GROUP BY brand_id, {columns} HAVING COUNT(*) > 1 LIMIT $1"
        );
        let delete = format!("DELETE FROM {table} WHERE brand_id = $1{matched} RETURNING live");
        let insert = format!("INSERT INTO {table} (brand_id, {columns}, live) VALUES ({})", values.join(", "));
        let groups: Vec<(i64, Vec<String>)> = on_pool!(self, read, |pool| {
            let rows = sqlx::query(&select).bind(limit).fetch_all(pool).await?;
            let mut groups = Vec::with_capacity(rows.len());
            for row in rows {
                let texts = (1..=by.len()).map(|i| row.try_get::<String, _>(i)).collect::<Result<Vec<_>, _>>()?;
                groups.push((row.try_get::<i64, _>(0)?, texts));
            }
            groups
        });
        for (brand_id, texts) in &groups {
            on_pool!(self, write, |pool| {
                let mut tx = pool.begin().await?;
                let mut query = sqlx::query_scalar::<_, i64>(&delete).bind(brand_id);
                for text in texts {
                    query = query.bind(text);
                }
                let live: i64 = query.fetch_all(&mut *tx).await?.iter().sum();
                if live != 0 {
                    let mut query = sqlx::query(&insert).bind(brand_id);
                    for text in texts {
                        query = query.bind(text);
                    }
                    query.bind(live).execute(&mut *tx).await?;
                }
                tx.commit().await?;
            });
        }
        Ok(groups.len())
    }
}

#[cfg(test)]
mod tests {
    use crate::{on_pool, Store};

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
        let (store, _dir) = crate::testing::sqlite_store().await;
        folding_keeps_every_sum_in_one_row_and_drops_the_zeros(&store).await;
    }

    /// On a database of its own on the server of `REHOME_TEST_POSTGRES` (CI sets it).
    #[tokio::test]
    async fn on_postgres_folding_keeps_every_sum_in_one_row() {
        let Some(pg) = crate::testing::PostgresStore::new("counts").await else { return };
        folding_keeps_every_sum_in_one_row_and_drops_the_zeros(&pg.store).await;
        pg.finish().await;
    }
}
