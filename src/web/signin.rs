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

use super::cookies::{self, safe_next};
use super::extract::{guest_page, GuestForm, PageError, SessionForm, Visitor};
use super::notice::{Flash, Notice};
use super::pages::{render, Chrome, CodePage, LoginPage};
use super::{HOME, LOGIN};
use crate::domain::recovery::RecoveryCode;
use crate::domain::session::Stage;
use crate::domain::settings::TimeZone;
use crate::state::AppState;
use crate::usecases::people::sessions::sign_out;
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::people::sign_in::{sign_in, verify_code, CodeError, SignInError, Signed};

pub const INCORRECT: &str = "The email or password is incorrect.";
pub const LOCKED: &str = "Too many attempts, try again later.";
pub const WRONG_CODE: &str =
    "The code is incorrect. Enter the 6-digit code your app shows now, or one of your unused recovery codes.";
pub const SIGN_IN_AGAIN: &str = "Too many wrong codes, or the code page expired: sign in again.";

/// Where a session at `stage` continues: the code or enrolment page, or, signed in, the
/// page first asked for (`next`) or the home.
pub fn continue_url(stage: Stage, next: Option<&str>) -> String {
    match stage {
        Stage::Full => next.and_then(safe_next).unwrap_or(HOME).to_owned(),
        other => Visitor::continue_at(other).to_owned(),
    }
}

/// The page first asked for before signing in, as the `rehome_next` cookie keeps it (the
/// redirect to the sign-in page stays exactly `/dashboard/login`, decisions 9.1).
#[derive(Debug, Clone, Default)]
pub struct NextPage(pub Option<String>);

impl NextPage {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for NextPage {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        let kept = cookies::get(&parts.headers, cookies::NEXT).and_then(cookies::decode);
        Ok(Self(kept.filter(|next| safe_next(next).is_some())))
    }
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page).merge(post(login)))
        .route("/login/code", get(code_page).merge(post(code)))
        .route("/logout", post(logout))
        .route("/sign-out", post(logout))
}

/// The answer to a session that moved on: its cookie, and the page where it continues
/// (once signed in, the page first asked for, whose cookie is then spent).
pub fn continue_signed(state: &AppState, signed: &Signed, next: &NextPage) -> Response {
    let mut response = Redirect::to(&continue_url(signed.stage, next.get())).into_response();
    cookies::set_session(response.headers_mut(), &signed.token, state.config.secure_cookies());
    if signed.stage == Stage::Full && next.0.is_some() {
        cookies::clear_next(response.headers_mut());
    }
    response
}

/// The sign-in page with `error`, setting the double-submit cookie when the visitor has none.
fn login_form(
    state: &AppState,
    visitor: &Visitor,
    status: StatusCode,
    email: String,
    error: Option<String>,
    notice: Option<&'static str>,
) -> Result<Response, PageError> {
    guest_page(state, visitor, status, |csrf| LoginPage { chrome: Chrome::guest(), csrf, email, error, notice })
}

async fn login_page(State(state): State<AppState>, visitor: Visitor, flash: Flash) -> Result<Response, PageError> {
    if visitor.signed_in().is_some() {
        return Ok(Redirect::to(HOME).into_response());
    }
    login_form(&state, &visitor, StatusCode::OK, String::new(), None, flash.text())
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

async fn login(
    State(state): State<AppState>,
    next: NextPage,
    posted: GuestForm<LoginForm>,
) -> Result<Response, PageError> {
    let GuestForm { visitor, form } = posted;
    let refused =
        |error: String| login_form(&state, &visitor, StatusCode::UNAUTHORIZED, form.email.clone(), Some(error), None);
    match sign_in(&state.core, &form.email, &form.password, visitor.ip).await {
        Ok(signed) => Ok(continue_signed(&state, &signed, &next)),
        Err(SignInError::Incorrect) => refused(INCORRECT.to_owned()),
        Err(SignInError::Locked { until }) => refused(locked_until(until)),
        Err(SignInError::Busy) => Err(PageError::Busy),
        Err(SignInError::Store(e)) => Err(e.into()),
        Err(e @ (SignInError::Random(_) | SignInError::Hashing(_))) => Err(PageError::internal(e)),
    }
}

/// The lockout's sentence, saying until when in UK time (the sign-in page knows no brand's
/// zone), and how long that is.
fn locked_until(until: Option<chrono::DateTime<chrono::Utc>>) -> String {
    let Some(until) = until else { return LOCKED.to_owned() };
    let minutes = ((until - chrono::Utc::now()).num_seconds().max(1) + 59) / 60;
    let when = super::pages::when(until, TimeZone::default());
    let wait = if minutes == 1 { "a minute".to_owned() } else { format!("{minutes} minutes") };
    format!("{LOCKED} You can sign in again from {when} (in {wait}).")
}

fn code_form(session: &LiveSession, status: StatusCode, error: Option<&'static str>) -> Response {
    render(status, &CodePage { chrome: Chrome::guest(), csrf: session.record.csrf_token.clone(), error })
}

async fn code_page(visitor: Visitor) -> Response {
    match &visitor.session {
        Some(session) if session.stage() == Stage::Code => code_form(session, StatusCode::OK, None),
        Some(session) => Redirect::to(Visitor::continue_at(session.stage())).into_response(),
        None => Redirect::to(LOGIN).into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct CodeForm {
    #[serde(default)]
    code: String,
}

async fn code(
    State(state): State<AppState>,
    next: NextPage,
    posted: SessionForm<CodeForm>,
) -> Result<Response, PageError> {
    let SessionForm { session, form } = posted;
    if session.stage() != Stage::Code {
        return Ok(Redirect::to(Visitor::continue_at(session.stage())).into_response());
    }
    match verify_code(&state.core, &session, &form.code).await {
        // A recovery code was used up, and no page was asked for: the account page, saying
        // how many are left (and where to make new ones).
        Ok(signed) if RecoveryCode::parse(&form.code).is_some() && next.0.is_none() => {
            let left = crate::usecases::people::enrolment::recovery_codes_left(&state.core, &session).await?;
            let mut response = continue_signed(&state, &signed, &next);
            let headers = response.headers_mut();
            headers.insert(axum::http::header::LOCATION, axum::http::HeaderValue::from_static(super::ACCOUNT));
            let notice = format!("{}.{}", Notice::RecoveryCodeUsed.as_str(), left.max(0));
            cookies::set_notice(headers, &notice, state.config.secure_cookies());
            Ok(response)
        }
        Ok(signed) => Ok(continue_signed(&state, &signed, &next)),
        Err(CodeError::Wrong) => Ok(code_form(&session, StatusCode::UNAUTHORIZED, Some(WRONG_CODE))),
        Err(CodeError::SessionEnded) => {
            let visitor = Visitor { ip: session.ip, session: None, csrf_cookie: None };
            let mut response = login_form(
                &state,
                &visitor,
                StatusCode::UNAUTHORIZED,
                String::new(),
                Some(SIGN_IN_AGAIN.to_owned()),
                None,
            )?;
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
    let mut response = Notice::SignedOut.redirect(LOGIN, state.config.secure_cookies());
    cookies::clear_session(response.headers_mut(), state.config.secure_cookies());
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_asked_for_is_where_signing_in_ends() {
        assert_eq!(continue_url(Stage::Code, Some("/dashboard/team")), "/dashboard/login/code");
        assert_eq!(continue_url(Stage::Full, Some("/dashboard/team")), "/dashboard/team");
        assert_eq!(continue_url(Stage::Full, Some("https://evil.example")), HOME);
        assert_eq!(continue_url(Stage::Full, None), HOME);
    }
}
