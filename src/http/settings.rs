//! `/v1/partner/settings/brand` and `/v1/partner/settings/billing`: the public brand profile
//! and the billing entity, each read whole and changed by partial update.

use crate::http::docs::refusals::refusals;
use crate::http::routing::{get, patch};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::precondition::Precondition;
use crate::domain::settings::{Billing, BillingEdit, BillingPatch, BrandProfile, ProfileEdit, ProfilePatch};
use crate::error::ApiResult;
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::precondition::{Guard, Tagged};
use crate::state::AppState;
use crate::usecases::settings::{self};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(get_brand, patch_brand, get_billing, patch_billing),
    components(schemas(BrandProfileResponse, BrandProfile, ProfilePatch, BillingResponse, Billing, BillingPatch)),
    tags((name = "Settings", description = "Brand profile, billing entity and warehouses; partner admins only"))
)]
pub struct SettingsApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/brand", get(get_brand).merge(patch(patch_brand)))
        .route("/partner/settings/billing", get(get_billing).merge(patch(patch_billing)))
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

/// The brand profile. Before the first save every field is an empty string.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/brand",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The profile", body = BrandProfileResponse, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        (status = 304, description = "Not modified: the request's `If-None-Match` names the current `ETag` (send the tag of your copy to revalidate it); no body", headers(("ETag" = String, description = "The current entity tag"))),
    )
)]
pub async fn get_brand(caller: Caller, State(state): State<AppState>) -> ApiResult<Tagged<BrandProfileResponse>> {
    let profile = settings::profile(&state.core, &caller.admin).await?;
    Ok(Tagged(BrandProfileResponse { brand_id: caller.brand_slug.clone(), profile }))
}

refusals!(PatchBrandRefusals: [
    Outcome(Outcome::PreconditionFailed),
    Invalid("`invalid_body` (not a JSON object) or `validation_failed`: `display_name_required`, \
`display_name_too_long`, `support_email_invalid`, `accent_color_invalid`, `support_phone_invalid`, `logo_url_invalid`, \
`<field>_invalid` (wrong JSON type), `<field>_too_long`, `<field>_unknown`"),
]);

/// Changes the fields given; the first save must include `display_name`.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/brand",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = ProfilePatch,
    params(("If-Match" = Option<String>, Header, nullable = false, description = "Change only if the section still answers this `ETag`; `*` matches any")),
    responses(
        (status = 200, description = "The whole profile after the change", body = BrandProfileResponse, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        PatchBrandRefusals,
    )
)]
pub async fn patch_brand(
    caller: Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Tagged<BrandProfileResponse>> {
    let guard = Guard::new(&headers, |current: &BrandProfile| BrandProfileResponse {
        brand_id: caller.brand_slug.clone(),
        profile: current.clone(),
    });
    let check = |current: &BrandProfile| guard.holds(current);
    let check: Option<Precondition<'_, BrandProfile>> = guard.is_set().then_some(&check);
    let profile = settings::update_profile(&state.core, &caller.admin, ProfileEdit::parse(&body), check).await?;
    Ok(Tagged(BrandProfileResponse { brand_id: caller.brand_slug.clone(), profile }))
}

/// The billing entity. Before the first save every field is an empty string except
/// `country`, `United Kingdom`.
#[utoipa::path(
    get,
    path = "/v1/partner/settings/billing",
    tag = "Settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The billing entity", body = BillingResponse, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        (status = 304, description = "Not modified: the request's `If-None-Match` names the current `ETag` (send the tag of your copy to revalidate it); no body", headers(("ETag" = String, description = "The current entity tag"))),
    )
)]
pub async fn get_billing(caller: Caller, State(state): State<AppState>) -> ApiResult<Tagged<BillingResponse>> {
    let billing = settings::billing(&state.core, &caller.admin).await?;
    Ok(Tagged(BillingResponse { brand_id: caller.brand_slug.clone(), billing }))
}

refusals!(PatchBillingRefusals: [
    Outcome(Outcome::PreconditionFailed),
    Invalid("`invalid_body` (not a JSON object) or `validation_failed`: `postcode_invalid`, \
`vat_number_invalid`, `company_number_invalid`, `invoice_email_invalid`, `<field>_invalid` (wrong JSON type), \
`<field>_too_long`, `<field>_unknown`"),
]);

/// Changes the fields given. The answer always carries every field, empty ones included.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/billing",
    tag = "Settings",
    security(("bearer" = [])),
    request_body = BillingPatch,
    params(("If-Match" = Option<String>, Header, nullable = false, description = "Change only if the section still answers this `ETag`; `*` matches any")),
    responses(
        (status = 200, description = "The whole billing entity after the change", body = BillingResponse, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        PatchBillingRefusals,
    )
)]
pub async fn patch_billing(
    caller: Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Tagged<BillingResponse>> {
    let guard = Guard::new(&headers, |current: &Billing| BillingResponse {
        brand_id: caller.brand_slug.clone(),
        billing: current.clone(),
    });
    let check = |current: &Billing| guard.holds(current);
    let check: Option<Precondition<'_, Billing>> = guard.is_set().then_some(&check);
    let billing = settings::update_billing(&state.core, &caller.admin, BillingEdit::parse(&body), check).await?;
    Ok(Tagged(BillingResponse { brand_id: caller.brand_slug.clone(), billing }))
}

#[cfg(test)]
mod tests {
    use utoipa::OpenApi;

    use super::*;

    /// The bodies keep their schema names, with exactly the fields their parsers accept.
    #[test]
    fn the_documented_bodies_are_the_parsed_ones() {
        let doc = serde_json::to_value(SettingsApi::openapi()).unwrap();
        let schemas = &doc["components"]["schemas"];
        for (name, spec) in [
            ("BrandProfileInput", &crate::domain::settings::PROFILE_BODY),
            ("BillingInput", &crate::domain::settings::BILLING_BODY),
        ] {
            let mut documented: Vec<&str> =
                schemas[name]["properties"].as_object().unwrap().keys().map(String::as_str).collect();
            let mut accepted: Vec<&str> = spec.names().collect();
            documented.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(documented, accepted, "{name}");
        }
        let patch = &doc["paths"]["/v1/partner/settings/brand"]["patch"]["requestBody"].to_string();
        assert!(patch.contains("#/components/schemas/BrandProfileInput"), "{patch}");
    }
}
