//! The operating metrics (decisions 13.1–13.2): a second listener answers `GET /metrics` in
//! the Prometheus text format with the documented families and labels; the route label is
//! the matched template, never the raw path; the public listener never serves metrics.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::helpers::{assert_error, spawn_app, TestApp};
use crate::listings::listing;
use crate::web::{admin, Browser};
use crate::webhooks::receiver::{Receiver, Reply};
use crate::webhooks::{configure, webhook_app, WEBHOOK};

/// One sample: its name, its labels, its value.
#[derive(Debug, Clone)]
pub struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A server with a metrics listener (and webhooks that retry quickly).
async fn metrics_app() -> TestApp {
    webhook_app(|config| {
        config.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
        // A small quota for requests without a key, to meet the address limit.
        config.rate_limit = 3;
    })
    .await
}

/// The metrics listener's page, checked to be the Prometheus text format.
async fn scrape(app: &TestApp) -> Vec<Sample> {
    scrape_at(&app.metrics_addr.expect("a metrics listener").to_string()).await
}

/// The page of the metrics listener at `addr` (`HOST:PORT`), as [`scrape`].
pub async fn scrape_at(addr: &str) -> Vec<Sample> {
    let response = reqwest::get(format!("http://{addr}/metrics")).await.expect("scrape");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    parse(&response.text().await.unwrap())
}

/// The samples of an exposition in the text format (comments skipped).
pub fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("no value: {line}"));
        let name = line[..name_end].to_owned();
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(inner) = rest.strip_prefix('{') {
            // key="value" pairs; values may hold braces (route templates) and escapes.
            let mut chars = inner.char_indices().peekable();
            let mut key = String::new();
            let end = loop {
                let (i, c) = chars.next().unwrap_or_else(|| panic!("unterminated labels: {line}"));
                match c {
                    '}' => break i,
                    ',' | ' ' => {}
                    '=' => {
                        assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line}");
                        let mut value = String::new();
                        loop {
                            match chars.next().map(|(_, c)| c) {
                                Some('\\') => value.push(chars.next().map(|(_, c)| c).unwrap()),
                                Some('"') => break,
                                Some(c) => value.push(c),
                                None => panic!("unterminated value: {line}"),
                            }
                        }
                        labels.insert(std::mem::take(&mut key), value);
                    }
                    c => key.push(c),
                }
            };
            rest = &inner[end + 1..];
        }
        let value = rest.trim().parse().unwrap_or_else(|_| panic!("bad value: {line}"));
        samples.push(Sample { name, labels, value });
    }
    samples
}

/// The samples named `name`.
fn named<'a>(samples: &'a [Sample], name: &str) -> Vec<&'a Sample> {
    samples.iter().filter(|s| s.name == name).collect()
}

/// The value of the one sample of `name` whose labels include `labels`.
pub fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let matching: Vec<&Sample> = named(samples, name)
        .into_iter()
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
        .collect();
    assert!(matching.len() <= 1, "several series of {name} {labels:?}: {matching:?}");
    matching.first().map(|s| s.value)
}

fn label_names(sample: &Sample) -> Vec<&str> {
    sample.labels.keys().map(String::as_str).collect()
}

