//! The signed-in home and its Security section: two-step enrolment, changing the password,
//! and (for admins) the brand's two-step requirement.

use crate::http::routing::{get, post};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use serde::Deserialize;

use super::cookies;
use super::extract::{PageError, SessionForm, SignedIn, SignedInForm, Visitor};
use super::pages::{render, Chrome, HomePage, PasswordErrors, TwoStepPage};
use super::signin::{continue_signed, LOCKED};
use super::{qr, HOME, LOGIN};
use crate::app::AppState;
use crate::domain::session::Stage;
use crate::usecases::people::enrolment::{
    confirm_enrolment, offer, set_totp_requirement, EnrolError, Offer, RequirementError,
};
use crate::usecases::people::password_pool::HashingError;
use crate::usecases::people::passwords::{change_password, PasswordChangeError};
use crate::usecases::people::sessions::LiveSession;

pub const PASSWORD_INVALID: &str = "Use 12 to 128 characters. Spaces alone are not a password.";
pub const PASSWORDS_DIFFER: &str = "The passwords do not match.";
pub const CURRENT_INCORRECT: &str = "The current password is incorrect.";
const PASSWORD_CHANGED: &str = "Your password was changed; your other sessions were signed out.";
const REQUIREMENT_ON: &str = "Two-step sign-in is now required for everyone in your brand.";
const REQUIREMENT_OFF: &str = "Two-step sign-in is no longer required.";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account/two-step", get(two_step_page).merge(post(two_step)))
        .route("/account/password", post(password))
        .route("/account/require-two-step", post(require_two_step))
}

fn home_page(
    session: &LiveSession,
    status: StatusCode,
    errors: PasswordErrors,
    notice: Option<&'static str>,
) -> Response {
    let r = &session.record;
    render(
        status,
        &HomePage {
            chrome: Chrome::signed_in(session),
            csrf: r.csrf_token.clone(),
            name: r.name.clone(),
            email: r.email.clone(),
            brand: r.brand_name.clone(),
            role: r.role.clone(),
            is_admin: session.is_admin(),
            totp_enrolled: r.totp_enrolled,
            require_totp: r.require_totp,
            password_errors: errors,
            notice,
        },
    )
}

/// The signed-in home: who is signed in, and the Security section.
pub async fn home(SignedIn(session): SignedIn) -> Response {
    home_page(&session, StatusCode::OK, PasswordErrors::default(), None)
}

async fn enrolment_page(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    error: Option<&'static str>,
) -> Result<Response, PageError> {
    let signing_in = session.stage() == Stage::Enrol;
    let chrome = if signing_in { Chrome::guest() } else { Chrome::signed_in(session) };
    let csrf = session.record.csrf_token.clone();
    let page = match offer(&state.core, session).await.map_err(PageError::internal)? {
        Offer::Enrolled => TwoStepPage {
            chrome,
            csrf,
            enrolled: true,
            signing_in,
            secret: String::new(),
            url: String::new(),
            qr_svg: String::new(),
            error: None,
        },
        Offer::Pending { secret, url } => {
            let qr_svg = qr::svg(&url, "QR code of the two-step setup URL").unwrap_or_default();
            TwoStepPage { chrome, csrf, enrolled: false, signing_in, secret, url, qr_svg, error }
        }
    };
    Ok(render(status, &page))
}

/// Enrolment: a signed-in user, or one whose brand requires two-step before signing in.
async fn two_step_page(State(state): State<AppState>, visitor: Visitor) -> Result<Response, PageError> {
    match &visitor.session {
        Some(session) if matches!(session.stage(), Stage::Enrol | Stage::Full) => {
            enrolment_page(&state, session, StatusCode::OK, None).await
        }
        Some(session) => Ok(Redirect::to(Visitor::continue_at(session.stage())).into_response()),
        None => Ok(Redirect::to(LOGIN).into_response()),
    }
}

#[derive(Debug, Deserialize)]
struct CodeForm {
    #[serde(default)]
    code: String,
}

async fn two_step(State(state): State<AppState>, posted: SessionForm<CodeForm>) -> Result<Response, PageError> {
    let SessionForm { session, form } = posted;
    if session.stage() == Stage::Code {
        return Ok(Redirect::to(Visitor::continue_at(Stage::Code)).into_response());
    }
    match confirm_enrolment(&state.core, &session, &form.code).await {
        Ok(Some(signed)) => Ok(continue_signed(&state, &signed)),
        Ok(None) => Ok(Redirect::to(HOME).into_response()),
        Err(EnrolError::WrongCode) => {
            enrolment_page(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, Some(super::signin::WRONG_CODE)).await
        }
        Err(EnrolError::Stale) => Ok(Redirect::to("/dashboard/account/two-step").into_response()),
        Err(EnrolError::Store(e)) => Err(e.into()),
        Err(e @ (EnrolError::Random(_) | EnrolError::Seal(_))) => Err(PageError::internal(e)),
    }
}

#[derive(Debug, Deserialize)]
struct PasswordForm {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
    #[serde(default)]
    confirm_password: String,
    /// A checkbox: present when ticked.
    sign_out_everywhere: Option<String>,
}

async fn password(State(state): State<AppState>, posted: SignedInForm<PasswordForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    let everywhere = form.sign_out_everywhere.is_some();
    let changed = change_password(
        &state.core,
        &session,
        &form.current_password,
        &form.new_password,
        &form.confirm_password,
        everywhere,
    )
    .await;
    let errors = match changed {
        Ok(()) if everywhere => {
            let mut response = Redirect::to(LOGIN).into_response();
            cookies::clear_session(response.headers_mut(), state.config.secure_cookies());
            return Ok(response);
        }
        Ok(()) => return Ok(home_page(&session, StatusCode::OK, PasswordErrors::default(), Some(PASSWORD_CHANGED))),
        Err(PasswordChangeError::CurrentIncorrect) => {
            PasswordErrors { current: Some(CURRENT_INCORRECT), ..Default::default() }
        }
        Err(PasswordChangeError::Invalid) => PasswordErrors { new: Some(PASSWORD_INVALID), ..Default::default() },
        Err(PasswordChangeError::Locked) => PasswordErrors { current: Some(LOCKED), ..Default::default() },
        Err(PasswordChangeError::Mismatch) => PasswordErrors { confirm: Some(PASSWORDS_DIFFER), ..Default::default() },
        Err(PasswordChangeError::Hashing(HashingError::Busy)) => return Err(PageError::Busy),
        Err(PasswordChangeError::Store(e)) => return Err(e.into()),
        Err(e @ PasswordChangeError::Hashing(_)) => return Err(PageError::internal(e)),
    };
    Ok(home_page(&session, StatusCode::UNPROCESSABLE_ENTITY, errors, None))
}

#[derive(Debug, Deserialize)]
struct RequirementForm {
    /// A checkbox: present when ticked.
    require_two_step: Option<String>,
}

async fn require_two_step(
    State(state): State<AppState>,
    posted: SignedInForm<RequirementForm>,
) -> Result<Response, PageError> {
    let SignedInForm { mut session, form } = posted;
    let on = form.require_two_step.is_some();
    match set_totp_requirement(&state.core, &session.actor(), on).await {
        Ok(()) => {
            session.record.require_totp = on;
            let notice = if on { REQUIREMENT_ON } else { REQUIREMENT_OFF };
            Ok(home_page(&session, StatusCode::OK, PasswordErrors::default(), Some(notice)))
        }
        Err(RequirementError::Forbidden) => Err(PageError::Forbidden),
        Err(RequirementError::Store(e)) => Err(e.into()),
    }
}
