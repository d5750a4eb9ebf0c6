//! `/v1/partner/collections`: sold clearance items awaiting collection, and confirming a
//! collection date inside the buyer's window (decisions 6.8), which emits
//! `collection.scheduled`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::domain::apikey::random_base62;
use crate::domain::event::{Event, EventType};
use crate::domain::order::{order_reference, CollectionRequest};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::query::QueryParams;
use crate::store::{CollectionFilter, CollectionRow, NewCollection, StoreError, Ts};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_collections, schedule_collection),
    components(schemas(Collection, CollectionOrder, CollectionPage, CollectionMeta, CollectionInput)),
    tags((name = "Collections", description = "Collecting sold clearance items inside the buyer's delivery window"))
)]
pub struct CollectionsApi;

pub fn router() -> Router<AppState> {
    Router::new().route("/partner/collections", get(list_collections).post(schedule_collection))
}

/// A confirmed collection: the `data` of a `collection.scheduled` event, field for field.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Collection {
    /// Stable collection id (`col_…`).
    pub id: String,
    /// Slug of the brand.
    pub brand_id: String,
    pub order_id: i64,
    /// `#<order_id>`.
    pub order_reference: String,
    /// The listing sold.
    pub product_id: i64,
    /// `YYYY-MM-DD`, inside the buyer window.
    pub scheduled_for: String,
    /// When the partner confirmed it, RFC 3339 UTC.
    pub scheduled_at: String,
    /// Collection-source warehouse; null if the brand has no warehouses.
    pub warehouse_id: Option<String>,
    /// Its label; empty when none is assigned.
    pub warehouse_label: String,
    pub buyer_window_start: String,
    pub buyer_window_end: String,
}

