//! Every reason code of the listing validator, through real HTTP, and random valid bodies
//! round-tripping through create → detail.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Map, Value};

use crate::helpers::{assert_error, json, spawn_app};
use crate::listings::{create, listing};

fn long(n: usize) -> String {
    "x".repeat(n)
}

/// One body per reason code (changes to a valid body; `null` removes the key).
fn reason_table() -> Vec<(Value, &'static str)> {
    let piece = |changes: Value| {
        let mut piece = json!({"type": "Chair", "w_cm": 80, "d_cm": 70, "h_cm": 90});
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                piece.as_object_mut().unwrap().remove(k);
            } else {
                piece[k] = v.clone();
            }
        }
        json!({"measurements": [piece]})
    };
    vec![
        (json!({"title": null}), "title_required"),
        (json!({"title": "  "}), "title_required"),
        (json!({"title": ["Sofa"]}), "title_invalid"),
        (json!({"title": long(201)}), "title_too_long"),
        (json!({"price_gbp": null}), "price_gbp_required"),
        (json!({"price_gbp": "450"}), "price_gbp_invalid"),
        (json!({"price_gbp": 0}), "price_gbp_invalid"),
        (json!({"price_gbp": -10}), "price_gbp_invalid"),
        (json!({"price_gbp": 450.001}), "price_gbp_invalid"),
        (json!({"condition": null}), "condition_required"),
        (json!({"condition": "new"}), "condition_invalid"),
        (json!({"category": null}), "category_required"),
        (json!({"category": "Beds"}), "category_invalid"),
        (json!({"description": {"html": "x"}}), "description_invalid"),
        (json!({"description": long(20_001)}), "description_too_long"),
        (json!({"channel": "auction"}), "channel_invalid"),
        (json!({"sale_price_gbp": 450}), "sale_price_gbp_invalid"),
        (json!({"sale_price_gbp": 500}), "sale_price_gbp_invalid"),
        (json!({"sale_price_gbp": 0}), "sale_price_gbp_invalid"),
        (json!({"sale_price_gbp": 1.005}), "sale_price_gbp_invalid"),
        (json!({"rrp_gbp": 0}), "rrp_gbp_invalid"),
        (json!({"rrp_gbp": 99.999}), "rrp_gbp_invalid"),
        (json!({"delivery_contribution_gbp": 50}), "delivery_contribution_gbp_invalid"),
        (json!({"delivery_contribution_gbp": "30"}), "delivery_contribution_gbp_invalid"),
        (json!({"brand": long(81)}), "brand_too_long"),
        (json!({"brand": 12}), "brand_invalid"),
        (json!({"colour": "Ultraviolet"}), "colour_invalid"),
        (json!({"fabric": "Kevlar"}), "fabric_invalid"),
        (json!({"age_years": "100 years old"}), "age_years_invalid"),
        (json!({"available_from": "2026-13-01"}), "available_from_invalid"),
        (json!({"available_from": "tomorrow"}), "available_from_invalid"),
        (json!({"quantity": "three"}), "quantity_invalid"),
        (json!({"quantity": 2}), "quantity_invalid"),
        (json!({"quantity": 0, "channel": "clearance"}), "quantity_invalid"),
        (json!({"quantity": 10_001, "channel": "clearance"}), "quantity_invalid"),
        (json!({"measurements": "80x70x90"}), "measurements_invalid"),
        (piece(json!({"type": "Table"})), "measurements_invalid"),
        (piece(json!({"w_cm": -1})), "measurements_invalid"),
        (piece(json!({"h_cm": null})), "measurements_invalid"),
        (piece(json!({"d_cm": "70"})), "measurements_invalid"),
        (
            json!({"measurements": vec![json!({"type": "Chair", "w_cm": 1, "d_cm": 1, "h_cm": 1}); 21]}),
            "measurements_too_long",
        ),
        (json!({"exposed_to": ["Birds"]}), "exposed_to_invalid"),
        (json!({"exposed_to": ["None", "Smoke"]}), "exposed_to_invalid"),
        (json!({"exposed_to": "Dogs"}), "exposed_to_invalid"),
        (json!({"faults": null}), "faults_required"),
        (json!({"faults": []}), "faults_required"),
        (json!({"faults": ["Scratches"]}), "faults_invalid"),
        (json!({"faults": ["None", "Rips or tears"]}), "faults_invalid"),
        (json!({"images": ["not a url"]}), "images_invalid"),
        (json!({"images": ["file:///etc/passwd"]}), "images_invalid"),
        (json!({"images": "https://img.example/a.jpg"}), "images_invalid"),
        (json!({"images": vec!["https://img.example/a.jpg"; 21]}), "images_too_long"),
        (json!({"attachment_ids": [-4]}), "attachment_ids_invalid"),
        (json!({"attachment_ids": [12]}), "attachment_ids_invalid"),
        (json!({"attachment_ids": (1..=21).collect::<Vec<_>>()}), "attachment_ids_too_long"),
        (json!({"sku": long(65)}), "sku_too_long"),
        (json!({"sku": 5}), "sku_invalid"),
        (json!({"warehouse_location": long(65)}), "warehouse_location_too_long"),
        (json!({"warehouse_location": 5}), "warehouse_location_invalid"),
        (json!({"status": "closed"}), "status_invalid"),
        (json!({"status": "published"}), "status_invalid"),
        (json!({"warehouse_id": "main"}), "warehouse_id_invalid"),
        (json!({"warehouse_id": "00000000-0000-4000-8000-000000000000"}), "warehouse_id_invalid"),
        (json!({"price": 450}), "price_unknown"),
        (json!({"brand_id": "acme"}), "brand_id_unknown"),
    ]
}

