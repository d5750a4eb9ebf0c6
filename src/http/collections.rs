//! `/v1/partner/collections`: sold clearance items awaiting collection, and confirming a
//! collection date inside the buyer's window (decisions 6.8), which emits
//! `collection.scheduled`; `/v1/partner/collections/{id}`: moving a confirmed collection to
//! another day (the event sent again) or cancelling it (`collection.cancelled`).

use crate::http::docs::refusals::refusals;
use crate::http::routing::{delete, get, patch, post};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Router;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::domain::collection::{self, Collection, CollectionMove, CollectionRequest, CollectionStatus};
use crate::domain::order::order_reference;
use crate::domain::outcome::Outcome;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::query::{Page, QueryParams};
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::marketplace::collections::{self, ClearanceOrder};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_collections, schedule_collection, move_collection, cancel_collection),
    components(schemas(Collection, CollectionOrder, CollectionPage, CollectionMeta, CollectionRequest, CollectionMove, CollectionStatusParam)),
    tags((name = "Collections", description = "Collecting sold clearance items inside the buyer's delivery window"))
)]
pub struct CollectionsApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/collections", get(list_collections).merge(post(schedule_collection)))
        .route("/partner/collections/{id}", patch(move_collection).merge(delete(cancel_collection)))
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
    #[schema(format = Date)]
    pub buyer_window_start: String,
    /// Last day (inclusive).
    #[schema(format = Date)]
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

/// The `status` filter of the collections list (documentation of the query parameter).
#[derive(Debug, Clone, Copy, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum CollectionStatusParam {
    Unscheduled,
    Scheduled,
    Any,
}

/// The query of `GET /v1/partner/collections`, as read.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
struct CollectionQuery {
    /// `unscheduled`, `scheduled` or `any` (default).
    #[param(value_type = Option<CollectionStatusParam>)]
    status: (&'static str, collection::CollectionQuery),
    /// 1-indexed page; default 1.
    #[param(value_type = Option<u32>, minimum = 1)]
    page: u32,
    /// 1 to 100; default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    per_page: u32,
}

impl CollectionQuery {
    fn read(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        const ANY: (&str, collection::CollectionQuery) = ("any", collection::CollectionQuery::Any);
        let only = |status: CollectionStatus| (status.as_str(), collection::CollectionQuery::Only(status));
        let mut params = QueryParams::new(pairs);
        let status = params.choice(
            "status",
            ANY,
            &[
                (CollectionStatus::Unscheduled.as_str(), only(CollectionStatus::Unscheduled)),
                (CollectionStatus::Scheduled.as_str(), only(CollectionStatus::Scheduled)),
                ("any", ANY),
            ],
        );
        let Page { page, per_page } = params.page();
        params.finish()?;
        Ok(Self { status, page, per_page })
    }
}

impl From<ClearanceOrder> for CollectionOrder {
    fn from(order: ClearanceOrder) -> Self {
        Self {
            order_id: order.order_id,
            order_reference: order_reference(order.order_id),
            product_id: order.listing_id,
            quantity: order.quantity,
            buyer_window_start: order.window.start.to_string(),
            buyer_window_end: order.window.end.to_string(),
            status: order.status().as_str(),
            collection: order.collection,
        }
    }
}

refusals!(ListCollectionsRefusals: [
    Invalid("`validation_failed`: `status_invalid`, `page_invalid`, `per_page_invalid`"),
]);

/// The brand's sold clearance items with their buyer window and collection.
#[utoipa::path(
    get,
    path = "/v1/partner/collections",
    tag = "Collections",
    security(("bearer" = [])),
    params(CollectionQuery),
    responses(
        (status = 200, description = "One page", body = CollectionPage),
        ListCollectionsRefusals,
    )
)]
pub async fn list_collections(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<CollectionPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let query = CollectionQuery::read(&pairs)?;
    let (status, filter) = query.status;
    let page = Page { page: query.page, per_page: query.per_page };
    let (orders, total) = collections::list(&state.core, &caller.admin, filter, page.limit(), page.offset()).await?;
    Ok(Json(CollectionPage {
        data: orders.into_iter().map(CollectionOrder::from).collect(),
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

refusals!(ScheduleCollectionRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `order_id_required`, `order_id_invalid`, \
`scheduled_for_required`, `scheduled_for_invalid` (not a date, or outside the buyer window), `warehouse_id_invalid`, \
`<field>_unknown`"),
    Outcome(Outcome::OrderNotFound),
    Outcome(Outcome::CollectionExists),
]);

/// Confirms the collection date of a sold clearance item and emits `collection.scheduled`
/// in the same transaction. The warehouse is the one given, else the listing's, else the
/// brand's default, else null with an empty label.
#[utoipa::path(
    post,
    path = "/v1/partner/collections",
    tag = "Collections",
    security(("bearer" = [])),
    request_body = CollectionRequest,
    responses(
        (status = 201, description = "The collection (the event's data)", body = Collection),
        ScheduleCollectionRefusals,
    )
)]
pub async fn schedule_collection(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<Collection>)> {
    let request = CollectionRequest::parse(&body).map_err(ApiError::validation)?;
    let collection = collections::schedule(&state.core, &caller.admin, &request).await?;
    Ok((StatusCode::CREATED, Json(collection)))
}

refusals!(MoveCollectionRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `scheduled_for_required`, \
`scheduled_for_invalid` (not a date, outside the buyer window, or before today), `warehouse_id_invalid`, \
`<field>_unknown`"),
    Outcome(Outcome::CollectionNotFound),
    Outcome(Outcome::CollectionPassed),
    Outcome(Outcome::CollectionContended),
]);

