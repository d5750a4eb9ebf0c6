//! Team (invite with the link shown, remove; admins) and the audit log (admins).

use crate::http::routing::{get, post};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use super::confirm::{self, Confirm};
use super::extract::{require_admin, PageError, SignedIn, SignedInForm};
use super::integrations::Empty;
use super::notice::{Flash, Notice};
use super::pages::{render, when, Chrome, FieldErrors};
use crate::domain::reader::object;
use crate::domain::team::MemberInvite;
use crate::state::AppState;
use crate::usecases::people::audit;
use crate::usecases::people::enrolment::{reset_member, ResetError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::people::team::{self, InviteError, RemoveError};

const TEAM: &str = "/dashboard/team";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/team", get(team_page))
        .route("/team/invite", get(invite_page).merge(post(invite)))
        .route("/team/{user_id}/remove", get(confirm_remove).merge(post(remove)))
        .route("/team/{user_id}/reset-two-step", get(confirm_reset).merge(post(reset_two_step)))
        .route("/audit-log", get(audit_page))
}

pub struct MemberRow {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub role: String,
    pub status: String,
    pub last_sign_in: String,
    pub is_self: bool,
    pub two_step: bool,
}

#[derive(askama::Template)]
#[template(path = "dashboard/team.html")]
pub struct TeamPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub members: Vec<MemberRow>,
    /// The invitation just made: `(email, link, expiry)`.
    pub invited: Option<(String, String, String)>,
    pub notice: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/invite_member.html")]
pub struct InviteMemberPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub email: String,
    pub name: String,
    pub role: String,
    pub errors: FieldErrors,
}

async fn team_view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    invited: Option<(String, String, String)>,
    notice: Option<String>,
) -> Result<Response, PageError> {
    let members = team::members(&state.core, &session.actor())
        .await?
        .into_iter()
        .map(|m| MemberRow {
            is_self: m.id == session.record.user_id,
            two_step: m.totp_enrolled,
            id: m.id,
            name: m.name,
            email: m.email,
            role: m.role,
            status: m.status,
            last_sign_in: m.last_login_at.map_or_else(|| "never".to_owned(), |t| when(t.get())),
        })
        .collect();
    let page = TeamPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        members,
        invited,
        notice,
    };
    Ok(render(status, &page))
}

async fn team_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
) -> Result<Response, PageError> {
    require_admin(&session)?;
    team_view(&state, &session, StatusCode::OK, None, flash.text().map(str::to_owned)).await
}

fn invite_form(session: &LiveSession, status: StatusCode, form: InviteForm, errors: FieldErrors) -> Response {
    let page = InviteMemberPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        email: form.email,
        name: form.name,
        role: form.role,
        errors,
    };
    render(status, &page)
}

async fn invite_page(SignedIn(session): SignedIn) -> Result<Response, PageError> {
    require_admin(&session)?;
    let blank = InviteForm { email: String::new(), name: String::new(), role: "member".to_owned() };
    Ok(invite_form(&session, StatusCode::OK, blank, FieldErrors::default()))
}

#[derive(Debug, Deserialize)]
struct InviteForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
}

async fn invite(State(state): State<AppState>, posted: SignedInForm<InviteForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    require_admin(&session)?;
    let body = object(json!({"email": form.email, "display_name": form.name, "role": form.role}));
    let invited = match MemberInvite::parse(&body) {
        Ok(request) => team::invite(&state.core, &session.actor(), &request).await,
        Err(errors) => Err(InviteError::Invalid(errors)),
    };
    let errors = match invited {
        Ok(invited) => {
            let shown = (invited.member.email, invited.invite_url, when(invited.invite_expires_at.get()));
            return team_view(&state, &session, StatusCode::CREATED, Some(shown), None).await;
        }
        // The API's field names, shown beside the form's fields.
        Err(InviteError::Invalid(errors)) => errors,
        Err(InviteError::EmailTaken) => vec![crate::domain::FieldError::new("email", "email_taken")],
        Err(InviteError::Store(e)) => return Err(e.into()),
        Err(e @ InviteError::Random(_)) => return Err(PageError::internal(e)),
    };
    Ok(invite_form(&session, StatusCode::UNPROCESSABLE_ENTITY, form, FieldErrors(errors)))
}

/// The member `user_id` names, among the brand's (for a confirmation page).
async fn member_named(
    state: &AppState,
    session: &LiveSession,
    user_id: &str,
) -> Result<Option<crate::store::MemberRecord>, PageError> {
    let Ok(user_id) = user_id.parse::<i64>() else { return Ok(None) };
    let members = team::members(&state.core, &session.actor()).await?;
    Ok(members.into_iter().find(|m| m.id == user_id))
}

