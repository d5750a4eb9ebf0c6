//! `GET /v1/redemptions`: keyset paging that never skips or repeats, brand scope, masking.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{choose, credit_code, execute_sql, market_app, sold_exchange};
use crate::helpers::{assert_error, json, Partner, TestApp};

async fn page(app: &TestApp, partner: &Partner, query: &str) -> Value {
    let response = app.get(&format!("/v1/redemptions{query}"), &partner.key).await;
    let status = response.status();
    let body = json(response).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// `n` cash redemptions of the partner; returns their ids in creation order.
async fn cash_redemptions(app: &TestApp, partner: &Partner, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let (_, order_id) = sold_exchange(app, partner, json!(10 + i)).await;
        let response =
            choose(app, order_id, json!({"customer_id": format!("cus_{i}"), "customer_choice": "cash"})).await;
        assert_eq!(response.status(), 201);
        ids.push(json(response).await["id"].as_str().unwrap().to_owned());
    }
    ids
}

/// Walks every page from `start` with `limit`; returns the ids in the order seen.
async fn walk(app: &TestApp, partner: &Partner, start: &str, limit: u32) -> Vec<String> {
    let mut seen = Vec::new();
    let mut query = format!("?limit={limit}{start}");
    for _ in 0..100 {
        let body = page(app, partner, &query).await;
        let data = body["data"].as_array().unwrap();
        assert!(data.len() <= limit as usize);
        seen.extend(data.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
        let meta = &body["meta"];
        assert_eq!(meta["limit"], limit);
        if !meta["has_more"].as_bool().unwrap() {
            return seen;
        }
        let since = meta["next_since"].as_str().unwrap().replace('+', "%2B");
        query = format!("?limit={limit}&since={since}&after={}", meta["next_after"].as_str().unwrap());
    }
    panic!("paging never ended");
}

#[tokio::test]
async fn walking_pages_visits_every_redemption_once_even_on_one_timestamp() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let ids = cash_redemptions(&app, &partner, 11).await;
    // Without ties: creation order.
    assert_eq!(walk(&app, &partner, "", 3).await, ids);
    // Every redemption at one instant: still each exactly once, ordered by id.
    execute_sql(&app, "UPDATE redemptions SET created_at = '2026-11-21T09:30:00.000000Z'").await;
    for limit in [1, 2, 3, 4, 10, 11, 100] {
        let seen = walk(&app, &partner, "", limit).await;
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!(seen.len(), 11, "limit {limit}");
        assert_eq!(unique.len(), 11, "limit {limit}");
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(seen, sorted, "limit {limit}");
    }
}

#[tokio::test]
async fn since_filters_and_the_last_position_is_kept_when_nothing_is_new() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let ids = cash_redemptions(&app, &partner, 3).await;
    execute_sql(
        &app,
        &format!("UPDATE redemptions SET created_at = '2026-01-01T00:00:00.000000Z' WHERE id = '{}'", ids[0]),
    )
    .await;
    let body = page(&app, &partner, "?since=2026-06-01T00:00:00Z").await;
    let seen: Vec<_> = body["data"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(seen, ids[1..]);
    // An offset is read as the same instant.
    let body = page(&app, &partner, "?since=2026-01-01T01:00:00%2B01:00").await;
    assert_eq!(body["data"].as_array().unwrap().len(), 3);
    // Caught up: an empty page hands back the same position.
    let meta = &body["meta"];
    let query =
        format!("?since={}&after={}", meta["next_since"].as_str().unwrap(), meta["next_after"].as_str().unwrap());
    let empty = page(&app, &partner, &query).await;
    assert_eq!(empty["data"], json!([]));
    assert_eq!(empty["meta"]["has_more"], false);
    assert_eq!(empty["meta"]["next_after"], meta["next_after"]);
    assert_eq!(empty["meta"]["next_since"], meta["next_since"]);
    assert_eq!(empty["meta"]["limit"], 50);
}

#[tokio::test]
async fn bad_parameters_are_refused() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    for (query, code) in [
        ("?since=yesterday", "since_invalid"),
        ("?since=2026-11-21", "since_invalid"),
        ("?limit=0", "limit_invalid"),
        ("?limit=101", "limit_invalid"),
        ("?after=red_nope", "after_invalid"),
    ] {
        let response = app.get(&format!("/v1/redemptions{query}"), &partner.key).await;
        let body = assert_error(response, 400, "validation_failed").await;
        assert_eq!(body["message"], code, "{query}");
    }
}

#[tokio::test]
async fn polling_shows_only_the_brands_redemptions_exactly_as_the_event_carries_them() {
    let app = market_app().await;
    let acme = app.partner("acme").await;
    let globex = app.partner("globex").await;
    let redemption = credit_code(&app, &acme, json!(25)).await;
    cash_redemptions(&app, &globex, 1).await;
    let body = page(&app, &acme, "").await;
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    // A partner that only polls still receives the code to honour the credit.
    assert_eq!(&data[0], &redemption, "the same data as the event, code included");
    // Another brand's redemption id is not a position here.
    let theirs = page(&app, &globex, "").await["data"][0]["id"].as_str().unwrap().to_owned();
    let response = app.get(&format!("/v1/redemptions?after={theirs}"), &acme.key).await;
    assert_error(response, 400, "validation_failed").await;
}
