//! `POST /v1/partner/credits/redeem`: validate and spend a single-use credit code at
//! checkout (decisions 6.7).

use crate::http::docs::refusals::refusals;
use crate::http::routing::post;
use axum::extract::State;
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::credit_code::RedeemRequest;
use crate::domain::money::Pence;
use crate::domain::redemption::CURRENCY;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::marketplace::credits::{self, CheckedCode};

#[derive(utoipa::OpenApi)]
#[openapi(paths(redeem_credit), components(schemas(RedeemRequest, CreditRedemption)))]
pub struct CreditsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/partner/credits/redeem", post(redeem_credit))
}

/// A credit code checked, or spent.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreditRedemption {
    /// The code in its display form.
    #[schema(example = "RH-7Q2M-9XKD-4TPW-H8CN")]
    pub code: String,
    /// The redemption the code was issued for (`red_…`).
    pub redemption_id: String,
    pub value_pence: i64,
    /// Always `value_pence` / 100.
    pub value: f64,
    /// `GBP`.
    pub currency: &'static str,
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    /// When it was spent; null on a dry run.
    #[schema(format = DateTime)]
    pub redeemed_at: Option<String>,
    /// As given with the redeem; null on a dry run or when none was given.
    pub order_reference: Option<String>,
}

impl From<CheckedCode> for CreditRedemption {
    fn from(checked: CheckedCode) -> Self {
        let r = checked.redemption;
        Self {
            code: checked.code,
            redemption_id: r.id,
            value_pence: r.value_pence,
            value: Pence::new(r.value_pence).gbp(),
            currency: CURRENCY,
            expires_at: r.expires_at.map(|t| t.to_string()),
            redeemed_at: if checked.spent { r.redeemed_at.map(|t| t.to_string()) } else { None },
            order_reference: if checked.spent { r.redeemed_order_reference } else { None },
        }
    }
}

refusals!(RedeemCreditRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `code_required`, `code_invalid`, \
`order_reference_invalid`, `order_reference_too_long`, `dry_run_invalid`, `<field>_unknown`"),
    Outcome(Outcome::CreditCodeNotFound),
    Outcome(Outcome::CreditCodeAlreadyRedeemed),
    Outcome(Outcome::CreditCodeExpired),
]);

/// Checks a code and, unless `dry_run`, spends it. Spending is one conditional update: of
/// many concurrent redeems of one code exactly one succeeds; the others answer 409.
#[utoipa::path(
    post,
    path = "/v1/partner/credits/redeem",
    tag = "Redemptions",
    security(("bearer" = [])),
    request_body = RedeemRequest,
    responses(
        (status = 200, description = "The code's value; spent unless `dry_run`", body = CreditRedemption),
        RedeemCreditRefusals,
    )
)]
pub async fn redeem_credit(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<CreditRedemption>> {
    let request = RedeemRequest::parse(&body).map_err(ApiError::validation)?;
    let checked = credits::redeem(&state.core, &caller.admin, &request).await?;
    Ok(Json(checked.into()))
}
