//! The webhook delivery worker.
//!
//! One loop per process claims due events from the outbox with a lease, runs each
//! delivery as its own task, and records the results. Concurrency is bounded overall
//! (`REHOME_WEBHOOK_CONCURRENCY`) and per endpoint (`REHOME_WEBHOOK_CONCURRENCY_PER_ENDPOINT`):
//! the loop never claims more of a brand's events than that brand has free slots, so a
//! slow endpoint fills its own slots and nobody else's. The loop wakes when an event is
//! emitted ([`Outbox::wake`]), when a delivery finishes, when the next retry falls due, and
//! at least every poll interval (`REHOME_WEBHOOK_POLL_MS`: events written by other
//! processes, expired leases). Woken by finishing deliveries alone, it claims again once a
//! quarter of those in flight have finished, and records the finished ones together, so a
//! backlog costs a few statements per batch rather than per delivery (issue 34). A batch's
//! results are recorded in a task of their own while the next batch is claimed and sent.
//!
//! A lease lasts twice the delivery timeout plus a second: longer than any attempt, so a
//! live worker never loses one, and short enough that a crashed worker's events are
//! retaken soon after a restart.
//!
//! Bodies are stored sealed (see [`rehome_store::Sealer`]); each delivery task opens its
//! event's body just before signing and sending it, so the bytes sent are exactly those
//! frozen at emission. A body that does not open (another data key, altered bytes) is never
//! sent: the attempt is recorded as `undecryptable` and retried on the usual schedule, so a
//! server restarted with the right key delivers it, and it is dead once its window closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, Url};
use tokio::sync::{watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use super::queue::Failures;
use super::retry::{random_unit, RetrySchedule};
use super::signature::{signature_header, standard_signature};
use crate::config::Config;
use crate::metrics::{Delivery, Metrics};
use crate::net::{ClientSettings, Outbound, Redirects};
use rehome_domain::webhook::{
    answer_excerpt, read_previous, still_signing, DeliveryStatus, FailureClass, ANSWER_EXCERPT_BYTES,
};
use rehome_store::{AttemptResult, ClaimedEvent, DueDelivery, DueKey, Sealer, Store, StoreError};

/// The deliverer's name in the failure record.
const TASK: &str = "webhooks";

/// The `User-Agent` of every delivery.
pub const USER_AGENT: &str = "rehome-webhooks/1.0";
/// The most of an answer's body read so its connection can be reused: its first
/// [`ANSWER_EXCERPT_BYTES`] are kept with the attempt, the rest is thrown away as it
/// arrives, and a longer body's connection is dropped unread.
const DRAIN_LIMIT: usize = 64 * 1024;

/// Wakes the delivery worker. Call [`Outbox::wake`] after committing a transaction that
/// emitted events; without it they still go out at the next poll.
#[derive(Debug, Clone, Default)]
pub struct Outbox(Arc<Signal>);

#[derive(Debug, Default)]
struct Signal {
    notify: Notify,
    /// The next look starts at the head of the outbox rather than where the last began.
    from_the_head: AtomicBool,
}

impl Outbox {
    pub fn wake(&self) {
        self.0.notify.notify_one();
    }

    /// Wakes the worker and has it look from the head of the outbox: for events already
    /// waiting that have just become deliverable (their brand's endpoint enabled), which
    /// may lie before where the worker's last look began.
    pub fn rescan(&self) {
        self.0.from_the_head.store(true, Ordering::Relaxed);
        self.wake();
    }
}

/// Where the worker's next look at the outbox starts ([`Store::due_webhooks_window`]): where
/// the last look found its first deliverable event, less [`LATE_COMMITS`], and at the head
/// of the outbox at least once a poll interval, so that events behind it (a lease run out on
/// a stopped node, an event written by a node whose clock is behind) wait no longer than
/// the poll.
#[derive(Debug, Default)]
struct WindowStart {
    from: Option<DueKey>,
    head_read_at: Option<Instant>,
}

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub timeout: Duration,
    pub schedule: RetrySchedule,
    pub concurrency: usize,
    pub per_endpoint: usize,
    /// The longest the worker sleeps without looking at the outbox.
    pub poll: Duration,
    pub allow_private_network: bool,
}

