//! Webhooks: configuration, signed deliveries to real local receivers, retries, dead
//! letters, the delivery log and replay, crash safety.

mod at_rest;
mod bench;
mod config;
mod crash;
mod delivery;
mod listing_events;
mod log;
pub mod receiver;
mod signature;
mod standard;

use std::time::Duration;

use rehome::config::Config;
use rehome::domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome::domain::event::{Event, EventType};
use serde_json::{json, Value};

use crate::helpers::{json, spawn_app_with, Partner, TestApp};

pub const WEBHOOK: &str = "/v1/partner/settings/integrations/webhook";
pub const ROTATE: &str = "/v1/partner/settings/integrations/webhook/rotate-secret";
pub const DELIVERIES: &str = "/v1/partner/webhooks/deliveries";

/// A server that may deliver to plain-http loopback receivers, with a short schedule:
/// retries from 100 ms, a 1 s timeout, a 50 ms poll.
pub async fn webhook_app(adjust: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_with(|config| {
        config.allow_private_network = true;
        config.webhook_allow_http = true;
        config.webhook_retry_base_ms = 100;
        config.webhook_timeout_ms = 1000;
        config.webhook_poll_ms = 50;
        adjust(config);
    })
    .await
}

/// Sets the partner's webhook URL; returns the signing secret handed out.
/// The audit entry of an endpoint a test writes straight into the store (as the operator).
pub fn operator_configured(brand_id: i64) -> AuditEntry {
    AuditEntry { brand_id, actor: AuditActor::operator(), action: AuditAction::WebhookUpdated, target: None, ip: None }
}

pub async fn configure(app: &TestApp, partner: &Partner, url: &str) -> String {
    let response = app.patch(WEBHOOK, &partner.key, &json!({ "url": url })).await;
    assert_eq!(response.status(), 200);
    let body = json(response).await;
    body["signing_secret"].as_str().unwrap_or_else(|| panic!("no secret in {body}")).to_owned()
}

/// A `redemption.created` data object as the spec shapes it.
pub fn redemption(partner: &Partner, n: u32) -> Value {
    json!({
        "id": format!("red_{n}"),
        "brand_id": partner.slug,
        "customer_id": "cus_42",
        "customer_choice": "credit",
        "credit_destination": "code",
        "value_pence": 12_000 + n,
        "value": f64::from(12_000 + n) / 100.0,
        "currency": "GBP",
        "code": "RH-7Q2M-9XKD",
        "expires_at": "2027-11-21T09:30:00Z",
        "original_order_id": null,
        "related_listing_id": 1001,
        "sale_completed_at": "2026-11-21T09:30:00Z"
    })
}

/// Emits an event through the store (as a change with nothing else to write would).
pub async fn emit(app: &TestApp, partner: &Partner, n: u32) -> Event {
    let event = Event::new(partner.brand_id, EventType::RedemptionCreated, redemption(partner, n)).unwrap();
    app.store.emit_event(&event).await.unwrap();
    event
}

/// The delivery log entry of one event, with its attempts.
pub async fn delivery(app: &TestApp, partner: &Partner, event_id: &str) -> Value {
    let response = app.get(&format!("{DELIVERIES}/{event_id}"), &partner.key).await;
    assert_eq!(response.status(), 200);
    json(response).await
}

/// Waits until no event is due now or later (every one delivered, dead or held back by a
/// disabled endpoint, and none leased), so that the deliverer has nothing more to send:
/// what a receiver has had by then is all it will get.
pub async fn settled(app: &TestApp) {
    let later = chrono::Utc::now() + chrono::TimeDelta::days(30);
    let idle =
        || async { app.store.due_webhooks(later, 1000, 1000).await.expect("due events").is_empty().then_some(()) };
    crate::helpers::poll(Duration::from_secs(10), idle).await.expect("the deliverer never ran out of due events");
}

/// Waits until the event has had at least `attempts` attempts recorded; its log entry.
pub async fn wait_for_attempts(
    app: &TestApp,
    partner: &Partner,
    event_id: &str,
    attempts: i64,
    limit: Duration,
) -> Value {
    let read = || delivery(app, partner, event_id);
    match crate::helpers::poll(limit, || async {
        Some(read().await).filter(|e| e["attempts"].as_i64() >= Some(attempts))
    })
    .await
    {
        Some(entry) => entry,
        None => panic!("never {attempts} attempt(s): {}", read().await),
    }
}

pub async fn wait_for_status(app: &TestApp, partner: &Partner, event_id: &str, status: &str, limit: Duration) -> Value {
    let found = crate::helpers::poll(limit, || async {
        Some(delivery(app, partner, event_id).await).filter(|entry| entry["status"] == status)
    });
    match found.await {
        Some(entry) => entry,
        None => panic!("event never became {status}: {}", delivery(app, partner, event_id).await),
    }
}
