//! `/v1/partner/settings/payouts`: which payout options the brand offers its customers and
//! how credit is boosted (decisions 6.4).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::payout::{PayoutOptions, PayoutOptionsPatch};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;

#[derive(utoipa::OpenApi)]
#[openapi(paths(get_payouts, patch_payouts), components(schemas(PayoutSettings, PayoutOptions, PayoutOptionsInput)))]
pub struct PayoutsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/partner/settings/payouts", get(get_payouts).patch(patch_payouts))
}

/// The brand's payout options.
#[derive(Debug, Serialize, ToSchema)]
pub struct PayoutSettings {
    /// Slug of the partner workspace.
    pub brand_id: String,
    #[serde(flatten)]
    pub options: PayoutOptions,
}

/// The body of `PATCH /v1/partner/settings/payouts`: only the fields to change. Other
/// fields are refused (`<field>_unknown`); a wrong JSON type, `null` or a number out of
/// range is `<field>_invalid`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PayoutOptionsInput {
    credit_enabled: Option<bool>,
    cash_enabled: Option<bool>,
    /// Integer 100..200.
    #[schema(minimum = 100, maximum = 200)]
    credit_boost_percent: Option<u16>,
    /// Integer 1..1095.
    #[schema(minimum = 1, maximum = 1095)]
    code_validity_days: Option<u16>,
}

/// The payout options; the defaults until the first change.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/payouts",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The payout options", body = PayoutSettings),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn get_payouts(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<PayoutSettings>> {
    let options = state.store.payout_options(caller.brand_id).await?;
    Ok(Json(PayoutSettings { brand_id: caller.brand_slug.clone(), options }))
}

/// Changes the fields given. Customers' later choices are checked against the new options;
/// redemptions already recorded keep their value.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/payouts",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = PayoutOptionsInput,
    responses(
        (status = 200, description = "The options after the change", body = PayoutSettings),
        (status = 400, description = "`invalid_body` or `validation_failed`: `credit_enabled_invalid`, `cash_enabled_invalid`, \
`credit_boost_percent_invalid`, `code_validity_days_invalid`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn patch_payouts(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<PayoutSettings>> {
    let patch = PayoutOptionsPatch::parse(&body).map_err(ApiError::validation)?;
    let options = state.store.save_payout_options(caller.brand_id, &patch).await?;
    Ok(Json(PayoutSettings { brand_id: caller.brand_slug.clone(), options }))
}
