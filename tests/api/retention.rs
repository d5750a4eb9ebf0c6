//! The retention job (issue 36): for each table it prunes, a row past its window goes and a
//! live one stays; what is kept (the audit log) stays however old; the job deletes in
//! batches, runs by itself under its lease on one node at a time, and counts what it
//! deleted. Rows are made old by writing their instants directly; the job is run as of now.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use rehome::config::Config;
use rehome::domain::retention::Table;
use rehome::domain::time::Ts;
use rehome::jobs::retention::{Retention, Settings};

use crate::helpers::{on_postgres, on_raw, spawn_app, spawn_app_with, RawPool, TestApp};

/// An instant `back` before now.
fn ago(back: TimeDelta) -> Ts {
    Ts::from(Utc::now() - back)
}

/// Runs `sql` with `instants` bound as `$1`, `$2`…
async fn exec(raw: &RawPool, sql: &str, instants: &[Ts]) {
    on_raw!(raw, |pool| {
        let mut query = sqlx::query(sql);
        for at in instants {
            query = query.bind(*at);
        }
        query.execute(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    })
}

async fn count(raw: &RawPool, sql: &str) -> i64 {
    on_raw!(raw, |pool| sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// The job with the default settings over the app's store.
fn job(app: &TestApp) -> Retention {
    Retention::new(app.store.clone(), Settings::from_config(&Config::default()))
}

#[tokio::test]
async fn sign_in_failures_go_after_a_day_and_recent_ones_stay() {
    let app = spawn_app().await;
    let raw = app.db.raw().await;
    let insert = |ip: &str| format!("INSERT INTO sign_in_failures (account_key, ip, at) VALUES ('k', '{ip}', $1)");
    exec(&raw, &insert("10.0.0.1"), &[ago(TimeDelta::hours(25))]).await;
    exec(&raw, &insert("10.0.0.2"), &[ago(TimeDelta::hours(23))]).await;
    exec(&raw, &insert("10.0.0.3"), &[ago(TimeDelta::minutes(1))]).await;

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::SignInFailures), 1);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM sign_in_failures WHERE ip = '10.0.0.1'").await, 0);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM sign_in_failures").await, 2);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn sessions_go_a_window_after_they_ended_or_expired_and_live_ones_stay() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let raw = app.db.raw().await;
    let insert = |name: &str| {
        format!(
            "INSERT INTO sessions (token_hash, user_id, stage, csrf_token, ip, created_at, last_seen_at, ended_at)
             VALUES ({hash}, {user}, 'full', '{name}', '127.0.0.1', $1, $2, $3)",
            hash = if on_postgres() { format!("'\\x{}'::bytea", hex(name)) } else { format!("X'{}'", hex(name)) },
            user = partner.user_id,
        )
    };
    let days = TimeDelta::days;
    // Signed out 31 days ago; idle since 31 days and 12 hours ago; signed out yesterday;
    // in use now; idle since 29 days ago (expired 28.5 days ago: kept).
    let rows = [
        ("ended_old", days(40), days(31), Some(days(31))),
        ("expired_old", days(40), days(31) + TimeDelta::hours(13), None),
        ("ended_recent", days(2), days(1), Some(days(1))),
        ("live", days(1), TimeDelta::minutes(1), None),
        ("expired_recent", days(30), days(29), None),
    ];
    for (name, created, seen, ended) in rows {
        match ended {
            Some(ended) => exec(&raw, &insert(name), &[ago(created), ago(seen), ago(ended)]).await,
            None => exec(&raw, &insert(name).replace("$3", "NULL"), &[ago(created), ago(seen)]).await,
        }
    }

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::Sessions), 2);
    let left: Vec<String> = on_raw!(&raw, |pool| sqlx::query_scalar(
        "SELECT csrf_token FROM sessions WHERE csrf_token <> '' ORDER BY csrf_token"
    )
    .fetch_all(pool)
    .await
    .unwrap());
    assert_eq!(left, ["ended_recent", "expired_recent", "live"]);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn invitations_go_a_window_after_use_or_expiry_and_open_ones_stay() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let raw = app.db.raw().await;
    let insert = |n: u8| {
        format!(
            "INSERT INTO invitations (token_hash, user_id, created_at, expires_at, used_at) VALUES ({hash}, {user}, $1, $2, $3)",
            hash = if on_postgres() { format!("'\\x0{n}'::bytea") } else { format!("X'0{n}'") },
            user = partner.user_id,
        )
    };
    let days = TimeDelta::days;
    // 1: used 40 days ago; 2: expired 31 days ago; 3: used yesterday; 4: open.
    exec(&raw, &insert(1), &[ago(days(41)), ago(days(38)), ago(days(40))]).await;
    exec(&raw, &insert(2).replace("$3", "NULL"), &[ago(days(34)), ago(days(31))]).await;
    exec(&raw, &insert(3), &[ago(days(2)), ago(-days(1)), ago(days(1))]).await;
    exec(&raw, &insert(4).replace("$3", "NULL"), &[ago(days(1)), ago(-days(2))]).await;

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::Invitations), 2);
    let sql = format!("SELECT COUNT(*) FROM invitations WHERE user_id = {}", partner.user_id);
    assert_eq!(count(&raw, &sql).await, 2);
    let sql = format!("SELECT COUNT(*) FROM invitations WHERE used_at IS NULL AND user_id = {}", partner.user_id);
    assert_eq!(count(&raw, &sql).await, 1, "the open invitation stays");
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn sent_and_failed_mail_goes_after_its_window_and_waiting_mail_stays() {
    let app = spawn_app().await;
    let raw = app.db.raw().await;
    let insert = |subject: &str, done: &str| {
        format!(
            "INSERT INTO mail_outbox (to_address, subject, text_body, created_at, next_attempt_at, {done})
             VALUES ('a@b.example', '{subject}', '', $1, $1, $2)"
        )
    };
    let days = TimeDelta::days;
    exec(&raw, &insert("sent_old", "sent_at"), &[ago(days(40)), ago(days(31))]).await;
    exec(&raw, &insert("failed_old", "failed_at"), &[ago(days(40)), ago(days(31))]).await;
    exec(&raw, &insert("sent_recent", "sent_at"), &[ago(days(3)), ago(days(2))]).await;
    // Waiting for 40 days (a retry window far longer than the default): never pruned.
    exec(&raw, &insert("waiting", "last_error").replace("$2", "NULL"), &[ago(days(40))]).await;

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::Mail), 2);
    let left: Vec<String> =
        on_raw!(&raw, |pool| sqlx::query_scalar("SELECT subject FROM mail_outbox ORDER BY subject")
            .fetch_all(pool)
            .await
            .unwrap());
    assert_eq!(left, ["sent_recent", "waiting"]);
    raw.close().await;
    app.stop().await;
}

