//! Collections of sold clearance items: the list, scheduling inside the buyer window, the
//! collection warehouse, the event, conflicts and brand scope.

use std::time::Duration;

use serde_json::{json, Value};

use super::{listing, market_app, new_warehouse, order};
use crate::helpers::{assert_error, json, Partner, TestApp};
use crate::webhooks::configure;
use crate::webhooks::receiver::Receiver;

const COLLECTIONS: &str = "/v1/partner/collections";

/// A clearance order with its window starting on 2026-12-01 (ends 2026-12-10).
async fn clearance_order(app: &TestApp, partner: &Partner, changes: Value) -> (i64, i64) {
    let mut body = json!({"channel": "clearance", "quantity": 3});
    if let (Some(body), Some(changes)) = (body.as_object_mut(), changes.as_object()) {
        body.extend(changes.clone());
    }
    let listing_id = listing(app, partner, body).await;
    let placed = order(app, json!({"listing_id": listing_id, "buyer_window_start": "2026-12-01"})).await;
    (listing_id, placed["id"].as_i64().unwrap())
}

async fn list(app: &TestApp, partner: &Partner, query: &str) -> Value {
    let response = app.get(&format!("{COLLECTIONS}{query}"), &partner.key).await;
    assert_eq!(response.status(), 200);
    json(response).await
}

async fn schedule(app: &TestApp, partner: &Partner, body: Value) -> reqwest::Response {
    app.post(COLLECTIONS, &partner.key, &body).await
}

#[tokio::test]
async fn scheduling_inside_the_window_answers_and_emits_the_event_data() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let main = new_warehouse(&app, &partner, "Main depot").await;
    let (listing_id, order_id) = clearance_order(&app, &partner, json!({})).await;
    let response = schedule(&app, &partner, json!({"order_id": order_id, "scheduled_for": "2026-12-10"})).await;
    assert_eq!(response.status(), 201);
    let collection = json(response).await;
    let mut keys: Vec<&str> = collection.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "brand_id",
            "buyer_window_end",
            "buyer_window_start",
            "id",
            "order_id",
            "order_reference",
            "product_id",
            "scheduled_at",
            "scheduled_for",
            "warehouse_id",
            "warehouse_label"
        ]
    );
    assert!(collection["id"].as_str().is_some_and(|id| id.starts_with("col_")));
    assert_eq!(collection["brand_id"], "acme");
    assert_eq!(collection["order_id"], order_id);
    assert_eq!(collection["order_reference"], format!("#{order_id}"));
    assert_eq!(collection["product_id"], listing_id);
    assert_eq!(collection["scheduled_for"], "2026-12-10");
    assert!(collection["scheduled_at"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(collection["warehouse_id"], main);
    assert_eq!(collection["warehouse_label"], "Main depot");
    assert_eq!(collection["buyer_window_start"], "2026-12-01");
    assert_eq!(collection["buyer_window_end"], "2026-12-10");

    let hits = receiver.wait_for_hits(1, Duration::from_secs(10)).await;
    let event: Value = serde_json::from_slice(&hits[0].body).unwrap();
    assert_eq!(event["type"], "collection.scheduled");
    assert_eq!(event["data"], collection);

    let again = schedule(&app, &partner, json!({"order_id": order_id, "scheduled_for": "2026-12-02"})).await;
    assert_error(again, 409, "collection_exists").await;
}

#[tokio::test]
async fn dates_outside_the_buyer_window_are_refused() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let (_, order_id) = clearance_order(&app, &partner, json!({})).await;
    for date in ["2026-11-30", "2026-12-11", "2027-12-05"] {
        let response = schedule(&app, &partner, json!({"order_id": order_id, "scheduled_for": date})).await;
        let body = assert_error(response, 400, "validation_failed").await;
        assert_eq!(body["message"], "scheduled_for_invalid", "{date}");
    }
    for (body, code) in [
        (json!({"order_id": order_id, "scheduled_for": "01/12/2026"}), "scheduled_for_invalid"),
        (json!({"scheduled_for": "2026-12-01"}), "order_id_required"),
        (json!({"order_id": order_id}), "scheduled_for_required"),
        (json!({"order_id": order_id, "scheduled_for": "2026-12-01", "when": 1}), "when_unknown"),
    ] {
        let answer = assert_error(schedule(&app, &partner, body.clone()).await, 400, "validation_failed").await;
        assert_eq!(answer["message"], code, "{body}");
    }
    // The first and last days are inside.
    let response = schedule(&app, &partner, json!({"order_id": order_id, "scheduled_for": "2026-12-01"})).await;
    assert_eq!(response.status(), 201);
}

