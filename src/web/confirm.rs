//! The confirmation step of destructive actions (decisions 9.8): the button on a list
//! ("Revoke", "Remove", "Rotate secret", "Replay all dead") is a link-like GET form to the
//! action's own address, which answers this page: what will happen, a button whose name
//! begins with the action's word, and a way back. Only that button posts; so one click
//! never destroys, and the step works without JavaScript.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;

use super::pages::{render, Chrome};
use crate::usecases::people::sessions::LiveSession;

/// What a confirmation page asks.
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
}

#[derive(Template)]
#[template(path = "dashboard/confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    csrf: String,
    confirm: Confirm,
}

/// The confirmation page of `confirm`, for the signed-in `session`.
pub fn page(session: &LiveSession, confirm: Confirm) -> Response {
    let page = ConfirmPage { chrome: Chrome::signed_in(session), csrf: session.record.csrf_token.clone(), confirm };
    render(StatusCode::OK, &page)
}
