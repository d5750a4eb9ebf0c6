//! `GET /v1/listings/options`: the taxonomy, with the caller's manufacturer brands.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::app::AppState;
use crate::domain::taxonomy::Options;
use crate::error::{ApiResult, ErrorBody};
use crate::http::auth::Caller;

#[derive(utoipa::OpenApi)]
#[openapi(paths(options), components(schemas(Options)))]
pub struct OptionsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/listings/options", get(options))
}

/// The taxonomy: allowed values of listing fields.
#[utoipa::path(
    get,
    path = "/v1/listings/options",
    tag = "Listings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The taxonomy; `brands` ends with `Other`", body = Options),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn options(caller: Caller, State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let body = match state.options.get(caller.brand_id) {
        Some(body) => body,
        None => {
            let names = state.store.manufacturer_brand_names(caller.brand_id).await?;
            let body = Bytes::from(serde_json::to_vec(&Options::with_brands(names)).map_err(anyhow::Error::from)?);
            state.options.put(caller.brand_id, body.clone());
            body
        }
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body))
}

/// Each brand's serialised options, kept briefly: the taxonomy is fixed and manufacturer
/// brands change rarely. Writers that add a brand call [`OptionsCache::invalidate`];
/// other nodes see it within the time to live.
pub struct OptionsCache {
    ttl: Duration,
    entries: Mutex<HashMap<i64, (Instant, Bytes)>>,
}

const MAX_CACHED_BRANDS: usize = 10_000;

impl OptionsCache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    fn get(&self, brand_id: i64) -> Option<Bytes> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(&brand_id).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, body)| body.clone())
    }

    fn put(&self, brand_id: i64, body: Bytes) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_CACHED_BRANDS {
            entries.clear();
        }
        entries.insert(brand_id, (Instant::now(), body));
    }

    pub fn invalidate(&self, brand_id: i64) {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).remove(&brand_id);
    }
}
