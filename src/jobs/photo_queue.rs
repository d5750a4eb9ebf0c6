//! What the thumbnail and image import workers share: the handle that wakes them, and the
//! loop that runs a queue until the server stops.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

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
