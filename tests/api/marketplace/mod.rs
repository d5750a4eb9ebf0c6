//! Marketplace flows over real HTTP: the operator API (orders, completion, payout choice,
//! views), payout options, redemptions and their polling, credit codes, collections.

mod bench;
mod collections;
mod credits;
mod ops;
mod payouts;
mod redemptions;

use reqwest::Response;
use serde_json::{json, Value};

use crate::helpers::{json, Partner, TestApp};
use crate::listings::{create_id, warehouse};
use crate::webhooks::webhook_app;

pub const OPS_TOKEN: &str = "ops-test-token-0123456789abcdef";

/// A server with the operator API on, able to deliver webhooks to loopback receivers.
pub async fn market_app() -> TestApp {
    webhook_app(|config| config.ops_token = Some(OPS_TOKEN.into())).await
}

pub async fn ops_post(app: &TestApp, path: &str, body: &Value) -> Response {
    app.post(&format!("/ops/v1{path}"), OPS_TOKEN, body).await
}

/// A listing of the partner; `changes` as for `listings::listing`.
pub async fn listing(app: &TestApp, partner: &Partner, changes: Value) -> i64 {
    create_id(app, &partner.key, changes).await
}

/// Places an order and returns it, failing the test on anything but 201.
pub async fn order(app: &TestApp, body: Value) -> Value {
    let response = ops_post(app, "/orders", &body).await;
    let status = response.status();
    let order = json(response).await;
    assert_eq!(status, 201, "order answered {order}");
    order
}

pub async fn complete(app: &TestApp, order_id: i64, body: Value) -> Value {
    let response = ops_post(app, &format!("/orders/{order_id}/complete"), &body).await;
    let status = response.status();
    let order = json(response).await;
    assert_eq!(status, 200, "complete answered {order}");
    order
}

/// An exchange listing at `price_gbp` sold and delivered; returns (listing id, order id).
pub async fn sold_exchange(app: &TestApp, partner: &Partner, price_gbp: Value) -> (i64, i64) {
    let listing_id = listing(app, partner, json!({"channel": "exchange", "price_gbp": price_gbp})).await;
    let order_id = order(app, json!({"listing_id": listing_id})).await["id"].as_i64().unwrap();
    complete(app, order_id, json!({"completed_at": "2026-11-20T15:04:05Z"})).await;
    (listing_id, order_id)
}

pub async fn choose(app: &TestApp, order_id: i64, body: Value) -> Response {
    ops_post(app, &format!("/orders/{order_id}/payout-choice"), &body).await
}

/// A credit-to-code redemption for a freshly sold exchange item; returns the redemption.
pub async fn credit_code(app: &TestApp, partner: &Partner, price_gbp: Value) -> Value {
    let (_, order_id) = sold_exchange(app, partner, price_gbp).await;
    let response = choose(
        app,
        order_id,
        json!({"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"}),
    )
    .await;
    assert_eq!(response.status(), 201);
    json(response).await
}

pub async fn set_payouts(app: &TestApp, partner: &Partner, body: Value) -> Value {
    let response = app.patch("/v1/partner/settings/payouts", &partner.key, &body).await;
    let status = response.status();
    let answer = json(response).await;
    assert_eq!(status, 200, "payouts answered {answer}");
    answer
}

pub async fn new_warehouse(app: &TestApp, partner: &Partner, label: &str) -> String {
    warehouse(app, partner, label).await
}

/// Runs SQL directly on the test server's database (to age a code, for instance); it must
/// be valid on both backends.
pub async fn execute_sql(app: &TestApp, sql: &str) {
    let pool = app.db.raw().await;
    pool.execute(sql).await;
    pool.close().await;
}