impl WorkerSettings {
    pub fn from_config(config: &Config) -> Self {
        Self {
            timeout: Duration::from_millis(config.webhook_timeout_ms),
            schedule: RetrySchedule::doubling(
                Duration::from_millis(config.webhook_retry_base_ms),
                Duration::from_secs(config.webhook_retry_window_s),
            ),
            concurrency: config.webhook_concurrency.max(1),
            per_endpoint: config.webhook_concurrency_per_endpoint.max(1),
            poll: Duration::from_millis(config.webhook_poll_ms),
            allow_private_network: config.allow_private_network,
        }
    }

    fn lease(&self) -> TimeDelta {
        TimeDelta::from_std(self.timeout * 2 + Duration::from_secs(1)).unwrap_or(TimeDelta::minutes(1))
    }

    fn window(&self) -> TimeDelta {
        TimeDelta::from_std(self.schedule.window).unwrap_or(TimeDelta::days(1))
    }
}

/// How many times in a row the loop looks again at once after losing events to another
/// worker, before it waits as usual.
const MAX_RACES_IN_A_ROW: u32 = 3;

/// How far behind its place each look reaches back. An event is due from the instant it was
/// made, inside its transaction, and appears when that commits: after events made later
/// whose transactions committed first. Reaching back this far finds it at once; PostgreSQL
/// then walks at most this long a stretch of delivered events' index entries.
const LATE_COMMITS: TimeDelta = TimeDelta::seconds(1);

/// After a claim lost events to another node, how many of this node's next claims take
/// from a random place of the window rather than its oldest events: nodes reading the same
/// head then seldom choose the same events. A node alone keeps the strict due order.
const CONTENDED_CLAIMS: u32 = 32;

/// The jobs a claim took, and whether some events it was offered went to another worker.
struct Claimed {
    jobs: Vec<Job>,
    lost: bool,
}

/// A claimed event and where it goes.
struct Job {
    event: ClaimedEvent,
    url: String,
    /// The endpoint's secret, then the previous ones still in their overlap, newest first.
    secrets: Vec<String>,
}

/// The due events a claim chose, within the free slots overall and per brand.
struct Picked<'a> {
    in_flight: &'a HashMap<i64, usize>,
    per_endpoint: usize,
    free: usize,
    now: chrono::DateTime<Utc>,
    taken: HashMap<i64, usize>,
    seqs: Vec<i64>,
    /// Where each chosen event goes: its URL and signing secrets.
    targets: HashMap<i64, (String, Vec<String>)>,
}

impl<'a> Picked<'a> {
    fn new(in_flight: &'a HashMap<i64, usize>, per_endpoint: usize, free: usize, now: chrono::DateTime<Utc>) -> Self {
        let (taken, seqs, targets) = (HashMap::new(), Vec::with_capacity(free), HashMap::new());
        Self { in_flight, per_endpoint, free, now, taken, seqs, targets }
    }

    fn full(&self) -> bool {
        self.seqs.len() >= self.free
    }

    /// Takes candidates in their order while slots are free, skipping those already taken
    /// and those of a brand with no slot left.
    fn offer(&mut self, due: Vec<DueDelivery>) {
        for candidate in due {
            if self.full() {
                break;
            }
            if self.targets.contains_key(&candidate.seq) {
                continue;
            }
            let used = self.in_flight.get(&candidate.brand_id).copied().unwrap_or(0);
            let slot = self.taken.entry(candidate.brand_id).or_default();
            if used + *slot >= self.per_endpoint {
                continue;
            }
            *slot += 1;
            self.seqs.push(candidate.seq);
            let previous = still_signing(&read_previous(&candidate.previous_secrets), self.now);
            let secrets = std::iter::once(candidate.signing_secret).chain(previous).collect();
            self.targets.insert(candidate.seq, (candidate.url, secrets));
        }
    }
}

