//! The operating metrics (decisions 13.1–13.2): counters kept as things happen, and gauges
//! read when Prometheus scrapes `GET /metrics` on the metrics listener.
//!
//! One [`Metrics`] per server (tests run several servers in one process, and each must show
//! its own). The crate is `prometheus` (tikv) without its default features: it adds no
//! other crate to the tree and writes the classic text format (0.0.4) that `promtool check
//! metrics` and every scraper read; `prometheus-client` writes only OpenMetrics, whose
//! counter families promtool's linter reads as untyped, and `metrics` with its exporter
//! brings about twenty crates and a process-wide recorder.
//!
//! On the request path a request costs an atomic add and a histogram observation on the
//! series of its route and method, resolved once ([`RouteSeries`]); with no metrics listener
//! nothing is recorded at all.
//! Database gauges are read at scrape time, at most every [`GAUGE_TTL`].

mod http;
mod process;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use http::{method_index, RouteSeries};
pub use process::resident_memory_bytes;
use prometheus::{
    Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use rehome_store::Store;

/// How long the gauges read from the database are reused: scrapes from several Prometheus
/// servers (or a fast scrape interval) cost the database one read per period.
pub const GAUGE_TTL: Duration = Duration::from_secs(5);

/// The `route` of a request answered without reaching a route: an unknown path, a method
/// the path does not take, a request refused by the rate limit, an idempotent replay.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Latency buckets, in seconds: most answers take a few milliseconds.
const LATENCY_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// What became of a webhook delivery attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// Failed; another attempt is scheduled.
    Retried,
    /// Given up: refused for good, or its retry window closed.
    Dead,
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimit {
    /// An API key's quota.
    Key,
    /// A client address's quota (requests without a valid key).
    Address,
    /// The dashboard's sign-in lockout (per account or per address).
    SignIn,
}

/// How a dashboard sign-in (email and password) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    Succeeded,
    Failed,
    /// Refused by the lockout, right password or not.
    Locked,
}

/// The registry and the handles of every family.
pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    /// The series of requests that reached no route, by [`method_index`].
    unmatched: [OnceLock<RouteSeries>; http::METHODS.len()],
    webhook_deliveries: [IntCounter; 3],
    webhook_claims_lost: IntCounter,
    rate_limited: [IntCounter; 3],
    sign_ins: [IntCounter; 3],
    retention_deleted: IntCounterVec,
    background_failures: IntCounterVec,
    log_lines_dropped: IntCounter,
    gauges: DatabaseGauges,
    process: process::ProcessMetrics,
    /// When the database gauges were last read; also serialises scrapes.
    refreshed: tokio::sync::Mutex<Option<Instant>>,
}

