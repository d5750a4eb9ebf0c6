//! Choosing a new password with a link: asked for on the sign-in page ("Forgot your
//! password?") or sent by an admin from Team. The link works once, within an hour, and only
//! the newest of a user's links works; the mail goes through the durable outbox. Asking
//! answers the same whether or not an account uses the email (and says nothing of the
//! caps), so the page does not tell who has an account. Using the link sets the password,
//! ends every session of the user and is audited; two-step sign-in still applies after.

use std::net::IpAddr;

use chrono::{TimeDelta, Utc};

use super::password_pool::HashingError;
use crate::usecases::Core;
use rehome_domain::apikey::{hash_secret, random_base62};
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::password::Password;
use rehome_domain::team::MAX_EMAIL_LEN;
use rehome_domain::time::Ts;
use rehome_domain::user::Admin;
use rehome_store::{NewMail, NewReset, ResetIssue, ResetTarget, StoreError};

/// How long a link works.
pub const RESET_TTL: TimeDelta = TimeDelta::hours(1);
/// Most links one user is sent in an hour, however they are asked for.
pub const PER_USER_PER_HOUR: i64 = 3;
/// Most links one address may ask for in an hour.
pub const PER_ADDRESS_PER_HOUR: i64 = 10;
/// Characters of a token (about 256 bits).
const TOKEN_LEN: usize = 43;

#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    /// Mail is not configured: no link can be sent.
    #[error("mail is not configured on this server")]
    MailOff,
    #[error("the OS random source failed: {0}")]
    Random(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A user asks for a link for `email`. `Ok` whether or not an account uses it, and whether
/// or not a cap held the link back: the page says the same either way.
pub async fn request_reset(core: &Core, email: &str, ip: IpAddr) -> Result<(), ResetError> {
    if !core.config.mail_enabled() {
        return Err(ResetError::MailOff);
    }
    let email = email.trim();
    if email.is_empty() || email.len() > MAX_EMAIL_LEN {
        return Ok(());
    }
    let Some(account) = core.store.account_by_email(email).await? else {
        return Ok(());
    };
    if account.status != "active" {
        return Ok(());
    }
    let target =
        ResetTarget { user_id: account.user_id, brand_id: account.brand_id, name: account.name, email: account.email };
    let actor = AuditActor::user(target.user_id, &target.name);
    let issued = issue(core, &target, actor, None, Some(ip)).await?;
    if issued.is_none() {
        tracing::info!(user_id = target.user_id, "a password reset link was held back by the hourly cap");
    }
    Ok(())
}

/// What an admin's "Send a password reset link" did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// Mailed to the member.
    Mailed { email: String },
    /// Mail is off: the link, for the admin to hand over (shown once), and until when.
    Link { email: String, url: String, until: Ts },
    /// The member had their hour's links already.
    TooFrequent,
    /// No active member of the admin's brand has this id (or it is the admin themself).
    NoSuchMember,
}

/// An admin sends a member of their brand a link to choose a new password.
pub async fn send_reset_link(core: &Core, admin: &Admin, user_id: i64) -> Result<Sent, ResetError> {
    let Some(account) = core.store.account_by_id(user_id).await? else {
        return Ok(Sent::NoSuchMember);
    };
    if account.brand_id != admin.brand_id || account.status != "active" || user_id == admin.user_id {
        return Ok(Sent::NoSuchMember);
    }
    let target = ResetTarget { user_id, brand_id: account.brand_id, name: account.name, email: account.email };
    let actor = AuditActor::user(admin.user_id, &admin.user_name);
    let Some(url) = issue(core, &target, actor, Some(admin.user_id), admin.ip).await? else {
        return Ok(Sent::TooFrequent);
    };
    Ok(if core.config.mail_enabled() {
        Sent::Mailed { email: target.email }
    } else {
        Sent::Link { email: target.email, url, until: Ts::from(Utc::now() + RESET_TTL) }
    })
}

