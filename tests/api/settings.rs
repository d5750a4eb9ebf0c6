//! Brand profile and billing entity: `/v1/partner/settings/brand` and `/billing`.

use rehome::domain::user::Role;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app, Partner, TestApp};

const BRAND: &str = "/v1/partner/settings/brand";
const BILLING: &str = "/v1/partner/settings/billing";

/// A PATCH that must succeed; answers its body.
async fn patch_ok(app: &TestApp, path: &str, key: &str, body: Value) -> Value {
    let response = app.patch(path, key, &body).await;
    let status = response.status();
    let answer = json(response).await;
    assert_eq!(status, 200, "{body} -> {answer}");
    answer
}

/// A PATCH that must fail validation with exactly `codes`; checks the message and the
/// `errors` array agree.
async fn patch_fails(app: &TestApp, path: &str, key: &str, body: Value, codes: &[&str]) {
    let answer = assert_error(app.patch(path, key, &body).await, 400, "validation_failed").await;
    assert_eq!(answer["message"], codes.join(", "), "{body}");
    let listed: Vec<&str> = answer["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(listed, codes, "{body}");
}

async fn named(app: &TestApp, partner: &Partner) {
    patch_ok(app, BRAND, &partner.key, json!({"display_name": "Acme Sofas"})).await;
}

#[tokio::test]
async fn the_profile_before_any_save_has_every_field_empty() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let response = app.get(BRAND, &partner.key).await;
    assert_eq!(response.status(), 200);
    let body = json(response).await;
    assert_eq!(
        body,
        json!({"brand_id": "acme", "profile": {
            "display_name": "", "tagline": "", "description": "", "support_email": "",
            "support_phone": "", "logo_url": "", "accent_color": ""
        }})
    );
}

#[tokio::test]
async fn the_first_save_without_display_name_is_display_name_required() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    patch_fails(&app, BRAND, &partner.key, json!({}), &["display_name_required"]).await;
    patch_fails(&app, BRAND, &partner.key, json!({"tagline": "Loved again"}), &["display_name_required"]).await;
    patch_fails(&app, BRAND, &partner.key, json!({"display_name": "   "}), &["display_name_required"]).await;
    assert_eq!(json(app.get(BRAND, &partner.key).await).await["profile"]["display_name"], "");
}

#[tokio::test]
async fn the_first_save_stores_every_field_normalised() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = patch_ok(
        &app,
        BRAND,
        &partner.key,
        json!({
            "display_name": "  Acme Sofas ",
            "tagline": "Pre-loved sofas, properly",
            "description": "Line one.\nLine two.",
            "support_email": "Help@ACME.example",
            "support_phone": "+44 20  7946 0000",
            "logo_url": "https://cdn.acme.example/logo.png",
            "accent_color": "#ff8800",
        }),
    )
    .await;
    let expected = json!({"brand_id": "acme", "profile": {
        "display_name": "Acme Sofas",
        "tagline": "Pre-loved sofas, properly",
        "description": "Line one.\nLine two.",
        "support_email": "Help@acme.example",
        "support_phone": "+44 20 7946 0000",
        "logo_url": "https://cdn.acme.example/logo.png",
        "accent_color": "#FF8800",
    }});
    assert_eq!(body, expected);
    assert_eq!(json(app.get(BRAND, &partner.key).await).await, expected);
}

#[tokio::test]
async fn a_display_name_may_have_80_characters_but_not_81() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let eighty = "é".repeat(80);
    let body = patch_ok(&app, BRAND, &partner.key, json!({ "display_name": eighty })).await;
    assert_eq!(body["profile"]["display_name"], eighty);
    patch_fails(&app, BRAND, &partner.key, json!({"display_name": "é".repeat(81)}), &["display_name_too_long"]).await;
}

#[tokio::test]
async fn the_spec_messages_come_out_exactly() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let cases = [
        (json!({}), "display_name_required"),
        (json!({"display_name": "x".repeat(81)}), "display_name_too_long"),
        (json!({"display_name": "Acme", "support_email": "not an email"}), "support_email_invalid"),
        (json!({"display_name": "Acme", "accent_color": "orange"}), "accent_color_invalid"),
    ];
    for (body, message) in cases {
        let answer = assert_error(app.patch(BRAND, &partner.key, &body).await, 400, "validation_failed").await;
        assert_eq!(answer["message"], message);
    }
}

