//! Spending credit codes: dry run, the three errors, brand scope, concurrency.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{credit_code, execute_sql, market_app};
use crate::helpers::{assert_error, json};

const REDEEM: &str = "/v1/partner/credits/redeem";

#[tokio::test]
async fn a_dry_run_checks_without_spending_then_the_code_is_spent_once() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let redemption = credit_code(&app, &partner, json!(80)).await;
    let code = redemption["code"].as_str().unwrap().to_owned();

    let dry = app.post(REDEEM, &partner.key, &json!({"code": code, "dry_run": true})).await;
    assert_eq!(dry.status(), 200);
    let dry = json(dry).await;
    assert_eq!(
        dry,
        json!({"code": code, "redemption_id": redemption["id"], "value_pence": 8000, "value": 80.0, "currency": "GBP",
               "expires_at": redemption["expires_at"], "redeemed_at": null, "order_reference": null})
    );

    let spent =
        app.post(REDEEM, &partner.key, &json!({"code": code.replace('-', ""), "order_reference": "WEB-1"})).await;
    assert_eq!(spent.status(), 200);
    let spent = json(spent).await;
    assert_eq!(spent["order_reference"], "WEB-1");
    assert!(spent["redeemed_at"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(spent["value_pence"], 8000);

    let again = app.post(REDEEM, &partner.key, &json!({"code": code})).await;
    assert_error(again, 409, "credit_code_already_redeemed").await;
    let dry_again = app.post(REDEEM, &partner.key, &json!({"code": code, "dry_run": true})).await;
    assert_error(dry_again, 409, "credit_code_already_redeemed").await;
}

#[tokio::test]
async fn unknown_codes_and_other_brands_codes_are_not_found() {
    let app = market_app().await;
    let acme = app.partner("acme").await;
    let globex = app.partner("globex").await;
    let redemption = credit_code(&app, &acme, json!(80)).await;
    let code = redemption["code"].as_str().unwrap();
    assert_error(app.post(REDEEM, &globex.key, &json!({"code": code})).await, 404, "credit_code_not_found").await;
    assert_error(
        app.post(REDEEM, &globex.key, &json!({"code": code, "dry_run": true})).await,
        404,
        "credit_code_not_found",
    )
    .await;
    for guess in ["RH-2222-2222-2222-2222", "nonsense", "💳"] {
        assert_error(app.post(REDEEM, &acme.key, &json!({"code": guess})).await, 404, "credit_code_not_found").await;
    }
    // The other brand's failed attempts spent nothing.
    assert_eq!(app.post(REDEEM, &acme.key, &json!({"code": code})).await.status(), 200);
}

#[tokio::test]
async fn expired_codes_are_gone() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let redemption = credit_code(&app, &partner, json!(80)).await;
    let id = redemption["id"].as_str().unwrap();
    execute_sql(&app, &format!("UPDATE redemptions SET expires_at = '2020-01-01T00:00:00.000000Z' WHERE id = '{id}'"))
        .await;
    let code = redemption["code"].as_str().unwrap();
    assert_error(app.post(REDEEM, &partner.key, &json!({"code": code})).await, 410, "credit_code_expired").await;
    assert_error(
        app.post(REDEEM, &partner.key, &json!({"code": code, "dry_run": true})).await,
        410,
        "credit_code_expired",
    )
    .await;
}

#[tokio::test]
async fn redeem_bodies_are_validated() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let cases: [(Value, &str); 4] = [
        (json!({}), "code_required"),
        (json!({"code": 5}), "code_invalid"),
        (json!({"code": "RH-2222-2222-2222-2222", "dry_run": "yes"}), "dry_run_invalid"),
        (json!({"code": "RH-2222-2222-2222-2222", "coupon": 1}), "coupon_unknown"),
    ];
    for (body, code) in cases {
        let answer = assert_error(app.post(REDEEM, &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(answer["message"], code, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_many_concurrent_redeems_of_one_code_exactly_one_succeeds() {
    let app = Arc::new(market_app().await);
    let partner = app.partner("acme").await;
    let redemption = credit_code(&app, &partner, json!(80)).await;
    let code = redemption["code"].as_str().unwrap().to_owned();
    let key = Arc::new(partner.key.clone());
    let tries: Vec<_> = (0..20)
        .map(|_| {
            let (app, key, code) = (app.clone(), key.clone(), code.clone());
            tokio::spawn(async move { app.post(REDEEM, &key, &json!({"code": code})).await.status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tries {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 19, "{statuses:?}");
}
