//! Payout options and the customer's payout choice, end to end: sale → completion → choice
//! → the delivered `redemption.created` event → (for a code) redeeming it.

use std::time::Duration;

use serde_json::{json, Value};

use super::{choose, complete, listing, market_app, order, set_payouts, sold_exchange};
use crate::helpers::{assert_error, json};
use crate::webhooks::configure;
use crate::webhooks::receiver::Receiver;

const PAYOUTS: &str = "/v1/partner/settings/payouts";

#[tokio::test]
async fn payout_options_default_and_change_field_by_field() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let response = app.get(PAYOUTS, &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        json(response).await,
        json!({"brand_id": "acme", "credit_enabled": true, "cash_enabled": true, "credit_boost_percent": 100,
               "code_validity_days": 365})
    );
    let changed = set_payouts(&app, &partner, json!({"credit_boost_percent": 120})).await;
    assert_eq!(changed["credit_boost_percent"], 120);
    let changed = set_payouts(&app, &partner, json!({"cash_enabled": false, "code_validity_days": 30})).await;
    assert_eq!(
        changed,
        json!({"brand_id": "acme", "credit_enabled": true, "cash_enabled": false, "credit_boost_percent": 120,
               "code_validity_days": 30})
    );
    // Another brand still has the defaults.
    let other = app.partner("globex").await;
    assert_eq!(json(app.get(PAYOUTS, &other.key).await).await["credit_boost_percent"], 100);
}

