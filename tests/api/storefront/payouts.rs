//! A customer chooses a payout on a page (decisions 14.6): the link from the operator API,
//! the brand's enabled choices with their values, the same redemption as `payout-choice`,
//! one use whatever arrives at once, 410 once used or expired.

use std::sync::Arc;

use serde_json::{json, Value};

use super::checkout::{visit_page, Visit};
use super::page;
use crate::helpers::{assert_error, json, TestApp};
use crate::marketplace::{complete, execute_sql, listing, market_app, ops_post, order, set_payouts, sold_exchange};

/// A link for the customer of a sold and delivered trade-in at `price_gbp`: (order id, page path).
async fn link(app: &TestApp, partner: &crate::helpers::Partner, price_gbp: Value) -> (i64, String) {
    let (_, order_id) = sold_exchange(app, partner, price_gbp).await;
    let response = ops_post(app, &format!("/orders/{order_id}/payout-link"), &json!({"customer_id": "cus_42"})).await;
    assert_eq!(response.status(), 201);
    let answer = json(response).await;
    let url = answer["url"].as_str().unwrap();
    let path = url.strip_prefix(&app.base).unwrap().to_owned();
    assert!(path.starts_with("/marketplace/payouts/") && path.len() == "/marketplace/payouts/".len() + 32, "{path}");
    let expires = chrono::DateTime::parse_from_rfc3339(answer["expires_at"].as_str().unwrap()).unwrap();
    let days = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_hours();
    assert!((13 * 24..=14 * 24).contains(&days), "14 days: {days} h");
    (order_id, path)
}

async fn open(app: &TestApp, path: &str) -> (Visit, String) {
    let (visit, headers, body) = visit_page(app, path).await;
    assert_eq!(headers["cache-control"], "private, no-store");
    (visit, body)
}

