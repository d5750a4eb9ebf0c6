//! Listings: list, read, create, update, soft-delete and bulk-delete.

mod params;
mod render;

use crate::http::docs::refusals::refusals;
use crate::http::routing::{delete, get, patch, post};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header::ETAG;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::listing::{BulkDelete, ListingInput, ListingPatch, Measurement, SyncPosition, ValidListing};
use crate::domain::outcome::Outcome;
use crate::domain::precondition::listing_etag;
use crate::domain::view::Removal;
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::precondition::if_match;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::listings::{self};
use params::{list_params, Paging};
pub use render::{Context, ImageImport, ListingDetail, ListingSummary, Seller};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_listings, get_listing, create_listing, update_listing, delete_listing, bulk_delete_listings),
    components(schemas(
        ListingSummary,
        ListingDetail,
        ListingPage,
        PageMeta,
        SyncMeta,
        ListMeta,
        StatusFilter,
        Seller,
        ImageImport,
        Measurement,
        ValidListing,
        ListingPatch,
        Deleted,
        BulkDelete,
        BulkDeleteResult,
        BulkDeleteOutcome
    ))
)]
pub struct ListingsApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings", get(list_listings).merge(post(create_listing)))
        .route("/listings/bulk-delete", post(bulk_delete_listings))
        .route("/listings/{id}", get(get_listing).merge(patch(update_listing)).merge(delete(delete_listing)))
}

/// The `status` filter of a list (documentation of the query parameter).
#[derive(Debug, Clone, Copy, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum StatusFilter {
    Active,
    Draft,
    Any,
}

/// A page of listings: numbered, newest first; or a sync page (`updated_since`/`cursor`) in
/// (`updated_at`, `id`) order.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListingPage {
    pub data: Vec<ListingSummary>,
    pub meta: ListMeta,
}

/// `PageMeta` for numbered pages, `SyncMeta` for sync pages, told apart by `paging`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ListMeta {
    Numbered(PageMeta),
    Sync(SyncMeta),
}

impl utoipa::PartialSchema for ListMeta {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{Discriminator, OneOfBuilder, Ref};
        let at = |name: &str| format!("#/components/schemas/{name}");
        OneOfBuilder::new()
            .item(Ref::from_schema_name("PageMeta"))
            .item(Ref::from_schema_name("SyncMeta"))
            .discriminator(Some(Discriminator::with_mapping(
                "paging",
                [("page", at("PageMeta")), ("cursor", at("SyncMeta"))],
            )))
            .description(Some(
                "`PageMeta` (`paging: \"page\"`) for numbered pages, `SyncMeta` (`paging: \"cursor\"`) for sync pages.",
            ))
            .into()
    }
}

impl ToSchema for ListMeta {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        schemas.push(("PageMeta".to_owned(), <PageMeta as utoipa::PartialSchema>::schema()));
        schemas.push(("SyncMeta".to_owned(), <SyncMeta as utoipa::PartialSchema>::schema()));
    }
}

/// `page`: the answer is one of numbered pages (`page`, `total_pages`).
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NumberedPaging {
    #[default]
    Page,
}

