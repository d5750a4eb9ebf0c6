//! `/v1/partner/settings/warehouses`: the warehouse address book and its one default.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::settings::{NewWarehouse, Warehouse, WarehouseChange, WarehouseId, WarehousePatch};
use crate::domain::FieldError;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::store::StoreError;

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_warehouses, create_warehouse, update_warehouse, delete_warehouse, set_default_warehouse),
    components(schemas(WarehouseList, WarehouseResponse, Warehouse, WarehouseInput, WarehouseDeleted))
)]
pub struct WarehousesApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/warehouses", get(list_warehouses).post(create_warehouse))
        .route("/partner/settings/warehouses/{id}", patch(update_warehouse).delete(delete_warehouse))
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

/// A warehouse body. On create `label` is required; on PATCH send only the fields to
/// change. Strings are trimmed; `""` or `null` clears a field (not the label); an empty
/// `country` means `United Kingdom`. Other fields are refused (`<field>_unknown`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct WarehouseInput {
    /// Short name shown in the dashboard (`label_required`).
    #[schema(max_length = 80, example = "Leeds DC")]
    label: Option<String>,
    #[schema(max_length = 120)]
    contact_name: Option<String>,
    /// An email address with a public domain (`contact_email_invalid`).
    #[schema(max_length = 254)]
    contact_email: Option<String>,
    /// 7 to 15 digits with optional `+`, spaces, dashes, dots and brackets (`contact_phone_invalid`).
    #[schema(max_length = 32)]
    contact_phone: Option<String>,
    #[schema(max_length = 160)]
    address_1: Option<String>,
    #[schema(max_length = 160)]
    address_2: Option<String>,
    #[schema(max_length = 80)]
    city: Option<String>,
    #[schema(max_length = 16)]
    postcode: Option<String>,
    /// Default `United Kingdom` (`UK` and `GB` are written so too).
    #[schema(max_length = 80)]
    country: Option<String>,
    /// `true` makes this warehouse the default and demotes the previous one. A brand's
    /// first warehouse is the default whatever this says. `false` on the default is
    /// refused (`is_default_invalid`): make another warehouse the default instead.
    is_default: Option<bool>,
}

/// The brand's warehouses.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/warehouses",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every warehouse of the brand, in creation order", body = WarehouseList),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn list_warehouses(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<WarehouseList>> {
    let warehouses = state.store.warehouses(caller.brand_id).await?;
    Ok(Json(WarehouseList { brand_id: caller.brand_slug.clone(), warehouses }))
}

/// Adds a warehouse. The brand's first warehouse becomes the default; `is_default: true`
/// makes the new one the default and demotes the previous one.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/warehouses",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = WarehouseInput,
    responses(
        (status = 201, description = "The new warehouse", body = WarehouseResponse),
        (status = 400, description = "`invalid_body` (not a JSON object) or `validation_failed`: `label_required`, \
`contact_email_invalid`, `contact_phone_invalid`, `is_default_invalid`, `<field>_invalid` (wrong JSON type), \
`<field>_too_long`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn create_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<WarehouseResponse>)> {
    let new = NewWarehouse::parse(&body).map_err(ApiError::validation)?;
    let warehouse = state.store.create_warehouse(caller.brand_id, &new).await.map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(WarehouseResponse { brand_id: caller.brand_slug.clone(), warehouse })))
}

/// Changes the fields given. `is_default: true` makes this warehouse the default and
/// demotes the previous one; `is_default: false` on the default is refused.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/warehouses/{id}",
    tag = "Settings",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Warehouse UUID")),
    request_body = WarehouseInput,
    responses(
        (status = 200, description = "The warehouse after the change", body = WarehouseResponse),
        (status = 400, description = "`invalid_body` (not a JSON object) or `validation_failed`: `label_required`, \
`contact_email_invalid`, `contact_phone_invalid`, `is_default_invalid` (also: un-setting the default), \
`<field>_invalid`, `<field>_too_long`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`warehouse_not_found`: no such warehouse in the caller's brand", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn update_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<WarehouseResponse>> {
    let id = warehouse_id(id)?;
    let current = state.store.warehouse(caller.brand_id, id).await?.ok_or_else(warehouse_not_found)?;
    let patch = WarehousePatch::parse(&body, current.is_default).map_err(ApiError::validation)?;
    match state.store.update_warehouse(caller.brand_id, id, &patch).await.map_err(store_error)? {
        WarehouseChange::Done(warehouse) => {
            Ok(Json(WarehouseResponse { brand_id: caller.brand_slug.clone(), warehouse }))
        }
        WarehouseChange::NotFound => Err(warehouse_not_found()),
        WarehouseChange::DefaultRequired => Err(ApiError::validation(vec![FieldError::of("is_default", "invalid")])),
    }
}

/// Deletes a warehouse. Deleting the default makes the first remaining warehouse (in
/// creation order) the default.
#[utoipa::path(
    delete,
    path = "/v1/partner/settings/warehouses/{id}",
    tag = "Settings",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Warehouse UUID")),
    responses(
        (status = 200, description = "Deleted", body = WarehouseDeleted),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`warehouse_not_found`: no such warehouse in the caller's brand", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn delete_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<WarehouseDeleted>> {
    let id = warehouse_id(id)?;
    match state.store.delete_warehouse(caller.brand_id, id).await.map_err(store_error)? {
        WarehouseChange::Done(()) => Ok(Json(WarehouseDeleted { deleted: true, id: id.to_string() })),
        WarehouseChange::NotFound | WarehouseChange::DefaultRequired => Err(warehouse_not_found()),
    }
}

/// Makes a warehouse the default, demoting the previous one. No body.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/warehouses/{id}/set-default",
    tag = "Settings",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Warehouse UUID")),
    responses(
        (status = 200, description = "Every warehouse of the brand after the change, in creation order", body = WarehouseList),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`warehouse_not_found`: no such warehouse in the caller's brand", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn set_default_warehouse(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<WarehouseList>> {
    let id = warehouse_id(id)?;
    match state.store.set_default_warehouse(caller.brand_id, id).await.map_err(store_error)? {
        WarehouseChange::Done(warehouses) => {
            Ok(Json(WarehouseList { brand_id: caller.brand_slug.clone(), warehouses }))
        }
        WarehouseChange::NotFound | WarehouseChange::DefaultRequired => Err(warehouse_not_found()),
    }
}

/// A path id that is not a UUID names no warehouse.
fn warehouse_id(id: Result<Path<String>, PathRejection>) -> ApiResult<WarehouseId> {
    id.ok().and_then(|Path(id)| WarehouseId::parse(&id)).ok_or_else(warehouse_not_found)
}

fn warehouse_not_found() -> ApiError {
    ApiError::not_found("warehouse_not_found", "No warehouse with this id in your brand.")
}

/// Losing every retry of a race on the one-default index is a conflict to try again, not
/// a server fault.
fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Conflict(_) => ApiError::client(
            StatusCode::CONFLICT,
            "edit_conflict",
            "Another change to this brand's warehouses happened at the same time; try again.",
        ),
        other => other.into(),
    }
}