#[tokio::test]
async fn payout_options_are_validated_like_other_settings() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let cases: [(Value, &str); 7] = [
        (json!({"credit_boost_percent": 99}), "credit_boost_percent_invalid"),
        (json!({"credit_boost_percent": 201}), "credit_boost_percent_invalid"),
        (json!({"credit_boost_percent": 120.5}), "credit_boost_percent_invalid"),
        (json!({"code_validity_days": 0}), "code_validity_days_invalid"),
        (json!({"code_validity_days": 1096}), "code_validity_days_invalid"),
        (json!({"cash_enabled": "false"}), "cash_enabled_invalid"),
        (json!({"boost": 120}), "boost_unknown"),
    ];
    for (body, code) in cases {
        let answer = assert_error(app.patch(PAYOUTS, &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(answer["message"], code, "{body}");
    }
    let response = app.patch(PAYOUTS, &partner.key, &json!([1])).await;
    assert_error(response, 400, "invalid_body").await;
    let edges = set_payouts(&app, &partner, json!({"credit_boost_percent": 200, "code_validity_days": 1095})).await;
    assert_eq!((edges["credit_boost_percent"].as_i64(), edges["code_validity_days"].as_i64()), (Some(200), Some(1095)));

    // Customers always have a way to be paid: turning both off, at once or one after the
    // other, is refused and changes nothing.
    for body in [json!({"credit_enabled": false, "cash_enabled": false}), json!({"cash_enabled": false})] {
        if body.get("credit_enabled").is_none() {
            set_payouts(&app, &partner, json!({"credit_enabled": false, "cash_enabled": true})).await;
        }
        let answer = assert_error(app.patch(PAYOUTS, &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(answer["errors"][0]["field"], "credit_enabled", "{answer}");
        assert_eq!(answer["errors"][0]["code"], "payout_choice_required", "{answer}");
    }
    let kept = json(app.get(PAYOUTS, &partner.key).await).await;
    assert_eq!((kept["credit_enabled"].as_bool(), kept["cash_enabled"].as_bool()), (Some(false), Some(true)), "{kept}");
}

/// The exact data of a `redemption.created` event, checked field by field.
fn assert_redemption_shape(data: &Value) {
    let keys: Vec<&str> = data.as_object().unwrap().keys().map(String::as_str).collect();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "brand_id",
            "code",
            "credit_destination",
            "currency",
            "customer_choice",
            "customer_id",
            "expires_at",
            "id",
            "original_order_id",
            "related_listing_id",
            "sale_completed_at",
            "value",
            "value_pence"
        ]
    );
    let pence = data["value_pence"].as_i64().unwrap();
    assert_eq!(data["value"].as_f64().unwrap(), pence as f64 / 100.0);
    assert_eq!(data["currency"], "GBP");
    assert!(data["id"].as_str().is_some_and(|id| id.starts_with("red_")));
    assert!(data["related_listing_id"].is_i64());
}

async fn delivered(receiver: &Receiver, n: usize) -> Vec<Value> {
    receiver
        .wait_for_hits(n, Duration::from_secs(10))
        .await
        .iter()
        .map(|hit| serde_json::from_slice::<Value>(&hit.body).unwrap())
        .collect()
}

#[tokio::test]
async fn credit_to_a_code_is_boosted_delivered_and_redeemable() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    set_payouts(&app, &partner, json!({"credit_boost_percent": 115, "code_validity_days": 30})).await;
    let (listing_id, order_id) = sold_exchange(&app, &partner, json!(19.99)).await;

    let before = chrono::Utc::now();
    let response = choose(
        &app,
        order_id,
        json!({"customer_id": "cus_42", "customer_choice": "credit", "credit_destination": "code"}),
    )
    .await;
    assert_eq!(response.status(), 201);
    let redemption = json(response).await;
    assert_redemption_shape(&redemption);
    // £19.99 × 1.15 = £22.9885 → 2,299p.
    assert_eq!(redemption["value_pence"], 2299);
    assert_eq!(redemption["value"], 22.99);
    assert_eq!(redemption["brand_id"], "acme");
    assert_eq!(redemption["customer_id"], "cus_42");
    assert_eq!(redemption["customer_choice"], "credit");
    assert_eq!(redemption["credit_destination"], "code");
    assert_eq!(redemption["original_order_id"], Value::Null);
    assert_eq!(redemption["related_listing_id"], listing_id);
    assert_eq!(redemption["sale_completed_at"], "2026-11-20T15:04:05.000000Z");
    let code = redemption["code"].as_str().unwrap().to_owned();
    assert!(code.starts_with("RH-") && code.len() == 22, "{code}");
    let expires: chrono::DateTime<chrono::Utc> = redemption["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires - before).num_hours();
    assert!((30 * 24 - 1..=30 * 24).contains(&days), "{days}");

    let events = delivered(&receiver, 1).await;
    assert_eq!(events[0]["type"], "redemption.created");
    assert_eq!(events[0]["data"], redemption);

    let spent = app
        .post("/v1/partner/credits/redeem", &partner.key, &json!({"code": code.to_lowercase().replace('-', " ")}))
        .await;
    assert_eq!(spent.status(), 200);
    let spent = json(spent).await;
    assert_eq!(spent["redemption_id"], redemption["id"]);
    assert_eq!(spent["value_pence"], 2299);
    assert_eq!(spent["code"], code);
}

#[tokio::test]
async fn credit_to_an_existing_order_names_the_order_and_has_no_code() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    set_payouts(&app, &partner, json!({"credit_boost_percent": 125})).await;
    let (_, order_id) = sold_exchange(&app, &partner, json!(0.1)).await;
    let response = choose(
        &app,
        order_id,
        json!({"customer_id": "cus_7", "customer_choice": "credit", "credit_destination": "existing_order",
               "original_order_id": "WEB-100234"}),
    )
    .await;
    assert_eq!(response.status(), 201);
    let redemption = json(response).await;
    assert_redemption_shape(&redemption);
    // 10p × 1.25 = 12.5p → 13p (half up).
    assert_eq!(redemption["value_pence"], 13);
    assert_eq!(redemption["value"], 0.13);
    assert_eq!(redemption["credit_destination"], "existing_order");
    assert_eq!(redemption["original_order_id"], "WEB-100234");
    assert_eq!(redemption["code"], Value::Null);
    assert_eq!(redemption["expires_at"], Value::Null);
    let events = delivered(&receiver, 1).await;
    assert_eq!(events[0]["data"], redemption);
}

#[tokio::test]
async fn cash_is_the_unboosted_base_with_nulls() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    set_payouts(&app, &partner, json!({"credit_boost_percent": 150})).await;
    let (_, order_id) = sold_exchange(&app, &partner, json!(450)).await;
    let response = choose(&app, order_id, json!({"customer_id": "cus_9", "customer_choice": "cash"})).await;
    assert_eq!(response.status(), 201);
    let redemption = json(response).await;
    assert_redemption_shape(&redemption);
    assert_eq!(redemption["value_pence"], 45_000);
    assert_eq!(redemption["value"], 450.0);
    for field in ["credit_destination", "code", "expires_at", "original_order_id"] {
        assert_eq!(redemption[field], Value::Null, "{field}");
    }
    let events = delivered(&receiver, 1).await;
    assert_eq!(events[0]["data"], redemption);
    assert_eq!(events[0]["type"], "redemption.created");
}

