//! Webhook configuration (`/v1/partner/settings/integrations/webhook`), the delivery log
//! and replay (`/v1/partner/webhooks/deliveries`).

mod params;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use reqwest::Url;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::jobs::signature::{generate_secret, secret_hint};
use crate::store::{AttemptRecord, DeliveryRecord, StoreError, WebhookEndpointRecord};
use params::{check_destination, DeliveryParams, WebhookPatch};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(get_webhook, patch_webhook, rotate_secret, list_deliveries, get_delivery, replay_delivery),
    components(schemas(WebhookSettings, WebhookInput, Delivery, DeliveryDetail, Attempt, DeliveryPage, DeliveryMeta)),
    tags((name = "Webhooks", description = "The partner's webhook endpoint, its signing secret, the delivery log and replay"))
)]
pub struct WebhooksApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/integrations/webhook", get(get_webhook).patch(patch_webhook))
        .route("/partner/settings/integrations/webhook/rotate-secret", post(rotate_secret))
        .route("/partner/webhooks/deliveries", get(list_deliveries))
        .route("/partner/webhooks/deliveries/{event_id}", get(get_delivery))
        .route("/partner/webhooks/deliveries/{event_id}/replay", post(replay_delivery))
}

/// The brand's webhook endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSettings {
    /// Slug of the partner workspace.
    pub brand_id: String,
    /// Where events are POSTed; null until configured.
    pub url: Option<String>,
    /// False until configured, or while the partner has paused deliveries.
    pub enabled: bool,
    /// The signing secret, present only in the answer that created it (first URL, or a
    /// rotation). Store it: later answers show only the hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "whsec_8Qm2hJ0cP1xY7rT4kN6vB3sL9dF5gW2z")]
    pub signing_secret: Option<String>,
    /// The secret's prefix and last four characters.
    #[schema(example = "whsec_…gW2z")]
    pub signing_secret_hint: Option<String>,
    pub secret_rotated_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl WebhookSettings {
    fn new(brand_slug: &str, endpoint: Option<&WebhookEndpointRecord>) -> Self {
        Self {
            brand_id: brand_slug.to_owned(),
            url: endpoint.map(|e| e.url.clone()),
            enabled: endpoint.is_some_and(|e| e.enabled),
            signing_secret: None,
            signing_secret_hint: endpoint.map(|e| secret_hint(&e.signing_secret)),
            secret_rotated_at: endpoint.map(|e| e.secret_rotated_at),
            updated_at: endpoint.map(|e| e.updated_at),
        }
    }

    fn revealing_secret(brand_slug: &str, endpoint: &WebhookEndpointRecord) -> Self {
        Self { signing_secret: Some(endpoint.signing_secret.clone()), ..Self::new(brand_slug, Some(endpoint)) }
    }
}

/// The body of `PATCH /v1/partner/settings/integrations/webhook`: the fields to change.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct WebhookInput {
    /// Required the first time. An absolute `https` URL (`http` only when the server runs
    /// with `REHOME_WEBHOOK_ALLOW_HTTP=true`), at most 2048 characters, without user or
    /// password, whose host is not a loopback, private or otherwise non-public address
    /// (`url_required`, `url_invalid`, `url_too_long`).
    #[schema(example = "https://hooks.acme.example/rehome/3f9a1c")]
    url: Option<String>,
    /// Default true. False pauses deliveries: events are kept and sent once it is true
    /// again, if still within their retry window (`enabled_invalid`).
    enabled: Option<bool>,
}

/// One event in the delivery log.
#[derive(Debug, Serialize, ToSchema)]
pub struct Delivery {
    /// The envelope `id`, same on every attempt and replay.
    #[schema(example = "evt_4fQ9xK2mZ7pL1sV8bN3cR6tY")]
    pub event_id: String,
    /// `redemption.created` or `collection.scheduled`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// `pending` (waiting for its first or next attempt), `delivered` or `dead`.
    pub status: String,
    /// Attempts made so far.
    pub attempts: i64,
    /// HTTP status of the last attempt; null when it got no answer.
    pub last_status_code: Option<i64>,
    /// Why the last attempt failed: `timeout`, `connection_failed`, `address_refused`,
    /// `http_status`, `redirect_not_followed`, `invalid_url`; or `no_endpoint` when no
    /// enabled endpoint is configured. Null after a success.
    pub last_error: Option<String>,
    /// When a pending event is next tried; null when delivered, dead, or waiting for an endpoint.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl From<DeliveryRecord> for Delivery {
    fn from(r: DeliveryRecord) -> Self {
        Self {
            event_id: r.event_id,
            event_type: r.event_type,
            status: r.status,
            attempts: r.attempts,
            last_status_code: r.last_status_code,
            last_error: r.last_error,
            next_attempt_at: r.next_attempt_at,
            created_at: r.created_at,
            delivered_at: r.delivered_at,
        }
    }
}

