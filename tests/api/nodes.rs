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
const LOG_FILTER: &str = "info,sqlx=warn,rehome::jobs::webhooks=debug";

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
        Self { name, base: String::new(), log, child }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the `rehome listening addr=…` line, then for `/readyz`.
    async fn wait_ready(&mut self, client: &reqwest::Client) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = loop {
            let log = self.log_text();
            if let Some(addr) = log.lines().filter(|l| l.contains("rehome listening")).find_map(|l| field(l, "addr")) {
                break addr.to_owned();
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!("node {} exited ({status}) before listening:\n{log}", self.name);
            }
            assert!(Instant::now() < deadline, "node {} never listened:\n{log}", self.name);
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        self.base = format!("http://{addr}");
        loop {
            if client.get(format!("{}/readyz", self.base)).send().await.is_ok_and(|r| r.status() == 200) {
                return;
            }
            assert!(Instant::now() < deadline, "node {} never became ready:\n{}", self.name, self.log_text());
            tokio::time::sleep(Duration::from_millis(25)).await;
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
        let deadline = Instant::now() + limit;
        loop {
            let events = self.events().await;
            if events.len() == n && events.values().all(|s| s == "delivered") {
                return events;
            }
            assert!(Instant::now() < deadline, "not all {n} events delivered: {events:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Waits until the receiver has had no new request for `quiet` (a duplicate still in flight
/// would arrive within it); returns the hits.
async fn settle(receiver: &Receiver, quiet: Duration) -> Vec<Hit> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut seen, mut since) = (receiver.hits().len(), Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = receiver.hits().len();
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= quiet {
            return receiver.hits();
        }
        assert!(Instant::now() < deadline, "the receiver never went quiet");
    }
}

/// Hits per event id.
fn hits_per_event(hits: &[Hit]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for hit in hits {
        *counts.entry(hit.event_id()).or_insert(0) += 1;
    }
    counts
}

/// Places `n` single-unit orders of a clearance listing of `n` units and schedules each
/// order's collection, the i-th of each through node `via(i)`: `n` events
/// `collection.scheduled`. Returns the collections' ids.
async fn emit_collections(cluster: &Cluster, n: usize, via: impl Fn(usize) -> usize) -> Vec<String> {
    let api = &cluster.api;
    let listing_id = api.create_listing(via(0), json!({"channel": "clearance", "quantity": n})).await["id"].clone();
    let orders = at_once(n, |i| {
        let api = api.clone();
        let body = json!({ "listing_id": listing_id });
        let node = via(i);
        async move { api.ops(node, "/orders", body).await }
    })
    .await;
    assert_eq!(count(&orders, 201), n, "{:?}", summary(&orders));
    let orders: Vec<Value> = orders.into_iter().map(|o| o.body).collect();
    let scheduled = at_once(n, |i| {
        let api = api.clone();
        let body = json!({"order_id": orders[i]["id"], "scheduled_for": orders[i]["buyer_window_start"]});
        let node = via(i);
        async move { api.post(node, COLLECTIONS, body).await }
    })
    .await;
    assert_eq!(count(&scheduled, 201), n, "{:?}", summary(&scheduled));
    scheduled.iter().map(|c| c.body["id"].as_str().expect("collection id").to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keys_quota_is_shared_across_processes_n_of_2n_concurrent_requests_pass() {
    const N: usize = 10;
    let Some(mut cluster) = Cluster::start("shared quota", N as u32, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let answers = at_once(2 * N, |i| {
        let api = api.clone();
        async move { api.get(i % 2, OPTIONS).await }
    })
    .await;
    assert_eq!(count(&answers, 200), N, "{:?}", summary(&answers));
    assert_eq!(count(&answers, 429), N, "{:?}", summary(&answers));
    for answer in &answers {
        assert_eq!(answer.headers["x-ratelimit-limit"], N.to_string().as_str(), "node {}", answer.node);
        if answer.status == 429 {
            assert_eq!(answer.code(), "rate_limited");
            let retry_after: u64 = answer.headers["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=60).contains(&retry_after), "Retry-After {retry_after} on node {}", answer.node);
        }
    }
    // Spent on both nodes: one more on either is refused.
    for node in 0..2 {
        assert_eq!(api.get(node, OPTIONS).await.status, 429, "node {node}");
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_set_default_on_both_nodes_leaves_exactly_one_default() {
    let Some(mut cluster) = Cluster::start("set-default", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let mut ids = Vec::new();
    for n in 0..5 {
        let created = api.post(n % 2, WAREHOUSES, json!({ "label": format!("Depot {n}") })).await;
        ids.push(created.expect(201, "create a warehouse")["warehouse"]["id"].as_str().unwrap().to_owned());
    }
    // PATCH is_default and POST set-default, on every warehouse, from both nodes at once.
    let answers = at_once(40, |i| {
        let api = api.clone();
        let id = ids[i % ids.len()].clone();
        async move {
            if i % 4 < 2 {
                api.patch(i % 2, &format!("{WAREHOUSES}/{id}"), json!({"is_default": true})).await
            } else {
                api.post(i % 2, &format!("{WAREHOUSES}/{id}/set-default"), json!({})).await
            }
        }
    })
    .await;
    assert_eq!(count(&answers, 200), answers.len(), "{:?}", summary(&answers));

    let mut defaults = Vec::new();
    for node in 0..2 {
        let list = api.get(node, WAREHOUSES).await.expect(200, "list warehouses");
        let warehouses = list["warehouses"].as_array().unwrap();
        assert_eq!(warehouses.len(), ids.len());
        let flagged: Vec<&str> =
            warehouses.iter().filter(|w| w["is_default"] == true).map(|w| w["id"].as_str().unwrap()).collect();
        assert_eq!(flagged.len(), 1, "exactly one default on node {node}: {warehouses:?}");
        defaults.push(flagged[0].to_owned());
    }
    assert_eq!(defaults[0], defaults[1], "both nodes show the same default");
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_orders_on_both_nodes_sell_exactly_the_stock_and_close_the_listing() {
    let Some(mut cluster) = Cluster::start("last unit", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    for (channel, stock) in [("exchange", 1), ("clearance", 5)] {
        let id = api.create_listing(0, json!({"channel": channel, "quantity": stock})).await["id"].as_i64().unwrap();
        let answers = at_once(30, |i| {
            let api = api.clone();
            async move { api.ops(i % 2, "/orders", json!({ "listing_id": id })).await }
        })
        .await;
        assert_eq!(count(&answers, 201), stock, "{channel}: {:?}", summary(&answers));
        let refused: Vec<_> = answers.iter().filter(|a| a.status != 201).collect();
        assert!(
            refused.iter().all(|a| a.status == 409 && ["insufficient_stock", "listing_not_active"].contains(&a.code())),
            "{channel}: {:?}",
            summary(&answers)
        );
        let sold: i64 = answers.iter().filter(|a| a.status == 201).map(|a| a.body["quantity"].as_i64().unwrap()).sum();
        assert_eq!(sold, stock as i64);
        for node in 0..2 {
            let detail = api.get(node, &format!("/v1/listings/{id}")).await.expect(200, "listing detail");
            assert_eq!(
                (detail["quantity"].as_i64(), detail["status"].as_str()),
                (Some(0), Some("closed")),
                "{channel} on node {node}"
            );
        }
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_redeems_of_one_code_on_both_nodes_exactly_one_succeeds() {
    let Some(mut cluster) = Cluster::start("code redeems", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let listing_id = api.create_listing(0, json!({"channel": "exchange", "price_gbp": 80})).await["id"].clone();
    let order = api.ops(1, "/orders", json!({ "listing_id": listing_id })).await.expect(201, "order");
    let order_id = order["id"].as_i64().unwrap();
    api.ops(0, &format!("/orders/{order_id}/complete"), json!({})).await.expect(200, "complete");
    let choice = json!({"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"});
    let redemption = api.ops(1, &format!("/orders/{order_id}/payout-choice"), choice).await.expect(201, "choice");
    let code = redemption["code"].as_str().expect("a credit code").to_owned();

    let answers = at_once(20, |i| {
        let api = api.clone();
        let body = json!({"code": code, "order_reference": format!("WEB-{i}")});
        async move { api.post(i % 2, REDEEM, body).await }
    })
    .await;
    assert_eq!(count(&answers, 200), 1, "{:?}", summary(&answers));
    assert!(
        answers
            .iter()
            .filter(|a| a.status != 200)
            .all(|a| a.status == 409 && a.code() == "credit_code_already_redeemed"),
        "{:?}",
        summary(&answers)
    );
    let spent = answers.iter().find(|a| a.status == 200).unwrap();
    assert!(spent.body["redeemed_at"].as_str().is_some(), "{}", spent.body);
    for node in 0..2 {
        let dry = api.post(node, REDEEM, json!({"code": code, "dry_run": true})).await;
        assert_eq!((dry.status, dry.code()), (409, "credit_code_already_redeemed"), "node {node}");
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_uses_of_a_brand_on_both_nodes_create_it_once() {
    let Some(mut cluster) = Cluster::start("brand on first use", 100_000, &[]).await else {
        return;
    };
    let api = cluster.api.clone();
    let answers = at_once(20, |i| {
        let api = api.clone();
        // The same new brand, spelt two ways (matched case-insensitively).
        let brand = if i % 4 < 2 { "Hallowood Makers" } else { "HALLOWOOD makers" };
        async move { api.post(i % 2, "/v1/listings", listing(json!({ "brand": brand }))).await }
    })
    .await;
    assert_eq!(count(&answers, 201), answers.len(), "{:?}", summary(&answers));
    let spellings: HashSet<&str> = answers.iter().map(|a| a.body["brand"].as_str().unwrap_or("")).collect();
    assert_eq!(spellings.len(), 1, "every listing names the one catalogue brand: {spellings:?}");
    let spelling = spellings.into_iter().next().unwrap().to_owned();
    assert!(spelling.eq_ignore_ascii_case("hallowood makers"), "{spelling}");
    for node in 0..2 {
        let options = api.get(node, OPTIONS).await.expect(200, "options");
        let brands: Vec<&str> = options["brands"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
        let matching: Vec<&&str> = brands.iter().filter(|b| b.eq_ignore_ascii_case("hallowood makers")).collect();
        assert_eq!(matching, [&spelling.as_str()], "listed once on node {node}: {brands:?}");
        assert_eq!(brands.last(), Some(&"Other"), "node {node}");
    }
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_both_nodes_delivering_a_receiver_sees_every_event_exactly_once() {
    let Some(mut cluster) = Cluster::start("webhooks exactly once", 100_000, &[]).await else {
        return;
    };
    const M: usize = 30;
    let receiver = Receiver::start().await;
    cluster.configure_webhook(&receiver).await;
    // Half the events are written through each node (each wakes its own worker).
    let collections = emit_collections(&cluster, M, |i| i % 2).await;

    let events = cluster.wait_all_delivered(M, Duration::from_secs(30)).await;
    let hits = settle(&receiver, Duration::from_secs(1)).await;
    let per_event = hits_per_event(&hits);
    let twice: Vec<_> = per_event.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    let received: HashSet<&String> = per_event.keys().collect();
    let written: HashSet<&String> = events.keys().collect();
    assert_eq!(received, written, "every event, and only those, reached the receiver");
    assert_eq!(hits.len(), M);
    let data_ids: HashSet<String> = hits
        .iter()
        .map(|h| serde_json::from_slice::<Value>(&h.body).unwrap()["data"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(data_ids, collections.iter().cloned().collect::<HashSet<_>>());
    let attempts = cluster.attempts().await;
    assert!(attempts.values().all(|n| *n == 1), "one recorded attempt per event: {attempts:?}");

    // No event was attempted by both workers. (Which node delivers what is up to their
    // timing: both are offered the oldest due events, so one may win every claim.)
    let by_a: HashSet<String> = cluster.nodes[0].attempted_events().into_iter().collect();
    let by_b: HashSet<String> = cluster.nodes[1].attempted_events().into_iter().collect();
    eprintln!("exactly once: node a attempted {}, node b {}", by_a.len(), by_b.len());
    assert!(by_a.is_disjoint(&by_b), "attempted by both: {:?}", by_a.intersection(&by_b).collect::<Vec<_>>());
    assert_eq!(by_a.len() + by_b.len(), M);
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_killed_mid_delivery_leaves_its_events_to_the_other_node() {
    // A 2 s timeout makes a lease 2 × 2 s + 1 s = 5 s (src/jobs/webhooks.rs), longer than
    // the receiver's 1.5 s answers; 4 deliveries at a time make the work last a while.
    let env = [("REHOME_WEBHOOK_TIMEOUT_MS", "2000"), ("REHOME_WEBHOOK_CONCURRENCY_PER_ENDPOINT", "4")];
    // A starts alone, so that it certainly holds leases when it dies: with both running,
    // either node may win every claim (both are offered the oldest due events).
    let Some(mut cluster) = Cluster::start_nodes("kill mid-delivery", 100_000, &env, &["a"]).await else {
        return;
    };
    const M: usize = 24;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Slow(Duration::from_millis(1500), 200));
    cluster.configure_webhook(&receiver).await;
    // A delivers 4 at a time to the slow receiver: about 9 s of work.
    emit_collections(&cluster, M, |_| 0).await;
    let ids: HashSet<String> = cluster.events().await.into_keys().collect();
    assert_eq!(ids.len(), M);
    receiver.wait_for_hits(1, Duration::from_secs(10)).await;
    // B joins while A is mid-delivery; then A dies.
    cluster.add_node("b", &env).await;

    cluster.nodes[0].kill();
    let killed_at = Instant::now();
    // A is gone: its leases stay as they are until they run out. (A statement A had already
    // sent may still be running in its database session for a moment: let it end first.)
    tokio::time::sleep(Duration::from_millis(300)).await;
    let at_kill = cluster.leases().await;
    assert!(receiver.hits().len() < M, "killed before the work was done");

    // Until everything is delivered, note every lease that was not there at the kill: those
    // are B's (A can take none), which tells B's lease owner id from A's.
    let frozen: HashSet<(String, String, String)> = at_kill.iter().cloned().collect();
    let mut owners_of_b = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for lease in cluster.leases().await {
            if !frozen.contains(&lease) {
                owners_of_b.insert(lease.1);
            }
        }
        let events = cluster.events().await;
        let seen: HashSet<String> = receiver.hits().iter().map(Hit::event_id).collect();
        if events.values().all(|s| s == "delivered") && ids.iter().all(|id| seen.contains(id)) {
            break;
        }
        assert!(Instant::now() < deadline, "not all delivered after the kill: {events:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let finished_after = killed_at.elapsed();
    assert_eq!(owners_of_b.len(), 1, "one lease owner after the kill: {owners_of_b:?}");
    let in_flight_at_a: HashSet<&String> =
        at_kill.iter().filter(|(_, owner, _)| !owners_of_b.contains(owner)).map(|(id, _, _)| id).collect();
    assert!(!in_flight_at_a.is_empty(), "node A held no lease when killed: {at_kill:?}");

    let hits = settle(&receiver, Duration::from_secs(1)).await;
    eprintln!(
        "kill mid-delivery: {} leases at the kill, {} of them A's; {} hits for {M} events; all delivered {finished_after:?} after the kill",
        at_kill.len(),
        in_flight_at_a.len(),
        hits.len()
    );
    for (id, n) in hits_per_event(&hits) {
        assert!(ids.contains(&id), "unknown event {id}");
        // A delivery A had sent when it died reached the receiver, but its answer did not
        // reach A: B sends it again after A's lease runs out. Only those may arrive twice.
        if in_flight_at_a.contains(&id) {
            assert!(n <= 2, "{id} (in flight at A) arrived {n} times");
        } else {
            assert_eq!(n, 1, "{id} was not in flight at A but arrived {n} times");
        }
    }
    // B finished A's work.
    let by_b: HashSet<String> = cluster.nodes[1].attempted_events().into_iter().collect();
    for id in &in_flight_at_a {
        assert!(by_b.contains(*id), "{id}, leased by A at the kill, was never attempted by B");
    }
    assert!(
        finished_after >= Duration::from_secs(2),
        "A's leases (5 s) cannot have been retaken after {finished_after:?}"
    );
    cluster.assert_no_trouble();
}
