//! What generated clients rely on beyond the document's shape (issue 32): a created
//! listing's `ETag`, an idempotent replay's kept headers (decisions 11.5), the same JSON in
//! another layout being the same request (11.6), and the public documents outside every
//! rate limit, revalidated with `If-None-Match` (11.7).

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app, spawn_app_with};
use crate::listings::listing;

const KEY_HEADER: &str = "Idempotency-Key";

fn etag(response: &reqwest::Response) -> String {
    response.headers().get("etag").expect("an ETag").to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_created_listing_answers_the_etag_a_get_of_it_gives() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let created = app.post("/v1/listings", &partner.key, &listing(json!({}))).await;
    assert_eq!(created.status(), 201);
    let tag = etag(&created);
    let id = json(created).await["id"].as_i64().unwrap();
    let read = app.get(&format!("/v1/listings/{id}"), &partner.key).await;
    assert_eq!(etag(&read), tag);
    // It works as `If-Match` straight away.
    let patch = app
        .request(Method::PATCH, &format!("/v1/listings/{id}"), &partner.key)
        .header("If-Match", &tag)
        .json(&json!({"title": "Renamed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn a_replayed_patch_answers_its_kept_body_with_its_kept_etag_though_the_listing_moved_on() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = json(app.post("/v1/listings", &partner.key, &listing(json!({}))).await).await["id"].as_i64().unwrap();
    let path = format!("/v1/listings/{id}");
    let keyed = || {
        app.request(Method::PATCH, &path, &partner.key).header(KEY_HEADER, "rename-1").json(&json!({"title": "First"}))
    };
    let first = keyed().send().await.unwrap();
    assert_eq!(first.status(), 200);
    let first_tag = etag(&first);
    let first_body = first.bytes().await.unwrap();

    // Someone else changes it: the listing's tag moves on.
    let moved = app.patch(&path, &partner.key, &json!({"title": "Second"})).await;
    assert_ne!(etag(&moved), first_tag);

    // The replay is the first answer, kept: its body and its tag (decisions 11.5).
    let replay = keyed().send().await.unwrap();
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(etag(&replay), first_tag);
    assert_eq!(replay.bytes().await.unwrap(), first_body);

    // A create's replay carries its ETag too.
    let create = || app.request(Method::POST, "/v1/listings", &partner.key).header(KEY_HEADER, "create-1");
    let body = listing(json!({"title": "Kept tag"}));
    let made = create().json(&body).send().await.unwrap();
    let again = create().json(&body).send().await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(etag(&again), etag(&made));
    app.stop().await;
}

#[tokio::test]
async fn the_same_json_pretty_printed_or_reordered_is_the_same_request() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = listing(json!({"title": "Layout sofa", "exposed_to": ["Dogs", "Cats"]}));
    let send = |text: String| {
        app.request(Method::POST, "/v1/listings", &partner.key)
            .header(KEY_HEADER, "layout-1")
            .header("content-type", "application/json")
            .body(text)
            .send()
    };
    let first = send(serde_json::to_string(&body).unwrap()).await.unwrap();
    assert_eq!(first.status(), 201);
    let first_body: Value = json(first).await;

    // Pretty-printed, keys in reverse order: the same value, so the kept answer.
    let object = body.as_object().unwrap();
    let reversed: Vec<String> = object.iter().rev().map(|(k, v)| format!("\n    {:?}: {}", k, v)).collect();
    let pretty = format!("{{{}\n}}\n", reversed.join(","));
    assert_ne!(pretty, serde_json::to_string(&body).unwrap());
    let again = send(pretty).await.unwrap();
    assert_eq!(again.status(), 201, "the same JSON value is the same request");
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await["id"], first_body["id"]);

    // Another value (the array's order is part of it) is another request.
    let mut other = body.clone();
    other["exposed_to"] = json!(["Cats", "Dogs"]);
    assert_error(send(other.to_string()).await.unwrap(), 422, "idempotency_key_reused").await;
    app.stop().await;
}

#[tokio::test]
async fn the_document_and_the_docs_page_spend_no_quota_and_answer_304_when_unchanged() {
    let app = spawn_app_with(|config| config.rate_limit = 3).await;
    // A burst of keyless fetches, well over the per-address quota.
    for _ in 0..20 {
        for path in ["/v1/openapi.json", "/docs"] {
            let response = app.get(path, "").await;
            assert_eq!(response.status(), 200, "{path}");
            assert!(response.headers().get("x-ratelimit-remaining").is_none(), "{path} is outside every limit");
        }
    }
    // The address's quota is untouched.
    let keyless = app.get("/v1/listings", "").await;
    assert_eq!(keyless.status(), 401);
    assert_eq!(keyless.headers()["x-ratelimit-remaining"], "2");

    for path in ["/v1/openapi.json", "/docs"] {
        let full = app.get(path, "").await;
        let tag = etag(&full);
        assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
        assert_eq!(full.headers()["cache-control"], "no-cache");
        let cached = app.request(Method::GET, path, "").header("If-None-Match", &tag).send().await.unwrap();
        assert_eq!(cached.status(), 304, "{path}");
        assert_eq!(etag(&cached), tag);
        assert!(cached.bytes().await.unwrap().is_empty());
        let stale = app.request(Method::GET, path, "").header("If-None-Match", "\"other\"").send().await.unwrap();
        assert_eq!(stale.status(), 200);
    }
    app.stop().await;
}

/// The document and the docs page stand alone: they never send a reader to a document the
/// reader does not have (the project's decisions, the issues).
#[tokio::test]
async fn the_reference_never_cites_an_internal_document() {
    let app = crate::helpers::spawn_app().await;
    let internal = regex::Regex::new(r"(?i)\bdecisions(\.md)?\s+(section\s+)?\d|\bissue\s+\d").unwrap();
    for path in ["/v1/openapi.json", "/docs"] {
        let text = app.get(path, "").await.text().await.unwrap();
        let cited: Vec<&str> = internal
            .find_iter(&text)
            .map(|m| &text[text.floor_char_boundary(m.start().saturating_sub(80))..m.end()])
            .collect();
        assert!(cited.is_empty(), "{path} cites {cited:?}");
    }
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")).unwrap() {
        let path = entry.unwrap().path();
        // The performance log is the engineers' record of the issues' figures, not a guide.
        if path.extension().is_some_and(|e| e == "md") && !path.ends_with("performance.md") {
            let text = std::fs::read_to_string(&path).unwrap();
            let cited: Vec<&str> = internal.find_iter(&text).map(|m| m.as_str()).collect();
            assert!(cited.is_empty(), "{} cites {cited:?}", path.display());
        }
    }
    app.stop().await;
}