/// Claims, sends and records deliveries.
pub struct Deliverer {
    store: Store,
    outbound: Outbound,
    settings: WorkerSettings,
    outbox: Outbox,
    /// Opens event bodies (the store's data key).
    sealer: Option<Sealer>,
    /// This worker's lease owner id.
    owner: String,
    /// Counts the outcomes of the attempts it records, and the claims lost to other nodes.
    metrics: Option<Arc<Metrics>>,
    /// Where the deliverer's own failures (a claim, a record, a release) are recorded.
    failures: Failures,
    window: Mutex<WindowStart>,
    /// Claims left that start at a random place of the window: set after a claim lost
    /// events to another node ([`CONTENDED_CLAIMS`]).
    contended: AtomicU32,
}

impl Deliverer {
    pub fn new(store: Store, settings: WorkerSettings, outbox: Outbox) -> Result<Self, reqwest::Error> {
        let outbound = Outbound::new(ClientSettings {
            user_agent: USER_AGENT.to_owned(),
            connect_timeout: settings.timeout,
            timeout: settings.timeout,
            redirects: Redirects::None,
            allow_private_network: settings.allow_private_network,
        })?;
        let owner = format!("worker-{}", uuid::Uuid::new_v4().simple());
        let sealer = store.sealer().ok().cloned();
        Ok(Self {
            store,
            outbound,
            settings,
            outbox,
            sealer,
            owner,
            metrics: None,
            failures: Failures::default(),
            window: Mutex::default(),
            contended: AtomicU32::new(0),
        })
    }

    /// Counts each recorded attempt's outcome (`rehome_webhook_deliveries_total`) in `metrics`,
    /// and the deliverer's own failures (`rehome_background_failures_total`).
    pub fn counting_into(self, metrics: Arc<Metrics>) -> Self {
        Self { failures: Failures::counting_into(metrics.clone()), metrics: Some(metrics), ..self }
    }

    /// Runs the loop until `stop` turns true (or its sender is dropped); then finishes the
    /// deliveries in flight (each ends within the timeout), records them and returns.
    pub fn spawn(self, stop: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(Arc::new(self).run(stop))
    }

