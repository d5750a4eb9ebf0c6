//! Signing in: the password (with the per-account lockout and the per-address limit of
//! decisions 8.1), then the two-step code when the user has enrolled.
//!
//! An unknown email, a wrong password, a user not `active` and a user without a password
//! all fail alike ([`SignInError::Incorrect`]), each after one Argon2id verification (of a
//! dummy hash when there is nothing real to verify), so neither the answer nor its timing
//! tells them apart. A failure for an unknown email has no brand, so it has no audit entry
//! (the audit log is per brand); it is still recorded for the per-address limit.

use std::net::IpAddr;

use chrono::{TimeDelta, Utc};

use super::sessions::{new_token, LiveSession, RandomFailure};
use crate::domain::audit::{AuditAction, AuditActor, AuditEntry};
use crate::domain::lockout::{account_locked_until, address_refused_until};
use crate::domain::password;
use crate::domain::session::{stage_after_password, Stage, WRONG_CODES};
use crate::domain::totp::{accepted_step, step_of, TotpSecret};
use crate::metrics::SignIn;
use crate::store::{AccountRecord, CodeCompletion, NewSession, StoreError, Ts};
use crate::usecases::Core;

/// A session begun (or moved on): the token for the cookie and how far it got.
#[derive(Debug)]
pub struct Signed {
    /// The cookie value; only its hash is stored.
    pub token: String,
    pub stage: Stage,
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Unknown email, wrong password, or an account that cannot sign in.
    #[error("the email or password is incorrect")]
    Incorrect,
    /// The account had 5 failures within the window, or the address its limit: refused,
    /// right password or not, until the window passes.
    #[error("too many attempts, try again later")]
    Locked,
    #[error(transparent)]
    Random(#[from] RandomFailure),
    #[error("password verification did not finish: {0}")]
    Hashing(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn window(core: &Core) -> TimeDelta {
    TimeDelta::seconds(i64::try_from(core.config.signin_lock_seconds).unwrap_or(i64::MAX / 1000))
}

fn entry(account: &AccountRecord, action: AuditAction, ip: IpAddr) -> AuditEntry {
    AuditEntry {
        brand_id: account.brand_id,
        actor: AuditActor::user(account.user_id, &account.name),
        action,
        target: Some(format!("user:{}", account.user_id)),
        ip: Some(ip.to_string()),
    }
}

/// Checks `password` for `email` from `ip` and begins a session: signed in, waiting for a
/// code, or waiting for enrolment (the brand requires two-step).
pub async fn sign_in(core: &Core, email: &str, password: &str, ip: IpAddr) -> Result<Signed, SignInError> {
    let store = &core.store;
    let ip_text = ip.to_string();
    let now = Utc::now();
    let window = window(core);
    let account = store.account_by_email(email.trim()).await?;
    let since = Ts::from(now - window * 2);
    let (account_failures, address_failures) =
        store.sign_in_failures(account.as_ref().map(|a| a.user_id), &ip_text, since).await?;
    let account_failures: Vec<_> = account_failures.into_iter().map(Ts::get).collect();
    let address_failures: Vec<_> = address_failures.into_iter().map(Ts::get).collect();
    let limit = usize::try_from(core.config.signin_address_limit).unwrap_or(usize::MAX);
    let locked = account_locked_until(&account_failures, now, window).is_some()
        || address_refused_until(&address_failures, now, window, limit).is_some();
    if locked {
        if let Some(account) = &account {
            store.record_audit(&entry(account, AuditAction::SignInLocked, ip)).await?;
        }
        core.metrics.sign_in(SignIn::Locked);
        return Err(SignInError::Locked);
    }

    let stored = account.as_ref().filter(|a| a.status == "active").and_then(|a| a.password_hash.clone());
    let candidate = password.to_owned();
    let verified = tokio::task::spawn_blocking(move || match stored {
        Some(stored) => password::verify(&candidate, &stored),
        None => password::verify_dummy(&candidate),
    })
    .await
    .map_err(|e| SignInError::Hashing(e.to_string()))?;
    let account = match account {
        Some(account) if verified => account,
        other => {
            let audit = other.as_ref().map(|a| entry(a, AuditAction::SignInFailed, ip));
            store.record_sign_in_failure(other.as_ref().map(|a| a.user_id), &ip_text, audit.as_ref()).await?;
            core.metrics.sign_in(SignIn::Failed);
            return Err(SignInError::Incorrect);
        }
    };

    let stage = stage_after_password(account.totp_enrolled, account.require_totp);
    let (token, token_hash) = new_token()?;
    let (csrf, _) = new_token()?;
    let audit: Vec<_> =
        (stage == Stage::Full).then(|| entry(&account, AuditAction::SignInSucceeded, ip)).into_iter().collect();
    let session =
        NewSession { token_hash: &token_hash, user_id: account.user_id, stage, csrf_token: &csrf, ip: Some(&ip_text) };
    store.start_session(&session, &audit).await?;
    core.metrics.sign_in(SignIn::Succeeded);
    Ok(Signed { token, stage })
}

#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// Not the code of the previous, current or next step, or one already used.
    #[error("the code is incorrect")]
    Wrong,
    /// Too many wrong codes (or the session moved on): sign in again.
    #[error("too many wrong codes: sign in again")]
    SessionEnded,
    /// The stored secret does not open (another data key) or is malformed.
    #[error("the two-step secret cannot be read")]
    Unreadable,
    #[error(transparent)]
    Random(#[from] RandomFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The user's enrolled secret, unsealed.
pub(super) async fn enrolled_secret(core: &Core, user_id: i64) -> Result<Option<(TotpSecret, Option<i64>)>, CodeError> {
    let Some(record) = core.store.totp_record(user_id).await? else {
        return Ok(None);
    };
    let Some(sealed) = record.totp_secret else {
        return Ok(None);
    };
    let opened =
        core.store.sealer()?.open(user_id.to_string().as_bytes(), &sealed).map_err(|_| CodeError::Unreadable)?;
    let secret = TotpSecret::from_bytes(opened).ok_or(CodeError::Unreadable)?;
    Ok(Some((secret, record.totp_last_step)))
}

/// Checks the two-step code of a session waiting for one; signs it in under a new token.
/// A wrong code is a failed sign-in (recorded and audited); the fifth ends the session.
pub async fn verify_code(core: &Core, session: &LiveSession, code: &str) -> Result<Signed, CodeError> {
    let record = &session.record;
    if record.stage != Stage::Code {
        return Err(CodeError::SessionEnded);
    }
    let Some((secret, last_step)) = enrolled_secret(core, record.user_id).await? else {
        return Err(CodeError::SessionEnded);
    };
    let now_step = step_of(u64::try_from(Utc::now().timestamp()).unwrap_or(0));
    let last = last_step.and_then(|s| u64::try_from(s).ok());
    let step = accepted_step(&secret, code, now_step, last).and_then(|s| i64::try_from(s).ok());
    let audit = session.audit(AuditAction::SignInSucceeded);
    if let Some(step) = step {
        let (token, token_hash) = new_token()?;
        return match core.store.complete_code_sign_in(record.id, record.user_id, step, &token_hash, &audit).await? {
            CodeCompletion::SignedIn => Ok(Signed { token, stage: Stage::Full }),
            CodeCompletion::StepUsed => wrong_code(core, session).await,
            CodeCompletion::SessionGone => Err(CodeError::SessionEnded),
        };
    }
    wrong_code(core, session).await
}

async fn wrong_code(core: &Core, session: &LiveSession) -> Result<Signed, CodeError> {
    let record = &session.record;
    let ip = session.ip.to_string();
    let failed = session.audit(AuditAction::SignInFailed);
    core.store.record_sign_in_failure(Some(record.user_id), &ip, Some(&failed)).await?;
    let (wrong, _) = core.store.sign_in_failures(Some(record.user_id), &ip, record.created_at).await?;
    if wrong.len() >= WRONG_CODES {
        core.store.end_session(record.id, None).await?;
        return Err(CodeError::SessionEnded);
    }
    Err(CodeError::Wrong)
}
