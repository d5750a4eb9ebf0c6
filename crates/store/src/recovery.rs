//! Two-step recovery codes (hashes only; `domain::recovery`) and turning two-step sign-in
//! off: by its owner, or reset by an admin.

use super::sessions::end_user_sessions;
use super::{now, on_conn, on_pool, record_audit, Conn, Store, StoreError};
use rehome_domain::audit::AuditEntry;

/// Replaces every recovery code of `user_id` with `hashes`, in the caller's transaction.
pub(super) async fn replace_recovery_codes(
    conn: Conn<'_>,
    user_id: i64,
    hashes: &[[u8; 32]],
) -> Result<(), StoreError> {
    let at = now();
    on_conn!(conn, |c| {
        sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1").bind(user_id).execute(&mut *c).await?;
        for hash in hashes {
            sqlx::query("INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES ($1, $2, $3)")
                .bind(user_id)
                .bind(&hash[..])
                .bind(at)
                .execute(&mut *c)
                .await?;
        }
        Ok(())
    })
}

impl Store {
    /// How many of the user's recovery codes are still unused.
    pub async fn recovery_codes_left(&self, user_id: i64) -> Result<i64, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT COUNT(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL")
                .bind(user_id)
                .fetch_one(pool)
                .await?)
        })
    }

    /// True when `code_hash` is one of the user's unused recovery codes.
    pub async fn has_recovery_code(&self, user_id: i64, code_hash: &[u8; 32]) -> Result<bool, StoreError> {
        on_pool!(self, read, |pool| {
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM recovery_codes WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL",
            )
            .bind(user_id)
            .bind(&code_hash[..])
            .fetch_optional(pool)
            .await?;
            Ok(found.is_some())
        })
    }

    /// A new set of recovery codes for an enrolled user (the old ones stop working), with
    /// `audit`; false when the user has no two-step sign-in (meanwhile turned off).
    pub async fn renew_recovery_codes(
        &self,
        user_id: i64,
        hashes: &[[u8; 32]],
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let enrolled: Option<i64> =
                sqlx::query_scalar("SELECT id FROM users WHERE id = $1 AND totp_secret IS NOT NULL")
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if enrolled.is_none() {
                return Ok(false);
            }
            replace_recovery_codes((&mut *tx).into(), user_id, hashes).await?;
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Turns two-step sign-in off for a live user of `brand_id`: the secret, any offered
    /// secret and every recovery code go. With `end_sessions` (an admin's reset) every
    /// session of the user ends too. False when the user is unknown, removed, of another
    /// brand or had no two-step sign-in.
    pub async fn clear_totp(
        &self,
        brand_id: i64,
        user_id: i64,
        end_sessions: bool,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let cleared = sqlx::query(
                "UPDATE users SET totp_secret = NULL, totp_pending = NULL, totp_last_step = NULL
                 WHERE id = $1 AND brand_id = $2 AND status <> 'removed' AND totp_secret IS NOT NULL",
            )
            .bind(user_id)
            .bind(brand_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if cleared != 1 {
                return Ok(false);
            }
            replace_recovery_codes((&mut *tx).into(), user_id, &[]).await?;
            if end_sessions {
                end_user_sessions((&mut *tx).into(), user_id, None).await?;
            }
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}
