//! The retention job (issue 36): deletes the rows that only record the past once they are
//! past their window ([`rehome_domain::retention`]): failed sign-ins, ended or expired
//! sessions, spent or expired invitations, sent or given-up mail, expired idempotency keys
//! and, on PostgreSQL, idle rate limit slots; delivered webhook events and their attempts a
//! window after delivery (issue 34); bulk import drafts once expired (issue 31); storefront
//! buyers' details a window after their order (issue 47). The audit log, the ledger and remittances, pending and
//! dead webhook events and the catalogue are kept.
//!
//! Every node runs the scheduler (a [`Periodic`] task on its background runner); like the
//! monthly remittance run, a node takes the job's
//! lease (`job_leases`) before it runs, so one node at a time does, once per interval over
//! all nodes. A node that dies mid-run leaves its lease to run out ([`LEASE`]); a long run
//! renews it between batches. Rows go in batches of a few hundred or thousand, each one
//! short statement (one short write lock on SQLite), with a pause between batches so that
//! requests' writes are never kept waiting long.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use tokio::sync::watch;

use super::queue::{Failures, Periodic, Ticker};
use crate::config::Config;
use crate::metrics::Metrics;
use rehome_domain::retention::{Cutoffs, Table, Windows};
use rehome_domain::time::Ts;
use rehome_store::{PrunedBatch, Store, StoreError};

/// The job's name in `job_leases`.
pub const JOB: &str = "retention";

/// How long a node holds the job before another may take it over; renewed while it runs.
pub const LEASE: TimeDelta = TimeDelta::minutes(5);

/// The job's settings (`REHOME_RETENTION_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub windows: Windows,
    /// Rows per statement.
    pub batch: u32,
    /// The pause between two batches.
    pub pause: Duration,
    /// How often the job runs (over all nodes).
    pub interval: Duration,
    /// Most idempotency keys one API key keeps: past it, its oldest go first.
    pub idempotency_cap: u64,
    /// How long an idempotency key lasts: only a key used within it can hold any.
    pub idempotency_ttl: TimeDelta,
}

impl Settings {
    pub fn from_config(config: &Config) -> Self {
        let lockout = TimeDelta::seconds(i64::try_from(config.signin_lock_seconds).unwrap_or(i64::MAX));
        let rate_limit = TimeDelta::nanoseconds(i64::try_from(crate::limit::WINDOW_NANOS).unwrap_or(i64::MAX));
        Self {
            windows: Windows::new(
                config.retention_sign_in_failures_hours,
                config.retention_sessions_days,
                config.retention_invitations_days,
                config.retention_mail_days,
                lockout,
                rate_limit,
            )
            .keeping_webhook_events(config.retention_webhook_events_days)
            .keeping_buyers(config.retention_buyers_days),
            batch: config.retention_batch,
            pause: Duration::from_millis(config.retention_pause_ms),
            interval: Duration::from_secs(config.retention_interval_s),
            idempotency_cap: config.idempotency_keys_per_api_key,
            idempotency_ttl: TimeDelta::seconds(i64::try_from(config.idempotency_ttl_s).unwrap_or(i64::MAX)),
        }
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Rows deleted, per table that lost any.
    pub deleted: Vec<(Table, u64)>,
    /// Statements run (each at most one batch).
    pub batches: u64,
    /// The longest statement: the longest the job held the write lock at once.
    pub longest_batch: Duration,
    /// The whole run, pauses included.
    pub elapsed: Duration,
    /// False when the run stopped early (shutdown, or its lease taken over).
    pub complete: bool,
}

impl Report {
    /// Rows of `table` deleted.
    pub fn deleted(&self, table: Table) -> u64 {
        self.deleted.iter().filter(|(t, _)| *t == table).map(|(_, n)| n).sum()
    }

    pub fn total(&self) -> u64 {
        self.deleted.iter().map(|(_, n)| n).sum()
    }
}

/// The job over one store.
#[derive(Clone)]
pub struct Retention {
    store: Store,
    settings: Settings,
    metrics: Option<Arc<Metrics>>,
    /// This node's name in the job's lease.
    owner: String,
}

/// What a run checks between batches: a shutdown, and the lease it holds.
struct Run<'a> {
    lease: Option<(&'a str, Instant)>,
    stop: Option<&'a watch::Receiver<bool>>,
}

impl Retention {
    pub fn new(store: Store, settings: Settings) -> Self {
        Self { store, settings, metrics: None, owner: format!("retention-{}", uuid::Uuid::new_v4().simple()) }
    }

