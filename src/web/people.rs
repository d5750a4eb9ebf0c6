//! Team (admins): invite (the link shown once, after a redirect), send an invitation again
//! or cancel it, change a member's role (the brand keeps an admin), reset a member's
//! two-step sign-in, remove a member. Refusals show the catalogue's sentence
//! (`domain::outcome`).

use crate::http::routing::{get, post};
use crate::web::extract::outcome_of;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use super::confirm::{self, Asked, Confirm};
use super::extract::{record_id, AdminForm, PageError, SignedInAdmin};
use super::integrations::Empty;
use super::notice::{Flash, Notice};
use super::once::{self, Made, Shown as Once};
use super::pages::{render, when, when_or_never, Chrome, FieldErrors, SummaryLink};
use crate::domain::outcome::Outcome;
use crate::domain::reader::object;
use crate::domain::team::{MemberInvite, RoleChange, INVITE_BODY};
use crate::domain::user::{Admin, MemberStatus, Role};
use crate::state::AppState;
use crate::usecases::people::enrolment::{reset_member, ResetError};
use crate::usecases::people::resets::{self, ResetError as LinkError, Sent};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::people::team::{self, InvitationError, InviteError, RemoveError};

const TEAM: &str = "/dashboard/team";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/team", get(team_page))
        .route("/team/invite", get(invite_page).merge(post(invite)))
        .route("/team/{user_id}/remove", get(confirm_remove).merge(post(remove)))
        .route("/team/{user_id}/reset-two-step", get(confirm_reset).merge(post(reset_two_step)))
        .route("/team/{user_id}/resend-invitation", post(resend_invitation))
        .route("/team/{user_id}/reset-password", post(send_reset_link))
        .route("/team/{user_id}/cancel-invitation", get(confirm_cancel).merge(post(cancel_invitation)))
        .route("/team/{user_id}/make-admin", post(make_admin))
        .route("/team/{user_id}/make-member", get(confirm_make_member).merge(post(make_member)))
}

pub struct MemberRow {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub role: String,
    pub is_admin: bool,
    pub status: String,
    pub invited: bool,
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
    /// An invitation link just made: `(email, link, expiry)`, shown this once.
    pub invited: Option<(String, String, String)>,
    /// True when that link is a password reset link, not an invitation.
    pub reset_link: bool,
    pub notice: Option<String>,
    /// A refusal's sentence (`role="alert"`).
    pub error: Option<String>,
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

impl InviteMemberPage {
    /// The error summary, each reason linking to its field.
    pub fn error_summary(&self) -> Vec<SummaryLink> {
        self.errors.summary(|field| {
            match field {
                "email" => "email",
                "display_name" => "name",
                "role" => "role",
                _ => "invite-form",
            }
            .to_owned()
        })
    }
}

/// What the team page shows besides the members.
#[derive(Default)]
struct TeamShown {
    invited: Option<(String, String, String)>,
    reset_link: bool,
    notice: Option<String>,
    error: Option<String>,
}

async fn team_view(
    state: &AppState,
    session: &LiveSession,
    admin: &Admin,
    status: StatusCode,
    shown: TeamShown,
) -> Result<Response, PageError> {
    let members = team::members(&state.core, admin)
        .await?
        .into_iter()
        .map(|m| MemberRow {
            is_self: m.id == session.record.user_id,
            two_step: m.totp_enrolled,
            is_admin: m.role == Role::Admin.as_str(),
            invited: m.status == MemberStatus::Invited.as_str(),
            id: m.id,
            name: m.name,
            email: m.email,
            role: m.role,
            status: m.status,
            last_sign_in: when_or_never(m.last_login_at.map(|t| t.get()), session.zone()),
        })
        .collect();
    let page = TeamPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        members,
        invited: shown.invited,
        reset_link: shown.reset_link,
        notice: shown.notice,
        error: shown.error,
    };
    Ok(render(status, &page))
}

