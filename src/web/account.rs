//! The signed-in home, and the user's own account (decisions 9.7, linked from their name on
//! every page): two-step sign-in with its recovery codes, the password, their sessions,
//! and (for admins) the brand's two-step requirement.
//!
//! Every action answers post/redirect/get with a one-time notice (`web::notice`), except
//! the two that show recovery codes: those are shown in the answer itself, once, and never
//! stored in a form a reload could bring back.

use crate::http::routing::{get, post};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use serde::Deserialize;

use super::cookies;
use super::extract::{AdminForm, PageError, SessionForm, SignedIn, SignedInForm, Visitor};
use super::notice::{Flash, Notice};
use super::once::{self, Made, Shown as Once};
use super::pages::{
    render, when, AccountPage, Chrome, PasswordErrors, RecoveryCodesPage, SessionRow, TwoStepErrors, TwoStepPage,
};
use super::signin::{continue_signed, continue_url, NextPage, LOCKED};
use super::{qr, ACCOUNT, LOGIN};
use crate::domain::recovery::RecoveryCode;
use crate::domain::session::Stage;
use crate::state::AppState;
use crate::usecases::overview::overview;
use crate::usecases::people::enrolment::{
    confirm_enrolment, offer, recovery_codes_left, renew_recovery_codes, set_totp_requirement, turn_off, EnrolError,
    Offer, TwoStepChangeError,
};
use crate::usecases::people::password_pool::HashingError;
use crate::usecases::people::passwords::{change_password, PasswordChangeError, PasswordCheckError};
use crate::usecases::people::sessions::{end_other_sessions, own_sessions, LiveSession};

pub const PASSWORD_INVALID: &str = "Use 12 to 128 characters. Spaces alone are not a password.";
pub const PASSWORDS_DIFFER: &str = "The passwords do not match.";
pub const CURRENT_INCORRECT: &str = "The current password is incorrect.";
const CODE_INCORRECT: &str =
    "The code is incorrect: enter the 6-digit code your app shows now, or one of your unused recovery codes.";
const REQUIRED_BY_BRAND: &str =
    "Your brand requires two-step sign-in, so it cannot be turned off. An admin can change that rule.";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account", get(account_page))
        .route("/account/two-step", get(two_step_page).merge(post(two_step)))
        .route("/account/two-step/off", post(two_step_off))
        .route("/account/recovery-codes", get(recovery_codes_page).merge(post(new_recovery_codes)))
        .route("/account/password", post(password))
        .route("/account/sessions/end-others", post(end_others))
        .route("/account/require-two-step", post(require_two_step))
}

/// The signed-in home: what needs doing (`usecases::overview`).
pub async fn home(State(state): State<AppState>, SignedIn(session): SignedIn) -> Result<Response, PageError> {
    let r = &session.record;
    let overview = overview(&state.core, &session.actor(), session.admin().as_ref(), chrono::Utc::now()).await?;
    let page = super::home::HomePage {
        chrome: Chrome::signed_in(&session),
        name: r.name.clone(),
        email: r.email.clone(),
        role: r.role.clone(),
        brand: r.brand_name.clone(),
        is_admin: session.is_admin(),
        view: super::home::HomeView::of(overview, session.zone()),
        q: "",
    };
    Ok(render(StatusCode::OK, &page))
}

async fn account_view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    password_errors: PasswordErrors,
    two_step_errors: TwoStepErrors,
    notice: Option<String>,
) -> Result<Response, PageError> {
    let r = &session.record;
    let recovery_left = if r.totp_enrolled { recovery_codes_left(&state.core, session).await? } else { 0 };
    let sessions = own_sessions(&state.core, session)
        .await?
        .into_iter()
        .map(|s| SessionRow {
            started: when(s.created_at.get(), session.zone()),
            last_seen: when(s.last_seen_at.get(), session.zone()),
            ip: s.ip.unwrap_or_default(),
            current: s.id == r.id,
        })
        .collect();
    let page = AccountPage {
        chrome: Chrome::signed_in(session),
        csrf: r.csrf_token.clone(),
        name: r.name.clone(),
        email: r.email.clone(),
        brand: r.brand_name.clone(),
        role: r.role.clone(),
        is_admin: session.is_admin(),
        totp_enrolled: r.totp_enrolled,
        require_totp: r.require_totp,
        recovery_left,
        sessions,
        password_errors,
        two_step_errors,
        notice,
    };
    Ok(render(status, &page))
}