/// Storefront buyers' details go 90 days after the order (docs/security.md); the order stays,
/// and its page then shows nothing.
#[tokio::test]
async fn buyers_details_go_after_their_window_and_their_orders_stay() {
    use crate::storefront::checkout::{buy, buyer, visit};
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = crate::listings::create_id(&app, &partner.key, serde_json::json!({"channel": "clearance", "quantity": 2}))
        .await;
    let visited = visit(&app, id).await;
    let (_, old, _) = buy(&app, id, &visited, &buyer("1")).await;
    let (_, recent, _) = buy(&app, id, &visited, &buyer("1")).await;
    let raw = app.db.raw().await;
    let first = count(&raw, "SELECT MIN(order_id) FROM order_buyers").await;
    exec(
        &raw,
        &format!("UPDATE order_buyers SET created_at = $1 WHERE order_id = {first}"),
        &[ago(TimeDelta::days(91))],
    )
    .await;
    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::Buyers), 1);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM order_buyers").await, 1);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM orders").await, 2, "the orders stay");
    assert_eq!(crate::storefront::page(&app, &old).await.status, 404);
    assert_eq!(crate::storefront::page(&app, &recent).await.status, 200);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn idempotency_keys_go_once_expired_and_live_ones_stay() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let raw = app.db.raw().await;
    let key_id = count(&raw, &format!("SELECT MIN(id) FROM api_keys WHERE user_id = {}", partner.user_id)).await;
    let insert = |idem: &str| {
        format!(
            "INSERT INTO idempotency_keys (key_id, idem_key, fingerprint, state, status, created_at, lease_until, expires_at)
             VALUES ({key_id}, '{idem}', {fp}, 'done', 201, $1, $1, $2)",
            fp = if on_postgres() { "'\\x00'::bytea" } else { "X'00'" },
        )
    };
    let hours = TimeDelta::hours;
    exec(&raw, &insert("expired"), &[ago(hours(25)), ago(hours(1))]).await;
    exec(&raw, &insert("live"), &[ago(hours(23)), ago(-hours(1))]).await;

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::IdempotencyKeys), 1);
    let left: Vec<String> = on_raw!(&raw, |pool| sqlx::query_scalar("SELECT idem_key FROM idempotency_keys")
        .fetch_all(pool)
        .await
        .unwrap());
    assert_eq!(left, ["live"]);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn idle_rate_limit_slots_go_and_current_ones_stay_on_postgres() {
    if !on_postgres() {
        eprintln!("rate_limit_slots exist on PostgreSQL only (REHOME_TEST_POSTGRES unset)");
        return;
    }
    let app = spawn_app().await;
    let raw = app.db.raw().await;
    let slot_now = Utc::now().timestamp_millis() / 100;
    // Ten minutes old, and now.
    let old = slot_now - 6_000;
    raw.execute(&format!(
        "INSERT INTO rate_limit_slots (bucket, slot, hits) VALUES ('old', {old}, 3), ('now', {slot_now}, 1)"
    ))
    .await;

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert!(report.deleted(Table::RateLimitSlots) >= 1, "{report:?}");
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM rate_limit_slots WHERE bucket = 'old'").await, 0);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM rate_limit_slots WHERE bucket = 'now'").await, 1);
    raw.close().await;
    app.stop().await;
}

