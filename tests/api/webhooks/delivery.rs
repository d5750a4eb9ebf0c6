//! How answers are treated: retries, dead letters, the schedule, timeouts, isolation
//! between partners, and emission inside the caller's transaction.

use std::time::{Duration, Instant};

use rehome::domain::event::{Event, EventType};
use rehome::jobs::retry::{RetrySchedule, JITTER};
use rehome::store::insert_event;
use serde_json::json;

use super::receiver::{BlackHole, Receiver, Reply};
use super::{configure, emit, redemption, settled, wait_for_attempts, wait_for_status, webhook_app, DELIVERIES};
use crate::helpers::{json, on_raw, open_store, TestDb};

/// Sends a test event (`ping`), which wakes the worker as any emission through the API does.
const TEST_EVENT: &str = "/v1/partner/settings/integrations/webhook/test";

fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

#[tokio::test]
async fn a_delivery_is_retried_after_refused_connection_500_429_and_timeout_then_succeeds_with_the_same_event_id() {
    let app = webhook_app(|c| c.webhook_timeout_ms = 400).await;
    let partner = app.partner("acme").await;
    let addr = free_addr(); // nothing listens here yet: connections are refused
    configure(&app, &partner, &format!("http://{addr}/hooks/rehome-3f9a1c")).await;
    let event = emit(&app, &partner, 1).await;

    let entry = wait_for_attempts(&app, &partner, &event.id, 1, Duration::from_secs(5)).await;
    assert_eq!(entry["status"], "pending");
    assert_eq!(entry["last_error"], "connection_failed");
    assert_eq!(entry["last_status_code"], json!(null));
    assert!(entry["next_attempt_at"].is_string());

    let receiver = Receiver::start_on(addr).await;
    receiver.plan([Reply::Status(500), Reply::Status(429), Reply::Slow(Duration::from_millis(1500), 200)]);
    let entry = wait_for_status(&app, &partner, &event.id, "delivered", Duration::from_secs(15)).await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 4, "500, 429, timeout, then 200");
    assert!(hits.iter().all(|h| h.event_id() == event.id && h.header("x-service-event-id") == event.id));
    assert!(hits.iter().all(|h| h.body == hits[0].body), "every retry sends the same bytes");

    assert_eq!(entry["last_status_code"], 200);
    assert_eq!(entry["last_error"], json!(null));
    assert_eq!(entry["next_attempt_at"], json!(null));
    let log = entry["attempt_log"].as_array().unwrap();
    assert_eq!(entry["attempts"].as_u64().unwrap() as usize, log.len());
    let last_four: Vec<(serde_json::Value, serde_json::Value)> =
        log[log.len() - 4..].iter().map(|a| (a["status_code"].clone(), a["error"].clone())).collect();
    assert_eq!(
        last_four,
        [
            (json!(500), json!("http_status")),
            (json!(429), json!("http_status")),
            (json!(null), json!("timeout")),
            (json!(200), json!(null)),
        ]
    );
    assert!(log[..log.len() - 4].iter().all(|a| a["error"] == "connection_failed"));
    assert!(log.iter().all(|a| a["duration_ms"].is_i64() && a["attempted_at"].is_string()));
}

#[tokio::test]
async fn a_400_answer_parks_the_event_dead_at_once() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Status(400));
    configure(&app, &partner, &receiver.url()).await;
    let event = emit(&app, &partner, 1).await;
    let entry = wait_for_status(&app, &partner, &event.id, "dead", Duration::from_secs(5)).await;
    assert_eq!(entry["attempts"], 1);
    assert_eq!(entry["last_status_code"], 400);
    assert_eq!(entry["last_error"], "http_status");
    assert_eq!(entry["next_attempt_at"], json!(null));
    settled(&app).await;
    assert_eq!(receiver.hits().len(), 1, "never retried");
}

#[tokio::test]
async fn a_redirect_is_a_failure_and_is_not_followed() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Redirect(307, "/hooks/elsewhere"));
    configure(&app, &partner, &receiver.url()).await;
    let event = emit(&app, &partner, 1).await;
    let entry = wait_for_status(&app, &partner, &event.id, "dead", Duration::from_secs(5)).await;
    assert_eq!(entry["last_status_code"], 307);
    assert_eq!(entry["last_error"], "redirect_not_followed");
    settled(&app).await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 1);
    assert!(hits.iter().all(|h| h.path != "/hooks/elsewhere"), "the Location was not requested");
}

