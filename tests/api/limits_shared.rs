//! Several nodes on one PostgreSQL database share each quota: N requests pass in total,
//! whichever node answers them. Runs only with `REHOME_TEST_POSTGRES`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rehome::app::Server;
use rehome::config::Config;
use rehome::domain::user::Role;
use rehome::store::Store;
use sqlx::Connection;
use tokio::sync::oneshot;

use crate::helpers::{assert_error, on_postgres, open_store, TestDb};

const OPTIONS: &str = "/v1/listings/options";

/// One `rehome serve` node on a shared database.
pub struct Node {
    pub base: String,
    pub client: reqwest::Client,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Node {
    /// A node on `url`, its media in `dir/media`; `adjust` may change its settings.
    pub async fn start(dir: &Path, url: &str, adjust: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config {
            addr: "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
            media_dir: dir.join("media"),
            ..Config::default()
        };
        adjust(&mut config);
        let server = Server::bind(config, open_store(url).await).await.expect("bind");
        let base = format!("http://{}", server.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run_until(async move {
            let _ = stopped.await;
        }));
        Self { base, client: reqwest::Client::new(), stop, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str, key: &str) -> reqwest::Response {
        let request = self.client.get(self.url(path));
        let request = if key.is_empty() { request } else { request.bearer_auth(key) };
        request.send().await.expect("request")
    }

    pub async fn post(&self, path: &str, key: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client.post(self.url(path)).bearer_auth(key).json(body).send().await.expect("request")
    }

    pub async fn patch(&self, path: &str, key: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client.patch(self.url(path)).bearer_auth(key).json(body).send().await.expect("request")
    }

    /// Finishes in-flight requests and waits for the server and its workers to stop.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.expect("server task").expect("server");
    }
}

/// A key of its own brand with `quota` requests per minute.
async fn key_with_quota(store: &Store, quota: u32) -> String {
    rehome::usecases::accounts::create_brand(store, "acme", "Acme").await.expect("brand");
    let user = rehome::usecases::accounts::create_user(store, "acme", "Ada", "ada@acme.example", Role::Admin)
        .await
        .expect("user");
    rehome::usecases::accounts::create_key(store, user.id, "read".parse().expect("scopes"), None, Some(quota))
        .await
        .expect("key")
        .secret
}

/// Two nodes on a fresh database, and a key of brand `acme` with a quota of `quota`.
struct Pair {
    nodes: Arc<[Node; 2]>,
    store: Store,
    key: String,
    db: TestDb,
    _dir: tempfile::TempDir,
}

impl Pair {
    async fn start(quota: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = TestDb::create(dir.path()).await;
        let nodes = [Node::start(dir.path(), &db.url, |_| {}).await, Node::start(dir.path(), &db.url, |_| {}).await];
        let store = open_store(&db.url).await;
        let key = key_with_quota(&store, quota).await;
        Self { nodes: Arc::new(nodes), store, key, db, _dir: dir }
    }