async fn account_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
) -> Result<Response, PageError> {
    account_view(&state, &session, StatusCode::OK, PasswordErrors::default(), TwoStepErrors::default(), flash.said())
        .await
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

/// Where a signed-in user's new recovery codes are shown, once.
const CODES: &str = "/dashboard/account/recovery-codes";

/// 303 to the codes' page carrying `codes`, sealed for this session (`web::once`): a reload
/// of the page then neither makes another set nor shows these again.
fn show_codes(
    state: &AppState,
    session: &LiveSession,
    made: Made,
    codes: &[RecoveryCode],
) -> Result<Response, PageError> {
    let codes: Vec<String> = codes.iter().map(RecoveryCode::display).collect();
    Once::new(made, String::new(), codes.join("\n"), String::new())
        .redirect(&state.core, session, CODES, state.config.secure_cookies())
        .map_err(PageError::internal)
}

/// The codes just made, this once; without them (a reload, a link followed later) the
/// account page, which says how many are left and makes a new set.
async fn recovery_codes_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let shown = Once::take(&state.core, &session, &headers)?
        .filter(|s| matches!(s.made, Made::TwoStepOn | Made::RecoveryCodes));
    let mut response = match shown {
        Some(shown) => {
            let codes = shown.secret.lines().map(str::to_owned).collect();
            let enrolled_now = shown.made == Made::TwoStepOn;
            let page = RecoveryCodesPage {
                chrome: Chrome::signed_in(&session),
                codes,
                continue_to: ACCOUNT.to_owned(),
                enrolled_now,
            };
            render(StatusCode::OK, &page)
        }
        None => Redirect::to(ACCOUNT).into_response(),
    };
    if once::carried(&headers) {
        once::spend(&mut response);
    }
    Ok(response)
}

/// The recovery codes, shown once, with the way on.
fn codes_page(chrome: Chrome, codes: &[RecoveryCode], continue_to: String, enrolled_now: bool) -> Response {
    let codes = codes.iter().map(RecoveryCode::display).collect();
    render(StatusCode::OK, &RecoveryCodesPage { chrome, codes, continue_to, enrolled_now })
}

async fn two_step(
    State(state): State<AppState>,
    next: NextPage,
    posted: SessionForm<CodeForm>,
) -> Result<Response, PageError> {
    let SessionForm { session, form } = posted;
    if session.stage() == Stage::Code {
        return Ok(Redirect::to(Visitor::continue_at(Stage::Code)).into_response());
    }
    match confirm_enrolment(&state.core, &session, &form.code).await {
        Ok(enrolled) => match enrolled.signed {
            // Signing in: the new session cookie comes with the codes page.
            Some(signed) => {
                let continue_to = continue_url(signed.stage, next.get());
                let mut response = codes_page(Chrome::guest(), &enrolled.recovery_codes, continue_to, true);
                let redirect = continue_signed(&state, &signed, &next);
                for cookie in redirect.headers().get_all(axum::http::header::SET_COOKIE) {
                    response.headers_mut().append(axum::http::header::SET_COOKIE, cookie.clone());
                }
                Ok(response)
            }
            None => show_codes(&state, &session, Made::TwoStepOn, &enrolled.recovery_codes),
        },
        Err(EnrolError::WrongCode) => {
            enrolment_page(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, Some(super::signin::WRONG_CODE)).await
        }
        Err(EnrolError::Stale) => Ok(Redirect::to("/dashboard/account/two-step").into_response()),
        Err(EnrolError::Store(e)) => Err(e.into()),
        Err(e @ (EnrolError::Random(_) | EnrolError::Seal(_))) => Err(PageError::internal(e)),
    }
}

#[derive(Debug, Deserialize)]
struct PasswordOnlyForm {
    #[serde(default)]
    password: String,
}

#[derive(Debug, Deserialize)]
struct TwoStepOffForm {
    #[serde(default)]
    password: String,
    #[serde(default)]
    code: String,
}

