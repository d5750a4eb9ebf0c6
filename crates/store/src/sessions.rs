//! Dashboard sessions: only the SHA-256 of each session token is stored. A session is
//! looked up with its user and brand (status, role, two-step) in one query, so every node
//! sees a sign-out, a password change or a removal at once.

use sqlx::FromRow;

use super::{now, on_conn, on_pool, record_audit, Conn, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;
use rehome_domain::session::{Stage, ABSOLUTE, IDLE};

/// A session to begin.
#[derive(Debug, Clone, Copy)]
pub struct NewSession<'a> {
    pub token_hash: &'a [u8],
    pub user_id: i64,
    pub stage: Stage,
    /// The token every form of the session carries.
    pub csrf_token: &'a str,
    pub ip: Option<&'a str>,
}

/// A session not ended, with what the dashboard needs of its user and brand.
#[derive(Debug, Clone, FromRow)]
pub struct SessionRecord {
    pub id: i64,
    pub user_id: i64,
    #[sqlx(try_from = "String")]
    pub stage: Stage,
    pub csrf_token: String,
    pub created_at: Ts,
    pub last_seen_at: Ts,
    pub brand_id: i64,
    pub brand_slug: String,
    pub brand_name: String,
    /// The brand's time zone, as stored (an IANA name the settings page accepted).
    pub brand_time_zone: String,
    pub name: String,
    pub email: String,
    pub role: String,
    pub status: String,
    pub totp_enrolled: bool,
    pub require_totp: bool,
}

/// One of a user's own sessions, as their account page lists it.
#[derive(Debug, Clone, FromRow)]
pub struct OwnSession {
    pub id: i64,
    pub created_at: Ts,
    pub last_seen_at: Ts,
    pub ip: Option<String>,
}

/// What proves the second step of a sign-in.
#[derive(Debug, Clone, Copy)]
pub enum CodeProof<'a> {
    /// The two-step step whose code was given.
    Step(i64),
    /// The SHA-256 of a recovery code given instead.
    Recovery(&'a [u8; 32]),
}

/// What finishing a sign-in with a two-step code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeCompletion {
    /// The step was recorded as used and the session is now signed in.
    SignedIn,
    /// That step (or a later one) was already used: the code is refused.
    StepUsed,
    /// The session ended or moved on meanwhile.
    SessionGone,
}

/// Inserts a session on `conn` (the caller's transaction); answers its id.
pub(super) async fn insert_session(conn: Conn<'_>, session: &NewSession<'_>) -> Result<i64, StoreError> {
    let at = now();
    on_conn!(conn, |c| {
        Ok(sqlx::query_scalar(
            "INSERT INTO sessions (token_hash, user_id, stage, csrf_token, ip, created_at, last_seen_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id",
        )
        .bind(session.token_hash)
        .bind(session.user_id)
        .bind(session.stage.as_str())
        .bind(session.csrf_token)
        .bind(session.ip)
        .bind(at)
        .fetch_one(&mut *c)
        .await?)
    })
}

/// Records a completed sign-in on the user (`last_login_at`) in the caller's transaction.
pub(super) async fn mark_login(conn: Conn<'_>, user_id: i64) -> Result<(), StoreError> {
    on_conn!(conn, |c| {
        sqlx::query("UPDATE users SET last_login_at = $2 WHERE id = $1")
            .bind(user_id)
            .bind(now())
            .execute(&mut *c)
            .await?;
        Ok(())
    })
}

/// Ends every live session of `user_id` but `keep` in the caller's transaction.
pub(super) async fn end_user_sessions(conn: Conn<'_>, user_id: i64, keep: Option<i64>) -> Result<u64, StoreError> {
    on_conn!(conn, |c| {
        Ok(sqlx::query(
            "UPDATE sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL AND ($3 IS NULL OR id <> $3)",
        )
        .bind(user_id)
        .bind(now())
        .bind(keep)
        .execute(&mut *c)
        .await?
        .rows_affected())
    })
}

const SESSION_COLUMNS: &str = "s.id, s.user_id, s.stage, s.csrf_token, s.created_at, s.last_seen_at, u.brand_id,
    b.slug AS brand_slug, b.name AS brand_name, b.time_zone AS brand_time_zone, u.name, u.email, u.role, u.status,
    u.totp_secret IS NOT NULL AS totp_enrolled, b.require_totp";

