//! One way to run the background work kept in a leased table (`store::queue`): thumbnails,
//! image imports and mail. A [`Queue`] says how one round goes (claim a batch, work it,
//! record each outcome); a [`Runner`] runs rounds until the server stops, waking when the
//! work is queued ([`Notify`]) and at least every poll interval, and releases the leases
//! still held when it stops. [`Queues`] holds every runner of a server, so that a test (or
//! an operator's command) can run whatever is due now ([`Queues::run_pending`]) instead of
//! waiting for a poll.
//!
//! The webhook deliverer keeps a loop of its own (deliveries stream in and out of a bounded
//! set per endpoint, rather than in rounds) over the same leases and retry schedules.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use rehome_store::StoreError;

/// One kind of leased work.
pub trait Queue: Send + Sync + 'static {
    /// Names the work in logs.
    const NAME: &'static str;

    /// Claims a batch, works it and records each outcome; answers how many it claimed.
    fn round(self: Arc<Self>) -> impl Future<Output = usize> + Send;

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

    async fn round(&self) -> usize {
        let _turn = self.turn.lock().await;
        self.queue.clone().round().await
    }

    /// Runs rounds until `stop` turns true or its sender is dropped. After a round that
    /// found work it looks again at once; otherwise it sleeps until woken or the poll
    /// interval passes. A round in flight is finished before the loop returns, so outcomes
    /// are recorded, not left to lease expiry; then the leases still held are released.
    async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            if *stop.borrow() {
                break;
            }
            if self.round().await > 0 {
                continue;
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(self.poll) => {}
                changed = stop.changed() => if changed.is_err() { break },
            }
        }
        if let Err(e) = self.queue.release().await {
            tracing::warn!(error = %e, "cannot release {} leases; they expire on their own", Q::NAME);
        }
    }
}

/// A runner whatever its queue.
pub trait Worker: Send + Sync {
    /// Runs rounds until one claims nothing; answers how many were claimed in all.
    fn run_pending(&self) -> BoxFuture<'_, usize>;

    /// Starts the background loop; it ends when `stop` turns true.
    fn spawn(self: Arc<Self>, stop: watch::Receiver<bool>) -> JoinHandle<()>;
}

impl<Q: Queue> Worker for Runner<Q> {
    fn run_pending(&self) -> BoxFuture<'_, usize> {
        Box::pin(async move {
            let mut total = 0;
            loop {
                match self.round().await {
                    0 => return total,
                    n => total += n,
                }
            }
        })
    }

    fn spawn(self: Arc<Self>, stop: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(self.run(stop))
    }
}

/// The queue runners of a server.
#[derive(Clone, Default)]
pub struct Queues(Arc<Mutex<Vec<Arc<dyn Worker>>>>);

impl Queues {
    pub fn add(&self, worker: Arc<dyn Worker>) {
        self.workers_mut().push(worker);
    }

    fn workers(&self) -> Vec<Arc<dyn Worker>> {
        self.workers_mut().clone()
    }

    fn workers_mut(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn Worker>>> {
        // A panic while pushing leaves the list as it was: still usable.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts every runner's background loop.
    pub fn spawn_all(&self, stop: &watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
        self.workers().into_iter().map(|worker| worker.spawn(stop.clone())).collect()
    }

    /// Runs every queue until none has work due now (work of one queue may queue work for
    /// another: an imported image needs thumbnails); answers how many rows were claimed.
    /// Work waiting for a retry later is left to its time.
    pub async fn run_pending(&self) -> usize {
        let mut total = 0;
        loop {
            let mut claimed = 0;
            for worker in self.workers() {
                claimed += worker.run_pending().await;
            }
            if claimed == 0 {
                return total;
            }
            total += claimed;
        }
    }
}

/// Waits for every task of a round; a task that panicked is logged (its lease runs out and
/// the work is tried again, up to its attempts).
pub(crate) async fn finish_round(mut tasks: JoinSet<()>, what: &str) {
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done {
            tracing::error!(error = %e, "{what} task failed");
        }
    }
}
