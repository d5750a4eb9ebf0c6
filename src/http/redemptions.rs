//! `GET /v1/redemptions`: the polling alternative to `redemption.created` webhooks
//! (decisions 6.6).

use crate::http::docs::refusals::refusals;
use crate::http::routing::get;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Router;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::domain::redemption::Redemption;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::query::QueryParams;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::marketplace::redemptions::{self};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_redemptions),
    components(schemas(Redemption, RedemptionPage, RedemptionMeta)),
    tags((name = "Redemptions", description = "Trade-in payouts: polling `redemption.created` and spending credit codes"))
)]
pub struct RedemptionsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/redemptions", get(list_redemptions))
}

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct RedemptionMeta {
    pub limit: u32,
    /// More redemptions follow this page.
    pub has_more: bool,
    /// Pass back as `since` (with `after`) to read the next page; when the page is empty,
    /// the position given (null if none), so polling with it again continues from there.
    #[schema(format = DateTime)]
    pub next_since: Option<String>,
    /// Pass back as `after`.
    pub next_after: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RedemptionPage {
    /// Ascending by (creation time, id).
    pub data: Vec<Redemption>,
    pub meta: RedemptionMeta,
}

/// The query of `GET /v1/redemptions`, as read: the position is checked by the use case.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
struct RedemptionQuery<'a> {
    /// RFC 3339 timestamp: redemptions created at or after it (`since_invalid`).
    #[param(value_type = Option<String>, format = DateTime, max_length = 64)]
    since: Option<&'a str>,
    /// A redemption id (`next_after` of the previous page): redemptions after its position
    /// (`after_invalid` when the brand has no such redemption).
    #[param(value_type = Option<String>, min_length = 1, max_length = 64)]
    after: Option<&'a str>,
    /// 1 to 100; default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: u32,
}

impl<'a> RedemptionQuery<'a> {
    fn read(pairs: &'a [(String, String)]) -> Result<Self, ApiError> {
        let mut params = QueryParams::new(pairs);
        let limit = params.number("limit", DEFAULT_LIMIT, MAX_LIMIT);
        let query = Self { since: params.get("since"), after: params.get("after"), limit };
        params.finish()?;
        Ok(query)
    }
}

refusals!(ListRedemptionsRefusals: [
    Invalid("`validation_failed`: `since_invalid`, `after_invalid`, `limit_invalid`"),
]);

/// The brand's redemptions, oldest first. Walking pages by passing `meta.next_since` and
/// `meta.next_after` back visits every redemption exactly once, even when many share one
/// timestamp. Items are the `redemption.created` data, with the `code` in full.
#[utoipa::path(
    get,
    path = "/v1/redemptions",
    tag = "Redemptions",
    security(("bearer" = [])),
    params(RedemptionQuery),
    responses(
        (status = 200, description = "One page", body = RedemptionPage),
        ListRedemptionsRefusals,
    )
)]
pub async fn list_redemptions(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<RedemptionPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let query = RedemptionQuery::read(&pairs)?;
    let page = redemptions::page(&state.core, &caller.admin, query.since, query.after, query.limit).await?;
    Ok(Json(RedemptionPage {
        data: page.redemptions,
        meta: RedemptionMeta {
            limit: query.limit,
            has_more: page.has_more,
            next_since: page.next_since.map(|t| t.to_string()),
            next_after: page.next_after,
        },
    }))
}
