//! The use cases: every operation a partner can perform, one module per capability, each
//! a function over the [`Core`] and the [`Actor`](rehome_domain::user::Actor) it acts for.
//!
//! Every edge calls these and nothing below them: the JSON API (`http`), the dashboard,
//! bulk import and the command line. So a rule, a validation code, an event or an audit
//! entry is written once. A use case answers with a typed outcome (a per-operation error
//! enum where the edge must choose between answers), and that enum says once what each of
//! its variants is as a [`refusal::Refusal`]: the edges answer a `Refusal` one way each.
//!
//! Data flows one way: edge → use case → domain types and store; jobs read what the store
//! recorded.

pub mod accounts;
pub mod bulk;
pub mod demo;
pub mod listings;
pub mod marketplace;
pub mod options;
pub mod overview;
pub mod people;
pub mod photos;
pub mod refusal;
pub mod search;
pub mod settings;
pub mod storefront;
pub mod wallet;
pub mod warehouses;
pub mod webhooks;

use std::sync::Arc;

use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::jobs::{MailJobs, Outbox, PhotoJobs};
use crate::media::MediaStore;
use crate::metrics::Metrics;
use crate::usecases::options::OptionsCache;
use crate::usecases::people::password_pool::PasswordPool;
use rehome_domain::clock::Clock;
use rehome_store::Store;

/// What the use cases work with: the settings, the store, and the handles that wake
/// background work after a commit.
pub struct Core {
    pub config: Config,
    pub store: Store,
    /// The brand's listing options (taxonomy and brands), cached per brand.
    pub options: OptionsCache,
    /// Wakes the webhook worker after a commit that emitted events.
    pub outbox: Outbox,
    /// Where photo files live.
    pub media: Arc<dyn MediaStore>,
    /// Where buyers pay (decisions 14.4); `None`: the marketplace takes payment outside rehome.
    pub payments: Option<Arc<dyn crate::payments::Gateway>>,
    /// Wakes the thumbnail and image import workers.
    pub photo_jobs: PhotoJobs,
    /// Wakes the mail worker after a commit that queued mail (`store::enqueue_mail`).
    pub mail: MailJobs,
    /// Where passwords are hashed and verified, a few at a time.
    pub passwords: PasswordPool,
    /// The operating metrics this server counts into.
    pub metrics: Arc<Metrics>,
    /// Today's storefront visitors already counted by this node (decisions 14.2), and the
    /// storefront's anti-forgery secret.
    pub storefront: storefront::Memory,
    /// What time it is for the rules that expire (keys, idempotency keys).
    pub clock: Clock,
    /// Work a request began and did not wait for (a password reset link is made after the
    /// page answered, so the answer takes as long for an account as for none): shutdown
    /// lets it finish, and tests wait for it rather than for time.
    pub unawaited: TaskTracker,
}
