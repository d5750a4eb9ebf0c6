//! Two-step enrolment: offering a secret (kept sealed as `totp_pending` until confirmed, so
//! reloading the page shows the same one), confirming it with a code, and the brand's rule
//! that everyone signs in with a code.

use super::passwords::{check_password, PasswordCheckError};
use super::sessions::{new_token, LiveSession, RandomFailure};
use super::sign_in::{enrolled_secret, CodeError, Signed};
use crate::usecases::Core;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::recovery::{RecoveryCode, RECOVERY_CODES};
use rehome_domain::session::Stage;
use rehome_domain::totp::{accepted_step, step_of, TotpSecret};
use rehome_domain::user::Admin;
use rehome_store::{SealError, StoreError};

/// What the enrolment page shows.
#[derive(Debug)]
pub enum Offer {
    /// The user already signs in with a code.
    Enrolled,
    /// A secret to add to an authenticator app.
    Pending {
        /// Base32, for typing in.
        secret: String,
        /// `otpauth://totp/rehome:<email>?secret=…&issuer=rehome`, for the QR code.
        url: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum EnrolError {
    /// Not the code of the offered secret now.
    #[error("the code is incorrect")]
    WrongCode,
    /// Already enrolled, or the offer changed meanwhile (another tab): reload.
    #[error("two-step sign-in is already on, or the offer changed")]
    Stale,
    #[error(transparent)]
    Random(#[from] RandomFailure),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn aad(user_id: i64) -> Vec<u8> {
    user_id.to_string().into_bytes()
}

/// The pending secret (as stored, sealed) and its plain form, offering a new one if none
/// opens.
async fn pending(core: &Core, session: &LiveSession) -> Result<Option<(Vec<u8>, TotpSecret)>, EnrolError> {
    let user_id = session.record.user_id;
    let record = core.store.totp_record(user_id).await?;
    let Some(record) = record.filter(|r| r.totp_secret.is_none()) else {
        return Ok(None);
    };
    let sealer = core.store.sealer()?;
    if let Some(sealed) = record.totp_pending {
        let opened = sealer.open(&aad(user_id), &sealed).ok().and_then(TotpSecret::from_bytes);
        if let Some(secret) = opened {
            return Ok(Some((sealed, secret)));
        }
    }
    let secret = TotpSecret::generate().map_err(RandomFailure::from)?;
    let sealed = sealer.seal(&aad(user_id), secret.as_bytes())?;
    if !core.store.set_totp_pending(user_id, &sealed).await? {
        return Ok(None);
    }
    Ok(Some((sealed, secret)))
}

/// The secret offered to the session's user (the same one until confirmed).
pub async fn offer(core: &Core, session: &LiveSession) -> Result<Offer, EnrolError> {
    Ok(match pending(core, session).await? {
        None => Offer::Enrolled,
        Some((_, secret)) => Offer::Pending { secret: secret.base32(), url: secret.otpauth_url(&session.record.email) },
    })
}

/// Two-step sign-in set up: the recovery codes to show once and, for a session that was
/// waiting to enrol, its new token.
#[derive(Debug)]
pub struct Enrolled {
    /// A session waiting to enrol is signed in under a new token; a signed-in one stays as
    /// it is (`None`).
    pub signed: Option<Signed>,
    /// Shown this once; only their hashes are kept.
    pub recovery_codes: Vec<RecoveryCode>,
}

/// Confirms the offered secret with a code from it, and makes the user's recovery codes.
pub async fn confirm_enrolment(core: &Core, session: &LiveSession, code: &str) -> Result<Enrolled, EnrolError> {
    let Some((sealed, secret)) = pending(core, session).await? else {
        return Err(EnrolError::Stale);
    };
    let now_step = step_of(u64::try_from(core.clock.now().timestamp()).unwrap_or(0));
    let step = accepted_step(&secret, code, now_step, None).ok_or(EnrolError::WrongCode)?;
    let step = i64::try_from(step).map_err(|_| EnrolError::WrongCode)?;
    let mut audit = vec![session.audit(AuditAction::TotpEnrolled)];
    let signing_in = session.stage() == Stage::Enrol;
    let token = if signing_in {
        audit.push(session.audit(AuditAction::SignInSucceeded));
        Some(new_token()?)
    } else {
        None
    };
    let recovery_codes = RecoveryCode::generate_set(RECOVERY_CODES).map_err(RandomFailure::from)?;
    let hashes: Vec<[u8; 32]> = recovery_codes.iter().map(RecoveryCode::hash).collect();
    let promote = token.as_ref().map(|(_, hash)| (session.record.id, &hash[..]));
    if !core.store.confirm_totp(session.record.user_id, &sealed, step, &hashes, promote, &audit).await? {
        return Err(EnrolError::Stale);
    }
    Ok(Enrolled { signed: token.map(|(token, _)| Signed { token, stage: Stage::Full }), recovery_codes })
}

/// Why a change to one's own two-step sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum TwoStepChangeError {
    #[error(transparent)]
    Password(#[from] PasswordCheckError),
    /// Neither the current two-step code nor an unused recovery code.
    #[error("the two-step code is incorrect")]
    WrongCode,
    /// The user has no two-step sign-in (turned off meanwhile, or reset by an admin).
    #[error("two-step sign-in is not on")]
    NotEnrolled,
    /// The brand requires two-step sign-in of everyone: it cannot be turned off.
    #[error("your brand requires two-step sign-in")]
    Required,
    #[error(transparent)]
    Code(#[from] CodeError),
    #[error(transparent)]
    Random(#[from] RandomFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How many unused recovery codes the user has.
pub async fn recovery_codes_left(core: &Core, session: &LiveSession) -> Result<i64, StoreError> {
    core.store.recovery_codes_left(session.record.user_id).await
}

/// A new set of ten recovery codes, the current password given; the old codes stop
/// working. Answers the codes, to show this once.
pub async fn renew_recovery_codes(
    core: &Core,
    session: &LiveSession,
    password: &str,
) -> Result<Vec<RecoveryCode>, TwoStepChangeError> {
    if !session.record.totp_enrolled {
        return Err(TwoStepChangeError::NotEnrolled);
    }
    let attempt = check_password(core, session, password, AuditAction::SignInFailed, AuditAction::SignInLocked).await?;
    attempt.uncount(core).await?;
    let codes = RecoveryCode::generate_set(RECOVERY_CODES).map_err(RandomFailure::from)?;
    let hashes: Vec<[u8; 32]> = codes.iter().map(RecoveryCode::hash).collect();
    let audit = session.audit(AuditAction::RecoveryCodesRenewed);
    if !core.store.renew_recovery_codes(session.record.user_id, &hashes, &audit).await? {
        return Err(TwoStepChangeError::NotEnrolled);
    }
    Ok(codes)
}

/// Turns the user's own two-step sign-in off, given the current password and a two-step
/// (or recovery) code; refused while the brand requires two-step sign-in. The password and
/// the code are one attempt against the sign-in limits: it counts as a failure unless both
/// are right.
pub async fn turn_off(
    core: &Core,
    session: &LiveSession,
    password: &str,
    code: &str,
) -> Result<(), TwoStepChangeError> {
    if !session.record.totp_enrolled {
        return Err(TwoStepChangeError::NotEnrolled);
    }
    if session.record.require_totp {
        return Err(TwoStepChangeError::Required);
    }
    let attempt = check_password(core, session, password, AuditAction::SignInFailed, AuditAction::SignInLocked).await?;
    let user_id = session.record.user_id;
    let right = match RecoveryCode::parse(code) {
        Some(recovery) => core.store.has_recovery_code(user_id, &recovery.hash()).await?,
        None => {
            let Some((secret, last_step)) = enrolled_secret(core, user_id).await? else {
                attempt.uncount(core).await?;
                return Err(TwoStepChangeError::NotEnrolled);
            };
            let now_step = step_of(u64::try_from(core.clock.now().timestamp()).unwrap_or(0));
            accepted_step(&secret, code, now_step, last_step.and_then(|s| u64::try_from(s).ok())).is_some()
        }
    };
    if !right {
        attempt.failed(core).await?;
        core.store.record_audit(&session.audit(AuditAction::SignInFailed)).await?;
        return Err(TwoStepChangeError::WrongCode);
    }
    attempt.uncount(core).await?;
    let audit = session.audit(AuditAction::TotpDisabled);
    if !core.store.clear_totp(session.record.brand_id, user_id, false, &audit).await? {
        return Err(TwoStepChangeError::NotEnrolled);
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    /// Their own is turned off on their account page, with a code.
    #[error("reset your own two-step sign-in from your account page")]
    OwnAccount,
    /// Unknown, removed, another brand's user, or one without two-step sign-in.
    #[error("no member with two-step sign-in has this id")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An admin resets a member's two-step sign-in (a lost phone and no recovery code): the
/// secret and recovery codes go and every session of the member ends; they set two-step
/// up again after their next sign-in (at once when the brand requires it). Audited
/// `two_step.reset` with the member as target.
pub async fn reset_member(core: &Core, actor: &Admin, user_id: i64) -> Result<(), ResetError> {
    if actor.user_id == user_id {
        return Err(ResetError::OwnAccount);
    }
    let audit = AuditEntry::by(actor, AuditAction::TotpReset, Some(format!("user:{user_id}")));
    if !core.store.clear_totp(actor.brand_id, user_id, true, &audit).await? {
        return Err(ResetError::NotFound);
    }
    Ok(())
}

/// Turns the brand's rule that everyone signs in with a two-step code on or off. Members
/// without two-step enrol at their next sign-in.
pub async fn set_totp_requirement(core: &Core, actor: &Admin, on: bool) -> Result<(), StoreError> {
    let target = Some(format!("brand:{}", actor.brand_slug));
    let audit = AuditEntry::by(actor, AuditAction::TotpRequirementChanged, target);
    core.store.set_require_totp(actor.brand_id, on, &audit).await?;
    Ok(())
}
