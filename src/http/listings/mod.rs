//! Listings: list, read, create, update, soft-delete and bulk-delete.

mod create;
mod params;
mod render;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::listing::{validate, Measurement};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::store::{ListingUpdate, Removal};
use create::{checked, image_sources};
pub use create::{prepare, prepare_validated, save, NewListingBody};
use params::{bulk_ids, list_params};
pub use render::{Context, ImageImport, ListingDetail, ListingSummary, Seller};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_listings, get_listing, create_listing, update_listing, delete_listing, bulk_delete_listings),
    components(schemas(
        ListingSummary,
        ListingDetail,
        ListingPage,
        PageMeta,
        Seller,
        ImageImport,
        Measurement,
        ListingBody,
        Deleted,
        BulkDeleteBody,
        BulkDeleteResult,
        BulkDeleteOutcome
    ))
)]
pub struct ListingsApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings", get(list_listings).post(create_listing))
        .route("/listings/bulk-delete", post(bulk_delete_listings))
        .route("/listings/{id}", get(get_listing).patch(update_listing).delete(delete_listing))
}

/// A page of listings.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListingPage {
    /// Newest first.
    pub data: Vec<ListingSummary>,
    pub meta: PageMeta,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PageMeta {
    pub page: u32,
    pub per_page: u32,
    /// Listings matching the filters, on all pages.
    pub total: i64,
    pub total_pages: i64,
    /// Slug of the caller's partner workspace.
    pub brand_id: String,
}

