//! Invitation links: single use, valid 72 hours; only the SHA-256 of the token is stored.
//! Issuing is here; accepting one belongs to sign-in.

use super::{on_conn, on_pool, record_audit, Conn, Store, StoreError, Ts};
use crate::domain::audit::AuditEntry;

/// Records an invitation on `conn`, the caller's transaction. Earlier unused invitations of
/// the user stop working: only the newest link is valid.
pub async fn insert_invitation(
    conn: Conn<'_>,
    user_id: i64,
    token_hash: &[u8; 32],
    created_at: Ts,
    expires_at: Ts,
) -> Result<(), StoreError> {
    on_conn!(conn, |c| {
        sqlx::query("UPDATE invitations SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL")
            .bind(created_at)
            .bind(user_id)
            .execute(&mut *c)
            .await?;
        sqlx::query("INSERT INTO invitations (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(&token_hash[..])
            .bind(user_id)
            .bind(created_at)
            .bind(expires_at)
            .execute(&mut *c)
            .await?;
        Ok(())
    })
}

impl Store {
    /// A fresh invitation for an existing user (the CLI's `users invite-link`), recorded as
    /// `entry(brand id)`, in one transaction; false when no live user has this id.
    pub async fn issue_invitation(
        &self,
        user_id: i64,
        token_hash: &[u8; 32],
        expires_at: Ts,
        entry: impl FnOnce(i64) -> AuditEntry,
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let brand_id: Option<i64> =
                sqlx::query_scalar("SELECT brand_id FROM users WHERE id = $1 AND status <> 'removed'")
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(brand_id) = brand_id else {
                return Ok(false);
            };
            insert_invitation((&mut *tx).into(), user_id, token_hash, Ts::now(), expires_at).await?;
            record_audit((&mut *tx).into(), &entry(brand_id)).await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}
