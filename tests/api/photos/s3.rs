//! The S3-compatible media store against a real S3 server: moto's, started by each test on
//! a free port and killed when it ends. Without moto installed these tests say so and pass,
//! unless `REHOME_TEST_REQUIRE_PYTHON=1` is set (CI sets it), when they fail.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use image::ImageFormat;
use rehome::config::{Config, MediaStoreKind};
use serde_json::json;

use super::*;
use crate::helpers::{json, spawn_app_with, TestApp};
use crate::listings::{create, listing};

const BUCKET: &str = "rehome-media";

/// moto's S3 server, killed on drop.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// A running server, or `None` when moto is not installed and S3 tests are not required.
    async fn start() -> Option<Self> {
        if !crate::helpers::python_tools("s3", &["moto.server"]) {
            return None;
        }
        // The port is free when chosen; another process may take it before moto binds it.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
            let child = Command::new("python3")
                .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start moto");
            let mut moto = Moto { child, endpoint: format!("http://127.0.0.1:{port}") };
            if moto.answers().await {
                return Some(moto);
            }
        }
        panic!("moto's S3 server did not start");
    }

    /// Waits until the server answers HTTP (at most 30 s), or until it has exited.
    async fn answers(&mut self) -> bool {
        let client = reqwest::Client::new();
        let child = std::cell::RefCell::new(&mut self.child);
        let endpoint = &self.endpoint;
        // Some(false): the server exited; Some(true): it answers.
        let state = || async {
            if child.borrow_mut().try_wait().ok().flatten().is_some() {
                return Some(false);
            }
            client.get(format!("{endpoint}/")).send().await.is_ok().then_some(true)
        };
        crate::helpers::poll(Duration::from_secs(30), state).await.unwrap_or(false)
    }

    /// Creates the bucket, readable by anyone (as a bucket behind `REHOME_MEDIA_PUBLIC_URL`
    /// is), so the tests can read objects without signing. object_store cannot create buckets.
    async fn create_public_bucket(&self) {
        let client = reqwest::Client::new();
        let bucket = format!("{}/{BUCKET}", self.endpoint);
        let created = client.put(&bucket).send().await.expect("create bucket");
        assert!(created.status().is_success(), "create bucket: {}", created.status());
        let policy = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
            "Action": "s3:GetObject", "Resource": format!("arn:aws:s3:::{BUCKET}/*")}]});
        let response = client
            .put(format!("{bucket}?policy"))
            .header("content-type", "application/json")
            .body(policy.to_string())
            .send()
            .await
            .expect("bucket policy");
        assert!(response.status().is_success(), "bucket policy: {}", response.status());
    }

    /// The object's bytes as the server holds them, or the status when it has none.
    async fn object(&self, key: &str) -> Result<Vec<u8>, u16> {
        let response = reqwest::get(format!("{}/{BUCKET}/{key}", self.endpoint)).await.expect("get object");
        match response.status().as_u16() {
            200 => Ok(response.bytes().await.expect("object body").to_vec()),
            status => Err(status),
        }
    }

    /// Points the app at this server's bucket.
    fn configure(&self, config: &mut Config, prefix: Option<&str>) {
        config.media_store = MediaStoreKind::S3;
        config.s3_bucket = Some(BUCKET.to_owned());
        config.s3_endpoint = Some(self.endpoint.clone());
        config.s3_access_key_id = Some("testing".to_owned());
        config.s3_secret_access_key = Some("testing".into());
        config.s3_prefix = prefix.map(str::to_owned);
    }
}

/// The last path segment of a URL.
fn name_of(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or_default()
}

async fn app_on(moto: &Moto, adjust: impl FnOnce(&mut Config)) -> TestApp {
    moto.create_public_bucket().await;
    spawn_app_with(|c| {
        moto.configure(c, Some("photos/v1"));
        adjust(c);
    })
    .await
}

#[tokio::test]
async fn an_upload_is_stored_in_the_bucket_under_the_prefix_and_served_at_its_url() {
    let Some(moto) = Moto::start().await else { return };
    let app = app_on(&moto, |_| {}).await;
    let partner = app.partner("acme").await;
    let bytes = image_bytes(ImageFormat::Png, 40, 30);
    let photo = uploaded(&app, &partner.key, &bytes).await;
    let url = photo["url"].as_str().unwrap_or_default();
    assert!(url.starts_with(&format!("{}/media/", app.base)), "{url}");

    let stored = moto.object(&format!("photos/v1/{}", name_of(url))).await.expect("the photo is in the bucket");
    assert_eq!(dimensions(&stored), (40, 30));
    let (status, mime, served) = fetch(url).await;
    assert_eq!((status, mime.as_str()), (200, "image/png"));
    assert_eq!(served, stored);
    assert!(!app.dir.path().join("media").exists(), "nothing is written to the media directory");

    // A name the bucket does not hold is a plain 404, not a storage error.
    let missing = format!("{}/media/0123456789abcdef0123456789abcdef.png", app.base);
    assert_eq!(fetch(&missing).await.0, 404);
}

#[tokio::test]
async fn thumbnails_are_written_to_the_bucket() {
    let Some(moto) = Moto::start().await else { return };
    let app = app_on(&moto, |_| {}).await;
    let partner = app.partner("acme").await;
    let photo = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Jpeg, 1500, 1000)).await;
    let done = thumbnails_settled(&app.base, &partner.key, photo["attachment_id"].as_i64().unwrap_or_default()).await;
    assert_eq!(done["thumbnail_status"], "done", "{done}");
    for (size, expected) in [("medium", (300, 200)), ("large", (1024, 683))] {
        let url = done["sizes"][size].as_str().unwrap_or_default();
        let stored = moto.object(&format!("photos/v1/{}", name_of(url))).await;
        let stored = stored.unwrap_or_else(|status| panic!("{size} is not in the bucket: {status}"));
        assert_eq!(dimensions(&stored), expected);
        let (status, _, served) = fetch(url).await;
        assert_eq!((status, served), (200, stored), "{size} is served at {url}");
    }
}

#[tokio::test]
async fn with_a_media_public_url_photo_urls_point_at_the_bucket() {
    let Some(moto) = Moto::start().await else { return };
    let base = format!("{}/{BUCKET}/photos/v1", moto.endpoint);
    let app = app_on(&moto, |c| c.media_public_url = Some(format!("{base}/"))).await;
    let partner = app.partner("acme").await;
    let bytes = image_bytes(ImageFormat::Png, 400, 300);
    let photo = uploaded(&app, &partner.key, &bytes).await;
    let url = photo["url"].as_str().unwrap_or_default();
    assert_eq!(url, format!("{base}/{}", name_of(url)));
    let response = reqwest::get(url).await.expect("fetch from the bucket");
    assert_eq!(response.status(), 200, "the URL is the bucket's own");
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(dimensions(&response.bytes().await.expect("body")), (400, 300));

    let id = photo["attachment_id"].as_i64().unwrap_or_default();
    let done = thumbnails_settled(&app.base, &partner.key, id).await;
    for size in ["medium", "large"] {
        let url = done["sizes"][size].as_str().unwrap_or_default();
        assert!(url.starts_with(&format!("{base}/")), "{size}: {url}");
        assert_eq!(fetch(url).await.0, 200, "{size}: {url}");
    }
    // Listings render their photos on the same base.
    let detail = create(&app, &partner.key, listing(json!({"attachment_ids": [id]}))).await;
    assert_eq!(detail["images"], json!([url]));
    assert_eq!(detail["image_url"], url);
    let page = json(app.get("/v1/listings", &partner.key).await).await;
    assert_eq!(page["data"][0]["image_url"], url);
}