#[tokio::test]
async fn create_refuses_each_bad_field_with_its_reason_code() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (changes, code) in reason_table() {
        let body = listing(changes.clone());
        let error = assert_error(app.post("/v1/listings", &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(error["message"], code, "for {changes}");
        let field = error["errors"][0]["field"].as_str().unwrap().to_owned();
        let message = error["errors"][0]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.ends_with('.') && !message.contains(code), "a sentence for {code}: {message}");
        assert_eq!(error["errors"], json!([{"field": field, "code": code, "message": message}]), "for {changes}");
        assert!(code.starts_with(&field), "{code} names {field}");
    }
    assert_eq!(app.get("/v1/listings?status=any", &partner.key).await.status(), 200);
    let page = json(app.get("/v1/listings?status=any", &partner.key).await).await;
    assert_eq!(page["meta"]["total"], 0, "nothing was written");
}

#[tokio::test]
async fn patch_refuses_each_bad_field_with_its_reason_code() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create(&app, &partner.key, listing(json!({}))).await["id"].as_i64().unwrap();
    let before = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    for (changes, code) in reason_table() {
        let response = app.patch(&format!("/v1/listings/{id}"), &partner.key, &changes).await;
        let error = assert_error(response, 400, "validation_failed").await;
        assert_eq!(error["message"], code, "for {changes}");
    }
    assert_eq!(json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await, before, "nothing changed");
}

#[tokio::test]
async fn every_reason_is_listed_in_one_answer() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body =
        json!({"price_gbp": "cheap", "condition": "new", "quantity": 5, "faults": [], "colour": 3, "vibe": "cosy"});
    let error = assert_error(app.post("/v1/listings", &partner.key, &body).await, 400, "validation_failed").await;
    assert_eq!(
        error["message"],
        "title_required, price_gbp_invalid, condition_invalid, category_required, colour_invalid, quantity_invalid, \
         faults_required, vibe_unknown"
    );
    assert_eq!(error["errors"].as_array().unwrap().len(), 8);
}

#[tokio::test]
async fn null_optional_fields_mean_absent_on_create() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = json!({
        "title": "Chair", "price_gbp": 20, "condition": "fair", "category": "Armchairs", "faults": ["None"],
        "description": null, "channel": null, "sale_price_gbp": null, "rrp_gbp": null,
        "delivery_contribution_gbp": null, "brand": null, "colour": null, "fabric": null, "age_years": null,
        "available_from": null, "quantity": null, "measurements": null, "exposed_to": null, "images": null,
        "attachment_ids": null, "sku": null, "warehouse_location": null, "status": null, "warehouse_id": null,
    });
    let response = app.post("/v1/listings", &partner.key, &body).await;
    assert_eq!(response.status(), 201);
    let detail = json(response).await;
    assert_eq!((detail["channel"].as_str(), detail["quantity"].as_i64()), (Some("exchange"), Some(1)));
}

