//! Webhook configuration (`/v1/partner/settings/integrations/webhook`), the delivery log
//! and replay (`/v1/partner/webhooks/deliveries`).

mod params;

use crate::domain::event::DEFAULT_SUBSCRIPTION;
use crate::http::docs::refusals::refusals;
use crate::http::routing::{get, patch, post};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Router;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::outcome::Outcome;
use crate::domain::precondition::{content_etag, Precondition};
use crate::domain::view::{AttemptRecord, DeliveryRecord, WebhookEndpointRecord};
use crate::domain::webhook::{DeadReplay, DeliveryStatus, FailureClass, SecretRotation, WebhookPatch};
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::{JsonObject, OptionalJsonObject};
use crate::http::precondition::{Guard, Tagged};
use crate::http::Json;
use crate::jobs::signature::secret_hint;
use crate::state::AppState;
use crate::usecases::webhooks::{self, ConfigureError, Configured, ReplayError, RotateError};
use params::DeliveryParams;

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        get_webhook, patch_webhook, rotate_secret, send_test_event, list_deliveries, get_delivery, replay_delivery,
        replay_dead
    ),
    components(schemas(
        WebhookSettings, WebhookPatch, SecretRotation, TestEvent, DeadReplay, Replayed, Delivery, DeliveryDetail, Attempt, DeliveryPage, DeliveryMeta, DeliveryStatus,
        FailureClass
    )),
    tags((name = "Webhooks", description = "The partner's webhook endpoint, its signing secret, the delivery log and replay"))
)]
pub struct WebhooksApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/partner/settings/integrations/webhook", get(get_webhook).merge(patch(patch_webhook)))
        .route("/partner/settings/integrations/webhook/rotate-secret", post(rotate_secret))
        .route("/partner/settings/integrations/webhook/test", post(send_test_event))
        .route("/partner/webhooks/deliveries", get(list_deliveries))
        .route("/partner/webhooks/deliveries/replay", post(replay_dead))
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
    /// The event types the endpoint receives (`ping` always): the spec's two unless
    /// changed; the listing events only when asked for.
    #[schema(value_type = Vec<crate::http::docs::enums::SubscribableEventType>, example = json!(["redemption.created", "collection.scheduled"]))]
    pub event_types: Vec<String>,
    /// In the answer of a rotation only: when the previous secret stops signing (and so
    /// verifying): `secret_rotated_at` plus `expire_previous_in_hours` (at once for 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_expires_at: Option<DateTime<Utc>>,
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
            event_types: endpoint
                .map(|e| e.event_types().into_iter().map(str::to_owned).collect())
                .unwrap_or_else(|| DEFAULT_SUBSCRIPTION.iter().map(|t| t.as_str().to_owned()).collect()),
            previous_expires_at: None,
            updated_at: endpoint.map(|e| e.updated_at),
        }
    }

    fn revealing_secret(brand_slug: &str, endpoint: &WebhookEndpointRecord) -> Self {
        Self { signing_secret: Some(endpoint.signing_secret.clone()), ..Self::new(brand_slug, Some(endpoint)) }
    }
}

/// One event in the delivery log.
#[derive(Debug, Serialize, ToSchema)]
pub struct Delivery {
    /// The envelope `id`, same on every attempt and replay.
    #[schema(example = "evt_4fQ9xK2mZ7pL1sV8bN3cR6tY")]
    pub event_id: String,
    /// The event's type (`ping` for a test event).
    #[serde(rename = "type")]
    #[schema(value_type = crate::http::docs::enums::EventType)]
    pub event_type: String,
    pub status: DeliveryStatus,
    /// Attempts made so far.
    pub attempts: i64,
    /// HTTP status of the last attempt; null when it got no answer.
    pub last_status_code: Option<i64>,
    /// Why the last attempt failed (see `FailureClass`); null after a success.
    pub last_error: Option<FailureClass>,
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
    /// Why the attempt failed (see `FailureClass`); null for a 2xx.
    pub error: Option<FailureClass>,
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
    /// The status filter: one of the statuses, or `any`.
    pub status: String,
    pub brand_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryPage {
    /// Newest event first.
    pub data: Vec<Delivery>,
    pub meta: DeliveryMeta,
}

/// The endpoint as configured (`url` null and `enabled` false before the first PATCH).
#[utoipa::path(
    get,
    path = "/v1/partner/settings/integrations/webhook",
    tag = "Webhooks",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The endpoint; the secret shows only as a hint", body = WebhookSettings, headers(("ETag" = String, description = "A strong entity tag of this answer: send it as `If-Match` with a PATCH to change only what you read"))),
        (status = 304, description = "Not modified: the request's `If-None-Match` names the current `ETag` (send the tag of your copy to revalidate it); no body", headers(("ETag" = String, description = "The current entity tag"))),
    )
)]
pub async fn get_webhook(caller: Caller, State(state): State<AppState>) -> ApiResult<Tagged<WebhookSettings>> {
    let endpoint = webhooks::endpoint(&state.core, &caller.admin).await?;
    Ok(Tagged(WebhookSettings::new(&caller.brand_slug, endpoint.as_ref())))
}

