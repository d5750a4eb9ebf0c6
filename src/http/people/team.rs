//! `/v1/partner/settings/team`: the brand's members, invitations, roles and removal
//! (decisions 8.5).

use crate::http::docs::refusals::refusals;
use crate::http::routing::{delete, get, patch, post};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Router;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::path_id;
use crate::domain::outcome::Outcome;
use crate::domain::team::{MemberInvite, RoleChange};
use crate::domain::time::Ts;
use crate::domain::view::MemberRecord;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::query::QueryParams;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::people::team::{self, InviteError, RoleError};

pub const TEAM_TAG: &str = "Team and keys";

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_team, invite_member, change_role, remove_member),
    components(schemas(Member, Team, InvitedMember, Removed, MemberInvite, RoleChange)),
    tags((name = "Team and keys", description = "The brand's people (invitations, roles, removal) and its API keys \
(list, create, roll, revoke). Admin keys only."))
)]
pub struct TeamApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/team", get(list_team).merge(post(invite_member)))
        .route("/partner/settings/team/{user_id}", patch(change_role).merge(delete(remove_member)))
}

/// A person on the brand's team.
#[derive(Debug, Serialize, ToSchema)]
pub struct Member {
    #[schema(example = 42)]
    pub id: i64,
    #[schema(example = "sam@acme.example")]
    pub email: String,
    #[schema(example = "Sam Stock")]
    pub display_name: String,
    /// `admin` or `member`.
    #[schema(value_type = crate::http::docs::enums::Role)]
    pub role: String,
    /// `invited` (the invitation not yet accepted) or `active`.
    #[schema(example = "active")]
    pub status: String,
    /// The member signs in with a two-step code.
    pub totp_enrolled: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Ts,
    /// Null until they first sign in to the dashboard.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_login_at: Option<Ts>,
}

impl From<MemberRecord> for Member {
    fn from(r: MemberRecord) -> Self {
        Self {
            id: r.id,
            email: r.email,
            display_name: r.name,
            role: r.role,
            status: r.status,
            totp_enrolled: r.totp_enrolled,
            created_at: r.created_at,
            last_login_at: r.last_login_at,
        }
    }
}

/// The brand's invited and active members (removed ones are not listed).
#[derive(Debug, Serialize, ToSchema)]
pub struct Team {
    /// Slug of the partner workspace.
    #[schema(example = "acme-sofas")]
    pub brand_id: String,
    /// The user whose key made the request.
    #[schema(example = 7)]
    pub caller_id: i64,
    /// In order of creation.
    pub members: Vec<Member>,
}

/// A member just invited, with their invitation link.
#[derive(Debug, Serialize, ToSchema)]
pub struct InvitedMember {
    #[serde(flatten)]
    pub member: Member,
    /// `<public url>/dashboard/invite/<token>`: opening it lets them set a password. Single
    /// use; shown only in this answer (and emailed to them when the server sends mail).
    #[schema(example = "https://rehome.example/dashboard/invite/8Qm2hJ0cP1xY7rT4kN6vB3sL9dF5gW2zA1b2C3d4E5f")]
    pub invite_url: String,
    /// 72 hours after the invitation.
    #[schema(value_type = String, format = DateTime)]
    pub invite_expires_at: Ts,
}

/// The answer of a removal.
#[derive(Debug, Serialize, ToSchema)]
pub struct Removed {
    /// Always true.
    pub removed: bool,
    /// The removed member's id.
    #[schema(example = 42)]
    pub id: i64,
    /// Listings (not deleted ones) whose seller is now `transfer_to`.
    #[schema(example = 12)]
    pub listings_transferred: u64,
}

/// The query of a removal.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
struct RemovalQuery {
    /// The active member of the brand who becomes the seller of the removed member's
    /// listings; default the caller's user (`transfer_to_invalid`).
    #[param(minimum = 1)]
    transfer_to: Option<i64>,
}

impl RemovalQuery {
    fn read(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let transfer_to = match QueryParams::new(pairs).get("transfer_to") {
            None => None,
            Some(text) => {
                Some(path_id(text.trim()).ok_or_else(|| ApiError::field("transfer_to", "transfer_to_invalid"))?)
            }
        };
        Ok(Self { transfer_to })
    }
}

