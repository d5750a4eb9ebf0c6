//! `/v1/partner/settings/warehouses`: the warehouse address book and its one default.

use crate::http::docs::refusals::refusals;
use crate::http::routing::{delete, get, patch, post};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::settings::{NewWarehouse, Warehouse, WarehouseChanges, WarehouseEdit, WarehousePatch};
use crate::error::ApiResult;
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::warehouses::{self, CreateError};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_warehouses, create_warehouse, update_warehouse, delete_warehouse, set_default_warehouse),
    components(schemas(
        WarehouseList,
        WarehouseResponse,
        Warehouse,
        WarehousePatch,
        WarehouseChanges,
        WarehouseDeleted
    ))
)]
pub struct WarehousesApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/warehouses", get(list_warehouses).merge(post(create_warehouse)))
        .route("/partner/settings/warehouses/{id}", patch(update_warehouse).merge(delete(delete_warehouse)))
        .route("/partner/settings/warehouses/{id}/set-default", post(set_default_warehouse))
}

/// The brand's warehouses in creation order; exactly one has `is_default: true` whenever
/// there is any.
#[derive(Debug, Serialize, ToSchema)]
pub struct WarehouseList {
    /// Slug of the partner workspace.
    pub brand_id: String,
    pub warehouses: Vec<Warehouse>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WarehouseResponse {
    /// Slug of the partner workspace.
    pub brand_id: String,
    pub warehouse: Warehouse,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WarehouseDeleted {
    /// Always `true`.
    pub deleted: bool,
    /// The deleted warehouse's id.
    pub id: String,
}

/// A path id that cannot be read names no warehouse (the use case answers not found).
fn path_id(id: Result<Path<String>, PathRejection>) -> String {
    id.map(|Path(id)| id).unwrap_or_default()
}

/// The brand's warehouses.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/warehouses",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every warehouse of the brand, in creation order", body = WarehouseList),
    )
)]
pub async fn list_warehouses(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<WarehouseList>> {
    let warehouses = warehouses::list(&state.core, &caller.admin).await?;
    Ok(Json(WarehouseList { brand_id: caller.brand_slug.clone(), warehouses }))
}

refusals!(CreateWarehouseRefusals: [
    Invalid("`invalid_body` (not a JSON object) or `validation_failed`: `label_required`, \
`contact_email_invalid`, `contact_phone_invalid`, `is_default_invalid`, `<field>_invalid` (wrong JSON type), \
`<field>_too_long`, `<field>_unknown`"),
    Outcome(Outcome::WarehousesContended),
]);

/// Adds a warehouse. The brand's first warehouse becomes the default; `is_default: true`
/// makes the new one the default and demotes the previous one.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/warehouses",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = WarehousePatch,
    responses(
        (status = 201, description = "The new warehouse", body = WarehouseResponse),
        CreateWarehouseRefusals,
    )
)]
pub async fn create_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<WarehouseResponse>)> {
    let new = NewWarehouse::parse(&body).map_err(CreateError::Invalid)?;
    let warehouse = warehouses::create(&state.core, &caller.admin, &new).await?;
    Ok((StatusCode::CREATED, Json(WarehouseResponse { brand_id: caller.brand_slug.clone(), warehouse })))
}

refusals!(UpdateWarehouseRefusals: [
    Invalid("`invalid_body` (not a JSON object) or `validation_failed`: `label_required`, \
`contact_email_invalid`, `contact_phone_invalid`, `is_default_invalid` (also: un-setting the default), \
`<field>_invalid`, `<field>_too_long`, `<field>_unknown`"),
    Outcome(Outcome::WarehouseNotFound),
    Outcome(Outcome::WarehousesContended),
]);

/// Changes the fields given. `is_default: true` makes this warehouse the default and
/// demotes the previous one; `is_default: false` on the default is refused.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/warehouses/{id}",
    tag = "Settings",
    security(("bearer" = [])),
    params(("id" = String, Path, max_length = 36, description = "Warehouse UUID")),
    request_body = WarehouseChanges,
    responses(
        (status = 200, description = "The warehouse after the change", body = WarehouseResponse),
        UpdateWarehouseRefusals,
    )
)]
pub async fn update_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<WarehouseResponse>> {
    let edit = WarehouseEdit::parse(&body);
    let warehouse = warehouses::update(&state.core, &caller.admin, &path_id(id), edit).await?;
    Ok(Json(WarehouseResponse { brand_id: caller.brand_slug.clone(), warehouse }))
}

refusals!(DeleteWarehouseRefusals: [
    Outcome(Outcome::WarehouseNotFound),
    Outcome(Outcome::WarehousesContended),
]);

/// Deletes a warehouse. Deleting the default makes the first remaining warehouse (in
/// creation order) the default.
#[utoipa::path(
    delete,
    path = "/v1/partner/settings/warehouses/{id}",
    tag = "Settings",
    security(("bearer" = [])),
    params(("id" = String, Path, max_length = 36, description = "Warehouse UUID")),
    responses(
        (status = 200, description = "Deleted", body = WarehouseDeleted),
        DeleteWarehouseRefusals,
    )
)]
pub async fn delete_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<WarehouseDeleted>> {
    let id = warehouses::delete(&state.core, &caller.admin, &path_id(id)).await?;
    Ok(Json(WarehouseDeleted { deleted: true, id: id.to_string() }))
}

refusals!(SetDefaultWarehouseRefusals: [
    Outcome(Outcome::WarehouseNotFound),
    Outcome(Outcome::WarehousesContended),
]);

/// Makes a warehouse the default, demoting the previous one. No body.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/warehouses/{id}/set-default",
    tag = "Settings",
    security(("bearer" = [])),
    params(("id" = String, Path, max_length = 36, description = "Warehouse UUID")),
    responses(
        (status = 200, description = "Every warehouse of the brand after the change, in creation order", body = WarehouseList),
        SetDefaultWarehouseRefusals,
    )
)]
pub async fn set_default_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<WarehouseList>> {
    let warehouses = warehouses::set_default(&state.core, &caller.admin, &path_id(id)).await?;
    Ok(Json(WarehouseList { brand_id: caller.brand_slug.clone(), warehouses }))
}

#[cfg(test)]
mod tests {
    use utoipa::OpenApi;

    use super::*;

    #[test]
    fn the_documented_body_is_the_parsed_one() {
        let doc = serde_json::to_value(WarehousesApi::openapi()).unwrap();
        let properties = doc["components"]["schemas"]["WarehouseInput"]["properties"].as_object().unwrap();
        let mut documented: Vec<&str> = properties.keys().map(String::as_str).collect();
        let mut accepted: Vec<&str> = crate::domain::settings::WAREHOUSE_BODY.names().collect();
        documented.sort_unstable();
        accepted.sort_unstable();
        assert_eq!(documented, accepted);
    }
}
