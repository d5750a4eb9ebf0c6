//! The places of large bodies, which the server's state holds (a leaf: it names nothing
//! of the state that holds it).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a large body waits for a place before it is answered 503.
pub const LARGE_BODY_WAIT: Duration = Duration::from_secs(5);

/// The places of large bodies: how many may be read and parsed at once.
#[derive(Debug, Clone)]
pub struct LargeBodies(Arc<Semaphore>);

impl LargeBodies {
    pub fn new(at_once: usize) -> Self {
        Self(Arc::new(Semaphore::new(at_once.max(1))))
    }

    /// Places free at this moment (for tests and metrics).
    pub fn free(&self) -> usize {
        self.0.available_permits()
    }

    /// A place, or `None` when none frees up within [`LARGE_BODY_WAIT`].
    pub(super) async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        tokio::time::timeout(LARGE_BODY_WAIT, self.0.clone().acquire_owned()).await.ok()?.ok()
    }
}
