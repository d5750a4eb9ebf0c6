//! Event bodies encrypted at rest (decisions.md 6.5): a credit code sent in full in
//! `redemption.created` is nowhere in the stored database (on SQLite, nowhere in its files;
//! on PostgreSQL, in no text or bytes column of any table), yet delivered byte for byte;
//! the data key's loading by the real binary; bodies that do not open are never sent.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine;
use rehome::domain::event::{Event, EventType};
use rehome::domain::time::Ts;
use rehome::jobs::signature::verify;
use rehome::jobs::{Deliverer, Outbox, WorkerSettings};
use rehome::store::{insert_event, Sealer, Store};
use serde_json::{json, Value};

use super::crash::{free_port, serve_with, wait_ready};
use super::receiver::Receiver;
use super::{configure, redemption, wait_for_status, webhook_app};
use crate::helpers::{on_raw, open_store, RawPool, TestDb};
use crate::marketplace::{credit_code, market_app};

const BIN: &str = env!("CARGO_BIN_EXE_rehome");

/// Every byte of the SQLite files of `db` (the database, its WAL and shared memory).
fn database_bytes(db: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let path = format!("{}{suffix}", db.display());
        if let Ok(mut file) = std::fs::File::open(&path) {
            file.read_to_end(&mut bytes).unwrap();
        }
    }
    assert!(!bytes.is_empty(), "no database at {}", db.display());
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Where `text` is stored in the database, if anywhere: on SQLite, a byte search of its
/// files (so deleted rows and free pages count too); on PostgreSQL, which keeps its files
/// out of reach, every text-like and bytes column of every table, read through SQL.
async fn stored_at(db: &TestDb, text: &str) -> Option<String> {
    if let Some(path) = db.sqlite_path() {
        return contains(&database_bytes(&path), text).then(|| "the database files".to_owned());
    }
    let RawPool::Postgres(pool) = db.raw().await else { unreachable!("a PostgreSQL test database") };
    let columns: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
         WHERE table_schema = current_schema()
           AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea')",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(columns.iter().any(|(t, c, _)| t == "webhook_events" && c == "body_sealed"), "{columns:?}");
    let mut found = None;
    for (table, column, data_type) in columns {
        let test = if data_type == "bytea" {
            format!(r#"position(convert_to($1, 'UTF8') IN "{column}") > 0"#)
        } else {
            format!(r#"strpos("{column}"::text, $1) > 0"#)
        };
        let hits: i64 = sqlx::query_scalar(&format!(r#"SELECT count(*) FROM "{table}" WHERE {test}"#))
            .bind(text)
            .fetch_one(&pool)
            .await
            .unwrap();
        if hits > 0 {
            found = Some(format!("{table}.{column}"));
            break;
        }
    }
    pool.close().await;
    found
}

/// Asserts that neither `code` nor its dash-less form is stored in `db`.
async fn assert_not_stored(db: &TestDb, code: &str, when: &str) {
    for form in [code.to_owned(), code.replace('-', "")] {
        if let Some(place) = stored_at(db, &form).await {
            panic!("{when}: the code {form} is in {place}");
        }
    }
}

/// The stored columns of one event: (body, body_sealed).
async fn stored(db: &TestDb, event_id: &str) -> (String, Option<Vec<u8>>) {
    let raw = db.raw().await;
    let row = on_raw!(&raw, |pool| {
        sqlx::query_as("SELECT body, body_sealed FROM webhook_events WHERE id = $1")
            .bind(event_id)
            .fetch_one(pool)
            .await
            .unwrap()
    });
    raw.close().await;
    row
}

#[tokio::test]
async fn a_credit_code_is_delivered_in_full_but_is_nowhere_in_the_database_files() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    let secret = configure(&app, &partner, &receiver.url()).await;

    let redemption = credit_code(&app, &partner, json!(25)).await;
    let code = redemption["code"].as_str().unwrap().to_owned();
    assert!(code.starts_with("RH-") && code.len() == 22, "{code}");

    let hits = receiver.wait_for_hits(1, Duration::from_secs(5)).await;
    let hit = &hits[0];
    assert!(verify(&secret, hit.header("x-service-signature"), &hit.body, chrono::Utc::now().timestamp(), 300));
    let body: Value = serde_json::from_slice(&hit.body).unwrap();
    assert_eq!(body["type"], "redemption.created");
    assert_eq!(body["data"]["code"], code.as_str(), "the partner receives the code in full");
    let event_id = hit.event_id();
    wait_for_status(&app, &partner, &event_id, "delivered", Duration::from_secs(5)).await;

    let (clear, sealed) = stored(&app.db, &event_id).await;
    assert_eq!(clear, "", "no clear body");
    let sealed = sealed.expect("a sealed body");
    assert_eq!(sealed.len(), 24 + hit.body.len() + 16, "nonce ‖ ciphertext ‖ tag");
    assert_not_stored(&app.db, &code, "while serving").await;

    // A replay sends the very same bytes again, opened from the same sealed row.
    let replay = app.post(&format!("{}/{event_id}/replay", super::DELIVERIES), &partner.key, &json!({})).await;
    assert_eq!(replay.status(), 200);
    let hits = receiver.wait_for_hits(2, Duration::from_secs(5)).await;
    assert_eq!(hits[1].body, hits[0].body);

    // Keep the database past the server's end to read it once the server has closed it.
    let (db, _dir) = app.stop_and_keep().await;
    assert_not_stored(&db, &code, "after shutdown (WAL checkpointed into the database)").await;
}

#[tokio::test]
async fn a_body_sealed_under_another_key_is_never_sent_and_is_logged_undecryptable() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;

    let foreign = Event::new(partner.brand_id, EventType::RedemptionCreated, redemption(&partner, 1)).unwrap();
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        let mut conn = pool.acquire().await.unwrap();
        insert_event((&mut *conn).into(), &Sealer::new(&[1; 32]), &foreign).await.unwrap();
    });
    // A body moved from another row does not open either (the event id is bound to it).
    let moved = Event::new(partner.brand_id, EventType::CollectionScheduled, json!({"id": "col_1"})).unwrap();
    app.store.emit_event(&moved).await.unwrap();
    let swapped = "evt_swappedswappedswapped000";
    on_raw!(&raw, |pool| {
        sqlx::query(
            "INSERT INTO webhook_events (id, brand_id, type, body, body_sealed, created_at, window_start, next_attempt_at)
             SELECT $1, brand_id, type, '', body_sealed, created_at, created_at, created_at
             FROM webhook_events WHERE id = $2",
        )
        .bind(swapped)
        .bind(&moved.id)
        .execute(pool)
        .await
        .unwrap();
    });

    for id in [foreign.id.as_str(), swapped] {
        let entry = super::wait_for_attempts(&app, &partner, id, 1, Duration::from_secs(5)).await;
        assert_eq!(entry["last_error"], "undecryptable", "{entry}");
        assert_eq!(entry["status"], "pending", "retried: a restart with the right key delivers it");
        assert_eq!(entry["attempt_log"][0]["error"], "undecryptable", "{entry}");
        assert!(entry["attempt_log"][0]["status_code"].is_null());
    }
    // Only the event whose body opens was ever sent, and other events are unaffected.
    let event = super::emit(&app, &partner, 2).await;
    wait_for_status(&app, &partner, &event.id, "delivered", Duration::from_secs(5)).await;
    let sent: Vec<String> = receiver.hits().iter().map(|h| h.event_id()).collect();
    assert!(!sent.contains(&foreign.id) && !sent.iter().any(|id| id == swapped), "{sent:?}");
    assert!(sent.contains(&moved.id) && sent.contains(&event.id), "{sent:?}");
    raw.close().await;
}

