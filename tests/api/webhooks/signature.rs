//! What a delivery looks like on the wire, and that its signature verifies: with our
//! verifier, with Stripe's official Python one, and with the receiver example in
//! docs/webhooks.md.

use std::process::Command;
use std::time::Duration;

use rehome::jobs::signature::verify;
use serde_json::json;

use super::receiver::{Hit, Receiver};
use super::{configure, emit, webhook_app, ROTATE};
use crate::helpers::json;

#[tokio::test]
async fn a_delivery_is_a_post_of_the_exact_envelope_with_the_spec_headers() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    let secret = configure(&app, &partner, &receiver.url()).await;
    let event = emit(&app, &partner, 1).await;
    let hit = receiver.wait_for_hits(1, Duration::from_secs(5)).await.remove(0);

    assert_eq!(hit.method, "POST");
    assert_eq!(hit.path, "/hooks/rehome-3f9a1c");
    assert_eq!(hit.header("content-type"), "application/json");
    assert_eq!(hit.header("user-agent"), "rehome-webhooks/1.0");
    assert_eq!(hit.header("x-service-event"), "redemption.created");
    assert_eq!(hit.header("x-service-event-id"), event.id);
    assert_eq!(hit.body, event.envelope().as_bytes(), "the stored envelope bytes, unchanged");

    let body: serde_json::Value = serde_json::from_slice(&hit.body).unwrap();
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 4, "{body}");
    assert_eq!(body["id"], event.id.as_str());
    assert_eq!(body["type"], "redemption.created");
    assert!(body["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["data"]["brand_id"], "acme");
    assert_eq!(body["data"]["value_pence"], 12_001);

    let signature = hit.header("x-service-signature");
    let (t, v1) = signature.split_once(',').unwrap();
    let t: i64 = t.strip_prefix("t=").unwrap().parse().unwrap();
    assert!((chrono::Utc::now().timestamp() - t).abs() <= 5, "t is the time of sending");
    let v1 = v1.strip_prefix("v1=").unwrap();
    assert!(v1.len() == 64 && v1.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{v1}");
    assert!(verify(&secret, signature, &hit.body, chrono::Utc::now().timestamp(), 300));
}

#[tokio::test]
async fn signatures_verify_with_the_secret_given_at_configuration_until_it_is_rotated_away() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    let first_secret = configure(&app, &partner, &receiver.url()).await;
    emit(&app, &partner, 1).await;
    let before = receiver.wait_for_hits(1, Duration::from_secs(5)).await.remove(0);

    let rotated = json(app.post(ROTATE, &partner.key, &json!({})).await).await;
    let second_secret = rotated["signing_secret"].as_str().unwrap().to_owned();
    emit(&app, &partner, 2).await;
    let after = receiver.wait_for_hits(2, Duration::from_secs(5)).await.remove(1);

    let now = chrono::Utc::now().timestamp();
    let check = |hit: &Hit, secret: &str| verify(secret, hit.header("x-service-signature"), &hit.body, now, 300);
    assert!(check(&before, &first_secret));
    assert!(!check(&before, &second_secret));
    assert!(check(&after, &second_secret));
    assert!(!check(&after, &first_secret), "the rotated-away secret no longer verifies");

    // Independent verifiers: Stripe's official library, and the example partners copy.
    python_verifies(&before, &first_secret, &second_secret);
    python_verifies(&after, &second_secret, &first_secret);
}

/// Runs Stripe's `WebhookSignature.verify_header` and the Python receiver example of
/// docs/webhooks.md on a real delivery: both must accept `secret` and refuse `other`.
fn python_verifies(hit: &Hit, secret: &str, other: &str) {
    if !crate::helpers::python_tools("Stripe's verifier and the documented receiver", &["stripe"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let payload = dir.path().join("payload.json");
    std::fs::write(&payload, &hit.body).unwrap();
    let script = dir.path().join("verify.py");
    std::fs::write(&script, format!("{}\n\n{DRIVER}", documented_example())).unwrap();
    let output = Command::new("python3")
        .arg(&script)
        .arg(&payload)
        .args([hit.header("x-service-signature"), secret, other])
        .output()
        .expect("run python3");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stdout.trim() == "ok", "python verification failed:\n{stdout}\n{stderr}");
}

const DRIVER: &str = r#"
import sys
import stripe

payload = open(sys.argv[1], "rb").read()
header, secret, other = sys.argv[2], sys.argv[3], sys.argv[4]

stripe.WebhookSignature.verify_header(payload, header, secret, 300)
try:
    stripe.WebhookSignature.verify_header(payload, header, other, 300)
    sys.exit("stripe accepted another secret")
except stripe.SignatureVerificationError:
    pass

handled = []
process = handled.append  # the example's business logic, replaced to count calls
assert verify_signature(payload, header, secret)
assert not verify_signature(payload, header, other)
assert not verify_signature(payload + b" ", header, secret)
headers = {"X-Service-Signature": header}
assert handle_webhook(payload, headers, secret) == 200
assert handle_webhook(payload, headers, secret) == 200, "a duplicate is acknowledged"
assert len(handled) == 1, "a duplicate is not processed twice"
assert handle_webhook(payload, headers, other) == 400
print("ok")
"#;

/// The first ```python block of docs/webhooks.md.
fn documented_example() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/webhooks.md")).unwrap();
    let start = doc.find("```python\n").expect("a python example in docs/webhooks.md") + "```python\n".len();
    let end = start + doc[start..].find("```").expect("end of the example");
    doc[start..end].to_owned()
}