#[tokio::test]
async fn the_warehouse_is_the_given_one_else_the_listings_else_the_default_else_none() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    // No warehouses: null with an empty label.
    let (_, bare) = clearance_order(&app, &partner, json!({})).await;
    let response = schedule(&app, &partner, json!({"order_id": bare, "scheduled_for": "2026-12-05"})).await;
    let collection = json(response).await;
    assert_eq!((collection["warehouse_id"].clone(), collection["warehouse_label"].clone()), (Value::Null, json!("")));

    let main = new_warehouse(&app, &partner, "Main").await;
    let north = new_warehouse(&app, &partner, "North").await;
    // The listing's warehouse.
    let (_, on_north) = clearance_order(&app, &partner, json!({"warehouse_id": north})).await;
    let collection =
        json(schedule(&app, &partner, json!({"order_id": on_north, "scheduled_for": "2026-12-05"})).await).await;
    assert_eq!(
        (collection["warehouse_id"].as_str(), collection["warehouse_label"].as_str()),
        (Some(north.as_str()), Some("North"))
    );
    // The one given.
    let (_, given) = clearance_order(&app, &partner, json!({})).await;
    let collection = json(
        schedule(&app, &partner, json!({"order_id": given, "scheduled_for": "2026-12-05", "warehouse_id": north}))
            .await,
    )
    .await;
    assert_eq!(collection["warehouse_id"], north);
    // The listing's warehouse was deleted: the brand's default.
    let (_, orphan) = clearance_order(&app, &partner, json!({"warehouse_id": north})).await;
    assert_eq!(app.delete(&format!("/v1/partner/settings/warehouses/{north}"), &partner.key).await.status(), 200);
    let collection =
        json(schedule(&app, &partner, json!({"order_id": orphan, "scheduled_for": "2026-12-05"})).await).await;
    assert_eq!(
        (collection["warehouse_id"].as_str(), collection["warehouse_label"].as_str()),
        (Some(main.as_str()), Some("Main"))
    );
    // Another brand's warehouse cannot be given.
    let other = app.partner("globex").await;
    let theirs = new_warehouse(&app, &other, "Theirs").await;
    let (_, mine) = clearance_order(&app, &partner, json!({})).await;
    let response =
        schedule(&app, &partner, json!({"order_id": mine, "scheduled_for": "2026-12-05", "warehouse_id": theirs}))
            .await;
    let body = assert_error(response, 400, "validation_failed").await;
    assert_eq!(body["message"], "warehouse_id_invalid");
}