/// Moves a confirmed collection to another day of its buyer window (today or later), and
/// another warehouse if one is given. `collection.scheduled` is sent again with the new day
/// and the same collection `id`: a receiver replaces the day it holds for that id. A move to
/// the day and warehouse it already has changes nothing and sends nothing. Refused once the
/// collection's day has passed.
#[utoipa::path(
    patch,
    path = "/v1/partner/collections/{id}",
    tag = "Collections",
    security(("bearer" = [])),
    params(("id" = String, Path, max_length = 64, description = "The collection id (`col_…`)")),
    request_body = CollectionMove,
    responses(
        (status = 200, description = "The collection after the move (the event's data)", body = Collection),
        MoveCollectionRefusals,
    )
)]
pub async fn move_collection(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Collection>> {
    let id = path.map(|Path(id)| id).map_err(|_| ApiError::from(Outcome::CollectionNotFound))?;
    let request = CollectionMove::parse(&body).map_err(ApiError::validation)?;
    Ok(Json(collections::move_to(&state.core, &caller.admin, &id, &request).await?))
}

refusals!(CancelCollectionRefusals: [
    Outcome(Outcome::CollectionNotFound),
    Outcome(Outcome::CollectionPassed),
    Outcome(Outcome::CollectionContended),
]);

/// Cancels a confirmed collection: the order waits for a date again (schedule it anew with
/// `POST /v1/partner/collections`), and `collection.cancelled` carries the collection as it
/// was (to endpoints that subscribe to it). Refused once the collection's day has passed.
#[utoipa::path(
    delete,
    path = "/v1/partner/collections/{id}",
    tag = "Collections",
    security(("bearer" = [])),
    params(("id" = String, Path, max_length = 64, description = "The collection id (`col_…`)")),
    responses(
        (status = 200, description = "The collection as it was (the event's data)", body = Collection),
        CancelCollectionRefusals,
    )
)]
pub async fn cancel_collection(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Collection>> {
    let id = path.map(|Path(id)| id).map_err(|_| ApiError::from(Outcome::CollectionNotFound))?;
    Ok(Json(collections::cancel(&state.core, &caller.admin, &id).await?))
}
