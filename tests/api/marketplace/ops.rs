//! The operator API: its token, orders (stock, closing, concurrency), completion, views.

use std::sync::Arc;

use reqwest::Method;
use serde_json::json;

use super::{complete, listing, market_app, ops_post, order, OPS_TOKEN};
use crate::helpers::{assert_error, json, spawn_app};

#[tokio::test]
async fn the_operator_api_is_absent_without_a_token() {
    let app = spawn_app().await;
    let response = app.post("/ops/v1/orders", OPS_TOKEN, &json!({"listing_id": 1})).await;
    assert_error(response, 404, "not_found").await;
    let response = app.post("/ops/v1/listings/1/views", "", &json!({})).await;
    assert_error(response, 404, "not_found").await;
}

#[tokio::test]
async fn the_operator_api_refuses_a_missing_or_wrong_token_and_api_keys() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({})).await;
    let body = json!({"listing_id": id});
    assert_error(app.post("/ops/v1/orders", "", &body).await, 401, "missing_bearer_token").await;
    assert_error(app.post("/ops/v1/orders", "ops-test-token-0123456789abcdeX", &body).await, 401, "invalid_token")
        .await;
    assert_error(app.post("/ops/v1/orders", &partner.key, &body).await, 401, "invalid_token").await;
    // Nothing was sold.
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(detail["quantity"], 1);
    // Unknown operator routes and methods answer in the usual shape.
    assert_error(ops_post(&app, "/nothing", &json!({})).await, 404, "not_found").await;
    let response = app.request(Method::GET, "/ops/v1/orders", OPS_TOKEN).send().await.unwrap();
    assert_error(response, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn an_order_takes_stock_and_answers_the_order() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(
        &app,
        &partner,
        json!({"channel": "clearance", "quantity": 5, "price_gbp": 100, "sale_price_gbp": 79.99}),
    )
    .await;
    let placed = order(&app, json!({"listing_id": id, "quantity": 2, "buyer_window_start": "2026-12-28"})).await;
    let order_id = placed["id"].as_i64().unwrap();
    assert_eq!(placed["reference"], format!("#{order_id}"));
    assert_eq!(placed["listing_id"], id);
    assert_eq!(placed["brand_id"], "acme");
    assert_eq!(placed["channel"], "clearance");
    assert_eq!(placed["quantity"], 2);
    assert_eq!(placed["unit_price_pence"], 7999);
    assert_eq!(placed["buyer_window_start"], "2026-12-28");
    assert_eq!(placed["buyer_window_end"], "2027-01-06");
    assert_eq!(placed["status"], "placed");
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!((detail["quantity"].as_i64(), detail["status"].as_str()), (Some(3), Some("active")));

    let response = ops_post(&app, "/orders", &json!({"listing_id": id, "quantity": 4})).await;
    assert_error(response, 409, "insufficient_stock").await;
    order(&app, json!({"listing_id": id, "quantity": 3})).await;
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!((detail["quantity"].as_i64(), detail["status"].as_str()), (Some(0), Some("closed")));
    assert_error(ops_post(&app, "/orders", &json!({"listing_id": id})).await, 409, "listing_not_active").await;
}

#[tokio::test]
async fn the_default_window_starts_three_days_from_today_and_lasts_ten() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({})).await;
    let placed = order(&app, json!({"listing_id": id})).await;
    let today = chrono::Utc::now().date_naive();
    let start = today + chrono::Days::new(3);
    assert_eq!(placed["buyer_window_start"], start.to_string());
    assert_eq!(placed["buyer_window_end"], (start + chrono::Days::new(9)).to_string());
    assert_eq!(placed["quantity"], 1);
}