#[tokio::test]
async fn each_profile_field_has_its_reason() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    named(&app, &partner).await;
    let cases = [
        (json!({"display_name": ""}), "display_name_required"),
        (json!({"display_name": null}), "display_name_required"),
        (json!({"display_name": "x".repeat(81)}), "display_name_too_long"),
        (json!({"display_name": 7}), "display_name_invalid"),
        (json!({"tagline": "x".repeat(161)}), "tagline_too_long"),
        (json!({"tagline": {"text": "hi"}}), "tagline_invalid"),
        (json!({"description": "x".repeat(5_001)}), "description_too_long"),
        (json!({"support_email": "help@"}), "support_email_invalid"),
        (json!({"support_email": "help@localhost"}), "support_email_invalid"),
        (json!({"support_email": "Help <help@acme.example>"}), "support_email_invalid"),
        (json!({"support_phone": "phone us"}), "support_phone_invalid"),
        (json!({"support_phone": "12"}), "support_phone_invalid"),
        // Not writable in E.164: no country code and not a UK number.
        (json!({"support_phone": "7946 0000"}), "support_phone_invalid"),
        (json!({"logo_url": "http://cdn.acme.example/logo.png"}), "logo_url_invalid"),
        (json!({"logo_url": "https://localhost/logo.png"}), "logo_url_invalid"),
        (json!({"logo_url": "https://10.0.0.5/logo.png"}), "logo_url_invalid"),
        (json!({"logo_url": "https://[::1]/logo.png"}), "logo_url_invalid"),
        (json!({"logo_url": "javascript:alert(1)"}), "logo_url_invalid"),
        (json!({"accent_color": "#FFF"}), "accent_color_invalid"),
        (json!({"accent_color": "#GGGGGG"}), "accent_color_invalid"),
        (json!({"accent_color": 16711680}), "accent_color_invalid"),
        (json!({"brand_colour": "#FF0000"}), "brand_colour_unknown"),
    ];
    for (body, code) in cases {
        patch_fails(&app, BRAND, &partner.key, body, &[code]).await;
    }
    assert_eq!(json(app.get(BRAND, &partner.key).await).await["profile"]["display_name"], "Acme Sofas");
}

#[tokio::test]
async fn every_reason_is_listed_in_one_answer() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    patch_fails(
        &app,
        BRAND,
        &partner.key,
        json!({"support_email": "nope", "accent_color": "red", "motto": "x"}),
        &["display_name_required", "support_email_invalid", "accent_color_invalid", "motto_unknown"],
    )
    .await;
}

#[tokio::test]
async fn a_profile_patch_changes_only_the_fields_given() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    patch_ok(
        &app,
        BRAND,
        &partner.key,
        json!({"display_name": "Acme", "tagline": "Old line", "support_email": "help@acme.example"}),
    )
    .await;
    let body = patch_ok(&app, BRAND, &partner.key, json!({"tagline": "New line"})).await;
    assert_eq!(body["profile"]["display_name"], "Acme");
    assert_eq!(body["profile"]["tagline"], "New line");
    assert_eq!(body["profile"]["support_email"], "help@acme.example");

    let body = patch_ok(&app, BRAND, &partner.key, json!({"support_email": ""})).await;
    assert_eq!(body["profile"]["support_email"], "");
    assert_eq!(body["profile"]["tagline"], "New line");

    let body = patch_ok(&app, BRAND, &partner.key, json!({})).await;
    assert_eq!(body["profile"]["display_name"], "Acme");
}

#[tokio::test]
async fn the_billing_entity_before_any_save_is_empty_in_the_united_kingdom() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = json(app.get(BILLING, &partner.key).await).await;
    assert_eq!(
        body,
        json!({"brand_id": "acme", "billing": {
            "company_name": "", "address_1": "", "address_2": "", "city": "", "postcode": "",
            "country": "United Kingdom", "company_number": "", "vat_number": "", "invoice_email": ""
        }})
    );
}

