//! `POST /payments/stripe/webhook` (decisions 14.4): the payment gateway's signed notices.
//! Outside the storefront's per-address limit (the gateway sends from a few addresses, and
//! a notice turned away is a sale delayed); a notice that is not signed with the endpoint's
//! secret changes nothing and is answered 400, so the gateway shows the failure.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};

use crate::error::ApiError;
use crate::http::routing::post;
use crate::payments::stripe::MAX_NOTICE_BYTES;
use crate::state::AppState;
use crate::usecases::marketplace::payments::{self, NoticeError};

pub const WEBHOOK_PATH: &str = "/payments/stripe/webhook";

pub fn router() -> Router<AppState> {
    Router::new().route(WEBHOOK_PATH, post(webhook)).layer(DefaultBodyLimit::max(MAX_NOTICE_BYTES))
}

async fn webhook(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let signature = headers.get("stripe-signature").and_then(|v| v.to_str().ok());
    match payments::notice(&state.core, &body, signature).await {
        Ok(()) => Json(serde_json::json!({ "received": true })).into_response(),
        Err(refused) => {
            if let NoticeError::Signature(e) = &refused {
                tracing::info!(error = %e, "a payment notice refused");
            }
            ApiError::from(refused).into_response()
        }
    }
}
