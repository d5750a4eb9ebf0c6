//! Two real `rehome serve` processes on one PostgreSQL database, each test's requests split
//! across both: a shared key quota, one default warehouse, no oversold stock, single-use
//! credit codes, brand-on-first-use, webhooks delivered exactly once by two workers, and a
//! node killed mid-delivery whose work the other finishes.
//!
//! Runs only when `REHOME_TEST_POSTGRES` names a PostgreSQL server (as a user allowed to
//! create databases); otherwise each test says why and passes. Every test has its own
//! database, its own two processes (killed when the test ends) and their logs, printed
//! when a test fails.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::helpers::{binary_env, last_line, on_postgres, run_rehome, TestDb, REHOME_BIN as BIN};
use crate::listings::listing;
use crate::marketplace::OPS_TOKEN;
use crate::webhooks::receiver::{Hit, Receiver, Reply};
use crate::webhooks::WEBHOOK;

const OPTIONS: &str = "/v1/listings/options";
const WAREHOUSES: &str = "/v1/partner/settings/warehouses";
const COLLECTIONS: &str = "/v1/partner/collections";
const REDEEM: &str = "/v1/partner/credits/redeem";
/// Node logs: the access log, and each webhook attempt with its event id (debug).
const LOG_FILTER: &str = "info,sqlx=warn,rehome_core::jobs::webhooks=debug";

/// False (and says so) when there is no PostgreSQL server to run on.
fn on_postgres_or_skip(test: &str) -> bool {
    if on_postgres() {
        return true;
    }
    eprintln!("{test}: skipped: set REHOME_TEST_POSTGRES to a PostgreSQL admin URL to run the multi-node tests");
    false
}

/// Runs an admin command of the binary on the database at `url`; returns its stdout.
fn cli(url: &str, args: &[&str]) -> String {
    let (ok, stdout, stderr) = run_rehome(args, &[("REHOME_DATABASE_URL", url)]);
    assert!(ok, "rehome {args:?} failed: {stdout}{stderr}");
    stdout
}

/// One `rehome serve` process; killed (SIGKILL) when dropped.
struct Node {
    name: &'static str,
    base: String,
    /// The metrics listener's address, when the node has one (`REHOME_METRICS_ADDR`).
    metrics_addr: Option<String>,
    log: PathBuf,
    child: Child,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Starts the binary on port 0 (the bound address is read from its log), with fast
    /// webhook settings and the operator API; `env` comes last and wins.
    fn spawn(name: &'static str, url: &str, dir: &Path, env: &[(&str, &str)]) -> Self {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("node log file");
        let child = Command::new(BIN)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_remove("REHOME_DATA_KEY")
            .env_remove("REHOME_DATA_KEY_FILE")
            .envs(binary_env(url))
            .env("REHOME_MEDIA_DIR", dir.join("media"))
            .env("REHOME_OPS_TOKEN", OPS_TOKEN)
            .env("REHOME_ALLOW_PRIVATE_NETWORK", "true")
            .env("REHOME_WEBHOOK_ALLOW_HTTP", "true")
            .env("REHOME_WEBHOOK_TIMEOUT_MS", "1000")
            .env("REHOME_WEBHOOK_RETRY_BASE_MS", "100")
            .env("REHOME_WEBHOOK_POLL_MS", "100")
            .env("REHOME_LOG_FORMAT", "text")
            .env("RUST_LOG", LOG_FILTER)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start rehome serve");
        Self { name, base: String::new(), metrics_addr: None, log, child }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the `rehome listening addr=…` line, then for `/readyz`.
    async fn wait_ready(&mut self, client: &reqwest::Client) {
        let limit = Duration::from_secs(30);
        let this = std::cell::RefCell::new(&mut *self);
        let listening = || async {
            let mut node = this.borrow_mut();
            let log = node.log_text();
            if let Some(addr) = log.lines().filter(|l| l.contains("rehome listening")).find_map(|l| field(l, "addr")) {
                return Some(addr.to_owned());
            }
            if let Some(status) = node.child.try_wait().expect("try_wait") {
                panic!("node {} exited ({status}) before listening:\n{log}", node.name);
            }
            None
        };
        let addr = crate::helpers::poll(limit, listening).await;
        let Some(addr) = addr else { panic!("node {} never listened:\n{}", self.name, self.log_text()) };
        self.base = format!("http://{addr}");
        // Logged before the line above, when there is a metrics listener.
        let log = self.log_text();
        self.metrics_addr = log
            .lines()
            .filter(|l| l.contains("rehome metrics listening"))
            .find_map(|l| field(l, "addr"))
            .map(Into::into);
        let url = format!("{}/readyz", self.base);
        let ready = || async { client.get(&url).send().await.is_ok_and(|r| r.status() == 200).then_some(()) };
        if crate::helpers::poll(limit, ready).await.is_none() {
            panic!("node {} never became ready:\n{}", self.name, self.log_text());
        }
    }

    /// SIGKILL (std's `kill` on Unix), and waits for the process to be gone.
    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait for the killed node");
    }

