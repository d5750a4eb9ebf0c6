//! Password reset links: issued (with their mail and audit entry, in one transaction, under
//! a cap per user and per address that a burst cannot pass) and used once.

use chrono::TimeDelta;

use super::mail::{enqueue_mail, NewMail};
use super::sessions::end_user_sessions;
use super::{on_pool, record_audit, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;

/// A link to issue.
#[derive(Debug, Clone)]
pub struct NewReset<'a> {
    pub user_id: i64,
    pub token_hash: [u8; 32],
    /// The admin who sends it; none when the user asked.
    pub requested_by: Option<i64>,
    /// The address that asked (counted against `per_address`).
    pub ip: Option<&'a str>,
    pub now: Ts,
    pub expires_at: Ts,
    /// Most links one user may be sent in an hour.
    pub per_user: i64,
    /// Most links one address may ask for in an hour.
    pub per_address: i64,
    /// The mail with the link, when mail is on.
    pub mail: Option<NewMail<'a>>,
    pub audit: AuditEntry,
}

/// What issuing a link did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetIssue {
    Issued,
    /// The user or the address had their hour's links already: nothing issued or sent.
    TooFrequent,
}

/// The user a live link is for.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResetTarget {
    pub user_id: i64,
    pub brand_id: i64,
    pub name: String,
    pub email: String,
}

/// The PostgreSQL advisory lock of the reset links (one lock: issuing is rare, and the
/// count per address spans users).
const RESET_LOCK: i64 = 0x7265_7365_7400_0001;

impl Store {
    /// Issues `reset`: earlier unused links of the user stop working, its rows older than a
    /// day go, the new link is written with its mail and audit entry, in one transaction;
    /// refused (nothing written) past the hour's links of the user or of the address.
    pub async fn issue_password_reset(&self, reset: &NewReset<'_>) -> Result<ResetIssue, StoreError> {
        let postgres = self.is_postgres();
        let hour_ago = Ts::from(reset.now.get() - TimeDelta::hours(1));
        let day_ago = Ts::from(reset.now.get() - TimeDelta::days(1));
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(RESET_LOCK).execute(&mut *tx).await?;
            }
            let (by_user, by_address): (i64, i64) = sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM password_resets WHERE user_id = $1 AND created_at > $3),
                        (SELECT COUNT(*) FROM password_resets WHERE ip = $2 AND created_at > $3)",
            )
            .bind(reset.user_id)
            .bind(reset.ip)
            .bind(hour_ago)
            .fetch_one(&mut *tx)
            .await?;
            if by_user >= reset.per_user || (reset.ip.is_some() && by_address >= reset.per_address) {
                return Ok(ResetIssue::TooFrequent);
            }
            sqlx::query("DELETE FROM password_resets WHERE user_id = $1 AND created_at < $2")
                .bind(reset.user_id)
                .bind(day_ago)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "UPDATE password_resets SET expires_at = $2 WHERE user_id = $1 AND used_at IS NULL AND expires_at > $2",
            )
            .bind(reset.user_id)
            .bind(reset.now)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO password_resets (user_id, token_hash, requested_by, ip, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(reset.user_id)
            .bind(&reset.token_hash[..])
            .bind(reset.requested_by)
            .bind(reset.ip)
            .bind(reset.now)
            .bind(reset.expires_at)
            .execute(&mut *tx)
            .await?;
            if let Some(mail) = &reset.mail {
                enqueue_mail((&mut *tx).into(), self.sealer()?, mail).await?;
            }
            record_audit((&mut *tx).into(), &reset.audit).await?;
            tx.commit().await?;
            Ok(ResetIssue::Issued)
        })
    }

    /// The active user a live (unused, unexpired) link is for.
    pub async fn open_password_reset(&self, token_hash: &[u8; 32], now: Ts) -> Result<Option<ResetTarget>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT u.id AS user_id, u.brand_id, u.name, u.email FROM password_resets r
                 JOIN users u ON u.id = r.user_id
                 WHERE r.token_hash = $1 AND r.used_at IS NULL AND r.expires_at > $2 AND u.status = 'active'",
            )
            .bind(&token_hash[..])
            .bind(now)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Uses the link: of two uses at once one wins. Sets the password, ends every session of
    /// the user and records `audit(user)`, in one transaction; `None` when the link is not
    /// live (used, expired, replaced, unknown) or its user is no longer active.
    pub async fn use_password_reset(
        &self,
        token_hash: &[u8; 32],
        now: Ts,
        password_hash: &str,
        audit: impl FnOnce(&ResetTarget) -> AuditEntry,
    ) -> Result<Option<ResetTarget>, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let used: Option<i64> = sqlx::query_scalar(
                "UPDATE password_resets SET used_at = $2
                 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id",
            )
            .bind(&token_hash[..])
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(user_id) = used else {
                return Ok(None);
            };
            let target: Option<ResetTarget> = sqlx::query_as(
                "UPDATE users SET password_hash = $2 WHERE id = $1 AND status = 'active'
                 RETURNING id AS user_id, brand_id, name, email",
            )
            .bind(user_id)
            .bind(password_hash)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(target) = target else {
                return Ok(None);
            };
            end_user_sessions((&mut *tx).into(), user_id, None).await?;
            record_audit((&mut *tx).into(), &audit(&target)).await?;
            tx.commit().await?;
            Ok(Some(target))
        })
    }
}