/// The body of `POST /v1/listings` and `PATCH /v1/listings/{id}` (where every field is
/// optional and `null` clears an optional one). Unknown fields are refused.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ListingBody {
    /// 1 to 200 characters. Required on create.
    title: String,
    /// Regular price in GBP, > 0 with at most two decimals. Required on create.
    #[schema(example = 450.0)]
    price_gbp: f64,
    /// `like-new`, `excellent`, `gently-used` or `fair`. Required on create.
    condition: String,
    /// One of `categories` of the options endpoint. Required on create.
    category: String,
    /// At least one of `Rips or tears`, `Fire Label`, `None` (`None` alone). Required on create.
    faults: Vec<String>,
    /// Plain text or basic HTML (sanitised), up to 20,000 characters after sanitising.
    description: Option<String>,
    /// `clearance` or `exchange` (default).
    channel: Option<String>,
    /// `active` (default) or `draft`.
    status: Option<String>,
    /// Promotional price in GBP, below `price_gbp`.
    sale_price_gbp: Option<f64>,
    /// Original retail price in GBP.
    rrp_gbp: Option<f64>,
    /// Whole pounds: 0 (default), 30, 60 or 129 (free delivery).
    delivery_contribution_gbp: Option<u32>,
    /// Manufacturer brand, up to 80 characters; matched case-insensitively, created on first use.
    brand: Option<String>,
    /// Matched to `colours` ignoring case and accents ("gray" → "Grey").
    colour: Option<String>,
    /// Matched to `fabrics` ignoring case and accents ("boucle" → "Bouclé").
    fabric: Option<String>,
    /// One of `ages`.
    age_years: Option<String>,
    /// `YYYY-MM-DD`.
    available_from: Option<String>,
    /// Default 1. Exchange: exactly 1. Clearance: 1 to 10,000.
    quantity: Option<i64>,
    /// Up to 20 pieces.
    measurements: Option<Vec<Measurement>>,
    /// `Dogs`, `Cats`, `Smoke` or `None` (`None` alone).
    exposed_to: Option<Vec<String>>,
    /// Up to 20 absolute http(s) URLs, imported in the background; first is the cover.
    /// Giving `images` or `attachment_ids` replaces the listing's images (photos first).
    images: Option<Vec<String>>,
    /// Up to 20 photos from `upload-photo` of the caller's brand.
    attachment_ids: Option<Vec<i64>>,
    /// Up to 64 characters.
    sku: Option<String>,
    /// Up to 64 characters.
    warehouse_location: Option<String>,
    /// One of the brand's warehouses; default on create: the brand's default warehouse.
    warehouse_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    pub deleted: bool,
    pub id: i64,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BulkDeleteBody {
    /// 1 to 100 listing ids.
    ids: Vec<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BulkDeleteResult {
    pub success_count: usize,
    pub error_count: usize,
    /// One per distinct id, in the order given.
    pub results: Vec<BulkDeleteOutcome>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BulkDeleteOutcome {
    pub id: i64,
    pub ok: bool,
    /// `listing_not_found` or `forbidden_not_owner`; absent when `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<&'static str>>,
}

/// What rendering needs to know of the request: the caller's brand and the marketplace.
pub fn context<'a>(state: &'a AppState, caller: &'a Caller) -> render::Context<'a> {
    render::Context {
        brand_slug: &caller.brand_slug,
        marketplace_url: state.config.marketplace_url(),
        media_url: state.config.media_url(),
    }
}

fn listing_not_found() -> ApiError {
    ApiError::not_found("listing_not_found", "No listing with this id in your brand.")
}

fn not_owner() -> ApiError {
    ApiError::client(StatusCode::FORBIDDEN, "forbidden_not_owner", "Only the user who created a listing may change it.")
}

/// A path id that is not an integer names no listing.
fn listing_id(path: Result<Path<String>, PathRejection>) -> Result<i64, ApiError> {
    path.ok().and_then(|Path(id)| id.parse().ok()).ok_or_else(listing_not_found)
}

/// Paginated listings of the caller's brand, newest first.
#[utoipa::path(
    get,
    path = "/v1/listings",
    tag = "Listings",
    security(("bearer" = [])),
    params(
        ("page" = Option<u32>, Query, description = "1-indexed page; default 1"),
        ("per_page" = Option<u32>, Query, description = "1 to 100; default 20"),
        ("status" = Option<String>, Query, description = "`active` (default), `draft` or `any` (includes `closed`)"),
        ("channel" = Option<String>, Query, description = "`clearance` or `exchange`; omit for both"),
    ),
    responses(
        (status = 200, description = "A page of listing summaries", body = ListingPage),
        (status = 400, description = "`validation_failed`: `page_invalid`, `per_page_invalid`, `status_invalid`, `channel_invalid`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn list_listings(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<ListingPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let params = list_params(&pairs)?;
    let page = params.page;
    let found = state.store.list_listings(caller.brand_id, params.filter, page.limit(), page.offset()).await?;
    let cx = context(&state, &caller);
    Ok(Json(ListingPage {
        data: found.listings.iter().map(|l| render::summary(l, &cx)).collect(),
        meta: PageMeta {
            page: page.page,
            per_page: page.per_page,
            total: found.total,
            total_pages: page.total_pages(found.total),
            brand_id: caller.brand_slug.clone(),
        },
    }))
}

/// One listing of the caller's brand.
#[utoipa::path(
    get,
    path = "/v1/listings/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Listing id")),
    responses(
        (status = 200, description = "The listing", body = ListingDetail),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 404, description = "`listing_not_found`: no such listing in the caller's brand (or trashed)", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn get_listing(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<ListingDetail>> {
    let id = listing_id(path)?;
    let record = state.store.listing(caller.brand_id, id).await?.ok_or_else(listing_not_found)?;
    Ok(Json(render::detail(record, &context(&state, &caller))))
}

/// Creates a listing sold by the caller.
#[utoipa::path(
    post,
    path = "/v1/listings",
    tag = "Listings",
    security(("bearer" = [])),
    request_body = ListingBody,
    responses(
        (status = 201, description = "The new listing", body = ListingDetail),
        (status = 400, description = "`invalid_body`, or `validation_failed` listing every reason (e.g. `title_required`, `price_gbp_invalid`, `faults_required`, `quantity_invalid`, `warehouse_id_invalid`, `<field>_unknown`)", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn create_listing(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<ListingDetail>)> {
    let listing = prepare(&state, &caller, &body).await?.map_err(ApiError::validation)?;
    let saved = save(&state, &caller, vec![listing]).await?.pop();
    let saved = saved.ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the store saved no listing")))?;
    Ok((StatusCode::CREATED, Json(render::detail(saved.record, &context(&state, &caller)))))
}

/// How many times a PATCH re-reads a listing that changed under it before giving up.
const UPDATE_ATTEMPTS: usize = 3;

/// Changes fields of one of the caller's listings; the merged listing is validated whole.
#[utoipa::path(
    patch,
    path = "/v1/listings/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Listing id")),
    request_body = ListingBody,
    responses(
        (status = 200, description = "The updated listing", body = ListingDetail),
        (status = 400, description = "`no_fields` (empty body), `invalid_body`, or `validation_failed` listing every reason", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden_not_owner`: another user's listing; `forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`listing_not_found`", body = ErrorBody),
        (status = 409, description = "`edit_conflict`: the listing kept changing during the update; retry", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn update_listing(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<ListingDetail>> {
    let id = listing_id(path)?;
    for _ in 0..UPDATE_ATTEMPTS {
        let existing = state.store.listing(caller.brand_id, id).await?.ok_or_else(listing_not_found)?;
        if existing.user_id != caller.user_id {
            return Err(not_owner());
        }
        if body.is_empty() {
            return Err(ApiError::bad_request("no_fields", "Send at least one field to change."));
        }
        let valid = checked(&state, &caller, &body, validate(&body, Some(&existing.fields)))
            .await?
            .map_err(ApiError::validation)?;
        let images = image_sources(&valid.images, &valid.attachment_ids);
        match state.store.update_listing(&existing, &valid.fields, images.as_deref()).await? {
            ListingUpdate::Saved(saved) => {
                if saved.record.images.iter().any(|i| i.source_url.is_some() && i.status == "pending") {
                    state.photo_jobs.wake_imports();
                }
                if saved.brand_created {
                    state.options.invalidate(caller.brand_id);
                }
                let saved = *saved;
                return Ok(Json(render::detail(saved.record, &context(&state, &caller))));
            }
            ListingUpdate::Stale => continue,
        }
    }
    Err(ApiError::client(StatusCode::CONFLICT, "edit_conflict", "The listing kept changing during the update; retry."))
}

/// Moves one of the caller's listings to the trash.
#[utoipa::path(
    delete,
    path = "/v1/listings/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Listing id")),
    responses(
        (status = 200, description = "Trashed", body = Deleted),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden_not_owner`: another user's listing; `forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`listing_not_found`", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn delete_listing(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Deleted>> {
    let id = listing_id(path)?;
    let outcome = state.store.delete_listings(caller.brand_id, caller.user_id, &[id]).await?;
    match outcome.first().map(|(_, removal)| *removal) {
        Some(Removal::Deleted) => Ok(Json(Deleted { deleted: true, id })),
        Some(Removal::NotOwner) => Err(not_owner()),
        Some(Removal::NotFound) | None => Err(listing_not_found()),
    }
}

/// Trashes up to 100 of the caller's listings, reporting per id.
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-delete",
    tag = "Listings",
    security(("bearer" = [])),
    request_body = BulkDeleteBody,
    responses(
        (status = 200, description = "Per-id results; ids of other brands or users fail alone", body = BulkDeleteResult),
        (status = 400, description = "`no_ids`, `too_many` (over 100), `invalid_body`, or `validation_failed` (`ids_invalid`)", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn bulk_delete_listings(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BulkDeleteResult>> {
    let ids = bulk_ids(&body)?;
    let outcomes = state.store.delete_listings(caller.brand_id, caller.user_id, &ids).await?;
    let results: Vec<BulkDeleteOutcome> = outcomes
        .into_iter()
        .map(|(id, removal)| {
            let error = match removal {
                Removal::Deleted => None,
                Removal::NotFound => Some("listing_not_found"),
                Removal::NotOwner => Some("forbidden_not_owner"),
            };
            BulkDeleteOutcome { id, ok: error.is_none(), errors: error.map(|e| vec![e]) }
        })
        .collect();
    let success_count = results.iter().filter(|r| r.ok).count();
    Ok(Json(BulkDeleteResult { success_count, error_count: results.len() - success_count, results }))
}
