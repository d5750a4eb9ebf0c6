//! One way to start the real server for a test: an ephemeral port, a fresh database, a
//! temporary media directory, and a real HTTP client.
//!
//! The database is a SQLite file in the test's temporary directory, or, when
//! `REHOME_TEST_POSTGRES` holds the URL of a PostgreSQL server (any database on it, as a
//! user allowed to create databases), a new database `rehome_t_<uuid>` on that server,
//! dropped when the test ends (kept, and named on stderr, when it fails).

use std::net::SocketAddr;
use std::path::Path;

use chrono::{DateTime, Utc};
use rehome::app::Server;
use rehome::config::Config;
use rehome::domain::user::{Role, Scopes};
use rehome::store::{Sealer, Store};
use rehome::usecases::accounts;
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use sqlx::{Connection, Executor};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub addr: SocketAddr,
    /// The metrics listener's address, when the test configured one (`metrics_addr`).
    pub metrics_addr: Option<SocketAddr>,
    pub base: String,
    pub client: reqwest::Client,
    pub store: Store,
    /// The test's database; `db.url` opens it (from the binary or another store).
    pub db: TestDb,
    /// Holds the media directory (and the SQLite file, on SQLite).
    pub dir: TempDir,
    /// The server's queue runners (thumbnails, image imports, mail).
    pub queues: rehome::jobs::Queues,
    /// The server's state: its clock, its body budgets, the work its requests left running.
    pub state: rehome::state::AppState,
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
    let db = TestDb::create(dir.path()).await;
    spawn_app_on(db, dir, adjust).await
}

/// The PostgreSQL server the suite runs on (`REHOME_TEST_POSTGRES`), if any.
pub fn postgres_admin_url() -> Option<String> {
    std::env::var("REHOME_TEST_POSTGRES").ok().filter(|url| !url.trim().is_empty())
}

/// True when the suite runs on PostgreSQL.
pub fn on_postgres() -> bool {
    postgres_admin_url().is_some()
}

/// The data key of every store a test opens (and of the binaries it starts on PostgreSQL,
/// where there is no key file beside the database).
pub const TEST_DATA_KEY: [u8; 32] = [7; 32];

pub fn test_sealer() -> Sealer {
    Sealer::new(&TEST_DATA_KEY)
}

/// [`TEST_DATA_KEY`] as `REHOME_DATA_KEY` takes it.
pub fn test_data_key_base64() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(TEST_DATA_KEY)
}

/// Opens (and migrates) the store at `url` with the test data key.
pub async fn open_store(url: &str) -> Store {
    Store::open(url, Some(test_sealer())).await.unwrap_or_else(|e| panic!("open store {url}: {e:#}"))
}

/// The environment for a `rehome` process on `url`: the database URL and, on PostgreSQL,
/// the test data key (a PostgreSQL server refuses to start without an explicit key).
pub fn binary_env(url: &str) -> Vec<(&'static str, String)> {
    let mut env = vec![("REHOME_DATABASE_URL", url.to_owned())];
    if rehome::store::is_postgres_url(url) {
        env.push(("REHOME_DATA_KEY", test_data_key_base64()));
    }
    env
}

/// A fresh, empty database (migrated when a store first opens it).
pub struct TestDb {
    /// What `Store::open` and `--database-url` take.
    pub url: String,
    /// The PostgreSQL database to drop at the end, with the server's admin URL.
    postgres: Option<(String, String)>,
    /// The PostgreSQL tablespace the database lives in, to drop after it (a small disk's).
    tablespace: Option<String>,
}

impl TestDb {
    /// On SQLite, `rehome.db` in `dir`; on PostgreSQL, a new database on the test server.
    pub async fn create(dir: &Path) -> Self {
        Self::create_named(dir, "rehome.db").await
    }

    /// As [`TestDb::create`], with the SQLite file called `file`.
    pub async fn create_named(dir: &Path, file: &str) -> Self {
        let Some(admin) = postgres_admin_url() else {
            return Self { url: format!("sqlite://{}", dir.join(file).display()), postgres: None, tablespace: None };
        };
        Self::create_postgres(admin, None).await
    }

