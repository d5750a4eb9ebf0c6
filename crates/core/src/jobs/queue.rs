//! One way to run background work. Work kept in a leased table (`store::queue`: thumbnails,
//! image imports, mail, payment holds) is a [`Queue`]: it says how one round goes (claim a
//! batch, work it, record each outcome), and a [`Runner`] runs rounds until the server
//! stops, waking when the work is queued ([`Notify`]) and at least every poll interval, and
//! releases the leases still held when it stops. Work on a clock (retention, the monthly
//! remittance run, the listing-count folds, the shared rate limiter's give-backs) is a
//! [`Periodic`]: it says what one turn does and when the next is due, and a [`Ticker`] runs
//! its turns. [`Queues`] holds every runner and ticker of a server and starts them together;
//! a test (or an operator's command) runs whatever queued work is due now
//! ([`Queues::run_pending`]) instead of waiting for a poll.
//!
//! A failure of the machinery itself (a claim, a record, a release, a turn) is recorded one
//! way, whatever the work: [`Failures::record`], a warning naming the task and a count in
//! `rehome_background_failures_total`. A piece of work that fails (a message refused, an
//! image that does not decode) is not such a failure: it is that work's outcome, recorded in
//! its row with its retry.
//!
//! The webhook deliverer keeps a loop of its own (deliveries stream in and out of a bounded
//! set per endpoint, rather than in rounds) over the same leases, retry schedules and
//! failure record.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use rehome_store::StoreError;

use crate::metrics::Metrics;

/// Where every background failure goes: one warning naming the task, and one count of
/// `rehome_background_failures_total{task}` when the server counts.
#[derive(Clone, Default)]
pub struct Failures(Option<Arc<Metrics>>);

impl Failures {
    /// Failures counted into `metrics` as well as logged.
    pub fn counting_into(metrics: Arc<Metrics>) -> Self {
        Self(Some(metrics))
    }

    /// Records that `task` failed to do `what` (e.g. "cannot claim mail"), because of `error`.
    pub fn record(&self, task: &'static str, what: &str, error: &dyn std::fmt::Display) {
        tracing::warn!(task, error = %error, "{what}");
        if let Some(metrics) = &self.0 {
            metrics.background_failure(task);
        }
    }
}

/// One kind of leased work.
pub trait Queue: Send + Sync + 'static {
    /// Names the work in logs and in the failure count.
    const NAME: &'static str;

    /// Claims a batch, works it and records each outcome; answers how many it claimed. A
    /// claim that fails is the round's error (recorded by the runner); a failure later in
    /// the round is recorded into `failures` where it happens.
    fn round(self: Arc<Self>, failures: Failures) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// Gives up the leases this worker still holds (it is stopping), so another node or
    /// the next start takes the work at once.
    fn release(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Runs a [`Queue`]'s rounds one at a time: the background loop's and those of
/// [`Queues::run_pending`] never overlap, so work claimed by one is recorded before the
/// other looks.
pub struct Runner<Q> {
    queue: Arc<Q>,
    wake: Arc<Notify>,
    poll: Duration,
    turn: tokio::sync::Mutex<()>,
}

impl<Q: Queue> Runner<Q> {
    pub fn new(queue: Q, wake: Arc<Notify>, poll: Duration) -> Arc<Self> {
        Arc::new(Self { queue: Arc::new(queue), wake, poll, turn: tokio::sync::Mutex::new(()) })
    }

    async fn round(&self, failures: &Failures) -> usize {
        let _turn = self.turn.lock().await;
        match self.queue.clone().round(failures.clone()).await {
            Ok(claimed) => claimed,
            Err(e) => {
                failures.record(Q::NAME, &format!("cannot claim {} work", Q::NAME), &e);
                0
            }
        }
    }

    /// Runs rounds until `stop` turns true or its sender is dropped. After a round that
    /// found work it looks again at once; otherwise it sleeps until woken or the poll
    /// interval passes. A round in flight is finished before the loop returns, so outcomes
    /// are recorded, not left to lease expiry; then the leases still held are released.
    async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>, failures: Failures) {
        loop {
            if *stop.borrow() {
                break;
            }
            if self.round(&failures).await > 0 {
                continue;
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(self.poll) => {}
                changed = stop.changed() => if changed.is_err() { break },
            }
        }
        if let Err(e) = self.queue.release().await {
            failures.record(Q::NAME, &format!("cannot release {} leases; they expire on their own", Q::NAME), &e);
        }
    }
}