/// Delivered webhook events go a window after delivery with their attempts (issue 34);
/// an event still pending or dead stays however old, even one delivered once and replayed.
#[tokio::test]
async fn delivered_webhook_events_go_after_their_window_and_pending_or_dead_ones_stay() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let raw = app.db.raw().await;
    let days = TimeDelta::days;
    // (id, status, created, delivered, attempts)
    let events = [
        ("evt_old_delivered", "delivered", days(40), Some(days(31)), 2),
        ("evt_recent_delivered", "delivered", days(40), Some(days(29)), 1),
        ("evt_old_pending", "pending", days(40), None, 3),
        ("evt_old_dead", "dead", days(40), None, 5),
        ("evt_replayed_pending", "pending", days(40), Some(days(35)), 2),
        ("evt_replayed_dead", "dead", days(40), Some(days(35)), 2),
    ];
    for (id, status, created, delivered, attempts) in events {
        let insert = format!(
            "INSERT INTO webhook_events (id, brand_id, type, body, created_at, status, attempts, window_start, delivered_at)
             VALUES ('{id}', {}, 'listing.updated', '', $1, '{status}', {attempts}, $1, $2)",
            partner.brand_id
        );
        on_raw!(&raw, |pool| {
            sqlx::query(&insert).bind(ago(created)).bind(delivered.map(ago)).execute(pool).await.unwrap();
        });
        for _ in 0..attempts {
            let attempt = format!(
                "INSERT INTO webhook_attempts (event_seq, attempted_at, url, status_code, duration_ms)
                 SELECT seq, $1, 'https://example.com/hook', 200, 5 FROM webhook_events WHERE id = '{id}'"
            );
            exec(&raw, &attempt, &[ago(created)]).await;
        }
    }

    let report = job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::WebhookEvents), 1);
    let left: Vec<String> = on_raw!(&raw, |pool| {
        sqlx::query_scalar("SELECT id FROM webhook_events WHERE id LIKE 'evt\\_%' ESCAPE '\\' ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap()
    });
    assert_eq!(
        left,
        ["evt_old_dead", "evt_old_pending", "evt_recent_delivered", "evt_replayed_dead", "evt_replayed_pending"]
    );
    assert_eq!(
        count(&raw, "SELECT COUNT(*) FROM webhook_attempts").await,
        1 + 3 + 5 + 2 + 2,
        "attempts of the kept events"
    );
    assert_eq!(job(&app).run_once(Utc::now()).await.unwrap().deleted(Table::WebhookEvents), 0, "nothing more");
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn the_audit_log_is_kept_however_old() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let raw = app.db.raw().await;
    let insert = format!(
        "INSERT INTO audit_log (brand_id, at, actor_type, actor_display, action) VALUES ({}, $1, 'operator', 'ops', 'old.entry')",
        partner.brand_id
    );
    exec(&raw, &insert, &[ago(TimeDelta::days(3_000))]).await;
    let before = count(&raw, "SELECT COUNT(*) FROM audit_log").await;

    job(&app).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM audit_log").await, before);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM audit_log WHERE action = 'old.entry'").await, 1);
    raw.close().await;
    app.stop().await;
}