#[tokio::test]
async fn a_uk_billing_entity_is_stored_normalised() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = patch_ok(
        &app,
        BILLING,
        &partner.key,
        json!({
            "company_name": "Acme Sofas Ltd",
            "address_1": "1 High Street",
            "address_2": "",
            "city": "London",
            "postcode": "sw1a1aa",
            "country": "uk",
            "company_number": "sc123456",
            "vat_number": "GB 999 9999 73",
            "invoice_email": "Accounts@Acme.Example",
        }),
    )
    .await;
    let expected = json!({"brand_id": "acme", "billing": {
        "company_name": "Acme Sofas Ltd",
        "address_1": "1 High Street",
        "address_2": "",
        "city": "London",
        "postcode": "SW1A 1AA",
        "country": "United Kingdom",
        "company_number": "SC123456",
        "vat_number": "GB999999973",
        "invoice_email": "Accounts@acme.example",
    }});
    assert_eq!(body, expected);
    assert_eq!(json(app.get(BILLING, &partner.key).await).await, expected);
}

#[tokio::test]
async fn each_billing_field_has_its_reason() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let cases = [
        (json!({"company_name": "x".repeat(161)}), "company_name_too_long"),
        (json!({"company_name": 12}), "company_name_invalid"),
        (json!({"address_1": "x".repeat(161)}), "address_1_too_long"),
        (json!({"address_2": ["flat 2"]}), "address_2_invalid"),
        (json!({"city": "x".repeat(81)}), "city_too_long"),
        (json!({"postcode": "90210"}), "postcode_invalid"),
        (json!({"postcode": "SW1A"}), "postcode_invalid"),
        (json!({"country": "x".repeat(81)}), "country_too_long"),
        (json!({"country": true}), "country_invalid"),
        (json!({"company_number": "123"}), "company_number_invalid"),
        (json!({"company_number": "SC12345X"}), "company_number_invalid"),
        (json!({"vat_number": "GB1234"}), "vat_number_invalid"),
        (json!({"vat_number": "DE123456789"}), "vat_number_invalid"),
        // A UK number whose check digits do not hold (HMRC's modulus 97 and 9755).
        (json!({"vat_number": "GB123456789"}), "vat_number_invalid"),
        (json!({"vat_number": "123"}), "vat_number_invalid"),
        (json!({"postcode": "!!!"}), "postcode_invalid"),
        (json!({"country": "Narnia"}), "country_invalid"),
        (json!({"country": "France", "postcode": "!!!"}), "postcode_invalid"),
        (json!({"invoice_email": "accounts.acme.example"}), "invoice_email_invalid"),
        (json!({"invoice_email": 1}), "invoice_email_invalid"),
        (json!({"sort_code": "00-00-00"}), "sort_code_unknown"),
    ];
    for (body, code) in cases {
        patch_fails(&app, BILLING, &partner.key, body, &[code]).await;
    }
    assert_eq!(json(app.get(BILLING, &partner.key).await).await["billing"]["company_name"], "");
}

#[tokio::test]
async fn billing_outside_the_united_kingdom_takes_local_formats() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = patch_ok(
        &app,
        BILLING,
        &partner.key,
        json!({"country": "fr", "postcode": "75001", "vat_number": "FR12345678901", "company_number": "RCS 123"}),
    )
    .await;
    // The country by its code is answered by its name.
    assert_eq!(body["billing"]["country"], "France");
    assert_eq!(body["billing"]["postcode"], "75001");
    assert_eq!(body["billing"]["vat_number"], "FR12345678901");

    // Moving back to the United Kingdom checks what is on file.
    patch_fails(
        &app,
        BILLING,
        &partner.key,
        json!({"country": "United Kingdom"}),
        &["postcode_invalid", "company_number_invalid", "vat_number_invalid"],
    )
    .await;
    let body = patch_ok(
        &app,
        BILLING,
        &partner.key,
        json!({"country": "GB", "postcode": "EC1A 1BB", "vat_number": "", "company_number": "01234567"}),
    )
    .await;
    assert_eq!(body["billing"]["country"], "United Kingdom");
    assert_eq!(body["billing"]["postcode"], "EC1A 1BB");
    assert_eq!(body["billing"]["vat_number"], "");
}