#[tokio::test]
async fn the_end_of_the_retry_window_parks_the_event_dead() {
    let app = webhook_app(|c| {
        c.webhook_retry_base_ms = 200;
        c.webhook_retry_window_s = 1;
    })
    .await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Status(503));
    configure(&app, &partner, &receiver.url()).await;
    let event = emit(&app, &partner, 1).await;
    let entry = wait_for_status(&app, &partner, &event.id, "dead", Duration::from_secs(5)).await;
    // Attempts at about 0, 0.2, 0.6 s; the next (1.4 s) falls outside the 1 s window.
    assert_eq!(entry["attempts"], 3, "{entry}");
    assert_eq!(entry["last_status_code"], 503);
    assert_eq!(entry["next_attempt_at"], json!(null));
    settled(&app).await;
    assert_eq!(receiver.hits().len(), 3);
}

#[tokio::test]
async fn with_the_schedule_shortened_the_attempt_count_and_gaps_follow_the_schedule_within_jitter() {
    let (base, window) = (Duration::from_millis(150), Duration::from_secs(3));
    let app = webhook_app(|c| {
        c.webhook_retry_base_ms = base.as_millis() as u64;
        c.webhook_retry_window_s = window.as_secs();
    })
    .await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Status(500));
    configure(&app, &partner, &receiver.url()).await;
    let event = emit(&app, &partner, 1).await;
    wait_for_status(&app, &partner, &event.id, "dead", Duration::from_secs(10)).await;

    // 150, 300, 600, 1200 ms fit in 3 s (2.25 s in all); 2400 more would not.
    let expected = RetrySchedule::doubling(base, window).nominal_gaps();
    assert_eq!(expected.len(), 4);
    let hits = receiver.hits();
    assert_eq!(hits.len(), expected.len() + 1, "one first try and one retry per gap");
    for (i, (pair, nominal)) in hits.windows(2).zip(&expected).enumerate() {
        let gap = pair[1].at - pair[0].at;
        let shortest = nominal.mul_f64(1.0 - JITTER);
        // Jitter only shortens a gap; the slack covers the answer and the worker's wake-up.
        assert!(gap >= shortest && gap <= *nominal + Duration::from_millis(120), "gap {i}: {gap:?} vs {nominal:?}");
    }
}

#[tokio::test]
async fn a_receiver_that_never_answers_is_cut_off_at_the_five_second_default_timeout() {
    let app = webhook_app(|c| c.webhook_timeout_ms = 5_000).await;
    let partner = app.partner("acme").await;
    let mut hole = BlackHole::start().await;
    configure(&app, &partner, &hole.url()).await;
    let event = emit(&app, &partner, 1).await;
    let waited = hole.next_wait(Duration::from_secs(10)).await;
    assert!(
        waited >= Duration::from_millis(4_800) && waited <= Duration::from_millis(5_200),
        "the sender hung up after {waited:?}"
    );
    wait_for_status(&app, &partner, &event.id, "pending", Duration::from_secs(1)).await;
    let entry = wait_for_attempts(&app, &partner, &event.id, 1, Duration::from_secs(2)).await;
    let attempt = &entry["attempt_log"][0];
    assert_eq!(attempt["error"], "timeout");
    let ms = attempt["duration_ms"].as_i64().unwrap();
    assert!((4_800..=5_200).contains(&ms), "recorded {ms} ms");
}

/// Two partners on a worker of 16 slots, 4 per endpoint: one whose endpoint answers after
/// 2 s, one whose endpoint answers at once.
struct SlowAndFast {
    app: crate::helpers::TestApp,
    slow_partner: crate::helpers::Partner,
    fast_partner: crate::helpers::Partner,
    slow: Receiver,
    fast: Receiver,
}

async fn slow_and_fast() -> SlowAndFast {
    let app = webhook_app(|c| {
        c.webhook_timeout_ms = 5_000;
        c.webhook_concurrency = 16;
        c.webhook_concurrency_per_endpoint = 4;
    })
    .await;
    let slow_partner = app.partner("slow-sofas").await;
    let fast_partner = app.partner("fast-sofas").await;
    let slow = Receiver::start().await;
    slow.otherwise(Reply::Slow(Duration::from_secs(2), 200));
    let fast = Receiver::start().await;
    configure(&app, &slow_partner, &slow.url()).await;
    configure(&app, &fast_partner, &fast.url()).await;
    SlowAndFast { app, slow_partner, fast_partner, slow, fast }
}