/// One delivery attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct Attempt {
    pub attempted_at: DateTime<Utc>,
    pub url: String,
    pub status_code: Option<i64>,
    /// Error class as in `last_error`; null for a 2xx.
    pub error: Option<String>,
    pub duration_ms: i64,
}

impl From<AttemptRecord> for Attempt {
    fn from(r: AttemptRecord) -> Self {
        Self {
            attempted_at: r.attempted_at,
            url: r.url,
            status_code: r.status_code,
            error: r.error,
            duration_ms: r.duration_ms,
        }
    }
}

/// One event with every attempt, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub delivery: Delivery,
    pub attempt_log: Vec<Attempt>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryMeta {
    pub page: u32,
    pub per_page: u32,
    /// Events matching the filter.
    pub total: i64,
    pub total_pages: i64,
    pub status: String,
    pub brand_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryPage {
    /// Newest event first.
    pub data: Vec<Delivery>,
    pub meta: DeliveryMeta,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct DeliveryQuery {
    /// `pending`, `delivered`, `dead` or `any` (default).
    status: Option<String>,
    /// 1-indexed page; default 1.
    page: Option<u32>,
    /// 1 to 100; default 20.
    per_page: Option<u32>,
}

/// The endpoint as configured (`url` null and `enabled` false before the first PATCH).
#[utoipa::path(
    get,
    path = "/v1/partner/settings/integrations/webhook",
    tag = "Webhooks",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The endpoint; the secret shows only as a hint", body = WebhookSettings),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn get_webhook(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<WebhookSettings>> {
    let endpoint = state.store.webhook_endpoint(caller.brand_id).await?;
    Ok(Json(WebhookSettings::new(&caller.brand_slug, endpoint.as_ref())))
}

/// Sets the URL and/or pauses or resumes deliveries. The first time a URL is set, a signing
/// secret is generated and returned once as `signing_secret`. Events emitted while no
/// endpoint was enabled are delivered once one is, if still within their retry window.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/integrations/webhook",
    tag = "Webhooks",
    security(("bearer" = [])),
    request_body = WebhookInput,
    responses(
        (status = 200, description = "The endpoint after the change; `signing_secret` only when just created", body = WebhookSettings),
        (status = 400, description = "`invalid_body` (not a JSON object) or `validation_failed`: `url_required`, \
`url_invalid`, `url_too_long`, `enabled_invalid`, `<field>_unknown`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn patch_webhook(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<WebhookSettings>> {
    let patch = WebhookPatch::parse(&body, state.config.webhook_allow_http).map_err(ApiError::validation)?;
    if let Some(url) = &patch.url {
        check_destination(url, state.config.allow_private_network).await?;
    }
    let url = patch.url.as_ref().map(Url::as_str);
    let existing = state.store.webhook_endpoint(caller.brand_id).await?;
    let answer = match (existing, url) {
        (None, None) => return Err(ApiError::field("url", "url_required")),
        (None, Some(url)) => {
            let secret = generate_secret().map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
            let enabled = patch.enabled.unwrap_or(true);
            match state.store.create_webhook_endpoint(caller.brand_id, url, enabled, &secret).await {
                Ok(created) => WebhookSettings::revealing_secret(&caller.brand_slug, &created),
                // Another request configured it first: this one is a change of it.
                Err(StoreError::Conflict(_)) => {
                    let updated =
                        state.store.update_webhook_endpoint(caller.brand_id, Some(url), patch.enabled).await?;
                    WebhookSettings::new(&caller.brand_slug, Some(&updated))
                }
                Err(e) => return Err(e.into()),
            }
        }
        (Some(_), url) => {
            let updated = state.store.update_webhook_endpoint(caller.brand_id, url, patch.enabled).await?;
            WebhookSettings::new(&caller.brand_slug, Some(&updated))
        }
    };
    if answer.enabled {
        state.outbox.wake();
    }
    Ok(Json(answer))
}

/// Replaces the signing secret and returns the new one, once. Every delivery from now on
/// (retries and replays of older events included) is signed with it; the old one stops
/// verifying at once.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/integrations/webhook/rotate-secret",
    tag = "Webhooks",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The endpoint with its new `signing_secret`", body = WebhookSettings),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`webhook_not_configured`: set a URL first", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn rotate_secret(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<WebhookSettings>> {
    let secret = generate_secret().map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    match state.store.rotate_webhook_secret(caller.brand_id, &secret).await {
        Ok(endpoint) => Ok(Json(WebhookSettings::revealing_secret(&caller.brand_slug, &endpoint))),
        Err(StoreError::NotFound) => Err(ApiError::not_found(
            "webhook_not_configured",
            "No webhook endpoint is configured; PATCH /v1/partner/settings/integrations/webhook with a url first.",
        )),
        Err(e) => Err(e.into()),
    }
}

/// The brand's events and how their delivery went, newest first.
#[utoipa::path(
    get,
    path = "/v1/partner/webhooks/deliveries",
    tag = "Webhooks",
    security(("bearer" = [])),
    params(DeliveryQuery),
    responses(
        (status = 200, description = "One page of the log", body = DeliveryPage),
        (status = 400, description = "`validation_failed`: `status_invalid`, `page_invalid`, `per_page_invalid`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn list_deliveries(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<DeliveryPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let params = DeliveryParams::parse(&pairs)?;
    let page = params.page;
    let (rows, total) =
        state.store.webhook_deliveries(caller.brand_id, params.status, page.limit(), page.offset()).await?;
    Ok(Json(DeliveryPage {
        data: rows.into_iter().map(Delivery::from).collect(),
        meta: DeliveryMeta {
            page: page.page,
            per_page: page.per_page,
            total,
            total_pages: page.total_pages(total),
            status: params.status.unwrap_or("any").to_owned(),
            brand_id: caller.brand_slug.clone(),
        },
    }))
}

/// One event of the brand with every delivery attempt.
#[utoipa::path(
    get,
    path = "/v1/partner/webhooks/deliveries/{event_id}",
    tag = "Webhooks",
    security(("bearer" = [])),
    params(("event_id" = String, Path, description = "The event id (`evt_…`)")),
    responses(
        (status = 200, description = "The event's delivery state and attempts", body = DeliveryDetail),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 404, description = "`event_not_found`: no such event for this brand", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn get_delivery(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<DeliveryDetail>> {
    let event_id = path.map(|Path(id)| id).map_err(|_| event_not_found())?;
    let (delivery, attempts) = state.store.webhook_delivery(caller.brand_id, &event_id).await.map_err(not_found)?;
    Ok(Json(DeliveryDetail {
        delivery: delivery.into(),
        attempt_log: attempts.into_iter().map(Attempt::from).collect(),
    }))
}

/// Queues the event again for immediate delivery: same id, same body bytes (signed anew),
/// with a fresh retry window. Works on any status, delivered and dead included.
#[utoipa::path(
    post,
    path = "/v1/partner/webhooks/deliveries/{event_id}/replay",
    tag = "Webhooks",
    security(("bearer" = [])),
    params(("event_id" = String, Path, description = "The event id (`evt_…`)")),
    responses(
        (status = 200, description = "The event, pending again", body = Delivery),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 404, description = "`event_not_found`: no such event for this brand", body = ErrorBody),
        (status = 409, description = "`webhook_not_configured`: no enabled endpoint to deliver to", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn replay_delivery(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Delivery>> {
    let event_id = path.map(|Path(id)| id).map_err(|_| event_not_found())?;
    // The event is looked up first so that another brand's id answers 404 whatever the
    // caller's endpoint state.
    state.store.webhook_delivery(caller.brand_id, &event_id).await.map_err(not_found)?;
    if !state.store.webhook_endpoint(caller.brand_id).await?.is_some_and(|e| e.enabled) {
        return Err(ApiError::client(
            StatusCode::CONFLICT,
            "webhook_not_configured",
            "No enabled webhook endpoint: configure a url (and enabled: true) before replaying.",
        ));
    }
    state.store.replay_webhook(caller.brand_id, &event_id).await.map_err(not_found)?;
    state.outbox.wake();
    let (delivery, _) = state.store.webhook_delivery(caller.brand_id, &event_id).await.map_err(not_found)?;
    Ok(Json(delivery.into()))
}

fn event_not_found() -> ApiError {
    ApiError::not_found("event_not_found", "No event with this id for the caller's brand.")
}

fn not_found(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => event_not_found(),
        other => other.into(),
    }
}