    /// Counts the rows deleted into `metrics` (`rehome_retention_deleted_rows_total`).
    pub fn counting_into(self, metrics: Arc<Metrics>) -> Self {
        Self { metrics: Some(metrics), ..self }
    }

    /// Deletes everything past its window as of `now`, without taking the lease: for tests,
    /// and for a node that already holds it.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<Report, StoreError> {
        self.run(now, &mut Run { lease: None, stop: None }).await
    }

    /// The scheduler: every node runs one, on its background runner.
    pub fn ticker(self) -> Arc<Ticker<Self>> {
        Ticker::new(self)
    }

    /// Nodes look a few times per interval, so the job runs about once per interval
    /// whichever node finished it last.
    fn poll(&self) -> Duration {
        (self.settings.interval / 4).max(Duration::from_secs(1)).min(self.settings.interval)
    }
    async fn run(&self, now: DateTime<Utc>, run: &mut Run<'_>) -> Result<Report, StoreError> {
        let started = Instant::now();
        let cut = self.settings.windows.cutoffs(now);
        let mut report = Report { complete: true, ..Report::default() };
        for table in Table::ALL {
            if table == Table::RateLimitSlots && self.store.postgres().is_none() {
                continue;
            }
            let mut deleted = 0;
            let mut from = None;
            loop {
                let at = Instant::now();
                let n = self.batch(table, now, &cut, &mut from).await?;
                report.batches += 1;
                report.longest_batch = report.longest_batch.max(at.elapsed());
                deleted += n;
                // Only an empty batch ends a table: a short one may have met rows that
                // another transaction was deleting (the previous batch's last instant, not
                // yet visible as gone, or a node whose lease ran out still finishing).
                if n == 0 {
                    break;
                }
                if !self.go_on(run).await? {
                    report.complete = false;
                    break;
                }
            }
            if table == Table::IdempotencyKeys && report.complete {
                deleted += self.trim_idempotency(now, run, &mut report).await?;
            }
            if deleted > 0 {
                report.deleted.push((table, deleted));
                if let Some(metrics) = &self.metrics {
                    metrics.retention_deleted(table.name(), deleted);
                }
            }
            if !report.complete {
                break;
            }
        }
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// Deletes the oldest idempotency keys of every API key holding more than the cap
    /// (`REHOME_IDEMPOTENCY_KEYS_PER_API_KEY`), down to the cap; answers how many. Between
    /// two runs a key can go over by at most what its rate limit lets it send in between.
    async fn trim_idempotency(
        &self,
        now: DateTime<Utc>,
        run: &mut Run<'_>,
        report: &mut Report,
    ) -> Result<u64, StoreError> {
        let used_since = now - self.settings.idempotency_ttl - LEASE;
        let cap = i64::try_from(self.settings.idempotency_cap).unwrap_or(i64::MAX);
        let mut deleted = 0;
        for (key_id, mut over) in self.store.idempotency_over_cap(Ts::from(used_since), cap).await? {
            while over > 0 {
                let at = Instant::now();
                let n = self.store.trim_idempotency(key_id, over.min(i64::from(self.settings.batch))).await?;
                report.batches += 1;
                report.longest_batch = report.longest_batch.max(at.elapsed());
                deleted += n;
                over -= i64::try_from(n).unwrap_or(i64::MAX);
                // Nothing more it may delete (the rest are running): the next run sees.
                if n == 0 {
                    break;
                }
                if !self.go_on(run).await? {
                    report.complete = false;
                    return Ok(deleted);
                }
            }
        }
        Ok(deleted)
    }

    /// One statement: up to a batch of `table`'s rows past their cutoff; `from` carries
    /// where the previous batch of the table stopped, for those deleted oldest first.
    async fn batch(
        &self,
        table: Table,
        now: DateTime<Utc>,
        cut: &Cutoffs,
        from: &mut Option<Ts>,
    ) -> Result<u64, StoreError> {
        let limit = i64::from(self.settings.batch);
        let store = &self.store;
        let oldest_first = |batch: PrunedBatch, from: &mut Option<Ts>| {
            *from = batch.last.or(*from);
            batch.rows
        };
        match table {
            Table::SignInFailures => {
                let batch = store.prune_sign_in_failures(*from, Ts::from(cut.sign_in_failures), limit).await?;
                Ok(oldest_first(batch, from))
            }
            Table::Sessions => {
                store.prune_sessions(Ts::from(cut.sessions_ended), Ts::from(cut.sessions_seen), limit).await
            }
            Table::Invitations => store.prune_invitations(Ts::from(cut.invitations), limit).await,
            Table::Mail => store.prune_mail(Ts::from(cut.mail), limit).await,
            Table::IdempotencyKeys => {
                let batch = store.prune_idempotency(*from, Ts::from(cut.idempotency), limit).await?;
                Ok(oldest_first(batch, from))
            }
            // Kept when no window is set (the earliest instant): nothing to look for.
            Table::WebhookEvents if cut.webhook_events == DateTime::<Utc>::MIN_UTC => Ok(0),
            Table::WebhookEvents => store.prune_webhook_events(Ts::from(cut.webhook_events), limit).await,
            Table::BulkDrafts => store.prune_bulk_drafts(Ts::from(now), limit).await,
            Table::Buyers if cut.buyers == DateTime::<Utc>::MIN_UTC => Ok(0),
            Table::Buyers => store.prune_buyers(Ts::from(cut.buyers), limit).await,
            Table::RateLimitSlots => match store.postgres() {
                Some(pg) => pg.prune_rate_slots(cut.rate_limit_slot, limit).await,
                None => Ok(0),
            },
        }
    }

    /// Pauses between two batches; false when the run should stop (shutdown, or the lease
    /// is another node's now). Renews the lease when a third of it has gone.
    async fn go_on(&self, run: &mut Run<'_>) -> Result<bool, StoreError> {
        tokio::time::sleep(self.settings.pause).await;
        if run.stop.is_some_and(|stop| *stop.borrow()) {
            return Ok(false);
        }
        if let Some((owner, renewed)) = &mut run.lease {
            if renewed.elapsed() >= (LEASE / 3).to_std().unwrap_or_default() {
                if !self.store.extend_job(JOB, owner, Ts::from(Utc::now() + LEASE)).await? {
                    tracing::warn!("the retention job's lease was taken over; stopping this run");
                    return Ok(false);
                }
                *renewed = Instant::now();
            }
        }
        Ok(true)
    }
}

impl Periodic for Retention {
    const NAME: &'static str = "retention";