/// A sold clearance item and its collection.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollectionOrder {
    pub order_id: i64,
    /// `#<order_id>`.
    pub order_reference: String,
    pub product_id: i64,
    pub quantity: i64,
    /// First day of the buyer's 10-day delivery window, `YYYY-MM-DD`.
    pub buyer_window_start: String,
    /// Last day (inclusive).
    pub buyer_window_end: String,
    /// `unscheduled` or `scheduled`.
    pub status: &'static str,
    /// The collection when scheduled, else null.
    pub collection: Option<Collection>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CollectionMeta {
    pub page: u32,
    pub per_page: u32,
    pub total: i64,
    pub total_pages: i64,
    pub status: &'static str,
    pub brand_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CollectionPage {
    /// Earliest buyer window first.
    pub data: Vec<CollectionOrder>,
    pub meta: CollectionMeta,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct CollectionQuery {
    /// `unscheduled`, `scheduled` or `any` (default).
    status: Option<String>,
    /// 1-indexed page; default 1.
    page: Option<u32>,
    /// 1 to 100; default 20.
    per_page: Option<u32>,
}

/// The body of `POST /v1/partner/collections`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct CollectionInput {
    /// A clearance order of the brand.
    order_id: i64,
    /// `YYYY-MM-DD` inside the order's buyer window (`scheduled_for_invalid`).
    #[schema(example = "2026-11-26")]
    scheduled_for: String,
    /// One of the brand's warehouses (`warehouse_id_invalid`); default the listing's
    /// warehouse, else the brand's default.
    warehouse_id: Option<String>,
}

fn collection_of(row: &CollectionRow) -> Option<Collection> {
    Some(Collection {
        id: row.id.clone()?,
        brand_id: row.brand_slug.clone(),
        order_id: row.order_id,
        order_reference: order_reference(row.order_id),
        product_id: row.listing_id,
        scheduled_for: row.scheduled_for?.to_string(),
        scheduled_at: row.scheduled_at?.to_string(),
        warehouse_id: row.warehouse_id.clone(),
        warehouse_label: row.warehouse_label.clone().unwrap_or_default(),
        buyer_window_start: row.buyer_window_start.to_string(),
        buyer_window_end: row.buyer_window_end.to_string(),
    })
}

/// The brand's sold clearance items with their buyer window and collection.
#[utoipa::path(
    get,
    path = "/v1/partner/collections",
    tag = "Collections",
    security(("bearer" = [])),
    params(CollectionQuery),
    responses(
        (status = 200, description = "One page", body = CollectionPage),
        (status = 400, description = "`validation_failed`: `status_invalid`, `page_invalid`, `per_page_invalid`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn list_collections(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<CollectionPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let mut params = QueryParams::new(&pairs);
    let (status, filter) = params.choice(
        "status",
        ("any", CollectionFilter::Any),
        &[
            ("unscheduled", ("unscheduled", CollectionFilter::Unscheduled)),
            ("scheduled", ("scheduled", CollectionFilter::Scheduled)),
            ("any", ("any", CollectionFilter::Any)),
        ],
    );
    let page = params.page();
    params.finish()?;
    let (rows, total) = state.store.collections(caller.brand_id, filter, page.limit(), page.offset()).await?;
    let data = rows
        .iter()
        .map(|row| {
            let collection = collection_of(row);
            CollectionOrder {
                order_id: row.order_id,
                order_reference: order_reference(row.order_id),
                product_id: row.listing_id,
                quantity: row.quantity,
                buyer_window_start: row.buyer_window_start.to_string(),
                buyer_window_end: row.buyer_window_end.to_string(),
                status: if collection.is_some() { "scheduled" } else { "unscheduled" },
                collection,
            }
        })
        .collect();
    Ok(Json(CollectionPage {
        data,
        meta: CollectionMeta {
            page: page.page,
            per_page: page.per_page,
            total,
            total_pages: page.total_pages(total),
            status,
            brand_id: caller.brand_slug.clone(),
        },
    }))
}

fn order_not_found() -> ApiError {
    ApiError::not_found("order_not_found", "The brand has no such clearance order.")
}

/// Confirms the collection date of a sold clearance item and emits `collection.scheduled`
/// in the same transaction. The warehouse is the one given, else the listing's, else the
/// brand's default, else null with an empty label.
#[utoipa::path(
    post,
    path = "/v1/partner/collections",
    tag = "Collections",
    security(("bearer" = [])),
    request_body = CollectionInput,
    responses(
        (status = 201, description = "The collection (the event's data)", body = Collection),
        (status = 400, description = "`invalid_body` or `validation_failed`: `order_id_required`, `order_id_invalid`, \
`scheduled_for_required`, `scheduled_for_invalid` (not a date, or outside the buyer window), `warehouse_id_invalid`, \
`<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`order_not_found`: no such clearance order of the brand", body = ErrorBody),
        (status = 409, description = "`collection_exists`: the order's collection is already scheduled", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn schedule_collection(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<Collection>)> {
    let request = CollectionRequest::parse(&body).map_err(ApiError::validation)?;
    let order = state
        .store
        .order(request.order_id, Some(caller.brand_id))
        .await?
        .filter(|o| !o.is_exchange())
        .ok_or_else(order_not_found)?;
    let window = order.window();
    if !window.contains(request.scheduled_for) {
        return Err(ApiError::field("scheduled_for", "scheduled_for_invalid"));
    }
    if let Some(given) = &request.warehouse_id {
        if !state.store.warehouse_in_brand(caller.brand_id, given).await? {
            return Err(ApiError::field("warehouse_id", "warehouse_id_invalid"));
        }
    }
    let warehouse =
        state.store.collection_warehouse(caller.brand_id, request.warehouse_id.as_deref(), order.listing_id).await?;
    let (warehouse_id, warehouse_label) = match warehouse {
        Some((id, label)) => (Some(id), label),
        None => (None, String::new()),
    };
    let scheduled_at = Ts::now();
    let id = format!("col_{}", random_base62(24).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?);
    let collection = Collection {
        id: id.clone(),
        brand_id: caller.brand_slug.clone(),
        order_id: order.id,
        order_reference: order_reference(order.id),
        product_id: order.listing_id,
        scheduled_for: request.scheduled_for.to_string(),
        scheduled_at: scheduled_at.to_string(),
        warehouse_id: warehouse_id.clone(),
        warehouse_label: warehouse_label.clone(),
        buyer_window_start: order.buyer_window_start.to_string(),
        buyer_window_end: order.buyer_window_end.to_string(),
    };
    let data = serde_json::to_value(&collection).map_err(anyhow::Error::from)?;
    let event = Event::new(caller.brand_id, EventType::CollectionScheduled, data)
        .map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let new = NewCollection {
        id,
        brand_id: caller.brand_id,
        order_id: order.id,
        scheduled_for: request.scheduled_for,
        scheduled_at,
        warehouse_id,
        warehouse_label,
    };
    match state.store.record_collection(&new, &event).await {
        Ok(()) => {}
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::client(
                StatusCode::CONFLICT,
                "collection_exists",
                "This order's collection is already scheduled.",
            ))
        }
        Err(e) => return Err(e.into()),
    }
    state.outbox.wake();
    Ok((StatusCode::CREATED, Json(collection)))
}
