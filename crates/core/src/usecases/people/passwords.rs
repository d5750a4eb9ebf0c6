//! Changing a password: by its owner in the dashboard, or by an operator
//! (`rehome users set-password`). Either way every other session of the user ends.
//!
//! The owner gives the current password, which is a guess at the account's secret like a
//! sign-in: counted against the same limits before it is checked (five wrong ones lock the
//! form and the sign-in alike for a window), and audited (`password.change_failed`,
//! `password.change_locked`).

use super::attempts::Attempt;
use super::password_pool::{HashingError, PasswordPool};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::Core;
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::lockout::email_key;
use rehome_domain::password::Password;
use rehome_store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum PasswordChangeError {
    /// The current password given is wrong.
    #[error("the current password is incorrect")]
    CurrentIncorrect,
    /// Too many wrong passwords for the account (here or at sign-in), or from the address:
    /// refused unchecked until the window passes.
    #[error("too many attempts, try again later")]
    Locked,
    /// The new password is not 12 to 128 characters, or only spaces: `password_invalid`.
    #[error("a password has 12 to 128 characters, not only spaces")]
    Invalid,
    /// The confirmation differs from the new password.
    #[error("the passwords do not match")]
    Mismatch,
    #[error(transparent)]
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum PasswordCheckError {
    #[error("the current password is incorrect")]
    Incorrect,
    #[error("too many attempts, try again later")]
    Locked,
    #[error(transparent)]
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checks the signed-in user's current password (before a change to their account), as a
/// guess at the account's secret: counted against the sign-in limits before it is checked,
/// a wrong one audited as `wrong`, a refusal as `locked`. A right one answers the attempt
/// still counted: the caller takes it back ([`Attempt::uncount`]) once whatever else it
/// checks (a two-step code) is right too, or lets it stand as a failure.
pub(crate) async fn check_password(
    core: &Core,
    session: &LiveSession,
    current: &str,
    wrong: AuditAction,
    locked: AuditAction,
) -> Result<Attempt, PasswordCheckError> {
    if !Password::could_be(current) {
        return Err(PasswordCheckError::Incorrect);
    }
    let user_id = session.record.user_id;
    let key = email_key(&session.record.email);
    let Some(attempt) = Attempt::begin(core, &key, Some(user_id), session.ip).await? else {
        core.store.record_audit(&session.audit(locked)).await?;
        return Err(PasswordCheckError::Locked);
    };
    let stored = core.store.password_hash(user_id).await?;
    let right = match core.passwords.verify(current, stored).await {
        Ok(right) => right,
        Err(e) => {
            attempt.uncount(core).await?;
            return Err(e.into());
        }
    };
    if !right {
        attempt.failed(core).await?;
        core.store.record_audit(&session.audit(wrong)).await?;
        return Err(PasswordCheckError::Incorrect);
    }
    Ok(attempt)
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
    // What needs no hash first: the new password's rule and its confirmation.
    let new = Password::parse(new).map_err(|_| PasswordChangeError::Invalid)?;
    if new.expose() != confirm {
        return Err(PasswordChangeError::Mismatch);
    }
    let attempt =
        check_password(core, session, current, AuditAction::PasswordChangeFailed, AuditAction::PasswordChangeLocked)
            .await
            .map_err(|e| match e {
                PasswordCheckError::Incorrect => PasswordChangeError::CurrentIncorrect,
                PasswordCheckError::Locked => PasswordChangeError::Locked,
                PasswordCheckError::Hashing(e) => PasswordChangeError::Hashing(e),
                PasswordCheckError::Store(e) => PasswordChangeError::Store(e),
            })?;
    attempt.uncount(core).await?;
    let user_id = session.record.user_id;
    let hash = core.passwords.hash(new).await?;
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
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An operator sets a user's password (the command line, the demo's seed): every session
/// of the user ends, and the brand's audit log names the operator. One password, hashed in
/// a line of its own (no server's line to join).
pub async fn set_password(store: &Store, user_id: i64, password: &str) -> Result<(), SetPasswordError> {
    let password = Password::parse(password).map_err(|_| SetPasswordError::Invalid)?;
    let Some(account) = store.account_by_id(user_id).await? else {
        return Err(SetPasswordError::NoSuchUser(user_id));
    };
    let hash = PasswordPool::new(1).hash(password).await?;
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