#[tokio::test]
async fn a_slow_endpoint_of_one_brand_does_not_delay_another_brand() {
    let SlowAndFast { app, slow_partner, fast_partner, slow, fast } = slow_and_fast().await;

    // More slow events than the whole worker could run at once.
    for n in 0..40 {
        emit(&app, &slow_partner, n).await;
    }
    slow.wait_for_hits(4, Duration::from_secs(5)).await;
    let started = Instant::now();
    let event = emit(&app, &fast_partner, 1).await;
    let hits = fast.wait_for_hits(1, Duration::from_secs(5)).await;
    let latency = hits[0].at - started;
    assert_eq!(hits[0].event_id(), event.id);
    assert!(latency < Duration::from_millis(500), "the other brand waited {latency:?}");
    assert_eq!(slow.hits().len(), 4, "the slow endpoint never holds more than its own slots");
}

/// The worker reads due events from the head of the outbox first; a backlog of one brand
/// longer than that head, all of it waiting for that brand's slots, must not hide another
/// brand's event behind it (the worker then asks each endpoint for its oldest).
#[tokio::test]
async fn one_brands_backlog_longer_than_the_workers_look_ahead_does_not_hide_another_brands_event() {
    let SlowAndFast { app, slow_partner, fast_partner, slow, fast } = slow_and_fast().await;

    // Far more than the head the worker reads (four times its slots, at least 64), all due
    // before the other brand's event.
    let raw = app.db.raw().await;
    let sealer = app.store.sealer().unwrap();
    on_raw!(&raw, |pool| {
        let mut tx = pool.begin().await.unwrap();
        for n in 0..300 {
            let event = Event::new(slow_partner.brand_id, EventType::RedemptionCreated, redemption(&slow_partner, n));
            insert_event((&mut *tx).into(), sealer, &event.unwrap()).await.unwrap();
        }
        tx.commit().await.unwrap();
    });
    raw.close().await;
    slow.wait_for_hits(4, Duration::from_secs(5)).await;
    let event = emit(&app, &fast_partner, 1).await;
    let hits = fast.wait_for_hits(1, Duration::from_secs(5)).await;
    assert_eq!(hits[0].event_id(), event.id);
    assert!(slow.hits().len() <= 8, "the other brand's event waited for the backlog: {} slow hits", slow.hits().len());
}

#[tokio::test]
async fn an_event_emitted_in_a_rolled_back_transaction_is_never_sent_and_a_committed_one_is() {
    let app = webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    let raw = app.db.raw().await;
    let sealer = app.store.sealer().unwrap();

    let rolled_back = Event::new(partner.brand_id, EventType::RedemptionCreated, redemption(&partner, 1)).unwrap();
    let committed = Event::new(partner.brand_id, EventType::CollectionScheduled, json!({"id": "col_1"})).unwrap();
    on_raw!(&raw, |pool| {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("UPDATE brands SET name = 'Renamed' WHERE id = $1")
            .bind(partner.brand_id)
            .execute(&mut *tx)
            .await
            .unwrap();
        insert_event((&mut *tx).into(), sealer, &rolled_back).await.unwrap();
        tx.rollback().await.unwrap();

        let mut tx = pool.begin().await.unwrap();
        insert_event((&mut *tx).into(), sealer, &committed).await.unwrap();
        tx.commit().await.unwrap();
    });
    raw.close().await;

    let hits = receiver.wait_for_hits(1, Duration::from_secs(5)).await;
    settled(&app).await;
    assert_eq!(receiver.hits().len(), 1);
    assert_eq!(hits[0].event_id(), committed.id);
    assert_eq!(hits[0].header("x-service-event"), "collection.scheduled");
    let log = json(app.get(&format!("{DELIVERIES}?status=any"), &partner.key).await).await;
    assert_eq!(log["meta"]["total"], 1, "{log}");
    assert_eq!(app.get(&format!("{DELIVERIES}/{}", rolled_back.id), &partner.key).await.status(), 404);
}

