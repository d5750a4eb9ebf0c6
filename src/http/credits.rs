//! `POST /v1/partner/credits/redeem`: validate and spend a single-use credit code at
//! checkout (decisions 6.7).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::credit_code::PresentedCode;
use crate::domain::money::Pence;
use crate::domain::payout::ORDER_REFERENCE_MAX;
use crate::domain::reader::BodyReader;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::store::{RedemptionRecord, StoreError, Ts};

#[derive(utoipa::OpenApi)]
#[openapi(paths(redeem_credit), components(schemas(RedeemInput, CreditRedemption)))]
pub struct CreditsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/partner/credits/redeem", post(redeem_credit))
}

/// The body of `POST /v1/partner/credits/redeem`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct RedeemInput {
    /// The code as the customer gives it: case, spaces, dashes and the `RH` prefix do not
    /// matter (`code_required`).
    #[schema(example = "rh 7q2m 9xkd 4tpw h8cn")]
    code: String,
    /// The partner's order the credit is spent on, kept with the redemption (at most 128
    /// characters).
    #[schema(example = "WEB-100234")]
    order_reference: Option<String>,
    /// Validate only: nothing is spent and `redeemed_at` is null. Default false.
    dry_run: Option<bool>,
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
    pub expires_at: Option<String>,
    /// When it was spent; null on a dry run.
    pub redeemed_at: Option<String>,
    /// As given with the redeem; null on a dry run or when none was given.
    pub order_reference: Option<String>,
}

impl CreditRedemption {
    fn new(code: String, r: RedemptionRecord, spent: bool) -> Self {
        Self {
            code,
            redemption_id: r.id,
            value_pence: r.value_pence,
            value: Pence::new(r.value_pence).gbp(),
            currency: "GBP",
            expires_at: r.expires_at.map(|t| t.to_string()),
            redeemed_at: if spent { r.redeemed_at.map(|t| t.to_string()) } else { None },
            order_reference: if spent { r.redeemed_order_reference } else { None },
        }
    }
}

fn not_found() -> ApiError {
    ApiError::not_found("credit_code_not_found", "No credit code of this brand matches.")
}

fn already_redeemed() -> ApiError {
    ApiError::client(StatusCode::CONFLICT, "credit_code_already_redeemed", "This credit code has already been spent.")
}

fn expired() -> ApiError {
    ApiError::client(StatusCode::GONE, "credit_code_expired", "This credit code has expired.")
}

/// Checks a code and, unless `dry_run`, spends it. Spending is one conditional update: of
/// many concurrent redeems of one code exactly one succeeds; the others answer 409.
#[utoipa::path(
    post,
    path = "/v1/partner/credits/redeem",
    tag = "Redemptions",
    security(("bearer" = [])),
    request_body = RedeemInput,
    responses(
        (status = 200, description = "The code's value; spent unless `dry_run`", body = CreditRedemption),
        (status = 400, description = "`invalid_body` or `validation_failed`: `code_required`, `code_invalid`, \
`order_reference_invalid`, `order_reference_too_long`, `dry_run_invalid`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`credit_code_not_found` (also another brand's code)", body = ErrorBody),
        (status = 409, description = "`credit_code_already_redeemed`", body = ErrorBody),
        (status = 410, description = "`credit_code_expired`", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn redeem_credit(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<CreditRedemption>> {
    let mut r = BodyReader::new(&body, &["code", "order_reference", "dry_run"]);
    let code = r.text("code", 64);
    let code = r.require("code", code);
    let order_reference = r.text("order_reference", ORDER_REFERENCE_MAX);
    let dry_run = r.boolean("dry_run").unwrap_or(false);
    let code = r.finish(code).map_err(ApiError::validation)?.ok_or_else(|| ApiError::field("code", "code_required"))?;
    let presented = PresentedCode::parse(&code);
    if !presented.well_formed() {
        return Err(not_found());
    }
    let hash = presented.lookup_hash();
    let now = Ts::now();
    if dry_run {
        let record = state.store.credit_code(caller.brand_id, &hash).await?.ok_or_else(not_found)?;
        if record.redeemed_at.is_some() {
            return Err(already_redeemed());
        }
        if record.expires_at.is_none_or(|e| e <= now) {
            return Err(expired());
        }
        return Ok(Json(CreditRedemption::new(presented.display(), record, false)));
    }
    match state.store.redeem_credit_code(caller.brand_id, &hash, order_reference.as_deref(), now).await {
        Ok(record) => Ok(Json(CreditRedemption::new(presented.display(), record, true))),
        Err(StoreError::NotFound) => Err(not_found()),
        Err(StoreError::Conflict("credit_code_already_redeemed")) => Err(already_redeemed()),
        Err(StoreError::Conflict(_)) => Err(expired()),
        Err(e) => Err(e.into()),
    }
}
