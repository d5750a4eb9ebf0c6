//! Secrets shown once, after post/redirect/get: an action that makes a secret (a new or
//! rolled API key, an invitation link, a set of recovery codes) answers 303 to its page with the secret in a sealed
//! cookie, and that page shows it and deletes the cookie. A reload then neither makes
//! another key nor shows the secret again.
//!
//! Why a sealed cookie, not a row: nothing about the secret is written to the database (the
//! key's hash is, as always), nodes share the data key, so any node can show it, and there
//! is nothing to clean up. What makes it sound:
//! - sealed (XChaCha20-Poly1305 under the data key, [`crate::usecases::people::sealed`]): the browser
//!   keeps only ciphertext, and cannot forge or alter one;
//! - bound to the session that made it (its id is the associated data): it opens for no
//!   other session, and not after sign-out;
//! - short-lived: `Max-Age` 60 s and an expiry inside, checked on opening;
//! - deleted by the page that shows it (`Max-Age=0`), and `HttpOnly; SameSite=Strict`,
//!   `Path=/dashboard`, `Secure` behind https; pages are `Cache-Control: no-store`.
//!
//! Replaying the cookie within its minute shows the secret again only to someone who also
//! holds that session's cookie, who could make a key anyway.

use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::cookies;
use crate::usecases::people::sealed;
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::Core;
use crate::web::extract::PageError;

pub const COOKIE: &str = "rehome_once";
/// A secret not shown within a minute (the redirect was not followed) is dropped.
const SECONDS: i64 = 60;

/// What was made, to say above the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Made {
    KeyCreated,
    KeyRolled,
    Invited,
    InvitationResent,
    /// The webhook's signing secret, made by the first save or by "Rotate secret".
    SigningSecret,
    /// Two-step sign-in set up: its recovery codes (one per line).
    TwoStepOn,
    /// A new set of recovery codes (one per line).
    RecoveryCodes,
    /// A password reset link for a member, when mail is off (the admin hands it over).
    ResetLink,
}

impl Made {
    /// The notice above the secret.
    pub fn text(self) -> &'static str {
        match self {
            Self::KeyCreated => "Key created. Copy its secret now: it is not shown again.",
            Self::KeyRolled => {
                "Key rolled. Copy the new secret now: it is not shown again. The old key keeps working until the \
                 time shown in its row, then stops."
            }
            Self::Invited => "Invitation made. Send them the link below (it is not shown again).",
            Self::InvitationResent => {
                "A new invitation link was made; the earlier one no longer works. Send them the link below (it is not \
                 shown again)."
            }
            Self::SigningSecret => "Signing secret made. Copy it now: it is not shown again.",
            Self::TwoStepOn => "Two-step sign-in is on.",
            Self::RecoveryCodes => "New recovery codes made: the old ones no longer work.",
            Self::ResetLink => {
                "Password reset link made. Mail is not set up on this server: send them the link below (it is not \
                 shown again)."
            }
        }
    }
}

/// A secret to show once, and what it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    pub made: Made,
    /// The key's label, or the invited person's email.
    pub name: String,
    /// The key's secret, or the invitation link.
    pub secret: String,
    /// The invitation's expiry, as shown (empty for keys).
    pub until: String,
    /// Unix seconds after which it is not shown.
    expires: i64,
}

impl Shown {
    pub fn new(made: Made, name: String, secret: String, until: String) -> Self {
        Self { made, name, secret, until, expires: chrono::Utc::now().timestamp() + SECONDS }
    }

    /// 303 to `to` carrying this secret, sealed for `session`.
    pub fn redirect(&self, core: &Core, session: &LiveSession, to: &str, secure: bool) -> Result<Response, String> {
        let json = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        let sealed = sealed::seal(core, &aad(session), &json).map_err(|e| e.to_string())?;
        let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed);
        let mut response = Redirect::to(to).into_response();
        set(response.headers_mut(), &value, SECONDS, secure);
        Ok(response)
    }

    /// The secret the request carries for `session`, if it opens and is still fresh; an
    /// error only when the server has no data key.
    pub fn take(core: &Core, session: &LiveSession, request: &HeaderMap) -> Result<Option<Self>, PageError> {
        let Some(value) = cookies::get(request, COOKIE) else { return Ok(None) };
        let Ok(sealed) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(value) else { return Ok(None) };
        let Some(json) = sealed::open(core, &aad(session), &sealed).map_err(PageError::from)? else { return Ok(None) };
        let shown = serde_json::from_slice::<Self>(&json).ok();
        Ok(shown.filter(|shown| shown.expires >= chrono::Utc::now().timestamp()))
    }
}

/// True when the request carries a secret cookie (shown or not, the answer deletes it).
pub fn carried(request: &HeaderMap) -> bool {
    cookies::get(request, COOKIE).is_some()
}

/// Deletes the cookie on `response`.
pub fn spend(response: &mut Response) {
    set(response.headers_mut(), "", 0, false);
}

fn aad(session: &LiveSession) -> Vec<u8> {
    format!("rehome shown once; session {}", session.record.id).into_bytes()
}

fn set(headers: &mut HeaderMap, value: &str, max_age: i64, secure: bool) {
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age={max_age}{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.append(SET_COOKIE, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_written_and_read_in_its_own_words() {
        let shown = Shown::new(Made::KeyCreated, "Stock sync".into(), "rhk_x".into(), String::new());
        let json = serde_json::to_string(&shown).unwrap();
        assert!(json.contains("\"made\":\"key_created\""), "{json}");
        assert_eq!(serde_json::from_str::<Shown>(&json).unwrap(), shown);
        for made in [
            Made::KeyCreated,
            Made::KeyRolled,
            Made::Invited,
            Made::InvitationResent,
            Made::SigningSecret,
            Made::TwoStepOn,
            Made::RecoveryCodes,
            Made::ResetLink,
        ] {
            assert!(made.text().ends_with('.'));
        }
    }
}
