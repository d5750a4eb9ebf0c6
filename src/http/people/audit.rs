//! `GET /v1/partner/audit-log`: who did what, newest first (decisions 8.7).

use crate::http::docs::refusals::refusals;
use crate::http::routing::get;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Router;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::domain::time::Ts;
use crate::domain::view::{AuditFilter, AuditRecord};
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::query::QueryParams;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::people::audit;

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 100;

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(audit_log),
    components(schemas(AuditLogPage, AuditLogEntry, AuditLogActor, AuditLogMeta)),
    tags((name = "Audit log", description = "What was done in the brand's account, by whom, from where"))
)]
pub struct AuditApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/partner/audit-log", get(audit_log))
}

/// Who acted.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLogActor {
    /// `user` (a person in the dashboard), `key` (an API key) or `operator` (the command line).
    #[serde(rename = "type")]
    #[schema(example = "key")]
    pub kind: String,
    /// The user's or the key's id; null for the operator.
    #[schema(example = 12)]
    pub id: Option<i64>,
    /// A name to show: the user's, or the key's user's followed by `(API key)`.
    #[schema(example = "Ada Admin (API key)")]
    pub display: String,
}

/// One entry; entries are never edited.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLogEntry {
    #[schema(example = 311)]
    pub id: i64,
    #[schema(value_type = String, format = DateTime)]
    pub at: Ts,
    pub actor: AuditLogActor,
    /// What was done: `sign_in.succeeded`, `sign_in.failed`, `sign_in.locked`, `sign_out`,
    /// `password.changed`, `password.change_failed`, `password.change_locked`,
    /// `password.reset_sent`, `password.reset`,
    /// `two_step.enrolled`, `two_step.requirement_changed`, `two_step.recovery_code_used`,
    /// `two_step.recovery_codes_renewed`, `two_step.disabled`, `two_step.reset`,
    /// `key.created`, `key.rolled`, `key.revoked`, `member.invited`, `member.invitation_resent`,
    /// `member.invitation_cancelled`, `member.joined`, `member.role_changed`, `member.removed`,
    /// `settings.updated`, `warehouses.updated`,
    /// `webhook.updated`, `webhook.secret_rotated`, `webhook.test_sent`,
    /// `webhook.deliveries_replayed`, `collection.scheduled`, `collection.rescheduled`,
    /// `collection.cancelled`, `remittance.issued`, `credit_code.redeemed`
    /// (a credit code spent, by the dashboard or the API; its target is the redemption),
    /// `listing.created`, `listing.updated`, `listing.photos_changed`, `listing.deleted`
    /// (its target the listing), `listings.imported` (a bulk commit; from the dashboard its
    /// target is the import).
    #[schema(example = "key.created")]
    pub action: String,
    /// What it was done to, as `kind:id` (`key:12`, `user:7`), when there is one.
    #[schema(example = "key:13")]
    pub target: Option<String>,
    /// The client address, when the action came over the network.
    #[schema(example = "203.0.113.9")]
    pub ip: Option<String>,
}

impl From<AuditRecord> for AuditLogEntry {
    fn from(r: AuditRecord) -> Self {
        Self {
            id: r.id,
            at: r.at,
            actor: AuditLogActor { kind: r.actor_type, id: r.actor_id, display: r.actor_display },
            action: r.action,
            target: r.target,
            ip: r.ip,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLogMeta {
    #[schema(example = 50)]
    pub limit: u32,
    /// Older entries follow this page.
    pub has_more: bool,
    /// Pass back as `after` for the next (older) page; null on the last page.
    #[schema(example = 262)]
    pub next_after: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLogPage {
    /// Newest first.
    pub data: Vec<AuditLogEntry>,
    pub meta: AuditLogMeta,
}

/// The query of `GET /v1/partner/audit-log`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// 1 to 100; default 50 (`limit_invalid`).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: u32,
    /// An entry id (`meta.next_after` of the previous page): entries older than it
    /// (`after_invalid` unless a positive integer).
    #[param(minimum = 1)]
    after: Option<i64>,
}

impl AuditQuery {
    fn read(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut params = QueryParams::new(pairs);
        let limit = params.number("limit", DEFAULT_LIMIT, MAX_LIMIT);
        let after = params.get("after").map(|text| text.trim().parse::<i64>().ok().filter(|id| *id > 0));
        let mut errors = match params.finish() {
            Ok(()) => Vec::new(),
            Err(ApiError::Validation(errors)) => errors,
            Err(other) => return Err(other),
        };
        if after == Some(None) {
            errors.push(crate::domain::FieldError::of("after", "invalid"));
        }
        if !errors.is_empty() {
            return Err(ApiError::validation(errors));
        }
        Ok(Self { limit, after: after.flatten() })
    }
}

refusals!(AuditLogRefusals: [
    Invalid("`validation_failed`: `limit_invalid`, `after_invalid`"),
]);

/// The brand's audit log, newest first. Walk older pages by passing `meta.next_after` back
/// as `after`.
#[utoipa::path(
    get,
    path = "/v1/partner/audit-log",
    tag = "Audit log",
    security(("bearer" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "One page", body = AuditLogPage),
        AuditLogRefusals,
    )
)]
pub async fn audit_log(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<AuditLogPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let query = AuditQuery::read(&pairs)?;
    let page = audit::page(&state.core, &caller.admin, query.limit, query.after, &AuditFilter::default()).await?;
    let next_after = if page.has_more { page.entries.last().map(|e| e.id) } else { None };
    Ok(Json(AuditLogPage {
        data: page.entries.into_iter().map(AuditLogEntry::from).collect(),
        meta: AuditLogMeta { limit: query.limit, has_more: page.has_more, next_after },
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use utoipa::OpenApi;

    use super::*;
    use crate::domain::audit::{ActorType, AuditAction};

    /// The documented actions and actor types are exactly the ones the use cases write.
    #[test]
    fn the_document_names_every_action_and_actor_type() {
        let doc = serde_json::to_value(AuditApi::openapi()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let backticked = |text: &Value| -> Vec<String> {
            text.as_str().unwrap_or_default().split('`').skip(1).step_by(2).map(str::to_owned).collect()
        };
        let actions = backticked(&schemas["AuditLogEntry"]["properties"]["action"]["description"]);
        let wire: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(actions, wire);
        let types = backticked(&schemas["AuditLogActor"]["properties"]["type"]["description"]);
        let wire: Vec<&str> = ActorType::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(types, wire);
    }
}