#[tokio::test]
async fn deliver_due_sends_everything_due_now_and_reports_the_attempts() {
    use rehome::jobs::{Deliverer, Outbox, WorkerSettings};

    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "due.db").await;
    let store = open_store(&db.url).await;
    let brand = rehome::usecases::accounts::create_brand(&store, "acme", "Acme").await.unwrap();
    let receiver = Receiver::start().await;
    receiver.plan([Reply::Status(500)]);
    let audit = super::operator_configured(brand.id);
    store.create_webhook_endpoint(brand.id, &receiver.url(), true, "whsec_test", None, &audit).await.unwrap();
    for n in 0..3 {
        let event = Event::new(brand.id, EventType::RedemptionCreated, json!({ "n": n })).unwrap();
        store.emit_event(&event).await.unwrap();
    }
    let config = rehome::config::Config { allow_private_network: true, ..Default::default() };
    let deliverer = Deliverer::new(store.clone(), WorkerSettings::from_config(&config), Outbox::default()).unwrap();
    assert_eq!(deliverer.deliver_due().await.unwrap(), 3, "one attempt each; the 500 is retried later, not now");
    assert_eq!(receiver.hits().len(), 3);
    let counts = store.webhook_status_counts().await.unwrap();
    assert_eq!((counts.get("delivered"), counts.get("pending")), (Some(&2), Some(&1)));
    assert_eq!(deliverer.deliver_due().await.unwrap(), 0, "nothing else is due for 30 s");
}

/// The worker records a batch of results in two statements; each event's state follows its
/// own result, and one whose lease was taken meanwhile (a replay) keeps the newer state while
/// its attempt is still logged.
#[tokio::test]
async fn a_batch_of_results_is_recorded_each_to_its_event_and_a_lost_lease_keeps_the_newer_state() {
    use chrono::{TimeDelta, Utc};
    use rehome::domain::webhook::{DeliveryStatus, FailureClass};
    use rehome::store::AttemptResult;

    let app = webhook_app(|_| {}).await;
    // No endpoint: the server's own worker leaves these events alone.
    let partner = app.partner("acme").await;
    let mut seqs = Vec::new();
    for n in 0..3 {
        let event = emit(&app, &partner, n).await;
        seqs.push(app.store.webhook_delivery(partner.brand_id, &event.id).await.unwrap().unwrap().0.seq);
    }
    let now = Utc::now();
    let claimed = app.store.claim_webhooks(&seqs, "worker-a", now, now + TimeDelta::seconds(30)).await.unwrap();
    assert_eq!(claimed.len(), 3);
    // The third is replayed while in flight: another owner holds it now.
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        sqlx::query("UPDATE webhook_events SET lease_owner = 'worker-b' WHERE seq = $1")
            .bind(seqs[2])
            .execute(pool)
            .await
            .unwrap();
    });
    raw.close().await;

    let retry_at = now + TimeDelta::seconds(60);
    let result = |seq, status_code, error, status, next_attempt_at| AttemptResult {
        seq,
        attempted_at: now,
        url: "https://hooks.acme.example/rehome".to_owned(),
        status_code,
        error,
        duration_ms: 12,
        status,
        next_attempt_at,
        response_excerpt: Some("ok".to_owned()),
    };
    let results = [
        result(seqs[0], Some(200), None, DeliveryStatus::Delivered, None),
        result(seqs[1], Some(503), Some(FailureClass::HttpStatus), DeliveryStatus::Pending, Some(retry_at)),
        result(seqs[2], Some(200), None, DeliveryStatus::Delivered, None),
    ];
    app.store.record_webhook_attempts("worker-a", &results).await.unwrap();

    let (logged, _) = app.store.webhook_deliveries(partner.brand_id, None, 10, 0).await.unwrap();
    let by_seq = |seq: i64| logged.iter().find(|d| d.seq == seq).unwrap().clone();
    let delivered = by_seq(seqs[0]);
    assert_eq!(
        (delivered.status, delivered.attempts, delivered.last_status_code),
        (DeliveryStatus::Delivered, 1, Some(200))
    );
    assert_eq!(
        delivered.delivered_at.map(|at| at.timestamp_millis()),
        Some((now + TimeDelta::milliseconds(12)).timestamp_millis())
    );
    let retried = by_seq(seqs[1]);
    // (The log shows a pending event of a brand without an endpoint as `no_endpoint`.)
    assert_eq!((retried.status, retried.attempts, retried.last_status_code), (DeliveryStatus::Pending, 1, Some(503)));
    assert!(retried.delivered_at.is_none());
    let replayed = by_seq(seqs[2]);
    assert_eq!((replayed.status, replayed.attempts), (DeliveryStatus::Pending, 1), "the replay's state stands");
    assert!(replayed.delivered_at.is_none());
    for seq in &seqs {
        let id = logged.iter().find(|d| d.seq == *seq).unwrap().event_id.clone();
        let (_, attempts) = app.store.webhook_delivery(partner.brand_id, &id).await.unwrap().unwrap();
        assert_eq!(attempts.len(), 1, "every attempt is logged");
    }
    // The retry is due when its result said; only the lost one is still leased, by its new
    // owner.
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        let (next, error): (Option<rehome::domain::time::Ts>, Option<String>) =
            sqlx::query_as("SELECT next_attempt_at, last_error FROM webhook_events WHERE seq = $1")
                .bind(seqs[1])
                .fetch_one(pool)
                .await
                .unwrap();
        assert_eq!(next.map(|at| at.get().timestamp_millis()), Some(retry_at.timestamp_millis()));
        assert_eq!(error.as_deref(), Some(FailureClass::HttpStatus.as_str()));
        let leased: Vec<(i64, String)> =
            sqlx::query_as("SELECT seq, lease_owner FROM webhook_events WHERE lease_owner IS NOT NULL ORDER BY seq")
                .fetch_all(pool)
                .await
                .unwrap();
        assert_eq!(leased, vec![(seqs[2], "worker-b".to_owned())]);
    });
    raw.close().await;
}

