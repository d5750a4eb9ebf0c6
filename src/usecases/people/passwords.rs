//! Changing a password: by its owner in the dashboard, or by an operator
//! (`rehome users set-password`). Either way every other session of the user ends.

use crate::domain::audit::{AuditAction, AuditActor, AuditEntry};
use crate::domain::password::{self, HashError, Password};
use crate::store::{Store, StoreError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::Core;

#[derive(Debug, thiserror::Error)]
pub enum PasswordChangeError {
    /// The current password given is wrong.
    #[error("the current password is incorrect")]
    CurrentIncorrect,
    /// The new password is not 12 to 128 characters, or only spaces: `password_invalid`.
    #[error("a password has 12 to 128 characters, not only spaces")]
    Invalid,
    /// The confirmation differs from the new password.
    #[error("the passwords do not match")]
    Mismatch,
    #[error(transparent)]
    Hashing(#[from] HashError),
    #[error("password hashing did not finish: {0}")]
    Interrupted(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Hashes off the async threads (Argon2id takes tens of milliseconds of CPU).
pub(crate) async fn hash_blocking(password: Password) -> Result<String, PasswordChangeError> {
    tokio::task::spawn_blocking(move || password::hash(&password))
        .await
        .map_err(|e| PasswordChangeError::Interrupted(e.to_string()))?
        .map_err(PasswordChangeError::from)
}

/// The signed-in user changes their password, giving the current one. Their other
/// sessions end; with `end_this_one` this one too.
pub async fn change_password(
    core: &Core,
    session: &LiveSession,
    current: &str,
    new: &str,
    confirm: &str,
    end_this_one: bool,
) -> Result<(), PasswordChangeError> {
    let user_id = session.record.user_id;
    let stored = core.store.password_hash(user_id).await?;
    let candidate = current.to_owned();
    let right = tokio::task::spawn_blocking(move || match stored {
        Some(stored) => password::verify(&candidate, &stored),
        None => password::verify_dummy(&candidate),
    })
    .await
    .map_err(|e| PasswordChangeError::Interrupted(e.to_string()))?;
    if !right {
        return Err(PasswordChangeError::CurrentIncorrect);
    }
    let new = Password::parse(new).map_err(|_| PasswordChangeError::Invalid)?;
    if new.expose() != confirm {
        return Err(PasswordChangeError::Mismatch);
    }
    let hash = hash_blocking(new).await?;
    let keep = (!end_this_one).then_some(session.record.id);
    core.store.set_password(user_id, &hash, keep, &session.audit(AuditAction::PasswordChanged)).await?;
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum SetPasswordError {
    #[error("no user with id {0}")]
    NoSuchUser(i64),
    #[error("a password has 12 to 128 characters, not only spaces")]
    Invalid,
    #[error(transparent)]
    Change(#[from] PasswordChangeError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An operator sets a user's password (the command line): every session of the user ends,
/// and the brand's audit log names the operator.
pub async fn set_password(store: &Store, user_id: i64, password: &str) -> Result<(), SetPasswordError> {
    let password = Password::parse(password).map_err(|_| SetPasswordError::Invalid)?;
    let Some(account) = store.account_by_id(user_id).await? else {
        return Err(SetPasswordError::NoSuchUser(user_id));
    };
    let hash = hash_blocking(password).await?;
    let audit = AuditEntry {
        brand_id: account.brand_id,
        actor: AuditActor::operator(),
        action: AuditAction::PasswordChanged,
        target: Some(format!("user:{user_id}")),
        ip: None,
    };
    if !store.set_password(user_id, &hash, None, &audit).await? {
        return Err(SetPasswordError::NoSuchUser(user_id));
    }
    Ok(())
}