    async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut tasks: JoinSet<AttemptResult> = JoinSet::new();
        let mut brand_of: HashMap<tokio::task::Id, i64> = HashMap::new();
        let mut in_flight: HashMap<i64, usize> = HashMap::new();
        let mut finished: Vec<AttemptResult> = Vec::new();
        let mut last_sweep: Option<Instant> = None;
        let mut stopping = false;
        let mut races = 0;
        // Deliveries finished since the last claim, and how many of them make the next one
        // when only finishing deliveries wake the loop: a quarter of those then in flight.
        // Under a backlog the loop so looks for due events, and records results, once per
        // batch rather than once per delivery; anything else (an emitted event, the timer,
        // nothing left in flight) makes it look at once.
        let mut since_claim = 0;
        let mut batch = 1;
        let mut by_a_delivery = false;
        let mut wake_at = tokio::time::Instant::now();
        let mut recording: Option<JoinHandle<()>> = None;
        loop {
            while let Some(done) = tasks.try_join_next_with_id() {
                self.collect(done, &mut brand_of, &mut in_flight, &mut finished);
                since_claim += 1;
            }
            if stopping || *stop.borrow() {
                break;
            }
            if last_sweep.is_none_or(|at| at.elapsed() >= self.settings.poll) {
                self.park_undeliverable().await;
                last_sweep = Some(Instant::now());
            }
            let free = self.settings.concurrency.saturating_sub(tasks.len());
            if free > 0 && (!by_a_delivery || tasks.is_empty() || since_claim >= batch) {
                let mut lost_race = false;
                match self.claim(&in_flight, free, tasks.len()).await {
                    Ok(Claimed { jobs, lost }) => {
                        lost_race = lost;
                        for job in jobs {
                            *in_flight.entry(job.event.brand_id).or_default() += 1;
                            let brand_id = job.event.brand_id;
                            let (outbound, settings) = (self.outbound.clone(), self.settings.clone());
                            let sealer = self.sealer.clone();
                            let handle =
                                tasks.spawn(async move { attempt(&outbound, &settings, sealer.as_ref(), job).await });
                            brand_of.insert(handle.id(), brand_id);
                        }
                    }
                    Err(e) => self.failures.record(TASK, "cannot claim webhook deliveries", &e),
                }
                // The finished deliveries are recorded while the new ones run and the loop
                // waits, not before the claim: new deliveries start a statement sooner, and
                // the loop never waits for a recording unless the one before is still going.
                if !finished.is_empty() {
                    if let Some(previous) = recording.take() {
                        let _ = previous.await;
                    }
                    let (this, results) = (self.clone(), std::mem::take(&mut finished));
                    recording = Some(tokio::spawn(async move { this.record(results).await }));
                }
                since_claim = 0;
                batch = (tasks.len() / 4).max(1);
                // Another node claimed events this one was offered: look again at once (the
                // due list no longer offers those) instead of idling until the next poll, a
                // few times in a row at most.
                if lost_race && races < MAX_RACES_IN_A_ROW {
                    races += 1;
                    by_a_delivery = false;
                    continue;
                }
                races = 0;
                wake_at = self.next_wake(tasks.len()).await;
            }
            by_a_delivery = false;
            tokio::select! {
                Some(done) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                    self.collect(done, &mut brand_of, &mut in_flight, &mut finished);
                    since_claim += 1;
                    by_a_delivery = true;
                }
                () = self.outbox.0.notify.notified() => {}
                () = tokio::time::sleep_until(wake_at) => {}
                // A dropped sender (the server failed) stops the worker too.
                changed = stop.changed() => stopping = changed.is_err(),
            }
        }
        while let Some(done) = tasks.join_next_with_id().await {
            self.collect(done, &mut brand_of, &mut in_flight, &mut finished);
        }
        if let Some(previous) = recording {
            let _ = previous.await;
        }
        self.record(finished).await;
        if let Err(e) = self.store.release_webhook_leases(&self.owner).await {
            self.failures.record(TASK, "cannot release webhook leases; they expire on their own", &e);
        }
    }

    /// When to look again if nothing else happens: the next retry due, at the latest after
    /// the poll interval.
    async fn next_wake(&self, busy: usize) -> tokio::time::Instant {
        let poll = tokio::time::Instant::now() + self.settings.poll;
        if busy >= self.settings.concurrency {
            return poll;
        }
        let now = Utc::now();
        match self.store.next_webhook_due(now).await {
            Ok(Some(due)) => {
                let wait = (due - now).to_std().unwrap_or_default();
                poll.min(tokio::time::Instant::now() + wait)
            }
            Ok(None) => poll,
            Err(e) => {
                self.failures.record(TASK, "cannot read the webhook outbox", &e);
                poll
            }
        }
    }

    fn collect(
        &self,
        done: Result<(tokio::task::Id, AttemptResult), tokio::task::JoinError>,
        brand_of: &mut HashMap<tokio::task::Id, i64>,
        in_flight: &mut HashMap<i64, usize>,
        finished: &mut Vec<AttemptResult>,
    ) {
        let id = match done {
            Ok((id, result)) => {
                finished.push(result);
                id
            }
            // A panicking delivery loses only its result: the lease runs out and it is retried.
            Err(e) => {
                self.failures.record(TASK, "a webhook delivery task failed", &e);
                e.id()
            }
        };
        if let Some(brand_id) = brand_of.remove(&id) {
            if let Some(count) = in_flight.get_mut(&brand_id) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    in_flight.remove(&brand_id);
                }
            }
        }
    }

    async fn record(&self, finished: Vec<AttemptResult>) {
        if finished.is_empty() {
            return;
        }
        // On failure the results are dropped: their leases run out and the events are sent
        // again (at least once, never lost).
        match self.store.record_webhook_attempts(&self.owner, &finished).await {
            Ok(_) => {
                if let Some(metrics) = &self.metrics {
                    for attempt in finished.iter() {
                        metrics.webhook_deliveries(delivery_outcome(attempt.status), 1);
                    }
                }
            }
            Err(e) => self.failures.record(TASK, &format!("cannot record {} webhook attempts", finished.len()), &e),
        }
    }

    async fn park_undeliverable(&self) {
        let now = Utc::now();
        match self.store.park_undeliverable_webhooks(now - self.settings.window(), now).await {
            Ok(0) => {}
            Ok(n) => {
                if let Some(metrics) = &self.metrics {
                    metrics.webhook_deliveries(Delivery::Dead, n);
                }
                tracing::info!(count = n, "webhook events parked as dead: no enabled endpoint in their window")
            }
            Err(e) => self.failures.record(TASK, "cannot park undeliverable webhook events", &e),
        }
    }

    /// Claims up to `free` due events, none for a brand beyond its free slots: first from
    /// the head of the outbox in due order ([`Store::due_webhooks_window`], a bounded scan),
    /// then, only if that cannot fill the slots and there is more, from each endpoint's
    /// oldest ([`Store::due_webhooks`]), so one brand's backlog never hides the others'.
    async fn claim(&self, in_flight: &HashMap<i64, usize>, free: usize, busy: usize) -> Result<Claimed, StoreError> {
        let now = Utc::now();
        let mut picked = Picked::new(in_flight, self.settings.per_endpoint, free, now);
        let window = (4 * (free + busy)).max(64);
        let head = self.store.due_webhooks_window(now, window as i64, self.window_from()).await?;
        if let Some(first) = head.first {
            self.window.lock().unwrap_or_else(PoisonError::into_inner).from = Some(first);
        }
        let mut due = head.due;
        let contended = || self.contended.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if due.len() > free && contended().is_ok() {
            // Every candidate is still offered, from the random place round to it again.
            let last = due.len() - 1;
            let place = (random_unit() * (due.len() - free + 1) as f64) as usize;
            due.rotate_left(place.min(last));
        }
        picked.offer(due);
        if !picked.full() && !head.complete {
            // Each event in flight or picked can hide at most one candidate (its brand's slot
            // is taken), so asking for that many more always shows the usable ones there are.
            let limit = free + busy + picked.seqs.len();
            let per_endpoint = self.settings.per_endpoint as i64;
            picked.offer(self.store.due_webhooks(now, per_endpoint, limit as i64).await?);
        }
        let Picked { seqs, mut targets, .. } = picked;
        let claimed = self.store.claim_webhooks(&seqs, &self.owner, now, now + self.settings.lease()).await?;
        let lost = seqs.len().saturating_sub(claimed.len());
        if lost > 0 {
            self.contended.store(CONTENDED_CLAIMS, Ordering::Relaxed);
            if let Some(metrics) = &self.metrics {
                metrics.webhook_claims_lost(lost as u64);
            }
        }
        let jobs = claimed
            .into_iter()
            .filter_map(|event| {
                let (url, secrets) = targets.remove(&event.seq)?;
                Some(Job { event, url, secrets })
            })
            .collect();
        Ok(Claimed { jobs, lost: lost > 0 })
    }

    /// Where this look at the outbox starts: where the last one found its first deliverable
    /// event, or the head once a poll interval and when [`Outbox::rescan`] asked.
    fn window_from(&self) -> Option<DueKey> {
        let mut start = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let rescan = self.outbox.0.from_the_head.swap(false, Ordering::Relaxed);
        if rescan || start.head_read_at.is_none_or(|at| at.elapsed() >= self.settings.poll) {
            *start = WindowStart { from: None, head_read_at: Some(Instant::now()) };
        }
        start.from.map(|from| DueKey { at: from.at - LATE_COMMITS, seq: 0 })
    }

    /// Delivers everything due now and waits for the results, repeating until nothing is due.
    /// Returns the number of attempts made. Runs beside the loop safely (leases).
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let mut attempts = 0;
        loop {
            let Claimed { jobs, .. } = self.claim(&HashMap::new(), self.settings.concurrency, 0).await?;
            if jobs.is_empty() {
                return Ok(attempts);
            }
            attempts += jobs.len();
            let mut tasks = JoinSet::new();
            for job in jobs {
                let (outbound, settings, sealer) = (self.outbound.clone(), self.settings.clone(), self.sealer.clone());
                tasks.spawn(async move { attempt(&outbound, &settings, sealer.as_ref(), job).await });
            }
            self.record(tasks.join_all().await).await;
        }
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Worth another try (timeout, connection failure, 5xx, 429; an `undecryptable` body
    /// too, which a restart with the right data key delivers).
    Retry,
    /// Never worth another try (any other answer, a URL that cannot be used).
    Dead,
}