#[tokio::test]
async fn the_list_shows_clearance_orders_by_status_and_only_the_brands() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let other = app.partner("globex").await;
    let (_, first) = clearance_order(&app, &partner, json!({})).await;
    let (listing_id, second) = clearance_order(&app, &partner, json!({})).await;
    clearance_order(&app, &other, json!({})).await;
    // Exchange sales are not collections.
    let exchange = listing(&app, &partner, json!({"channel": "exchange"})).await;
    let exchange_order = order(&app, json!({"listing_id": exchange})).await["id"].as_i64().unwrap();
    assert_eq!(
        schedule(&app, &partner, json!({"order_id": second, "scheduled_for": "2026-12-03"})).await.status(),
        201
    );

    let all = list(&app, &partner, "").await;
    assert_eq!(all["meta"]["total"], 2);
    assert_eq!(all["meta"]["brand_id"], "acme");
    let ids: Vec<i64> = all["data"].as_array().unwrap().iter().map(|o| o["order_id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [first, second]);
    let unscheduled = list(&app, &partner, "?status=unscheduled").await;
    assert_eq!(unscheduled["data"].as_array().unwrap().len(), 1);
    let item = &unscheduled["data"][0];
    assert_eq!(item["order_id"], first);
    assert_eq!(item["status"], "unscheduled");
    assert_eq!(item["collection"], Value::Null);
    assert_eq!(
        (item["buyer_window_start"].as_str(), item["buyer_window_end"].as_str()),
        (Some("2026-12-01"), Some("2026-12-10"))
    );
    let scheduled = list(&app, &partner, "?status=scheduled").await;
    let item = &scheduled["data"][0];
    assert_eq!(item["order_id"], second);
    assert_eq!(item["product_id"], listing_id);
    assert_eq!(item["status"], "scheduled");
    assert_eq!(item["collection"]["scheduled_for"], "2026-12-03");
    let response = app.get(&format!("{COLLECTIONS}?status=closed"), &partner.key).await;
    assert_error(response, 400, "validation_failed").await;

    // Another brand's order, an exchange order, an unknown order: 404.
    let (_, theirs) = clearance_order(&app, &other, json!({})).await;
    for order_id in [theirs, exchange_order, 999_999] {
        let response = schedule(&app, &partner, json!({"order_id": order_id, "scheduled_for": "2026-12-03"})).await;
        assert_error(response, 404, "order_not_found").await;
    }
    let theirs_list = json(app.get(COLLECTIONS, &other.key).await).await;
    assert_eq!(theirs_list["meta"]["total"], 2);
}

// ---- Moving and cancelling a scheduled collection ----

/// Today (UTC, the service's clock for "passed").
fn today() -> chrono::NaiveDate {
    chrono::Utc::now().date_naive()
}

fn days(n: i64) -> String {
    (today() + chrono::Duration::days(n)).to_string()
}

/// A clearance order whose window runs from yesterday to eight days ahead, scheduled for
/// `on` (days from today); answers the order and the collection.
async fn scheduled(app: &TestApp, partner: &Partner, on: i64) -> (i64, Value) {
    let listing_id = listing(app, partner, json!({"channel": "clearance", "quantity": 2})).await;
    let placed = order(app, json!({"listing_id": listing_id, "buyer_window_start": days(-1)})).await;
    let order_id = placed["id"].as_i64().unwrap();
    let response = schedule(app, partner, json!({"order_id": order_id, "scheduled_for": days(on)})).await;
    assert_eq!(response.status(), 201);
    (order_id, json(response).await)
}

fn at(collection: &Value) -> String {
    format!("{COLLECTIONS}/{}", collection["id"].as_str().unwrap())
}

async fn audit_log(app: &TestApp, partner: &Partner) -> Vec<(String, String)> {
    let log = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;
    log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap().to_owned(), e["target"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

#[tokio::test]
async fn a_move_inside_the_window_sends_the_event_again_with_the_same_id_and_is_audited() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let (order_id, first) = scheduled(&app, &partner, 2).await;
    receiver.wait_for_hits(1, Duration::from_secs(10)).await;

    let response = app.patch(&at(&first), &partner.key, &json!({"scheduled_for": days(5)})).await;
    assert_eq!(response.status(), 200);
    let moved = json(response).await;
    assert_eq!(moved["id"], first["id"]);
    assert_eq!(moved["scheduled_for"], days(5));
    assert!(moved["scheduled_at"].as_str().unwrap() >= first["scheduled_at"].as_str().unwrap());
    for same in ["order_id", "product_id", "buyer_window_start", "buyer_window_end", "warehouse_id"] {
        assert_eq!(moved[same], first[same], "{same}");
    }
    let hits = receiver.wait_for_hits(2, Duration::from_secs(10)).await;
    let event: Value = serde_json::from_slice(&hits[1].body).unwrap();
    assert_eq!(event["type"], "collection.scheduled");
    assert_eq!(event["data"], moved);
    let listed = list(&app, &partner, "?status=scheduled").await;
    assert_eq!(listed["data"][0]["order_id"], order_id);
    assert_eq!(listed["data"][0]["collection"], moved);
    let log = audit_log(&app, &partner).await;
    let target = format!("collection:{}", first["id"].as_str().unwrap());
    assert!(log.contains(&("collection.rescheduled".to_owned(), target)), "{log:?}");

    // To the day it already has: nothing changes, nothing is sent (the next event sent is
    // the next move's).
    let again = app.patch(&at(&first), &partner.key, &json!({"scheduled_for": days(5)})).await;
    assert_eq!(again.status(), 200);
    assert_eq!(json(again).await, moved);
    assert_eq!(app.patch(&at(&first), &partner.key, &json!({"scheduled_for": days(6)})).await.status(), 200);
    let hits = receiver.wait_for_hits(3, Duration::from_secs(10)).await;
    let event: Value = serde_json::from_slice(&hits[2].body).unwrap();
    assert_eq!(event["data"]["scheduled_for"], days(6));
}

#[tokio::test]
async fn a_move_outside_the_days_still_open_or_to_a_bad_warehouse_is_refused_and_changes_nothing() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let (_, collection) = scheduled(&app, &partner, 2).await;
    // Yesterday is in the window but past; the day after the window; no date; not a date.
    for date in [days(-1), days(9), "2026-13-01".to_owned()] {
        let response = app.patch(&at(&collection), &partner.key, &json!({"scheduled_for": date})).await;
        let body = assert_error(response, 400, "validation_failed").await;
        assert_eq!(body["message"], "scheduled_for_invalid", "{date}");
    }
    for (body, code) in [
        (json!({}), "scheduled_for_required"),
        (json!({"scheduled_for": days(3), "order_id": 1}), "order_id_unknown"),
        (json!({"scheduled_for": days(3), "warehouse_id": "wh_nope"}), "warehouse_id_invalid"),
    ] {
        let answer =
            assert_error(app.patch(&at(&collection), &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(answer["message"], code, "{body}");
    }
    // Today, the first day still open, is accepted.
    let listed = list(&app, &partner, "?status=scheduled").await;
    assert_eq!(listed["data"][0]["collection"], collection, "nothing changed");
    let today = app.patch(&at(&collection), &partner.key, &json!({"scheduled_for": days(0)})).await;
    assert_eq!(today.status(), 200);
    // Another warehouse of the brand.
    let north = new_warehouse(&app, &partner, "North").await;
    let moved = json(
        app.patch(&at(&collection), &partner.key, &json!({"scheduled_for": days(0), "warehouse_id": north})).await,
    )
    .await;
    assert_eq!(
        (moved["warehouse_id"].as_str(), moved["warehouse_label"].as_str()),
        (Some(north.as_str()), Some("North"))
    );
}

#[tokio::test]
async fn a_cancelled_collection_sends_collection_cancelled_to_endpoints_that_ask_and_the_order_waits_again() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let (order_id, first) = scheduled(&app, &partner, 3).await;
    receiver.wait_for_hits(1, Duration::from_secs(10)).await;
    // The default subscription (the spec's two) does not hear of a cancel.
    let response = app.delete(&at(&first), &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await, first, "the collection as it was");
    let unscheduled = list(&app, &partner, "?status=unscheduled").await;
    assert_eq!(unscheduled["data"][0]["order_id"], order_id);
    assert_error(app.delete(&at(&first), &partner.key).await, 404, "collection_not_found").await;
    assert_error(
        app.patch(&at(&first), &partner.key, &json!({"scheduled_for": days(4)})).await,
        404,
        "collection_not_found",
    )
    .await;

    // Scheduled anew (a new id), then cancelled with the endpoint asking for cancels.
    let events = json!({"event_types": ["redemption.created", "collection.scheduled", "collection.cancelled"]});
    assert_eq!(app.patch("/v1/partner/settings/integrations/webhook", &partner.key, &events).await.status(), 200);
    let second = json(schedule(&app, &partner, json!({"order_id": order_id, "scheduled_for": days(4)})).await).await;
    assert_ne!(second["id"], first["id"]);
    // The first cancel was never sent: the next event is the new schedule.
    let hits = receiver.wait_for_hits(2, Duration::from_secs(10)).await;
    let event: Value = serde_json::from_slice(&hits[1].body).unwrap();
    assert_eq!((event["type"].as_str(), &event["data"]), (Some("collection.scheduled"), &second));
    assert_eq!(app.delete(&at(&second), &partner.key).await.status(), 200);
    let hits = receiver.wait_for_hits(3, Duration::from_secs(10)).await;
    let event: Value = serde_json::from_slice(&hits[2].body).unwrap();
    assert_eq!(event["type"], "collection.cancelled");
    assert_eq!(event["data"], second);
    let log = audit_log(&app, &partner).await;
    for collection in [&first, &second] {
        let target = format!("collection:{}", collection["id"].as_str().unwrap());
        assert!(log.contains(&("collection.cancelled".to_owned(), target)), "{log:?}");
    }
}

#[tokio::test]
async fn a_collection_whose_day_has_passed_cannot_be_moved_or_cancelled() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let (_, collection) = scheduled(&app, &partner, -1).await;
    let moved = app.patch(&at(&collection), &partner.key, &json!({"scheduled_for": days(2)})).await;
    assert_error(moved, 409, "collection_passed").await;
    assert_error(app.delete(&at(&collection), &partner.key).await, 409, "collection_passed").await;
    let listed = list(&app, &partner, "?status=scheduled").await;
    assert_eq!(listed["data"][0]["collection"], collection);
}

#[tokio::test]
async fn another_brands_collection_is_not_found_and_untouched() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let other = app.partner("globex").await;
    let (_, theirs) = scheduled(&app, &other, 2).await;
    assert_error(
        app.patch(&at(&theirs), &partner.key, &json!({"scheduled_for": days(3)})).await,
        404,
        "collection_not_found",
    )
    .await;
    assert_error(app.delete(&at(&theirs), &partner.key).await, 404, "collection_not_found").await;
    assert_error(app.delete(&format!("{COLLECTIONS}/col_nope"), &partner.key).await, 404, "collection_not_found").await;
    let listed = list(&app, &other, "?status=scheduled").await;
    assert_eq!(listed["data"][0]["collection"], theirs);
}

