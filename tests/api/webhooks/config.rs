//! Configuring the endpoint: the secret shown once, rotation, validation.

use std::time::Duration;

use rehome::domain::user::Role;
use serde_json::json;

use super::receiver::Receiver;
use super::{configure, emit, wait_for_status, webhook_app, DELIVERIES, ROTATE, WEBHOOK};
use crate::helpers::{assert_error, json, spawn_app, spawn_app_with};

#[tokio::test]
async fn before_configuration_the_webhook_reads_as_unset() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let body = json(app.get(WEBHOOK, &partner.key).await).await;
    assert_eq!(body["brand_id"], "acme");
    assert_eq!(body["url"], json!(null));
    assert_eq!(body["enabled"], false);
    assert_eq!(body["signing_secret_hint"], json!(null));
    assert!(body.get("signing_secret").is_none());
}

#[tokio::test]
async fn the_first_url_returns_the_signing_secret_once_and_later_answers_show_a_hint() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let response =
        app.patch(WEBHOOK, &partner.key, &json!({"url": "https://hooks.example.com/a", "enabled": true})).await;
    assert_eq!(response.status(), 200);
    let created = json(response).await;
    let secret = created["signing_secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_") && secret.len() >= 32, "{secret}");
    assert_eq!(created["url"], "https://hooks.example.com/a");
    assert_eq!(created["enabled"], true);
    let hint = format!("whsec_…{}", &secret[secret.len() - 4..]);
    assert_eq!(created["signing_secret_hint"], hint);

    let read = json(app.get(WEBHOOK, &partner.key).await).await;
    assert!(read.get("signing_secret").is_none(), "{read}");
    assert_eq!(read["signing_secret_hint"], hint);

    let changed =
        json(app.patch(WEBHOOK, &partner.key, &json!({"url": "https://hooks.example.com/b", "enabled": false})).await)
            .await;
    assert!(changed.get("signing_secret").is_none(), "a new URL keeps the secret: {changed}");
    assert_eq!(changed["url"], "https://hooks.example.com/b");
    assert_eq!(changed["enabled"], false);
    assert_eq!(changed["signing_secret_hint"], hint);

    let resumed = json(app.patch(WEBHOOK, &partner.key, &json!({"enabled": true})).await).await;
    assert_eq!(
        (resumed["url"].as_str(), resumed["enabled"].as_bool()),
        (Some("https://hooks.example.com/b"), Some(true))
    );
}

#[tokio::test]
async fn rotating_the_secret_returns_a_new_one_once_and_needs_a_configured_endpoint() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    assert_error(app.post(ROTATE, &partner.key, &json!({})).await, 404, "webhook_not_configured").await;
    let first = configure(&app, &partner, "https://hooks.example.com/a").await;
    let response = app.post(ROTATE, &partner.key, &json!({})).await;
    assert_eq!(response.status(), 200);
    let rotated = json(response).await;
    let second = rotated["signing_secret"].as_str().unwrap();
    assert!(second.starts_with("whsec_"));
    assert_ne!(second, first);
    // Without an overlap the previous secret stops at the rotation itself.
    assert_eq!(rotated["previous_expires_at"], rotated["secret_rotated_at"], "{rotated}");
    let read = json(app.get(WEBHOOK, &partner.key).await).await;
    assert_eq!(read["signing_secret_hint"], format!("whsec_…{}", &second[second.len() - 4..]));
    assert!(read.get("signing_secret").is_none());
    assert!(read.get("previous_expires_at").is_none(), "only the rotation's answer says it");
    // With 24 hours' overlap: a day after the rotation.
    let overlapping = json(app.post(ROTATE, &partner.key, &json!({"expire_previous_in_hours": 24})).await).await;
    let at = |v: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    let gap = at(&overlapping["previous_expires_at"]) - at(&overlapping["secret_rotated_at"]);
    assert_eq!(gap, chrono::TimeDelta::hours(24), "{overlapping}");
}