/// The answer of the receiver, or why there was none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    Failed(FailureClass),
}

impl Answer {
    /// decisions.md 6.2: 2xx delivered; timeout, connection failure, 5xx and 429 retried;
    /// everything else, 3xx included (redirects are not followed), fails for good.
    pub fn verdict(self) -> Verdict {
        match self {
            Self::Status(200..=299) => Verdict::Delivered,
            Self::Status(429 | 500..=599) => Verdict::Retry,
            Self::Status(_) => Verdict::Dead,
            Self::Failed(FailureClass::InvalidUrl) => Verdict::Dead,
            Self::Failed(_) => Verdict::Retry,
        }
    }

    /// The error class recorded with the attempt (`None` for a 2xx).
    pub fn error(self) -> Option<FailureClass> {
        match self {
            Self::Status(200..=299) => None,
            Self::Status(300..=399) => Some(FailureClass::RedirectNotFollowed),
            Self::Status(_) => Some(FailureClass::HttpStatus),
            Self::Failed(class) => Some(class),
        }
    }
}

/// What an attempt's recorded status says of it: still pending is a retry scheduled.
fn delivery_outcome(status: DeliveryStatus) -> Delivery {
    match status {
        DeliveryStatus::Delivered => Delivery::Delivered,
        DeliveryStatus::Pending => Delivery::Retried,
        DeliveryStatus::Dead => Delivery::Dead,
    }
}

