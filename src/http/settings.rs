//! `/v1/partner/settings/brand` and `/v1/partner/settings/billing`: the public brand profile
//! and the billing entity, each read whole and changed by partial update.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::settings::{Billing, BillingPatch, BrandProfile, ProfilePatch};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(get_brand, patch_brand, get_billing, patch_billing),
    components(schemas(BrandProfileResponse, BrandProfile, BrandProfileInput, BillingResponse, Billing, BillingInput)),
    tags((name = "Settings", description = "Brand profile, billing entity and warehouses; partner admins only"))
)]
pub struct SettingsApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/brand", get(get_brand).patch(patch_brand))
        .route("/partner/settings/billing", get(get_billing).patch(patch_billing))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BrandProfileResponse {
    /// Slug of the partner workspace.
    pub brand_id: String,
    pub profile: BrandProfile,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BillingResponse {
    /// Slug of the partner workspace.
    pub brand_id: String,
    pub billing: Billing,
}

/// The body of `PATCH /v1/partner/settings/brand`: only the fields to change. Strings are
/// trimmed; `""` or `null` clears a field (the display name cannot be cleared). Other
/// fields are refused (`<field>_unknown`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BrandProfileInput {
    /// Required on the first save (`display_name_required`); at most 80 characters
    /// (`display_name_too_long`).
    #[schema(max_length = 80)]
    display_name: Option<String>,
    /// At most 160 characters.
    #[schema(max_length = 160)]
    tagline: Option<String>,
    /// At most 5,000 characters; line breaks are kept.
    #[schema(max_length = 5000)]
    description: Option<String>,
    /// An email address with a public domain (`support_email_invalid`).
    #[schema(max_length = 254, example = "help@acme.example")]
    support_email: Option<String>,
    /// 7 to 15 digits with optional `+`, spaces, dashes, dots and brackets (`support_phone_invalid`).
    #[schema(max_length = 32, example = "+44 20 7946 0000")]
    support_phone: Option<String>,
    /// An `https` URL on a public host: not localhost nor a private address (`logo_url_invalid`).
    #[schema(max_length = 2048, example = "https://cdn.acme.example/logo.png")]
    logo_url: Option<String>,
    /// `#RRGGBB` (`accent_color_invalid`); answered upper-case.
    #[schema(example = "#FF8800")]
    accent_color: Option<String>,
}

/// The body of `PATCH /v1/partner/settings/billing`: only the fields to change. `""` or
/// `null` clears a field; an empty `country` means `United Kingdom`. When the country is
/// the United Kingdom (`United Kingdom`, `UK` or `GB`, any case), the postcode, VAT number
/// and company number must have UK shapes, and a change of country to the United Kingdom
/// checks the values already on file.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BillingInput {
    #[schema(max_length = 160)]
    company_name: Option<String>,
    #[schema(max_length = 160)]
    address_1: Option<String>,
    #[schema(max_length = 160)]
    address_2: Option<String>,
    #[schema(max_length = 80)]
    city: Option<String>,
    /// UK: answered upper-case with one space (`postcode_invalid`).
    #[schema(max_length = 16, example = "SW1A 1AA")]
    postcode: Option<String>,
    /// Default `United Kingdom`.
    #[schema(max_length = 80, example = "United Kingdom")]
    country: Option<String>,
    /// UK: 8 digits, or 2 letters and 6 digits (`company_number_invalid`).
    #[schema(max_length = 32, example = "SC123456")]
    company_number: Option<String>,
    /// UK: `GB` and 9 or 12 digits, or `GBGD`/`GBHA` and 3 digits; spaces allowed
    /// (`vat_number_invalid`); answered without spaces.
    #[schema(max_length = 32, example = "GB123456789")]
    vat_number: Option<String>,
    /// Where remittance PDFs and invoices are sent (`invoice_email_invalid`).
    #[schema(max_length = 254, example = "accounts@acme.example")]
    invoice_email: Option<String>,
}

/// The brand profile. Before the first save every field is an empty string.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/brand",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The profile", body = BrandProfileResponse),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn get_brand(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<BrandProfileResponse>> {
    let profile = state.store.brand_profile(caller.brand_id).await?.unwrap_or_default();
    Ok(Json(BrandProfileResponse { brand_id: caller.brand_slug.clone(), profile }))
}

/// Changes the fields given; the first save must include `display_name`.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/brand",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = BrandProfileInput,
    responses(
        (status = 200, description = "The whole profile after the change", body = BrandProfileResponse),
        (status = 400, description = "`invalid_body` (not a JSON object) or `validation_failed`: `display_name_required`, \
`display_name_too_long`, `support_email_invalid`, `accent_color_invalid`, `support_phone_invalid`, `logo_url_invalid`, \
`<field>_invalid` (wrong JSON type), `<field>_too_long`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn patch_brand(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BrandProfileResponse>> {
    let first_save = state.store.brand_profile(caller.brand_id).await?.is_none();
    let patch = ProfilePatch::parse(&body, first_save).map_err(ApiError::validation)?;
    let profile = state.store.save_brand_profile(caller.brand_id, &patch).await?;
    Ok(Json(BrandProfileResponse { brand_id: caller.brand_slug.clone(), profile }))
}

/// The billing entity. Before the first save every field is an empty string except
/// `country`, `United Kingdom`.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/billing",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The billing entity", body = BillingResponse),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn get_billing(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<BillingResponse>> {
    let billing = state.store.billing(caller.brand_id).await?.unwrap_or_default();
    Ok(Json(BillingResponse { brand_id: caller.brand_slug.clone(), billing }))
}

/// Changes the fields given. The answer always carries every field, empty ones included.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/billing",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = BillingInput,
    responses(
        (status = 200, description = "The whole billing entity after the change", body = BillingResponse),
        (status = 400, description = "`invalid_body` (not a JSON object) or `validation_failed`: `postcode_invalid`, \
`vat_number_invalid`, `company_number_invalid`, `invoice_email_invalid`, `<field>_invalid` (wrong JSON type), \
`<field>_too_long`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn patch_billing(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BillingResponse>> {
    let current = state.store.billing(caller.brand_id).await?.unwrap_or_default();
    let patch = BillingPatch::parse(&body, &current).map_err(ApiError::validation)?;
    let billing = state.store.save_billing(caller.brand_id, &patch).await?;
    Ok(Json(BillingResponse { brand_id: caller.brand_slug.clone(), billing }))
}
