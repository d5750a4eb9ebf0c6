//! Customers' payout links (decisions 14.6): a token's hash, the order it is for, when it
//! stops working and whether it was used. The choice itself is the redemption, recorded by
//! the payout-choice use case; a link is marked used once, by a conditional update.

use super::{on_pool, Store, StoreError, Ts};

/// A stored link.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PayoutLinkRecord {
    pub order_id: i64,
    pub customer_id: String,
    pub expires_at: Ts,
    pub used_at: Option<Ts>,
}

impl Store {
    /// Stores a new link.
    pub async fn create_payout_link(
        &self,
        token_sha256: &str,
        order_id: i64,
        customer_id: &str,
        expires_at: Ts,
    ) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(
                "INSERT INTO payout_links (token_sha256, order_id, customer_id, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(token_sha256)
            .bind(order_id)
            .bind(customer_id)
            .bind(Ts::now())
            .bind(expires_at)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// The link whose token hashes to `token_sha256`.
    pub async fn payout_link(&self, token_sha256: &str) -> Result<Option<PayoutLinkRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT order_id, customer_id, expires_at, used_at FROM payout_links WHERE token_sha256 = $1",
            )
            .bind(token_sha256)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Marks the link used, unless it was already: true for the one call that did.
    pub async fn use_payout_link(&self, token_sha256: &str) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query("UPDATE payout_links SET used_at = $1 WHERE token_sha256 = $2 AND used_at IS NULL")
                .bind(Ts::now())
                .bind(token_sha256)
                .execute(pool)
                .await?
                .rows_affected();
            Ok(done == 1)
        })
    }
}
