//! The receiver example of docs/webhooks.md, taken from the page as it is (so the doc and
//! the test cannot drift), run as a real HTTP server that the real rehome server delivers
//! to: it must accept what rehome sends (headers as they arrive, lower-case), process an
//! event once however often it is delivered, and refuse a delivery signed with another
//! secret.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::helpers::{json, Partner, TestApp};
use crate::webhooks::{emit, wait_for_status, webhook_app, DELIVERIES, ROTATE, WEBHOOK};

/// Replaces the example's `process` so the test can see which events were processed.
const DRIVER: &str = r#"
import sys

import receiver


def record(event):
    with open(sys.argv[1], "a") as processed:
        processed.write(event["id"] + "\n")


receiver.process = record
receiver.main()
"#;

/// The receiver of docs/webhooks.md: its first two ```python blocks (the handling, then the
/// server around it), joined as the page says.
fn documented_example() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/webhooks.md")).unwrap();
    let blocks: Vec<&str> = doc
        .split("```python\n")
        .skip(1)
        .map(|rest| rest.split("```").next().expect("end of the example"))
        .take(2)
        .collect();
    assert_eq!(blocks.len(), 2, "docs/webhooks.md: the receiver example in two python blocks");
    assert!(blocks[1].contains("def main()"), "the second block serves the first");
    blocks.join("\n\n")
}

/// The example running as `python3`, killed when dropped.
struct PythonReceiver {
    child: Child,
    port: u16,
    processed: PathBuf,
    _dir: tempfile::TempDir,
}

impl PythonReceiver {
    fn start(secret: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("receiver.py"), documented_example()).unwrap();
        std::fs::write(dir.path().join("driver.py"), DRIVER).unwrap();
        let processed = dir.path().join("processed.txt");
        let mut child = Command::new("python3")
            .arg("driver.py")
            .arg(&processed)
            .current_dir(dir.path())
            .env("REHOME_WEBHOOK_SECRET", secret)
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the example did not start: {line:?}"));
        PythonReceiver { child, port, processed, _dir: dir }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks/rehome", self.port)
    }

    /// The event ids the example's `process` was called with, in order.
    fn processed(&self) -> Vec<String> {
        read_lines(&self.processed)
    }
}

impl Drop for PythonReceiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// Gets the signing secret first (the receiver needs it to start, and rehome needs the
/// receiver's URL): a paused endpoint, then the receiver's URL, enabled.
async fn receiver_for(app: &TestApp, partner: &Partner) -> PythonReceiver {
    let response =
        app.patch(WEBHOOK, &partner.key, &json!({"url": "http://127.0.0.1:9/paused", "enabled": false})).await;
    assert_eq!(response.status(), 200);
    let secret = json(response).await["signing_secret"].as_str().unwrap().to_owned();
    let receiver = PythonReceiver::start(&secret);
    let response = app.patch(WEBHOOK, &partner.key, &json!({"url": receiver.url(), "enabled": true})).await;
    assert_eq!(response.status(), 200, "changing the URL keeps the secret");
    receiver
}

#[tokio::test]
async fn the_documented_receiver_accepts_real_deliveries_once_and_refuses_another_secret() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = receiver_for(&app, &partner).await;

    let event = emit(&app, &partner, 1).await;
    let entry = wait_for_status(&app, &partner, &event.id, "delivered", Duration::from_secs(10)).await;
    assert_eq!(entry["last_status_code"], 200, "{entry}");
    let once = vec![event.id.clone()];
    assert_eq!(receiver.processed(), once);

    // A repeat (here a replay: same id, same bytes, new signature) is acknowledged, not
    // processed again.
    let replay = app.post(&format!("{DELIVERIES}/{}/replay", event.id), &partner.key, &json!({})).await;
    assert_eq!(replay.status(), 200);
    let entry = wait_for_attempts(&app, &partner, &event.id, 2).await;
    assert_eq!(entry["status"], "delivered", "{entry}");
    assert_eq!(receiver.processed(), once, "a repeat is not processed twice");

    // After a rotation the receiver still holds the old secret: it answers 400, which
    // parks the event as dead.
    let rotated = app.post(ROTATE, &partner.key, &json!({})).await;
    assert_eq!(rotated.status(), 200);
    let second = emit(&app, &partner, 2).await;
    let entry = wait_for_status(&app, &partner, &second.id, "dead", Duration::from_secs(10)).await;
    assert_eq!(entry["last_status_code"], 400, "{entry}");
    assert_eq!(receiver.processed(), once);
}

async fn wait_for_attempts(app: &TestApp, partner: &Partner, event_id: &str, attempts: u64) -> serde_json::Value {
    let read = || crate::webhooks::delivery(app, partner, event_id);
    let done = |entry: &serde_json::Value| entry["attempts"].as_u64() >= Some(attempts) && entry["status"] != "pending";
    match crate::helpers::poll(Duration::from_secs(10), || async { Some(read().await).filter(done) }).await {
        Some(entry) => entry,
        None => panic!("never {attempts} attempts: {}", read().await),
    }
}
