//! The confirmation step of destructive actions (decisions 9.8): the button on a list
//! ("Revoke", "Remove", "Rotate secret", "Retry every dead event", "Delete") is a link-like
//! GET form to the action's own address, which answers the step: what will happen, a button
//! whose name begins with the action's word, and a way back that says what it keeps. Only
//! that button posts, so one click never destroys.
//!
//! Without JavaScript the step is a page. With htmx the GET form carries `hx-get` to the
//! same address and `hx-target="this"`: htmx sends `HX-Request: true`, and the answer is the
//! same step as a fragment that htmx puts in place of the button that asked (the key's row,
//! the photo, the member's row), with the focus on it. Either way the step's button is a
//! plain POST form answered by post/redirect/get, and the way back is a link to the page,
//! which keeps the record and submits nothing.

use askama::Template;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

use super::pages::{render, Chrome};
use crate::usecases::people::sessions::LiveSession;

/// What a confirmation step asks.
#[derive(Debug)]
pub struct Confirm {
    /// The question, e.g. "Revoke the key “CI deploy”?".
    pub title: String,
    /// What happens, a sentence each.
    pub lines: Vec<String>,
    /// Where the button posts (the action itself).
    pub action: String,
    /// The button, beginning with the action's word: "Revoke key".
    pub button: String,
    /// Where the way back leads (the page the action was offered on).
    pub cancel: String,
    /// What the way back says: what it keeps ("No, keep the key"), so it never reads
    /// like the action (a "Cancel" beside "Cancel invitation").
    pub keep: String,
    /// What the button posts beside the form's token (`name`, `value`): the choice the step
    /// confirms, such as a new date.
    pub fields: Vec<(String, String)>,
}

/// How the step was asked for: by htmx (`HX-Request: true`, answered with the fragment to
/// put in place) or by a plain GET (answered with the page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    pub by_htmx: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for Asked {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self { by_htmx: parts.headers.get("hx-request").is_some_and(|v| v.as_bytes() == b"true") })
    }
}

#[derive(Template)]
#[template(path = "dashboard/confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    csrf: String,
    confirm: Confirm,
}

#[derive(Template)]
#[template(path = "dashboard/confirm_inline.html")]
struct ConfirmInline {
    csrf: String,
    confirm: Confirm,
    /// An id for the step's question, unique on the page (from the action's address).
    id: String,
}

/// The step of `confirm` for the signed-in `session`: the page, or the fragment htmx asked
/// for. The same address answers both, so the answer varies with `HX-Request`.
pub fn page(session: &LiveSession, asked: Asked, confirm: Confirm) -> Response {
    let csrf = session.record.csrf_token.clone();
    let mut response = if asked.by_htmx {
        let id = fragment_id(&confirm.action);
        render(StatusCode::OK, &ConfirmInline { csrf, confirm, id })
    } else {
        render(StatusCode::OK, &ConfirmPage { chrome: Chrome::signed_in(session), csrf, confirm })
    };
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("HX-Request"));
    response
}

/// Where a step for a record that is gone leads instead (the page it was offered on): a
/// redirect, or for htmx `HX-Redirect`, so that the page is loaded rather than swapped in.
pub fn elsewhere(asked: Asked, to: &str) -> Response {
    use axum::response::IntoResponse;
    if asked.by_htmx {
        match HeaderValue::from_str(to) {
            Ok(to) => (StatusCode::OK, [(HeaderName::from_static("hx-redirect"), to)]).into_response(),
            Err(_) => StatusCode::NOT_FOUND.into_response(),
        }
    } else {
        axum::response::Redirect::to(to).into_response()
    }
}

/// `confirm-` and the action's address with every character but a letter or digit as `-`.
fn fragment_id(action: &str) -> String {
    let tail: String = action
        .trim_start_matches("/dashboard/")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("confirm-{tail}")
}

#[cfg(test)]
mod tests {
    use super::fragment_id;

    #[test]
    fn a_fragment_id_is_a_plain_token_from_the_action() {
        assert_eq!(fragment_id("/dashboard/integrations/keys/7/revoke"), "confirm-integrations-keys-7-revoke");
        assert_eq!(fragment_id("/dashboard/team/3/remove"), "confirm-team-3-remove");
    }
}
