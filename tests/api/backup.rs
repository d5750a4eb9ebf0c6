//! `rehome backup --to PATH` (decisions 13.3): a consistent copy of the SQLite database
//! taken while the server runs and writes; a server started on the copy with the same data
//! key serves its data, sealed values included. On PostgreSQL the command refuses and
//! names pg_dump; pg_dump and pg_restore, as docs/deployment.md shows them, back up and
//! restore a running deployment, sealed values included.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use sqlx::{Connection, SqliteConnection};

use crate::helpers::{binary_env, json, on_postgres, run_rehome, spawn_app_on, Partner, TestApp, TestDb};
use crate::listings::{create_id, listing};
use crate::marketplace::{credit_code, market_app};
use crate::webhooks::receiver::Receiver;
use crate::webhooks::{configure, WEBHOOK};

fn backup(url: &str, to: &std::path::Path) -> (bool, String, String) {
    let env = binary_env(url);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_rehome(&["backup", "--to", to.to_str().unwrap()], &env)
}

#[tokio::test]
async fn a_backup_taken_during_a_burst_of_writes_is_whole_and_a_server_on_it_serves_the_data() {
    if on_postgres() {
        return; // PostgreSQL is backed up with pg_dump (the test below).
    }
    let app = market_app().await;
    let partner = app.partner("acme").await;
    // A credit code: in full only in the `redemption.created` event waiting in the outbox
    // (no endpoint yet), sealed there with the data key.
    // Writers create listings until the backup is done.
    let busy = busy(&app, &partner).await;
    let (code, before) = (busy.code.clone(), busy.before.clone());
    let restored_dir = tempfile::tempdir().unwrap();
    let copy = restored_dir.path().join("restored.db");
    let (url, to) = (app.db.url.clone(), copy.clone());
    let (ok, out, err) = tokio::task::spawn_blocking(move || backup(&url, &to)).await.unwrap();
    busy.written(4).await;
    let during = busy.stop().await;
    assert!(ok, "backup failed: {out}\n{err}");
    assert!(during > 0, "no write ran alongside the backup");
    let key_file = app.dir.path().join("rehome.key");
    assert!(out.contains(&key_file.display().to_string()), "where the data key is: {out}");

    // Whole, by SQLite's own check; and never written over.
    let mut conn = SqliteConnection::connect(&format!("sqlite://{}?mode=ro", copy.display())).await.unwrap();
    let check: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&mut conn).await.unwrap();
    assert_eq!(check, "ok");
    let copied_during: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM listings WHERE title LIKE 'During %'").fetch_all(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    let size = std::fs::metadata(&copy).unwrap().len();
    let (url, to) = (app.db.url.clone(), copy.clone());
    let (again, _, refused) = tokio::task::spawn_blocking(move || backup(&url, &to)).await.unwrap();
    assert!(!again && refused.contains("already exists"), "{refused}");
    assert_eq!(std::fs::metadata(&copy).unwrap().len(), size, "the existing file is untouched");
    app.stop().await;

    // A server on the copy, with the same data key, serves what was acknowledged before.
    let db = TestDb::create_named(restored_dir.path(), "restored.db").await;
    let restored = spawn_app_on(db, restored_dir, |config| {
        config.allow_private_network = true;
        config.webhook_allow_http = true;
        config.webhook_poll_ms = 50;
    })
    .await;
    for id in &before {
        let response = restored.get(&format!("/v1/listings/{id}"), &partner.key).await;
        assert_eq!(response.status(), 200, "listing {id}");
    }
    // And the writes of the burst that the copy holds.
    for id in &copied_during {
        assert_eq!(restored.get(&format!("/v1/listings/{id}"), &partner.key).await.status(), 200, "listing {id}");
    }
    // The sealed event opens with the key: delivered with the code in full.
    let receiver = Receiver::start().await;
    configure(&restored, &partner, &receiver.url()).await;
    let hits = receiver.wait_for_hits(1, Duration::from_secs(20)).await;
    let body = String::from_utf8_lossy(&hits[0].body);
    assert!(body.contains("redemption.created") && body.contains(&code), "{body}");
}

/// Four tasks creating listings titled `During …` until `stop`; each returns how many.
/// A deployment in use: a credit code issued, 20 listings made, and writers creating more
/// (for at least 200 ms already) until `stop`.
struct Busy {
    code: String,
    before: Vec<i64>,
    stop: Arc<AtomicBool>,
    /// Listings the writers have had acknowledged so far.
    made: Arc<AtomicUsize>,
    writers: Vec<tokio::task::JoinHandle<usize>>,
}

impl Busy {
    /// Waits until the writers have had `more` listings acknowledged from now on.
    async fn written(&self, more: usize) {
        let until = self.made.load(Ordering::Relaxed) + more;
        let done = || async { (self.made.load(Ordering::Relaxed) >= until).then_some(()) };
        crate::helpers::poll(Duration::from_secs(30), done).await.expect("the writers kept writing");
    }

    /// Stops the writers; how many listings they made.
    async fn stop(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let mut during = 0;
        for writer in self.writers {
            during += writer.await.unwrap();
        }
        during
    }
}

async fn busy(app: &TestApp, partner: &Partner) -> Busy {
    let redemption = credit_code(app, partner, json!(80)).await;
    let code = redemption["code"].as_str().unwrap().to_owned();
    let mut before = Vec::new();
    for n in 0..20 {
        before.push(create_id(app, &partner.key, json!({"title": format!("Before {n}")})).await);
    }
    let (stop, made) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let writers = start_writers(app, partner, &stop, &made);
    let busy = Busy { code, before, stop, made, writers };
    busy.written(4).await;
    busy
}