/// Work on a clock rather than from a queue.
pub trait Periodic: Send + Sync + 'static {
    /// Names the task in logs and in the failure count.
    const NAME: &'static str;

    /// How long after the server starts the first turn comes.
    fn first_turn(&self) -> Duration;

    /// Does what is due now, recording any failure into `failures`; answers how long until
    /// the next turn. `stop` turns true when the server stops: a long turn may end early.
    fn turn(self: Arc<Self>, stop: watch::Receiver<bool>, failures: Failures) -> impl Future<Output = Duration> + Send;

    /// The last work when the server stops, after the last turn.
    fn last(self: Arc<Self>, _failures: Failures) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Runs a [`Periodic`]'s turns, one at a time, until the server stops.
pub struct Ticker<P>(Arc<P>);

impl<P: Periodic> Ticker<P> {
    pub fn new(task: P) -> Arc<Self> {
        Arc::new(Self(Arc::new(task)))
    }

    async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>, failures: Failures) {
        let mut wait = self.0.first_turn();
        loop {
            tokio::select! {
                changed = stop.changed() => if changed.is_err() || *stop.borrow() { break },
                () = tokio::time::sleep(wait) => {}
            }
            if *stop.borrow() {
                break;
            }
            wait = self.0.clone().turn(stop.clone(), failures.clone()).await;
        }
        self.0.clone().last(failures).await;
    }
}

/// A runner whatever its work.
pub trait Worker: Send + Sync {
    /// Runs queued work until a round claims nothing; answers how many were claimed in
    /// all. Work on a clock waits for its time: nothing.
    fn run_pending<'a>(&'a self, failures: &'a Failures) -> BoxFuture<'a, usize>;

    /// Starts the background loop; it ends when `stop` turns true.
    fn spawn(self: Arc<Self>, stop: watch::Receiver<bool>, failures: Failures) -> JoinHandle<()>;
}

impl<Q: Queue> Worker for Runner<Q> {
    fn run_pending<'a>(&'a self, failures: &'a Failures) -> BoxFuture<'a, usize> {
        Box::pin(async move {
            let mut total = 0;
            loop {
                match self.round(failures).await {
                    0 => return total,
                    n => total += n,
                }
            }
        })
    }

    fn spawn(self: Arc<Self>, stop: watch::Receiver<bool>, failures: Failures) -> JoinHandle<()> {
        tokio::spawn(self.run(stop, failures))
    }
}

impl<P: Periodic> Worker for Ticker<P> {
    fn run_pending<'a>(&'a self, _failures: &'a Failures) -> BoxFuture<'a, usize> {
        Box::pin(async { 0 })
    }

    fn spawn(self: Arc<Self>, stop: watch::Receiver<bool>, failures: Failures) -> JoinHandle<()> {
        tokio::spawn(self.run(stop, failures))
    }
}

/// The background work of a server: its queue runners and periodic tasks, and where their
/// failures are recorded.
#[derive(Clone, Default)]
pub struct Queues {
    workers: Arc<Mutex<Vec<Arc<dyn Worker>>>>,
    failures: Failures,
}

impl Queues {
    /// Background work whose failures are counted into `metrics`.
    pub fn counting_into(metrics: Arc<Metrics>) -> Self {
        Self { workers: Arc::default(), failures: Failures::counting_into(metrics) }
    }

    pub fn add(&self, worker: Arc<dyn Worker>) {
        self.workers_mut().push(worker);
    }

    /// Where this server's background failures are recorded.
    pub fn failures(&self) -> &Failures {
        &self.failures
    }

    fn workers(&self) -> Vec<Arc<dyn Worker>> {
        self.workers_mut().clone()
    }