    /// A new database on the test server, in `tablespace` if given.
    async fn create_postgres(admin: String, tablespace: Option<String>) -> Self {
        let name = format!("rehome_t_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| panic!("REHOME_TEST_POSTGRES={admin}: cannot connect: {e}"));
        let within = tablespace.as_ref().map(|t| format!(" TABLESPACE {t}")).unwrap_or_default();
        conn.execute(format!("CREATE DATABASE {name}{within}").as_str()).await.expect("create the test database");
        conn.close().await.ok();
        let mut url = url::Url::parse(&admin).expect("REHOME_TEST_POSTGRES is a URL");
        url.set_path(&name);
        // A small pool per test: a couple of hundred tests share one server's connections.
        url.query_pairs_mut().append_pair("max_connections", "5");
        Self { url: url.into(), postgres: Some((admin, name)), tablespace }
    }

    /// True on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.postgres.is_some()
    }

    /// The SQLite file, on SQLite.
    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self.url.strip_prefix("sqlite://").map(Into::into)
    }

    /// A pool of the test's own on this database, for raw SQL.
    pub async fn raw(&self) -> RawPool {
        RawPool::connect(&self.url).await
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((admin, name)) = self.postgres.take() else {
            return;
        };
        let tablespace = self.tablespace.take();
        // A database on a small disk is never kept: the disk is unmounted after the test,
        // and a PostgreSQL server left with tables whose files are gone fails every
        // checkpoint from then on (and so every other test's CREATE DATABASE).
        if std::thread::panicking() && tablespace.is_none() {
            eprintln!("test database kept for inspection: {name}");
            return;
        }
        // Drop is synchronous and may run inside the test's runtime: drop the database from
        // a thread of its own; FORCE ends the connections the server still holds.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let mut conn = sqlx::PgConnection::connect(&admin).await.ok()?;
                conn.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str()).await.ok()?;
                if let Some(tablespace) = tablespace {
                    conn.execute(format!("DROP TABLESPACE IF EXISTS {tablespace}").as_str()).await.ok()?;
                }
                conn.close().await.ok()
            })
        });
        let _ = dropped.join();
    }
}