async fn choose(app: &TestApp, path: &str, visit: &Visit, form: &[(&str, &str)]) -> (u16, String) {
    let mut fields: Vec<(&str, &str)> = form.to_vec();
    fields.push(("csrf", &visit.csrf));
    let response = app.client.post(app.url(path)).header("cookie", &visit.cookie).form(&fields).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn redemptions(app: &TestApp, partner: &crate::helpers::Partner) -> Vec<Value> {
    let page = json(app.get("/v1/redemptions?since=2000-01-01T00:00:00Z", &partner.key).await).await;
    page["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_link_is_only_for_a_completed_exchange_order_without_a_choice() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let clearance = listing(&app, &partner, json!({"channel": "clearance"})).await;
    let sale = order(&app, json!({"listing_id": clearance})).await["id"].as_i64().unwrap();
    let answer = ops_post(&app, &format!("/orders/{sale}/payout-link"), &json!({})).await;
    assert_error(answer, 409, "order_not_exchange").await;
    let trade = listing(&app, &partner, json!({"channel": "exchange"})).await;
    let placed = order(&app, json!({"listing_id": trade})).await["id"].as_i64().unwrap();
    assert_error(
        ops_post(&app, &format!("/orders/{placed}/payout-link"), &json!({})).await,
        409,
        "order_not_completed",
    )
    .await;
    assert_error(ops_post(&app, "/orders/999999/payout-link", &json!({})).await, 404, "order_not_found").await;
    complete(&app, placed, json!({})).await;
    let bad = ops_post(&app, &format!("/orders/{placed}/payout-link"), &json!({"customer_id": 7})).await;
    assert_error(bad, 400, "validation_failed").await;
    let unknown = ops_post(&app, &format!("/orders/{placed}/payout-link"), &json!({"colour": "red"})).await;
    assert_error(unknown, 400, "validation_failed").await;
    assert_eq!(ops_post(&app, &format!("/orders/{placed}/payout-link"), &json!({})).await.status(), 201);
    let chosen = json!({"customer_id": "cus_1", "customer_choice": "cash"});
    assert_eq!(ops_post(&app, &format!("/orders/{placed}/payout-choice"), &chosen).await.status(), 201);
    assert_error(
        ops_post(&app, &format!("/orders/{placed}/payout-link"), &json!({})).await,
        409,
        "payout_choice_exists",
    )
    .await;
}

#[tokio::test]
async fn the_page_offers_the_enabled_choices_with_their_values_and_records_the_same_redemption() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    set_payouts(&app, &partner, json!({"credit_enabled": true, "cash_enabled": false, "credit_boost_percent": 120}))
        .await;
    let (order_id, path) = link(&app, &partner, json!(250)).await;
    let (visit, body) = open(&app, &path).await;
    assert!(body.contains("£300.00 (a 20% bonus)"), "credit with the boost: {body}");
    assert!(!body.contains("value=\"cash\""), "cash is switched off");
    assert!(page(&app, &path).await.header("x-robots-tag").contains("noindex"));
    let (status, body) =
        choose(&app, &path, &visit, &[("customer_choice", "credit"), ("credit_destination", "code")]).await;
    assert_eq!(status, 200, "{body}");
    let code = regex::Regex::new(r#"<p class="code"><strong>([^<]+)</strong>"#).unwrap().captures(&body).expect(&body)
        [1]
    .to_owned();
    assert!(code.starts_with("RH-"), "{code}");
    let recorded = redemptions(&app, &partner).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["customer_id"], "cus_42");
    assert_eq!(recorded[0]["value_pence"], 30000);
    assert_eq!(recorded[0]["code"], code.as_str());
    // Used: the page and the form answer 410; the order has its one choice.
    assert_eq!(page(&app, &path).await.status, 410);
    let (status, _) =
        choose(&app, &path, &visit, &[("customer_choice", "credit"), ("credit_destination", "code")]).await;
    assert_eq!(status, 410);
    let cash = json!({"customer_id": "x", "customer_choice": "cash"});
    let again = ops_post(&app, &format!("/orders/{order_id}/payout-choice"), &cash).await;
    assert_error(again, 409, "payout_choice_exists").await;
}

#[tokio::test]
async fn two_tabs_submitting_at_once_make_one_redemption() {
    let app = Arc::new(market_app().await);
    let partner = app.partner("acme").await;
    let (_, path) = link(&app, &partner, json!(100)).await;
    let (visit, _) = open(&app, &path).await;
    let tasks: Vec<_> = (0..10)
        .map(|n| {
            let (app, path, visit) = (Arc::clone(&app), path.clone(), visit.clone());
            let choice = if n % 2 == 0 { "cash" } else { "credit" };
            tokio::spawn(async move {
                choose(&app, &path, &visit, &[("customer_choice", choice), ("credit_destination", "code")]).await.0
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    statuses.sort_unstable();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 410), "{statuses:?}");
    assert_eq!(redemptions(&app, &partner).await.len(), 1);
}

#[tokio::test]
async fn an_expired_link_is_gone_and_a_switched_off_choice_is_refused_in_words() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let (_, expired) = link(&app, &partner, json!(100)).await;
    execute_sql(&app, "UPDATE payout_links SET expires_at = created_at").await;
    assert_eq!(page(&app, &expired).await.status, 410);
    let (_, path) = link(&app, &partner, json!(100)).await;
    let (visit, body) = open(&app, &path).await;
    assert!(body.contains("value=\"cash\"") && body.contains("Cash: £100.00"));
    set_payouts(&app, &partner, json!({"cash_enabled": false})).await;
    let (status, body) = choose(&app, &path, &visit, &[("customer_choice", "cash")]).await;
    assert_eq!(status, 400);
    assert!(body.contains("That choice is no longer offered"), "{body}");
    let (status, body) = choose(&app, &path, &visit, &[]).await;
    assert_eq!(status, 400);
    assert!(body.contains("Choose store credit or cash."), "{body}");
    let forged = Visit { csrf: "0".repeat(32), cookie: visit.cookie.clone() };
    assert_eq!(
        choose(&app, &path, &forged, &[("customer_choice", "credit"), ("credit_destination", "code")]).await.0,
        403
    );
    assert!(redemptions(&app, &partner).await.is_empty(), "nothing chosen");
    assert_eq!(page(&app, "/marketplace/payouts/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").await.status, 404);
}
