//! Issuing invitation links (decisions 8.4): for a new member (the team API, with the user
//! in one transaction: see [`super::team::invite`]) and for an existing user (the CLI's
//! `users invite-link`, which lets an active user set a new password). Accepting a link
//! belongs to sign-in.

use chrono::{DateTime, TimeDelta, Utc};

use crate::usecases::accounts::by_operator;
use rehome_domain::apikey::{hash_secret, random_base62};
use rehome_domain::audit::AuditAction;
use rehome_domain::time::Ts;
use rehome_store::{Store, StoreError};

/// How long a link is valid.
pub const INVITATION_TTL: TimeDelta = TimeDelta::hours(72);
/// Characters of a token (about 256 bits).
const TOKEN_LEN: usize = 43;

/// A new invitation: the link to hand out and what the database keeps of it.
pub struct Invitation {
    /// `<public url>/dashboard/invite/<token>`; shown once, never stored.
    pub url: String,
    pub token_hash: [u8; 32],
    pub expires_at: Ts,
}

impl Invitation {
    /// A fresh token under `public_url`, valid for [`INVITATION_TTL`] from `now`.
    pub fn generate(public_url: &str, now: DateTime<Utc>) -> Result<Self, getrandom::Error> {
        let token = random_base62(TOKEN_LEN)?;
        Ok(Self {
            url: invite_url(public_url, &token),
            token_hash: hash_secret(&token),
            expires_at: Ts::from(now + INVITATION_TTL),
        })
    }
}

pub fn invite_url(public_url: &str, token: &str) -> String {
    format!("{}/dashboard/invite/{token}", public_url.trim_end_matches('/'))
}

/// The invitation email: `(subject, text)`.
pub fn invitation_mail(brand_name: &str, inviter: &str, url: &str, expires_at: Ts) -> (String, String) {
    let subject = format!("{inviter} invited you to {brand_name} on rehome");
    let expires = expires_at.get().format("%-d %B %Y at %H:%M UTC");
    let text = format!(
        "Hello,\n\n{inviter} has invited you to join {brand_name} on rehome.\n\n\
         Open this link to choose your password and sign in:\n\n{url}\n\n\
         The link works once and expires on {expires}. If you did not expect this invitation, \
         ignore this message.\n"
    );
    (subject, text)
}

/// Why no link was issued.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    #[error("no user with id {0} (or the user was removed from their team)")]
    NoSuchUser(i64),
    #[error("the OS random source failed: {0}")]
    Random(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A fresh link for an invited or active user (earlier unused links stop working),
/// recorded in the audit log as the operator's invitation. It is not mailed: the operator
/// hands it over.
pub async fn issue_link(store: &Store, public_url: &str, user_id: i64) -> Result<Invitation, IssueError> {
    let invitation = Invitation::generate(public_url, Utc::now()).map_err(IssueError::Random)?;
    let entry = |brand_id: i64| by_operator(brand_id, AuditAction::MemberInvited, format!("user:{user_id}"));
    if store.issue_invitation(user_id, &invitation.token_hash, invitation.expires_at, entry).await? {
        Ok(invitation)
    } else {
        Err(IssueError::NoSuchUser(user_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rehome_domain::apikey::hash_secret;

    #[test]
    fn a_link_carries_a_token_whose_hash_is_kept_and_expires_in_72_hours() {
        let now: DateTime<Utc> = "2026-11-23T10:00:00Z".parse().unwrap();
        let invitation = Invitation::generate("https://rehome.example/", now).unwrap();
        let token = invitation.url.strip_prefix("https://rehome.example/dashboard/invite/").unwrap();
        assert_eq!(token.len(), TOKEN_LEN);
        assert!(token.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(hash_secret(token), invitation.token_hash);
        assert_eq!(invitation.expires_at.to_string(), "2026-11-26T10:00:00.000000Z");
        let other = Invitation::generate("https://rehome.example", now).unwrap();
        assert_ne!(other.url, invitation.url);
    }

    #[test]
    fn the_mail_names_the_brand_the_inviter_the_link_and_the_expiry() {
        let at = Ts::parse("2026-11-26T10:00:00Z").unwrap();
        let (subject, text) = invitation_mail("Acme Sofas", "Ada", "https://x.example/dashboard/invite/t", at);
        assert_eq!(subject, "Ada invited you to Acme Sofas on rehome");
        assert!(text.contains("https://x.example/dashboard/invite/t\n"), "{text}");
        assert!(text.contains("26 November 2026 at 10:00 UTC"), "{text}");
    }
}
