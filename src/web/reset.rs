//! Choosing a new password with a link: "Forgot your password?" on the sign-in page asks
//! for one by email (`/dashboard/login/forgot`), and `/dashboard/reset/<token>` sets the new
//! password. Asking answers the same page whatever the email (an account or not, a cap
//! reached or not). A used, expired, replaced or unknown link answers 410 Gone with the same
//! page, as an invitation's does. After the change the person signs in again (two-step
//! sign-in still applies), told so on the sign-in page.

use crate::http::routing::{get, post};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;

use super::account::{PASSWORDS_DIFFER, PASSWORD_INVALID};
use super::cookies;
use super::extract::{guest_page, GuestForm, PageError, Visitor};
use super::notice::Notice;
use super::pages::{render, Chrome, ForgotPage, MessagePage, ResetPage};
use super::LOGIN;
use crate::state::AppState;
use crate::usecases::people::password_pool::HashingError;
use crate::usecases::people::resets::{request_reset, reset_target, use_reset, ResetError, UseResetError};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login/forgot", get(forgot_page).merge(post(forgot)))
        .route("/reset/{token}", get(reset_page).merge(post(reset)))
}

/// What the page says once asked, whatever the email.
pub const SENT: &str = "If an account uses that email, we have sent it a link to choose a new password. The link \
                        works once, within an hour. Nothing arrived? Check the spam folder, or ask an admin of your \
                        team to send you one.";
/// What the page says when the server cannot send mail.
pub const MAIL_OFF: &str = "This server cannot send email, so it cannot send you a link. Ask an admin of your team \
                            to send you a password reset link from the Team page.";

fn forgot_form(
    state: &AppState,
    visitor: &Visitor,
    status: StatusCode,
    email: String,
    notice: Option<&'static str>,
) -> Result<Response, PageError> {
    let mail_on = state.config.mail_enabled();
    guest_page(state, visitor, status, |csrf| ForgotPage { chrome: Chrome::guest(), csrf, email, notice, mail_on })
}

async fn forgot_page(State(state): State<AppState>, visitor: Visitor) -> Result<Response, PageError> {
    forgot_form(&state, &visitor, StatusCode::OK, String::new(), None)
}

#[derive(Debug, Deserialize)]
struct ForgotForm {
    #[serde(default)]
    email: String,
}

/// Answers at once, the link made and queued after the answer: the time the answer takes
/// says nothing of whether an account uses the email (making a link writes; not making one
/// does not).
async fn forgot(State(state): State<AppState>, posted: GuestForm<ForgotForm>) -> Result<Response, PageError> {
    let GuestForm { visitor, form } = posted;
    if !state.config.mail_enabled() {
        return forgot_form(&state, &visitor, StatusCode::SERVICE_UNAVAILABLE, form.email, None);
    }
    let (asking, email, ip) = (state.clone(), form.email.clone(), visitor.ip);
    state.core.unawaited.spawn(async move {
        match request_reset(&asking.core, &email, ip).await {
            Ok(()) | Err(ResetError::MailOff) => {}
            Err(error) => tracing::error!(%error, "cannot make a password reset link"),
        }
    });
    forgot_form(&state, &visitor, StatusCode::OK, form.email, Some(SENT))
}

fn gone() -> Response {
    render(
        StatusCode::GONE,
        &MessagePage {
            chrome: Chrome::guest(),
            title: "Link unavailable",
            text: "This link has been used, has expired (links work for an hour) or was replaced by a newer one. \
                   Ask for a new one from the sign-in page (Forgot your password?).",
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
    let Some(target) = reset_target(&state.core, token).await? else {
        return Ok(gone());
    };
    guest_page(state, visitor, status, |csrf| ResetPage {
        chrome: Chrome::guest(),
        csrf,
        token: token.to_owned(),
        email: target.email,
        password_error,
        confirm_error,
    })
}

async fn reset_page(
    State(state): State<AppState>,
    Path(token): Path<String>,
    visitor: Visitor,
) -> Result<Response, PageError> {
    form_page(&state, &visitor, &token, StatusCode::OK, None, None).await
}

async fn reset(
    State(state): State<AppState>,
    Path(token): Path<String>,
    posted: GuestForm<super::extract::NewPasswordForm>,
) -> Result<Response, PageError> {
    let GuestForm { visitor, form } = posted;
    let status = StatusCode::UNPROCESSABLE_ENTITY;
    match use_reset(&state.core, &token, &form.password, &form.confirm_password, visitor.ip).await {
        Ok(()) => {
            let mut response = Notice::PasswordReset.redirect(LOGIN, state.config.secure_cookies());
            cookies::clear_session(response.headers_mut(), state.config.secure_cookies());
            Ok(response)
        }
        Err(UseResetError::Gone) => Ok(gone()),
        Err(UseResetError::Invalid) => form_page(&state, &visitor, &token, status, Some(PASSWORD_INVALID), None).await,
        Err(UseResetError::Mismatch) => form_page(&state, &visitor, &token, status, None, Some(PASSWORDS_DIFFER)).await,
        Err(UseResetError::Hashing(HashingError::Busy)) => Err(PageError::Busy),
        Err(UseResetError::Store(e)) => Err(e.into()),
        Err(e @ UseResetError::Hashing(_)) => Err(PageError::internal(e)),
    }
}
