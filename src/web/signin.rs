//! Signing in: the sign-in page, the two-step code page, and signing out.
//!
//! A failed sign-in stays on the page (401) and says "The email or password is incorrect."
//! whatever failed. A locked email (5 failures in the window) or address says "Too many
//! attempts, try again later.", for an email no account has as for one an account has
//! (failures are counted by the email as typed), so the lock tells nothing about which
//! emails have accounts. When every password worker stays busy the answer is 503 with
//! `Retry-After`, having checked nothing.

use crate::http::routing::{get, post};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use serde::Deserialize;

use super::cookies;
use super::extract::{guest_csrf, GuestForm, PageError, SessionForm, Visitor};
use super::pages::{render, Chrome, CodePage, LoginPage};
use super::{HOME, LOGIN};
use crate::app::AppState;
use crate::domain::session::Stage;
use crate::usecases::people::sessions::sign_out;
use crate::usecases::people::sign_in::{sign_in, verify_code, CodeError, SignInError, Signed};

pub const INCORRECT: &str = "The email or password is incorrect.";
pub const LOCKED: &str = "Too many attempts, try again later.";
pub const WRONG_CODE: &str = "The code is incorrect.";
pub const SIGN_IN_AGAIN: &str = "Too many wrong codes, or the code page expired: sign in again.";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page).merge(post(login)))
        .route("/login/code", get(code_page).merge(post(code)))
        .route("/logout", post(logout))
        .route("/sign-out", post(logout))
}

/// The answer to a session that moved on: its cookie, and the page where it continues.
pub fn continue_signed(state: &AppState, signed: &Signed) -> Response {
    let mut response = Redirect::to(Visitor::continue_at(signed.stage)).into_response();
    cookies::set_session(response.headers_mut(), &signed.token, state.config.secure_cookies());
    response
}

/// The sign-in page with `error`, setting the double-submit cookie when the visitor has none.
fn login_form(
    state: &AppState,
    visitor: &Visitor,
    status: StatusCode,
    email: String,
    error: Option<&'static str>,
) -> Result<Response, PageError> {
    let (csrf, fresh) = guest_csrf(state, visitor)?;
    let mut response = render(status, &LoginPage { chrome: Chrome::guest(), csrf: csrf.clone(), email, error });
    if fresh {
        cookies::set_csrf(response.headers_mut(), &csrf, state.config.secure_cookies());
    }
    Ok(response)
}

async fn login_page(State(state): State<AppState>, visitor: Visitor) -> Result<Response, PageError> {
    if visitor.signed_in().is_some() {
        return Ok(Redirect::to(HOME).into_response());
    }
    login_form(&state, &visitor, StatusCode::OK, String::new(), None)
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

async fn login(State(state): State<AppState>, posted: GuestForm<LoginForm>) -> Result<Response, PageError> {
    let GuestForm { visitor, form } = posted;
    match sign_in(&state.core, &form.email, &form.password, visitor.ip).await {
        Ok(signed) => Ok(continue_signed(&state, &signed)),
        Err(SignInError::Incorrect) => {
            login_form(&state, &visitor, StatusCode::UNAUTHORIZED, form.email, Some(INCORRECT))
        }
        Err(SignInError::Locked) => login_form(&state, &visitor, StatusCode::UNAUTHORIZED, form.email, Some(LOCKED)),
        Err(SignInError::Busy) => Err(PageError::Busy),
        Err(SignInError::Store(e)) => Err(e.into()),
        Err(e @ (SignInError::Random(_) | SignInError::Hashing(_))) => Err(PageError::internal(e)),
    }
}

async fn code_page(visitor: Visitor) -> Response {
    match &visitor.session {
        Some(session) if session.stage() == Stage::Code => render(
            StatusCode::OK,
            &CodePage { chrome: Chrome::guest(), csrf: session.record.csrf_token.clone(), error: None },
        ),
        Some(session) => Redirect::to(Visitor::continue_at(session.stage())).into_response(),
        None => Redirect::to(LOGIN).into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct CodeForm {
    #[serde(default)]
    code: String,
}

async fn code(State(state): State<AppState>, posted: SessionForm<CodeForm>) -> Result<Response, PageError> {
    let SessionForm { session, form } = posted;
    if session.stage() != Stage::Code {
        return Ok(Redirect::to(Visitor::continue_at(session.stage())).into_response());
    }
    match verify_code(&state.core, &session, &form.code).await {
        Ok(signed) => Ok(continue_signed(&state, &signed)),
        Err(CodeError::Wrong) => Ok(render(
            StatusCode::UNAUTHORIZED,
            &CodePage { chrome: Chrome::guest(), csrf: session.record.csrf_token.clone(), error: Some(WRONG_CODE) },
        )),
        Err(CodeError::SessionEnded) => {
            let visitor = Visitor { ip: session.ip, session: None, csrf_cookie: None };
            let mut response =
                login_form(&state, &visitor, StatusCode::UNAUTHORIZED, String::new(), Some(SIGN_IN_AGAIN))?;
            cookies::clear_session(response.headers_mut(), state.config.secure_cookies());
            Ok(response)
        }
        Err(CodeError::Store(e)) => Err(e.into()),
        Err(e @ (CodeError::Unreadable | CodeError::Random(_))) => Err(PageError::internal(e)),
    }
}

#[derive(Debug, Deserialize)]
struct NoFields {}

async fn logout(State(state): State<AppState>, posted: SessionForm<NoFields>) -> Result<Response, PageError> {
    sign_out(&state.core, &posted.session).await?;
    let mut response = Redirect::to(LOGIN).into_response();
    cookies::clear_session(response.headers_mut(), state.config.secure_cookies());
    Ok(response)
}