/// `cursor`: the answer is a step of a sync walk (`has_more`, `next_cursor`).
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CursorPaging {
    #[default]
    Cursor,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PageMeta {
    /// Always `page` (numbered pages; a sync page's meta says `cursor`).
    pub paging: NumberedPaging,
    pub page: u32,
    pub per_page: u32,
    /// Items matching the filters, on all pages: exact unless `total_is_estimate`.
    pub total: i64,
    pub total_pages: i64,
    /// True when `total` and `total_pages` are an estimate: a listing search (`q`) that
    /// matched more than 1,000 listings (an exact count would read every match; the estimate
    /// is the share of the listings read for the page that match, times the listings the
    /// status and channel filters keep). Page on until a page comes back shorter than
    /// `per_page`. Always false without `q`, and for other lists.
    pub total_is_estimate: bool,
    /// Slug of the caller's partner workspace.
    pub brand_id: String,
}

/// Where a sync walk stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncMeta {
    /// Always `cursor` (a sync walk; a numbered page's meta says `page`).
    pub paging: CursorPaging,
    pub per_page: u32,
    /// More changed listings follow this page: ask for them with `cursor=<next_cursor>`.
    pub has_more: bool,
    /// Opaque; null when `has_more` is false. To pick up later changes, start a new walk
    /// with `updated_since` set to the greatest `updated_at` seen.
    pub next_cursor: Option<String>,
    /// Slug of the caller's partner workspace.
    pub brand_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    pub deleted: bool,
    pub id: i64,
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

/// How a listing reads in a listing event (decisions 15.3): as `GET /v1/listings` lists it.
pub fn event_view(config: &crate::config::Config) -> crate::domain::view::ListingView {
    let (market, media) = (config.marketplace_url().to_owned(), config.media_url().to_owned());
    Box::new(move |record, brand_slug| {
        let cx = render::Context { brand_slug, marketplace_url: &market, media_url: &media };
        serde_json::to_value(render::summary(record, &cx)).unwrap_or_default()
    })
}

fn listing_not_found() -> ApiError {
    Outcome::ListingNotFound.into()
}

/// A path id that is not an integer names no listing.
fn listing_id(path: Result<Path<String>, PathRejection>) -> Result<i64, ApiError> {
    path.ok().and_then(|Path(id)| id.parse().ok()).ok_or_else(listing_not_found)
}

refusals!(ListListingsRefusals: [
    Invalid("`validation_failed`: `page_invalid` (also: `page` in a sync walk), `per_page_invalid`, `status_invalid`, `channel_invalid`, `sku_invalid`, `q_invalid`, `updated_since_invalid`, `cursor_invalid`"),
]);

/// Paginated listings of the caller's brand, newest first; or, with `updated_since` or
/// `cursor`, a sync walk over every listing changed since.
#[utoipa::path(
    get,
    path = "/v1/listings",
    tag = "Listings",
    security(("bearer" = [])),
    params(
        ("page" = Option<u32>, Query, minimum = 1, description = "1-indexed page; default 1. Not with `updated_since` or `cursor`"),
        ("per_page" = Option<u32>, Query, minimum = 1, maximum = 100, description = "1 to 100; default 20"),
        ("status" = Option<StatusFilter>, Query, description = "`active`, `draft` or `any` (includes `closed`); default `active`, or `any` in a sync walk"),
        ("channel" = Option<crate::http::docs::enums::Channel>, Query, description = "`clearance` or `exchange`; omit for both"),
        ("sku" = Option<String>, Query, min_length = 1, max_length = 100, description = "Only the listing(s) with exactly this SKU (1 to 100 characters)"),
        ("q" = Option<String>, Query, min_length = 1, max_length = 200, description = "Words (up to 10, 200 characters in all), each of which must appear in the title or the SKU, whatever the case; `%` and `_` match themselves"),
        ("updated_since" = Option<String>, Query, format = DateTime, max_length = 64, description = "RFC 3339 instant: a sync walk over every listing changed at or after it, trashed ones included (with `deleted_at`), in (`updated_at`, `id`) order, paged by `cursor`"),
        ("cursor" = Option<String>, Query, min_length = 1, max_length = 64, description = "`meta.next_cursor` of the previous sync page: the next page of the walk"),
    ),
    responses(
        (status = 200, description = "A page of listing summaries (`meta` is `PageMeta`, or `SyncMeta` in a sync walk)", body = ListingPage),
        ListListingsRefusals,
    )
)]
pub async fn list_listings(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<ListingPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let params = list_params(&pairs)?;
    let cx = context(&state, &caller);
    let brand_id = caller.brand_slug.clone();
    let page = match params.paging {
        Paging::Numbered(page) => {
            let found = listings::list(&state.core, &caller.admin, params.filter, page.limit(), page.offset()).await?;
            ListingPage {
                data: found.listings.iter().map(|l| render::summary(l, &cx)).collect(),
                meta: ListMeta::Numbered(PageMeta {
                    paging: NumberedPaging::Page,
                    page: page.page,
                    per_page: page.per_page,
                    total: found.total,
                    total_pages: page.total_pages(found.total),
                    total_is_estimate: found.total_is_estimate,
                    brand_id,
                }),
            }
        }
        Paging::Walk { after, per_page } => {
            let found = listings::sync(&state.core, &caller.admin, params.filter, after, i64::from(per_page)).await?;
            let next_cursor = match found.listings.last() {
                Some(last) if found.has_more => {
                    Some(SyncPosition { updated_micros: last.updated_at.micros(), id: last.id }.cursor())
                }
                _ => None,
            };
            ListingPage {
                data: found.listings.iter().map(|l| render::summary(l, &cx)).collect(),
                meta: ListMeta::Sync(SyncMeta {
                    paging: CursorPaging::Cursor,
                    per_page,
                    has_more: found.has_more,
                    next_cursor,
                    brand_id,
                }),
            }
        }
    };
    Ok(Json(page))
}

refusals!(GetListingRefusals: [
    Outcome(Outcome::ListingNotFound),
]);

