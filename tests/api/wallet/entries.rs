//! What earns an entry (decisions 10.1) and the hold (10.2).

use serde_json::json;

use super::{all_entries, delivered_sale, hours_ago, rfc3339, run, traded_in, wallet, wallet_app};
use crate::helpers::{assert_error, json};

#[tokio::test]
async fn a_delivered_clearance_sale_earns_the_money_of_the_sale_as_it_sold() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    let delivered = hours_ago(1);
    let order_id = delivered_sale(&app, &partner, json!(199.99), 30, 2, delivered).await;

    let entries = all_entries(&app, &partner).await;
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    // One unit: commission 30.00 (29.9985 half up), VAT 6.00, delivery 30.00, payout 133.99.
    assert_eq!(e["type"], "sale");
    assert_eq!(e["order_id"], order_id);
    assert_eq!(e["order_reference"], format!("#{order_id}"));
    assert_eq!(e["title"], "Oak frame sofa");
    assert_eq!(e["quantity"], 2);
    assert_eq!(
        [&e["gross_pence"], &e["commission_pence"], &e["vat_pence"], &e["delivery_pence"], &e["amount_pence"]],
        [&json!(39_998), &json!(6_000), &json!(1_200), &json!(6_000), &json!(26_798)]
    );
    assert_eq!([&e["gross"], &e["amount"]], [&json!(399.98), &json!(267.98)]);
    assert_eq!(e["status"], "pending");
    assert_eq!(e["remittance_id"], json!(null));
    assert_eq!(e["delivered_at"], rfc3339(delivered));
    assert_eq!(e["available_at"], rfc3339(delivered + chrono::TimeDelta::hours(48)));

    // A later edit of the listing changes nothing of the sale.
    let listing_id = e["listing_id"].as_i64().unwrap();
    let edit = app.patch(&format!("/v1/listings/{listing_id}"), &partner.key, &json!({"title": "Renamed"})).await;
    assert_eq!(edit.status(), 200);
    assert_eq!(all_entries(&app, &partner).await[0]["title"], "Oak frame sofa");

    let w = wallet(&app, &partner).await;
    assert_eq!(w["brand_id"], "acme");
    assert_eq!(w["currency"], "GBP");
    assert_eq!([&w["pending_pence"], &w["available_pence"], &w["paid_pence"]], [&json!(26_798), &json!(0), &json!(0)]);
    assert_eq!([&w["lifetime_pence"], &w["lifetime"]], [&json!(26_798), &json!(267.98)]);
    assert_eq!(w["hold_hours"], 48);
    let next = chrono::NaiveDate::parse_from_str(w["next_payout_date"].as_str().unwrap(), "%Y-%m-%d").unwrap();
    assert_eq!(chrono::Datelike::day(&next), 1);
    assert!(next > chrono::Utc::now().date_naive());
}

#[tokio::test]
async fn a_credit_trade_in_earns_its_base_and_a_cash_choice_earns_nothing() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    // Credit boosted to 150 %: the customer gets more, the brand is owed the base.
    let boost = app.patch("/v1/partner/settings/payouts", &partner.key, &json!({"credit_boost_percent": 150})).await;
    assert_eq!(boost.status(), 200);
    let credit = traded_in(&app, &partner, json!(120), "credit", hours_ago(72)).await;
    traded_in(&app, &partner, json!(80), "cash", hours_ago(72)).await;
    // An exchange sale delivered but not yet chosen earns nothing either.
    let listing = crate::marketplace::listing(&app, &partner, json!({"channel": "exchange"})).await;
    let order = crate::marketplace::order(&app, json!({"listing_id": listing})).await["id"].as_i64().unwrap();
    crate::marketplace::complete(&app, order, json!({})).await;

    let entries = all_entries(&app, &partner).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!((e["type"].as_str(), e["order_id"].as_i64()), (Some("trade_in"), Some(credit)));
    assert_eq!(
        [&e["gross_pence"], &e["commission_pence"], &e["vat_pence"], &e["delivery_pence"], &e["amount_pence"]],
        [&json!(12_000), &json!(0), &json!(0), &json!(0), &json!(12_000)]
    );
    // Delivered 72 hours ago: past the hold already when chosen.
    assert_eq!(e["status"], "available");
    assert_eq!(wallet(&app, &partner).await["available_pence"], 12_000);
}