    /// Stops both nodes; the database stays until the answer is dropped.
    async fn stop(self) -> TestDb {
        self.store.close().await;
        for node in Arc::into_inner(self.nodes).expect("no request in flight") {
            node.stop().await;
        }
        self.db
    }
}

fn header(response: &reqwest::Response, name: &str) -> u64 {
    let value = response.headers().get(name).unwrap_or_else(|| panic!("no {name} header"));
    value.to_str().unwrap().parse().unwrap()
}

fn skipped() -> bool {
    if on_postgres() {
        return false;
    }
    eprintln!("skipped: set REHOME_TEST_POSTGRES to a PostgreSQL URL to run the multi-node tests");
    true
}

#[tokio::test]
async fn a_keys_quota_is_shared_by_both_nodes_n_pass_in_total_then_429() {
    if skipped() {
        return;
    }
    let pair = Pair::start(7).await;
    let (nodes, key) = (&pair.nodes, &pair.key);
    for i in 0..7u64 {
        let response = nodes[i as usize % 2].get(OPTIONS, key).await;
        assert_eq!(response.status(), 200, "request {} (node {})", i + 1, i % 2);
        assert_eq!(header(&response, "x-ratelimit-limit"), 7);
        assert_eq!(header(&response, "x-ratelimit-remaining"), 6 - i, "the count spans both nodes");
    }
    let now = chrono::Utc::now().timestamp() as u64;
    for node in nodes.iter() {
        let response = node.get(OPTIONS, key).await;
        let retry_after = header(&response, "retry-after");
        assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
        assert_eq!(header(&response, "x-ratelimit-remaining"), 0);
        let reset = header(&response, "x-ratelimit-reset");
        assert!(reset > now && reset <= now + 62, "reset {reset} vs now {now}");
        assert_error(response, 429, "rate_limited").await;
    }
    pair.stop().await;
}

#[tokio::test]
async fn concurrent_requests_split_across_the_nodes_admit_exactly_the_quota() {
    if skipped() {
        return;
    }
    let pair = Pair::start(10).await;
    let (nodes, key) = (&pair.nodes, &pair.key);
    let mut requests = Vec::new();
    for i in 0..30 {
        let request = nodes[i % 2].client.get(nodes[i % 2].url(OPTIONS)).bearer_auth(key);
        requests.push(tokio::spawn(async move { request.send().await.expect("request").status().as_u16() }));
    }
    let mut statuses = Vec::new();
    for request in requests {
        statuses.push(request.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 10, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 20, "{statuses:?}");
    pair.stop().await;
}

#[tokio::test]
async fn calls_without_a_valid_key_share_the_quota_of_their_address_across_nodes() {
    if skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(dir.path()).await;
    let quota = |config: &mut Config| config.rate_limit = 4;
    let nodes = [Node::start(dir.path(), &db.url, quota).await, Node::start(dir.path(), &db.url, quota).await];
    for i in 0..4u64 {
        let response = nodes[i as usize % 2].get(OPTIONS, "").await;
        assert_eq!(response.status(), 401, "request {}", i + 1);
        assert_eq!(header(&response, "x-ratelimit-remaining"), 3 - i);
    }
    assert_error(nodes[0].get(OPTIONS, "not-a-key").await, 429, "rate_limited").await;
    assert_error(nodes[1].get(OPTIONS, "").await, 429, "rate_limited").await;
    for node in nodes {
        node.stop().await;
    }
}

/// A connection of its own to the test database, to look at the shared table.
async fn connect(db: &TestDb) -> sqlx::PgConnection {
    sqlx::PgConnection::connect(db.url.split('?').next().unwrap_or(&db.url)).await.expect("connect")
}

/// Sums what the shared table counts for every bucket.
async fn counted(conn: &mut sqlx::PgConnection) -> i64 {
    sqlx::query_scalar("SELECT COALESCE(SUM(hits), 0)::BIGINT FROM rate_limit_slots")
        .fetch_one(conn)
        .await
        .expect("count")
}

/// Far longer than an allowance takes to expire (150 ms) and be given back (every 50 ms).
const GIVEN_BACK: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits until the database counts `hits` (what the nodes hold back given back); false if
/// it never did within [`GIVEN_BACK`].
async fn counts(db: &TestDb, hits: i64) -> bool {
    let settled = || async { (counted(&mut connect(db).await).await == hits).then_some(()) };
    crate::helpers::poll(GIVEN_BACK, settled).await.is_some()
}

/// A key far from its limit takes its quota in batches (one round trip per batch); what
/// a node cannot spend in time goes back to the database, so no more than the quota passes
/// while the key is busy and exactly the quota in all.
#[tokio::test]
async fn a_large_quota_is_taken_in_batches_and_exactly_the_quota_passes() {
    if skipped() {
        return;
    }
    const QUOTA: u32 = 1_200;
    let pair = Pair::start(QUOTA).await;
    let mut workers = Vec::new();
    for w in 0..8usize {
        let (nodes, key) = (pair.nodes.clone(), pair.key.clone());
        workers.push(tokio::spawn(async move {
            let mut passed = 0u32;
            for i in 0..170usize {
                match nodes[(w + i) % 2].get(OPTIONS, &key).await.status().as_u16() {
                    200 => passed += 1,
                    429 => {}
                    other => panic!("status {other}"),
                }
            }
            passed
        }));
    }
    let mut passed = 0;
    for worker in workers {
        passed += worker.await.unwrap();
    }
    assert!(passed <= QUOTA, "{passed} of 1,360 passed");
    // Requests a node took and could not spend in time are given back: the database then
    // counts exactly the requests that passed, and the rest of the quota is still there.
    assert!(counts(&pair.db, i64::from(passed)).await, "the database counts what passed");
    let mut conn = connect(&pair.db).await;
    let left = QUOTA - passed;
    let mut later = 0;
    for i in 0..left + 10 {
        let response = pair.nodes[i as usize % 2].get(OPTIONS, &pair.key).await;
        later += u32::from(response.status() == 200);
    }
    assert_eq!(later, left, "the rest of the quota passes, and no more");
    assert_eq!(counted(&mut conn).await, i64::from(QUOTA), "the database counted exactly the quota");
    pair.stop().await;
}

/// A batch a node holds but does not spend is given back once it expires, and what a
/// stopping node holds is given back as it stops.
#[tokio::test]
async fn unspent_allowances_are_given_back_when_they_expire_or_the_node_stops() {
    if skipped() {
        return;
    }
    let pair = Pair::start(100_000).await;
    let node = &pair.nodes[0];
    let mut conn = connect(&pair.db).await;
    // The first request learns the quota is far away; the second takes a batch.
    for _ in 0..2 {
        assert_eq!(node.get(OPTIONS, &pair.key).await.status(), 200);
    }
    // Looked at within the batch's 150 ms (one query on an open connection).
    assert!(counted(&mut conn).await > 2, "a batch was taken");
    assert!(counts(&pair.db, 2).await, "only the requests that passed stay counted");
    for _ in 0..2 {
        assert_eq!(node.get(OPTIONS, &pair.key).await.status(), 200);
    }
    let db = pair.stop().await;
    assert_eq!(counted(&mut conn).await, 4, "a stopped node holds nothing");
    drop(conn);
    drop(db);
}

/// After a quota is lowered below what a key has used, one more request passes only once
/// enough of the oldest requests have left the window, not just the oldest one.
#[tokio::test]
async fn a_refusal_under_a_lowered_quota_waits_for_enough_requests_to_leave() {
    if skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(dir.path()).await;
    let store = open_store(&db.url).await;
    let mut conn = connect(&db).await;
    // One request 5 s ago and four 1 s ago, as the database's clock counts them.
    sqlx::query(
        "INSERT INTO rate_limit_slots (bucket, slot, hits)
         SELECT 'key:1', now_slot - ago, hits
         FROM (SELECT floor(extract(epoch FROM clock_timestamp()) * 10)::BIGINT AS now_slot) n,
              (VALUES (50, 1), (10, 4)) AS v(ago, hits)",
    )
    .execute(&mut conn)
    .await
    .expect("slots");
    // A quota of 5 is full: one more passes when the oldest request leaves (~55 s).
    let pg = store.postgres().expect("a PostgreSQL store");
    let full = pg.take_rate("key:1", 5, 60_000, 1).await.expect("take");
    assert_eq!((full.granted, full.remaining), (0, 0));
    assert!((54_000..=55_200).contains(&full.retry_ms), "retry in {} ms", full.retry_ms);
    // Lowered to 2, four of the five must leave: the four of 1 s ago (~59 s).
    let lowered = pg.take_rate("key:1", 2, 60_000, 1).await.expect("take");
    assert_eq!((lowered.granted, lowered.remaining), (0, 0));
    assert!((58_000..=59_200).contains(&lowered.retry_ms), "retry in {} ms", lowered.retry_ms);
    assert!(lowered.reset_ms >= lowered.retry_ms);
    drop(conn);
    store.close().await;
}