    /// The event ids of the webhook attempts this node finished (its debug log lines).
    fn attempted_events(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| l.contains("webhook attempt"))
            .filter_map(|l| field(l, "event_id").map(str::to_owned))
            .collect()
    }

    /// Lines logged at ERROR (every 5xx answer is one) or about the shared limiter failing.
    fn trouble(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| l.contains(" ERROR ") || l.contains("shared rate limit unavailable"))
            .map(str::to_owned)
            .collect()
    }
}

/// The value of `name=value` in a text log line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {name}="))? + name.len() + 2;
    line[start..].split_whitespace().next()
}

/// One answer, whichever node gave it.
#[derive(Debug)]
struct Answer {
    node: usize,
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    /// The body, failing the test unless the status is `status`.
    fn expect(self, status: u16, what: &str) -> Value {
        assert_eq!(self.status, status, "{what} on node {}: {}", self.node, self.body);
        self.body
    }

    fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
}

/// The HTTP side of a cluster: cheap to clone into concurrent tasks.
#[derive(Clone)]
struct Api {
    client: reqwest::Client,
    bases: Arc<Vec<String>>,
    key: Arc<str>,
}

impl Api {
    async fn call(&self, node: usize, method: Method, path: &str, token: &str, body: Option<&Value>) -> Answer {
        let mut request = self.client.request(method, format!("{}{path}", self.bases[node])).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("{path} on node {node}: {e}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        Answer { node, status, headers, body }
    }

    async fn get(&self, node: usize, path: &str) -> Answer {
        self.call(node, Method::GET, path, &self.key, None).await
    }

    async fn post(&self, node: usize, path: &str, body: Value) -> Answer {
        self.call(node, Method::POST, path, &self.key, Some(&body)).await
    }

    async fn patch(&self, node: usize, path: &str, body: Value) -> Answer {
        self.call(node, Method::PATCH, path, &self.key, Some(&body)).await
    }

    /// A call of the operator API (`/ops/v1{path}`).
    async fn ops(&self, node: usize, path: &str, body: Value) -> Answer {
        self.call(node, Method::POST, &format!("/ops/v1{path}"), OPS_TOKEN, Some(&body)).await
    }

    async fn create_listing(&self, node: usize, changes: Value) -> Value {
        self.post(node, "/v1/listings", listing(changes)).await.expect(201, "create listing")
    }
}

/// Starts `n` requests at once (released together by a barrier); `make(i)` builds the i-th,
/// which tests send to node `i % 2`. Returns the answers in order.
async fn at_once<Fut>(n: usize, make: impl Fn(usize) -> Fut) -> Vec<Answer>
where
    Fut: Future<Output = Answer> + Send + 'static,
{
    let gate = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (gate, request) = (gate.clone(), make(i));
            tokio::spawn(async move {
                gate.wait().await;
                request.await
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(n);
    for task in tasks {
        answers.push(task.await.expect("request task"));
    }
    answers
}

/// `(node, status, code)` of each answer, for assertion messages.
fn summary(answers: &[Answer]) -> Vec<(usize, u16, &str)> {
    answers.iter().map(|a| (a.node, a.status, a.code())).collect()
}

fn count(answers: &[Answer], status: u16) -> usize {
    answers.iter().filter(|a| a.status == status).count()
}

/// Two nodes on a fresh database with brand `acme`, its admin and the admin's key.
struct Cluster {
    // Fields drop in order: the processes die before their database is dropped.
    nodes: Vec<Node>,
    api: Api,
    /// The test's own connection to the database, to read the outbox.
    pg: sqlx::PgPool,
    db: TestDb,
    dir: TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for node in &self.nodes {
            let log = node.log_text();
            // The access log of answered requests is noise here (5xx answers log at ERROR).
            let lines: Vec<&str> =
                log.lines().filter(|l| !(l.contains(" INFO ") && l.contains(" response "))).collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!(
                "---- node {} ({}), without the access log ----\n{}",
                node.name,
                node.log.display(),
                tail.join("\n")
            );
        }
        eprintln!("node logs kept in {}", self.dir.path().display());
        // Keep the logs for inspection (TestDb keeps the database).
        self.dir.disable_cleanup(true);
    }
}

impl Cluster {
    /// Nodes `a` and `b`; `None` (the test skips) without `REHOME_TEST_POSTGRES`. The key
    /// allows `quota` requests a minute; `env` is given to both nodes.
    async fn start(test: &str, quota: u32, env: &[(&str, &str)]) -> Option<Self> {
        Self::start_nodes(test, quota, env, &["a", "b"]).await
    }

    /// As [`Cluster::start`], with the nodes `names`.
    async fn start_nodes(test: &str, quota: u32, env: &[(&str, &str)], names: &[&'static str]) -> Option<Self> {
        if !on_postgres_or_skip(test) {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let db = TestDb::create(dir.path()).await;
        cli(&db.url, &["brands", "create", "acme", "--name", "Acme"]);
        let out = cli(&db.url, &["users", "create", "--brand", "acme", "--name", "Ada", "--email", "ada@acme.example"]);
        let user = last_line(&out).to_owned();
        let out = cli(&db.url, &["keys", "create", "--user", &user, "--rate-limit", &quota.to_string()]);
        let key = last_line(&out).to_owned();
        assert!(key.starts_with("rhk_"), "secret on the last line: {out}");

        let client = reqwest::Client::new();
        // All start at once: several processes opening (and migrating) one database together.
        let mut nodes: Vec<Node> = names.iter().map(|name| Node::spawn(name, &db.url, dir.path(), env)).collect();
        for node in &mut nodes {
            node.wait_ready(&client).await;
        }
        let bases = Arc::new(nodes.iter().map(|n| n.base.clone()).collect());
        let pg = sqlx::PgPool::connect(&db.url).await.expect("connect to the test database");
        Some(Self { nodes, api: Api { client, bases, key: key.into() }, pg, db, dir })
    }

    /// Starts one more node on the cluster's database.
    async fn add_node(&mut self, name: &'static str, env: &[(&str, &str)]) {
        let mut node = Node::spawn(name, &self.db.url, self.dir.path(), env);
        node.wait_ready(&self.api.client).await;
        self.nodes.push(node);
        self.api.bases = Arc::new(self.nodes.iter().map(|n| n.base.clone()).collect());
    }

    /// Fails the test if a node that is still running logged an error (a 5xx included).
    fn assert_no_trouble(&mut self) {
        for node in &mut self.nodes {
            if node.child.try_wait().ok().flatten().is_some() {
                continue;
            }
            let trouble = node.trouble();
            assert!(trouble.is_empty(), "node {} logged:\n{}", node.name, trouble.join("\n"));
        }
    }

    /// Points the brand's webhook at `receiver`.
    async fn configure_webhook(&self, receiver: &Receiver) {
        self.api.patch(0, WEBHOOK, json!({ "url": receiver.url() })).await.expect(200, "set the webhook URL");
    }

    /// Every event in the outbox: id → status.
    async fn events(&self) -> HashMap<String, String> {
        sqlx::query_as::<_, (String, String)>("SELECT id, status FROM webhook_events")
            .fetch_all(&self.pg)
            .await
            .expect("read the outbox")
            .into_iter()
            .collect()
    }

    /// Recorded attempts per event id.
    async fn attempts(&self) -> HashMap<String, i64> {
        sqlx::query_as::<_, (String, i64)>(
            "SELECT e.id, count(a.id) FROM webhook_events e LEFT JOIN webhook_attempts a ON a.event_seq = e.seq
             GROUP BY e.id",
        )
        .fetch_all(&self.pg)
        .await
        .expect("read the attempts")
        .into_iter()
        .collect()
    }

    /// Pending events under a lease: `(event id, owner, lease end)`.
    async fn leases(&self) -> Vec<(String, String, String)> {
        sqlx::query_as(
            "SELECT id, lease_owner, lease_until::text FROM webhook_events
             WHERE status = 'pending' AND lease_owner IS NOT NULL",
        )
        .fetch_all(&self.pg)
        .await
        .expect("read the leases")
    }

    /// Waits until the outbox holds `n` events, all delivered.
    async fn wait_all_delivered(&self, n: usize, limit: Duration) -> HashMap<String, String> {
        let all = |events: &HashMap<String, String>| events.len() == n && events.values().all(|s| s == "delivered");
        match crate::helpers::poll(limit, || async { Some(self.events().await).filter(all) }).await {
            Some(events) => events,
            None => panic!("not all {n} events delivered: {:?}", self.events().await),
        }
    }
}

mod invariants;
mod mail;
mod metrics;
mod webhooks;