/// Issues a link for `target` (mailed when mail is on); its URL, or `None` past a cap.
async fn issue(
    core: &Core,
    target: &ResetTarget,
    actor: AuditActor,
    requested_by: Option<i64>,
    ip: Option<IpAddr>,
) -> Result<Option<String>, ResetError> {
    let token = random_base62(TOKEN_LEN).map_err(ResetError::Random)?;
    let url = reset_url(core.config.public_url(), &token);
    let now = Utc::now();
    let expires_at = Ts::from(now + RESET_TTL);
    let (subject, text) = reset_mail(&url, requested_by.is_some());
    let ip_text = ip.map(|ip| ip.to_string());
    let reset = NewReset {
        user_id: target.user_id,
        token_hash: hash_secret(&token),
        requested_by,
        ip: ip_text.as_deref(),
        now: Ts::from(now),
        expires_at,
        per_user: PER_USER_PER_HOUR,
        per_address: PER_ADDRESS_PER_HOUR,
        mail: core.config.mail_enabled().then(|| NewMail {
            brand_id: Some(target.brand_id),
            to: &target.email,
            subject: &subject,
            text: &text,
            html: None,
            attachment: None,
        }),
        audit: AuditEntry {
            brand_id: target.brand_id,
            actor,
            action: AuditAction::PasswordResetSent,
            target: Some(format!("user:{}", target.user_id)),
            ip: ip_text.clone(),
        },
    };
    match core.store.issue_password_reset(&reset).await? {
        ResetIssue::Issued => {
            core.mail.wake();
            Ok(Some(url))
        }
        ResetIssue::TooFrequent => Ok(None),
    }
}

pub fn reset_url(public_url: &str, token: &str) -> String {
    format!("{}/dashboard/reset/{token}", public_url.trim_end_matches('/'))
}

/// The mail with the link: `(subject, text)`.
pub fn reset_mail(url: &str, by_admin: bool) -> (String, String) {
    let why = if by_admin {
        "An admin of your team sent you a link to choose a new password for rehome."
    } else {
        "Someone (we hope you) asked to choose a new password for your rehome account."
    };
    let text = format!(
        "Hello,\n\n{why}\n\nOpen this link to choose it:\n\n{url}\n\n\
         The link works once, within an hour. If you did not ask for it, ignore this message: \
         your password stays as it is.\n"
    );
    ("Choose a new rehome password".to_owned(), text)
}

/// The user a live link is for, or `None` (used, expired, replaced by a newer one, unknown).
pub async fn reset_target(core: &Core, token: &str) -> Result<Option<ResetTarget>, StoreError> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    core.store.open_password_reset(&hash_secret(token), Ts::now()).await
}

#[derive(Debug, thiserror::Error)]
pub enum UseResetError {
    /// Used, expired, replaced or unknown.
    #[error("this link has been used or has expired")]
    Gone,
    /// Not 12 to 128 characters, or only spaces: `password_invalid`.
    #[error("a password has 12 to 128 characters, not only spaces")]
    Invalid,
    #[error("the passwords do not match")]
    Mismatch,
    #[error(transparent)]
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Sets the new password with the link (once), ending every session of the user.
pub async fn use_reset(
    core: &Core,
    token: &str,
    password: &str,
    confirm: &str,
    ip: IpAddr,
) -> Result<(), UseResetError> {
    if reset_target(core, token).await?.is_none() {
        return Err(UseResetError::Gone);
    }
    let password = Password::parse(password).map_err(|_| UseResetError::Invalid)?;
    if password.expose() != confirm {
        return Err(UseResetError::Mismatch);
    }
    let hash = core.passwords.hash(password).await?;
    let audit = |target: &ResetTarget| AuditEntry {
        brand_id: target.brand_id,
        actor: AuditActor::user(target.user_id, &target.name),
        action: AuditAction::PasswordReset,
        target: Some(format!("user:{}", target.user_id)),
        ip: Some(ip.to_string()),
    };
    match core.store.use_password_reset(&hash_secret(token), Ts::now(), &hash, audit).await? {
        Some(_) => Ok(()),
        None => Err(UseResetError::Gone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mail_holds_the_link_and_says_once_and_an_hour() {
        let (subject, text) = reset_mail("https://x.example/dashboard/reset/t", false);
        assert_eq!(subject, "Choose a new rehome password");
        assert!(text.contains("\nhttps://x.example/dashboard/reset/t\n"), "{text}");
        assert!(text.contains("works once, within an hour"), "{text}");
        assert!(reset_mail("u", true).1.contains("An admin of your team"));
        assert_eq!(reset_url("https://x.example/", "t"), "https://x.example/dashboard/reset/t");
    }
}
