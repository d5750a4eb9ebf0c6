//! What signing in reads and writes of users: accounts by email, failed attempts, password
//! hashes, two-step secrets (sealed by the caller), accepting an invitation, and the
//! brand's two-step requirement.

use sqlx::FromRow;

use super::sessions::{end_user_sessions, insert_session, mark_login, promote, NewSession};
use super::{now, on_pool, record_audit, Store, StoreError, Ts};
use crate::domain::audit::AuditEntry;
use crate::domain::session::{stage_after_password, Stage};

/// A live (not removed) user found by email, with what signing in decides on.
#[derive(Debug, Clone, FromRow)]
pub struct AccountRecord {
    pub user_id: i64,
    pub brand_id: i64,
    pub brand_slug: String,
    pub name: String,
    pub email: String,
    pub role: String,
    pub status: String,
    pub password_hash: Option<String>,
    pub totp_enrolled: bool,
    pub require_totp: bool,
}

/// A user's two-step secrets, sealed as stored.
#[derive(Debug, Clone, FromRow)]
pub struct TotpRecord {
    pub totp_secret: Option<Vec<u8>>,
    pub totp_pending: Option<Vec<u8>>,
    pub totp_last_step: Option<i64>,
}

/// An invitation that can still be accepted, with its user.
#[derive(Debug, Clone, FromRow)]
pub struct InvitationRecord {
    pub user_id: i64,
    pub email: String,
    pub name: String,
    pub brand_name: String,
    pub expires_at: Ts,
}

/// What accepting an invitation did.
#[derive(Debug, Clone)]
pub enum Acceptance {
    /// The password is set, the member active, the invitation used, and a session begun at `stage`.
    Accepted { account: AccountRecord, stage: Stage },
    /// Unknown, used, expired, or its user removed.
    Gone,
}

const ACCOUNT_COLUMNS: &str = "u.id AS user_id, u.brand_id, b.slug AS brand_slug, u.name, u.email, u.role,
    u.status, u.password_hash, u.totp_secret IS NOT NULL AS totp_enrolled, b.require_totp";