#[tokio::test]
async fn bodies_stored_in_clear_before_the_data_key_are_sealed_at_start_and_sent_unchanged() {
    // On PostgreSQL no database starts with clear bodies (its schema starts sealed and
    // copy-to-postgres seals first), but one filled by other means is sealed all the same.
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "legacy.db").await;
    let store = open_store(&db.url).await;
    let brand = rehome::usecases::accounts::create_brand(&store, "acme", "Acme").await.unwrap();
    let receiver = Receiver::start().await;
    let audit = super::operator_configured(brand.id);
    store.create_webhook_endpoint(brand.id, &receiver.url(), true, "whsec_test", None, &audit).await.unwrap();
    store.close().await;

    // A row as a server before migration 0008 wrote it: the envelope in clear.
    let legacy = Event::new(brand.id, EventType::RedemptionCreated, json!({"code": "RH-LGCY-7Q2M-9XKD-4TNP"})).unwrap();
    let raw = db.raw().await;
    on_raw!(&raw, |pool| {
        sqlx::query(
            "INSERT INTO webhook_events (id, brand_id, type, body, created_at, window_start, next_attempt_at)
             VALUES ($1, $2, $3, $4, $5, $5, $5)",
        )
        .bind(&legacy.id)
        .bind(brand.id)
        .bind(legacy.event_type.as_str())
        .bind(legacy.envelope())
        .bind(Ts::from(legacy.created_at))
        .execute(pool)
        .await
        .unwrap();
    });
    raw.close().await;
    assert!(stored_at(&db, "RH-LGCY-7Q2M-9XKD-4TNP").await.is_some(), "the test wrote it in clear");

    let store = open_store(&db.url).await;
    let (clear, sealed) = stored(&db, &legacy.id).await;
    assert_eq!(clear, "");
    assert!(sealed.is_some());
    assert_not_stored(&db, "RH-LGCY-7Q2M-9XKD-4TNP", "after sealing at start").await;

    let config = rehome::config::Config { allow_private_network: true, ..Default::default() };
    let deliverer = Deliverer::new(store.clone(), WorkerSettings::from_config(&config), Outbox::default()).unwrap();
    assert_eq!(deliverer.deliver_due().await.unwrap(), 1);
    assert_eq!(receiver.hits()[0].body, legacy.envelope().as_bytes(), "the bytes frozen at emission");
    store.close().await;
}

