//! What the thumbnail and image import workers share: the handle that wakes them, the
//! loop that runs a queue until the server stops, and the way a round's tasks are awaited.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use crate::store::Store;

/// Wakes the photo workers after a commit that queued work for them; without a wake-up
/// the work is still found at the next poll.
#[derive(Debug, Clone, Default)]
pub struct PhotoJobs {
    pub(crate) thumbnails: Arc<Notify>,
    pub(crate) imports: Arc<Notify>,
}

impl PhotoJobs {
    /// A photo was stored: make its thumbnails.
    pub fn wake_thumbnails(&self) {
        self.thumbnails.notify_one();
    }

    /// A listing named image URLs: import them.
    pub fn wake_imports(&self) {
        self.imports.notify_one();
    }
}

/// Runs `round` (claim a batch, work it, record it; returns how many it claimed) until
/// `stop` turns true or its sender is dropped. After a round that found work it looks again
/// at once; otherwise it sleeps until woken or the poll interval passes. A round in flight
/// is finished before the loop returns, so outcomes are recorded, not left to lease expiry.
pub(crate) async fn run_queue<F, Fut>(wake: Arc<Notify>, poll: Duration, mut stop: watch::Receiver<bool>, mut round: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = usize>,
{
    loop {
        if *stop.borrow() {
            return;
        }
        if round().await > 0 {
            continue;
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(poll) => {}
            changed = stop.changed() => if changed.is_err() { return },
        }
    }
}

/// Spawns [`run_queue`] for a worker whose leases are held as `owner`; once the loop ends,
/// the leases still held are released so another node or the next start takes the work at
/// once. `what` names the work in logs.
pub(crate) fn spawn_queue<F, Fut>(
    store: Store,
    owner: String,
    wake: Arc<Notify>,
    poll: Duration,
    stop: watch::Receiver<bool>,
    what: &'static str,
    round: F,
) -> JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = usize> + Send,
{
    tokio::spawn(async move {
        run_queue(wake, poll, stop, round).await;
        if let Err(e) = store.release_photo_leases(&owner).await {
            tracing::warn!(error = %e, "cannot release {what} leases; they expire on their own");
        }
    })
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