/// A random body of valid values, and what the detail should show for each field.
fn valid_body() -> impl Strategy<Value = (Value, Map<String, Value>)> {
    let text = "[A-Za-z0-9][A-Za-z0-9 ,.'&-]{0,30}[A-Za-z0-9]";
    let categories = vec![
        "Corner Sofas",
        "3-Seater Sofas",
        "2-Seater Sofas",
        "Sofa Beds",
        "Armchairs",
        "Footstools",
        "Sofa Sets",
        "Other",
    ];
    (
        (
            text,
            1..=10_000_000_i64,
            prop::sample::select(vec!["like-new", "excellent", "gently-used", "fair"]),
            prop::sample::select(categories),
        ),
        (prop::bool::ANY, 1..=10_000_i64, prop::option::of(1..100_i64), prop::sample::select(vec![0, 30, 60, 129])),
        (
            prop::option::of(1..=10_000_000_i64),
            prop::option::of(prop::sample::select(vec!["Grey", "Navy", "Cream"])),
            prop::option::of(text),
            prop::option::of(text),
        ),
        (
            prop::sample::subsequence(vec!["Dogs", "Cats", "Smoke"], 0..=3),
            prop::sample::subsequence(vec!["Rips or tears", "Fire Label"], 1..=2),
            prop::bool::ANY,
            prop::option::of((1..=1000_u32, 1..=1000_u32, 1..=1000_u32)),
        ),
    )
        .prop_map(
            |(
                (title, price, condition, category),
                (clearance, quantity, sale_percent, delivery),
                (rrp, colour, sku, description),
                (exposed, faults, draft, dims),
            )| {
                let channel = if clearance { "clearance" } else { "exchange" };
                let quantity = if clearance { quantity } else { 1 };
                let sale = sale_percent.map(|p| price * p / 100).filter(|s| *s > 0);
                let gbp = |pence: i64| pence as f64 / 100.0;
                let mut body = json!({
                    "title": title, "price_gbp": gbp(price), "condition": condition, "category": category,
                    "channel": channel, "quantity": quantity, "delivery_contribution_gbp": delivery,
                    "exposed_to": exposed, "faults": faults, "status": if draft { "draft" } else { "active" },
                });
                let mut expected = Map::new();
                for key in [
                    "title",
                    "condition",
                    "category",
                    "channel",
                    "quantity",
                    "delivery_contribution_gbp",
                    "exposed_to",
                    "faults",
                    "status",
                ] {
                    expected.insert(key.to_owned(), body[key].clone());
                }
                expected.insert("regular_price_pence".into(), json!(price));
                expected.insert("sale_price_pence".into(), json!(sale));
                expected.insert("price_pence".into(), json!(sale.unwrap_or(price)));
                expected.insert("rrp_pence".into(), json!(rrp));
                // Text fields are always strings, empty when unset.
                expected.insert("colour".into(), json!(colour.unwrap_or_default()));
                expected.insert("sku".into(), json!(sku.clone().unwrap_or_default()));
                expected.insert("description".into(), json!(description.clone().unwrap_or_default()));
                let object = body.as_object_mut().unwrap();
                if let Some(sale) = sale {
                    object.insert("sale_price_gbp".into(), json!(gbp(sale)));
                }
                if let Some(rrp) = rrp {
                    object.insert("rrp_gbp".into(), json!(gbp(rrp)));
                }
                for (key, value) in
                    [("colour", colour.map(str::to_lowercase)), ("sku", sku), ("description", description)]
                {
                    if let Some(value) = value {
                        object.insert(key.into(), json!(value));
                    }
                }
                let measurements = dims
                    .map(|(w, d, h)| json!([{"type": "Sofa Set", "w_cm": w, "d_cm": d, "h_cm": h}]))
                    .unwrap_or(json!([]));
                object.insert("measurements".into(), measurements.clone());
                expected.insert("measurements".into(), measurements);
                (body, expected)
            },
        )
}