/// An API key over its cap of idempotency keys loses its oldest finished ones down to the
/// cap, in batches; one still running stays, and so do another key's.
#[tokio::test]
async fn an_api_key_over_its_cap_of_idempotency_keys_loses_its_oldest() {
    let app = spawn_app().await;
    let (acme, globex) = (app.partner("acme").await, app.partner("globex").await);
    let raw = app.db.raw().await;
    let key_of = |user_id: i64| format!("SELECT MIN(id) FROM api_keys WHERE user_id = {user_id}");
    let (busy, calm) = (count(&raw, &key_of(acme.user_id)).await, count(&raw, &key_of(globex.user_id)).await);
    exec(&raw, "UPDATE api_keys SET last_used_at = $1", &[ago(TimeDelta::minutes(1))]).await;
    let fp = if on_postgres() { "'\\x00'::bytea" } else { "X'00'" };
    let insert = |key_id: i64, idem: &str, state: &str| {
        format!(
            "INSERT INTO idempotency_keys (key_id, idem_key, fingerprint, state, status, created_at, lease_until, expires_at)
             VALUES ({key_id}, '{idem}', {fp}, '{state}', 201, $1, $1, $2)"
        )
    };
    // The busy key: a running one, the oldest of all, then twelve done a minute apart.
    exec(&raw, &insert(busy, "running", "running"), &[ago(TimeDelta::hours(3)), ago(-TimeDelta::hours(20))]).await;
    for i in 0..12 {
        let at = ago(TimeDelta::minutes(100 - i));
        exec(&raw, &insert(busy, &format!("k{i:02}"), "done"), &[at, ago(-TimeDelta::hours(20))]).await;
    }
    for i in 0..12 {
        exec(&raw, &insert(calm, &format!("c{i:02}"), "done"), &[ago(TimeDelta::hours(2)), ago(-TimeDelta::hours(20))])
            .await;
    }
    let settings =
        Settings { batch: 2, pause: Duration::ZERO, idempotency_cap: 10, ..Settings::from_config(&Config::default()) };
    let report = Retention::new(app.store.clone(), settings).run_once(Utc::now()).await.expect("the job runs");
    // 13 held, 10 kept: the three oldest done ones go (a running one is never cut short).
    let left = |key_id: i64| format!("SELECT COUNT(*) FROM idempotency_keys WHERE key_id = {key_id}");
    assert_eq!(count(&raw, &left(busy)).await, 10);
    let gone: i64 = count(
        &raw,
        &format!("SELECT COUNT(*) FROM idempotency_keys WHERE key_id = {busy} AND idem_key IN ('k00', 'k01', 'k02')"),
    )
    .await;
    assert_eq!(gone, 0, "the oldest go first");
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = 'running'").await, 1);
    // The calm key is over too (12 > 10) and loses two; under the cap nothing goes.
    assert_eq!(count(&raw, &left(calm)).await, 10);
    assert_eq!(report.deleted(Table::IdempotencyKeys), 5);
    let again =
        Retention::new(app.store.clone(), Settings { idempotency_cap: 10, ..settings }).run_once(Utc::now()).await;
    assert_eq!(again.expect("the job runs").deleted(Table::IdempotencyKeys), 0);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn the_job_deletes_in_batches_of_the_configured_size() {
    let app = spawn_app().await;
    let raw = app.db.raw().await;
    // Five at one instant (a batch must not skip the rest of its last instant), two older.
    let old = ago(TimeDelta::days(2));
    for i in 0..7 {
        let at = if i < 5 { old } else { ago(TimeDelta::days(3)) };
        exec(&raw, &format!("INSERT INTO sign_in_failures (ip, at) VALUES ('10.0.0.{i}', $1)"), &[at]).await;
    }
    let settings = Settings { batch: 3, pause: Duration::ZERO, ..Settings::from_config(&Config::default()) };
    let report = Retention::new(app.store.clone(), settings).run_once(Utc::now()).await.expect("the job runs");
    assert_eq!(report.deleted(Table::SignInFailures), 7);
    assert!(report.complete);
    // 3 + 3 + 1 + an empty one for the failures, then one (empty) for each other table.
    let tables = if on_postgres() { 9 } else { 8 };
    assert_eq!(report.batches, 4 + (tables - 1));
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM sign_in_failures").await, 0);
    raw.close().await;
    app.stop().await;
}

#[tokio::test]
async fn one_node_at_a_time_holds_the_job_and_it_is_due_again_after_its_interval() {
    let app = spawn_app().await;
    let store = &app.store;
    let now = Utc::now();
    let at = |offset: TimeDelta| Ts::from(now + offset);
    let lease = TimeDelta::minutes(5);
    assert!(store.claim_job("retention-test", "a", at(TimeDelta::zero()), at(lease)).await.unwrap());
    assert!(!store.claim_job("retention-test", "b", at(TimeDelta::zero()), at(lease)).await.unwrap(), "held by a");
    assert!(store.extend_job("retention-test", "a", at(lease * 2)).await.unwrap());
    assert!(!store.extend_job("retention-test", "b", at(lease * 2)).await.unwrap(), "b holds nothing");
    // a finishes; the job is next due in an hour.
    store.finish_job("retention-test", "a", at(TimeDelta::hours(1))).await.unwrap();
    assert!(!store.claim_job("retention-test", "b", at(TimeDelta::minutes(59)), at(lease)).await.unwrap());
    assert!(store.claim_job("retention-test", "b", at(TimeDelta::hours(1)), at(TimeDelta::hours(2))).await.unwrap());
    // b dies holding it: a takes it over once the lease ran out.
    assert!(!store.claim_job("retention-test", "a", at(TimeDelta::minutes(90)), at(lease)).await.unwrap());
    assert!(store.claim_job("retention-test", "a", at(TimeDelta::hours(2)), at(TimeDelta::hours(3))).await.unwrap());
    assert!(!store.extend_job("retention-test", "b", at(TimeDelta::hours(4))).await.unwrap(), "b lost it");
    app.stop().await;
}

#[tokio::test]
async fn the_server_runs_the_job_by_itself_and_counts_what_it_deleted() {
    let app = spawn_app_with(|config| {
        config.retention_interval_s = 1;
        config.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let raw = app.db.raw().await;
    let insert = "INSERT INTO sign_in_failures (ip, at) VALUES ('10.9.9.9', $1)";
    exec(&raw, insert, &[ago(TimeDelta::days(2))]).await;
    exec(&raw, insert, &[ago(TimeDelta::days(3))]).await;
    exec(&raw, insert, &[ago(TimeDelta::minutes(1))]).await;

    // The job runs about once a second; wait for it rather than run it.
    // (The rows go first, then the count: the count is what is waited for.)
    let addr = app.metrics_addr.expect("a metrics listener");
    let metrics = || async { reqwest::get(format!("http://{addr}/metrics")).await.unwrap().text().await.unwrap() };
    let deleted = "rehome_retention_deleted_rows_total{table=\"sign_in_failures\"} 2";
    let counted = crate::helpers::poll(Duration::from_secs(15), || async {
        Some(metrics().await).filter(|p| p.contains(deleted))
    });
    let page = match counted.await {
        Some(page) => page,
        None => panic!("the retention job did not run within 15 s: {}", metrics().await),
    };
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM sign_in_failures").await, 1);
    assert_eq!(count(&raw, "SELECT COUNT(*) FROM job_leases WHERE name = 'retention'").await, 1);
    assert!(page.contains("rehome_retention_deleted_rows_total{table=\"sessions\"} 0"), "{page}");
    raw.close().await;
    app.stop().await;
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}
