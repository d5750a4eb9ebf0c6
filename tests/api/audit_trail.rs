//! The audit trail of partner changes made with an API key (decisions 8.7): settings,
//! warehouses, the webhook, its secret, replays and collections each append one entry in
//! the transaction of the change; a refused change appends none.

use serde_json::{json, Value};

use crate::helpers::{json, Partner, TestApp};
use crate::marketplace::{listing, market_app, new_warehouse, order};
use crate::webhooks::receiver::Receiver;
use crate::webhooks::{configure, DELIVERIES};

const AUDIT_LOG: &str = "/v1/partner/audit-log";

/// The entries of what API keys did (the partner's own key was made by the operator,
/// whose `key.created` entry is left out).
async fn entries(app: &TestApp, partner: &Partner) -> Vec<Value> {
    let response = app.get(&format!("{AUDIT_LOG}?limit=100"), &partner.key).await;
    assert_eq!(response.status(), 200);
    let all = json(response).await["data"].as_array().cloned().unwrap_or_default();
    let (by_keys, by_operator): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|e| e["actor"]["type"] == "key");
    assert_eq!(actions(&by_operator), ["key.created"]);
    by_keys
}

fn actions(entries: &[Value]) -> Vec<&str> {
    entries.iter().filter_map(|e| e["action"].as_str()).collect()
}

#[tokio::test]
async fn every_partner_change_made_with_a_key_is_audited_newest_first() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;

    let ok = |status: reqwest::StatusCode| assert!(status.is_success(), "{status}");
    ok(app.patch("/v1/partner/settings/brand", &partner.key, &json!({"display_name": "Acme"})).await.status());
    ok(app.patch("/v1/partner/settings/billing", &partner.key, &json!({"company_name": "Acme Ltd"})).await.status());
    ok(app.patch("/v1/partner/settings/payouts", &partner.key, &json!({"cash_enabled": false})).await.status());
    new_warehouse(&app, &partner, "Main").await;
    configure(&app, &partner, &receiver.url()).await;
    ok(app.post("/v1/partner/settings/integrations/webhook/rotate-secret", &partner.key, &json!({})).await.status());
    let listing_id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 2})).await;
    let placed = order(&app, json!({"listing_id": listing_id, "buyer_window_start": "2026-12-01"})).await;
    let scheduled = app
        .post(
            "/v1/partner/collections",
            &partner.key,
            &json!({"order_id": placed["id"], "scheduled_for": "2026-12-02"}),
        )
        .await;
    ok(scheduled.status());
    let collection = json(scheduled).await;
    let event_id = receiver.wait_for_hits(1, std::time::Duration::from_secs(10)).await[0].event_id();
    ok(app.post(&format!("{DELIVERIES}/{event_id}/replay"), &partner.key, &json!({})).await.status());

    let log = entries(&app, &partner).await;
    assert_eq!(
        actions(&log),
        [
            "webhook.deliveries_replayed",
            "collection.scheduled",
            "listing.created",
            "webhook.secret_rotated",
            "webhook.updated",
            "warehouses.updated",
            "settings.updated",
            "settings.updated",
            "settings.updated",
        ]
    );
    let targets: Vec<&str> = log.iter().filter_map(|e| e["target"].as_str()).collect();
    assert_eq!(targets[0], format!("event:{event_id}"));
    assert_eq!(targets[1], format!("collection:{}", collection["id"].as_str().unwrap_or_default()));
    assert_eq!(targets[2], format!("listing:{listing_id}"));
    assert_eq!(&targets[6..], ["settings:payouts", "settings:billing", "settings:profile"]);
    for entry in &log {
        assert_eq!(entry["actor"]["type"], "key", "{entry}");
        assert!(entry["actor"]["id"].is_i64(), "{entry}");
        assert_eq!(entry["ip"], "127.0.0.1", "{entry}");
        assert!(entry["at"].as_str().is_some_and(|at| at.ends_with('Z')), "{entry}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_refused_change_is_not_audited_and_brands_see_only_their_own_entries() {
    let app = market_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let refused = app.patch("/v1/partner/settings/payouts", &acme.key, &json!({"credit_boost_percent": -5})).await;
    assert_eq!(refused.status(), 400);
    assert!(entries(&app, &acme).await.is_empty());
    let done = app.patch("/v1/partner/settings/payouts", &acme.key, &json!({"credit_boost_percent": 110})).await;
    assert_eq!(done.status(), 200);
    assert_eq!(actions(&entries(&app, &acme).await), ["settings.updated"]);
    assert!(entries(&app, &other).await.is_empty());
    app.stop().await;
}
