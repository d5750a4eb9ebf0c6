use crate::helpers::{assert_error, json, spawn_app};

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
    let html = page.text().await.unwrap();
    assert!(html.contains("/v1/listings/options"));
    assert!(!html.contains("<script src"), "the page must work offline");
}

#[tokio::test]
async fn shutdown_finishes_and_returns() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz", "").await.status(), 200);
    tokio::time::timeout(std::time::Duration::from_secs(5), app.stop()).await.expect("server stops");
}