    fn workers_mut(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn Worker>>> {
        // A panic while pushing leaves the list as it was: still usable.
        self.workers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts every runner's and ticker's background loop.
    pub fn spawn_all(&self, stop: &watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
        self.workers().into_iter().map(|worker| worker.spawn(stop.clone(), self.failures.clone())).collect()
    }

    /// Runs every queue until none has work due now (work of one queue may queue work for
    /// another: an imported image needs thumbnails); answers how many rows were claimed.
    /// Work waiting for a retry later, and work on a clock, is left to its time.
    pub async fn run_pending(&self) -> usize {
        let mut total = 0;
        loop {
            let mut claimed = 0;
            for worker in self.workers() {
                claimed += worker.run_pending(&self.failures).await;
            }
            if claimed == 0 {
                return total;
            }
            total += claimed;
        }
    }
}

/// Waits for every task of a round; a task that panicked is recorded as a failure of `task`
/// (its lease runs out and the work is tried again, up to its attempts).
pub(crate) async fn finish_round(mut tasks: JoinSet<()>, task: &'static str, failures: &Failures) {
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done {
            failures.record(task, &format!("a {task} task failed"), &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A queue whose claim fails the first `failing` rounds, then claims `then` once.
    struct Flaky {
        failing: AtomicUsize,
        then: AtomicUsize,
    }

    impl Queue for Flaky {
        const NAME: &'static str = "flaky";

        async fn round(self: Arc<Self>, _failures: Failures) -> Result<usize, StoreError> {
            if self.failing.load(Ordering::SeqCst) > 0 {
                self.failing.fetch_sub(1, Ordering::SeqCst);
                return Err(StoreError::Sealing("no database".into()));
            }
            Ok(self.then.swap(0, Ordering::SeqCst))
        }

        async fn release(&self) -> Result<(), StoreError> {
            Err(StoreError::Sealing("no database".into()))
        }
    }

    /// A task on a clock that counts its turns and its last work.
    #[derive(Default)]
    struct Counting {
        turns: AtomicUsize,
        last: AtomicUsize,
    }

    impl Periodic for Counting {
        const NAME: &'static str = "counting";

        fn first_turn(&self) -> Duration {
            Duration::ZERO
        }

        async fn turn(self: Arc<Self>, _stop: watch::Receiver<bool>, failures: Failures) -> Duration {
            if self.turns.fetch_add(1, Ordering::SeqCst) == 0 {
                failures.record(Self::NAME, "the first turn fails", &"on purpose");
            }
            Duration::from_millis(1)
        }

        async fn last(self: Arc<Self>, _failures: Failures) {
            self.last.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_failed_claim_is_counted_and_the_runner_carries_on() {
        let metrics = Arc::new(Metrics::new());
        let queues = Queues::counting_into(metrics.clone());
        let flaky = Flaky { failing: AtomicUsize::new(2), then: AtomicUsize::new(3) };
        queues.add(Runner::new(flaky, Arc::new(Notify::new()), Duration::from_millis(1)));
        assert_eq!(queues.run_pending().await, 0, "the first round's claim failed");
        assert_eq!(metrics.background_failures("flaky"), 1);
        let (stop, stopped) = watch::channel(false);
        let handles = queues.spawn_all(&stopped);
        tokio::time::timeout(Duration::from_secs(10), async {
            while metrics.background_failures("flaky") < 2 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the loop's round failed too");
        stop.send(true).expect("the runner listens");
        for handle in handles {
            handle.await.expect("the runner stops");
        }
        // The second failure, then the release on stopping (which fails too).
        assert_eq!(metrics.background_failures("flaky"), 3);
    }

    #[tokio::test]
    async fn a_periodic_task_turns_on_the_same_runner_and_does_its_last_work_on_stopping() {
        let metrics = Arc::new(Metrics::new());
        let queues = Queues::counting_into(metrics.clone());
        let task = Ticker::new(Counting::default());
        queues.add(task.clone());
        assert_eq!(queues.run_pending().await, 0, "work on a clock waits for its time");
        assert_eq!(task.0.turns.load(Ordering::SeqCst), 0);
        let (stop, stopped) = watch::channel(false);
        let handles = queues.spawn_all(&stopped);
        tokio::time::timeout(Duration::from_secs(10), async {
            while task.0.turns.load(Ordering::SeqCst) < 3 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the task turns");
        stop.send(true).expect("the ticker listens");
        for handle in handles {
            handle.await.expect("the ticker stops");
        }
        assert_eq!(task.0.last.load(Ordering::SeqCst), 1);
        assert_eq!(metrics.background_failures("counting"), 1);
    }
}
