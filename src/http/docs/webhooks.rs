//! The document's OpenAPI 3.1 `webhooks` section (decisions 11.7): what the service POSTs to
//! the partner's endpoint, one entry per event type, each body an envelope whose `data` is
//! the event's schema, with the headers every delivery carries. See docs/webhooks.md.

use serde_json::{json, Value};

use super::finish::components;
use crate::domain::event::EventType;

/// Each event type the service emits, its `data` schema and what it means.
fn events() -> [(EventType, &'static str, &'static str, &'static str); 7] {
    [
        (
            EventType::Ping,
            "PingEvent",
            "WebhookPing",
            "A test event, sent by `POST /v1/partner/settings/integrations/webhook/test` (and the dashboard's \
\"Send test event\") through the same queue, signatures and retries as every event.",
        ),
        (
            EventType::RedemptionCreated,
            "RedemptionCreatedEvent",
            "Redemption",
            "A customer's trade-in sold and they chose how to be paid. For `credit` it carries what is needed to \
honour the credit; for `cash` it is informational.",
        ),
        (
            EventType::CollectionScheduled,
            "CollectionScheduledEvent",
            "Collection",
            "The collection date of a sold clearance item was confirmed (in the dashboard or with \
`POST /v1/partner/collections`), inside the buyer's delivery window, or moved to another day \
(`PATCH /v1/partner/collections/{id}`): then it comes again with the same collection `id`, a later \
`scheduled_at` and the new `scheduled_for`, which replaces the day held for that id.",
        ),
        (
            EventType::CollectionCancelled,
            "CollectionCancelledEvent",
            "Collection",
            "A confirmed collection was cancelled (in the dashboard or with \
`DELETE /v1/partner/collections/{id}`): nothing is collected on its `scheduled_for`, and the order waits for a \
date again (a new `collection.scheduled` with another collection `id` follows when one is chosen). Sent only to \
an endpoint whose `event_types` includes it; `data` is the collection as it was.",
        ),
        (
            EventType::ListingCreated,
            "ListingCreatedEvent",
            "ListingSummary",
            "A listing of the brand was created (by the API, the dashboard or a bulk import). Sent only to an \
endpoint whose `event_types` includes it; `data` is the listing as `GET /v1/listings` lists it.",
        ),
        (
            EventType::ListingUpdated,
            "ListingUpdatedEvent",
            "ListingSummary",
            "A listing of the brand changed: its fields, its stock or status (a sale, a payment hold and its \
release) or its images. Sent only to an endpoint whose `event_types` includes it; `data` is the listing after the \
change.",
        ),
        (
            EventType::ListingDeleted,
            "ListingDeletedEvent",
            "ListingSummary",
            "A listing of the brand was trashed. Sent only to an endpoint whose `event_types` includes it; `data` is \
the listing as it was trashed.",
        ),
    ]
}

/// The headers of every delivery, in the order docs/webhooks.md lists them.
const DELIVERY_HEADERS: [(&str, &str, &str); 7] = [
    ("User-Agent", "`rehome-webhooks/1.0`.", "^rehome-webhooks/"),
    ("X-Service-Event", "The event type (as the body's `type`).", "^[a-z]+(\\.[a-z]+)?$"),
    ("X-Service-Event-Id", "The event id (as the body's `id`).", "^evt_[A-Za-z0-9]{24}$"),
    (
        "X-Service-Signature",
        "`t=<unix seconds>,v1=<hex>`: `v1` is the lower-case hex HMAC-SHA256 of `<t>.<raw body>` keyed with the \
secret string as returned (Stripe's scheme). During a rotation's overlap one `v1=` per secret, the newest first.",
        "^t=[0-9]+(,v1=[0-9a-f]{64})+$",
    ),
    ("webhook-id", "Standard Webhooks: the event id.", "^evt_[A-Za-z0-9]{24}$"),
    ("webhook-timestamp", "Standard Webhooks: Unix seconds of this attempt (the same instant as `t=`).", "^[0-9]+$"),
    (
        "webhook-signature",
        "Standard Webhooks: `v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<raw body>\">`, keyed with \
the bytes the base64 after `whsec_` decodes to; space-separated, one per secret during a rotation's overlap.",
        "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$",
    ),
];

/// Adds `webhooks` and the schemas it names.
pub fn section(doc: &mut Value) {
    let schemas = components(doc, "schemas");
    schemas.insert(
        "WebhookPing".to_owned(),
        json!({
            "type": "object",
            "description": "The `data` of a `ping` event.",
            "required": ["brand_id"],
            "properties": {"brand_id": {"type": "string", "maxLength": 64, "description": "Slug of the brand."}}
        }),
    );
    let mut section = serde_json::Map::new();
    for (event, schema_name, data, text) in events() {
        let name = event.as_str();
        schemas.insert(
            schema_name.to_owned(),
            json!({
                "type": "object",
                "description": format!("The body of a `{name}` delivery: the envelope with the event's `data`."),
                "required": ["id", "type", "created_at", "data"],
                "properties": {
                    "id": {"type": "string", "pattern": "^evt_[A-Za-z0-9]{24}$", "maxLength": 28,
                           "description": "The event id: the same on every retry and replay; deduplicate on it."},
                    "type": {"type": "string", "const": name},
                    "created_at": {"type": "string", "format": "date-time", "maxLength": 40,
                                   "description": "When the event was emitted (RFC 3339, UTC, milliseconds)."},
                    "data": {"$ref": format!("#/components/schemas/{data}")}
                }
            }),
        );
        let parameters: Vec<Value> = DELIVERY_HEADERS
            .iter()
            .map(|(header, text, pattern)| {
                json!({
                    "name": header, "in": "header", "required": true, "description": text,
                    "schema": {"type": "string", "pattern": pattern, "maxLength": 1024}
                })
            })
            .collect();
        section.insert(
            name.to_owned(),
            json!({"post": {
                "operationId": format!("webhook_{}", name.replace('.', "_")),
                "summary": format!("`{name}` delivery"),
                "description": format!("{text} Delivered as a signed POST to the brand's endpoint \
(`PATCH /v1/partner/settings/integrations/webhook`); retried on a timeout, a connection failure, 5xx or 429 \
for up to 24 hours. Verify a signature before trusting the body (docs/webhooks.md)."),
                "tags": ["Webhooks"],
                // Not an API key: the receiver checks the signature headers.
                "security": [],
                "parameters": parameters,
                "requestBody": {
                    "required": true,
                    "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema_name}")}}}
                },
                "responses": {
                    "200": {"description": "Any 2xx within 5 seconds acknowledges the delivery."},
                    "400": {"description": "Any other 4xx parks the event as `dead` (replay it from the delivery log)."},
                    "500": {"description": "A 5xx (or 429, or no answer in time) is retried with back-off."}
                }
            }}),
        );
    }
    doc["webhooks"] = Value::Object(section);
}