#[tokio::test]
async fn orders_are_refused_for_drafts_trashed_unknown_listings_and_bad_bodies() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let draft = listing(&app, &partner, json!({"status": "draft"})).await;
    assert_error(ops_post(&app, "/orders", &json!({"listing_id": draft})).await, 409, "listing_not_active").await;
    let trashed = listing(&app, &partner, json!({})).await;
    assert_eq!(app.delete(&format!("/v1/listings/{trashed}"), &partner.key).await.status(), 200);
    assert_error(ops_post(&app, "/orders", &json!({"listing_id": trashed})).await, 404, "listing_not_found").await;
    assert_error(ops_post(&app, "/orders", &json!({"listing_id": 999_999})).await, 404, "listing_not_found").await;
    let body = assert_error(
        ops_post(&app, "/orders", &json!({"listing_id": "x", "quantity": 0, "buyer_window_start": "soon", "tip": 1}))
            .await,
        400,
        "validation_failed",
    )
    .await;
    assert_eq!(body["message"], "listing_id_invalid, quantity_invalid, buyer_window_start_invalid, tip_unknown");
    let response = app
        .request(Method::POST, "/ops/v1/orders", OPS_TOKEN)
        .header("content-type", "application/json")
        .body("[1]")
        .send()
        .await
        .unwrap();
    assert_error(response, 400, "invalid_body").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_buyers_of_the_last_units_never_oversell() {
    let app = Arc::new(market_app().await);
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 5})).await;
    let buyers: Vec<_> = (0..30)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { ops_post(&app, "/orders", &json!({"listing_id": id})).await.status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for buyer in buyers {
        statuses.push(buyer.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 5, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 201 || *s == 409), "{statuses:?}");
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!((detail["quantity"].as_i64(), detail["status"].as_str()), (Some(0), Some("closed")));
}

#[tokio::test]
async fn completion_records_the_delivery_once() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({})).await;
    let order_id = order(&app, json!({"listing_id": id})).await["id"].as_i64().unwrap();
    let done = complete(&app, order_id, json!({"completed_at": "2026-11-21T10:30:00+01:00"})).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["completed_at"], "2026-11-21T09:30:00.000000Z");
    let again = ops_post(&app, &format!("/orders/{order_id}/complete"), &json!({})).await;
    assert_error(again, 409, "order_already_completed").await;
    assert_error(ops_post(&app, "/orders/424242/complete", &json!({})).await, 404, "order_not_found").await;
    assert_error(ops_post(&app, "/orders/abc/complete", &json!({})).await, 404, "order_not_found").await;
    let other = order(&app, json!({"listing_id": listing(&app, &partner, json!({})).await})).await;
    let bad = ops_post(&app, &format!("/orders/{}/complete", other["id"]), &json!({"completed_at": "today"})).await;
    assert_error(bad, 400, "validation_failed").await;
    // Instants stay within the service's years, and a delivery is not recorded ahead of time.
    for at in ["9999-12-31T00:00:00Z", "1970-01-01T00:00:00Z", "2099-01-01T00:00:00Z"] {
        let path = format!("/orders/{}/complete", other["id"]);
        let refused = assert_error(ops_post(&app, &path, &json!({"completed_at": at})).await, 400, "validation_failed");
        assert_eq!(refused.await["errors"][0]["code"], "completed_at_invalid", "{at}");
    }
    let far = json!({"listing_id": listing(&app, &partner, json!({})).await, "buyer_window_start": "9999-12-31"});
    let refused = assert_error(ops_post(&app, "/orders", &far).await, 400, "validation_failed").await;
    assert_eq!(refused["errors"][0]["code"], "buyer_window_start_invalid");
    // No body at all means now.
    let response =
        app.request(Method::POST, &format!("/ops/v1/orders/{}/complete", other["id"]), OPS_TOKEN).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(json(response).await["completed_at"].as_str().is_some_and(|t| t.ends_with('Z')));
}

#[tokio::test]
async fn views_are_counted_on_the_listing() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({})).await;
    for n in 1..=3 {
        let response =
            app.request(Method::POST, &format!("/ops/v1/listings/{id}/views"), OPS_TOKEN).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(json(response).await, json!({"listing_id": id, "view_count": n}));
    }
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(detail["view_count"], 3);
    assert_error(ops_post(&app, "/listings/999999/views", &json!({})).await, 404, "listing_not_found").await;
}
