//! A brand's orders as its Orders page lists them (issue 47): newest first, with the
//! collection date once booked and, for an order from the storefront, the buyer's postcode
//! (the use case shows only its district).

use super::{on_pool, Store, StoreError, READ_SNAPSHOT};
use rehome_domain::order::OrderStatus;
use rehome_domain::view::{BrandOrderRow, OrderFilter};

/// The filter's conditions on `o` (and `ob`), its parameters from `$2`.
fn conditions(filter: &OrderFilter) -> (String, Vec<&'static str>) {
    let mut sql = String::new();
    let mut values = Vec::new();
    if let Some(status) = filter.status {
        values.push(status.as_str());
        sql.push_str(&format!(" AND o.status = ${}", values.len() + 1));
    }
    if let Some(channel) = filter.channel {
        values.push(channel.as_str());
        sql.push_str(&format!(" AND o.channel = ${}", values.len() + 1));
    }
    if filter.from_buyers {
        sql.push_str(" AND ob.order_id IS NOT NULL");
    }
    (sql, values)
}

impl Store {
    /// A page of the brand's orders, newest first, and how many match in all (one snapshot).
    pub async fn brand_orders(
        &self,
        brand_id: i64,
        filter: &OrderFilter,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<BrandOrderRow>, i64), StoreError> {
        let (conditions, values) = conditions(filter);
        let from = format!(
            "FROM orders o LEFT JOIN listings l ON l.id = o.listing_id
               LEFT JOIN collections c ON c.order_id = o.id LEFT JOIN order_buyers ob ON ob.order_id = o.id
             WHERE o.brand_id = $1{conditions}"
        );
        let count = format!("SELECT COUNT(*) {from}");
        let page = format!(
            "SELECT o.id, o.listing_id, COALESCE(o.title, l.title) AS title, o.quantity, o.unit_price_pence, o.status,
                    o.channel, o.buyer_window_start, o.buyer_window_end, c.scheduled_for AS collection,
                    ob.postcode AS buyer_postcode, o.created_at
             {from} ORDER BY o.id DESC LIMIT {limit} OFFSET {offset}"
        );
        on_pool!(self, read, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(READ_SNAPSHOT.of(self)).execute(&mut *tx).await?;
            let mut total = sqlx::query_scalar::<_, i64>(&count).bind(brand_id);
            for value in &values {
                total = total.bind(*value);
            }
            let total = total.fetch_one(&mut *tx).await?;
            let mut rows = sqlx::query_as::<_, BrandOrderRow>(&page).bind(brand_id);
            for value in &values {
                rows = rows.bind(*value);
            }
            let rows = rows.fetch_all(&mut *tx).await?;
            tx.commit().await?;
            Ok((rows, total))
        })
    }

    /// How many of the brand's orders from storefront buyers await delivery.
    pub async fn buyer_orders_waiting(&self, brand_id: i64) -> Result<i64, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar(
                "SELECT COUNT(*) FROM orders o JOIN order_buyers ob ON ob.order_id = o.id
                 WHERE o.brand_id = $1 AND o.status = $2",
            )
            .bind(brand_id)
            .bind(OrderStatus::Placed.as_str())
            .fetch_one(pool)
            .await?)
        })
    }
}