/// One listing of the caller's brand.
#[utoipa::path(
    get,
    path = "/v1/listings/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Listing id")),
    responses(
        (status = 200, description = "The listing", body = ListingDetail, headers(
            ("ETag" = String, description = "The listing's version as a strong entity tag (`\"v7\"`): send it as `If-Match` with a PATCH to change it only if nobody else has, or as `If-None-Match` to be answered 304 while it is unchanged. `view_count` is not part of the version: views do not change the tag")
        )),
        (status = 304, description = "Not modified: the request's `If-None-Match` names the current `ETag` (send the tag of your copy to revalidate it); no body", headers(("ETag" = String, description = "The current entity tag"))),
        GetListingRefusals,
    )
)]
pub async fn get_listing(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<([(HeaderName, String); 1], Json<ListingDetail>)> {
    let id = listing_id(path)?;
    let record = listings::get(&state.core, &caller.admin, id).await?;
    let etag = listing_etag(record.version);
    Ok(([(ETAG, etag)], Json(render::detail(record, &context(&state, &caller)))))
}

refusals!(CreateListingRefusals: [
    Invalid("`invalid_body`, or `validation_failed` listing every reason (e.g. `title_required`, `price_gbp_invalid`, `faults_required`, `quantity_invalid`, `warehouse_id_invalid`, `<field>_unknown`)"),
    TooLarge,
    MediaType("JSON"),
]);

/// Creates a listing sold by the caller.
#[utoipa::path(
    post,
    path = "/v1/listings",
    tag = "Listings",
    security(("bearer" = [])),
    request_body = ValidListing,
    responses(
        (status = 201, description = "The new listing", body = ListingDetail, headers(
            ("ETag" = String, description = "The new listing's version as a strong entity tag, as `GET /v1/listings/{id}` answers it: send it as `If-Match` with a PATCH")
        )),
        CreateListingRefusals,
    )
)]
pub async fn create_listing(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, [(HeaderName, String); 1], Json<ListingDetail>)> {
    let saved = listings::create(&state.core, &caller.admin, &ListingInput::from_json(&body)).await?;
    let etag = listing_etag(saved.record.version);
    Ok((StatusCode::CREATED, [(ETAG, etag)], Json(render::detail(saved.record, &context(&state, &caller)))))
}

refusals!(UpdateListingRefusals: [
    Invalid("`no_fields` (empty body), `invalid_body`, or `validation_failed` listing every reason"),
    Outcome(Outcome::NotOwner),
    Outcome(Outcome::ListingNotFound),
    Outcome(Outcome::EditConflict),
    Outcome(Outcome::PreconditionFailed),
    MediaType("JSON"),
]);

/// Changes fields of one of the caller's listings; the merged listing is validated whole.
#[utoipa::path(
    patch,
    path = "/v1/listings/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(
        ("id" = i64, Path, description = "Listing id"),
        ("If-Match" = Option<String>, Header, nullable = false, description = "Change only if the listing still has this `ETag` (from a GET or an earlier PATCH); `*` matches any current version")
    ),
    request_body = ListingPatch,
    responses(
        (status = 200, description = "The updated listing", body = ListingDetail, headers(
            ("ETag" = String, description = "The listing's new entity tag")
        )),
        UpdateListingRefusals,
    ),
)]
pub async fn update_listing(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<([(HeaderName, String); 1], Json<ListingDetail>)> {
    let id = listing_id(path)?;
    let condition = if_match(&headers);
    let input = ListingInput::from_json(&body);
    let saved = listings::update(&state.core, &caller.admin, id, &input, condition.as_ref()).await?;
    let etag = listing_etag(saved.record.version);
    Ok(([(ETAG, etag)], Json(render::detail(saved.record, &context(&state, &caller)))))
}

refusals!(DeleteListingRefusals: [
    Outcome(Outcome::NotOwner),
    Outcome(Outcome::ListingNotFound),
]);

/// Moves one of the caller's listings to the trash.
#[utoipa::path(
    delete,
    path = "/v1/listings/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Listing id")),
    responses(
        (status = 200, description = "Trashed", body = Deleted),
        DeleteListingRefusals,
    )
)]
pub async fn delete_listing(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Deleted>> {
    let id = listing_id(path)?;
    listings::delete(&state.core, &caller.admin, id).await?;
    Ok(Json(Deleted { deleted: true, id }))
}

refusals!(BulkDeleteListingsRefusals: [
    Invalid("`no_ids`, `too_many` (over 100), `invalid_body`, or `validation_failed` (`ids_invalid`)"),
    MediaType("JSON"),
]);

/// Trashes up to 100 of the caller's listings, reporting per id.
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-delete",
    tag = "Listings",
    security(("bearer" = [])),
    request_body = BulkDelete,
    responses(
        (status = 200, description = "Per-id results; ids of other brands or users fail alone", body = BulkDeleteResult),
        BulkDeleteListingsRefusals,
    )
)]
pub async fn bulk_delete_listings(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BulkDeleteResult>> {
    let BulkDelete { ids } = BulkDelete::parse(&body)?;
    let outcomes = listings::bulk_delete(&state.core, &caller.admin, &ids).await?;
    let results: Vec<BulkDeleteOutcome> = outcomes
        .into_iter()
        .map(|(id, removal)| {
            let error = match removal {
                Removal::Deleted => None,
                Removal::NotFound => Some(Outcome::ListingNotFound.code()),
                Removal::NotOwner => Some(Outcome::NotOwner.code()),
            };
            BulkDeleteOutcome { id, ok: error.is_none(), errors: error.map(|e| vec![e]) }
        })
        .collect();
    let success_count = results.iter().filter(|r| r.ok).count();
    Ok(Json(BulkDeleteResult { success_count, error_count: results.len() - success_count, results }))
}