async fn attempt(outbound: &Outbound, settings: &WorkerSettings, sealer: Option<&Sealer>, job: Job) -> AttemptResult {
    let attempted_at = Utc::now();
    let started = Instant::now();
    let (answer, excerpt) = match job.event.envelope(sealer) {
        Ok(body) => send(outbound, &job, body).await,
        Err(_) => {
            tracing::error!(
                event_id = %job.event.id,
                "webhook event body does not open with this data key (wrong REHOME_DATA_KEY or key file?): not sent"
            );
            (Answer::Failed(FailureClass::Undecryptable), None)
        }
    };
    let elapsed = started.elapsed();
    let finished_at = attempted_at + TimeDelta::from_std(elapsed).unwrap_or_default();
    let (status, next_attempt_at) = match answer.verdict() {
        Verdict::Delivered => (DeliveryStatus::Delivered, None),
        Verdict::Dead => (DeliveryStatus::Dead, None),
        Verdict::Retry => {
            let failures = u32::try_from(job.event.window_attempts + 1).unwrap_or(u32::MAX);
            let retry_until = job.event.window_start + settings.window();
            match settings.schedule.next_attempt(failures, finished_at, retry_until, random_unit()) {
                Some(at) => (DeliveryStatus::Pending, Some(at)),
                None => (DeliveryStatus::Dead, None),
            }
        }
    };
    tracing::debug!(event_id = %job.event.id, ?answer, %status, elapsed_ms = elapsed.as_millis(), "webhook attempt");
    AttemptResult {
        seq: job.event.seq,
        attempted_at,
        url: job.url,
        status_code: match answer {
            Answer::Status(code) => Some(code),
            Answer::Failed(_) => None,
        },
        error: answer.error(),
        duration_ms: i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
        status,
        next_attempt_at,
        response_excerpt: excerpt,
    }
}