/// Where a refused two-step change is shown: the sentence for the field it concerns, or a
/// failure of the service.
enum Refusal {
    Password(&'static str),
    Code(&'static str),
    Notice(&'static str),
    Failed(PageError),
}

fn refusal(e: TwoStepChangeError) -> Refusal {
    match e {
        TwoStepChangeError::Password(PasswordCheckError::Incorrect) => Refusal::Password(CURRENT_INCORRECT),
        TwoStepChangeError::Password(PasswordCheckError::Locked) => Refusal::Password(LOCKED),
        TwoStepChangeError::Password(PasswordCheckError::Hashing(HashingError::Busy)) => {
            Refusal::Failed(PageError::Busy)
        }
        TwoStepChangeError::Password(PasswordCheckError::Store(e)) | TwoStepChangeError::Store(e) => {
            Refusal::Failed(e.into())
        }
        TwoStepChangeError::WrongCode => Refusal::Code(CODE_INCORRECT),
        TwoStepChangeError::Required => Refusal::Notice(REQUIRED_BY_BRAND),
        TwoStepChangeError::NotEnrolled => Refusal::Notice("Two-step sign-in is already off."),
        e @ (TwoStepChangeError::Password(PasswordCheckError::Hashing(_))
        | TwoStepChangeError::Code(_)
        | TwoStepChangeError::Random(_)) => Refusal::Failed(PageError::internal(e)),
    }
}

async fn new_recovery_codes(
    State(state): State<AppState>,
    posted: SignedInForm<PasswordOnlyForm>,
) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    let errors = match renew_recovery_codes(&state.core, &session, &form.password).await {
        Ok(codes) => return show_codes(&state, &session, Made::RecoveryCodes, &codes),
        Err(e) => match refusal(e) {
            Refusal::Password(text) | Refusal::Code(text) => {
                TwoStepErrors { renew_password: Some(text), ..Default::default() }
            }
            Refusal::Notice(text) => {
                let (p, t) = (PasswordErrors::default(), TwoStepErrors::default());
                return account_view(&state, &session, StatusCode::CONFLICT, p, t, Some(text.to_owned())).await;
            }
            Refusal::Failed(e) => return Err(e),
        },
    };
    account_view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, PasswordErrors::default(), errors, None).await
}

async fn two_step_off(
    State(state): State<AppState>,
    posted: SignedInForm<TwoStepOffForm>,
) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    let errors = match turn_off(&state.core, &session, &form.password, &form.code).await {
        Ok(()) => return Ok(Notice::TwoStepOff.redirect(ACCOUNT, state.config.secure_cookies())),
        Err(e) => match refusal(e) {
            Refusal::Password(text) => TwoStepErrors { off_password: Some(text), ..Default::default() },
            Refusal::Code(text) => TwoStepErrors { off_code: Some(text), ..Default::default() },
            Refusal::Notice(text) => {
                let (p, t) = (PasswordErrors::default(), TwoStepErrors::default());
                return account_view(&state, &session, StatusCode::CONFLICT, p, t, Some(text.to_owned())).await;
            }
            Refusal::Failed(e) => return Err(e),
        },
    };
    account_view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, PasswordErrors::default(), errors, None).await
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
    let secure = state.config.secure_cookies();
    let errors = match changed {
        Ok(()) if everywhere => {
            let mut response = Notice::SignedOut.redirect(LOGIN, secure);
            cookies::clear_session(response.headers_mut(), secure);
            return Ok(response);
        }
        Ok(()) => return Ok(Notice::PasswordChanged.redirect(ACCOUNT, secure)),
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
    account_view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, errors, TwoStepErrors::default(), None).await
}

#[derive(Debug, Deserialize)]
struct NoFields {}

async fn end_others(State(state): State<AppState>, posted: SignedInForm<NoFields>) -> Result<Response, PageError> {
    end_other_sessions(&state.core, &posted.session).await?;
    Ok(Notice::OtherSessionsEnded.redirect(ACCOUNT, state.config.secure_cookies()))
}

#[derive(Debug, Deserialize)]
struct RequirementForm {
    /// A checkbox: present when ticked.
    require_two_step: Option<String>,
}

async fn require_two_step(
    State(state): State<AppState>,
    posted: AdminForm<RequirementForm>,
) -> Result<Response, PageError> {
    let AdminForm { admin, form, .. } = posted;
    let on = form.require_two_step.is_some();
    match set_totp_requirement(&state.core, &admin, on).await {
        Ok(()) => {
            let notice = if on { Notice::RequirementOn } else { Notice::RequirementOff };
            Ok(notice.redirect(ACCOUNT, state.config.secure_cookies()))
        }
        Err(e) => Err(e.into()),
    }
}