refusals!(PatchWebhookRefusals: [
    Invalid("`invalid_body` (not a JSON object) or `validation_failed`: `url_required`, \
`url_invalid`, `url_too_long`, `enabled_invalid`, `<field>_unknown`"),
    Outcome(Outcome::PreconditionFailed),
]);

/// Sets the URL and/or pauses or resumes deliveries. The first time a URL is set, a signing
/// secret is generated and returned once as `signing_secret`. Events emitted while no
/// endpoint was enabled are delivered once one is, if still within their retry window.
#[utoipa::path(
    patch,
    path = "/v1/partner/settings/integrations/webhook",
    tag = "Webhooks",
    security(("bearer" = [])),
    request_body = WebhookPatch,
    params(("If-Match" = Option<String>, Header, nullable = false, description = "Change only if the endpoint still answers this `ETag` (as `GET` gave it); `*` matches any")),
    responses(
        (status = 200, description = "The endpoint after the change; `signing_secret` only when just created", body = WebhookSettings, headers(("ETag" = String, description = "The `ETag` a `GET` now answers: send it as `If-Match` with the next PATCH"))),
        PatchWebhookRefusals,
    )
)]
pub async fn patch_webhook(
    caller: Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    let patch = WebhookPatch::parse(&body, state.core.config.webhook_allow_http).map_err(ConfigureError::Invalid)?;
    let guard = Guard::new(&headers, |current: &Option<WebhookEndpointRecord>| {
        WebhookSettings::new(&caller.brand_slug, current.as_ref())
    });
    let check = |current: &Option<WebhookEndpointRecord>| guard.holds(current);
    let check: Option<Precondition<'_, Option<WebhookEndpointRecord>>> = guard.is_set().then_some(&check);
    let Configured { endpoint, secret_created } =
        webhooks::configure(&state.core, &caller.admin, &patch, check).await?;
    // The tag is the GET's (which shows the secret as a hint only), also when this answer
    // reveals a new secret.
    let tag = serde_json::to_vec(&WebhookSettings::new(&caller.brand_slug, Some(&endpoint)))
        .map(|bytes| content_etag(&bytes))
        .map_err(|e| ApiError::Internal(e.into()))?;
    let answer = if secret_created {
        WebhookSettings::revealing_secret(&caller.brand_slug, &endpoint)
    } else {
        WebhookSettings::new(&caller.brand_slug, Some(&endpoint))
    };
    let mut response = Json(answer).into_response();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    Ok(response)
}

refusals!(RotateSecretRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `expire_previous_in_hours_invalid`, \
`<field>_unknown`"),
    Outcome(Outcome::WebhookUrlMissing),
]);

