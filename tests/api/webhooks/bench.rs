//! The webhook benchmark behind docs/performance.md ("Webhook delivery" and "Deliveries at
//! size"). Ignored in the normal run; run it in release:
//!
//! ```sh
//! cargo test --release --test api webhooks::bench -- --ignored --nocapture
//! REHOME_BENCH_BRANDS=1000 REHOME_BENCH_BACKLOG=1000000 REHOME_BENCH_RATE=1000 \
//!     REHOME_BENCH_LATENCY_EVENTS=10000 cargo test --release --test api webhooks::bench -- --ignored --nocapture
//! ```
//!
//! Knobs (environment): `REHOME_BENCH_BRANDS` (16) partners, each with its own endpoint on
//! the one local receiver; `REHOME_BENCH_BACKLOG` (20,000) events emitted while every
//! endpoint is paused, then released at once; `REHOME_BENCH_RATE` (500 a second) and
//! `REHOME_BENCH_LATENCY_EVENTS` (2,000) for the steady trickle after the backlog;
//! `REHOME_BENCH_NODES` (1) server nodes on the one database; `REHOME_BENCH_CONCURRENCY`
//! (the default, 64) deliveries in flight per node. With `REHOME_TEST_POSTGRES` set it runs
//! on PostgreSQL.
//!
//! The receiver only counts the backlog's requests (it keeps the trickle's, whose times the
//! latency figures read), so the process's resident memory, sampled from the backlog's
//! release to the trickle's end, is the nodes' plus the receiver's and the emitter's: an
//! upper bound of the server's own. With `REHOME_BENCH_RECEIVER_URL` set, the endpoints point
//! at that receiver instead (another process: the figures in docs/performance.md used nginx
//! answering `return 200`), the drain is counted in the database, and the trickle is not run:
//! the process's memory through the drain is then the nodes' own, beside an idle emitter.
//! `REHOME_BENCH_DROP_INDEXES` (names, comma-separated) drops those indexes of the outbox
//! before the drain: an experiment measuring what writing them costs, never a setting.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rehome::app::Server;
use rehome::config::Config;
use rehome::domain::event::{Event, EventType};
use rehome::domain::user::{Role, Scopes};
use rehome::metrics::resident_memory_bytes;
use rehome::store::insert_event;
use rehome::usecases::accounts;
use serde_json::json;

use super::receiver::Receiver;
use super::WEBHOOK;
use crate::helpers::{on_raw, open_store, TestDb};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The bytes this process has caused to be written to storage (`write_bytes` of
/// `/proc/self/io`, counted as pages are dirtied; 0 where it cannot be read).
fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|line| line.strip_prefix("write_bytes: ")?.trim().parse().ok()).unwrap_or(0)
}