    fn first_turn(&self) -> Duration {
        self.poll()
    }

    /// Takes the job's lease if it is due and free, runs it, and gives the lease back with
    /// the next run's time (at once when the run stopped early: whichever node looks next
    /// carries on).
    async fn turn(self: Arc<Self>, stop: watch::Receiver<bool>, failures: Failures) -> Duration {
        let now = Utc::now();
        match self.store.claim_job(JOB, &self.owner, Ts::from(now), Ts::from(now + LEASE)).await {
            Ok(true) => {}
            Ok(false) => return self.poll(),
            Err(e) => {
                failures.record(Self::NAME, "cannot claim the retention job", &e);
                return self.poll();
            }
        }
        let run = self.run(now, &mut Run { lease: Some((&self.owner, Instant::now())), stop: Some(&stop) }).await;
        let mut next = now + TimeDelta::from_std(self.settings.interval).unwrap_or(TimeDelta::MAX);
        match run {
            Ok(report) => {
                if !report.complete {
                    next = Utc::now();
                }
                log(&report);
            }
            Err(e) => failures.record(Self::NAME, "the retention job failed; it runs again next interval", &e),
        }
        if let Err(e) = self.store.finish_job(JOB, &self.owner, Ts::from(next)).await {
            failures.record(Self::NAME, "cannot release the retention job's lease; it runs out", &e);
        }
        self.poll()
    }
}

fn log(report: &Report) {
    if report.total() == 0 {
        return;
    }
    let tables: Vec<String> = report.deleted.iter().map(|(t, n)| format!("{}={n}", t.name())).collect();
    tracing::info!(
        deleted = report.total(),
        tables = %tables.join(","),
        batches = report.batches,
        longest_batch_ms = report.longest_batch.as_millis() as u64,
        elapsed_ms = report.elapsed.as_millis() as u64,
        complete = report.complete,
        "retention run done"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_follow_the_configuration() {
        let config = Config { retention_sign_in_failures_hours: 2, retention_batch: 500, ..Config::default() };
        let settings = Settings::from_config(&config);
        assert_eq!(settings.windows.sign_in_failures, TimeDelta::hours(2));
        assert_eq!(settings.windows.sessions, TimeDelta::days(30));
        assert_eq!(settings.windows.buyers, TimeDelta::days(90));
        assert_eq!(settings.windows.rate_limit, TimeDelta::seconds(60));
        assert_eq!(settings.batch, 500);
        assert_eq!(settings.interval, Duration::from_secs(60));
    }

    #[test]
    fn table_names_are_the_tables() {
        let names: Vec<_> = Table::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "sign_in_failures",
                "sessions",
                "invitations",
                "mail_outbox",
                "idempotency_keys",
                "rate_limit_slots",
                "webhook_events",
                "bulk_drafts",
                "order_buyers"
            ]
        );
    }
}
