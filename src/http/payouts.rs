//! `/v1/partner/settings/payouts`: which payout options the brand offers its customers and
//! how credit is boosted (decisions 6.4).

use crate::http::docs::refusals::refusals;
use crate::http::routing::{get, patch};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::payout::{PayoutOptions, PayoutOptionsPatch};
use crate::domain::precondition::Precondition;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::precondition::{Guard, Tagged};
use crate::state::AppState;
use crate::usecases::marketplace::payouts::{self};

#[derive(utoipa::OpenApi)]
#[openapi(paths(get_payouts, patch_payouts), components(schemas(PayoutSettings, PayoutOptions, PayoutOptionsPatch)))]
pub struct PayoutsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/partner/settings/payouts", get(get_payouts).merge(patch(patch_payouts)))
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
        (status = 200, description = "The payout options", body = PayoutSettings, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        (status = 304, description = "Not modified: the request's `If-None-Match` names the current `ETag` (send the tag of your copy to revalidate it); no body", headers(("ETag" = String, description = "The current entity tag"))),
    )
)]
pub async fn get_payouts(caller: Caller, State(state): State<AppState>) -> ApiResult<Tagged<PayoutSettings>> {
    let options = payouts::options(&state.core, &caller.admin).await?;
    Ok(Tagged(PayoutSettings { brand_id: caller.brand_slug.clone(), options }))
}

refusals!(PatchPayoutsRefusals: [
    Outcome(Outcome::PreconditionFailed),
    Invalid("`invalid_body` or `validation_failed`: `credit_enabled_invalid`, `cash_enabled_invalid`, \
`credit_boost_percent_invalid`, `code_validity_days_invalid`, `<field>_unknown`; `payout_choice_required` (on \
`credit_enabled`): the change would leave neither credit nor cash enabled, so customers could choose nothing; \
nothing changed"),
]);

/// Changes the fields given. Customers' later choices are checked against the new options;
/// redemptions already recorded keep their value.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/payouts",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = PayoutOptionsPatch,
    params(("If-Match" = Option<String>, Header, nullable = false, description = "Change only if the section still answers this `ETag`; `*` matches any")),
    responses(
        (status = 200, description = "The options after the change", body = PayoutSettings, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        PatchPayoutsRefusals,
    )
)]
pub async fn patch_payouts(
    caller: Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Tagged<PayoutSettings>> {
    let patch = PayoutOptionsPatch::parse(&body).map_err(ApiError::validation)?;
    let guard = Guard::new(&headers, |current: &PayoutOptions| PayoutSettings {
        brand_id: caller.brand_slug.clone(),
        options: *current,
    });
    let check = |current: &PayoutOptions| guard.holds(current);
    let check: Option<Precondition<'_, PayoutOptions>> = guard.is_set().then_some(&check);
    let options = payouts::change_options(&state.core, &caller.admin, &patch, check).await?;
    Ok(Tagged(PayoutSettings { brand_id: caller.brand_slug.clone(), options }))
}
