//! The operator API (`/ops/v1`, decisions 7.3): what buyers and customers do on the
//! marketplace side. It exists only when `REHOME_OPS_TOKEN` is set, and every request must
//! carry `Authorization: Bearer <REHOME_OPS_TOKEN>` (compared in constant time).
//!
//! It is not rate limited: its one caller is the marketplace itself, and with a token of at
//! least 16 characters guessing is hopeless however fast one asks.

use crate::http::docs::refusals::refusals;
use crate::http::routing::post;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use chrono::Utc;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

use crate::config::Secret;
use crate::domain::money::Pence;
use crate::domain::order::{order_reference, Completion, OrderRequest};
use crate::domain::outcome::Outcome;
use crate::domain::payout::PayoutChoice;
use crate::domain::redemption::Redemption;
use crate::domain::view::OrderRecord;
use crate::domain::wallet::RunRequest;
use crate::error::{ApiError, ApiResult, HttpRefusal};
use crate::http::body::{parse_object, payload_too_large, JsonObject};
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::marketplace::orders::{self};
use crate::usecases::marketplace::payout_links;
use crate::usecases::marketplace::payouts::{self};
use crate::usecases::wallet;

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(create_order, complete_order, payout_choice, payout_link, count_view, run_remittances),
    components(schemas(Order, OrderRequest, Completion, PayoutChoice, PayoutLinkAnswer, ViewCount, RunRequest, RunAnswer)),
    tags((name = "Operator", description = "The marketplace side (`/ops/v1`): orders, deliveries, customers' payout \
choices and views. Present only when the server has `REHOME_OPS_TOKEN`; authenticated with \
`Authorization: Bearer <REHOME_OPS_TOKEN>`, not an API key; not rate limited."))
)]
pub struct OpsApi;

/// The `/ops/v1` router, or `None` when no operator token is configured (the paths then
/// answer 404 `not_found` like any unknown route).
pub fn router(state: &AppState) -> Option<Router<AppState>> {
    state.config.ops_token.as_ref()?;
    Some(
        Router::new()
            .route("/orders", post(create_order))
            .route("/orders/{id}/complete", post(complete_order))
            .route("/orders/{id}/payout-choice", post(payout_choice))
            .route("/orders/{id}/payout-link", post(payout_link))
            .route("/listings/{id}/views", post(count_view))
            .route("/remittances/run", post(run_remittances))
            .fallback(super::unknown_route)
            .method_not_allowed_fallback(super::method_not_allowed)
            .layer(middleware::from_fn_with_state(state.clone(), gate)),
    )
}

/// Lets through only requests bearing the operator token.
async fn gate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(expected) = state.config.ops_token.as_ref().map(Secret::expose) else {
        return super::unknown_route().await.into_response();
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    match presented {
        None => ApiError::from(HttpRefusal::MissingOperatorToken).into_response(),
        Some(token) if token_matches(token, expected) => next.run(request).await,
        Some(_) => ApiError::from(HttpRefusal::WrongOperatorToken).into_response(),
    }
}

