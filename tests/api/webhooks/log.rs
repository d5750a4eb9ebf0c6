//! The delivery log and replay.

use std::time::Duration;

use serde_json::json;

use super::receiver::{Receiver, Reply};
use super::{configure, emit, wait_for_status, webhook_app, DELIVERIES, WEBHOOK};
use crate::helpers::{assert_error, json};

#[tokio::test]
async fn the_delivery_log_is_brand_scoped_newest_first_filtered_and_paginated() {
    let app = webhook_app(|_| {}).await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let receiver = Receiver::start().await;
    receiver.plan([Reply::Status(410)]);
    configure(&app, &acme, &receiver.url()).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(emit(&app, &acme, n).await.id);
        receiver.wait_for_hits(n as usize + 1, Duration::from_secs(5)).await;
    }
    wait_for_status(&app, &acme, &ids[4], "delivered", Duration::from_secs(5)).await;
    emit(&app, &other, 9).await;

    let page = json(app.get(&format!("{DELIVERIES}?per_page=2"), &acme.key).await).await;
    assert_eq!(
        page["meta"],
        json!({"page": 1, "per_page": 2, "total": 5, "total_pages": 3, "status": "any", "brand_id": "acme"})
    );
    let listed: Vec<&str> = page["data"].as_array().unwrap().iter().map(|d| d["event_id"].as_str().unwrap()).collect();
    assert_eq!(listed, [ids[4].as_str(), ids[3].as_str()], "newest first");
    let row = &page["data"][0];
    for field in
        ["event_id", "type", "status", "attempts", "last_status_code", "last_error", "next_attempt_at", "created_at"]
    {
        assert!(row.get(field).is_some(), "{field} missing from {row}");
    }
    assert_eq!(row["type"], "redemption.created");
    assert_eq!(row["status"], "delivered");
    assert_eq!(row["attempts"], 1);
    assert_eq!(row["last_status_code"], 200);

    let last = json(app.get(&format!("{DELIVERIES}?per_page=2&page=3"), &acme.key).await).await;
    assert_eq!(last["data"].as_array().unwrap().len(), 1);
    assert_eq!(last["data"][0]["event_id"], ids[0].as_str());

    let dead = json(app.get(&format!("{DELIVERIES}?status=dead"), &acme.key).await).await;
    assert_eq!(dead["meta"]["total"], 1);
    assert_eq!(dead["data"][0]["event_id"], ids[0].as_str());
    assert_eq!(dead["data"][0]["last_status_code"], 410);
    let delivered = json(app.get(&format!("{DELIVERIES}?status=delivered"), &acme.key).await).await;
    assert_eq!(delivered["meta"]["total"], 4);
    // A filtered list pages as the whole one does (its own statement and index).
    let second = json(app.get(&format!("{DELIVERIES}?status=delivered&per_page=3&page=2"), &acme.key).await).await;
    assert_eq!(second["meta"]["total"], 4);
    assert_eq!(second["meta"]["total_pages"], 2);
    let listed: Vec<&str> =
        second["data"].as_array().unwrap().iter().map(|d| d["event_id"].as_str().unwrap()).collect();
    assert_eq!(listed, [ids[1].as_str()], "the oldest delivered event, alone on page 2");
    let pending = json(app.get(&format!("{DELIVERIES}?status=pending"), &other.key).await).await;
    assert_eq!(pending["meta"]["total"], 1, "the other brand sees only its own event");

    for bad in ["status=lost", "page=0", "per_page=101", "per_page=x"] {
        assert_error(app.get(&format!("{DELIVERIES}?{bad}"), &acme.key).await, 400, "validation_failed").await;
    }
}

#[tokio::test]
async fn replay_delivers_the_same_event_id_and_bytes_again_even_after_it_died() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    receiver.plan([Reply::Status(400)]);
    configure(&app, &partner, &receiver.url()).await;
    let event = emit(&app, &partner, 1).await;
    wait_for_status(&app, &partner, &event.id, "dead", Duration::from_secs(5)).await;

    let response = app.post(&format!("{DELIVERIES}/{}/replay", event.id), &partner.key, &json!({})).await;
    assert_eq!(response.status(), 200);
    let queued = json(response).await;
    assert_eq!(queued["event_id"], event.id.as_str());
    assert!(queued["status"] == "pending" || queued["status"] == "delivered", "{queued}");
    let entry = wait_for_status(&app, &partner, &event.id, "delivered", Duration::from_secs(5)).await;
    assert_eq!(entry["attempts"], 2);
    let hits = receiver.hits();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[1].event_id(), event.id);
    assert_eq!(hits[1].body, hits[0].body, "a replay sends the same bytes");

    // A delivered event can be replayed too (the partner lost it on their side).
    app.post(&format!("{DELIVERIES}/{}/replay", event.id), &partner.key, &json!({})).await;
    let hits = receiver.wait_for_hits(3, Duration::from_secs(5)).await;
    assert_eq!(hits[2].event_id(), event.id);
}

#[tokio::test]
async fn replay_of_an_unknown_or_another_brands_event_is_event_not_found() {
    let app = webhook_app(|_| {}).await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let receiver = Receiver::start().await;
    configure(&app, &acme, &receiver.url()).await;
    configure(&app, &other, &receiver.url()).await;
    let theirs = emit(&app, &other, 1).await;
    for id in ["evt_doesnotexist", theirs.id.as_str()] {
        assert_error(
            app.post(&format!("{DELIVERIES}/{id}/replay"), &acme.key, &json!({})).await,
            404,
            "event_not_found",
        )
        .await;
        assert_error(app.get(&format!("{DELIVERIES}/{id}"), &acme.key).await, 404, "event_not_found").await;
    }
}

#[tokio::test]
async fn replay_without_an_enabled_endpoint_is_refused() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let event = emit(&app, &partner, 1).await;
    let path = format!("{DELIVERIES}/{}/replay", event.id);
    assert_error(app.post(&path, &partner.key, &json!({})).await, 409, "webhook_not_configured").await;
    app.patch(WEBHOOK, &partner.key, &json!({"url": "http://127.0.0.1:9/x", "enabled": false})).await;
    assert_error(app.post(&path, &partner.key, &json!({})).await, 409, "webhook_not_configured").await;
}
