//! Accepting an invitation: `/dashboard/invite/<token>` asks for a password, sets it and
//! signs the person in. A used, expired (72 h) or unknown link answers 410 Gone with the
//! same page ("This invitation has been used or has expired."): the link existed or not,
//! either way it will never work, and the page does not say which.

use crate::http::routing::{get, post};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;

use super::account::{PASSWORDS_DIFFER, PASSWORD_INVALID};
use super::extract::{guest_page, GuestForm, PageError, Visitor};
use super::pages::{render, Chrome, InvitePage, MessagePage};
use super::signin::continue_signed;
use crate::state::AppState;
use crate::usecases::people::accept::{accept_invitation, invitation, AcceptError};
use crate::usecases::people::password_pool::HashingError;

pub fn router() -> Router<AppState> {
    Router::new().route("/invite/{token}", get(invite_page).merge(post(accept)))
}

fn gone() -> Response {
    render(
        StatusCode::GONE,
        &MessagePage {
            chrome: Chrome::guest(),
            title: "Invitation unavailable",
            text: "This invitation has been used or has expired. Ask an admin of your team for a new one.",
        },
    )
}

async fn form_page(
    state: &AppState,
    visitor: &Visitor,
    token: &str,
    status: StatusCode,
    password_error: Option<&'static str>,
    confirm_error: Option<&'static str>,
) -> Result<Response, PageError> {
    let Some(invited) = invitation(&state.core, token).await? else {
        return Ok(gone());
    };
    guest_page(state, visitor, status, |csrf| InvitePage {
        chrome: Chrome::guest(),
        csrf,
        token: token.to_owned(),
        email: invited.email,
        brand: invited.brand_name,
        password_error,
        confirm_error,
    })
}

async fn invite_page(
    State(state): State<AppState>,
    Path(token): Path<String>,
    visitor: Visitor,
) -> Result<Response, PageError> {
    form_page(&state, &visitor, &token, StatusCode::OK, None, None).await
}

async fn accept(
    State(state): State<AppState>,
    Path(token): Path<String>,
    posted: GuestForm<super::extract::NewPasswordForm>,
) -> Result<Response, PageError> {
    let GuestForm { visitor, form } = posted;
    let status = StatusCode::UNPROCESSABLE_ENTITY;
    match accept_invitation(&state.core, &token, &form.password, &form.confirm_password, visitor.ip).await {
        Ok(signed) => Ok(continue_signed(&state, &signed, &super::signin::NextPage::default())),
        Err(AcceptError::Gone) => Ok(gone()),
        Err(AcceptError::Invalid) => form_page(&state, &visitor, &token, status, Some(PASSWORD_INVALID), None).await,
        Err(AcceptError::Mismatch) => form_page(&state, &visitor, &token, status, None, Some(PASSWORDS_DIFFER)).await,
        Err(AcceptError::Hashing(HashingError::Busy)) => Err(PageError::Busy),
        Err(AcceptError::Store(e)) => Err(e.into()),
        Err(e @ (AcceptError::Random(_) | AcceptError::Hashing(_))) => Err(PageError::internal(e)),
    }
}
