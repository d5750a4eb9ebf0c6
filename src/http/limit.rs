//! Rate limiting: N requests in any 60-second window per API key (or per client address
//! for calls without a valid key), and the `X-RateLimit-*` headers on every response.
//!
//! The in-process limiter keeps a sliding log of accepted requests per key (coalesced into
//! 10 ms slots), so the quota is exact: N requests pass, the next is refused until the
//! oldest leaves the window, and there is no double burst at a window edge. A key idle for
//! a minute holds no state.
//!
//! Several nodes on one PostgreSQL share each quota instead ([`SharedLimiter`]): the
//! database counts every node's requests, so N pass in total, not N per node.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::store::{RateTake, Store};

pub const WINDOW_NANOS: u64 = 60_000_000_000;
const WINDOW_MS: u64 = WINDOW_NANOS / 1_000_000;

/// Whose quota a request spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKey {
    Key(i64),
    Addr(IpAddr),
}

impl LimitKey {
    /// The quota's name in a shared store: `key:42`, or `addr:203.0.113.7` for calls
    /// without a valid key.
    pub fn bucket(&self) -> String {
        match self {
            Self::Key(id) => format!("key:{id}"),
            Self::Addr(addr) => format!("addr:{addr}"),
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

impl Decision {
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        static LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
        static REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
        static RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
        headers.insert(LIMIT.clone(), HeaderValue::from(self.limit));
        headers.insert(REMAINING.clone(), HeaderValue::from(self.remaining));
        headers.insert(RESET.clone(), HeaderValue::from(self.reset_at));
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Spends one request of a quota. Behind a trait because several nodes will share quotas
/// through a common store.
pub trait RateLimiter: Send + Sync {
    fn check(&self, key: LimitKey, per_minute: u32) -> BoxFuture<'_, Decision>;
}

/// Accepted requests are coalesced into slots of this length.
const SLOT_NANOS: u64 = 10_000_000;

/// The accepted requests of one key within the last window: `(time of the latest request
/// of its slot, count)`, oldest first. A slot leaves the window when its latest request
/// does, so no request leaves before its true time (the quota is never exceeded in any
/// real 60-second window) and no time is ever in the future. At most one entry per 10 ms
/// slot: a key holds at most 6,000 entries (96 KB) whatever its quota, a sparse key a few bytes.
#[derive(Debug, Default)]
pub struct Window {
    slots: VecDeque<(u64, u32)>,
    total: u32,
}

impl Window {
    /// Decides on a request at `now` (nanoseconds since the epoch) against `limit`, and
    /// records it when accepted.
    pub fn check(&mut self, now: u64, limit: u32) -> Decision {
        while let Some(&(latest, count)) = self.slots.front() {
            if latest + WINDOW_NANOS > now {
                break;
            }
            self.slots.pop_front();
            self.total -= count;
        }
        if self.slots.capacity() > 64 && self.slots.len() < self.slots.capacity() / 4 {
            self.slots.shrink_to(self.slots.len() * 2);
        }
        let allowed = self.total < limit;
        if allowed {
            match self.slots.back_mut() {
                Some((latest, count)) if *latest / SLOT_NANOS == now / SLOT_NANOS => {
                    *latest = now.max(*latest);
                    *count += 1;
                }
                _ => self.slots.push_back((now, 1)),
            }
            self.total += 1;
        }
        let newest = self.slots.back().map_or(now, |&(latest, _)| latest);
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(self.total),
            reset_at: ceil_secs(newest + WINDOW_NANOS),
            retry_after: if allowed { 0 } else { ceil_secs(self.next_free(limit) - now).max(1) },
        }
    }

    /// When enough of the oldest requests have left the window for one more to pass.
    fn next_free(&self, limit: u32) -> u64 {
        let must_leave = self.total + 1 - limit;
        let mut left = 0;
        for &(latest, count) in &self.slots {
            left += count;
            if left >= must_leave {
                return latest + WINDOW_NANOS;
            }
        }
        0
    }

    /// True when no accepted request is inside the window: the state can be dropped.
    fn is_idle(&self, now: u64) -> bool {
        self.slots.back().is_none_or(|&(latest, _)| latest + WINDOW_NANOS <= now)
    }
}

fn ceil_secs(nanos: u64) -> u64 {
    nanos.div_ceil(1_000_000_000)
}

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// The single-node limiter: windows in memory, idle ones swept out as the map grows.
#[derive(Default)]
pub struct LocalLimiter {
    windows: Mutex<Windows>,
}

#[derive(Default)]
struct Windows {
    by_key: HashMap<LimitKey, Window>,
    /// Size at which the next sweep of idle windows runs early.
    sweep_at: usize,
    /// Time of the last sweep; idle windows are dropped at least once a window.
    swept: u64,
}

const MIN_SWEEP: usize = 1024;

impl LocalLimiter {
    pub fn check_at(&self, key: LimitKey, per_minute: u32, now: u64) -> Decision {
        let mut windows = self.windows.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if windows.by_key.len() >= windows.sweep_at.max(MIN_SWEEP) || now >= windows.swept + WINDOW_NANOS {
            windows.by_key.retain(|_, w| !w.is_idle(now));
            windows.sweep_at = windows.by_key.len() * 2;
            windows.swept = now;
        }
        windows.by_key.entry(key).or_default().check(now, per_minute)
    }

    /// Number of keys holding state (for tests of eviction).
    pub fn tracked_keys(&self) -> usize {
        self.windows.lock().map(|w| w.by_key.len()).unwrap_or(0)
    }
}

impl RateLimiter for LocalLimiter {
    fn check(&self, key: LimitKey, per_minute: u32) -> BoxFuture<'_, Decision> {
        let decision = self.check_at(key, per_minute, now_nanos());
        Box::pin(std::future::ready(decision))
    }
}

/// How long a check waits for the database before the local window decides instead.
const SHARED_TIMEOUT: Duration = Duration::from_secs(2);
/// At most one warning about failing shared checks per this many milliseconds.
const WARN_EVERY_MS: u64 = 10_000;
/// How often idle buckets are swept out of the shared table.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The limiter of several nodes on one PostgreSQL: every node spends the same quota, kept
/// in the database (`rehome_rate_take`), so at most N requests pass in any window in all.
///
/// A key far from its limit (at least [`BATCH_FROM`] requests left) takes a small batch of
/// its quota per round trip, an allowance this node spends on its own for at most
/// [`ALLOWANCE_TTL`]; nearer the limit it takes one request per round trip, so the last
/// requests of a quota are shared exactly between nodes. An allowance left unspent when it
/// expires stays counted: a busy key with a huge quota may see a few requests fewer than N
/// pass in a window, never more.
///
/// When the database does not answer (an error, or nothing within [`SHARED_TIMEOUT`]) the
/// request is decided by this node's own window and a warning is logged: a database blip
/// neither fails requests nor stops limiting them (each node then admits up to N).
pub struct SharedLimiter {
    store: Store,
    fallback: LocalLimiter,
    /// Milliseconds since the epoch of the last warning, to keep an outage to a few lines.
    warned_at: AtomicU64,
    allowances: Mutex<HashMap<LimitKey, Allowance>>,
}

/// Below this many requests left in a key's quota, each request is one round trip.
pub const BATCH_FROM: i64 = 1024;
/// The most requests one round trip takes.
pub const MAX_BATCH: u32 = 64;
/// How long an allowance may be spent, from the moment it was asked for. The database
/// counts a batch from 200 ms ahead, so every request spent within this is counted for a
/// whole window after it passed.
pub const ALLOWANCE_TTL: Duration = Duration::from_millis(150);
/// Allowances kept before expired ones are dropped.
const ALLOWANCES_KEPT: usize = 4096;

/// What this node knows of a key's shared quota since its last round trip.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    /// Requests granted to this node and not spent yet.
    tokens: u32,
    /// Until when they may be spent.
    until: Instant,
    /// Left in the database at the grant (this node's unspent tokens not included).
    remaining: u32,
    reset_at: u64,
}

impl SharedLimiter {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            fallback: LocalLimiter::default(),
            warned_at: AtomicU64::new(0),
            allowances: Mutex::new(HashMap::new()),
        }
    }

    /// Spends one request of this node's allowance for `key`, if it has one; otherwise
    /// says how many to ask the database for.
    fn spend(&self, key: LimitKey, limit: u32, now: Instant) -> Result<Decision, u32> {
        let mut allowances = self.allowances.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match allowances.get_mut(&key) {
            Some(a) if a.tokens > 0 && now < a.until => {
                a.tokens -= 1;
                let remaining = a.remaining.saturating_add(a.tokens).min(limit);
                Ok(Decision { allowed: true, limit, remaining, reset_at: a.reset_at, retry_after: 0 })
            }
            Some(a) => Err(batch_size(a.remaining)),
            None => Err(1),
        }
    }

    /// Keeps what a round trip asked for at `asked` learnt; returns the allowance left.
    fn keep(&self, key: LimitKey, take: &RateTake, decision: &Decision, asked: Instant) -> u32 {
        let mut allowances = self.allowances.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if allowances.len() >= ALLOWANCES_KEPT {
            let now = Instant::now();
            allowances.retain(|_, a| now < a.until);
        }
        let until = asked + ALLOWANCE_TTL;
        let entry = allowances.entry(key).or_insert(Allowance { tokens: 0, until, remaining: 0, reset_at: 0 });
        // Tokens of a concurrent round trip that are still valid stay spendable, but never
        // beyond their own deadline: the earlier of the two bounds them all.
        let kept = if Instant::now() < entry.until { entry.tokens } else { 0 };
        let extra = u32::try_from(take.granted.saturating_sub(1).max(0)).unwrap_or(0);
        *entry = Allowance {
            tokens: kept.saturating_add(extra),
            until: match (kept > 0, extra > 0) {
                (true, true) => entry.until.min(until),
                (true, false) => entry.until,
                (false, _) => until,
            },
            remaining: decision.remaining,
            reset_at: decision.reset_at,
        };
        entry.tokens
    }

    async fn decide(&self, key: LimitKey, per_minute: u32) -> Decision {
        let asked = Instant::now();
        let want = match self.spend(key, per_minute, asked) {
            Ok(decision) => return decision,
            Err(want) => want,
        };
        let bucket = key.bucket();
        let take = self.store.take_rate(&bucket, per_minute, WINDOW_MS, want);
        let failure = match tokio::time::timeout(SHARED_TIMEOUT, take).await {
            Ok(Ok(take)) => {
                let mut decision = shared_decision(take, per_minute, now_nanos() / 1_000_000);
                let tokens = self.keep(key, &take, &decision, asked);
                decision.remaining = decision.remaining.saturating_add(tokens).min(per_minute);
                return decision;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} ms", SHARED_TIMEOUT.as_millis()),
        };
        let now = now_nanos();
        let now_ms = now / 1_000_000;
        let last = self.warned_at.load(Ordering::Relaxed);
        if now_ms >= last + WARN_EVERY_MS
            && self.warned_at.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(error = %failure, "shared rate limit unavailable: this node limits on its own");
        }
        self.fallback.check_at(key, per_minute, now)
    }
}