/// Gauges set from the database at scrape time.
struct DatabaseGauges {
    webhook_pending: IntGauge,
    webhook_oldest_age: Gauge,
    mail_pending: IntGauge,
    jobs_pending: IntGaugeVec,
    pool: IntGaugeVec,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let http_requests = counter_vec(
            &registry,
            "rehome_http_requests_total",
            "HTTP requests answered by the public listener, by method, route template and status.",
            &["method", "route", "status"],
        );
        let http_duration = register(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "rehome_http_request_duration_seconds",
                    "Time from a request's head to its answer's head, by method and route template.",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &["method", "route"],
            ),
        );
        let deliveries = counter_vec(
            &registry,
            "rehome_webhook_deliveries_total",
            "Webhook delivery attempts by outcome: delivered, retried (failed, another attempt scheduled), dead (given up).",
            &["outcome"],
        );
        let webhook_claims_lost = register(
            &registry,
            IntCounter::new(
                "rehome_webhook_claims_lost_total",
                "Due webhook events this node chose to send that another node had just claimed (a race between nodes; the event is sent once, by the other).",
            ),
        );
        let limited = counter_vec(
            &registry,
            "rehome_rate_limited_total",
            "Requests refused by a rate limit: an API key's, a client address's, the dashboard sign-in lockout.",
            &["kind"],
        );
        let sign_ins = counter_vec(
            &registry,
            "rehome_sign_ins_total",
            "Dashboard sign-ins (email and password) by outcome.",
            &["outcome"],
        );
        let retention_deleted = counter_vec(
            &registry,
            "rehome_retention_deleted_rows_total",
            "Rows the retention job deleted as past their window, by table.",
            &["table"],
        );
        for table in rehome_domain::retention::Table::ALL {
            retention_deleted.with_label_values(&[table.name()]);
        }
        let background_failures = counter_vec(
            &registry,
            "rehome_background_failures_total",
            "Failures of background work itself (a claim, a record, a release, a periodic task's turn), by task; the work is tried again at its next turn.",
            &["task"],
        );
        let log_lines_dropped = register(
            &registry,
            IntCounter::new(
                "rehome_log_lines_dropped_total",
                "Log lines dropped because standard error did not keep up (the log never blocks a request).",
            ),
        );
        let build_info = register(
            &registry,
            IntGaugeVec::new(Opts::new("rehome_build_info", "The running version; always 1."), &["version"]),
        );
        build_info.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        let gauges = DatabaseGauges {
            webhook_pending: register(
                &registry,
                IntGauge::new("rehome_webhook_outbox_pending", "Webhook events waiting to be delivered."),
            ),
            webhook_oldest_age: register(
                &registry,
                Gauge::new(
                    "rehome_webhook_outbox_oldest_age_seconds",
                    "Age of the oldest webhook event waiting (since emitted or replayed); 0 when none waits.",
                ),
            ),
            mail_pending: register(
                &registry,
                IntGauge::new("rehome_mail_outbox_pending", "Mail waiting to be sent (neither sent nor given up)."),
            ),
            jobs_pending: register(
                &registry,
                IntGaugeVec::new(
                    Opts::new("rehome_jobs_pending", "Work waiting in each background queue."),
                    &["queue"],
                ),
            ),
            pool: register(
                &registry,
                IntGaugeVec::new(
                    Opts::new("rehome_db_pool_connections", "Open database connections of this node, idle or in use."),
                    &["state"],
                ),
            ),
        };
        let process = process::ProcessMetrics::register(&registry);
        // Every series of a fixed label set exists from the start, at zero.
        let by = |family: &IntCounterVec, label: &str| family.with_label_values(&[label]);
        Self {
            webhook_deliveries: ["delivered", "retried", "dead"].map(|o| by(&deliveries, o)),
            webhook_claims_lost,
            rate_limited: ["key", "address", "sign_in"].map(|k| by(&limited, k)),
            sign_ins: ["succeeded", "failed", "locked"].map(|o| by(&sign_ins, o)),
            registry,
            http_requests,
            http_duration,
            unmatched: Default::default(),
            retention_deleted,
            background_failures,
            log_lines_dropped,
            gauges,
            process,
            refreshed: tokio::sync::Mutex::new(None),
        }
    }

    /// The request series of `route` (a matched template) and the method of [`method_index`]:
    /// made once per route and method, and kept by the route.
    pub fn route_series(&self, method: usize, route: &str) -> RouteSeries {
        RouteSeries::new(&self.http_requests, &self.http_duration, method, route)
    }

    /// The request series of the method of [`method_index`] for requests that reached no route.
    pub fn unmatched(&self, method: usize) -> &RouteSeries {
        let method = method.min(self.unmatched.len() - 1);
        self.unmatched[method].get_or_init(|| self.route_series(method, UNMATCHED_ROUTE))
    }

    pub fn webhook_deliveries(&self, outcome: Delivery, count: u64) {
        self.webhook_deliveries[outcome as usize].inc_by(count);
    }

    /// Events a claim chose that another node had taken first.
    pub fn webhook_claims_lost(&self, count: u64) {
        self.webhook_claims_lost.inc_by(count);
    }

    pub fn rate_limited(&self, kind: RateLimit) {
        self.rate_limited[kind as usize].inc();
    }

    /// A sign-in's outcome; a locked one is also a request refused by the sign-in limit.
    pub fn sign_in(&self, outcome: SignIn) {
        self.sign_ins[outcome as usize].inc();
        if outcome == SignIn::Locked {
            self.rate_limited(RateLimit::SignIn);
        }
    }

    /// Rows of `table` the retention job deleted.
    pub fn retention_deleted(&self, table: &str, rows: u64) {
        if let Ok(counter) = self.retention_deleted.get_metric_with_label_values(&[table]) {
            counter.inc_by(rows);
        }
    }

    /// A failure of background work's machinery (see `jobs::queue::Failures`).
    pub fn background_failure(&self, task: &str) {
        if let Ok(counter) = self.background_failures.get_metric_with_label_values(&[task]) {
            counter.inc();
        }
    }

    /// How many failures of `task`'s background machinery this node counted.
    pub fn background_failures(&self, task: &str) -> u64 {
        self.background_failures.get_metric_with_label_values(&[task]).map_or(0, |c| c.get())
    }

    /// The exposition of every family in the Prometheus text format, the database gauges
    /// read from `store` unless read within [`GAUGE_TTL`].
    pub async fn render(&self, store: &Store) -> String {
        {
            let mut refreshed = self.refreshed.lock().await;
            if refreshed.is_none_or(|at| at.elapsed() >= GAUGE_TTL) {
                self.refresh(store).await;
                *refreshed = Some(Instant::now());
            }
            self.process.refresh();
            self.log_lines_dropped.inc_by(crate::logging::dropped_lines().saturating_sub(self.log_lines_dropped.get()));
        }
        let mut text = String::with_capacity(16 * 1024);
        if let Err(e) = TextEncoder::new().encode_utf8(&self.registry.gather(), &mut text) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        text
    }

    async fn refresh(&self, store: &Store) {
        let gauges = &self.gauges;
        let pool = store.pool_usage();
        gauges.pool.with_label_values(&["idle"]).set(as_i64(pool.idle));
        gauges.pool.with_label_values(&["in_use"]).set(as_i64(pool.in_use));
        match store.queue_depths().await {
            Ok(depths) => {
                gauges.webhook_pending.set(depths.webhooks);
                let age = depths
                    .oldest_webhook
                    .map_or(0.0, |at| (chrono::Utc::now() - at.get()).to_std().unwrap_or_default().as_secs_f64());
                gauges.webhook_oldest_age.set(age);
                gauges.mail_pending.set(depths.mail);
                for (queue, depth) in [
                    ("webhooks", depths.webhooks),
                    ("mail", depths.mail),
                    ("thumbnails", depths.thumbnails),
                    ("imports", depths.imports),
                ] {
                    gauges.jobs_pending.with_label_values(&[queue]).set(depth);
                }
            }
            // The gauges keep their last values; the failure shows in the log (and in the
            // readiness probe).
            Err(e) => tracing::warn!(error = %e, "cannot read the queues for the metrics"),
        }
    }
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Registers `metric`; the names are constants, so a failure is a programming error
/// caught by every test that builds a server, and the metric still works unregistered.
fn register<M: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: prometheus::Result<M>) -> M {
    let metric = metric.unwrap_or_else(|e| panic!("invalid metric definition: {e}"));
    if let Err(e) = registry.register(Box::new(metric.clone())) {
        panic!("cannot register a metric: {e}");
    }
    metric
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(registry, IntCounterVec::new(Opts::new(name, help), labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_label_set_is_there_from_the_start() {
        let metrics = Metrics::new();
        let text = {
            let mut text = String::new();
            TextEncoder::new().encode_utf8(&metrics.registry.gather(), &mut text).unwrap();
            text
        };
        for series in [
            "rehome_webhook_deliveries_total{outcome=\"dead\"} 0",
            "rehome_webhook_claims_lost_total 0",
            "rehome_rate_limited_total{kind=\"sign_in\"} 0",
            "rehome_sign_ins_total{outcome=\"locked\"} 0",
            "rehome_build_info{version=\"",
        ] {
            assert!(text.contains(series), "{series} missing from\n{text}");
        }
    }

    #[test]
    fn a_locked_sign_in_is_also_a_request_refused_by_the_sign_in_limit() {
        let metrics = Metrics::new();
        metrics.sign_in(SignIn::Locked);
        metrics.sign_in(SignIn::Failed);
        assert_eq!(metrics.sign_ins[SignIn::Locked as usize].get(), 1);
        assert_eq!(metrics.rate_limited[RateLimit::SignIn as usize].get(), 1);
        assert_eq!(metrics.rate_limited[RateLimit::Key as usize].get(), 0);
    }

    use ::http::{Method, StatusCode};

    #[test]
    fn client_chosen_methods_share_one_label_and_every_status_counts() {
        let metrics = Metrics::new();
        let odd = Method::from_bytes(b"BREW").unwrap();
        metrics.unmatched(method_index(&odd)).record(StatusCode::NOT_FOUND, Duration::from_millis(1));
        let probe = metrics.route_series(method_index(&Method::GET), "/healthz");
        probe.record(StatusCode::OK, Duration::from_millis(1));
        // A status outside the few kept at hand counts all the same.
        probe.record(StatusCode::IM_A_TEAPOT, Duration::from_millis(1));
        let families = metrics.registry.gather();
        let requests = families.iter().find(|f| f.name() == "rehome_http_requests_total").unwrap();
        let labels: Vec<Vec<(String, String)>> = requests
            .get_metric()
            .iter()
            .map(|m| m.get_label().iter().map(|l| (l.name().to_owned(), l.value().to_owned())).collect())
            .collect();
        assert!(labels
            .iter()
            .any(|l| l.contains(&("method".into(), "other".into()))
                && l.contains(&("route".into(), UNMATCHED_ROUTE.into()))));
        assert!(labels.iter().all(|l| !l.iter().any(|(_, v)| v == "BREW")));
        for status in ["200", "418"] {
            let probe = [("method", "GET"), ("route", "/healthz"), ("status", status)];
            let probe = probe.map(|(k, v)| (k.to_owned(), v.to_owned()));
            assert!(labels.iter().any(|l| probe.iter().all(|p| l.contains(p))), "{status}: {labels:?}");
        }
    }
}