#[tokio::test]
async fn webhook_bodies_are_validated_with_every_reason_named() {
    let app = spawn_app().await; // https only, private addresses refused
    let partner = app.partner("acme").await;
    let (app, key) = (&app, partner.key.as_str());
    let reasons = move |body: serde_json::Value| async move {
        let response = app.patch(WEBHOOK, key, &body).await;
        assert_error(response, 400, "validation_failed").await["message"].as_str().unwrap().to_owned()
    };
    assert_eq!(reasons(json!({"enabled": true})).await, "url_required");
    assert_eq!(reasons(json!({})).await, "url_required");
    assert_eq!(reasons(json!({"url": ""})).await, "url_required");
    assert_eq!(reasons(json!({"url": "http://hooks.example.com/x"})).await, "url_invalid");
    assert_eq!(reasons(json!({"url": "not a url"})).await, "url_invalid");
    assert_eq!(reasons(json!({"url": 7})).await, "url_invalid");
    assert_eq!(reasons(json!({"url": "https://hooks.example.com/x", "enabled": "yes"})).await, "enabled_invalid");
    assert_eq!(reasons(json!({"url": "https://hooks.example.com/x", "secret": "mine"})).await, "secret_unknown");
    assert_eq!(reasons(json!({"url": format!("https://h.example.com/{}", "a".repeat(2100))})).await, "url_too_long");
    for private in [
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://10.0.0.5/hook",
        "https://169.254.169.254/latest",
        "https://[::1]/hook",
        "https://[::ffff:192.168.1.1]/hook",
        "https://100.64.0.1/hook",
    ] {
        assert_eq!(reasons(json!({ "url": private })).await, "url_invalid", "{private}");
    }
    let response = app
        .request(reqwest::Method::PATCH, WEBHOOK, &partner.key)
        .header("content-type", "application/json")
        .body("[1]")
        .send()
        .await
        .unwrap();
    assert_error(response, 400, "invalid_body").await;
    assert_eq!(json(app.get(WEBHOOK, &partner.key).await).await["url"], json!(null), "nothing was saved");
}

#[tokio::test]
async fn plain_http_is_accepted_only_when_the_server_allows_it() {
    let strict = spawn_app_with(|c| c.allow_private_network = true).await;
    let partner = strict.partner("acme").await;
    let response = strict.patch(WEBHOOK, &partner.key, &json!({"url": "http://127.0.0.1:9/hook"})).await;
    assert_error(response, 400, "validation_failed").await;
    let relaxed = webhook_app(|_| {}).await;
    let partner = relaxed.partner("acme").await;
    configure(&relaxed, &partner, "http://127.0.0.1:9/hook").await;
}

#[tokio::test]
async fn webhook_endpoints_need_an_admin_key_with_the_right_scope() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    assert_error(app.get(WEBHOOK, "").await, 401, "missing_bearer_token").await;
    assert_error(app.get(DELIVERIES, "").await, 401, "missing_bearer_token").await;
    let (_, member) = app.user(&partner, "Mo Member", Role::Member).await;
    assert_error(app.get(WEBHOOK, &member).await, 403, "forbidden").await;
    let read_only = app.key(partner.user_id, "read", Some(1000), None).await;
    assert_error(app.patch(WEBHOOK, &read_only, &json!({"url": "https://h.example.com/x"})).await, 403, "forbidden")
        .await;
    assert_error(app.post(ROTATE, &read_only, &json!({})).await, 403, "forbidden").await;
}

#[tokio::test]
async fn events_wait_for_an_endpoint_and_are_delivered_once_one_is_configured() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let event = emit(&app, &partner, 1).await;
    let waiting = super::delivery(&app, &partner, &event.id).await;
    assert_eq!(waiting["status"], "pending");
    assert_eq!(waiting["last_error"], "no_endpoint");
    assert_eq!(waiting["next_attempt_at"], json!(null));
    assert_eq!(waiting["attempts"], 0);

    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let hits = receiver.wait_for_hits(1, Duration::from_secs(5)).await;
    assert_eq!(hits[0].event_id(), event.id);
    wait_for_status(&app, &partner, &event.id, "delivered", Duration::from_secs(5)).await;

    // Paused: new events wait, and go out when deliveries resume.
    app.patch(super::WEBHOOK, &partner.key, &json!({"enabled": false})).await;
    let paused = emit(&app, &partner, 2).await;
    super::settled(&app).await;
    assert_eq!(receiver.hits().len(), 1);
    assert_eq!(super::delivery(&app, &partner, &paused.id).await["last_error"], "no_endpoint");
    app.patch(super::WEBHOOK, &partner.key, &json!({"enabled": true})).await;
    let hits = receiver.wait_for_hits(2, Duration::from_secs(5)).await;
    assert_eq!(hits[1].event_id(), paused.id);
}

#[tokio::test]
async fn an_event_whose_window_passes_without_an_endpoint_is_dead_with_no_endpoint() {
    let app = webhook_app(|c| c.webhook_retry_window_s = 1).await;
    let partner = app.partner("acme").await;
    let event = emit(&app, &partner, 1).await;
    let dead = wait_for_status(&app, &partner, &event.id, "dead", Duration::from_secs(5)).await;
    assert_eq!(dead["last_error"], "no_endpoint");
    assert_eq!(dead["attempts"], 0);
}
