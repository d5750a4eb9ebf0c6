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
use crate::usecases::marketplace::payouts;

#[derive(utoipa::OpenApi)]
#[openapi(paths(get_payouts, patch_payouts), components(schemas(PayoutSettings, PayoutOptions, PayoutOptionsPatch)))]
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

/// The payout options; the defaults until the first change.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/payouts",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The payout options", body = PayoutSettings),
    )
)]
pub async fn get_payouts(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<PayoutSettings>> {
    let options = payouts::options(&state.core, &caller.actor).await?;
    Ok(Json(PayoutSettings { brand_id: caller.brand_slug.clone(), options }))
}

/// Changes the fields given. Customers' later choices are checked against the new options;
/// redemptions already recorded keep their value.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/payouts",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = PayoutOptionsPatch,
    responses(
        (status = 200, description = "The options after the change", body = PayoutSettings),
        (status = 400, description = "`invalid_body` or `validation_failed`: `credit_enabled_invalid`, `cash_enabled_invalid`, \
`credit_boost_percent_invalid`, `code_validity_days_invalid`, `<field>_unknown`", body = ErrorBody),
    )
)]
pub async fn patch_payouts(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<PayoutSettings>> {
    let patch = PayoutOptionsPatch::parse(&body).map_err(ApiError::validation)?;
    let options = payouts::change_options(&state.core, &caller.actor, &patch).await?;
    Ok(Json(PayoutSettings { brand_id: caller.brand_slug.clone(), options }))
}