impl RateLimiter for SharedLimiter {
    fn check(&self, key: LimitKey, per_minute: u32) -> BoxFuture<'_, Decision> {
        Box::pin(self.decide(key, per_minute))
    }
}

/// The headers' view of what the database decided, at `now_ms` on this node's clock (the
/// database reports durations, so the clocks of nodes and database need not agree).
fn shared_decision(take: RateTake, limit: u32, now_ms: u64) -> Decision {
    let millis = |ms: i64| u64::try_from(ms).unwrap_or(0);
    let retry_after = millis(take.retry_ms).div_ceil(1000).clamp(1, WINDOW_MS / 1000);
    Decision {
        allowed: take.allowed(),
        limit,
        remaining: u32::try_from(take.remaining.clamp(0, i64::from(limit))).unwrap_or(0),
        reset_at: (now_ms + millis(take.reset_ms)).div_ceil(1000),
        retry_after: if take.allowed() { 0 } else { retry_after },
    }
}

/// How many requests to take per round trip when `remaining` were left at the last one:
/// a sixteenth of them, at most [`MAX_BATCH`], and one at a time below [`BATCH_FROM`].
fn batch_size(remaining: u32) -> u32 {
    if i64::from(remaining) < BATCH_FROM {
        1
    } else {
        (remaining / 16).clamp(1, MAX_BATCH)
    }
}