#[tokio::test]
async fn the_hold_ends_to_the_second() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    let delivered = hours_ago(47);
    delivered_sale(&app, &partner, json!(100), 0, 1, delivered).await;
    let available_at = delivered + chrono::TimeDelta::hours(48);
    assert_eq!(all_entries(&app, &partner).await[0]["status"], "pending");

    // A run as of a second before the hold ends pays nothing; as of its end, it pays.
    // (The run refuses instants in the future, so the boundary is checked on a sale
    // delivered 48 hours and a little ago.)
    let partner2 = app.partner("beta").await;
    let delivered2 = hours_ago(48) - chrono::TimeDelta::seconds(5);
    delivered_sale(&app, &partner2, json!(100), 0, 1, delivered2).await;
    let end = delivered2 + chrono::TimeDelta::hours(48);
    assert_eq!(run(&app, Some(end - chrono::TimeDelta::seconds(1))).await, Vec::<i64>::new());
    let issued = run(&app, Some(end)).await;
    assert_eq!(issued.len(), 1);
    assert_eq!(all_entries(&app, &partner2).await[0]["status"], "paid");
    // The first brand's sale is still held.
    assert!(available_at > chrono::Utc::now());
    assert_eq!(all_entries(&app, &partner).await[0]["status"], "pending");
}

#[tokio::test]
async fn a_custom_hold_is_reported_and_applied() {
    let app = crate::webhooks::webhook_app(|c| {
        c.ops_token = Some(crate::marketplace::OPS_TOKEN.into());
        c.settlement_hold_hours = 0;
    })
    .await;
    let partner = app.partner("acme").await;
    delivered_sale(&app, &partner, json!(100), 0, 1, hours_ago(0)).await;
    let w = wallet(&app, &partner).await;
    assert_eq!((w["hold_hours"].as_i64(), w["available_pence"].as_i64()), (Some(0), Some(8_200)));
}

#[tokio::test]
async fn entries_walk_in_pages_and_bad_parameters_are_refused() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    for _ in 0..3 {
        delivered_sale(&app, &partner, json!(10), 0, 1, hours_ago(1)).await;
    }
    let first = json(app.get("/v1/wallet/entries?limit=2", &partner.key).await).await;
    assert_eq!(first["data"].as_array().unwrap().len(), 2);
    assert_eq!((first["meta"]["limit"].as_i64(), first["meta"]["has_more"].as_bool()), (Some(2), Some(true)));
    let after = first["meta"]["next_after"].as_i64().unwrap();
    let second = json(app.get(&format!("/v1/wallet/entries?limit=2&after={after}"), &partner.key).await).await;
    assert_eq!(second["data"].as_array().unwrap().len(), 1);
    assert_eq!(second["meta"]["has_more"], false);
    assert!(second["data"][0]["id"].as_i64().unwrap() > after);

    for query in ["limit=0", "limit=101", "limit=x", "after=-1", "after=x"] {
        let response = app.get(&format!("/v1/wallet/entries?{query}"), &partner.key).await;
        assert_error(response, 400, "validation_failed").await;
    }
}

#[tokio::test]
async fn an_order_never_earns_twice() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    let order_id = delivered_sale(&app, &partner, json!(100), 0, 1, hours_ago(1)).await;
    let again = crate::marketplace::ops_post(&app, &format!("/orders/{order_id}/complete"), &json!({})).await;
    assert_error(again, 409, "order_already_completed").await;
    assert_eq!(all_entries(&app, &partner).await.len(), 1);
    // The constraint, not the code, is what holds: a second row for the order is refused.
    let raw = app.db.raw().await;
    let duplicate = crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query(
            "INSERT INTO ledger_entries (brand_id, type, order_id, listing_id, title, quantity, gross_pence,
                 commission_pence, vat_pence, delivery_pence, amount_pence, delivered_at, available_at, created_at)
             SELECT brand_id, type, order_id, listing_id, title, quantity, gross_pence, commission_pence, vat_pence,
                 delivery_pence, amount_pence, delivered_at, available_at, created_at FROM ledger_entries",
        )
        .execute(pool)
        .await
        .is_err()
    });
    assert!(duplicate, "a second entry for one order must be refused by the database");
}
