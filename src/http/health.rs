//! Liveness and readiness probes (outside `/v1`: no key, no rate limit).

use crate::http::routing::get;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};

use crate::error::{ApiError, HttpRefusal};
use crate::http::Json;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(live)).route("/readyz", get(ready))
}

/// The process is up and serving: fixed bytes, one header (a `&str` answer would set a
/// text content type only for it to be replaced).
async fn live() -> Response {
    let mut response = Response::new(Body::from(r#"{"status":"ok"}"#));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The process can reach its database.
async fn ready(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    if state.store.ping().await {
        Ok(Json(json!({"status": "ready"})))
    } else {
        Err(HttpRefusal::NotReady.into())
    }
}