/// Drops idle buckets from the shared table once a minute until `stop` turns true (or its
/// sender is dropped). Every node runs one; a sweep is cheap and idempotent.
pub fn spawn_shared_sweeper(store: Store, mut stop: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if *stop.borrow() {
                return;
            }
            tokio::select! {
                _ = every.tick() => {
                    if let Err(e) = store.sweep_rates(WINDOW_MS).await {
                        tracing::warn!(error = %e, "cannot sweep the shared rate limits");
                    }
                }
                changed = stop.changed() => if changed.is_err() { return },
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SEC: u64 = 1_000_000_000;
    const T0: u64 = 1_800_000_000 * SEC;

    #[test]
    fn n_requests_pass_and_the_next_is_refused() {
        let mut w = Window::default();
        for i in 0..60 {
            let d = w.check(T0 + i, 60);
            assert!(d.allowed, "request {i}");
            assert_eq!(d.remaining, 59 - i as u32);
        }
        let d = w.check(T0 + 100, 60);
        assert!(!d.allowed);
        assert_eq!(d.remaining, 0);
        assert_eq!(d.retry_after, 60);
        assert_eq!(d.reset_at, ceil_secs(T0 + 59 + WINDOW_NANOS));
    }

    #[test]
    fn the_quota_returns_as_the_oldest_request_leaves_the_window() {
        let mut w = Window::default();
        for i in 0..3 {
            assert!(w.check(T0 + i * 10 * SEC, 3).allowed);
        }
        assert!(!w.check(T0 + 59 * SEC, 3).allowed);
        let d = w.check(T0 + 60 * SEC, 3);
        assert!(d.allowed, "the first request has left the window");
        assert_eq!(d.remaining, 0);
        assert!(!w.check(T0 + 61 * SEC, 3).allowed);
    }

    #[test]
    fn no_double_burst_at_a_minute_boundary() {
        let mut w = Window::default();
        // A burst at the end of one minute, then another right after the boundary.
        for _ in 0..10 {
            assert!(w.check(T0 + 59 * SEC, 10).allowed);
        }
        assert!(!w.check(T0 + 61 * SEC, 10).allowed);
    }

    #[test]
    fn retry_after_never_exceeds_the_window_even_for_a_burst_inside_one_slot() {
        let mut w = Window::default();
        for i in 0..60 {
            assert!(w.check(T0 + 1_000_000 + i * 1000, 60).allowed);
        }
        let d = w.check(T0 + 1_000_000 + 61_000, 60);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, 60);
        assert!(d.reset_at <= ceil_secs(T0 + 1_000_000 + 61_000 + WINDOW_NANOS));
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let mut w = Window::default();
        assert!(w.check(T0, 1).allowed);
        let d = w.check(T0 + WINDOW_NANOS - 1, 1);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, 1);
    }

    #[test]
    fn a_huge_quota_holds_at_most_one_entry_per_slot() {
        let mut w = Window::default();
        for i in 0..100_000u64 {
            assert!(w.check(T0 + i * 1000, u32::MAX).allowed);
        }
        // 100,000 requests over 100 ms: ten 10 ms slots.
        assert!(w.slots.len() <= 11, "{} slots", w.slots.len());
        assert_eq!(w.total, 100_000);
        // Once they have left the window the buffer shrinks back.
        assert!(w.check(T0 + 2 * WINDOW_NANOS, u32::MAX).allowed);
        assert_eq!(w.total, 1);
    }

    #[test]
    fn a_lowered_quota_refuses_until_enough_requests_have_left() {
        let mut w = Window::default();
        for i in 0..10 {
            assert!(w.check(T0 + i * SEC, 10).allowed);
        }
        let d = w.check(T0 + 10 * SEC, 5);
        assert!(!d.allowed);
        assert_eq!(d.remaining, 0);
        // Six must leave (10 + 1 - 5): the sixth was accepted at T0 + 5 s.
        assert_eq!(d.retry_after, 55);
    }

    #[test]
    fn idle_keys_are_swept_once_a_window_has_passed() {
        let limiter = LocalLimiter::default();
        limiter.check_at(LimitKey::Key(1), 60, T0);
        limiter.check_at(LimitKey::Key(2), 60, T0 + WINDOW_NANOS + SEC);
        assert_eq!(limiter.tracked_keys(), 1);
    }

    #[test]
    fn idle_keys_are_evicted_when_the_map_grows() {
        let limiter = LocalLimiter::default();
        for i in 0..MIN_SWEEP as i64 {
            limiter.check_at(LimitKey::Key(i), 60, T0);
        }
        assert_eq!(limiter.tracked_keys(), MIN_SWEEP);
        limiter.check_at(LimitKey::Key(-1), 60, T0 + WINDOW_NANOS + SEC);
        assert_eq!(limiter.tracked_keys(), 1);
    }

    #[test]
    fn keys_do_not_share_quotas() {
        let limiter = LocalLimiter::default();
        assert!(limiter.check_at(LimitKey::Key(1), 1, T0).allowed);
        assert!(!limiter.check_at(LimitKey::Key(1), 1, T0).allowed);
        assert!(limiter.check_at(LimitKey::Key(2), 1, T0).allowed);
        assert!(limiter.check_at(LimitKey::Addr([127, 0, 0, 1].into()), 1, T0).allowed);
    }

    fn take(allowed: bool, remaining: i64, reset_ms: i64, retry_ms: i64) -> RateTake {
        RateTake { granted: i64::from(allowed), remaining, reset_ms, retry_ms }
    }

    #[test]
    fn batches_only_far_from_the_limit() {
        assert_eq!(batch_size(0), 1);
        assert_eq!(batch_size(59), 1);
        assert_eq!(batch_size(1023), 1);
        assert_eq!(batch_size(1024), 64);
        assert_eq!(batch_size(u32::MAX), MAX_BATCH);
    }

    #[test]
    fn buckets_name_the_key_or_the_address() {
        assert_eq!(LimitKey::Key(42).bucket(), "key:42");
        assert_eq!(LimitKey::Addr([203, 0, 113, 7].into()).bucket(), "addr:203.0.113.7");
        assert_eq!(LimitKey::Addr("::1".parse().unwrap()).bucket(), "addr:::1");
    }

    #[test]
    fn a_shared_admission_reports_no_retry_and_the_reset_in_unix_seconds() {
        let now_ms = T0 / 1_000_000 + 250;
        let d = shared_decision(take(true, 4, 60_000, 0), 5, now_ms);
        assert_eq!(d, Decision { allowed: true, limit: 5, remaining: 4, reset_at: T0 / SEC + 61, retry_after: 0 });
    }

    #[test]
    fn a_shared_refusal_rounds_retry_up_to_whole_seconds_between_one_and_sixty() {
        let now_ms = T0 / 1_000_000;
        assert_eq!(shared_decision(take(false, 0, 59_000, 1), 5, now_ms).retry_after, 1);
        assert_eq!(shared_decision(take(false, 0, 59_000, 1_001), 5, now_ms).retry_after, 2);
        assert_eq!(shared_decision(take(false, 0, 60_100, 60_100), 5, now_ms).retry_after, 60);
        assert_eq!(shared_decision(take(false, 0, 0, 0), 5, now_ms).retry_after, 1);
        let d = shared_decision(take(false, -3, -1, 500), 5, now_ms);
        assert_eq!((d.remaining, d.reset_at), (0, T0 / SEC));
    }

    #[test]
    fn a_lowered_quota_never_reports_more_remaining_than_the_limit() {
        assert_eq!(shared_decision(take(true, 50, 1_000, 0), 5, T0 / 1_000_000).remaining, 5);
    }

    #[tokio::test]
    async fn without_the_shared_store_a_node_still_limits_on_its_own() {
        // A SQLite store has no shared quotas: every check fails over to the local window.
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}", dir.path().join("r.db").display()), None).await.unwrap();
        let limiter = SharedLimiter::new(store.clone());
        assert!(limiter.check(LimitKey::Key(1), 2).await.allowed);
        assert!(limiter.check(LimitKey::Key(1), 2).await.allowed);
        let refused = limiter.check(LimitKey::Key(1), 2).await;
        assert!(!refused.allowed);
        assert!((1..=60).contains(&refused.retry_after));
        store.close().await;
    }

    proptest! {
        /// However requests arrive, no 60-second window ever holds more than N accepted ones.
        #[test]
        fn never_more_than_n_in_any_window(limit in 1u32..20, gaps in proptest::collection::vec(0u64..5 * SEC, 1..300)) {
            let mut w = Window::default();
            let mut now = T0;
            let mut accepted = Vec::new();
            for gap in gaps {
                now += gap;
                let d = w.check(now, limit);
                if d.allowed {
                    accepted.push(now);
                } else {
                    prop_assert!(d.retry_after >= 1);
                }
                prop_assert!(d.remaining <= limit);
            }
            for (i, &t) in accepted.iter().enumerate() {
                let in_window = accepted[i..].iter().take_while(|&&u| u < t + WINDOW_NANOS).count();
                prop_assert!(in_window <= limit as usize);
            }
        }
    }
}
