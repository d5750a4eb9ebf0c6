//! The server's state: what every handler of the API and the dashboard reaches (the use
//! cases' core, and what only the HTTP edge needs). A leaf of the edge: the API and the
//! dashboard name it, it names neither.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::domain::clock::Clock;
use crate::http::body::large::LargeBodies;
use crate::http::body::memory::BodyMemory;
use crate::idempotency::IdempotencyLog;
use crate::jobs::{MailJobs, Outbox, PhotoJobs, Queues};
use crate::limit::Limiter;
use crate::media::pool::DecodePool;
use crate::media::MediaStore;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::usecases::options::OptionsCache;
use crate::usecases::people::callers::KeyCache;
use crate::usecases::people::password_pool::PasswordPool;
use crate::usecases::Core;

/// How long an upload waits for its decode to have room before it is answered 503.
const UPLOAD_DECODE_WAIT: Duration = Duration::from_secs(10);

/// What every handler can reach: the use cases' core, and what only the HTTP edge needs
/// (key verification and the rate limiter).
pub struct Shared {
    pub core: Core,
    pub keys: KeyCache,
    pub limiter: Limiter,
    /// Writes the `Idempotency-Key` claims and answers of concurrent requests together.
    pub idempotency: IdempotencyLog,
    /// The places of request bodies over 1 MiB being read and parsed.
    pub large_bodies: LargeBodies,
    pub body_memory: BodyMemory,
    /// The image decodes in flight, with their memory budget (uploads and the photo jobs).
    pub decodes: DecodePool,
    /// The background work, started with the server: the runners of the leased queues
    /// (thumbnails, image imports, mail, payment holds) and the periodic tasks; their
    /// failures are counted into the metrics. [`Queues::run_pending`] runs queued work
    /// due now.
    pub queues: Queues,
}

impl Deref for Shared {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    pub fn new(
        config: Config,
        store: Store,
        media: Arc<dyn MediaStore>,
        payments: Option<Arc<dyn crate::payments::Gateway>>,
    ) -> Self {
        let clock = Clock::default();
        let keys = KeyCache::new(store.clone(), Duration::from_millis(config.key_cache_ms), clock.clone());
        // Nodes sharing a PostgreSQL database share every quota through it.
        let limiter = Limiter::for_store(&store);
        let idempotency = IdempotencyLog::new(store.clone());
        let passwords = PasswordPool::new(config.password_workers);
        let large_bodies = LargeBodies::new(config.large_bodies);
        let megabytes = |mb: u64| mb.saturating_mul(1024 * 1024);
        let body_memory = BodyMemory::new(
            megabytes(config.body_memory_mb),
            megabytes(config.body_memory_per_network_mb),
            megabytes(config.body_memory_per_key_mb),
        );
        let decodes = DecodePool::new(
            config.image_decodes(),
            config.image_decode_memory_mb.saturating_mul(1024 * 1024),
            UPLOAD_DECODE_WAIT,
        );
        let core = Core {
            config,
            store,
            options: OptionsCache::new(Duration::from_secs(5)),
            outbox: Outbox::default(),
            media,
            payments,
            photo_jobs: PhotoJobs::default(),
            mail: MailJobs::default(),
            passwords,
            metrics: Arc::new(Metrics::new()),
            storefront: Default::default(),
            clock,
            unawaited: TaskTracker::new(),
        };
        let queues = Queues::counting_into(core.metrics.clone());
        Self(Arc::new(Shared { core, keys, limiter, idempotency, large_bodies, body_memory, decodes, queues }))
    }
}
