//! Work queued before a stop is finished by the next server on the same database.

use std::net::SocketAddr;
use std::path::Path;

use image::ImageFormat;
use rehome::app::Server;
use rehome::config::Config;
use serde_json::json;
use tokio::sync::oneshot;

use super::origin::Origin;
use super::*;
use crate::helpers::{open_store, TestDb};
use crate::listings::listing;

struct Running {
    base: String,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn start(dir: &Path, db: &TestDb, paused: bool) -> Running {
    let config = Config {
        addr: "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        media_dir: dir.join("media"),
        allow_private_network: true,
        photo_jobs_paused: paused,
        ..Config::default()
    };
    let store = open_store(&db.url).await;
    let server = Server::bind(config, store).await.unwrap();
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    Running { base, stop, task }
}

impl Running {
    async fn halt(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn thumbnails_and_imports_pending_at_a_stop_are_finished_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(dir.path()).await;
    let origin = Origin::start().await;
    let first = start(dir.path(), &db, true).await;
    let store = open_store(&db.url).await;
    rehome::usecases::accounts::create_brand(&store, "acme", "Acme").await.unwrap();
    let user = rehome::usecases::accounts::create_user(
        &store,
        "acme",
        "Ada",
        "ada@acme.example",
        rehome::domain::user::Role::Admin,
    )
    .await
    .unwrap();
    let key =
        rehome::usecases::accounts::create_key(&store, user.id, "read,write".parse().unwrap(), None, Some(10_000))
            .await
            .unwrap()
            .secret;
    let client = reqwest::Client::new();
    let body = json!({ "image_base64": b64(&image_bytes(ImageFormat::Jpeg, 800, 400)) });
    let photo: Value = client
        .post(format!("{}{UPLOAD}", first.base))
        .bearer_auth(&key)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let photo_id = photo["attachment_id"].as_i64().unwrap();
    let body = listing(json!({ "images": [origin.url("/sofa.png")] }));
    let created: Value = client
        .post(format!("{}/v1/listings", first.base))
        .bearer_auth(&key)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listing_id = created["id"].as_i64().unwrap();
    first.halt().await;

    let second = start(dir.path(), &db, false).await;
    let done = thumbnails_settled(&second.base, &key, photo_id).await;
    assert_eq!(done["thumbnail_status"], "done");
    assert!(done["sizes"]["medium"].as_str().unwrap().starts_with(&second.base), "URLs follow the running server");
    let detail = imports_settled(&second.base, &key, listing_id).await;
    assert_eq!(detail["image_imports"][0]["status"], "done", "{detail}");
    let (status, _, bytes) = fetch(detail["images"][0].as_str().unwrap()).await;
    assert_eq!((status, dimensions(&bytes)), (200, (1200, 800)));
    second.halt().await;
}