/// The team page refusing an action with the catalogue's sentence.
async fn refused(
    state: &AppState,
    session: &LiveSession,
    admin: &Admin,
    outcome: Outcome,
) -> Result<Response, PageError> {
    let status = match outcome.kind() {
        crate::domain::outcome::Kind::NotFound => StatusCode::NOT_FOUND,
        _ => StatusCode::CONFLICT,
    };
    let shown = TeamShown { error: Some(outcome.message().into_owned()), ..TeamShown::default() };
    team_view(state, session, admin, status, shown).await
}

/// The page; after an invitation was made or sent again, its link this once (`web::once`).
async fn team_page(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    flash: Flash,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let link = Once::take(&state.core, &session, &headers)?
        .filter(|s| matches!(s.made, Made::Invited | Made::InvitationResent | Made::ResetLink));
    let shown = match link {
        Some(link) => TeamShown {
            notice: Some(link.made.text().to_owned()),
            reset_link: link.made == Made::ResetLink,
            invited: Some((link.name, link.secret, link.until)),
            error: None,
        },
        None => TeamShown { notice: flash.text().map(str::to_owned), ..TeamShown::default() },
    };
    let mut response = team_view(&state, &session, &admin, StatusCode::OK, shown).await?;
    if once::carried(&headers) {
        once::spend(&mut response);
    }
    Ok(response)
}