#[tokio::test]
async fn a_billing_patch_changes_only_the_fields_given() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    patch_ok(
        &app,
        BILLING,
        &partner.key,
        json!({"company_name": "Acme Ltd", "address_2": "Unit 4", "city": "Leeds", "invoice_email": "ap@acme.example"}),
    )
    .await;
    let body = patch_ok(&app, BILLING, &partner.key, json!({"city": "York", "address_2": ""})).await;
    let billing = &body["billing"];
    assert_eq!(billing["company_name"], "Acme Ltd");
    assert_eq!(billing["city"], "York");
    assert_eq!(billing["address_2"], "");
    assert_eq!(billing["invoice_email"], "ap@acme.example");
    assert_eq!(billing["country"], "United Kingdom");
}

#[tokio::test]
async fn bodies_that_are_not_json_objects_are_invalid_body() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for path in [BRAND, BILLING] {
        for raw in ["[1, 2]", "\"display_name\"", "{\"display_name\": ", "null", "42", ""] {
            let response = app
                .request(Method::PATCH, path, &partner.key)
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await
                .unwrap();
            assert_error(response, 400, "invalid_body").await;
        }
    }
}

#[tokio::test]
async fn members_and_keys_without_the_scope_are_forbidden() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, member) = app.user(&partner, "Mo Member", Role::Member).await;
    let read_only = app.key(partner.user_id, "read", Some(100_000), None).await;
    let write_only = app.key(partner.user_id, "write", Some(100_000), None).await;
    for path in [BRAND, BILLING] {
        let body = json!({"display_name": "Acme"});
        assert_error(app.patch(path, &member, &body).await, 403, "forbidden").await;
        assert_error(app.get(path, &member).await, 403, "forbidden").await;
        assert_error(app.patch(path, &read_only, &body).await, 403, "forbidden").await;
        assert_error(app.get(path, &write_only).await, 403, "forbidden").await;
        assert_error(app.get(path, "").await, 401, "missing_bearer_token").await;
    }
    assert_eq!(app.get(BRAND, &read_only).await.status(), 200);
    assert_eq!(json(app.get(BRAND, &read_only).await).await["profile"]["display_name"], "");
}

#[tokio::test]
async fn each_brand_sees_only_its_own_settings() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    named(&app, &acme).await;
    patch_ok(&app, BILLING, &acme.key, json!({"company_name": "Acme Ltd"})).await;

    let profile = json(app.get(BRAND, &other.key).await).await;
    assert_eq!(profile["brand_id"], "other");
    assert_eq!(profile["profile"]["display_name"], "");
    assert_eq!(json(app.get(BILLING, &other.key).await).await["billing"]["company_name"], "");
    // Another brand's first save is its own first save.
    patch_fails(&app, BRAND, &other.key, json!({"tagline": "x"}), &["display_name_required"]).await;
    patch_ok(&app, BRAND, &other.key, json!({"display_name": "Other Co"})).await;
    assert_eq!(json(app.get(BRAND, &acme.key).await).await["profile"]["display_name"], "Acme Sofas");
}

#[tokio::test]
async fn settings_reject_other_methods_in_json() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let response = app.post(BRAND, &partner.key, &json!({"display_name": "Acme"})).await;
    assert_error(response, 405, "method_not_allowed").await;
    assert_error(app.delete(BILLING, &partner.key).await, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn the_openapi_document_describes_the_settings_endpoints() {
    let app = spawn_app().await;
    let doc = json(app.get("/v1/openapi.json", "").await).await;
    for (path, method) in [
        (BRAND, "get"),
        (BRAND, "patch"),
        (BILLING, "get"),
        (BILLING, "patch"),
        ("/v1/partner/settings/warehouses", "get"),
        ("/v1/partner/settings/warehouses", "post"),
        ("/v1/partner/settings/warehouses/{id}", "patch"),
        ("/v1/partner/settings/warehouses/{id}", "delete"),
        ("/v1/partner/settings/warehouses/{id}/set-default", "post"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    assert!(doc["paths"]["/v1/partner/settings/warehouses"]["post"]["responses"]["201"].is_object());
}
