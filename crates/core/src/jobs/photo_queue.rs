//! The handle that wakes the thumbnail and image import workers.

use std::sync::Arc;

use tokio::sync::Notify;

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