/// 303 to the team page with an invitation link sealed for this session.
fn show_link(
    state: &AppState,
    session: &LiveSession,
    made: Made,
    email: String,
    link: String,
    until: crate::domain::time::Ts,
) -> Result<Response, PageError> {
    Once::new(made, email, link, when(until.get(), session.zone()))
        .redirect(&state.core, session, TEAM, state.config.secure_cookies())
        .map_err(PageError::internal)
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

async fn invite_page(SignedInAdmin { session, .. }: SignedInAdmin) -> Result<Response, PageError> {
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

async fn invite(State(state): State<AppState>, posted: AdminForm<InviteForm>) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let body = object(json!({"email": form.email, "display_name": form.name, "role": form.role}));
    let invited = match MemberInvite::parse(&body) {
        Ok(request) => team::invite(&state.core, &admin, &request).await,
        Err(errors) => Err(InviteError::Invalid(errors)),
    };
    let errors = match invited {
        Ok(invited) => {
            let (email, link, until) = (invited.member.email, invited.invite_url, invited.invite_expires_at);
            return show_link(&state, &session, Made::Invited, email, link, until);
        }
        // The API's field names, shown beside the form's fields.
        Err(InviteError::Invalid(errors)) => errors,
        Err(InviteError::Store(e)) => return Err(e.into()),
        Err(e @ InviteError::Random(_)) => return Err(PageError::internal(e)),
        Err(InviteError::EmailTaken) => vec![Outcome::EmailTaken.on("email")],
    };
    Ok(invite_form(&session, StatusCode::UNPROCESSABLE_ENTITY, form, FieldErrors::of(&INVITE_BODY, errors)))
}

/// The member `user_id` names, among the brand's (for a confirmation page).
async fn member_named(
    state: &AppState,
    admin: &Admin,
    user_id: &str,
) -> Result<Option<crate::domain::view::MemberRecord>, PageError> {
    let Ok(user_id) = record_id(user_id) else { return Ok(None) };
    let members = team::members(&state.core, admin).await?;
    Ok(members.into_iter().find(|m| m.id == user_id))
}

/// The confirmation page of an action on the member `user_id` names: `ask` words it;
/// `None` when the action does not apply to them (the 404 page).
async fn confirm_member(
    state: &AppState,
    SignedInAdmin { session, admin }: SignedInAdmin,
    asked: Asked,
    user_id: &str,
    ask: impl FnOnce(&crate::domain::view::MemberRecord) -> Option<Confirm>,
) -> Result<Response, PageError> {
    match member_named(state, &admin, user_id).await?.as_ref().and_then(ask) {
        Some(confirm) => Ok(confirm::page(&session, asked, confirm)),
        None => Err(PageError::NotFound),
    }
}

async fn confirm_remove(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    signed_in: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    confirm_member(&state, signed_in, asked, &user_id, |member| {
        Some(Confirm {
            title: format!("Remove {} from the team?", member.name),
            lines: vec![
                format!("{} ({}) is signed out everywhere and can no longer sign in.", member.name, member.email),
                "Their API keys stop working at once.".to_owned(),
                "Their listings move to you.".to_owned(),
            ],
            action: format!("/dashboard/team/{}/remove", member.id),
            button: format!("Remove {}", member.name),
            cancel: TEAM.to_owned(),
            keep: format!("No, keep {} on the team", member.name),
            fields: Vec::new(),
        })
    })
    .await
}

async fn confirm_reset(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    signed_in: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    confirm_member(&state, signed_in, asked, &user_id, |member| {
        Some(Confirm {
            title: format!("Reset two-step sign-in for {}?", member.name),
            lines: vec![
                "Do this when they lost their phone and their recovery codes.".to_owned(),
                "Their authenticator secret and recovery codes stop working, and their sessions end.".to_owned(),
                "They sign in with their password and set two-step sign-in up again.".to_owned(),
            ],
            action: format!("/dashboard/team/{}/reset-two-step", member.id),
            button: format!("Reset two-step sign-in for {}", member.name),
            cancel: TEAM.to_owned(),
            keep: "No, leave it as it is".to_owned(),
            fields: Vec::new(),
        })
    })
    .await
}

async fn reset_two_step(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let user_id = record_id(&user_id)?;
    let outcome = match reset_member(&state.core, &admin, user_id).await {
        Ok(()) => return Ok(Notice::TwoStepReset.redirect(TEAM, state.config.secure_cookies())),
        Err(ResetError::Store(e)) => return Err(e.into()),
        Err(ResetError::OwnAccount) => Outcome::ResetOwnTwoStep,
        Err(ResetError::NotFound) => Outcome::TwoStepNotSet,
    };
    refused(&state, &session, &admin, outcome).await
}

async fn remove(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let user_id = record_id(&user_id)?;
    match team::remove(&state.core, &admin, user_id, None).await {
        Ok(_) => Ok(Notice::MemberRemoved.redirect(TEAM, state.config.secure_cookies())),
        Err(RemoveError::Store(e)) => Err(e.into()),
        // The dashboard gives their listings to the caller, an active member.
        Err(e @ RemoveError::TransferInvalid) => Err(PageError::internal(e)),
        Err(e @ (RemoveError::NotFound | RemoveError::CannotRemoveSelf | RemoveError::LastAdmin)) => {
            let outcome = outcome_of(e)?;
            refused(&state, &session, &admin, outcome).await
        }
    }
}

/// Sends a member who has not joined a new link (the old one stops working; mailed when
/// mail is on) and shows it once.
async fn resend_invitation(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let user_id = record_id(&user_id)?;
    match team::resend_invitation(&state.core, &admin, user_id).await {
        Ok(resent) => {
            let (email, link, until) = (resent.member.email, resent.invite_url, resent.invite_expires_at);
            show_link(&state, &session, Made::InvitationResent, email, link, until)
        }
        Err(InvitationError::Store(e)) => Err(e.into()),
        Err(e @ InvitationError::Random(_)) => Err(PageError::internal(e)),
        Err(e @ (InvitationError::NotPending | InvitationError::TooFrequent)) => {
            let outcome = outcome_of(e)?;
            let status = if outcome == Outcome::InvitationsTooFrequent {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::NOT_FOUND
            };
            let shown = TeamShown { error: Some(outcome.message().into_owned()), ..TeamShown::default() };
            team_view(&state, &session, &admin, status, shown).await
        }
    }
}

/// An admin sends an active member a link to choose a new password: by email, or (mail
/// off) shown once for the admin to hand over.
async fn send_reset_link(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let user_id = record_id(&user_id)?;
    let secure = state.config.secure_cookies();
    match resets::send_reset_link(&state.core, &admin, user_id).await {
        Ok(Sent::Mailed { .. }) => Ok(Notice::ResetLinkSent.redirect(TEAM, secure)),
        Ok(Sent::Link { email, url, until }) => show_link(&state, &session, Made::ResetLink, email, url, until),
        Ok(Sent::TooFrequent) => Ok(Notice::ResetLinkTooFrequent.redirect(TEAM, secure)),
        Ok(Sent::NoSuchMember) => Err(PageError::NotFound),
        Err(LinkError::Store(e)) => Err(e.into()),
        Err(e @ (LinkError::MailOff | LinkError::Random(_))) => Err(PageError::internal(e)),
    }
}

async fn confirm_cancel(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    signed_in: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    confirm_member(&state, signed_in, asked, &user_id, |member| {
        (member.status == MemberStatus::Invited.as_str()).then(|| Confirm {
            title: format!("Cancel the invitation for {}?", member.name),
            lines: vec![
                format!("The invitation link sent to {} stops working at once.", member.email),
                format!("{} leaves the team list; you can invite them again later.", member.name),
            ],
            action: format!("/dashboard/team/{}/cancel-invitation", member.id),
            button: "Cancel invitation".to_owned(),
            cancel: TEAM.to_owned(),
            keep: "No, keep the invitation".to_owned(),
            fields: Vec::new(),
        })
    })
    .await
}

async fn cancel_invitation(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let user_id = record_id(&user_id)?;
    match team::cancel_invitation(&state.core, &admin, user_id).await {
        Ok(_) => Ok(Notice::InvitationCancelled.redirect(TEAM, state.config.secure_cookies())),
        Err(e) => {
            let outcome = outcome_of(e)?;
            refused(&state, &session, &admin, outcome).await
        }
    }
}

/// Sets a member's role through the API's use case (the brand keeps an active admin).
async fn set_role(
    state: &AppState,
    posted: AdminForm<Empty>,
    user_id: &str,
    role: Role,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let user_id = record_id(user_id)?;
    let change = RoleChange { role };
    match team::change_role(&state.core, &admin, user_id, &change).await {
        // Who made themself a member can no longer open the team page.
        Ok(_) if user_id == session.record.user_id => {
            Ok(Notice::YouAreMember.redirect(super::ACCOUNT, state.config.secure_cookies()))
        }
        Ok(_) => Ok(Notice::RoleChanged.redirect(TEAM, state.config.secure_cookies())),
        Err(e) => {
            let outcome = outcome_of(e)?;
            refused(state, &session, &admin, outcome).await
        }
    }
}

async fn make_admin(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    set_role(&state, posted, &user_id, Role::Admin).await
}

async fn make_member(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    set_role(&state, posted, &user_id, Role::Member).await
}

/// Making oneself a member takes a confirmation: the team, keys and audit pages close.
async fn confirm_make_member(
    State(state): State<AppState>,
    Path(user_id): Path<String>,
    signed_in: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    let me = signed_in.session.record.user_id;
    confirm_member(&state, signed_in, asked, &user_id, |member| {
        let own = member.id == me;
        Some(Confirm {
            title: if own { "Make yourself a member?".to_owned() } else { format!("Make {} a member?", member.name) },
            lines: vec![
                if own {
                    "You can no longer manage the team, API keys or the audit log; another admin can make you an admin \
                     again."
                        .to_owned()
                } else {
                    format!("{} can no longer manage the team, API keys or the audit log.", member.name)
                },
                "The brand always keeps at least one admin: if this would leave none, nothing changes.".to_owned(),
            ],
            action: format!("/dashboard/team/{}/make-member", member.id),
            button: if own { "Make me a member".to_owned() } else { format!("Make {} a member", member.name) },
            cancel: TEAM.to_owned(),
            keep: if own { "No, stay an admin".to_owned() } else { format!("No, keep {} an admin", member.name) },
            fields: Vec::new(),
        })
    })
    .await
}
