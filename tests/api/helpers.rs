//! One way to start the real server for a test: an ephemeral port, a temporary SQLite
//! database and media directory, and a real HTTP client.

use std::net::SocketAddr;

use chrono::{DateTime, Utc};
use rehome::accounts;
use rehome::app::Server;
use rehome::config::Config;
use rehome::domain::user::{Role, Scopes};
use rehome::store::Store;
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub addr: SocketAddr,
    pub base: String,
    pub client: reqwest::Client,
    pub store: Store,
    pub dir: TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

/// A partner brand with an admin user and a read/write key with a generous quota.
pub struct Partner {
    pub slug: String,
    pub brand_id: i64,
    pub user_id: i64,
    pub key: String,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts a server whose settings `adjust` may change (port and paths are set here).
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("rehome.db").display());
    let mut config =
        Config { addr: "127.0.0.1:0".parse().unwrap(), media_dir: dir.path().join("media"), ..Config::default() };
    adjust(&mut config);
    let store = Store::connect(&url).await.expect("open store");
    let server = Server::bind(config, store.clone()).await.expect("bind");
    let addr = server.local_addr();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(server.run_until(async move {
        let _ = rx.await;
    }));
    TestApp {
        addr,
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        store,
        dir,
        shutdown: Some(tx),
        server: Some(handle),
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with the given key (no `Authorization` header when `key` is empty).
    pub fn request(&self, method: Method, path: &str, key: &str) -> RequestBuilder {
        let builder = self.client.request(method, self.url(path));
        if key.is_empty() {
            builder
        } else {
            builder.bearer_auth(key)
        }
    }

    pub async fn get(&self, path: &str, key: &str) -> Response {
        self.request(Method::GET, path, key).send().await.expect("request")
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Response {
        self.request(Method::POST, path, key).json(body).send().await.expect("request")
    }

    pub async fn patch(&self, path: &str, key: &str, body: &Value) -> Response {
        self.request(Method::PATCH, path, key).json(body).send().await.expect("request")
    }

    pub async fn delete(&self, path: &str, key: &str) -> Response {
        self.request(Method::DELETE, path, key).send().await.expect("request")
    }

    /// A brand with an admin and a read/write key (quota high enough never to interfere).
    pub async fn partner(&self, slug: &str) -> Partner {
        let brand = accounts::create_brand(&self.store, slug, &format!("{slug} Ltd")).await.expect("brand");
        let user = accounts::create_user(&self.store, slug, "Ada Admin", &format!("ada@{slug}.example"), Role::Admin)
            .await
            .expect("user");
        let key = self.key(user.id, "read,write", Some(100_000), None).await;
        Partner { slug: slug.to_owned(), brand_id: brand.id, user_id: user.id, key }
    }

    /// Another user of an existing brand, with a read/write key.
    pub async fn user(&self, partner: &Partner, name: &str, role: Role) -> (i64, String) {
        let email = format!("{}@{}.example", name.to_lowercase().replace(' ', "."), partner.slug);
        let user = accounts::create_user(&self.store, &partner.slug, name, &email, role).await.expect("user");
        let key = self.key(user.id, "read,write", Some(100_000), None).await;
        (user.id, key)
    }

    pub async fn key(
        &self,
        user_id: i64,
        scopes: &str,
        rate_limit: Option<u32>,
        expires_at: Option<DateTime<Utc>>,
    ) -> String {
        let scopes: Scopes = scopes.parse().expect("scopes");
        accounts::create_key(&self.store, user_id, scopes, expires_at, rate_limit).await.expect("key").secret
    }

    /// Stops accepting connections, finishes in-flight requests and waits for the server.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.server.take() {
            handle.await.expect("server task").expect("server");
        }
    }
}

/// Reads a JSON body, panicking with the raw text when it is not JSON.
pub async fn json(response: Response) -> Value {
    let text = response.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Asserts the status and error code of an error response, and returns its body.
pub async fn assert_error(response: Response, status: u16, code: &str) -> Value {
    assert_eq!(response.status().as_u16(), status, "status for expected {code}");
    let body = json(response).await;
    assert_eq!(body["code"], code, "body: {body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "message in {body}");
    body
}
