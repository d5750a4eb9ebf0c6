//! Rate limiting: N requests in any 60-second window per API key (or per client address
//! for calls without a valid key).
//!
//! The in-process limiter ([`LocalLimiter`]) keeps a sliding log of accepted requests per
//! key (coalesced into 10 ms slots, see [`Window`]), so the quota is exact: N requests
//! pass, the next is refused until the oldest leaves the window, and there is no double
//! burst at a window edge. A key idle for a minute holds no state.
//!
//! Several nodes on one PostgreSQL share each quota instead ([`SharedLimiter`]): the
//! database counts every node's requests, so N pass in total, not N per node.
//!
//! The HTTP edge applies a [`Decision`] and writes its headers; nothing here knows HTTP.

mod local;
mod shared;
mod window;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rehome_store::Store;

pub use local::LocalLimiter;
pub use shared::{SharedLimiter, ALLOWANCE_TTL, BATCH_FROM, GIVE_BACK_EVERY, MAX_BATCH};
pub use window::Window;

pub const WINDOW_NANOS: u64 = 60_000_000_000;
const WINDOW_MS: u64 = WINDOW_NANOS / 1_000_000;

/// Whose quota a request spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKey {
    Key(i64),
    Addr(IpAddr),
    /// A storefront visitor's address: a quota apart from the API's (decisions 14.7).
    Shopper(IpAddr),
}

impl LimitKey {
    /// The quota's name in a shared store: `key:42`, or `addr:203.0.113.7` for calls
    /// without a valid key.
    pub fn bucket(&self) -> String {
        match self {
            Self::Key(id) => format!("key:{id}"),
            Self::Addr(addr) => format!("addr:{addr}"),
            Self::Shopper(addr) => format!("shop:{addr}"),
        }
    }
}

/// The outcome of one check, with what the headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds at which the whole quota is available again.
    pub reset_at: u64,
    /// Whole seconds until one more request would pass (at least 1); 0 when allowed.
    pub retry_after: u64,
}

/// The limiter of this node, chosen once at start from the store.
pub enum Limiter {
    /// A single node: quotas counted in memory.
    Local(LocalLimiter),
    /// Nodes sharing a PostgreSQL database share every quota through it. Behind an `Arc`
    /// because its upkeep runs as a task of its own.
    Shared(Arc<SharedLimiter>),
}

impl Limiter {
    /// The shared limiter on PostgreSQL (several nodes may share it), else the local one.
    pub fn for_store(store: &Store) -> Self {
        match store.postgres() {
            Some(pg) => Self::Shared(Arc::new(SharedLimiter::new(pg))),
            None => Self::Local(LocalLimiter::default()),
        }
    }

    /// Spends one request of `key`'s quota of `per_minute`, if it has one left.
    pub async fn check(&self, key: LimitKey, per_minute: u32) -> Decision {
        match self {
            Self::Local(local) => local.check(key, per_minute),
            Self::Shared(shared) => shared.check(key, per_minute).await,
        }
    }

    /// The limiter shared through PostgreSQL, whose unspent allowances a node gives back
    /// as they expire (`jobs::upkeep::LimiterUpkeep`); an in-memory limiter has no upkeep.
    pub fn shared(&self) -> Option<&Arc<SharedLimiter>> {
        match self {
            Self::Local(_) => None,
            Self::Shared(shared) => Some(shared),
        }
    }
}

fn ceil_secs(nanos: u64) -> u64 {
    nanos.div_ceil(1_000_000_000)
}

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

#[cfg(test)]
const SEC: u64 = 1_000_000_000;
#[cfg(test)]
const T0: u64 = 1_800_000_000 * SEC;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_name_the_key_or_the_address() {
        assert_eq!(LimitKey::Key(42).bucket(), "key:42");
        assert_eq!(LimitKey::Addr([203, 0, 113, 7].into()).bucket(), "addr:203.0.113.7");
        assert_eq!(LimitKey::Addr("::1".parse().unwrap()).bucket(), "addr:::1");
    }

    #[tokio::test]
    async fn a_sqlite_store_limits_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}", dir.path().join("r.db").display()), None).await.unwrap();
        let limiter = Limiter::for_store(&store);
        assert!(matches!(limiter, Limiter::Local(_)));
        assert!(limiter.check(LimitKey::Key(1), 1).await.allowed);
        assert!(!limiter.check(LimitKey::Key(1), 1).await.allowed);
        assert!(limiter.shared().is_none(), "nothing to keep up");
        store.close().await;
    }
}