/// Events of a paused endpoint wait at the head of the outbox while the worker, looking
/// from where it last found something to send, moves past them; enabling the endpoint has
/// it look from the head again at once, not at its next poll (here ten minutes).
#[tokio::test]
async fn an_endpoint_enabled_again_gets_the_events_that_waited_behind_the_workers_place_at_once() {
    let app = webhook_app(|c| c.webhook_poll_ms = 600_000).await;
    let paused = app.partner("paused-sofas").await;
    let other = app.partner("other-sofas").await;
    let paused_receiver = Receiver::start().await;
    let other_receiver = Receiver::start().await;
    configure(&app, &paused, &paused_receiver.url()).await;
    configure(&app, &other, &other_receiver.url()).await;
    assert_eq!(app.patch(super::WEBHOOK, &paused.key, &json!({"enabled": false})).await.status(), 200);

    // Made well before the other brand's events (further back than any look reaches).
    let mut waiting = Event::new(paused.brand_id, EventType::RedemptionCreated, redemption(&paused, 1)).unwrap();
    waiting.created_at -= chrono::TimeDelta::seconds(30);
    app.store.emit_event(&waiting).await.unwrap();
    // The worker sends the other brand's later events (test events, which wake it) and looks
    // past the waiting one.
    for n in 1..=3 {
        assert_eq!(app.post(TEST_EVENT, &other.key, &json!({})).await.status(), 200);
        other_receiver.wait_for_hits(n, Duration::from_secs(5)).await;
    }
    assert!(paused_receiver.hits().is_empty());

    assert_eq!(app.patch(super::WEBHOOK, &paused.key, &json!({"enabled": true})).await.status(), 200);
    let hits = paused_receiver.wait_for_hits(1, Duration::from_secs(5)).await;
    assert_eq!(hits[0].event_id(), waiting.id);
}

/// An event left leased by a node that stopped lies behind where the worker looks once the
/// lease runs out; the worker still finds it, at its next look from the head (once a poll).
#[tokio::test]
async fn an_event_whose_lease_ran_out_behind_the_workers_place_is_sent_by_the_next_poll() {
    use chrono::{TimeDelta, Utc};

    let app = webhook_app(|c| c.webhook_poll_ms = 1_000).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    // Written with another node's lease, for a little longer.
    let raw = app.db.raw().await;
    let sealer = app.store.sealer().unwrap();
    // Made well before the later event (further back than any look reaches).
    let mut leased = Event::new(partner.brand_id, EventType::RedemptionCreated, redemption(&partner, 1)).unwrap();
    leased.created_at -= TimeDelta::seconds(30);
    on_raw!(&raw, |pool| {
        let mut tx = pool.begin().await.unwrap();
        insert_event((&mut *tx).into(), sealer, &leased).await.unwrap();
        sqlx::query("UPDATE webhook_events SET lease_owner = 'worker-gone', lease_until = $1 WHERE id = $2")
            .bind(rehome::domain::time::Ts::from(Utc::now() + TimeDelta::milliseconds(1_500)))
            .bind(&leased.id)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    });
    raw.close().await;
    // A later event goes at once: the worker's place moves past the leased one.
    assert_eq!(app.post(TEST_EVENT, &partner.key, &json!({})).await.status(), 200);
    let hits = receiver.wait_for_hits(1, Duration::from_secs(5)).await;
    assert_ne!(hits[0].event_id(), leased.id);

    let hits = receiver.wait_for_hits(2, Duration::from_secs(10)).await;
    assert_eq!(hits[1].event_id(), leased.id);
}