/// This process's resident memory now, in KiB (0 where it cannot be read).
fn resident_kib() -> u64 {
    resident_memory_bytes().map_or(0, |bytes| u64::try_from(bytes / 1024).unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: cargo test --release --test api webhooks::bench -- --ignored --nocapture"]
async fn webhook_delivery_throughput_and_latency() {
    let brand_count = knob("REHOME_BENCH_BRANDS", 16);
    let backlog = knob("REHOME_BENCH_BACKLOG", 20_000);
    let rate_per_s = knob("REHOME_BENCH_RATE", 500) as u64;
    let latency_events = knob("REHOME_BENCH_LATENCY_EVENTS", 2_000);
    let nodes = knob("REHOME_BENCH_NODES", 1).max(1);
    let dir = tempfile::tempdir().unwrap();
    let db = TestDb::create_named(dir.path(), "bench.db").await;
    let store = open_store(&db.url).await;
    let config = Config {
        addr: "127.0.0.1:0".parse().unwrap(),
        media_dir: dir.path().join("media"),
        allow_private_network: true,
        webhook_allow_http: true,
        rate_limit: 100_000,
        webhook_concurrency: knob("REHOME_BENCH_CONCURRENCY", Config::default().webhook_concurrency),
        ..Config::default()
    };
    let mut stops = Vec::new();
    let mut servings = Vec::new();
    let mut outboxes = Vec::new();
    let mut node_metrics = Vec::new();
    let mut base = String::new();
    for node in 0..nodes {
        let node_store = if node == 0 { store.clone() } else { open_store(&db.url).await };
        let server = Server::bind(config.clone(), node_store).await.unwrap();
        if node == 0 {
            base = format!("http://{}", server.local_addr());
        }
        outboxes.push(server.state().outbox.clone());
        node_metrics.push(server.state().metrics.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        servings.push(tokio::spawn(server.run_until(async move {
            let _ = stopped.await;
        })));
        stops.push(stop);
    }
    let receiver = Receiver::start().await;
    receiver.count_only(backlog);
    let outside = std::env::var("REHOME_BENCH_RECEIVER_URL").ok();
    let receiver_url = outside.clone().unwrap_or_else(|| receiver.url());
    let client = reqwest::Client::new();

    let mut brands = Vec::new();
    for i in 0..brand_count {
        let slug = format!("brand-{i}");
        let brand = accounts::create_brand(&store, &slug, "Bench").await.unwrap();
        let user =
            accounts::create_user(&store, &slug, "Ada", &format!("ada@{slug}.example"), Role::Admin).await.unwrap();
        let key = accounts::create_key(&store, user.id, "read,write".parse::<Scopes>().unwrap(), None, Some(100_000))
            .await
            .unwrap()
            .secret;
        let set = |body| client.patch(format!("{base}{WEBHOOK}")).bearer_auth(&key).json(&body).send();
        assert_eq!(set(json!({"url": format!("{receiver_url}/{i}"), "enabled": false})).await.unwrap().status(), 200);
        brands.push((brand.id, key));
    }

    // Throughput: a backlog emitted while every endpoint is paused, then released at once.
    let raw = db.raw().await;
    let emitted = Instant::now();
    for chunk in (0..backlog).collect::<Vec<_>>().chunks(1_000) {
        on_raw!(&raw, |pool| {
            let mut tx = pool.begin().await.unwrap();
            for &n in chunk {
                let data = json!({"id": format!("red_{n}"), "value_pence": 1200});
                let event = Event::new(brands[n % brand_count].0, EventType::RedemptionCreated, data).unwrap();
                insert_event((&mut *tx).into(), store.sealer().unwrap(), &event).await.unwrap();
            }
            tx.commit().await.unwrap();
        });
    }
    // An experiment, not a configuration: indexes dropped before the drain, to measure what
    // the writes to them cost it (the queries the drain runs do not need them).
    if let Ok(dropped) = std::env::var("REHOME_BENCH_DROP_INDEXES") {
        for index in dropped.split(',').filter(|name| !name.is_empty()) {
            raw.execute(&format!("DROP INDEX {index}")).await;
            println!("  (experiment: index {index} dropped before the drain)");
        }
    }
    raw.close().await;
    let emit_rate = backlog as f64 / emitted.elapsed().as_secs_f64();
    let rss_at_release = resident_kib();
    let rss_peak = Arc::new(AtomicU64::new(rss_at_release));
    let sampling = {
        let peak = rss_peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(resident_kib(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let written_at_release = written_bytes();
    let started = Instant::now();
    for (_, key) in &brands {
        let response =
            client.patch(format!("{base}{WEBHOOK}")).bearer_auth(key).json(&json!({"enabled": true})).send().await;
        assert_eq!(response.unwrap().status(), 200);
    }
    let recorded = || async {
        (store.webhook_status_counts().await.unwrap().get("delivered").copied() == Some(backlog as i64)).then_some(())
    };
    if outside.is_none() {
        let drained = || async { (receiver.count() >= backlog).then_some(()) };
        crate::helpers::poll(Duration::from_secs(3_600), drained).await.expect("every backlog delivery received");
    }
    let received = started.elapsed();
    crate::helpers::poll(Duration::from_secs(3_600), recorded).await.expect("every delivery recorded");
    let recorded = started.elapsed();
    let written = written_bytes().saturating_sub(written_at_release);
    let rss_drain_peak = rss_peak.load(Ordering::Relaxed);
    let mut claims_lost = 0;
    for metrics in &node_metrics {
        claims_lost += metrics
            .render(&store)
            .await
            .lines()
            .find_map(|line| line.strip_prefix("rehome_webhook_claims_lost_total ")?.parse::<u64>().ok())
            .unwrap_or(0);
    }
    let backend = if db.is_postgres() { "PostgreSQL" } else { "SQLite" };
    println!(
        "webhook bench on {backend}, {nodes} node(s), {} in flight per node: {brand_count} brands, {}",
        config.webhook_concurrency,
        match &outside {
            Some(url) => format!("the receiver at {url}"),
            None => "one local receiver answering 200 at once".to_owned(),
        }
    );
    println!("  emission: {backlog} events in transactions of 1000: {emit_rate:.0} events/s");
    let recorded_rate = format!(
        "all recorded delivered in {:.2} s = {:.0}/s",
        recorded.as_secs_f64(),
        backlog as f64 / recorded.as_secs_f64()
    );
    match outside {
        // The outside receiver counts nothing here: the database's count is the figure.
        Some(_) => println!("  backlog of {backlog}: {recorded_rate}"),
        None => println!(
            "  backlog of {backlog}: all received in {:.2} s = {:.0} deliveries/s; {recorded_rate}",
            received.as_secs_f64(),
            backlog as f64 / received.as_secs_f64(),
        ),
    }
    println!("  claims lost to another node: {claims_lost}");
    if !db.is_postgres() {
        // SQLite writes in this process: its WAL frames and the checkpoints' copies of them.
        println!(
            "  written to storage through the drain: {:.0} MiB, {:.1} KiB a delivery ({:.1} pages of 4 KiB)",
            written as f64 / 1048576.0,
            written as f64 / 1024.0 / backlog as f64,
            written as f64 / 4096.0 / backlog as f64,
        );
    }
    println!(
        "  resident memory of the process: {:.1} MiB when the backlog was released, peak {:.1} MiB through the drain",
        rss_at_release as f64 / 1024.0,
        rss_drain_peak as f64 / 1024.0,
    );
    if outside.is_some() {
        println!("  latency: not measured with an outside receiver");
        sampling.abort();
        stop_all(stops, servings).await;
        return;
    }

    // Latency: a steady trickle, each event woken as a committing handler would.
    let mut sent_at = HashMap::new();
    let gap = Duration::from_micros(1_000_000 / rate_per_s);
    let mut next = tokio::time::Instant::now();
    for n in 0..latency_events {
        let event = Event::new(brands[n % brand_count].0, EventType::RedemptionCreated, json!({"n": n})).unwrap();
        sent_at.insert(event.id.clone(), Instant::now());
        store.emit_event(&event).await.unwrap();
        outboxes[n % nodes].wake();
        next += gap;
        tokio::time::sleep_until(next).await;
    }
    let trickled = || async { (receiver.count() >= backlog + latency_events).then_some(()) };
    crate::helpers::poll(Duration::from_secs(120), trickled).await.expect("every trickled event received");
    sampling.abort();
    let hits = receiver.hits();
    let mut latencies: Vec<Duration> = hits
        .iter()
        .filter_map(|hit| sent_at.get(&hit.event_id()).map(|at| hit.at.saturating_duration_since(*at)))
        .collect();
    assert_eq!(latencies.len(), latency_events);
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];

    println!(
        "  latency, {latency_events} events at {rate_per_s}/s, emit to receipt: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.90).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies[latencies.len() - 1].as_secs_f64() * 1e3,
    );
    println!(
        "  resident memory of the process: peak {:.1} MiB through the trickle too (its requests kept by the receiver)",
        rss_peak.load(Ordering::Relaxed) as f64 / 1024.0,
    );
    stop_all(stops, servings).await;
}

/// Stops every node and waits for each to finish.
async fn stop_all(
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
    servings: Vec<tokio::task::JoinHandle<anyhow::Result<()>>>,
) {
    for stop in stops {
        let _ = stop.send(());
    }
    for serving in servings {
        serving.await.unwrap().unwrap();
    }
}
