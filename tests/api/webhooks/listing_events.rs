//! Listing events (decisions 15.3): off by default, so a receiver written for the spec's two
//! types sees nothing new; asked for in the webhook settings (`event_types`), a listing's
//! creation, change (a PATCH, a sale) and trashing each reach the endpoint, written with the
//! change, `data` the listing as `GET /v1/listings` lists it; a type left out is not sent.

use serde_json::{json, Value};

use super::receiver::Receiver;
use super::{configure, emit, settled, webhook_app, WEBHOOK};
use crate::helpers::{assert_error, json as body_json, poll, TestApp};
use crate::listings::create_id;

async fn event_types(app: &TestApp, key: &str, types: Value) -> reqwest::Response {
    app.patch(WEBHOOK, key, &json!({ "event_types": types })).await
}

/// The bodies the receiver got, in order, once `n` arrived.
async fn received(receiver: &Receiver, n: usize) -> Vec<Value> {
    poll(std::time::Duration::from_secs(10), || async {
        let hits = receiver.hits();
        (hits.len() >= n).then(|| hits.iter().map(|h| serde_json::from_slice(&h.body).unwrap()).collect::<Vec<Value>>())
    })
    .await
    .unwrap_or_else(|| panic!("{} of {n} deliveries", receiver.hits().len()))
}

#[tokio::test]
async fn listing_events_are_off_by_default_and_the_settings_show_the_spec_types() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let before = body_json(app.get(WEBHOOK, &partner.key).await).await;
    assert_eq!(before["event_types"], json!(["redemption.created", "collection.scheduled"]));
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    create_id(&app, &partner.key, json!({"title": "Oak sofa"})).await;
    emit(&app, &partner, 1).await;
    let bodies = received(&receiver, 1).await;
    settled(&app).await;
    assert_eq!(receiver.hits().len(), 1, "only the spec's event");
    assert_eq!(bodies[0]["type"], "redemption.created");
}

#[tokio::test]
async fn a_listing_created_changed_sold_and_trashed_reaches_an_endpoint_that_asks() {
    let app = webhook_app(|config| config.ops_token = Some("ops-token-0123456789abcdef".to_owned().into())).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let types = json!(["listing.created", "listing.updated", "listing.deleted", "redemption.created"]);
    let answer = event_types(&app, &partner.key, types.clone()).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(body_json(answer).await["event_types"], types);

    let id = create_id(&app, &partner.key, json!({"title": "Oak sofa", "channel": "clearance", "quantity": 2})).await;
    let patched =
        app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"title": "Oak sofa, reupholstered"})).await;
    assert_eq!(patched.status(), 200);
    let order = app
        .request(reqwest::Method::POST, "/ops/v1/orders", "ops-token-0123456789abcdef")
        .json(&json!({"listing_id": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(order.status(), 201, "{}", order.text().await.unwrap());
    assert!(app.delete(&format!("/v1/listings/{id}"), &partner.key).await.status().is_success());

    // Deliveries go several at a time: in the order of the changes, by the listing's own
    // `updated_at` (as a receiver keeps the latest).
    let mut bodies = received(&receiver, 4).await;
    bodies.sort_by(|a, b| a["data"]["updated_at"].as_str().cmp(&b["data"]["updated_at"].as_str()));
    let kinds: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["listing.created", "listing.updated", "listing.updated", "listing.deleted"]);
    let other = create_id(&app, &partner.key, json!({"title": "Listed"})).await;
    let listed = body_json(app.get("/v1/listings", &partner.key).await).await;
    assert_eq!(bodies[0]["data"]["id"], id);
    assert_eq!(bodies[0]["data"]["title"], "Oak sofa");
    assert_eq!(bodies[1]["data"]["title"], "Oak sofa, reupholstered");
    assert_eq!(bodies[2]["data"]["status"], "active", "a sale of one of two: {}", bodies[2]);
    assert!(bodies[3]["data"]["deleted_at"].is_string(), "{}", bodies[3]);
    assert!(bodies[0]["data"]["deleted_at"].is_null());
    // The same shape as the list's items (the summary), the same keys.
    let item = listed["data"].as_array().unwrap().iter().find(|l| l["id"] == other).expect("the listed one");
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&bodies[1]["data"]), keys(item));
    for body in &bodies {
        assert!(body["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(body["data"]["brand_id"], "acme");
    }
}

#[tokio::test]
async fn a_type_left_out_is_not_sent_and_unknown_types_are_refused_with_the_choices() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    for bad in [
        json!([]),
        json!(["listing.moved"]),
        json!(["ping"]),
        json!(["listing.created", "listing.created"]),
        json!("listing.created"),
    ] {
        let body = assert_error(event_types(&app, &partner.key, bad.clone()).await, 400, "validation_failed").await;
        let message = body["errors"][0]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("listing.updated"), "{bad}: {body}");
    }
    // Only listing updates: a redemption is not sent, a creation neither; a change is.
    assert_eq!(event_types(&app, &partner.key, json!(["listing.updated"])).await.status(), 200);
    emit(&app, &partner, 2).await;
    let id = create_id(&app, &partner.key, json!({"title": "Elm chair"})).await;
    let patched = app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"title": "Elm chair, waxed"})).await;
    assert_eq!(patched.status(), 200);
    let bodies = received(&receiver, 1).await;
    settled(&app).await;
    assert_eq!(receiver.hits().len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["type"], "listing.updated");
    assert_eq!(bodies[0]["data"]["title"], "Elm chair, waxed");
}

#[tokio::test]
async fn an_image_import_that_finishes_later_is_a_listing_update() {
    let origin = crate::photos::origin::Origin::start().await;
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    assert_eq!(event_types(&app, &partner.key, json!(["listing.updated"])).await.status(), 200);
    let body = crate::listings::listing(json!({ "images": [origin.url("/sofa.png")] }));
    let created = crate::listings::create(&app, &partner.key, body).await;
    let id = created["id"].as_i64().unwrap();
    let settled = crate::photos::imports_settled(&app.base, &partner.key, id).await;
    assert_eq!(settled["image_imports"][0]["status"], "done");
    let bodies = received(&receiver, 1).await;
    assert_eq!(bodies[0]["type"], "listing.updated");
    assert_eq!(bodies[0]["data"]["id"], id);
    assert!(bodies[0]["data"]["image_url"].as_str().is_some_and(|u| !u.is_empty()), "{}", bodies[0]);
}