/// Replaces the signing secret and returns the new one, once. Every delivery from now on
/// (retries and replays of older events included) is signed with it. With
/// `expire_previous_in_hours` the previous secret keeps signing too until then (one `v1=`
/// in `X-Service-Signature` and one entry in `webhook-signature` per secret, the newest
/// first), so a receiver can switch over without losing a delivery; earlier secrets still
/// in their overlap keep signing until each one's end (at most 5 previous secrets). Without
/// it the old secrets stop verifying at once.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/integrations/webhook/rotate-secret",
    tag = "Webhooks",
    security(("bearer" = [])),
    request_body(content = Option<SecretRotation>, description = "May be empty (or `{}`): no overlap", content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint with its new `signing_secret`, and `previous_expires_at`: when the previous secret stops verifying", body = WebhookSettings),
        RotateSecretRefusals,
    )
)]
pub async fn rotate_secret(
    caller: Caller,
    State(state): State<AppState>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<WebhookSettings>> {
    let rotation = SecretRotation::parse(&body).map_err(RotateError::Invalid)?;
    let endpoint = webhooks::rotate_secret(&state.core, &caller.admin, &rotation).await?;
    let overlap = chrono::TimeDelta::hours(rotation.expire_previous_in_hours);
    Ok(Json(WebhookSettings {
        previous_expires_at: Some(endpoint.secret_rotated_at + overlap),
        ..WebhookSettings::revealing_secret(&caller.brand_slug, &endpoint)
    }))
}

/// The id of a test event just queued.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"event_id": "evt_0J8TKphYAu1T9wmy3LSJaBL3"}))]
pub struct TestEvent {
    pub event_id: String,
}

refusals!(SendTestEventRefusals: [
    Outcome(Outcome::WebhookNotConfigured),
]);

/// Sends a signed `ping` event (`{"id", "type": "ping", "created_at", "data": {"brand_id"}}`)
/// to the endpoint through the same queue as every event: it is signed, retried and shown in
/// the delivery log like the others. Use it to check a receiver without a real sale.
#[utoipa::path(
    post,
    path = "/v1/partner/settings/integrations/webhook/test",
    tag = "Webhooks",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The test event's id; follow it in the delivery log", body = TestEvent),
        SendTestEventRefusals,
    )
)]
pub async fn send_test_event(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<TestEvent>> {
    let event_id = webhooks::send_test_event(&state.core, &caller.admin).await?;
    Ok(Json(TestEvent { event_id }))
}

/// How many events a replay queued.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"replayed": 3}))]
pub struct Replayed {
    pub replayed: u64,
}

refusals!(ReplayDeadRefusals: [
    Invalid("`invalid_body` or `validation_failed`: `status_required`, `status_invalid`, \
`since_invalid`, `<field>_unknown`"),
    Outcome(Outcome::WebhookNotConfigured),
]);

/// Queues every dead event of the brand again (those created at or after `since`, when
/// given), each with a fresh retry window: after an outage of the receiver, one call sends
/// everything that gave up.
#[utoipa::path(
    post,
    path = "/v1/partner/webhooks/deliveries/replay",
    tag = "Webhooks",
    security(("bearer" = [])),
    request_body = DeadReplay,
    responses(
        (status = 200, description = "How many events were queued again", body = Replayed),
        ReplayDeadRefusals,
    )
)]
pub async fn replay_dead(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Replayed>> {
    let request = DeadReplay::parse(&body).map_err(ReplayError::Invalid)?;
    let replayed = webhooks::replay_dead(&state.core, &caller.admin, &request).await?;
    Ok(Json(Replayed { replayed }))
}

refusals!(ListDeliveriesRefusals: [
    Invalid("`validation_failed`: `status_invalid`, `page_invalid`, `per_page_invalid`"),
]);

/// The brand's events and how their delivery went, newest first.
#[utoipa::path(
    get,
    path = "/v1/partner/webhooks/deliveries",
    tag = "Webhooks",
    security(("bearer" = [])),
    params(DeliveryParams),
    responses(
        (status = 200, description = "One page of the log", body = DeliveryPage),
        ListDeliveriesRefusals,
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
    let webhooks::DeliveryPage { deliveries, total } =
        webhooks::deliveries(&state.core, &caller.admin, params.status, page.limit(), page.offset()).await?;
    Ok(Json(DeliveryPage {
        data: deliveries.into_iter().map(Delivery::from).collect(),
        meta: DeliveryMeta {
            page: page.page,
            per_page: page.per_page,
            total,
            total_pages: page.total_pages(total),
            status: params.status.map_or("any", DeliveryStatus::as_str).to_owned(),
            brand_id: caller.brand_slug.clone(),
        },
    }))
}

refusals!(GetDeliveryRefusals: [
    Outcome(Outcome::EventNotFound),
]);

/// One event of the brand with every delivery attempt.
#[utoipa::path(
    get,
    path = "/v1/partner/webhooks/deliveries/{event_id}",
    tag = "Webhooks",
    security(("bearer" = [])),
    params(("event_id" = String, Path, max_length = 64, description = "The event id (`evt_…`)")),
    responses(
        (status = 200, description = "The event's delivery state and attempts", body = DeliveryDetail),
        GetDeliveryRefusals,
    )
)]
pub async fn get_delivery(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<DeliveryDetail>> {
    let event_id = path.map(|Path(id)| id).map_err(|_| event_not_found())?;
    let (delivery, attempts) = webhooks::delivery(&state.core, &caller.admin, &event_id).await?;
    Ok(Json(DeliveryDetail {
        delivery: delivery.into(),
        attempt_log: attempts.into_iter().map(Attempt::from).collect(),
    }))
}

refusals!(ReplayDeliveryRefusals: [
    Outcome(Outcome::EventNotFound),
    Outcome(Outcome::WebhookNotConfigured),
]);

/// Queues the event again for immediate delivery: same id, same body bytes (signed anew),
/// with a fresh retry window. Works on any status, delivered and dead included.
#[utoipa::path(
    post,
    path = "/v1/partner/webhooks/deliveries/{event_id}/replay",
    tag = "Webhooks",
    security(("bearer" = [])),
    params(("event_id" = String, Path, max_length = 64, description = "The event id (`evt_…`)")),
    responses(
        (status = 200, description = "The event, pending again", body = Delivery),
        ReplayDeliveryRefusals,
    )
)]
pub async fn replay_delivery(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Delivery>> {
    let event_id = path.map(|Path(id)| id).map_err(|_| event_not_found())?;
    let delivery = webhooks::replay(&state.core, &caller.admin, &event_id).await?;
    Ok(Json(delivery.into()))
}

fn event_not_found() -> ApiError {
    Outcome::EventNotFound.into()
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use utoipa::OpenApi;

    use super::*;

    /// `last_error` and an attempt's `error` are documented by the enum the worker writes,
    /// and the body schema keeps its name.
    #[test]
    fn the_document_takes_failure_classes_and_the_body_from_their_types() {
        let doc = serde_json::to_value(WebhooksApi::openapi()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let classes: Vec<&str> =
            schemas["FailureClass"]["enum"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let wire: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(classes, wire);
        let last_error = schemas["Delivery"]["properties"]["last_error"].to_string();
        assert!(last_error.contains("#/components/schemas/FailureClass"), "{last_error}");
        let error = schemas["Attempt"]["properties"]["error"].to_string();
        assert!(error.contains("#/components/schemas/FailureClass"), "{error}");
        let mut fields: Vec<&String> = schemas["WebhookInput"]["properties"].as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(fields, ["enabled", "event_types", "url"]);
    }
}