/// Compares digests, so that neither the content nor the length of the token leaks
/// through timing.
fn token_matches(presented: &str, expected: &str) -> bool {
    let a = Sha256::digest(presented.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.ct_eq(&b).into()
}

/// An order as the operator API answers it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Order {
    pub id: i64,
    /// `#<id>`.
    pub reference: String,
    pub listing_id: i64,
    /// Slug of the brand that sold.
    pub brand_id: String,
    /// `clearance` or `exchange`.
    #[schema(value_type = crate::http::docs::enums::Channel)]
    pub channel: &'static str,
    pub quantity: i64,
    /// The listing's sale price (else regular price) at the time of sale.
    pub unit_price_pence: i64,
    /// `unit_price_pence` / 100.
    pub unit_price: f64,
    /// `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub buyer_window_start: String,
    /// `YYYY-MM-DD`, start + 9 days.
    #[schema(format = Date)]
    pub buyer_window_end: String,
    /// `placed` or `completed`.
    pub status: &'static str,
    #[schema(format = DateTime)]
    pub completed_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<OrderRecord> for Order {
    fn from(o: OrderRecord) -> Self {
        Self {
            id: o.id,
            reference: order_reference(o.id),
            listing_id: o.listing_id,
            brand_id: o.brand_slug,
            channel: o.channel.as_str(),
            quantity: o.quantity,
            unit_price_pence: o.unit_price_pence,
            unit_price: Pence::new(o.unit_price_pence).gbp(),
            buyer_window_start: o.buyer_window_start.to_string(),
            buyer_window_end: o.buyer_window_end.to_string(),
            status: o.status.as_str(),
            completed_at: o.completed_at.map(|t| t.to_string()),
            created_at: o.created_at.to_string(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ViewCount {
    pub listing_id: i64,
    pub view_count: i64,
}

fn listing_not_found() -> ApiError {
    Outcome::UnknownListing.into()
}

fn order_not_found() -> ApiError {
    Outcome::UnknownOrder.into()
}

fn path_id(path: Result<Path<String>, PathRejection>) -> Option<i64> {
    path.ok().and_then(|Path(id)| id.parse().ok())
}

/// A body that may be left out entirely (read as `{}`).
fn optional_object(body: Result<Bytes, BytesRejection>) -> Result<Map<String, Value>, ApiError> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            payload_too_large()
        } else {
            crate::http::body::unreadable(&rejection)
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        Ok(Map::new())
    } else {
        parse_object(&bytes)
    }
}

refusals!(CreateOrderRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `listing_id_required`, `listing_id_invalid`, \
`quantity_invalid`, `buyer_window_start_invalid`, `<field>_unknown`"),
    Outcome(Outcome::UnknownListing),
    Outcome(Outcome::ListingNotActive),
    Outcome(Outcome::InsufficientStock),
]);

/// A buyer buys. The stock is taken atomically (never oversold however many buy at once)
/// and the listing closes when it reaches zero.
#[utoipa::path(
    post,
    path = "/ops/v1/orders",
    tag = "Operator",
    security(("ops" = [])),
    request_body = OrderRequest,
    responses(
        (status = 201, description = "The order", body = Order),
        CreateOrderRefusals,
    )
)]
pub async fn create_order(
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<Order>)> {
    let request = OrderRequest::parse(&body, Utc::now().date_naive()).map_err(ApiError::validation)?;
    let order = orders::place(&state.core, &request).await?;
    Ok((StatusCode::CREATED, Json(order.into())))
}

refusals!(CompleteOrderRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `completed_at_invalid`, `<field>_unknown`"),
    Outcome(Outcome::UnknownOrder),
    Outcome(Outcome::OrderAlreadyCompleted),
]);

/// The order was delivered to the buyer: the sale is complete.
#[utoipa::path(
    post,
    path = "/ops/v1/orders/{id}/complete",
    tag = "Operator",
    security(("ops" = [])),
    params(("id" = i64, Path, description = "Order id")),
    request_body(content = Option<Completion>, description = "Optional; an empty body means now", content_type = "application/json"),
    responses(
        (status = 200, description = "The completed order", body = Order),
        CompleteOrderRefusals,
    )
)]
pub async fn complete_order(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<Order>> {
    let id = path_id(path).ok_or_else(order_not_found)?;
    let body = optional_object(body)?;
    let completion = Completion::parse(&body).map_err(ApiError::validation)?;
    let order = orders::complete(&state.core, id, completion).await?;
    Ok(Json(order.into()))
}

refusals!(PayoutChoiceRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `customer_id_required`, `customer_choice_required`, \
`customer_choice_invalid`, `credit_destination_required`, `credit_destination_invalid`, `original_order_id_required`, \
`original_order_id_invalid`, `<field>_too_long`, `<field>_unknown`"),
    Outcome(Outcome::UnknownOrder),
    Outcome(Outcome::OrderNotExchange),
    Outcome(Outcome::OrderNotCompleted),
    Outcome(Outcome::CustomerChoiceNotOffered),
    Outcome(Outcome::PayoutChoiceExists),
]);

/// The customer whose trade-in sold chooses how to be paid. Records the redemption and
/// emits `redemption.created` in the same transaction; answers the redemption, whose
/// `code` (credit to a code) is shown in full here and in the event only.
#[utoipa::path(
    post,
    path = "/ops/v1/orders/{id}/payout-choice",
    tag = "Operator",
    security(("ops" = [])),
    params(("id" = i64, Path, description = "Order id of the sold exchange item")),
    request_body = PayoutChoice,
    responses(
        (status = 201, description = "The redemption (the event's data)", body = Redemption),
        PayoutChoiceRefusals,
    )
)]
pub async fn payout_choice(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<Redemption>)> {
    let id = path_id(path).ok_or_else(order_not_found)?;
    let choice = PayoutChoice::parse(&body).map_err(ApiError::validation)?;
    let redemption = payouts::choose(&state.core, id, choice).await?;
    Ok((StatusCode::CREATED, Json(redemption)))
}

