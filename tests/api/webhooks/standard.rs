//! Integrator conveniences of decisions 11.4: `whsec_` secrets and the Standard Webhooks
//! headers (verified by the `standardwebhooks` and `stripe` Python libraries on real
//! deliveries), rotation with an overlap during which each secret alone verifies, the
//! `ping` test event, and the replay of every dead event.

use std::process::Command;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use super::receiver::{Hit, Receiver, Reply};
use super::{configure, emit, wait_for_status, webhook_app, WEBHOOK};
use crate::helpers::{assert_error, json};

const ROTATE: &str = "/v1/partner/settings/integrations/webhook/rotate-secret";
const TEST: &str = "/v1/partner/settings/integrations/webhook/test";
const REPLAY_DEAD: &str = "/v1/partner/webhooks/deliveries/replay";

/// Both libraries, on one delivery: every secret of `good` verifies it on its own, no
/// secret of `bad` does.
fn libraries_verify(hit: &Hit, good: &[&str], bad: &[&str]) {
    if !crate::helpers::python_tools("the Standard Webhooks and Stripe libraries", &["stripe", "standardwebhooks"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let payload = dir.path().join("payload.json");
    std::fs::write(&payload, &hit.body).unwrap();
    let headers = json!({
        "webhook-id": hit.header("webhook-id"),
        "webhook-timestamp": hit.header("webhook-timestamp"),
        "webhook-signature": hit.header("webhook-signature"),
        "x-service-signature": hit.header("x-service-signature"),
    });
    let output = Command::new("python3")
        .args(["-c", VERIFY])
        .arg(&payload)
        .arg(headers.to_string())
        .arg(json!(good).to_string())
        .arg(json!(bad).to_string())
        .output()
        .expect("run python3");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stdout.trim() == "ok", "verification failed:\n{stdout}\n{stderr}");
}

const VERIFY: &str = r#"
import json, sys
import stripe
from standardwebhooks import Webhook, WebhookVerificationError

payload = open(sys.argv[1], "rb").read()
headers = json.loads(sys.argv[2])
good, bad = json.loads(sys.argv[3]), json.loads(sys.argv[4])
for secret in good:
    Webhook(secret).verify(payload, headers)
    stripe.WebhookSignature.verify_header(payload, headers["x-service-signature"], secret, 300)
for secret in bad:
    try:
        Webhook(secret).verify(payload, headers)
        sys.exit("standardwebhooks accepted " + secret)
    except WebhookVerificationError:
        pass
    try:
        stripe.WebhookSignature.verify_header(payload, headers["x-service-signature"], secret, 300)
        sys.exit("stripe accepted " + secret)
    except stripe.SignatureVerificationError:
        pass
print("ok")
"#;

#[tokio::test]
async fn a_delivery_carries_the_standard_webhooks_headers_both_libraries_verify() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    let secret = configure(&app, &partner, &receiver.url()).await;
    let encoded = secret.strip_prefix("whsec_").expect("a whsec_ secret");
    let key = base64::engine::general_purpose::STANDARD.decode(encoded).expect("base64 after whsec_");
    assert_eq!(key.len(), 32);

    let event = emit(&app, &partner, 1).await;
    let hit = receiver.wait_for_hits(1, Duration::from_secs(5)).await.remove(0);
    assert_eq!(hit.header("webhook-id"), event.id);
    let t = hit.header("x-service-signature").split(',').next().and_then(|t| t.strip_prefix("t=")).unwrap();
    assert_eq!(hit.header("webhook-timestamp"), t, "one instant in both schemes");
    assert!(hit.header("webhook-signature").starts_with("v1,"));
    libraries_verify(&hit, &[&secret], &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]);
    app.stop().await;
}

#[tokio::test]
async fn during_a_rotation_overlap_each_secret_alone_verifies_and_after_it_only_the_new() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    let first = configure(&app, &partner, &receiver.url()).await;

    let rotated = app.post(ROTATE, &partner.key, &json!({"expire_previous_in_hours": 1})).await;
    assert_eq!(rotated.status(), 200);
    let second = json(rotated).await["signing_secret"].as_str().unwrap().to_owned();
    emit(&app, &partner, 1).await;
    let during = receiver.wait_for_hits(1, Duration::from_secs(5)).await.remove(0);
    assert_eq!(during.header("x-service-signature").matches(",v1=").count(), 2);
    assert_eq!(during.header("webhook-signature").split(' ').count(), 2);
    libraries_verify(&during, &[&second, &first], &[]);

    // A rotation without an overlap (an empty body) ends the previous secret at once.
    let again = app.request(reqwest::Method::POST, ROTATE, &partner.key).send().await.unwrap();
    assert_eq!(again.status(), 200);
    let third = json(again).await["signing_secret"].as_str().unwrap().to_owned();
    emit(&app, &partner, 2).await;
    let after = receiver.wait_for_hits(2, Duration::from_secs(5)).await.remove(1);
    assert_eq!(after.header("webhook-signature").split(' ').count(), 1);
    libraries_verify(&after, &[&third], &[&second, &first]);

    for bad in [json!({"expire_previous_in_hours": 73}), json!({"expire_previous_in_hours": "1"})] {
        let body = assert_error(app.post(ROTATE, &partner.key, &bad).await, 400, "validation_failed").await;
        assert_eq!(body["errors"][0]["code"], "expire_previous_in_hours_invalid", "{body}");
    }
    app.stop().await;
}

