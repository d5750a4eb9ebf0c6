//! Liveness and readiness probes (outside `/v1`: no key, no rate limit).

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::app::AppState;
use crate::error::ApiError;

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(live)).route("/readyz", get(ready))
}

/// The process is up and serving: fixed bytes, nothing built per request.
async fn live() -> ([(header::HeaderName, HeaderValue); 1], &'static str) {
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], r#"{"status":"ok"}"#)
}

/// The process can reach its database.
async fn ready(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    if state.store.ping().await {
        Ok(Json(json!({"status": "ready"})))
    } else {
        Err(ApiError::client(StatusCode::SERVICE_UNAVAILABLE, "not_ready", "The database is not reachable."))
    }
}