/// A customer's payout link: its page's address, shown once, and when it stops working.
#[derive(Debug, Serialize, ToSchema)]
pub struct PayoutLinkAnswer {
    /// The page where the customer chooses credit or cash; works once.
    pub url: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

refusals!(PayoutLinkRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `customer_id_invalid`, `customer_id_too_long`"),
    Outcome(Outcome::UnknownOrder),
    Outcome(Outcome::OrderNotExchange),
    Outcome(Outcome::OrderNotCompleted),
    Outcome(Outcome::PayoutChoiceExists),
]);

/// A link for the customer of a completed exchange order to choose a payout on a page
/// (`/marketplace/payouts/{token}`): single use, 14 days. The body is optional:
/// `{"customer_id": "…"}` names the customer the choice is recorded for (default
/// `order-<id>`). The page records the choice as `payout-choice` does (same redemption,
/// same `redemption.created` event).
#[utoipa::path(
    post,
    path = "/ops/v1/orders/{id}/payout-link",
    tag = "Operator",
    security(("ops" = [])),
    params(("id" = i64, Path, description = "Order id of the sold exchange item")),
    responses(
        (status = 201, description = "The link", body = PayoutLinkAnswer),
        PayoutLinkRefusals,
    )
)]
pub async fn payout_link(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<(StatusCode, Json<PayoutLinkAnswer>)> {
    let id = path_id(path).ok_or_else(order_not_found)?;
    let body = optional_object(body)?;
    let customer_id = match body.get("customer_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err(ApiError::field("customer_id", "customer_id_invalid"))
        }
        Some(Value::String(s)) if s.chars().count() > crate::domain::payout::CUSTOMER_ID_MAX => {
            return Err(ApiError::field("customer_id", "customer_id_too_long"))
        }
        Some(Value::String(s)) => Some(s.trim().to_owned()),
        Some(_) => return Err(ApiError::field("customer_id", "customer_id_invalid")),
    };
    if let Some(unknown) = body.keys().find(|k| k.as_str() != "customer_id") {
        return Err(ApiError::field(unknown, format!("{unknown}_unknown")));
    }
    let link = payout_links::create(&state.core, id, customer_id).await?;
    Ok((StatusCode::CREATED, Json(PayoutLinkAnswer { url: link.url, expires_at: link.expires_at.to_string() })))
}

refusals!(CountViewRefusals: [
    Outcome(Outcome::UnknownListing),
]);

/// Counts one view of a listing.
#[utoipa::path(
    post,
    path = "/ops/v1/listings/{id}/views",
    tag = "Operator",
    security(("ops" = [])),
    params(("id" = i64, Path, description = "Listing id")),
    responses(
        (status = 200, description = "The listing's view count after this view", body = ViewCount),
        CountViewRefusals,
    )
)]
pub async fn count_view(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<ViewCount>> {
    let id = path_id(path).ok_or_else(listing_not_found)?;
    let view_count = orders::count_view(&state.core, id).await?;
    Ok(Json(ViewCount { listing_id: id, view_count }))
}

/// What a remittance run issued.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunAnswer {
    /// Ids of the statements issued, one per brand that had entries to pay; empty when a
    /// run already paid them.
    pub issued: Vec<i64>,
}

refusals!(RunRemittancesRefusals: [
    Invalid("`validation_failed`: `as_of_invalid` (not RFC 3339, out of range or in the future)"),
]);

/// Runs the remittance now: one statement per brand of every entry
/// available at `as_of` and not yet paid. Running it again issues nothing new.
#[utoipa::path(
    post,
    path = "/ops/v1/remittances/run",
    tag = "Operator",
    security(("ops" = [])),
    request_body(content = Option<RunRequest>, content_type = "application/json"),
    responses(
        (status = 200, description = "The statements issued", body = RunAnswer),
        RunRemittancesRefusals,
    )
)]
pub async fn run_remittances(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<RunAnswer>> {
    let body = optional_object(body)?;
    let request = RunRequest::parse(&body).map_err(ApiError::validation)?;
    let now = Utc::now();
    let as_of = match request.as_of {
        Some(at) if at > now => return Err(ApiError::field("as_of", "as_of_invalid")),
        Some(at) => at,
        None => now,
    };
    let mail = state.config.mail_enabled().then_some(&state.core.mail);
    let issued = wallet::run(&state.core.store, as_of, mail).await.map_err(|e| ApiError::Internal(e.into()))?;
    Ok(Json(RunAnswer { issued: issued.iter().map(|r| r.id).collect() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_matches() {
        let token = "ops-token-0123456789";
        assert!(token_matches(token, token));
        assert!(!token_matches("ops-token-012345678", token));
        assert!(!token_matches("ops-token-01234567890", token));
        assert!(!token_matches("", token));
    }
}