impl Store {
    /// The user (not removed) whose email is `email`, ignoring ASCII case.
    pub async fn account_by_email(&self, email: &str) -> Result<Option<AccountRecord>, StoreError> {
        let sql = format!(
            "SELECT {ACCOUNT_COLUMNS} FROM users u JOIN brands b ON b.id = u.brand_id
             WHERE lower(u.email) = lower($1) AND u.status <> 'removed'"
        );
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(email).fetch_optional(pool).await?))
    }

    /// The user `user_id` as signing in sees it (removed users included).
    pub async fn account_by_id(&self, user_id: i64) -> Result<Option<AccountRecord>, StoreError> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM users u JOIN brands b ON b.id = u.brand_id WHERE u.id = $1");
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(user_id).fetch_optional(pool).await?))
    }

    /// Instants of failed sign-ins since `since`: the account's (when known) and the address's.
    pub async fn sign_in_failures(
        &self,
        user_id: Option<i64>,
        ip: &str,
        since: Ts,
    ) -> Result<(Vec<Ts>, Vec<Ts>), StoreError> {
        on_pool!(self, read, |pool| {
            let account = match user_id {
                Some(id) => {
                    sqlx::query_scalar("SELECT at FROM sign_in_failures WHERE user_id = $1 AND at >= $2")
                        .bind(id)
                        .bind(since)
                        .fetch_all(pool)
                        .await?
                }
                None => Vec::new(),
            };
            let address = sqlx::query_scalar("SELECT at FROM sign_in_failures WHERE ip = $1 AND at >= $2")
                .bind(ip)
                .bind(since)
                .fetch_all(pool)
                .await?;
            Ok((account, address))
        })
    }

    /// Records a failed attempt (a wrong password or code) and its audit entry, if any.
    pub async fn record_sign_in_failure(
        &self,
        user_id: Option<i64>,
        ip: &str,
        audit: Option<&AuditEntry>,
    ) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("INSERT INTO sign_in_failures (user_id, ip, at) VALUES ($1, $2, $3)")
                .bind(user_id)
                .bind(ip)
                .bind(now())
                .execute(&mut *tx)
                .await?;
            if let Some(entry) = audit {
                record_audit((&mut *tx).into(), entry).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    pub async fn password_hash(&self, user_id: i64) -> Result<Option<String>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(pool)
                .await?
                .flatten())
        })
    }

    /// Sets a user's password hash, ends their sessions but `keep`, and appends `audit`;
    /// false when there is no such user.
    pub async fn set_password(
        &self,
        user_id: i64,
        password_hash: &str,
        keep: Option<i64>,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let set = sqlx::query("UPDATE users SET password_hash = $2 WHERE id = $1")
                .bind(user_id)
                .bind(password_hash)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if set != 1 {
                return Ok(false);
            }
            end_user_sessions((&mut *tx).into(), user_id, keep).await?;
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    pub async fn totp_record(&self, user_id: i64) -> Result<Option<TotpRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as("SELECT totp_secret, totp_pending, totp_last_step FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// Offers a (sealed) secret for enrolment; false when the user is already enrolled.
    pub async fn set_totp_pending(&self, user_id: i64, sealed: &[u8]) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            Ok(sqlx::query("UPDATE users SET totp_pending = $2 WHERE id = $1 AND totp_secret IS NULL")
                .bind(user_id)
                .bind(sealed)
                .execute(pool)
                .await?
                .rows_affected()
                == 1)
        })
    }

    /// Makes the offered secret `pending` (as read) the user's, with `step` as its last used
    /// step; with `promote_session` (a session waiting to enrol, and its new token hash) the
    /// session is signed in too. `audit` is appended. False when the offer changed meanwhile.
    pub async fn confirm_totp(
        &self,
        user_id: i64,
        pending: &[u8],
        step: i64,
        promote_session: Option<(i64, &[u8])>,
        audit: &[AuditEntry],
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let confirmed = sqlx::query(
                "UPDATE users SET totp_secret = totp_pending, totp_pending = NULL, totp_last_step = $3
                 WHERE id = $1 AND totp_secret IS NULL AND totp_pending = $2",
            )
            .bind(user_id)
            .bind(pending)
            .bind(step)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if confirmed != 1 {
                return Ok(false);
            }
            if let Some((session_id, new_token_hash)) = promote_session {
                if !promote((&mut *tx).into(), session_id, Stage::Enrol, new_token_hash).await? {
                    return Ok(false);
                }
                mark_login((&mut *tx).into(), user_id).await?;
            }
            for entry in audit {
                record_audit((&mut *tx).into(), entry).await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Turns the brand's two-step requirement on or off and appends `audit`.
    pub async fn set_require_totp(&self, brand_id: i64, on: bool, audit: &AuditEntry) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE brands SET require_totp = $2 WHERE id = $1")
                .bind(brand_id)
                .bind(on)
                .execute(&mut *tx)
                .await?;
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// The invitation whose token hashes to `token_hash`, if it can still be accepted.
    pub async fn open_invitation(&self, token_hash: &[u8]) -> Result<Option<InvitationRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT i.user_id, u.email, u.name, b.name AS brand_name, i.expires_at
                 FROM invitations i JOIN users u ON u.id = i.user_id JOIN brands b ON b.id = u.brand_id
                 WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > $2 AND u.status <> 'removed'",
            )
            .bind(token_hash)
            .bind(now())
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Accepts an invitation once: marks it used (only if unused and unexpired, so of two
    /// concurrent acceptances one wins), sets the password, makes the member active, ends
    /// any sessions they had, begins `session` at the stage two-step calls for, and appends
    /// the entries `audit` makes of the account and stage.
    pub async fn accept_invitation(
        &self,
        token_hash: &[u8],
        password_hash: &str,
        session: NewSession<'_>,
        audit: impl FnOnce(&AccountRecord, Stage) -> Vec<AuditEntry>,
    ) -> Result<Acceptance, StoreError> {
        let at = now();
        let account_sql = format!(
            "SELECT {ACCOUNT_COLUMNS} FROM users u JOIN brands b ON b.id = u.brand_id
             WHERE u.id = $1 AND u.status <> 'removed'"
        );
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let user_id: Option<i64> = sqlx::query_scalar(
                "UPDATE invitations SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2
                 RETURNING user_id",
            )
            .bind(token_hash)
            .bind(at)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(user_id) = user_id else {
                return Ok(Acceptance::Gone);
            };
            let account: Option<AccountRecord> =
                sqlx::query_as(&account_sql).bind(user_id).fetch_optional(&mut *tx).await?;
            let Some(account) = account else {
                return Ok(Acceptance::Gone);
            };
            sqlx::query("UPDATE users SET password_hash = $2, status = 'active' WHERE id = $1")
                .bind(user_id)
                .bind(password_hash)
                .execute(&mut *tx)
                .await?;
            end_user_sessions((&mut *tx).into(), user_id, None).await?;
            let stage = stage_after_password(account.totp_enrolled, account.require_totp);
            insert_session((&mut *tx).into(), &NewSession { user_id, stage, ..session }).await?;
            if stage == Stage::Full {
                mark_login((&mut *tx).into(), user_id).await?;
            }
            for entry in audit(&account, stage) {
                record_audit((&mut *tx).into(), &entry).await?;
            }
            tx.commit().await?;
            Ok(Acceptance::Accepted { account, stage })
        })
    }
}
