//! `GET /v1/redemptions`: the polling alternative to `redemption.created` webhooks
//! (decisions 6.6), and the redemption object both share.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use chrono::DateTime;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::domain::money::Pence;
use crate::domain::FieldError;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::query::QueryParams;
use crate::store::{RedemptionCursor, RedemptionRecord, Ts};

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

/// A redemption: the `data` of a `redemption.created` event, field for field.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Redemption {
    /// Stable redemption id (`red_…`).
    #[schema(example = "red_4fQk2mZ8xYp1Lw9Tn3Vb6Hs0")]
    pub id: String,
    /// Slug of the brand the redemption was issued against.
    pub brand_id: String,
    pub customer_id: String,
    /// `credit` or `cash`.
    pub customer_choice: String,
    /// `existing_order` or `code` for credit; null for cash.
    pub credit_destination: Option<String>,
    /// Pre-boosted for credit, unboosted for cash.
    pub value_pence: i64,
    /// Always `value_pence` / 100.
    pub value: f64,
    /// `GBP`.
    pub currency: &'static str,
    /// The single-use code when the destination is `code`, else null. The full code appears
    /// only in the event and in the payout-choice answer; the service keeps only a hash, so
    /// `GET /v1/redemptions` shows it masked (`RH-****-****-****-9XKD`).
    #[schema(example = "RH-7Q2M-9XKD-4TPW-H8CN")]
    pub code: Option<String>,
    /// Expiry of the code when the destination is `code`, else null.
    pub expires_at: Option<String>,
    /// The order to credit when the destination is `existing_order`, else null.
    pub original_order_id: Option<String>,
    /// The exchange listing whose sale triggered the payout.
    pub related_listing_id: i64,
    /// When the sale completed (delivery to the buyer), RFC 3339 UTC.
    pub sale_completed_at: String,
}

impl Redemption {
    /// The redemption as stored; `code` is the full code when it could be opened, else the
    /// stored hint (redemptions recorded before codes were sealed).
    pub fn from_record(r: RedemptionRecord, code: Option<String>) -> Self {
        Self {
            id: r.id,
            brand_id: r.brand_slug,
            customer_id: r.customer_id,
            customer_choice: r.customer_choice,
            credit_destination: r.credit_destination,
            value_pence: r.value_pence,
            value: Pence::new(r.value_pence).gbp(),
            currency: "GBP",
            code: code.or(r.code_hint),
            expires_at: r.expires_at.map(|t| t.to_string()),
            original_order_id: r.original_order_id,
            related_listing_id: r.related_listing_id,
            sale_completed_at: r.sale_completed_at.to_string(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RedemptionMeta {
    pub limit: u32,
    /// More redemptions follow this page.
    pub has_more: bool,
    /// Pass back as `since` (with `after`) to read the next page; when the page is empty,
    /// the position given (null if none), so polling with it again continues from there.
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

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct RedemptionQuery {
    /// RFC 3339 timestamp: redemptions created at or after it (`since_invalid`).
    since: Option<String>,
    /// A redemption id (`next_after` of the previous page): redemptions after its position
    /// (`after_invalid` when the brand has no such redemption).
    after: Option<String>,
    /// 1 to 100; default 50.
    limit: Option<u32>,
}

/// The brand's redemptions, oldest first. Walking pages by passing `meta.next_since` and
/// `meta.next_after` back visits every redemption exactly once, even when many share one
/// timestamp. Items are the `redemption.created` data, with `code` masked.
#[utoipa::path(
    get,
    path = "/v1/redemptions",
    tag = "Redemptions",
    security(("bearer" = [])),
    params(RedemptionQuery),
    responses(
        (status = 200, description = "One page", body = RedemptionPage),
        (status = 400, description = "`validation_failed`: `since_invalid`, `after_invalid`, `limit_invalid`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn list_redemptions(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<RedemptionPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let mut params = QueryParams::new(&pairs);
    let limit = params.number("limit", DEFAULT_LIMIT, MAX_LIMIT);
    let since = params.get("since");
    let after = params.get("after").map(str::trim).filter(|a| !a.is_empty());
    params.finish()?;
    let mut errors = Vec::new();
    let since = match since.map(|s| DateTime::parse_from_rfc3339(s.trim())) {
        None => None,
        Some(Ok(t)) => Some(Ts::from(t.to_utc())),
        Some(Err(_)) => {
            errors.push(FieldError::of("since", "invalid"));
            None
        }
    };
    let cursor = match after {
        None => RedemptionCursor { since, after: None },
        Some(after) => match state.store.redemption_created_at(caller.brand_id, after).await? {
            Some(created_at) => RedemptionCursor { since: Some(created_at), after: Some(after.to_owned()) },
            None => {
                errors.push(FieldError::of("after", "invalid"));
                RedemptionCursor::default()
            }
        },
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let mut rows = state.store.redemptions_page(caller.brand_id, &cursor, i64::from(limit) + 1).await?;
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let (next_since, next_after) = match rows.last() {
        Some(last) => (Some(last.created_at), Some(last.id.clone())),
        None => (cursor.since, cursor.after),
    };
    Ok(Json(RedemptionPage {
        data: rows
            .into_iter()
            .map(|r| {
                let code = state.store.open_code(&r);
                Redemption::from_record(r, code)
            })
            .collect(),
        meta: RedemptionMeta { limit, has_more, next_since: next_since.map(|t| t.to_string()), next_after },
    }))
}