#[tokio::test]
async fn choices_the_brand_disabled_are_refused() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    set_payouts(&app, &partner, json!({"cash_enabled": false})).await;
    let (_, order_id) = sold_exchange(&app, &partner, json!(100)).await;
    let response = choose(&app, order_id, json!({"customer_id": "c", "customer_choice": "cash"})).await;
    assert_error(response, 409, "customer_choice_not_offered").await;
    set_payouts(&app, &partner, json!({"cash_enabled": true, "credit_enabled": false})).await;
    let credit = json!({"customer_id": "c", "customer_choice": "credit", "credit_destination": "code"});
    assert_error(choose(&app, order_id, credit).await, 409, "customer_choice_not_offered").await;
    // Nothing was recorded: cash is still possible.
    let response = choose(&app, order_id, json!({"customer_id": "c", "customer_choice": "cash"})).await;
    assert_eq!(response.status(), 201);
}

#[tokio::test]
async fn a_second_choice_for_the_same_order_is_refused() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let (_, order_id) = sold_exchange(&app, &partner, json!(100)).await;
    let cash = json!({"customer_id": "c", "customer_choice": "cash"});
    assert_eq!(choose(&app, order_id, cash.clone()).await.status(), 201);
    assert_error(choose(&app, order_id, cash).await, 409, "payout_choice_exists").await;
    let credit = json!({"customer_id": "c", "customer_choice": "credit", "credit_destination": "code"});
    assert_error(choose(&app, order_id, credit).await, 409, "payout_choice_exists").await;
    // Still a repeat, not a matter of options, once the brand stops offering cash.
    set_payouts(&app, &partner, json!({"cash_enabled": false})).await;
    let cash = json!({"customer_id": "c", "customer_choice": "cash"});
    assert_error(choose(&app, order_id, cash).await, 409, "payout_choice_exists").await;
    delivered(&receiver, 1).await;
    crate::webhooks::settled(&app).await;
    assert_eq!(receiver.hits().len(), 1, "only one event");
}

#[tokio::test]
async fn incomplete_choices_and_wrong_orders_are_refused_with_clear_errors() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let (_, order_id) = sold_exchange(&app, &partner, json!(100)).await;
    let cases: [(Value, &str); 5] = [
        (json!({"customer_choice": "cash"}), "customer_id_required"),
        (json!({"customer_id": "c", "customer_choice": "voucher"}), "customer_choice_invalid"),
        (json!({"customer_id": "c", "customer_choice": "credit"}), "credit_destination_required"),
        (
            json!({"customer_id": "c", "customer_choice": "credit", "credit_destination": "existing_order"}),
            "original_order_id_required",
        ),
        (
            json!({"customer_id": "c", "customer_choice": "cash", "credit_destination": "code"}),
            "credit_destination_invalid",
        ),
    ];
    for (body, code) in cases {
        let answer = assert_error(choose(&app, order_id, body.clone()).await, 400, "validation_failed").await;
        assert_eq!(answer["message"], code, "{body}");
    }
    let cash = json!({"customer_id": "c", "customer_choice": "cash"});
    // Not yet delivered.
    let id = listing(&app, &partner, json!({})).await;
    let placed = order(&app, json!({"listing_id": id})).await["id"].as_i64().unwrap();
    assert_error(choose(&app, placed, cash.clone()).await, 409, "order_not_completed").await;
    // A clearance sale has no payout choice.
    let id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 2})).await;
    let clearance = order(&app, json!({"listing_id": id})).await["id"].as_i64().unwrap();
    complete(&app, clearance, json!({})).await;
    assert_error(choose(&app, clearance, cash.clone()).await, 409, "order_not_exchange").await;
    assert_error(choose(&app, 987_654, cash).await, 404, "order_not_found").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_choices_for_one_order_exactly_one_is_recorded() {
    let app = std::sync::Arc::new(market_app().await);
    let partner = app.partner("acme").await;
    let (_, order_id) = sold_exchange(&app, &partner, json!(100)).await;
    let tries: Vec<_> = (0..12)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                let body = if i % 2 == 0 {
                    json!({"customer_id": "c", "customer_choice": "cash"})
                } else {
                    json!({"customer_id": "c", "customer_choice": "credit", "credit_destination": "code"})
                };
                choose(&app, order_id, body).await.status().as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tries {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 11, "{statuses:?}");
}
