use crate::helpers::{assert_error, json, spawn_app, spawn_app_with};

#[tokio::test]
async fn unknown_routes_answer_json_not_found() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    assert_error(app.get("/v1/no/such/thing", &partner.key).await, 404, "not_found").await;
    assert_error(app.get("/nowhere", "").await, 404, "not_found").await;
}

#[tokio::test]
async fn a_wrong_method_answers_json_method_not_allowed() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let response = app.delete("/v1/listings/options", &partner.key).await;
    assert!(response.headers().contains_key("allow"));
    assert_error(response, 405, "method_not_allowed").await;
    assert_error(app.post("/healthz", "", &serde_json::json!({})).await, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn every_response_carries_a_request_id_echoing_a_well_formed_one() {
    let app = spawn_app().await;
    let response = app.client.get(app.url("/healthz")).header("X-Request-Id", "trace-42.a_b:c").send().await.unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-42.a_b:c");

    let response =
        app.client.get(app.url("/v1/listings/options")).header("X-Request-Id", "bad id<>").send().await.unwrap();
    let generated = response.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_ne!(generated, "bad id<>");
    assert_eq!(generated.len(), 32);

    let response = app.get("/nowhere", "").await;
    assert!(response.headers().contains_key("x-request-id"));
}

#[tokio::test]
async fn health_and_readiness() {
    let app = spawn_app().await;
    let live = app.get("/healthz", "").await;
    assert_eq!(live.status(), 200);
    assert!(!live.headers().contains_key("x-ratelimit-limit"), "probes are not rate limited");
    assert_eq!(json(live).await["status"], "ok");
    let ready = app.get("/readyz", "").await;
    assert_eq!(ready.status(), 200);
    assert_eq!(json(ready).await["status"], "ready");
}

#[tokio::test]
async fn readiness_fails_when_the_database_is_gone() {
    let app = spawn_app().await;
    app.store.close().await;
    assert_error(app.get("/readyz", "").await, 503, "not_ready").await;
}

#[tokio::test]
async fn the_openapi_document_and_docs_page_are_served() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi.json", "").await;
    assert_eq!(doc.status(), 200);
    let doc = json(doc).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert!(doc["paths"]["/v1/listings/options"]["get"].is_object());

    let page = app.get("/docs", "").await;
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self';"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(html.contains("spec-url=\"/v1/openapi.json\""));
    // The page works offline: its one script is served by the server itself.
    let script = html.split("<script src=\"").nth(1).and_then(|s| s.split('"').next()).expect("a script");
    assert!(script.starts_with("/docs/redoc."), "{script}");
    let bundle = app.get(script, "").await;
    assert_eq!(bundle.status(), 200);
    assert!(bundle.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
    assert!(bundle.headers()["cache-control"].to_str().unwrap().contains("immutable"));
}

#[tokio::test]
async fn shutdown_finishes_and_returns() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz", "").await.status(), 200);
    tokio::time::timeout(std::time::Duration::from_secs(5), app.stop()).await.expect("server stops");
}

/// Every endpoint that takes a JSON body, with a method and path that reach its body.
const BODY_ENDPOINTS: &[(&str, &str)] = &[
    ("POST", "/v1/listings"),
    ("POST", "/v1/listings/bulk-delete"),
    ("PATCH", "/v1/partner/settings/brand"),
    ("PATCH", "/v1/partner/settings/billing"),
    ("POST", "/v1/partner/settings/warehouses"),
];

fn method(name: &str) -> reqwest::Method {
    name.parse().unwrap()
}

#[tokio::test]
async fn malformed_and_non_object_bodies_answer_invalid_body_everywhere() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (verb, path) in BODY_ENDPOINTS {
        for raw in ["{\"title\": ", "[1, 2]", "\"text\"", "42", ""] {
            let response = app
                .request(method(verb), path, &partner.key)
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await
                .unwrap();
            let body = assert_error(response, 400, "invalid_body").await;
            assert!(body.get("errors").is_none(), "{verb} {path} {raw:?}: {body}");
        }
    }
}

#[tokio::test]
async fn a_non_json_content_type_answers_unsupported_media_type_everywhere() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (verb, path) in BODY_ENDPOINTS {
        for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            let response = app
                .request(method(verb), path, &partner.key)
                .header("content-type", content_type)
                .body("{}")
                .send()
                .await
                .unwrap();
            assert_error(response, 415, "unsupported_media_type").await;
        }
    }
}

#[tokio::test]
async fn a_body_over_the_server_limit_answers_payload_too_large_and_changes_nothing() {
    let app = spawn_app_with(|c| c.max_body_bytes = 64 * 1024).await;
    let partner = app.partner("acme").await;
    let big = serde_json::json!({"title": "x".repeat(70 * 1024), "price_gbp": 10, "condition": "fair",
                                 "category": "Other", "faults": ["None"]});
    assert_error(app.post("/v1/listings", &partner.key, &big).await, 413, "payload_too_large").await;
    let list = json(app.get("/v1/listings?status=any", &partner.key).await).await;
    assert_eq!(list["meta"]["total"], 0);
}

#[tokio::test]
async fn the_default_body_limit_fits_a_ten_mib_photo_in_base64_but_not_much_more() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    // 10 MiB of image bytes is 13,981,016 base64 characters; a body of that size plus JSON
    // framing is read (it fails validation, not the size check).
    let fits = format!("{{\"ids\": [1], \"pad\": \"{}\"}}", "A".repeat(13_981_016));
    let response = app
        .request(reqwest::Method::POST, "/v1/listings/bulk-delete", &partner.key)
        .header("content-type", "application/json")
        .body(fits)
        .send()
        .await
        .unwrap();
    assert_ne!(response.status(), 413);
    let too_big = format!("{{\"pad\": \"{}\"}}", "A".repeat(16 * 1024 * 1024));
    let response = app
        .request(reqwest::Method::POST, "/v1/listings/bulk-delete", &partner.key)
        .header("content-type", "application/json")
        .body(too_big)
        .send()
        .await
        .unwrap();
    assert_error(response, 413, "payload_too_large").await;
}

/// An answer is never larger than the request's reasons allow: a body of thousands of long
/// unknown keys is refused in a few kilobytes, listing the first hundred and a count.
#[tokio::test]
async fn a_flood_of_bad_fields_answers_a_bounded_error() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut body = serde_json::Map::new();
    for n in 0..5_000 {
        body.insert(format!("{}{n}", "x".repeat(200)), serde_json::Value::from(n));
    }
    let response = app.post("/v1/listings", &partner.key, &serde_json::Value::Object(body)).await;
    assert_eq!(response.status(), 400);
    let bytes = response.bytes().await.unwrap();
    assert!(bytes.len() < 40_000, "a {} byte answer", bytes.len());
    let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["code"], "validation_failed");
    assert_eq!(answer["errors"].as_array().unwrap().len(), 100);
    assert!(answer["errors_omitted"].as_u64().unwrap() > 4_800, "{}", answer["errors_omitted"]);
    let errors = answer["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e["field"].as_str().unwrap().ends_with('…')), "{answer}");
    assert!(errors.iter().all(|e| e["field"].as_str().unwrap().chars().count() <= 65));
    app.stop().await;
}
