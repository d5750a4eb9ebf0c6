//! The thumbnail worker: claims photos whose `medium` and `large` sizes are not made yet,
//! decodes each under the limits of [`crate::media::thumbnail`] on the blocking pool, and
//! stores both sizes. A photo that cannot be decoded is failed for good (its sizes stay
//! empty) and the reason logged; a storage error is retried.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::{TimeDelta, Utc};
use tokio::task::JoinSet;

use super::photo_queue::PhotoJobs;
use super::queue::{finish_round, Failures, Queue, Runner};
use super::retry::{random_unit, Attempts, Backoff};
use crate::media::pool::{self, DecodePool};
use crate::media::{thumbnail, ImageKind, MediaName, MediaStore, Rendition};
use rehome_store::{ClaimedThumbnail, Store, StoreError, THUMBNAIL_ATTEMPTS};

/// Photos decoded at once: decoding is CPU-bound, and requests need the cores too.
const CONCURRENCY: i64 = 2;
/// Longer than any decode; a crashed worker's photos are retaken after it.
const LEASE: TimeDelta = TimeDelta::minutes(5);
/// A storage error is retried after 10 s, then 20 s (jittered), up to the attempts.
const RETRIES: Attempts =
    Attempts { backoff: Backoff::doubling(Duration::from_secs(10)), attempts: THUMBNAIL_ATTEMPTS as u32 };
/// How long a photo waits for room among the image decodes before the attempt is retried
/// later: well within the lease.
const DECODE_WAIT: Duration = Duration::from_secs(120);

pub struct ThumbnailWorker {
    store: Store,
    media: Arc<dyn MediaStore>,
    jobs: PhotoJobs,
    poll: Duration,
    owner: String,
    decodes: DecodePool,
}

/// How one photo's attempt ended.
enum Outcome {
    Done {
        medium: MediaName,
        large: MediaName,
    },
    /// The photo cannot be decoded: never retried.
    Undecodable(String),
    /// Storage failed: retried while attempts remain.
    Failed(String),
}

impl ThumbnailWorker {
    pub fn new(store: Store, media: Arc<dyn MediaStore>, jobs: PhotoJobs, poll: Duration, decodes: DecodePool) -> Self {
        let owner = format!("thumbnails-{}", uuid::Uuid::new_v4().simple());
        Self { store, media, jobs, poll, owner, decodes }
    }

    /// The runner of this worker, woken by [`PhotoJobs::wake_thumbnails`].
    pub fn runner(self) -> Arc<Runner<Self>> {
        let (wake, poll) = (self.jobs.thumbnails.clone(), self.poll);
        Runner::new(self, wake, poll)
    }
}

impl Queue for ThumbnailWorker {
    const NAME: &'static str = "thumbnails";

    /// Claims a batch, works it, records it; returns how many were claimed.
    async fn round(self: Arc<Self>, failures: Failures) -> Result<usize, StoreError> {
        let now = Utc::now();
        let claimed = self.store.claim_thumbnails(&self.owner, now, now + LEASE, CONCURRENCY).await?;
        let count = claimed.len();
        let mut tasks = JoinSet::new();
        for photo in claimed {
            let (worker, failures) = (self.clone(), failures.clone());
            tasks.spawn(async move {
                let outcome = worker.attempt(&photo).await;
                worker.record(&photo, outcome, &failures).await;
            });
        }
        finish_round(tasks, Self::NAME, &failures).await;
        Ok(count)
    }

    async fn release(&self) -> Result<(), StoreError> {
        self.store.release_photo_leases(&self.owner).await
    }
}

impl ThumbnailWorker {
    async fn attempt(&self, photo: &ClaimedThumbnail) -> Outcome {
        let Some(name) = MediaName::parse(&photo.name) else {
            return Outcome::Undecodable(format!("stored name {:?} is not a media name", photo.name));
        };
        let Some(kind) = photo.name.rsplit('.').next().and_then(ImageKind::from_extension) else {
            return Outcome::Undecodable("unknown image type".to_owned());
        };
        let original = match self.media.get(&name).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Outcome::Undecodable("the original is missing from the media store".to_owned()),
            Err(e) => return Outcome::Failed(format!("cannot read the original: {e}")),
        };
        // An image whose header does not parse fails in `make` without a decode.
        let _decoding = match pool::thumbnail_cost(&original) {
            Some(cost) => match self.decodes.admit_within(cost, DECODE_WAIT).await {
                Ok(permit) => Some(permit),
                Err(busy) => return Outcome::Failed(busy.to_string()),
            },
            None => None,
        };
        let made = tokio::task::spawn_blocking(move || thumbnail::make(&original, kind)).await;
        let thumbs = match made {
            Ok(Ok(thumbs)) => thumbs,
            Ok(Err(reason)) => return Outcome::Undecodable(reason),
            Err(e) => return Outcome::Undecodable(format!("thumbnail task failed: {e}")),
        };
        let medium = name.rendition(Rendition::Medium, thumbs.medium.extension);
        let large = name.rendition(Rendition::Large, thumbs.large.extension);
        for (target, encoded) in [(&medium, thumbs.medium.bytes), (&large, thumbs.large.bytes)] {
            if let Err(e) = self.media.put(target, Bytes::from(encoded)).await {
                return Outcome::Failed(format!("cannot store a thumbnail: {e}"));
            }
        }
        Outcome::Done { medium, large }
    }

    async fn record(&self, photo: &ClaimedThumbnail, outcome: Outcome, failures: &Failures) {
        let recorded = match outcome {
            Outcome::Done { medium, large } => {
                self.store.finish_thumbnails(&self.owner, photo.id, medium.as_str(), large.as_str()).await
            }
            Outcome::Undecodable(reason) => {
                tracing::warn!(photo_id = photo.id, reason = %reason, "photo cannot be decoded; it keeps empty sizes");
                self.store.fail_thumbnails(&self.owner, photo.id, &reason, None).await
            }
            Outcome::Failed(reason) => {
                let retry_at = RETRIES.next_attempt(photo.attempts, Utc::now(), random_unit());
                tracing::warn!(photo_id = photo.id, reason = %reason, retry = retry_at.is_some(), "thumbnail attempt failed");
                self.store.fail_thumbnails(&self.owner, photo.id, &reason, retry_at).await
            }
        };
        if let Err(e) = recorded {
            let what = format!("cannot record the thumbnails of photo {}; the lease will expire", photo.id);
            failures.record(Self::NAME, &what, &e);
        }
    }
}
