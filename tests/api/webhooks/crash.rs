//! The real binary killed with SIGKILL in the middle of deliveries loses no event.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rehome::domain::event::{Event, EventType};
use rehome::domain::user::{Role, Scopes};
use rehome::store::Store;
use rehome::usecases::accounts;
use serde_json::json;

use super::receiver::{Receiver, Reply};
use super::WEBHOOK;
use crate::helpers::{binary_env, open_store, TestDb};

const BIN: &str = env!("CARGO_BIN_EXE_rehome");

pub(super) struct Serving(pub(super) Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(url: &str, media: &Path, port: u16) -> Serving {
    serve_with(url, media, port, &[])
}

/// `rehome serve` on the database at `url` with fast webhook settings and the extra
/// environment `env` (which the data key of [`binary_env`], on PostgreSQL, precedes).
pub(super) fn serve_with(url: &str, media: &Path, port: u16, env: &[(&str, &str)]) -> Serving {
    let child = Command::new(BIN)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env_remove("REHOME_DATA_KEY")
        .env_remove("REHOME_DATA_KEY_FILE")
        .envs(binary_env(url))
        .envs(env.iter().copied())
        .env("REHOME_MEDIA_DIR", media)
        .env("REHOME_ALLOW_PRIVATE_NETWORK", "true")
        .env("REHOME_WEBHOOK_ALLOW_HTTP", "true")
        .env("REHOME_WEBHOOK_TIMEOUT_MS", "1000")
        .env("REHOME_WEBHOOK_RETRY_BASE_MS", "100")
        .env("REHOME_WEBHOOK_POLL_MS", "100")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rehome");
    Serving(child)
}

pub(super) use crate::helpers::wait_ready;

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn killing_the_server_mid_delivery_and_restarting_it_delivers_every_event_at_least_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "crash.db").await;
    let media = dir.path().join("media");
    // The test process writes to the same database as the server, as another service would.
    // On SQLite it seals event bodies with the key file it creates beside the database,
    // which the server (no REHOME_DATA_KEY) reads on each start; on PostgreSQL both are given
    // the same key. Either way the events stay deliverable.
    let store = if db.is_postgres() {
        open_store(&db.url).await
    } else {
        let store = Store::connect(&db.url).await.unwrap();
        assert_eq!(std::fs::read(dir.path().join("rehome.key")).unwrap().len(), 32);
        store
    };
    let brand = accounts::create_brand(&store, "acme", "Acme").await.unwrap();
    let user = accounts::create_user(&store, "acme", "Ada", "ada@acme.example", Role::Admin).await.unwrap();
    let key = accounts::create_key(&store, user.id, "read,write".parse::<Scopes>().unwrap(), None, Some(10_000))
        .await
        .unwrap()
        .secret;

    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Slow(Duration::from_millis(200), 200));

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut first = serve(&db.url, &media, port);
    wait_ready(&base).await;
    let response = reqwest::Client::new()
        .patch(format!("{base}{WEBHOOK}"))
        .bearer_auth(&key)
        .json(&json!({ "url": receiver.url() }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let mut ids = HashSet::new();
    for n in 0..30 {
        let event = Event::new(brand.id, EventType::RedemptionCreated, json!({"id": format!("red_{n}")})).unwrap();
        store.emit_event(&event).await.unwrap();
        ids.insert(event.id);
    }
    receiver.wait_for_hits(3, Duration::from_secs(10)).await;
    first.0.kill().expect("SIGKILL"); // std's kill() is SIGKILL on Unix
    first.0.wait().unwrap();
    let at_kill = receiver.hits().len();
    let counts = store.webhook_status_counts().await.unwrap();
    assert!(counts.get("pending").copied().unwrap_or(0) > 0, "killed before the work was done: {counts:?}");
    assert!(at_kill < ids.len(), "killed mid-delivery");

    let second = serve(&db.url, &media, port);
    wait_ready(&base).await;
    let hits = receiver
        .wait_until(Duration::from_secs(30), "every event", |hits| {
            let seen: HashSet<String> = hits.iter().map(|h| h.event_id()).collect();
            ids.iter().all(|id| seen.contains(id))
        })
        .await;
    assert!(hits.iter().all(|h| ids.contains(&h.event_id())));
    let counts = || async { store.webhook_status_counts().await.unwrap() };
    let all = || async { (counts().await.get("delivered").copied() == Some(ids.len() as i64)).then_some(()) };
    if crate::helpers::poll(Duration::from_secs(10), all).await.is_none() {
        panic!("not all recorded as delivered: {:?}", counts().await);
    }
    drop(second);
}