/// Rotates the secret with an overlap of `hours`; answers the new secret.
async fn rotate(app: &crate::helpers::TestApp, key: &str, hours: i64) -> String {
    let rotated = json(app.post(ROTATE, key, &json!({"expire_previous_in_hours": hours})).await).await;
    rotated["signing_secret"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn two_rotations_in_a_row_keep_every_secret_still_in_its_overlap() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    let first = configure(&app, &partner, &receiver.url()).await;
    let second = rotate(&app, &partner.key, 24).await;
    let third = rotate(&app, &partner.key, 2).await;

    // The first secret's overlap (24 h) has not ended: it still signs, beside the second.
    emit(&app, &partner, 1).await;
    let hit = receiver.wait_for_hits(1, Duration::from_secs(5)).await.remove(0);
    assert_eq!(hit.header("x-service-signature").matches(",v1=").count(), 3);
    assert_eq!(hit.header("webhook-signature").split(' ').count(), 3);
    libraries_verify(&hit, &[&third, &second, &first], &[]);

    // At most five previous secrets sign at once: the oldest overlaps end first.
    let mut secrets = vec![first, second, third];
    for _ in 0..4 {
        secrets.push(rotate(&app, &partner.key, 24).await);
    }
    emit(&app, &partner, 2).await;
    let hit = receiver.wait_for_hits(2, Duration::from_secs(5)).await.remove(1);
    assert_eq!(hit.header("webhook-signature").split(' ').count(), 6, "the current secret and five previous");
    let newest: Vec<&str> = secrets[1..].iter().map(String::as_str).collect();
    libraries_verify(&hit, &newest, &[&secrets[0]]);
    app.stop().await;
}

#[tokio::test]
async fn a_test_event_is_a_signed_ping_through_the_queue_and_the_log() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    assert_error(app.post(TEST, &partner.key, &json!({})).await, 409, "webhook_not_configured").await;

    let receiver = Receiver::start().await;
    let secret = configure(&app, &partner, &receiver.url()).await;
    let sent = app.post(TEST, &partner.key, &json!({})).await;
    assert_eq!(sent.status(), 200);
    let event_id = json(sent).await["event_id"].as_str().unwrap().to_owned();
    let hit = receiver.wait_for_hits(1, Duration::from_secs(5)).await.remove(0);
    let body: Value = serde_json::from_slice(&hit.body).unwrap();
    assert_eq!(body["id"], event_id.as_str());
    assert_eq!(body["type"], "ping");
    assert_eq!(body["data"], json!({"brand_id": "acme"}));
    assert_eq!(hit.header("x-service-event"), "ping");
    libraries_verify(&hit, &[&secret], &[]);
    let logged = wait_for_status(&app, &partner, &event_id, "delivered", Duration::from_secs(5)).await;
    assert_eq!(logged["type"], "ping", "{logged}");
    let audit = json(app.get("/v1/partner/audit-log", &partner.key).await).await;
    assert_eq!(audit["data"][0]["action"], "webhook.test_sent");
    assert_eq!(audit["data"][0]["target"], format!("event:{event_id}"));
    app.stop().await;
}

#[tokio::test]
async fn every_dead_event_is_replayed_in_one_call() {
    let app = webhook_app(|_| {}).await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Status(410));
    configure(&app, &acme, &receiver.url()).await;
    configure(&app, &other, &receiver.url()).await;
    let first = emit(&app, &acme, 1).await;
    let second = emit(&app, &acme, 2).await;
    for event in [&first, &second] {
        wait_for_status(&app, &acme, &event.id, "dead", Duration::from_secs(5)).await;
    }

    for (bad, code) in [
        (json!({}), "status_required"),
        (json!({"status": "pending"}), "status_invalid"),
        (json!({"status": "dead", "since": "yesterday"}), "since_invalid"),
        (json!({"status": "dead", "extra": 1}), "extra_unknown"),
    ] {
        let body = assert_error(app.post(REPLAY_DEAD, &acme.key, &bad).await, 400, "validation_failed").await;
        let codes: Vec<&str> = body["errors"].as_array().unwrap().iter().filter_map(|e| e["code"].as_str()).collect();
        assert!(codes.contains(&code), "{bad} → {body}");
    }
    // Nothing of another brand's is touched; a future `since` replays nothing.
    let none = app.post(REPLAY_DEAD, &other.key, &json!({"status": "dead"})).await;
    assert_eq!(json(none).await, json!({"replayed": 0}));
    let later = app.post(REPLAY_DEAD, &acme.key, &json!({"status": "dead", "since": "2099-01-01T00:00:00Z"})).await;
    assert_eq!(json(later).await, json!({"replayed": 0}));

    receiver.otherwise(Reply::Status(200));
    let replayed = app.post(REPLAY_DEAD, &acme.key, &json!({"status": "dead"})).await;
    assert_eq!(replayed.status(), 200);
    assert_eq!(json(replayed).await, json!({"replayed": 2}));
    for event in [&first, &second] {
        wait_for_status(&app, &acme, &event.id, "delivered", Duration::from_secs(5)).await;
    }
    let audit = json(app.get("/v1/partner/audit-log", &acme.key).await).await;
    assert_eq!(audit["data"][0]["action"], "webhook.deliveries_replayed");

    app.patch(WEBHOOK, &acme.key, &json!({"enabled": false})).await;
    assert_error(app.post(REPLAY_DEAD, &acme.key, &json!({"status": "dead"})).await, 409, "webhook_not_configured")
        .await;
    app.stop().await;
}