impl Store {
    /// Begins a session; with `audit` entries (a completed sign-in) also records the login.
    pub async fn start_session(&self, session: &NewSession<'_>, audit: &[AuditEntry]) -> Result<i64, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let id = insert_session((&mut *tx).into(), session).await?;
            if session.stage == Stage::Full {
                mark_login((&mut *tx).into(), session.user_id).await?;
            }
            for entry in audit {
                record_audit((&mut *tx).into(), entry).await?;
            }
            tx.commit().await?;
            Ok(id)
        })
    }

    /// The session whose token hashes to `token_hash`, unless it was ended. Expiry is the
    /// caller's to judge (from `created_at` and `last_seen_at`).
    pub async fn session_by_token(&self, token_hash: &[u8]) -> Result<Option<SessionRecord>, StoreError> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s JOIN users u ON u.id = s.user_id JOIN brands b ON b.id = u.brand_id
             WHERE s.token_hash = $1 AND s.ended_at IS NULL"
        );
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(token_hash).fetch_optional(pool).await?))
    }

    /// Records `at` as the session's last sight, unless a request since `not_after` did.
    pub async fn touch_session(&self, id: i64, at: Ts, not_after: Ts) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at <= $3")
                .bind(id)
                .bind(at)
                .bind(not_after)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// The user's signed-in sessions not ended and not expired at `now` (idle or too old),
    /// most recently seen first.
    pub async fn live_sessions(&self, user_id: i64, now: Ts) -> Result<Vec<OwnSession>, StoreError> {
        let idle = Ts::from(now.get() - IDLE);
        let oldest = Ts::from(now.get() - ABSOLUTE);
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT id, created_at, last_seen_at, ip FROM sessions
                 WHERE user_id = $1 AND stage = 'full' AND ended_at IS NULL AND last_seen_at > $2 AND created_at > $3
                 ORDER BY last_seen_at DESC, id DESC LIMIT 50",
            )
            .bind(user_id)
            .bind(idle)
            .bind(oldest)
            .fetch_all(pool)
            .await?)
        })
    }

    /// Ends every session of the user but `keep`, with `audit`; answers how many ended.
    pub async fn end_other_sessions(&self, user_id: i64, keep: i64, audit: &AuditEntry) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let ended = end_user_sessions((&mut *tx).into(), user_id, Some(keep)).await?;
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(ended)
        })
    }

    /// Ends a session (sign-out, expiry found, too many wrong codes); false when it had ended.
    pub async fn end_session(&self, id: i64, audit: Option<&AuditEntry>) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let ended = sqlx::query("UPDATE sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL")
                .bind(id)
                .bind(now())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if let (true, Some(entry)) = (ended, audit) {
                record_audit((&mut *tx).into(), entry).await?;
            }
            tx.commit().await?;
            Ok(ended)
        })
    }

    /// Finishes a sign-in waiting for a code with `proof`, used up in the same transaction:
    /// a two-step step recorded as the user's last used one (only if later than the last,
    /// so two concurrent uses of one code cannot both pass), or an unused recovery code
    /// (by its hash) marked used. Then the session is signed in under a new token hash, the
    /// login recorded and `audit` appended. `StepUsed` when the proof was already used (or
    /// is no unused recovery code of the user).
    pub async fn complete_code_sign_in(
        &self,
        session_id: i64,
        user_id: i64,
        proof: CodeProof<'_>,
        new_token_hash: &[u8],
        audit: &[AuditEntry],
    ) -> Result<CodeCompletion, StoreError> {
        let at = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let used = match proof {
                CodeProof::Step(step) => sqlx::query(
                    "UPDATE users SET totp_last_step = $2
                     WHERE id = $1 AND totp_secret IS NOT NULL AND (totp_last_step IS NULL OR totp_last_step < $2)",
                )
                .bind(user_id)
                .bind(step),
                CodeProof::Recovery(hash) => sqlx::query(
                    "UPDATE recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL",
                )
                .bind(user_id)
                .bind(&hash[..])
                .bind(at),
            }
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if used != 1 {
                return Ok(CodeCompletion::StepUsed);
            }
            if !promote((&mut *tx).into(), session_id, Stage::Code, new_token_hash).await? {
                return Ok(CodeCompletion::SessionGone);
            }
            mark_login((&mut *tx).into(), user_id).await?;
            for entry in audit {
                record_audit((&mut *tx).into(), entry).await?;
            }
            tx.commit().await?;
            Ok(CodeCompletion::SignedIn)
        })
    }
}

/// Moves a live session from `from` to `full` under a new token hash (a fresh token at
/// each step up, so a token seen before signing in is worth nothing after); false when the
/// session ended or is no longer at `from`.
pub(super) async fn promote(conn: Conn<'_>, id: i64, from: Stage, new_token_hash: &[u8]) -> Result<bool, StoreError> {
    on_conn!(conn, |c| {
        Ok(sqlx::query(
            "UPDATE sessions SET stage = 'full', token_hash = $3, last_seen_at = $4
             WHERE id = $1 AND stage = $2 AND ended_at IS NULL",
        )
        .bind(id)
        .bind(from.as_str())
        .bind(new_token_hash)
        .bind(now())
        .execute(&mut *c)
        .await?
        .rows_affected()
            == 1)
    })
}