fn start_writers(
    app: &TestApp,
    partner: &Partner,
    stop: &Arc<AtomicBool>,
    made: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<usize>> {
    (0..4)
        .map(|w| {
            let (client, url, key, stop, made) =
                (app.client.clone(), app.url("/v1/listings"), partner.key.clone(), stop.clone(), made.clone());
            tokio::spawn(async move {
                let mut created = 0;
                while !stop.load(Ordering::Relaxed) {
                    let body = listing(json!({"title": format!("During {w}-{created}")}));
                    let response = client.post(&url).bearer_auth(&key).json(&body).send().await.unwrap();
                    assert_eq!(response.status(), 201);
                    created += 1;
                    made.fetch_add(1, Ordering::Relaxed);
                }
                created
            })
        })
        .collect()
}

/// PostgreSQL 15's client tools (CI's server is 15; a dump restores with the same major
/// version's `pg_restore`), or the ones on the `PATH`.
fn pg_tool(name: &str) -> std::path::PathBuf {
    let packaged = Path::new("/usr/lib/postgresql/15/bin").join(name);
    if packaged.is_file() {
        packaged
    } else {
        name.into()
    }
}

/// The test database's URL as libpq takes it: without the pool settings sqlx reads from the
/// query (libpq refuses parameters it does not know).
fn libpq_url(url: &str) -> String {
    let mut url = url::Url::parse(url).expect("a database URL");
    url.set_query(None);
    url.into()
}

fn run_tool(name: &str, args: &[&str]) {
    let output = Command::new(pg_tool(name)).args(args).output().unwrap_or_else(|e| panic!("run {name}: {e}"));
    assert!(
        output.status.success(),
        "{name} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// docs/deployment.md, "Backups", PostgreSQL: `pg_dump --format=custom` of the running
/// deployment, `pg_restore --no-owner` into a new database, a server on it with the same
/// data key.
#[tokio::test]
async fn a_pg_dump_taken_while_the_server_writes_restores_into_a_new_database_with_its_sealed_values() {
    if !on_postgres() {
        eprintln!("pg_dump restore: skipped: set REHOME_TEST_POSTGRES to a PostgreSQL admin URL to run it");
        return;
    }
    let app = market_app().await;
    let partner = app.partner("acme").await;
    // Sealed with the data key: the webhook endpoint's signing secret, and the credit code
    // (in the `redemption.created` event and the redemption's own row).
    let receiver = Receiver::start().await;
    let secret = configure(&app, &partner, &receiver.url()).await;
    let busy = busy(&app, &partner).await;
    let (code, before) = (busy.code.clone(), busy.before.clone());
    let dump_dir = tempfile::tempdir().unwrap();
    let dump = dump_dir.path().join("rehome.dump");
    let (source, file) = (libpq_url(&app.db.url), dump.display().to_string());
    tokio::task::spawn_blocking(move || run_tool("pg_dump", &["--format=custom", "--file", &file, &source]))
        .await
        .unwrap();
    busy.written(4).await;
    let during = busy.stop().await;
    assert!(during > 0, "no write ran alongside the dump");
    app.stop().await;

    let restored_dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(restored_dir.path()).await;
    let target = libpq_url(&db.url);
    run_tool("pg_restore", &["--no-owner", "--exit-on-error", "--dbname", &target, &dump.display().to_string()]);
    let copied_during: Vec<i64> = {
        let pool = sqlx::PgPool::connect(&target).await.unwrap();
        let ids = sqlx::query_scalar("SELECT id FROM listings WHERE title LIKE 'During %'").fetch_all(&pool).await;
        pool.close().await;
        ids.unwrap()
    };
    let restored = spawn_app_on(db, restored_dir, |config| {
        config.allow_private_network = true;
        config.webhook_allow_http = true;
        config.webhook_poll_ms = 50;
    })
    .await;
    for id in before.iter().chain(&copied_during) {
        assert_eq!(restored.get(&format!("/v1/listings/{id}"), &partner.key).await.status(), 200, "listing {id}");
    }
    // The credit code opens with the same key.
    let page = json(restored.get("/v1/redemptions", &partner.key).await).await;
    let codes: Vec<&str> = page["data"].as_array().unwrap().iter().filter_map(|r| r["code"].as_str()).collect();
    assert_eq!(codes, [code.as_str()], "{page}");
    // So does the signing secret: the restored server signs with the one given at configuration.
    let sent = json(restored.post(&format!("{WEBHOOK}/test"), &partner.key, &json!({})).await).await;
    let event_id = sent["event_id"].as_str().unwrap_or_else(|| panic!("no event id in {sent}")).to_owned();
    let arrived = || async { receiver.hits().into_iter().find(|hit| hit.event_id() == event_id) };
    let hit = crate::helpers::poll(Duration::from_secs(20), arrived).await.expect("the test event never arrived");
    let now = chrono::Utc::now().timestamp();
    assert!(rehome::jobs::signature::verify(&secret, hit.header("x-service-signature"), &hit.body, now, 300));
}

#[tokio::test]
async fn backup_refuses_postgresql_and_names_pg_dump() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("copy.db");
    let (ok, _, err) = backup("postgres://postgres@127.0.0.1:1/none", &to);
    assert!(!ok);
    assert!(err.contains("pg_dump") && err.contains("docs/deployment.md"), "names pg_dump and the docs: {err}");
    assert!(!to.exists());
}

#[tokio::test]
async fn backup_of_a_missing_database_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (from, to) = (dir.path().join("none.db"), dir.path().join("copy.db"));
    let (ok, _, err) = backup(&format!("sqlite://{}", from.display()), &to);
    assert!(!ok && err.contains("no SQLite database"), "{err}");
    assert!(!from.exists() && !to.exists());
}