/// Simultaneous moves and cancels of one collection: exactly one cancel wins, every move is
/// either applied before it or told the collection is gone, and the order ends unscheduled
/// with one `collection.cancelled`.
#[tokio::test]
async fn a_burst_of_moves_and_cancels_of_one_collection_leaves_one_cancel() {
    let app = std::sync::Arc::new(market_app().await);
    let partner = app.partner("acme").await;
    let (order_id, collection) = scheduled(&app, &partner, 1).await;
    let path = at(&collection);
    let tasks: Vec<_> = (0..24)
        .map(|n| {
            let (app, key, path) = (std::sync::Arc::clone(&app), partner.key.clone(), path.clone());
            tokio::spawn(async move {
                let response = if n % 3 == 0 {
                    app.delete(&path, &key).await
                } else {
                    app.patch(&path, &key, &json!({"scheduled_for": days(n % 7)})).await
                };
                (n % 3 == 0, response.status().as_u16())
            })
        })
        .collect();
    let (mut cancels, mut statuses) = (0, Vec::new());
    for task in tasks {
        let (cancel, status) = task.await.unwrap();
        assert!(matches!(status, 200 | 404), "{status}");
        if cancel && status == 200 {
            cancels += 1;
        }
        statuses.push(status);
    }
    assert_eq!(cancels, 1, "{statuses:?}");
    let unscheduled = list(&app, &partner, "?status=unscheduled").await;
    assert_eq!(unscheduled["data"][0]["order_id"], order_id);
    let log = audit_log(&app, &partner).await;
    assert_eq!(log.iter().filter(|(action, _)| action == "collection.cancelled").count(), 1);
}
