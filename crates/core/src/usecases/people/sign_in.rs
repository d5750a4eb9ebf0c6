//! Signing in: the password (with the per-email lockout and the per-address limit of
//! decisions 8.1), then the two-step code when the user has enrolled.
//!
//! An unknown email, a wrong password, a user not `active` and a user without a password
//! all fail alike ([`SignInError::Incorrect`]), each after one Argon2id verification (of a
//! dummy hash when there is nothing real to verify), so neither the answer nor its timing
//! tells them apart; and they lock alike, since failures are counted by the email as typed.
//! A failure for an unknown email has no brand, so it has no audit entry (the audit log is
//! per brand); it still counts for its email and its address.
//!
//! Every attempt is counted before its password is checked (`attempts`), so a burst checks
//! at most the allowance; what can never be a password (empty, too long) is answered first,
//! checking nothing and counting nothing.

use std::net::IpAddr;

use chrono::Utc;

use super::attempts::Attempt;
use super::password_pool::HashingError;
use super::sessions::{new_token, LiveSession, RandomFailure};
use crate::metrics::SignIn;
use crate::usecases::Core;
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::lockout::email_key;
use rehome_domain::password::Password;
use rehome_domain::recovery::RecoveryCode;
use rehome_domain::session::{stage_after_password, Stage, WRONG_CODES};
use rehome_domain::totp::{accepted_step, step_of, TotpSecret};
use rehome_store::{AccountRecord, CodeCompletion, CodeProof, NewSession, StoreError};

/// Longest email worth looking up (RFC 5321 allows 254 characters in a path; no account
/// has a longer one).
const MAX_EMAIL_CHARS: usize = 320;

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
    /// The email had 5 failures within the window, or the address its limit: refused,
    /// right password or not, until the window passes: `until`, when the limits say.
    #[error("too many attempts, try again later")]
    Locked { until: Option<chrono::DateTime<Utc>> },
    /// Every password worker stayed busy: nothing was checked or counted.
    #[error("too many sign-ins at this moment")]
    Busy,
    #[error(transparent)]
    Random(#[from] RandomFailure),
    #[error("password verification did not finish: {0}")]
    Hashing(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<HashingError> for SignInError {
    fn from(e: HashingError) -> Self {
        match e {
            HashingError::Busy => Self::Busy,
            other => Self::Hashing(other.to_string()),
        }
    }
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
    let typed = email.trim();
    if typed.is_empty() || typed.chars().count() > MAX_EMAIL_CHARS || !Password::could_be(password) {
        return Err(SignInError::Incorrect);
    }
    let account = store.account_by_email(typed).await?;
    let user_id = account.as_ref().map(|a| a.user_id);
    let attempt = match Attempt::begin_or_until(core, &email_key(typed), user_id, ip).await? {
        Ok(attempt) => attempt,
        Err(until) => {
            if let Some(account) = &account {
                store.record_audit(&entry(account, AuditAction::SignInLocked, ip)).await?;
            }
            core.metrics.sign_in(SignIn::Locked);
            return Err(SignInError::Locked { until });
        }
    };

    let stored = account.as_ref().filter(|a| a.status == "active").and_then(|a| a.password_hash.clone());
    let verified = match core.passwords.verify(password, stored).await {
        Ok(verified) => verified,
        Err(e) => {
            attempt.uncount(core).await?;
            return Err(e.into());
        }
    };
    let account = match account {
        Some(account) if verified => account,
        other => {
            attempt.failed(core).await?;
            if let Some(account) = &other {
                store.record_audit(&entry(account, AuditAction::SignInFailed, ip)).await?;
            }
            core.metrics.sign_in(SignIn::Failed);
            return Err(SignInError::Incorrect);
        }
    };
    attempt.uncount(core).await?;

    let stage = stage_after_password(account.totp_enrolled, account.require_totp);
    let (token, token_hash) = new_token()?;
    let (csrf, _) = new_token()?;
    let audit: Vec<_> =
        (stage == Stage::Full).then(|| entry(&account, AuditAction::SignInSucceeded, ip)).into_iter().collect();
    let ip_text = ip.to_string();
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

/// Checks the two-step code (or an unused recovery code, which is then used up) of a
/// session waiting for one; signs it in under a new token.
/// A wrong code is a failed sign-in of the user's email (counted before it is checked, and
/// audited); the fifth since the session began ends the session, and so does an attempt
/// the limits refuse.
pub async fn verify_code(core: &Core, session: &LiveSession, code: &str) -> Result<Signed, CodeError> {
    let record = &session.record;
    if record.stage != Stage::Code {
        return Err(CodeError::SessionEnded);
    }
    let Some((secret, last_step)) = enrolled_secret(core, record.user_id).await? else {
        return Err(CodeError::SessionEnded);
    };
    let Some(attempt) = Attempt::begin(core, &email_key(&record.email), Some(record.user_id), session.ip).await? else {
        core.store.end_session(record.id, None).await?;
        return Err(CodeError::SessionEnded);
    };
    let (token, token_hash) = new_token()?;
    let recovery = RecoveryCode::parse(code).map(|r| r.hash());
    let proof = match &recovery {
        Some(hash) => Some(CodeProof::Recovery(hash)),
        None => {
            let now_step = step_of(u64::try_from(core.clock.now().timestamp()).unwrap_or(0));
            let last = last_step.and_then(|s| u64::try_from(s).ok());
            accepted_step(&secret, code, now_step, last).and_then(|s| i64::try_from(s).ok()).map(CodeProof::Step)
        }
    };
    let audit: Vec<AuditEntry> = recovery
        .is_some()
        .then(|| session.audit(AuditAction::RecoveryCodeUsed))
        .into_iter()
        .chain([session.audit(AuditAction::SignInSucceeded)])
        .collect();
    let completion = match proof {
        Some(proof) => core.store.complete_code_sign_in(record.id, record.user_id, proof, &token_hash, &audit).await?,
        None => CodeCompletion::StepUsed,
    };
    match completion {
        CodeCompletion::SignedIn => {
            attempt.uncount(core).await?;
            return Ok(Signed { token, stage: Stage::Full });
        }
        CodeCompletion::StepUsed => {}
        CodeCompletion::SessionGone => {
            attempt.uncount(core).await?;
            return Err(CodeError::SessionEnded);
        }
    }
    wrong_code(core, session, attempt).await
}

async fn wrong_code(core: &Core, session: &LiveSession, attempt: Attempt) -> Result<Signed, CodeError> {
    let record = &session.record;
    let began = record.created_at.get();
    let wrong = attempt.email_failures.iter().filter(|at| **at >= began).count();
    attempt.failed(core).await?;
    core.store.record_audit(&session.audit(AuditAction::SignInFailed)).await?;
    if wrong >= WRONG_CODES {
        core.store.end_session(record.id, None).await?;
        return Err(CodeError::SessionEnded);
    }
    Err(CodeError::Wrong)
}