/// A claim skips events another node is claiming (their rows locked) and counts them lost,
/// in `rehome_webhook_claims_lost_total`. PostgreSQL only: SQLite has one writer, so two
/// claims never overlap there.
#[tokio::test]
async fn events_another_node_is_claiming_are_skipped_and_counted_as_lost_claims() {
    use rehome::jobs::{Deliverer, Outbox, WorkerSettings};
    use rehome::metrics::Metrics;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "lost.db").await;
    if !db.is_postgres() {
        return;
    }
    let store = open_store(&db.url).await;
    let brand = rehome::usecases::accounts::create_brand(&store, "acme", "Acme").await.unwrap();
    let receiver = Receiver::start().await;
    let audit = super::operator_configured(brand.id);
    store.create_webhook_endpoint(brand.id, &receiver.url(), true, "whsec_test", None, &audit).await.unwrap();
    let mut events = Vec::new();
    for n in 0..3 {
        let event = Event::new(brand.id, EventType::RedemptionCreated, json!({ "n": n })).unwrap();
        store.emit_event(&event).await.unwrap();
        events.push(event);
    }
    let config = rehome::config::Config { allow_private_network: true, ..Default::default() };
    let metrics = Arc::new(Metrics::new());
    let deliverer = Deliverer::new(store.clone(), WorkerSettings::from_config(&config), Outbox::default())
        .unwrap()
        .counting_into(metrics.clone());

    // Another node is in the middle of claiming the first event: its row is locked.
    let raw = db.raw().await;
    let crate::helpers::RawPool::Postgres(pool) = &raw else { unreachable!("PostgreSQL only") };
    let mut other = pool.begin().await.unwrap();
    sqlx::query("SELECT seq FROM webhook_events WHERE id = $1 FOR UPDATE")
        .bind(&events[0].id)
        .fetch_one(&mut *other)
        .await
        .unwrap();
    assert_eq!(deliverer.deliver_due().await.unwrap(), 2, "the two unlocked events are sent");
    let ids: Vec<String> = receiver.hits().iter().map(|hit| hit.event_id()).collect();
    assert!(!ids.contains(&events[0].id), "{ids:?}");
    // Each of its claims found the event taken: the one with the others, and the one after,
    // which found nothing else to send.
    let lost = |text: String| {
        text.lines().find_map(|line| line.strip_prefix("rehome_webhook_claims_lost_total ")?.parse::<u64>().ok())
    };
    assert_eq!(lost(metrics.render(&store).await), Some(2));
    other.rollback().await.unwrap();

    assert_eq!(deliverer.deliver_due().await.unwrap(), 1, "the other node let it go");
    assert_eq!(lost(metrics.render(&store).await), Some(2));
}

/// An event made before another but committed after it (a longer transaction) lies behind
/// where the worker last looked; each look reaches back far enough to send it at once, not
/// at the next poll (here ten minutes).
#[tokio::test]
async fn an_event_committed_after_a_later_one_is_sent_at_once() {
    let app = webhook_app(|c| c.webhook_poll_ms = 600_000).await;
    let partner = app.partner("acme").await;
    let receiver = Receiver::start().await;
    configure(&app, &partner, &receiver.url()).await;
    // The worker sends a test event and its place moves to it.
    assert_eq!(app.post(TEST_EVENT, &partner.key, &json!({})).await.status(), 200);
    receiver.wait_for_hits(1, Duration::from_secs(5)).await;
    // An event made a moment before that one commits now, and the next test event wakes
    // the worker.
    let mut late = Event::new(partner.brand_id, EventType::RedemptionCreated, redemption(&partner, 1)).unwrap();
    late.created_at -= chrono::TimeDelta::milliseconds(300);
    app.store.emit_event(&late).await.unwrap();
    assert_eq!(app.post(TEST_EVENT, &partner.key, &json!({})).await.status(), 200);
    let hits = receiver.wait_for_hits(3, Duration::from_secs(5)).await;
    assert!(hits.iter().any(|hit| hit.event_id() == late.id), "the late event was not sent");
}
