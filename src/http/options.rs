//! `GET /v1/listings/options`: the taxonomy, with the caller's manufacturer brands.

use crate::http::routing::get;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::Router;

use crate::domain::taxonomy::Options;
use crate::error::ApiResult;
use crate::http::auth::Caller;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::options;

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
    )
)]
pub async fn options(caller: Caller, State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let options = options::options(&state.core, &caller.admin).await?;
    Ok(Json(options))
}
