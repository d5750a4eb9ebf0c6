//! Accepting an invitation: the person opens the link, sets a password, and is signed in
//! (or asked to enrol in two-step first when the brand requires it). Single use: of two
//! acceptances of one link, one wins; the other finds it used.

use std::net::IpAddr;

use super::password_pool::HashingError;
use super::sessions::{new_token, RandomFailure};
use super::sign_in::Signed;
use crate::usecases::Core;
use rehome_domain::apikey::hash_secret;
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::password::Password;
use rehome_domain::session::Stage;
use rehome_domain::view::InvitationRecord;
use rehome_store::{Acceptance, NewSession, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// Unknown, used, expired (72 h), or its member removed.
    #[error("this invitation has been used or has expired")]
    Gone,
    /// Not 12 to 128 characters, or only spaces: `password_invalid`.
    #[error("a password has 12 to 128 characters, not only spaces")]
    Invalid,
    #[error("the passwords do not match")]
    Mismatch,
    #[error(transparent)]
    Random(#[from] RandomFailure),
    #[error(transparent)]
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The invitation of `token` if it can still be accepted.
pub async fn invitation(core: &Core, token: &str) -> Result<Option<InvitationRecord>, StoreError> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    core.store.open_invitation(&hash_secret(token)).await
}

/// Sets the invited member's password, makes them active and signs them in.
pub async fn accept_invitation(
    core: &Core,
    token: &str,
    password: &str,
    confirm: &str,
    ip: IpAddr,
) -> Result<Signed, AcceptError> {
    if invitation(core, token).await?.is_none() {
        return Err(AcceptError::Gone);
    }
    let password = Password::parse(password).map_err(|_| AcceptError::Invalid)?;
    if password.expose() != confirm {
        return Err(AcceptError::Mismatch);
    }
    let hash = core.passwords.hash(password).await?;
    let (session_token, session_hash) = new_token()?;
    let (csrf, _) = new_token()?;
    let ip_text = ip.to_string();
    let session = NewSession {
        token_hash: &session_hash,
        user_id: 0, // set by the store to the invitation's user
        stage: Stage::Full,
        csrf_token: &csrf,
        ip: Some(&ip_text),
    };
    let audit = |account: &rehome_store::AccountRecord, stage: Stage| {
        let entry = |action| AuditEntry {
            brand_id: account.brand_id,
            actor: AuditActor::user(account.user_id, &account.name),
            action,
            target: Some(format!("user:{}", account.user_id)),
            ip: Some(ip_text.clone()),
        };
        let mut entries = vec![entry(AuditAction::MemberJoined)];
        if stage == Stage::Full {
            entries.push(entry(AuditAction::SignInSucceeded));
        }
        entries
    };
    match core.store.accept_invitation(&hash_secret(token), &hash, session, audit).await? {
        Acceptance::Accepted { stage, .. } => Ok(Signed { token: session_token, stage }),
        Acceptance::Gone => Err(AcceptError::Gone),
    }
}