fn member_not_found() -> ApiError {
    Outcome::MemberNotFound.into()
}

/// The brand's members: invited and active, in order of creation.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/team",
    tag = "Team and keys",
    security(("bearer" = [])),
    responses((status = 200, description = "The team", body = Team))
)]
pub async fn list_team(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<Team>> {
    let members = team::members(&state.core, &caller.admin).await?;
    Ok(Json(Team {
        brand_id: caller.brand_slug.clone(),
        caller_id: caller.user_id,
        members: members.into_iter().map(Member::from).collect(),
    }))
}

refusals!(InviteMemberRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `email_required`, `email_invalid`, \
`email_too_long`, `display_name_required`, `display_name_invalid`, `display_name_too_long`, `role_invalid`, \
`<field>_unknown`"),
    Outcome(Outcome::EmailTaken),
]);

/// Invites someone: creates the member (status `invited`) and a single-use link valid 72
/// hours. When the server sends mail (`REHOME_SMTP_URL`), the link is also emailed to them;
/// either way the answer carries it. A former member of this brand may be invited again
/// (under their old id).
#[utoipa::path(
    post,
    path = "/v1/partner/settings/team",
    tag = "Team and keys",
    security(("bearer" = [])),
    request_body = MemberInvite,
    responses(
        (status = 201, description = "The member and their invitation link", body = InvitedMember),
        InviteMemberRefusals,
    )
)]
pub async fn invite_member(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<InvitedMember>)> {
    let request = MemberInvite::parse(&body).map_err(InviteError::Invalid)?;
    let invited = team::invite(&state.core, &caller.admin, &request).await?;
    Ok((
        StatusCode::CREATED,
        Json(InvitedMember {
            member: invited.member.into(),
            invite_url: invited.invite_url,
            invite_expires_at: invited.invite_expires_at,
        }),
    ))
}

refusals!(ChangeRoleRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `role_required`, `role_invalid`, \
`<field>_unknown`"),
    Outcome(Outcome::MemberNotFound),
    Outcome(Outcome::LastAdmin),
]);

/// Changes a member's role. Demoting the brand's last active admin is refused.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/team/{user_id}",
    tag = "Team and keys",
    security(("bearer" = [])),
    params(("user_id" = i64, Path, description = "The member's id")),
    request_body = RoleChange,
    responses(
        (status = 200, description = "The member with the role", body = Member),
        ChangeRoleRefusals,
    )
)]
pub async fn change_role(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Member>> {
    let user_id = path.ok().and_then(|Path(id)| path_id(&id)).ok_or_else(member_not_found)?;
    let change = RoleChange::parse(&body).map_err(RoleError::Invalid)?;
    let member = team::change_role(&state.core, &caller.admin, user_id, &change).await?;
    Ok(Json(member.into()))
}

refusals!(RemoveMemberRefusals: [
    Invalid("`validation_failed`: `transfer_to_invalid` (not an active member of the \
brand, or the member removed)"),
    Outcome(Outcome::MemberNotFound),
    Outcome(Outcome::CannotRemoveSelf),
    Outcome(Outcome::LastAdmin),
]);

/// Takes a member off the team, in one step: their dashboard sessions end, their API keys
/// are revoked (every node refuses them within about a second), their unused invitation
/// links stop working, and `transfer_to` becomes the seller of their listings.
#[utoipa::path(
    delete,
    path = "/v1/partner/settings/team/{user_id}",
    tag = "Team and keys",
    security(("bearer" = [])),
    params(("user_id" = i64, Path, description = "The member's id"), RemovalQuery),
    responses(
        (status = 200, description = "Removed", body = Removed),
        RemoveMemberRefusals,
    )
)]
pub async fn remove_member(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<Removed>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let user_id = path.ok().and_then(|Path(id)| path_id(&id)).ok_or_else(member_not_found)?;
    let query = RemovalQuery::read(&pairs)?;
    let listings_transferred = team::remove(&state.core, &caller.admin, user_id, query.transfer_to).await?;
    Ok(Json(Removed { removed: true, id: user_id, listings_transferred }))
}