/// Runs `rehome serve` on `url` expecting it to refuse to start; returns its stderr.
fn refused_start(url: &str, env: &[(&str, &str)]) -> String {
    let child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_remove("REHOME_DATA_KEY")
        .env_remove("REHOME_DATA_KEY_FILE")
        .envs(env.iter().copied())
        .env("REHOME_DATABASE_URL", url)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rehome");
    // Waits for it to exit (reading all it wrote); one that serves instead is killed.
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(output) => {
            let output = output.expect("rehome serve's output");
            assert!(!output.status.success());
            String::from_utf8_lossy(&output.stderr).into_owned()
        }
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid]).status();
            panic!("rehome serve started with {env:?}");
        }
    }
}

#[tokio::test]
async fn the_binary_refuses_a_key_of_the_wrong_length() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(dir.path()).await;
    if db.is_postgres() {
        // No key file beside a PostgreSQL database: every node must be given the same key.
        let stderr = refused_start(&db.url, &[]);
        assert!(stderr.contains("every node must use the same data key"), "{stderr}");
    } else {
        std::fs::write(dir.path().join("rehome.key"), [7u8; 31]).unwrap();
        let stderr = refused_start(&db.url, &[]);
        assert!(stderr.contains("holds 31 bytes, not 32"), "{stderr}");
    }

    let named = dir.path().join("named.key");
    std::fs::write(&named, [7u8; 33]).unwrap();
    let stderr = refused_start(&db.url, &[("REHOME_DATA_KEY_FILE", named.to_str().unwrap())]);
    assert!(stderr.contains("holds 33 bytes, not 32"), "{stderr}");

    let short = base64::engine::general_purpose::STANDARD.encode([7u8; 16]);
    let stderr = refused_start(&db.url, &[("REHOME_DATA_KEY", &short)]);
    assert!(stderr.contains("REHOME_DATA_KEY must be the base64 of 32 bytes"), "{stderr}");
}

#[tokio::test]
async fn the_binary_uses_the_environment_key_over_any_file_and_admin_commands_need_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create(dir.path()).await;

    // Admin commands neither need nor create a key (beside the database or where they run).
    let output = Command::new(BIN)
        .args(["brands", "create", "acme", "--name", "Acme"])
        .current_dir(dir.path())
        .env_remove("REHOME_DATA_KEY")
        .env_remove("REHOME_DATA_KEY_FILE")
        .env("REHOME_DATABASE_URL", &db.url)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!dir.path().join("rehome.key").exists(), "an admin command made a key file");

    // Another process seals with the shared key; the server, given it, delivers the event.
    let key = [42u8; 32];
    let store = Store::open(&db.url, Some(Sealer::new(&key))).await.unwrap();
    let brand = store.brand_by_slug("acme").await.unwrap().expect("brand");
    let receiver = Receiver::start().await;
    let audit = super::operator_configured(brand.id);
    store.create_webhook_endpoint(brand.id, &receiver.url(), true, "whsec_test", None, &audit).await.unwrap();
    let event = Event::new(brand.id, EventType::RedemptionCreated, json!({"code": "RH-ENVK-7Q2M-9XKD-4TNP"})).unwrap();
    store.emit_event(&event).await.unwrap();

    let decoy = dir.path().join("decoy.key");
    std::fs::write(&decoy, [1u8; 32]).unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(key);
    let port = free_port();
    let media = dir.path().join("media");
    let serving = serve_with(
        &db.url,
        &media,
        port,
        &[("REHOME_DATA_KEY", &encoded), ("REHOME_DATA_KEY_FILE", decoy.to_str().unwrap())],
    );
    wait_ready(&format!("http://127.0.0.1:{port}")).await;
    let hits = receiver.wait_for_hits(1, Duration::from_secs(10)).await;
    assert_eq!(hits[0].body, event.envelope().as_bytes());
    assert!(!dir.path().join("rehome.key").exists(), "no key file beside the database");
    drop(serving);
    store.close().await;
}