#[tokio::test]
async fn every_family_is_there_after_traffic_with_its_documented_labels() {
    let app = metrics_app().await;
    let (partner, email) = admin(&app, "acme").await;
    // A test event: its first delivery fails (retried), its second is refused for good (dead).
    let receiver = Receiver::start().await;
    receiver.plan([Reply::Status(500), Reply::Status(400)]);
    configure(&app, &partner, &receiver.url()).await;
    let ping = app.post(&format!("{WEBHOOK}/test"), &partner.key, &json!({})).await;
    assert!(ping.status().is_success(), "{}", ping.status());

    let created = app.post("/v1/listings", &partner.key, &listing(json!({}))).await;
    assert_eq!(created.status(), 201);
    let id = crate::helpers::json(created).await["id"].as_i64().unwrap();
    assert_eq!(app.get(&format!("/v1/listings/{id}"), &partner.key).await.status(), 200);
    // With an `Idempotency-Key` the route answers in a task of its own; the repeat is a
    // replay, answered without reaching the route.
    for _ in 0..2 {
        let keyed = app
            .client
            .post(app.url("/v1/listings"))
            .bearer_auth(&partner.key)
            .header("Idempotency-Key", "create-once")
            .json(&listing(json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(keyed.status(), 201);
    }
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    assert_eq!(app.client.get(app.url("/no/such/page")).send().await.unwrap().status(), 404);
    // Without a key, the address's quota of 3 runs out.
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(app.client.get(app.url("/v1/listings")).send().await.unwrap().status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    // A wrong password, then the right one.
    Browser::new(&app).sign_in(&email, "not the password at all").await;
    Browser::signed_in(&app, &email).await;

    // The deliveries are counted once recorded.
    let dead = |samples: &Vec<Sample>| {
        value(samples, "rehome_webhook_deliveries_total", &[("outcome", "dead")]).unwrap_or(0.0) >= 1.0
    };
    let samples =
        match crate::helpers::poll(Duration::from_secs(30), || async { Some(scrape(&app).await).filter(dead) }).await {
            Some(samples) => samples,
            None => scrape(&app).await,
        };

    let requests = named(&samples, "rehome_http_requests_total");
    assert!(!requests.is_empty());
    for sample in &requests {
        assert_eq!(label_names(sample), ["method", "route", "status"], "{sample:?}");
    }
    let detail = [("method", "GET"), ("route", "/v1/listings/{id}"), ("status", "200")];
    assert_eq!(value(&samples, "rehome_http_requests_total", &detail), Some(1.0));
    let create = [("method", "POST"), ("route", "/v1/listings"), ("status", "201")];
    assert_eq!(value(&samples, "rehome_http_requests_total", &create), Some(2.0), "one plain, one keyed");
    let replay = [("method", "POST"), ("route", "unmatched"), ("status", "201")];
    assert_eq!(value(&samples, "rehome_http_requests_total", &replay), Some(1.0), "the replay");
    let probe = [("method", "GET"), ("route", "/healthz"), ("status", "200")];
    assert!(value(&samples, "rehome_http_requests_total", &probe) >= Some(1.0));
    let unknown = [("method", "GET"), ("route", "unmatched"), ("status", "404")];
    assert_eq!(value(&samples, "rehome_http_requests_total", &unknown), Some(1.0));
    let limited = [("method", "GET"), ("route", "unmatched"), ("status", "429")];
    assert!(value(&samples, "rehome_http_requests_total", &limited) >= Some(1.0));

    let counts = named(&samples, "rehome_http_request_duration_seconds_count");
    assert!(counts.iter().all(|s| label_names(s) == ["method", "route"]), "{counts:?}");
    let detail_count = [("method", "GET"), ("route", "/v1/listings/{id}")];
    assert_eq!(value(&samples, "rehome_http_request_duration_seconds_count", &detail_count), Some(1.0));
    let buckets = named(&samples, "rehome_http_request_duration_seconds_bucket");
    assert!(buckets.iter().any(|s| s.labels.get("le").map(String::as_str) == Some("+Inf")));

    let deliveries = |outcome| value(&samples, "rehome_webhook_deliveries_total", &[("outcome", outcome)]);
    assert_eq!(deliveries("retried"), Some(1.0));
    assert_eq!(deliveries("dead"), Some(1.0));
    assert!(deliveries("delivered").is_some());
    assert!(value(&samples, "rehome_webhook_outbox_pending", &[]).is_some());
    assert!(value(&samples, "rehome_webhook_outbox_oldest_age_seconds", &[]).is_some_and(|age| age >= 0.0));
    assert!(value(&samples, "rehome_mail_outbox_pending", &[]).is_some());
    for queue in ["webhooks", "mail", "thumbnails", "imports"] {
        assert!(value(&samples, "rehome_jobs_pending", &[("queue", queue)]).is_some(), "{queue}");
    }
    assert_eq!(named(&samples, "rehome_jobs_pending").len(), 4);
    let limited = |kind| value(&samples, "rehome_rate_limited_total", &[("kind", kind)]);
    assert!(limited("address") >= Some(1.0));
    assert_eq!(limited("key"), Some(0.0));
    assert_eq!(limited("sign_in"), Some(0.0));
    let sign_ins = |outcome| value(&samples, "rehome_sign_ins_total", &[("outcome", outcome)]);
    assert_eq!(sign_ins("failed"), Some(1.0));
    assert_eq!(sign_ins("succeeded"), Some(1.0));
    assert_eq!(sign_ins("locked"), Some(0.0));
    for state in ["idle", "in_use"] {
        assert!(value(&samples, "rehome_db_pool_connections", &[("state", state)]).is_some(), "{state}");
    }
    let idle = value(&samples, "rehome_db_pool_connections", &[("state", "idle")]).unwrap();
    assert!(idle >= 1.0, "the server's pools hold connections: {idle}");
    let build = named(&samples, "rehome_build_info");
    assert_eq!(build.len(), 1);
    assert_eq!(label_names(build[0]), ["version"]);
    assert_eq!(build[0].value, 1.0);
    assert_eq!(build[0].labels["version"], env!("CARGO_PKG_VERSION"));
    assert!(value(&samples, "process_resident_memory_bytes", &[]).is_some_and(|bytes| bytes > 0.0));
    assert!(value(&samples, "rehome_log_lines_dropped_total", &[]).is_some());
}

#[tokio::test]
async fn five_hundred_listing_ids_make_one_series_under_the_route_template() {
    let app = metrics_app().await;
    let partner = app.partner("acme").await;
    for id in 1_000_000..1_000_500 {
        assert_eq!(app.get(&format!("/v1/listings/{id}"), &partner.key).await.status(), 404);
    }
    let samples = scrape(&app).await;
    let listing_series: Vec<&Sample> = named(&samples, "rehome_http_requests_total")
        .into_iter()
        .filter(|s| s.labels["route"].starts_with("/v1/listings"))
        .collect();
    assert_eq!(listing_series.len(), 1, "{listing_series:?}");
    assert_eq!(listing_series[0].labels["route"], "/v1/listings/{id}");
    assert_eq!(listing_series[0].labels["status"], "404");
    assert_eq!(listing_series[0].value, 500.0);
    assert!(samples.iter().all(|s| s.labels.values().all(|v| !v.contains("1000"))), "a raw path in a label");
}

#[tokio::test]
async fn the_public_listener_never_serves_metrics() {
    let app = metrics_app().await;
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_error(response, 404, "not_found").await;
    // The metrics listener answers nothing but `GET /metrics`.
    let addr = app.metrics_addr.unwrap();
    let other = reqwest::get(format!("http://{addr}/v1/listings")).await.unwrap();
    assert_eq!(other.status(), 404);
}

#[tokio::test]
async fn without_a_metrics_address_there_is_no_metrics_listener() {
    let app = spawn_app().await;
    assert!(app.metrics_addr.is_none());
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_error(response, 404, "not_found").await;
}

/// A failure of background work itself is recorded one way, whatever the task: here the
/// remittance scheduler's turns meet a database whose table of runs is gone, and each failed
/// turn is counted under the task's name (and the server goes on answering).
#[tokio::test]
async fn a_background_task_that_fails_is_counted_under_its_name() {
    let app = webhook_app(|config| {
        config.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
        config.remittance_poll_ms = 20;
    })
    .await;
    let failures = |samples: &Vec<Sample>| {
        value(samples, "rehome_background_failures_total", &[("task", "remittances")]).unwrap_or(0.0)
    };
    assert_eq!(failures(&scrape(&app).await), 0.0, "nothing failed yet");
    app.db.raw().await.execute("DROP TABLE remittance_runs").await;
    let counted = crate::helpers::poll(Duration::from_secs(30), || async {
        Some(scrape(&app).await).filter(|samples| failures(samples) >= 2.0)
    })
    .await;
    assert!(counted.is_some(), "the failed turns were not counted: {:?}", failures(&scrape(&app).await));
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
}
