//! Upkeep on a clock, on every node (each is safe beside the same on another node): the
//! folds of the listing counts, and the shared rate limiter's give-backs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::queue::{Failures, Periodic, Ticker};
use crate::limit::{SharedLimiter, GIVE_BACK_EVERY};
use rehome_store::{Store, StoreError};

/// Folds the brands' listing count rows and the storefront's facet counts every few
/// seconds, so that a list page's total sums one or a few rows.
pub struct CountFolds(Store);

/// Count rows folded per statement.
const FOLD_BATCH: i64 = 100;

impl CountFolds {
    pub fn ticker(store: Store) -> Arc<Ticker<Self>> {
        Ticker::new(Self(store))
    }

    /// One batch of each kind; answers the larger number of rows folded.
    async fn fold(&self) -> Result<i64, StoreError> {
        let listings = self.0.fold_listing_counts(FOLD_BATCH).await?;
        let market = self.0.fold_market_counts(FOLD_BATCH).await?;
        Ok(listings.max(market) as i64)
    }
}

impl Periodic for CountFolds {
    const NAME: &'static str = "listing_counts";

    fn first_turn(&self) -> Duration {
        Duration::from_secs(5)
    }

    /// Folds batches while they come back whole.
    async fn turn(self: Arc<Self>, _stop: watch::Receiver<bool>, failures: Failures) -> Duration {
        loop {
            match self.fold().await {
                Ok(n) if n == FOLD_BATCH => continue,
                Ok(_) => break,
                Err(e) => {
                    failures.record(Self::NAME, "cannot fold listing counts", &e);
                    break;
                }
            }
        }
        self.first_turn()
    }
}

/// Gives the shared rate limiter's unspent allowances back to the database as they expire,
/// and, when the server stops, everything this node still holds. (Idle buckets' slots are
/// deleted by the retention job.)
pub struct LimiterUpkeep(Arc<SharedLimiter>);

impl LimiterUpkeep {
    pub fn ticker(limiter: Arc<SharedLimiter>) -> Arc<Ticker<Self>> {
        Ticker::new(Self(limiter))
    }
}

impl Periodic for LimiterUpkeep {
    const NAME: &'static str = "rate_limits";

    fn first_turn(&self) -> Duration {
        GIVE_BACK_EVERY
    }

    /// A give-back that fails is the limiter's to say (it warns that it limits on its own,
    /// at most once a period) and leaves those requests counted: a few fewer may pass.
    async fn turn(self: Arc<Self>, _stop: watch::Receiver<bool>, _failures: Failures) -> Duration {
        self.0.give_back(Instant::now(), false).await;
        GIVE_BACK_EVERY
    }

    /// Taken out under the lock, these can no longer be spent by requests still finishing
    /// on this node.
    async fn last(self: Arc<Self>, _failures: Failures) {
        self.0.give_back(Instant::now(), true).await;
    }
}
