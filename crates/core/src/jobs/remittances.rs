//! The monthly remittance run (decisions 10.4): at 00:00 UTC on the 1st, every node's
//! scheduler tries to take the month's lease in `remittance_runs`; the one that gets it
//! runs [`wallet::run`] as of that instant and marks the month done. A node that dies
//! mid-run leaves the lease to run out ([`LEASE`]); another node (or the restarted one)
//! then runs the month again, which issues only what the first did not (each brand's
//! statement is one transaction, and paid entries are not paid twice).
//!
//! A node that was down at midnight runs the month when it comes back. On the very first
//! start of a deployment the current month is recorded as done (nothing was running on
//! its 1st): the first statements come on the next 1st, or when the operator runs one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use tokio::sync::watch;

use super::queue::{Failures, Periodic, Ticker};
use super::MailJobs;
use crate::usecases::wallet;
use rehome_domain::time::Ts;
use rehome_domain::wallet::{month_start, next_run};
use rehome_store::Store;

/// How long a node holds a month's run before another may take it over.
pub const LEASE: TimeDelta = TimeDelta::minutes(15);

/// The scheduler: checks every `poll` (and at each 1st, 00:00 UTC) whether the month's run
/// is due and unclaimed. With `mail`, statements are mailed (the run wakes its worker).
pub struct Remittances {
    store: Store,
    mail: Option<MailJobs>,
    poll: Duration,
    /// This node's name in the run's lease.
    owner: String,
    /// The schedule's start is recorded (on the first turn).
    started: AtomicBool,
}

impl Remittances {
    pub fn new(store: Store, mail: Option<MailJobs>, poll: Duration) -> Self {
        let owner = format!("remittances-{}", uuid::Uuid::new_v4().simple());
        Self { store, mail, poll, owner, started: AtomicBool::new(false) }
    }

    /// The scheduler on a node's background runner.
    pub fn ticker(self) -> Arc<Ticker<Self>> {
        Ticker::new(self)
    }
}

impl Periodic for Remittances {
    const NAME: &'static str = "remittances";

    fn first_turn(&self) -> Duration {
        Duration::ZERO
    }

    async fn turn(self: Arc<Self>, _stop: watch::Receiver<bool>, failures: Failures) -> Duration {
        let store = &self.store;
        if !self.started.load(Ordering::Relaxed) {
            match store.start_remittance_schedule(Ts::from(month_start(Utc::now()))).await {
                Ok(()) => self.started.store(true, Ordering::Relaxed),
                Err(e) => failures.record(Self::NAME, "cannot record the remittance schedule's start", &e),
            }
        }
        let now = Utc::now();
        let period = month_start(now);
        match store.claim_remittance_run(Ts::from(period), &self.owner, Ts::from(now), Ts::from(now + LEASE)).await {
            Ok(true) => match wallet::run(store, period, self.mail.as_ref()).await {
                Ok(issued) => {
                    tracing::info!(period = %period, statements = issued.len(), "monthly remittance run done");
                    if let Err(e) = store.finish_remittance_run(Ts::from(period), &self.owner).await {
                        failures.record(Self::NAME, "cannot mark the remittance run done; it will run again", &e);
                    }
                }
                Err(e) => {
                    let what = format!("the remittance run of {period} failed; retried when its lease ends");
                    failures.record(Self::NAME, &what, &e);
                }
            },
            Ok(false) => {}
            Err(e) => failures.record(Self::NAME, "cannot claim the remittance run", &e),
        }
        let until_next = (next_run(Utc::now()) - Utc::now()).to_std().unwrap_or_default();
        self.poll.min(until_next)
    }
}
