//! `Idempotency-Key` on writes under `/v1` (decisions 11.1): a repeat replays the first
//! answer byte for byte and changes nothing; another request with the key is refused; a
//! failed first answer is not kept; concurrent duplicates run once, on one node or two; keys
//! belong to one API key and expire.

use std::time::Duration;

use reqwest::{Method, Response};
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, on_postgres, second_node, spawn_app, spawn_app_with, TestApp};
use crate::listings::listing;

const KEY_HEADER: &str = "Idempotency-Key";

async fn post_keyed(app: &TestApp, base: &str, key: &str, idem: &str, body: &Value) -> Response {
    app.client
        .post(format!("{base}/v1/listings"))
        .bearer_auth(key)
        .header(KEY_HEADER, idem)
        .json(body)
        .send()
        .await
        .expect("POST")
}

async fn listing_count(app: &TestApp, key: &str) -> i64 {
    let page = json(app.get("/v1/listings?status=any", key).await).await;
    page["meta"]["total"].as_i64().unwrap_or_else(|| panic!("no total in {page}"))
}

#[tokio::test]
async fn a_repeat_replays_the_first_answer_byte_for_byte_and_creates_nothing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = listing(json!({"title": "Idempotent sofa"}));
    let first = post_keyed(&app, &app.base, &partner.key, "order-7f3a", &body).await;
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_bytes = first.bytes().await.unwrap();

    let again = post_keyed(&app, &app.base, &partner.key, "order-7f3a", &body).await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert!(again.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    assert!(again.headers().get("x-ratelimit-remaining").is_some(), "a replay is still a counted request");
    assert_eq!(again.bytes().await.unwrap(), first_bytes);
    assert_eq!(listing_count(&app, &partner.key).await, 1);

    // Without the header, the same body creates another.
    assert_eq!(app.post("/v1/listings", &partner.key, &body).await.status(), 201);
    assert_eq!(listing_count(&app, &partner.key).await, 2);
    app.stop().await;
}

/// The kept answer is stored compactly (issue 52 item 5): a listing's answer deflated with
/// the preset dictionary, in well under half its bytes, and replayed byte for byte.
#[tokio::test]
async fn a_kept_answer_is_stored_deflated_and_replayed_whole() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = listing(json!({"title": "Compact sofa", "description": "Kept in a third of its bytes."}));
    let first = post_keyed(&app, &app.base, &partner.key, "compact-1", &body).await;
    assert_eq!(first.status(), 201);
    let first_bytes = first.bytes().await.unwrap();
    let raw = app.db.raw().await;
    let (stored, packing): (i64, i64) = crate::helpers::on_raw!(&raw, |pool| sqlx::query_as(
        "SELECT CAST(LENGTH(body) AS BIGINT), body_deflated FROM idempotency_keys WHERE idem_key = 'compact-1'"
    )
    .fetch_one(pool)
    .await
    .unwrap());
    assert_eq!(packing, 1, "deflated with the first preset dictionary");
    assert!(stored * 2 < first_bytes.len() as i64, "{stored} bytes stored for {} answered", first_bytes.len());
    let again = post_keyed(&app, &app.base, &partner.key, "compact-1", &body).await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.bytes().await.unwrap(), first_bytes);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn the_key_with_another_request_is_refused_and_a_failed_first_answer_is_not_kept() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = listing(json!({}));
    assert_eq!(post_keyed(&app, &app.base, &partner.key, "k1", &body).await.status(), 201);
    let other_body = listing(json!({"title": "Another sofa"}));
    assert_error(post_keyed(&app, &app.base, &partner.key, "k1", &other_body).await, 422, "idempotency_key_reused")
        .await;
    let id = json(app.get("/v1/listings", &partner.key).await).await["data"][0]["id"].as_i64().unwrap();
    let patch = app
        .request(Method::PATCH, &format!("/v1/listings/{id}"), &partner.key)
        .header(KEY_HEADER, "k1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_error(patch, 422, "idempotency_key_reused").await;

    // A 400 is not kept: the corrected request runs under the same key.
    let bad = listing(json!({"price_gbp": -1}));
    assert_error(post_keyed(&app, &app.base, &partner.key, "k2", &bad).await, 400, "validation_failed").await;
    assert_eq!(post_keyed(&app, &app.base, &partner.key, "k2", &body).await.status(), 201);
    assert_eq!(listing_count(&app, &partner.key).await, 2);

    for bad_key in ["", "has space", &"x".repeat(256), "tab\there"] {
        let response = post_keyed(&app, &app.base, &partner.key, bad_key, &body).await;
        assert_error(response, 400, "idempotency_key_invalid").await;
    }
    assert_eq!(listing_count(&app, &partner.key).await, 2, "a refused key changes nothing");
    app.stop().await;
}

