//! `/v1/partner/settings/integrations/keys`: the brand's API keys (decisions 8.6).

use crate::http::docs::refusals::refusals;
use crate::http::routing::{delete, get, post};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Router;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;

use super::path_id;
use crate::domain::key_request::{key_prefix, KeyRequest, RollRequest};
use crate::domain::outcome::Outcome;
use crate::domain::time::Ts;
use crate::domain::view::KeyRecord;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::{JsonObject, OptionalJsonObject};
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::people::keys::{self, CreateKeyError, IssuedKey, RollKeyError};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_keys, create_key, roll_key, revoke_key),
    components(schemas(ApiKey, ApiKeyList, CreatedKey, KeyRequest, RollRequest))
)]
pub struct KeysApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/integrations/keys", get(list_keys).merge(post(create_key)))
        .route("/partner/settings/integrations/keys/{id}/roll", post(roll_key))
        .route("/partner/settings/integrations/keys/{id}", delete(revoke_key))
}

/// An API key as listed: never its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKey {
    #[schema(example = 12)]
    pub id: i64,
    #[schema(example = "Stock sync")]
    pub label: String,
    /// The first 12 characters of the secret (`rhk_` and 8 more), to recognise it.
    #[schema(example = "rhk_4fQ9xK2m")]
    pub prefix: String,
    /// `read` and/or `write`.
    #[schema(example = json!(["read", "write"]))]
    pub scopes: Vec<String>,
    /// The member whose key it is.
    #[schema(example = 7)]
    pub user_id: i64,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Ts,
    /// Null: never expires. A rolled key expires at the end of its overlap.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<Ts>,
    /// When a request last used it, exact to within a minute (null: never used).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<Ts>,
    /// The client address of that use.
    #[schema(example = "203.0.113.9")]
    pub last_used_ip: Option<String>,
    /// Null while not revoked.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<Ts>,
    /// The key's own limit when it has one (a contract tier set by the operator), else the
    /// server's default (`REHOME_RATE_LIMIT`, 60).
    #[schema(example = 60)]
    pub rate_limit_per_minute: u32,
}

impl ApiKey {
    fn new(r: KeyRecord, default_limit: u32) -> Self {
        Self {
            id: r.id,
            label: r.label,
            prefix: key_prefix(&r.lookup),
            scopes: r.scopes.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
            user_id: r.user_id,
            created_at: r.created_at,
            expires_at: r.expires_at,
            last_used_at: r.last_used_at,
            last_used_ip: r.last_used_ip,
            revoked_at: r.revoked_at,
            rate_limit_per_minute: r.rate_limit.and_then(|n| u32::try_from(n).ok()).unwrap_or(default_limit),
        }
    }
}

/// The brand's keys.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyList {
    /// Newest first, revoked and expired ones included.
    pub data: Vec<ApiKey>,
}

/// A new key with its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The whole secret, shown in this answer only: the server keeps its hash. Send it as
    /// `Authorization: Bearer <secret>`.
    #[schema(example = "rhk_4fQ9xK2mZ7pL1sV8bN3cR6tY0aWd1e2F3g")]
    pub secret: String,
}

impl CreatedKey {
    fn new(issued: IssuedKey, default_limit: u32) -> Self {
        Self { key: ApiKey::new(issued.key, default_limit), secret: issued.secret }
    }
}

fn key_not_found() -> ApiError {
    Outcome::KeyNotFound.into()
}

/// The brand's API keys, newest first, revoked ones included.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/integrations/keys",
    tag = "Team and keys",
    security(("bearer" = [])),
    responses((status = 200, description = "The keys", body = ApiKeyList))
)]
pub async fn list_keys(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<ApiKeyList>> {
    let keys = keys::keys(&state.core, &caller.admin).await?;
    let limit = state.config.rate_limit;
    Ok(Json(ApiKeyList { data: keys.into_iter().map(|k| ApiKey::new(k, limit)).collect() }))
}

refusals!(CreateKeyRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `label_required`, `label_invalid`, \
`label_too_long`, `scopes_invalid`, `user_id_invalid` (not an active member of the brand), `expires_at_invalid` \
(not RFC 3339, or not in the future), `<field>_unknown`"),
    Outcome(Outcome::KeysTooFrequent),
]);

/// Creates a key for the caller's user or another active member; the answer shows its
/// secret, this once. A key of a `member` is refused by the API (403 `forbidden`).
#[utoipa::path(
    post,
    path = "/v1/partner/settings/integrations/keys",
    tag = "Team and keys",
    security(("bearer" = [])),
    request_body = KeyRequest,
    responses(
        (status = 201, description = "The key and its secret", body = CreatedKey),
        CreateKeyRefusals,
    )
)]
pub async fn create_key(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<CreatedKey>)> {
    let request = KeyRequest::parse(&body, Utc::now()).map_err(CreateKeyError::Invalid)?;
    let issued = keys::create(&state.core, &caller.admin, &request).await?;
    Ok((StatusCode::CREATED, Json(CreatedKey::new(issued, state.config.rate_limit))))
}

refusals!(RollKeyRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `expires_in_hours_invalid`, \
`<field>_unknown`"),
    Outcome(Outcome::KeyNotFound),
    Outcome(Outcome::KeyInactive),
]);

/// Replaces a key: a new key with the same label, scopes, user and rate limit, its secret
/// shown this once. The old key keeps working for `expires_in_hours` (default 24) so
/// integrations can switch over; its `expires_at` becomes the earlier of its own and that.
/// The body may be empty.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/integrations/keys/{id}/roll",
    tag = "Team and keys",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The key's id")),
    request_body(content = Option<RollRequest>, description = "May be empty (or `{}`): the default overlap of 24 hours", content_type = "application/json"),
    responses(
        (status = 201, description = "The new key and its secret", body = CreatedKey),
        RollKeyRefusals,
    )
)]
pub async fn roll_key(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<(StatusCode, Json<CreatedKey>)> {
    let key_id = path.ok().and_then(|Path(id)| path_id(&id)).ok_or_else(key_not_found)?;
    let request = RollRequest::parse(&body).map_err(RollKeyError::Invalid)?;
    let issued = keys::roll(&state.core, &caller.admin, key_id, &request).await?;
    Ok((StatusCode::CREATED, Json(CreatedKey::new(issued, state.config.rate_limit))))
}

refusals!(RevokeKeyRefusals: [
    Outcome(Outcome::KeyNotFound),
]);

/// Revokes a key: every node refuses it within about a second. Revoking a revoked key
/// answers it unchanged.
#[utoipa::path(
    delete,
    path = "/v1/partner/settings/integrations/keys/{id}",
    tag = "Team and keys",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The key's id")),
    responses(
        (status = 200, description = "The key, `revoked_at` set", body = ApiKey),
        RevokeKeyRefusals,
    )
)]
pub async fn revoke_key(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<ApiKey>> {
    let key_id = path.ok().and_then(|Path(id)| path_id(&id)).ok_or_else(key_not_found)?;
    let key = keys::revoke(&state.core, &caller.admin, key_id).await?;
    Ok(Json(ApiKey::new(key, state.config.rate_limit)))
}
