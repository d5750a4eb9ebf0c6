//! Two-step enrolment: offering a secret (kept sealed as `totp_pending` until confirmed, so
//! reloading the page shows the same one), confirming it with a code, and the brand's rule
//! that everyone signs in with a code.

use chrono::Utc;

use super::sessions::{new_token, LiveSession, RandomFailure};
use super::sign_in::Signed;
use crate::domain::audit::{AuditAction, AuditEntry};
use crate::domain::session::Stage;
use crate::domain::totp::{accepted_step, step_of, TotpSecret};
use crate::domain::user::{Actor, Role};
use crate::store::{SealError, StoreError};
use crate::usecases::Core;

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

/// Confirms the offered secret with a code from it. A session waiting to enrol is signed
/// in (under a new token, returned); a signed-in one stays as it is (`None`).
pub async fn confirm_enrolment(core: &Core, session: &LiveSession, code: &str) -> Result<Option<Signed>, EnrolError> {
    let Some((sealed, secret)) = pending(core, session).await? else {
        return Err(EnrolError::Stale);
    };
    let now_step = step_of(u64::try_from(Utc::now().timestamp()).unwrap_or(0));
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
    let promote = token.as_ref().map(|(_, hash)| (session.record.id, &hash[..]));
    if !core.store.confirm_totp(session.record.user_id, &sealed, step, promote, &audit).await? {
        return Err(EnrolError::Stale);
    }
    Ok(token.map(|(token, _)| Signed { token, stage: Stage::Full }))
}

#[derive(Debug, thiserror::Error)]
pub enum RequirementError {
    /// Only a partner admin may change the brand's rule.
    #[error("only partner admins may change this")]
    Forbidden,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Turns the brand's rule that everyone signs in with a two-step code on or off. Members
/// without two-step enrol at their next sign-in.
pub async fn set_totp_requirement(core: &Core, actor: &Actor, on: bool) -> Result<(), RequirementError> {
    if actor.role != Role::Admin {
        return Err(RequirementError::Forbidden);
    }
    let target = Some(format!("brand:{}", actor.brand_slug));
    let audit = AuditEntry::by(actor, AuditAction::TotpRequirementChanged, target);
    core.store.set_require_totp(actor.brand_id, on, &audit).await?;
    Ok(())
}
