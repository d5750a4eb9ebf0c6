//! The real binary as its own process, for figures of its memory: a test server runs inside
//! the test process, whose memory every other test shares.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rehome::domain::user::Role;
use tempfile::TempDir;

use crate::helpers::{binary_env, memory_kib, open_store, TestDb};

/// This build's binary, or another's (`REHOME_BENCH_BIN`, for before-and-after figures).
fn binary() -> String {
    std::env::var("REHOME_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rehome").to_owned())
}

/// `rehome serve` on a fresh SQLite file, with a brand whose key has a generous quota;
/// killed on drop.
pub struct Process {
    child: Child,
    pub base: String,
    pub key: String,
    _dir: TempDir,
    /// Kept while the process runs: on PostgreSQL, dropping it drops the database.
    _db: TestDb,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    /// Starts the binary with `env` added to its environment, once it answers `/readyz`.
    pub async fn start(env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = TestDb::create_named(dir.path(), "process.db").await;
        let store = open_store(&db.url).await;
        rehome::usecases::accounts::create_brand(&store, "acme", "Acme").await.unwrap();
        let user = rehome::usecases::accounts::create_user(&store, "acme", "Ada", "ada@acme.example", Role::Admin)
            .await
            .unwrap();
        let key =
            rehome::usecases::accounts::create_key(&store, user.id, "read,write".parse().unwrap(), None, Some(100_000))
                .await
                .unwrap()
                .secret;
        store.close().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(binary())
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .envs(binary_env(&db.url))
            .env("REHOME_MEDIA_DIR", dir.path().join("media"))
            .envs(env.iter().copied())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rehome");
        let process = Self { child, base: format!("http://127.0.0.1:{port}"), key, _dir: dir, _db: db };
        let client = reqwest::Client::new();
        let ready =
            || async { client.get(process.url("/readyz")).send().await.is_ok_and(|r| r.status() == 200).then_some(()) };
        assert!(crate::helpers::poll(Duration::from_secs(30), ready).await.is_some(), "server never ready");
        process
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `VmRSS` and `VmHWM` (the peak resident set), in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        memory_kib(self.child.id()).unwrap_or_default()
    }

    /// Sends `body` as JSON to `path` with the key; the status and the answer.
    pub async fn post(&self, path: &str, body: Vec<u8>) -> (u16, serde_json::Value) {
        self.try_post(path, body).await.expect("an answer")
    }

    /// [`Self::post`], or `None` when the connection broke before an answer was read: a
    /// body refused before it is read (a budget's 429 or 503) is answered and the
    /// connection closed while a large upload may still be writing, which the client then
    /// sees as a reset rather than the answer (HTTP/1.1 without `Expect: 100-continue`).
    pub async fn try_post(&self, path: &str, body: Vec<u8>) -> Option<(u16, serde_json::Value)> {
        let response = reqwest::Client::new()
            .post(self.url(path))
            .bearer_auth(&self.key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .ok()?;
        let status = response.status().as_u16();
        Some((status, response.json().await.unwrap_or_default()))
    }
}