/// The confirmation page of an action on the member `user_id` names: `ask` words it.
async fn confirm_member(
    state: &AppState,
    session: &LiveSession,
    user_id: &str,
    ask: impl FnOnce(&crate::store::MemberRecord) -> Confirm,
) -> Result<Response, PageError> {
    require_admin(session)?;
    match member_named(state, session, user_id).await? {
        Some(member) => Ok(confirm::page(session, ask(&member))),
        None => Err(PageError::Redirect(TEAM)),
    }
}

async fn confirm_remove(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    SignedIn(session): SignedIn,
) -> Result<Response, PageError> {
    confirm_member(&state, &session, &user_id, |member| Confirm {
        title: format!("Remove {} from the team?", member.name),
        lines: vec![
            format!("{} ({}) is signed out everywhere and can no longer sign in.", member.name, member.email),
            "Their API keys stop working at once.".to_owned(),
            "Their listings move to you.".to_owned(),
        ],
        action: format!("/dashboard/team/{}/remove", member.id),
        button: format!("Remove {}", member.name),
        cancel: TEAM.to_owned(),
    })
    .await
}

async fn confirm_reset(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    SignedIn(session): SignedIn,
) -> Result<Response, PageError> {
    confirm_member(&state, &session, &user_id, |member| Confirm {
        title: format!("Reset two-step sign-in for {}?", member.name),
        lines: vec![
            "Do this when they lost their phone and their recovery codes.".to_owned(),
            "Their authenticator secret and recovery codes stop working, and their sessions end.".to_owned(),
            "They sign in with their password and set two-step sign-in up again.".to_owned(),
        ],
        action: format!("/dashboard/team/{}/reset-two-step", member.id),
        button: format!("Reset two-step sign-in for {}", member.name),
        cancel: TEAM.to_owned(),
    })
    .await
}

async fn reset_two_step(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: SignedInForm<Empty>,
) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let user_id = user_id.parse::<i64>().map_err(|_| PageError::BadForm)?;
    let notice = match reset_member(&state.core, &session.actor(), user_id).await {
        Ok(()) => return Ok(Notice::TwoStepReset.redirect(TEAM, state.config.secure_cookies())),
        Err(ResetError::Forbidden) => return Err(PageError::AdminOnly),
        Err(ResetError::Store(e)) => return Err(e.into()),
        Err(ResetError::OwnAccount) => "Not reset: turn your own two-step sign-in off on your account page.",
        Err(ResetError::NotFound) => "Not reset: that member has no two-step sign-in (or is no longer in the team).",
    };
    team_view(&state, &session, StatusCode::CONFLICT, None, Some(notice.to_owned())).await
}

async fn remove(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: SignedInForm<Empty>,
) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let user_id = user_id.parse::<i64>().map_err(|_| PageError::BadForm)?;
    let notice = match team::remove(&state.core, &session.actor(), user_id, None).await {
        Ok(_) => return Ok(Notice::MemberRemoved.redirect(TEAM, state.config.secure_cookies())),
        Err(RemoveError::Store(e)) => return Err(e.into()),
        Err(RemoveError::NotFound) => "Not removed: there is no such member of the team.".to_owned(),
        Err(RemoveError::CannotRemoveSelf) => "Not removed: you cannot remove yourself.".to_owned(),
        Err(RemoveError::TransferInvalid) => {
            "Not removed: their listings must go to an active member of the team.".to_owned()
        }
        Err(RemoveError::LastAdmin) => {
            "Not removed: the team would have no admin left. Make another member an admin first.".to_owned()
        }
    };
    team_view(&state, &session, StatusCode::CONFLICT, None, Some(notice)).await
}

pub struct AuditRow {
    pub at: String,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub ip: String,
}

#[derive(askama::Template)]
#[template(path = "dashboard/audit_log.html")]
pub struct AuditLogPage {
    pub chrome: Chrome,
    pub rows: Vec<AuditRow>,
    /// The id after which the next (older) entries start, when there are more.
    pub older: Option<i64>,
    /// This page starts after an entry (it is not the newest page).
    pub walking: bool,
}

#[derive(Debug, Deserialize)]
struct AuditQuery {
    after: Option<String>,
}

/// Entries a page of the audit log shows, newest first.
const AUDIT_SHOWN: u32 = 100;

async fn audit_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<AuditQuery>,
) -> Result<Response, PageError> {
    require_admin(&session)?;
    // A position that is not an entry id shows the newest entries.
    let after = query.after.and_then(|a| a.parse::<i64>().ok()).filter(|a| *a > 0);
    let page = audit::page(&state.core, &session.actor(), AUDIT_SHOWN, after).await?;
    let older = page.entries.last().filter(|_| page.has_more).map(|e| e.id);
    let rows = page
        .entries
        .into_iter()
        .map(|e| AuditRow {
            at: when(e.at.get()),
            actor: e.actor_display,
            action: e.action,
            target: e.target.unwrap_or_default(),
            ip: e.ip.unwrap_or_default(),
        })
        .collect();
    let view = AuditLogPage { chrome: Chrome::signed_in(&session), rows, older, walking: after.is_some() };
    Ok(render(StatusCode::OK, &view))
}
