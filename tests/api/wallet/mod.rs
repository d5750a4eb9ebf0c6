//! The wallet and remittance (decisions 10) over real HTTP: what earns an entry, the hold,
//! the runs (twice, on two nodes, killed half way), the statements as JSON, CSV and PDF,
//! their mail, and the balances' invariant under random sequences.

mod entries;
mod invariants;
mod runs;
mod schedule;
pub mod statements;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use crate::helpers::{json, Partner, TestApp};
use crate::marketplace::{complete, listing, ops_post, order};

/// Delivered `hours_ago` hours ago, to the microsecond, as the API takes it.
pub fn hours_ago(hours: i64) -> DateTime<Utc> {
    Utc::now() - TimeDelta::hours(hours)
}

pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A clearance listing of `quantity` units at `price_gbp` with `delivery` (whole pounds),
/// `units` of them sold in one order delivered at `delivered_at`; returns the order id.
pub async fn delivered_sale(
    app: &TestApp,
    partner: &Partner,
    price_gbp: Value,
    delivery: u32,
    units: i64,
    delivered_at: DateTime<Utc>,
) -> i64 {
    let listing_id = listing(
        app,
        partner,
        json!({"channel": "clearance", "price_gbp": price_gbp, "quantity": units, "delivery_contribution_gbp": delivery}),
    )
    .await;
    let order_id = order(app, json!({"listing_id": listing_id, "quantity": units})).await["id"].as_i64().unwrap();
    complete(app, order_id, json!({"completed_at": rfc3339(delivered_at)})).await;
    order_id
}

/// An exchange item at `price_gbp` sold, delivered at `delivered_at`, and the customer's
/// `choice` (`credit` to a code, or `cash`); returns the order id.
pub async fn traded_in(
    app: &TestApp,
    partner: &Partner,
    price_gbp: Value,
    choice: &str,
    delivered_at: DateTime<Utc>,
) -> i64 {
    let listing_id = listing(app, partner, json!({"channel": "exchange", "price_gbp": price_gbp})).await;
    let order_id = order(app, json!({"listing_id": listing_id})).await["id"].as_i64().unwrap();
    complete(app, order_id, json!({"completed_at": rfc3339(delivered_at)})).await;
    let body = match choice {
        "credit" => json!({"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"}),
        _ => json!({"customer_id": "cus_1", "customer_choice": "cash"}),
    };
    let response = ops_post(app, &format!("/orders/{order_id}/payout-choice"), &body).await;
    assert_eq!(response.status(), 201);
    order_id
}

/// Runs the remittance (as of `as_of`, else now); returns the ids issued.
pub async fn run(app: &TestApp, as_of: Option<DateTime<Utc>>) -> Vec<i64> {
    let body = as_of.map_or_else(|| json!({}), |at| json!({"as_of": rfc3339(at)}));
    let response = ops_post(app, "/remittances/run", &body).await;
    let status = response.status();
    let answer = json(response).await;
    assert_eq!(status, 200, "run answered {answer}");
    answer["issued"].as_array().unwrap().iter().map(|id| id.as_i64().unwrap()).collect()
}

pub async fn wallet(app: &TestApp, partner: &Partner) -> Value {
    let response = app.get("/v1/wallet", &partner.key).await;
    assert_eq!(response.status(), 200);
    json(response).await
}

/// Every entry of the brand, walking the pages.
pub async fn all_entries(app: &TestApp, partner: &Partner) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut after = 0;
    loop {
        let response = app.get(&format!("/v1/wallet/entries?limit=100&after={after}"), &partner.key).await;
        assert_eq!(response.status(), 200);
        let page = json(response).await;
        entries.extend(page["data"].as_array().unwrap().iter().cloned());
        if page["meta"]["has_more"] != true {
            return entries;
        }
        after = page["meta"]["next_after"].as_i64().unwrap();
    }
}

pub async fn statement(app: &TestApp, partner: &Partner, id: i64) -> Value {
    let response = app.get(&format!("/v1/remittances/{id}"), &partner.key).await;
    assert_eq!(response.status(), 200);
    json(response).await
}

/// A server with the operator API on (statement mail only where a test configures it).
pub async fn wallet_app() -> TestApp {
    crate::marketplace::market_app().await
}
