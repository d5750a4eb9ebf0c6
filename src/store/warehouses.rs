//! The warehouse address book of each brand.

use super::{on_pool, Store, StoreError};

impl Store {
    /// The brand's default warehouse, if it has any warehouse.
    pub async fn default_warehouse_id(&self, brand_id: i64) -> Result<Option<String>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT id FROM warehouses WHERE brand_id = $1 AND is_default")
                .bind(brand_id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// True when `id` is one of the brand's warehouses.
    pub async fn warehouse_in_brand(&self, brand_id: i64, id: &str) -> Result<bool, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar::<_, i64>("SELECT 1 FROM warehouses WHERE brand_id = $1 AND id = $2")
                .bind(brand_id)
                .bind(id)
                .fetch_optional(pool)
                .await?
                .is_some())
        })
    }
}