#[tokio::test]
async fn random_valid_bodies_round_trip_through_create_and_detail() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut runner = TestRunner::new(Config { cases: 40, ..Config::default() });
    let strategy = valid_body();
    for _ in 0..40 {
        let (body, expected) = strategy.new_tree(&mut runner).unwrap().current();
        let created = create(&app, &partner.key, body.clone()).await;
        let read = json(app.get(&format!("/v1/listings/{}", created["id"]), &partner.key).await).await;
        assert_eq!(read, created, "detail equals the create answer for {body}");
        for (key, value) in &expected {
            assert_eq!(&read[key], value, "{key} of {body}");
        }
        let pence = |key: &str| read[key].as_i64();
        let gbp = |key: &str| read[key].as_f64().map(|v| (v * 100.0).round() as i64);
        for (decimal, twin) in
            [("price", "price_pence"), ("regular_price", "regular_price_pence"), ("payout", "payout_pence")]
        {
            assert_eq!(gbp(decimal), pence(twin), "{decimal} and {twin} agree in {read}");
        }
        assert!(read["payout_pence"].as_i64().unwrap() >= 0);
    }
}

/// Amounts are read from the number as written, never through a float: an amount with
/// more than two decimals is refused however close it is to a whole penny, and one written
/// with an exponent or trailing zeros is exact.
#[tokio::test]
async fn money_is_read_exactly_from_the_json_text() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = |price: &str| {
        format!(
            r#"{{"title": "Exact sofa", "price_gbp": {price}, "condition": "excellent", "category": "3-Seater Sofas", "faults": ["None"]}}"#
        )
    };
    let post = |price: &str| {
        let request = app.request(reqwest::Method::POST, "/v1/listings", &partner.key);
        request.header("content-type", "application/json").body(body(price)).send()
    };
    for refused in ["19.999999999999999999", "10.000000000000001", "0.001", "1e-3", "99999999999999999999999"] {
        let response = post(refused).await.unwrap();
        let error = assert_error(response, 400, "validation_failed").await;
        assert_eq!(error["errors"][0]["code"], "price_gbp_invalid", "{refused}: {error}");
    }
    for (written, pence) in [("19.99", 1999), ("19.990000000000000000", 1999), ("1e2", 10_000), ("1.5E+1", 1500)] {
        let response = post(written).await.unwrap();
        assert_eq!(response.status(), 201, "{written}");
        assert_eq!(json(response).await["regular_price_pence"], pence, "{written}");
    }
}

/// `Other` is the catch-all brand whatever its case: it is never added as a brand of its own.
#[tokio::test]
async fn the_other_brand_is_matched_whatever_its_case() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let detail = create(&app, &partner.key, listing(json!({"brand": "other"}))).await;
    assert_eq!(detail["brand"], "Other");
    let options = json(app.get("/v1/listings/options", &partner.key).await).await;
    let brands: Vec<&str> = options["brands"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(brands.iter().filter(|b| b.eq_ignore_ascii_case("other")).count(), 1, "{brands:?}");
    assert_eq!(brands.last(), Some(&"Other"));
}

/// Text that would show as blank, or break a one-line field where nobody sees it, is
/// refused; a SKU is one identity whatever invisible characters are typed inside it.
#[tokio::test]
async fn blank_looking_text_is_refused_and_a_sku_ignores_invisible_characters() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (field, value) in [
        ("title", "\u{3164}"),
        ("title", "\u{301}\u{301}"),
        ("title", "\u{200E}\u{200F}"),
        ("title", "Sofa\u{2028}bed"),
        ("title", "Sofa\u{FFF9}bed"),
        ("title", "Sofa\u{FFFE}"),
        ("sku", "\u{61C}"),
    ] {
        let body = listing(json!({ field: value }));
        assert_error(app.post("/v1/listings", &partner.key, &body).await, 400, "validation_failed").await;
    }
    let detail = create(&app, &partner.key, listing(json!({"sku": "ABC\u{200B}-1"}))).await;
    assert_eq!(detail["sku"], "ABC-1");
    let response = app.get("/v1/listings?sku=ABC%E2%80%8B-1&status=any", &partner.key).await;
    let page = json(response).await;
    assert_eq!(page["data"].as_array().map(Vec::len), Some(1), "{page}");
}
