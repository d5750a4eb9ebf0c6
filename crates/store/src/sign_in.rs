//! What signing in reads and writes of users: accounts by email, attempts counted against
//! the sign-in limits, password hashes, two-step secrets (sealed by the caller), accepting an invitation, and the
//! brand's two-step requirement.

use sha2::{Digest, Sha256};
use sqlx::FromRow;

use super::recovery::replace_recovery_codes;
use super::sessions::{end_user_sessions, insert_session, mark_login, promote, NewSession};
use super::{now, on_pool, record_audit, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;
use rehome_domain::clock::Clock;
use rehome_domain::session::{stage_after_password, Stage};
use rehome_domain::view::InvitationRecord;

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

/// What accepting an invitation did.
#[derive(Debug, Clone)]
pub enum Acceptance {
    /// The password is set, the member active, the invitation used, and a session begun at `stage`.
    Accepted { account: AccountRecord, stage: Stage },
    /// Unknown, used, expired, or its user removed.
    Gone,
}

/// What one attempt is counted under.
#[derive(Debug, Clone, Copy)]
pub struct AttemptKeys<'a> {
    /// The email as typed, normalised and hashed (`domain::lockout::email_key`).
    pub email_key: &'a str,
    /// The account the email names, if any (kept beside the failure, not counted by).
    pub user_id: Option<i64>,
    /// The client address.
    pub ip: &'a str,
}

/// What [`Store::reserve_sign_in_attempt`] decided.
#[derive(Debug, Clone)]
pub enum Reservation {
    /// Counted as row `id`: check the password. `email_failures` are the email's failures
    /// the decision saw, with this attempt's instant last.
    Counted { id: i64, email_failures: Vec<Ts> },
    /// The allowance is used up: nothing was counted; refuse without checking. `in_flight`:
    /// an attempt counted against it since `since_in_flight` is still being checked (a
    /// right one will be taken back).
    Refused { in_flight: bool },
}

/// A PostgreSQL advisory lock key (64 bits of a SHA-256) for one email or address.
fn advisory_key(kind: &str, key: &str) -> i64 {
    let digest = Sha256::digest(format!("rehome sign-in {kind}:{key}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
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

    /// Counts one attempt (a password, a two-step code, or the current password on the
    /// password form) before it is checked, if `allow` (given the instant, and the
    /// failures since `since` of the email and of the address, attempts in flight
    /// included; the instant read from `clock` once the locks are held) lets it be checked;
    /// else counts nothing. The read and the write are one
    /// decision for every node: under the single write connection on SQLite, and on
    /// PostgreSQL under transaction-scoped advisory locks on the email's and the address's
    /// keys. A checked attempt's row stays as its failure, or is deleted by
    /// [`Store::release_sign_in_attempt`] when it was right.
    pub async fn reserve_sign_in_attempt(
        &self,
        attempt: &AttemptKeys<'_>,
        since: Ts,
        since_in_flight: Ts,
        clock: &Clock,
        allow: impl FnOnce(Ts, &[Ts], &[Ts]) -> bool,
    ) -> Result<Reservation, StoreError> {
        let mut locks = [advisory_key("email", attempt.email_key), advisory_key("address", attempt.ip)];
        // One order for every transaction, so that two of them never wait on each other.
        locks.sort_unstable();
        let postgres = self.is_postgres();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if postgres {
                for key in locks {
                    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(key).execute(&mut *tx).await?;
                }
            }
            let email: Vec<Ts> =
                sqlx::query_scalar("SELECT at FROM sign_in_failures WHERE account_key = $1 AND at >= $2")
                    .bind(attempt.email_key)
                    .bind(since)
                    .fetch_all(&mut *tx)
                    .await?;
            let address: Vec<Ts> = sqlx::query_scalar("SELECT at FROM sign_in_failures WHERE ip = $1 AND at >= $2")
                .bind(attempt.ip)
                .bind(since)
                .fetch_all(&mut *tx)
                .await?;
            let at = Ts::from(clock.now());
            if !allow(at, &email, &address) {
                let in_flight: Option<i64> = sqlx::query_scalar(
                    "SELECT id FROM sign_in_failures
                     WHERE (account_key = $1 OR ip = $2) AND at >= $3 AND settled = $4 LIMIT 1",
                )
                .bind(attempt.email_key)
                .bind(attempt.ip)
                .bind(since_in_flight)
                .bind(false)
                .fetch_optional(&mut *tx)
                .await?;
                return Ok(Reservation::Refused { in_flight: in_flight.is_some() });
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO sign_in_failures (account_key, user_id, ip, at, settled) VALUES ($1, $2, $3, $4, $5)
                 RETURNING id",
            )
            .bind(attempt.email_key)
            .bind(attempt.user_id)
            .bind(attempt.ip)
            .bind(at)
            .bind(false)
            .fetch_one(&mut *tx)
            .await?;
            tx.commit().await?;
            let mut email_failures = email;
            email_failures.push(at);
            Ok(Reservation::Counted { id, email_failures })
        })
    }

    /// Settles an attempt whose password (or code) was wrong: a failure, no longer in flight.
    pub async fn settle_sign_in_attempt(&self, id: i64) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("UPDATE sign_in_failures SET settled = $1 WHERE id = $2")
                .bind(true)
                .bind(id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Uncounts an attempt whose password (or code) was right.
    pub async fn release_sign_in_attempt(&self, id: i64) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("DELETE FROM sign_in_failures WHERE id = $1").bind(id).execute(pool).await?;
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
    /// step, and `recovery` (hashes) their recovery codes; with `promote_session` (a session
    /// waiting to enrol, and its new token hash) the session is signed in too. `audit` is
    /// appended. False when the offer changed meanwhile.
    pub async fn confirm_totp(
        &self,
        user_id: i64,
        pending: &[u8],
        step: i64,
        recovery: &[[u8; 32]],
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
            replace_recovery_codes((&mut *tx).into(), user_id, recovery).await?;
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