#[tokio::test]
async fn keys_belong_to_one_api_key_and_expire() {
    let app = spawn_app_with(|config| config.idempotency_ttl_s = 1).await;
    let partner = app.partner("acme").await;
    let (_, other_key) = app.user(&partner, "Bea Admin", rehome::domain::user::Role::Admin).await;
    let body = listing(json!({}));
    assert_eq!(post_keyed(&app, &app.base, &partner.key, "shared", &body).await.status(), 201);
    let by_other = post_keyed(&app, &app.base, &other_key, "shared", &body).await;
    assert_eq!(by_other.status(), 201);
    assert!(by_other.headers().get("idempotent-replayed").is_none(), "another API key's request runs anew");
    assert_eq!(listing_count(&app, &partner.key).await, 2);

    app.advance_clock(Duration::from_millis(1500));
    let after = post_keyed(&app, &app.base, &partner.key, "shared", &body).await;
    assert_eq!(after.status(), 201);
    assert!(after.headers().get("idempotent-replayed").is_none(), "an expired key runs anew");
    assert_eq!(listing_count(&app, &partner.key).await, 3);
    app.stop().await;
}

/// Fires `n` identical keyed requests at once at `bases` in turn: exactly one runs; every
/// other answer is a replay of its body or 409 `idempotency_key_in_use`.
async fn concurrent_duplicates_run_once(app: &TestApp, bases: &[String], key: &str, n: usize) {
    let body = listing(json!({"title": "Raced sofa"}));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let request = app
                .client
                .post(format!("{}/v1/listings", bases[i % bases.len()]))
                .bearer_auth(key)
                .header(KEY_HEADER, "race-1")
                .json(&body);
            tokio::spawn(async move { request.send().await.expect("POST") })
        })
        .collect();
    let mut created = Vec::new();
    let mut in_use = 0;
    for task in tasks {
        let answer = task.await.expect("request task");
        match answer.status().as_u16() {
            201 => created.push(json(answer).await["id"].as_i64().unwrap()),
            409 => {
                let body = json(answer).await;
                assert_eq!(body["code"], "idempotency_key_in_use", "{body}");
                in_use += 1;
            }
            other => panic!("unexpected {other}: {}", json(answer).await),
        }
    }
    created.dedup();
    assert_eq!(created.len(), 1, "every 201 is the one listing: {created:?}");
    assert_eq!(listing_count(app, key).await, 1, "exactly one listing ({in_use} answered in use)");
}

#[tokio::test]
async fn twenty_concurrent_duplicates_create_one_listing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    concurrent_duplicates_run_once(&app, std::slice::from_ref(&app.base), &partner.key, 20).await;
    app.stop().await;
}

#[tokio::test]
async fn twenty_concurrent_duplicates_on_two_nodes_create_one_listing() {
    if !on_postgres() {
        eprintln!("twenty_concurrent_duplicates_on_two_nodes: skipped: needs REHOME_TEST_POSTGRES");
        return;
    }
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (second, _stop) = second_node(&app).await;
    concurrent_duplicates_run_once(&app, &[app.base.clone(), second], &partner.key, 20).await;
    app.stop().await;
}

/// Keys of concurrent requests are claimed and kept together (a batch per write): sixty
/// requests with thirty keys, each key sent twice at once, on one node or two, create thirty
/// listings; every key's repeat afterwards replays its own listing.
#[tokio::test]
async fn many_keys_at_once_each_run_once_and_replay_their_own_answer() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut bases = vec![app.base.clone()];
    let _stop = if on_postgres() {
        let (second, stop) = second_node(&app).await;
        bases.push(second);
        Some(stop)
    } else {
        None
    };
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let key = format!("batch-{}", i % 30);
            let body = listing(json!({"title": format!("Batched sofa {}", i % 30)}));
            let request = app
                .client
                .post(format!("{}/v1/listings", bases[i % bases.len()]))
                .bearer_auth(&partner.key)
                .header(KEY_HEADER, key)
                .json(&body);
            tokio::spawn(async move { request.send().await.expect("POST") })
        })
        .collect();
    for task in tasks {
        let answer = task.await.expect("request task");
        assert!([201, 409].contains(&answer.status().as_u16()), "{}", json(answer).await);
    }
    assert_eq!(listing_count(&app, &partner.key).await, 30);
    for n in 0..30 {
        let body = listing(json!({"title": format!("Batched sofa {n}")}));
        let again = post_keyed(&app, &app.base, &partner.key, &format!("batch-{n}"), &body).await;
        assert_eq!(again.status(), 201);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(json(again).await["title"], format!("Batched sofa {n}"));
    }
    app.stop().await;
}

#[tokio::test]
async fn a_wrong_method_is_405_whatever_its_key() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let keyed = |method: Method| {
        app.request(method, "/v1/partner/settings/integrations/keys", &partner.key)
            .header("Idempotency-Key", "same-key-1")
            .json(&json!({"label": "Stock sync"}))
            .send()
    };
    assert_eq!(keyed(Method::POST).await.unwrap().status(), 201);
    // Not a repeat of the POST, nor its key reused for another request: no such operation.
    assert_error(keyed(Method::PATCH).await.unwrap(), 405, "method_not_allowed").await;
    assert_error(keyed(Method::PUT).await.unwrap(), 405, "method_not_allowed").await;
    let unknown = app
        .request(Method::POST, "/v1/no-such-thing", &partner.key)
        .header("Idempotency-Key", "same-key-1")
        .send()
        .await
        .unwrap();
    assert_error(unknown, 404, "not_found").await;
}