/// POSTs the envelope bytes, signed now, and returns the answer's status and the start of
/// its body ([`answer_excerpt`]).
async fn send(outbound: &Outbound, job: &Job, body: Vec<u8>) -> (Answer, Option<String>) {
    let Ok(url) = Url::parse(&job.url) else {
        return (Answer::Failed(FailureClass::InvalidUrl), None);
    };
    let timestamp = Utc::now().timestamp();
    let secrets: Vec<&str> = job.secrets.iter().map(String::as_str).collect();
    let signature = signature_header(&secrets, timestamp, &body);
    let standard = standard_signature(&secrets, &job.event.id, timestamp, &body);
    let request = match outbound.request(Method::POST, &url) {
        Ok(request) => request,
        Err(_) => return (Answer::Failed(FailureClass::AddressRefused), None),
    };
    let sent = request
        .header(CONTENT_TYPE, "application/json")
        .header("X-Service-Event", job.event.event_type.as_str())
        .header("X-Service-Event-Id", job.event.id.as_str())
        .header("X-Service-Signature", signature)
        .header("webhook-id", job.event.id.as_str())
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", standard)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(mut response) => {
            let status = response.status().as_u16();
            // One byte past the excerpt says whether the body was cut.
            let mut kept: Vec<u8> = Vec::with_capacity(ANSWER_EXCERPT_BYTES + 1);
            let mut read = 0;
            while read < DRAIN_LIMIT {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        let room = (ANSWER_EXCERPT_BYTES + 1).saturating_sub(kept.len());
                        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                        read += chunk.len();
                    }
                    _ => break,
                }
            }
            (Answer::Status(status), answer_excerpt(&kept))
        }
        Err(e) => (Answer::Failed(failure_class(&e)), None),
    }
}

fn failure_class(error: &reqwest::Error) -> FailureClass {
    if crate::net::refusal(error).is_some() {
        FailureClass::AddressRefused
    } else if error.is_timeout() {
        FailureClass::Timeout
    } else {
        FailureClass::ConnectionFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_classified_as_decisions_6_2_says() {
        use FailureClass::*;
        for (answer, verdict, error) in [
            (Answer::Status(200), Verdict::Delivered, None),
            (Answer::Status(204), Verdict::Delivered, None),
            (Answer::Status(500), Verdict::Retry, Some(HttpStatus)),
            (Answer::Status(503), Verdict::Retry, Some(HttpStatus)),
            (Answer::Status(429), Verdict::Retry, Some(HttpStatus)),
            (Answer::Status(400), Verdict::Dead, Some(HttpStatus)),
            (Answer::Status(404), Verdict::Dead, Some(HttpStatus)),
            (Answer::Status(410), Verdict::Dead, Some(HttpStatus)),
            (Answer::Status(301), Verdict::Dead, Some(RedirectNotFollowed)),
            (Answer::Status(302), Verdict::Dead, Some(RedirectNotFollowed)),
            (Answer::Failed(Timeout), Verdict::Retry, Some(Timeout)),
            (Answer::Failed(ConnectionFailed), Verdict::Retry, Some(ConnectionFailed)),
            (Answer::Failed(AddressRefused), Verdict::Retry, Some(AddressRefused)),
            (Answer::Failed(InvalidUrl), Verdict::Dead, Some(InvalidUrl)),
            (Answer::Failed(Undecryptable), Verdict::Retry, Some(Undecryptable)),
        ] {
            assert_eq!(answer.verdict(), verdict, "{answer:?}");
            assert_eq!(answer.error(), error, "{answer:?}");
        }
    }
}