/// A connection pool of either backend, opened by a test for raw SQL (the server's pools
/// are private). Run backend-generic code on it with [`on_raw!`].
pub enum RawPool {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

/// Runs `$body` with `$pool` bound to the backend pool inside a [`RawPool`]; the body is
/// compiled once per backend, so binds and row types may be written once.
macro_rules! on_raw {
    ($raw:expr, |$pool:ident| $body:expr) => {
        match $raw {
            $crate::helpers::RawPool::Sqlite($pool) => $body,
            $crate::helpers::RawPool::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_raw;

impl RawPool {
    pub async fn connect(url: &str) -> Self {
        if rehome::store::is_postgres_url(url) {
            Self::Postgres(sqlx::PgPool::connect(url).await.expect("connect to the test database"))
        } else {
            Self::Sqlite(sqlx::SqlitePool::connect(url).await.expect("open the test database"))
        }
    }

    /// Runs one statement (valid on both backends), panicking on error.
    /// The one integer `sql` answers (a count).
    pub async fn count(&self, sql: &str) -> i64 {
        on_raw!(self, |pool| sqlx::query_scalar(sql).fetch_one(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}")))
    }

    pub async fn execute(&self, sql: &str) {
        on_raw!(self, |pool| {
            sqlx::query(sql).execute(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        })
    }

    pub async fn close(&self) {
        on_raw!(self, |pool| pool.close().await)
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
    /// Runs the thumbnail, image import and mail queues until nothing is due now (work
    /// waiting for a later retry is left to its time); answers how many rows were worked.
    pub async fn run_pending(&self) -> usize {
        self.queues.run_pending().await
    }

    /// Waits until the work the server's requests began and did not wait for is done (a
    /// password reset link made after its page answered).
    pub async fn settle(&self) {
        let unawaited = &self.state.unawaited;
        unawaited.close();
        unawaited.wait().await;
        unawaited.reopen();
    }

    /// Moves the server's clock `by` ahead: what expires (keys, idempotency keys) expires
    /// without the test waiting for it.
    pub fn advance_clock(&self, by: std::time::Duration) {
        self.state.clock.advance(by);
    }

    pub async fn stop(mut self) {
        self.halt().await;
    }

    /// [`TestApp::stop`], keeping the database and the directory to inspect them after.
    pub async fn stop_and_keep(mut self) -> (TestDb, TempDir) {
        self.halt().await;
        (self.db, self.dir)
    }

    async fn halt(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.server.take() {
            handle.await.expect("server task").expect("server");
        }
    }
}

/// Reads a JSON body, panicking with the raw text when it is not JSON.
/// Asks `check` again every 20 ms until it answers `Some`, for at most `limit`; `None` when
/// the time ran out. The one way tests wait for what they cannot drive: another process, the
/// webhook deliverer's loop, a listener coming up. (The thumbnail, image import and mail
/// queues are driven instead: [`TestApp::run_pending`].)
pub async fn poll<T, F, Fut>(limit: std::time::Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(found) = check().await {
            return Some(found);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Waits (at most `secs` s) until `url` answers 200; false if it never did.
pub async fn answers_ok(url: &str, secs: u64) -> bool {
    let ok = || async { reqwest::get(url).await.is_ok_and(|r| r.status() == 200).then_some(()) };
    poll(std::time::Duration::from_secs(secs), ok).await.is_some()
}

/// Waits until the server at `base` is ready (`/readyz` answers 200), at most 20 s.
pub async fn wait_ready(base: &str) {
    assert!(answers_ok(&format!("{base}/readyz"), 20).await, "server at {base} never became ready");
}

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

/// The `rehome` binary of this build.
pub const REHOME_BIN: &str = env!("CARGO_BIN_EXE_rehome");

/// Runs the `rehome` binary with `args` and `env`, without the caller's data key or log
/// settings; answers (success, stdout, stderr).
pub fn run_rehome(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let output = std::process::Command::new(REHOME_BIN)
        .args(args)
        .env_remove("REHOME_DATA_KEY")
        .env_remove("REHOME_DATA_KEY_FILE")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("run rehome");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into(),
        String::from_utf8_lossy(&output.stderr).into(),
    )
}

/// The last line of a command's output (where the admin commands print ids and secrets).
pub fn last_line(s: &str) -> &str {
    s.trim_end().lines().last().unwrap_or("")
}

/// The local SMTP server of the mail tests (`tests/smtp/server.py`, on aiosmtpd), on a free
/// port of 127.0.0.1, saving what it receives in a directory of its own; killed on drop. It
/// can be stopped (nothing listens on its port then) and started again on the same port and
/// directory.
pub struct SmtpServer {
    pub port: u16,
    /// Holds `<n>.eml` (the raw message) and `<n>.json` (as Python's `email` reads it).
    pub dir: TempDir,
    rejected: Vec<String>,
    child: Option<std::process::Child>,
}

/// What the SMTP server received: `tests/smtp/server.py`'s summary of one message.
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    pub from: String,
    pub to: String,
    pub subject: String,
    /// The text/plain body with `\n` line ends.
    pub text: String,
    /// The text/html body, empty when the message has none.
    pub html: String,
    /// `(file name, media type, bytes)` of each attachment.
    pub attachments: Vec<(String, String, Vec<u8>)>,
    /// The envelope's recipients (RCPT TO).
    pub rcpt_tos: Vec<String>,
    /// Every header as `(name, decoded value)`.
    pub headers: Vec<(String, String)>,
    /// The message exactly as received.
    pub raw: Vec<u8>,
}

/// True when `python3` can import every one of `modules` (the test's Python tools, all
/// pinned in tests/requirements.txt). When one is missing, `test` says which and how to get
/// it, and passes; with `REHOME_TEST_REQUIRE_PYTHON=1` (CI sets it) it fails instead.
/// Tests never install packages themselves.
pub fn python_tools(test: &str, modules: &[&str]) -> bool {
    let missing: Vec<&str> = modules
        .iter()
        .copied()
        .filter(|module| {
            !std::process::Command::new("python3")
                .args(["-c", &format!("import {module}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let how = "python3 -m pip install -r tests/requirements.txt";
    assert!(
        std::env::var("REHOME_TEST_REQUIRE_PYTHON").as_deref() != Ok("1"),
        "{test}: REHOME_TEST_REQUIRE_PYTHON=1 but Python cannot import {}: {how}",
        missing.join(", ")
    );
    eprintln!(
        "{test}: SKIPPED: Python cannot import {} ({how}); set REHOME_TEST_REQUIRE_PYTHON=1 to make this a failure",
        missing.join(", ")
    );
    false
}

/// A port nothing listens on as this returns.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

impl SmtpServer {
    /// A running server, or `None` when aiosmtpd is missing (see [`python_tools`]).
    pub async fn start(test: &str) -> Option<Self> {
        Self::start_rejecting(test, &[]).await
    }

    /// As [`SmtpServer::start`], refusing the `rejected` recipients with 550 at RCPT.
    pub async fn start_rejecting(test: &str, rejected: &[&str]) -> Option<Self> {
        let mut server = Self::down(test)?;
        server.rejected = rejected.iter().map(|r| (*r).to_owned()).collect();
        // The port was free when chosen; another process may take it first: try another.
        for _ in 0..3 {
            if server.try_up().await {
                return Some(server);
            }
            server.port = free_port();
        }
        panic!("the SMTP server did not start");
    }

    /// A server not started yet: its port (free now) is where mail goes once
    /// [`SmtpServer::up`] starts it. `None` when aiosmtpd is missing.
    pub fn down(test: &str) -> Option<Self> {
        if !python_tools(test, &["aiosmtpd.controller"]) {
            return None;
        }
        let dir = tempfile::tempdir().expect("mail dir");
        Some(Self { port: free_port(), dir, rejected: Vec::new(), child: None })
    }

    /// The `REHOME_SMTP_URL` of this server.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again) on its port and directory; waits until it answers.
    pub async fn up(&mut self) {
        assert!(self.try_up().await, "the SMTP server did not start on port {}", self.port);
    }

    /// [`SmtpServer::up`], answering false when the server did not start (its port taken).
    async fn try_up(&mut self) -> bool {
        assert!(self.child.is_none(), "the SMTP server is already up");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/smtp/server.py");
        let mut command = std::process::Command::new("python3");
        command.arg(script).args(["--port", &self.port.to_string()]).arg("--dir").arg(self.dir.path());
        for rejected in &self.rejected {
            command.args(["--reject", rejected]);
        }
        // Its stdin is a pipe held here: the server also ends when the test process does.
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start tests/smtp/server.py");
        let stdout = child.stdout.take().expect("server stdout");
        let ready = tokio::task::spawn_blocking(move || {
            use std::io::BufRead;
            let mut line = String::new();
            std::io::BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), ready).await;
        if matches!(&line, Ok(Ok(Ok(l))) if l.trim() == "ready") {
            self.child = Some(child);
            return true;
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }

    /// Stops the server: nothing listens on its port until [`SmtpServer::up`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Every message received so far, in the order received.
    pub fn received(&self) -> Vec<ReceivedMail> {
        let mut names: Vec<_> = std::fs::read_dir(self.dir.path())
            .expect("read the mail dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        names.iter().map(|path| read_received(path)).collect()
    }

    /// Waits (at most `secs` seconds) until `n` messages were received; returns all of them.
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<ReceivedMail> {
        let limit = std::time::Duration::from_secs(secs);
        poll(limit, || async { Some(self.received()).filter(|received| received.len() >= n) })
            .await
            .unwrap_or_else(|| self.received())
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_received(path: &Path) -> ReceivedMail {
    use base64::Engine;
    let text = std::fs::read_to_string(path).expect("read a received message");
    let v: Value = serde_json::from_str(&text).expect("server.py's JSON");
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let attachments = v["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let bytes = base64::engine::general_purpose::STANDARD.decode(s(&a["base64"])).expect("attachment base64");
            (s(&a["name"]), s(&a["content_type"]), bytes)
        })
        .collect();
    let headers = v["headers"].as_array().into_iter().flatten().map(|h| (s(&h[0]), s(&h[1]))).collect();
    ReceivedMail {
        from: s(&v["from"]),
        to: s(&v["to"]),
        subject: s(&v["subject"]),
        text: s(&v["text"]).replace("\r\n", "\n"),
        html: s(&v["html"]),
        attachments,
        rcpt_tos: v["envelope"]["rcpt_tos"].as_array().into_iter().flatten().map(s).collect(),
        headers,
        raw: std::fs::read(path.with_extension("eml")).expect("the raw message"),
    }
}

/// The sender of the test servers' mail.
pub const TEST_MAIL_FROM: &str = "Rehome <noreply@rehome.example>";

/// Sends mail through `smtp` (which may be down) as [`TEST_MAIL_FROM`], looking at the
/// outbox every 50 ms and retrying after 100 ms (doubling).
pub fn mail_to(smtp: &SmtpServer, config: &mut Config) {
    config.smtp_url = Some(smtp.url().into());
    config.mail_from = Some(TEST_MAIL_FROM.to_owned());
    config.mail_poll_ms = 50;
    config.mail_retry_base_ms = 100;
}

/// A server with mail sent through `smtp` (see [`mail_to`]); `adjust` comes last.
pub async fn spawn_app_with_mail(smtp: &SmtpServer, adjust: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_with(|c| {
        mail_to(smtp, c);
        adjust(c);
    })
    .await
}

/// Starts a server on an existing database and directory (those of a stopped
/// [`TestApp`], from [`TestApp::stop_and_keep`]), as [`spawn_app_with`] does.
pub async fn spawn_app_on(db: TestDb, dir: TempDir, adjust: impl FnOnce(&mut Config)) -> TestApp {
    let mut config =
        Config { addr: "127.0.0.1:0".parse().unwrap(), media_dir: dir.path().join("media"), ..Config::default() };
    adjust(&mut config);
    let store = open_store(&db.url).await;
    let server = Server::bind(config, store.clone()).await.expect("bind");
    let addr = server.local_addr();
    let metrics_addr = server.metrics_addr();
    let queues = server.state().queues.clone();
    let state = server.state().clone();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(server.run_until(async move {
        let _ = rx.await;
    }));
    TestApp {
        addr,
        metrics_addr,
        base: format!("http://{addr}"),
        // Idle connections are dropped well before the server closes them (its header
        // timeout, 15 s by default, also ends idle keep-alive connections), so a request
        // never goes out on a connection the server is closing at that instant.
        client: reqwest::Client::builder()
            .pool_idle_timeout(std::time::Duration::from_secs(5))
            .build()
            .expect("an HTTP client"),
        store,
        db,
        dir,
        queues,
        state,
        shutdown: Some(tx),
        server: Some(handle),
    }
}

/// A second node on `app`'s database; it stops when the sender is dropped.
pub async fn second_node(app: &TestApp) -> (String, oneshot::Sender<()>) {
    let config =
        Config { addr: "127.0.0.1:0".parse().unwrap(), media_dir: app.dir.path().join("media"), ..Config::default() };
    let server = Server::bind(config, open_store(&app.db.url).await).await.expect("bind the second node");
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async move {
        let _ = rx.await;
    }));
    (base, tx)
}

/// A filesystem of a few megabytes of its own (a tmpfs), mounted for one test and
/// unmounted when dropped: the disk a full-disk test fills. Mounting needs root; without
/// it the test says so and passes, unless `REHOME_TEST_REQUIRE_TMPFS=1` (CI sets it).
pub struct SmallDisk {
    dir: TempDir,
}

impl SmallDisk {
    pub fn mount(test: &str, megabytes: u32) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m,mode=0700"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            return Some(Self { dir });
        }
        assert!(
            std::env::var("REHOME_TEST_REQUIRE_TMPFS").as_deref() != Ok("1"),
            "{test}: cannot mount a tmpfs (needs root), and REHOME_TEST_REQUIRE_TMPFS=1"
        );
        eprintln!("{test}: skipped: cannot mount a tmpfs (needs root)");
        None
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A database on this disk: a SQLite file, or on PostgreSQL a new database in a
    /// tablespace here (the test server must run on this machine; its WAL stays on its own
    /// disk, so it is the tables that run out of space).
    pub async fn database(&self) -> TestDb {
        let Some(admin) = postgres_admin_url() else {
            let url = format!("sqlite://{}", self.path().join("rehome.db").display());
            return TestDb { url, postgres: None, tablespace: None };
        };
        let mut conn = sqlx::PgConnection::connect(&admin).await.expect("connect to the test server");
        // The tablespace's directory must belong to the server's own user.
        let data: String = sqlx::query_scalar("SELECT current_setting('data_directory')")
            .fetch_one(&mut conn)
            .await
            .expect("the server's data directory (the test user must be a superuser)");
        let owner = std::fs::metadata(&data).expect("the PostgreSQL server runs on this machine");
        use std::os::unix::fs::MetadataExt;
        std::os::unix::fs::chown(self.path(), Some(owner.uid()), Some(owner.gid())).expect("chown the small disk");
        let tablespace = format!("rehome_ts_{}", uuid::Uuid::new_v4().simple());
        let location = self.path().display().to_string().replace('\'', "''");
        conn.execute(format!("CREATE TABLESPACE {tablespace} LOCATION '{location}'").as_str())
            .await
            .expect("create a tablespace on the small disk");
        conn.close().await.ok();
        TestDb::create_postgres(admin, Some(tablespace)).await
    }

    /// Fills the disk with a ballast file, leaving about `leave` bytes free.
    pub fn fill(&self, leave: u64) {
        use std::io::Write;
        let path = self.path().join("ballast");
        let mut file = std::fs::File::create(&path).expect("create the ballast");
        let chunk = vec![0xA5_u8; 64 * 1024];
        let mut written: u64 = 0;
        loop {
            match file.write(&chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n as u64,
            }
        }
        file.set_len(written.saturating_sub(leave)).expect("shrink the ballast");
        file.sync_all().ok();
    }

    /// Frees the space the ballast took.
    pub fn free(&self) {
        std::fs::remove_file(self.path().join("ballast")).expect("remove the ballast");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// `VmRSS` and `VmHWM` (the peak resident set) of process `pid`, in KiB; `None` where
/// `/proc` does not say (not Linux, or the process is gone).
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1))?.parse().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
