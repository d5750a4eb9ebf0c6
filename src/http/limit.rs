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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::{watch, Notify};
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

    /// Starts the limiter's background work, if it has any, until `stop` turns true.
    fn spawn_upkeep(self: Arc<Self>, _stop: watch::Receiver<bool>) -> Option<JoinHandle<()>> {
        None
    }
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
/// How often expired allowances are given back to the database.
const GIVE_BACK_EVERY: Duration = Duration::from_millis(50);
/// How long a key's allowance record outlives its last use.
const FORGET_AFTER: Duration = Duration::from_secs(1);

/// The limiter of several nodes on one PostgreSQL: every node spends the same quota, kept
/// in the database (`rehome_rate_take`), so at most N requests pass in any window in all.
///
/// A key far from its limit (at least [`BATCH_FROM`] requests left) takes a small batch of
/// its quota per round trip, an allowance this node spends on its own for at most
/// [`ALLOWANCE_TTL`]: one batch asked for at a time per key, the next one ahead when half
/// a batch is left, and requests that find no tokens meanwhile wait for the batch on its
/// way. Nearer the limit each request is one round trip, so the last
/// requests of a quota are shared exactly between nodes. What an allowance could not spend
/// in time is given back to the database within 50 ms of its expiry (by
/// [`RateLimiter::spawn_upkeep`]), so exactly N pass when the key keeps asking.
///
/// When the database does not answer (an error, or nothing within 2 s) the
/// request is decided by this node's own window and a warning is logged: a database blip
/// neither fails requests nor stops limiting them (each node then admits up to N).
pub struct SharedLimiter {
    store: Store,
    fallback: LocalLimiter,
    /// Milliseconds since the epoch of the last warning, to keep an outage to a few lines.
    warned_at: AtomicU64,
    allowances: Mutex<Allowances>,
}

/// Below this many requests left in a key's quota, each request is one round trip.
pub const BATCH_FROM: i64 = 1024;
/// The most requests one round trip takes.
pub const MAX_BATCH: u32 = 256;
/// How long an allowance may be spent, from the moment it was asked for. The database
/// counts a batch from 200 ms ahead, so every request spent within this is counted for a
/// whole window after it passed.
pub const ALLOWANCE_TTL: Duration = Duration::from_millis(150);

#[derive(Default)]
struct Allowances {
    by_key: HashMap<LimitKey, Allowance>,
    /// Unspent requests taken out of allowances, to be given back to the database.
    unspent: Vec<(LimitKey, Unspent)>,
}

/// What this node knows of a key's shared quota since its last round trip. Kept only for
/// keys far enough from their limit to take batches.
#[derive(Debug)]
struct Allowance {
    /// Requests granted to this node and not spent yet.
    tokens: u32,
    /// Until when they may be spent.
    until: Instant,
    /// The database slot they were counted in.
    at_slot: i64,
    /// Left in the database at the last round trip (this node's unspent tokens not included).
    remaining: u32,
    reset_at: u64,
    /// A batch is being asked for; requests finding no tokens meanwhile wait for it.
    batching: bool,
    /// Wakes the requests waiting for the batch being asked for.
    arrived: Arc<Notify>,
    /// The last round trip for the key.
    seen: Instant,
}

/// What `spend` tells a request to do.
enum Next {
    /// Allowed from this node's allowance; when the second field is not 0, the request
    /// also asks the database for the next batch, of that size.
    Spent(Decision, u32),
    /// A batch is on its way: wait for it, then try again.
    Wait(Arc<Notify>),
    /// Ask the database for this many.
    Ask(u32),
}

/// Requests counted in a database slot and never spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unspent {
    at_slot: i64,
    count: u32,
}

impl Allowance {
    /// Takes the tokens out, if any: they are given back instead of spent.
    fn take_unspent(&mut self) -> Option<Unspent> {
        let count = std::mem::take(&mut self.tokens);
        (count > 0).then_some(Unspent { at_slot: self.at_slot, count })
    }
}

impl Allowances {
    /// Moves the tokens of allowances expired at `now` (all of them with `all`) to the
    /// unspent list, forgets records idle for [`FORGET_AFTER`], and returns the list.
    fn collect_unspent(&mut self, now: Instant, all: bool) -> Vec<(LimitKey, Unspent)> {
        let mut unspent = std::mem::take(&mut self.unspent);
        self.by_key.retain(|&key, a| {
            if all || now >= a.until {
                unspent.extend(a.take_unspent().map(|u| (key, u)));
            }
            a.batching || a.tokens > 0 || now < a.seen + FORGET_AFTER
        });
        unspent
    }
}

impl SharedLimiter {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            fallback: LocalLimiter::default(),
            warned_at: AtomicU64::new(0),
            allowances: Mutex::new(Allowances::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Allowances> {
        self.allowances.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Spends one request of this node's allowance for `key`, if it has one; otherwise
    /// says whether to wait for a batch on its way (only if `may_wait`) or how many to ask
    /// the database for. Marks a batch as asked for when it says to ask for one, including
    /// the next batch asked for ahead when a spend leaves half a batch or less.
    fn spend(&self, key: LimitKey, limit: u32, now: Instant, may_wait: bool) -> Next {
        let mut allowances = self.lock();
        let Allowances { by_key, unspent } = &mut *allowances;
        let Some(a) = by_key.get_mut(&key) else {
            return Next::Ask(1);
        };
        if a.tokens > 0 && now < a.until {
            a.tokens -= 1;
            let remaining = a.remaining.saturating_add(a.tokens).min(limit);
            let decision = Decision { allowed: true, limit, remaining, reset_at: a.reset_at, retry_after: 0 };
            let batch = batch_size(a.remaining);
            let refill = if a.tokens <= batch / 2 && !a.batching { batch } else { 1 };
            a.batching |= refill > 1;
            return Next::Spent(decision, if refill > 1 { refill } else { 0 });
        }
        unspent.extend(a.take_unspent().map(|u| (key, u)));
        if a.batching {
            return if may_wait { Next::Wait(a.arrived.clone()) } else { Next::Ask(1) };
        }
        let want = batch_size(a.remaining);
        a.batching = want > 1;
        Next::Ask(want)
    }

    /// Keeps what a round trip asked for at `asked` learnt, adding `tokens` to the
    /// allowance; returns the allowance left.
    fn keep(&self, key: LimitKey, take: &RateTake, decision: &Decision, asked: Instant, tokens: u32) -> u32 {
        let now = Instant::now();
        let mut allowances = self.lock();
        let Allowances { by_key, unspent } = &mut *allowances;
        if tokens == 0 && batch_size(decision.remaining) == 1 && !by_key.contains_key(&key) {
            return 0;
        }
        let a = by_key.entry(key).or_insert_with(|| Allowance {
            tokens: 0,
            until: now,
            at_slot: 0,
            remaining: 0,
            reset_at: 0,
            batching: false,
            arrived: Arc::default(),
            seen: now,
        });
        a.remaining = decision.remaining;
        a.reset_at = decision.reset_at;
        a.seen = now;
        if tokens > 0 {
            // A new batch replaces what is left of the last one, which goes back: each
            // allowance has one deadline and one slot.
            unspent.extend(a.take_unspent().map(|u| (key, u)));
            a.tokens = tokens;
            a.until = asked + ALLOWANCE_TTL;
            a.at_slot = take.at_slot;
        }
        if now < a.until {
            a.tokens
        } else {
            0
        }
    }

    /// Clears the mark of a batch being asked for, once the answer is kept or lost, and
    /// wakes the requests waiting for it.
    fn batch_done(&self, key: LimitKey) {
        if let Some(a) = self.lock().by_key.get_mut(&key) {
            a.batching = false;
            a.arrived.notify_waiters();
        }
    }

    /// True while a batch of `key` is being asked for.
    fn batching(&self, key: LimitKey) -> bool {
        self.lock().by_key.get(&key).is_some_and(|a| a.batching)
    }

    async fn decide(&self, key: LimitKey, per_minute: u32) -> Decision {
        let mut may_wait = true;
        let want = loop {
            let asked = Instant::now();
            match self.spend(key, per_minute, asked, may_wait) {
                Next::Spent(decision, 0) => return decision,
                Next::Spent(decision, refill) => {
                    // Allowed already; this request also asks for the next batch, so that
                    // the others keep spending without waiting for it.
                    let _mark = BatchMark { limiter: self, key };
                    if let Err(failure) = self.take(key, per_minute, refill, asked, false).await {
                        self.warn(now_nanos() / 1_000_000, &failure);
                    }
                    return decision;
                }
                Next::Wait(arrived) => {
                    // Registered before the check, so the wake-up cannot be missed.
                    let arrival = arrived.notified();
                    tokio::pin!(arrival);
                    arrival.as_mut().enable();
                    if self.batching(key) && tokio::time::timeout(SHARED_TIMEOUT, arrival).await.is_err() {
                        // The database has not answered the batch in time: decide here
                        // rather than wait for it again with a round trip of its own.
                        return self.fall_back(key, per_minute, "no batch within the time limit");
                    }
                    may_wait = false;
                }
                Next::Ask(want) => break (want, asked),
            }
        };
        let (want, asked) = want;
        // Clears the batch mark however this ends, including when the request is dropped.
        let _mark = (want > 1).then(|| BatchMark { limiter: self, key });
        match self.take(key, per_minute, want, asked, true).await {
            Ok(decision) => decision,
            Err(failure) => self.fall_back(key, per_minute, &failure),
        }
    }

    /// Decides with this node's own window when the database did not answer (logged).
    fn fall_back(&self, key: LimitKey, per_minute: u32, failure: &str) -> Decision {
        let now = now_nanos();
        self.warn(now / 1_000_000, failure);
        self.fallback.check_at(key, per_minute, now)
    }

    /// One round trip taking up to `want` requests of `key`'s quota, asked for at `asked`:
    /// one of them for this request when `for_me`, the rest kept as this node's allowance.
    async fn take(
        &self,
        key: LimitKey,
        limit: u32,
        want: u32,
        asked: Instant,
        for_me: bool,
    ) -> Result<Decision, String> {
        let bucket = key.bucket();
        let take = self.store.take_rate(&bucket, limit, WINDOW_MS, want);
        match tokio::time::timeout(SHARED_TIMEOUT, take).await {
            Ok(Ok(take)) => {
                let mut decision = shared_decision(take, limit, now_nanos() / 1_000_000);
                let kept = u32::try_from(take.granted.saturating_sub(i64::from(for_me))).unwrap_or(0);
                let tokens = self.keep(key, &take, &decision, asked, kept);
                decision.remaining = decision.remaining.saturating_add(tokens).min(limit);
                Ok(decision)
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} ms", SHARED_TIMEOUT.as_millis())),
        }
    }

    /// Logs a failure of the shared store, at most once per [`WARN_EVERY_MS`].
    fn warn(&self, now_ms: u64, failure: &str) {
        let last = self.warned_at.load(Ordering::Relaxed);
        if now_ms >= last + WARN_EVERY_MS
            && self.warned_at.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(error = %failure, "shared rate limit unavailable: this node limits on its own");
        }
    }

    /// Gives back to the database what allowances expired at `now` (every allowance with
    /// `all`) left unspent. A give-back that fails leaves those requests counted: a few
    /// fewer may pass in that window, never more.
    pub async fn give_back(&self, now: Instant, all: bool) {
        let unspent = self.lock().collect_unspent(now, all);
        for (key, Unspent { at_slot, count }) in unspent {
            let bucket = key.bucket();
            let give = self.store.give_back_rate(&bucket, at_slot, count);
            let failure = match tokio::time::timeout(SHARED_TIMEOUT, give).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {} ms", SHARED_TIMEOUT.as_millis()),
            };
            self.warn(now_nanos() / 1_000_000, &failure);
        }
    }

    /// Gives unspent allowances back as they expire and sweeps idle buckets out of the
    /// shared table once a minute, until `stop` turns true (or its sender is dropped); then
    /// gives back everything this node still holds. Every node runs one.
    fn upkeep(self: Arc<Self>, mut stop: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut give_back = tokio::time::interval(GIVE_BACK_EVERY);
            give_back.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut sweep = tokio::time::interval(SWEEP_EVERY);
            sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !*stop.borrow() {
                tokio::select! {
                    _ = give_back.tick() => self.give_back(Instant::now(), false).await,
                    _ = sweep.tick() => {
                        if let Err(e) = self.store.sweep_rates(WINDOW_MS).await {
                            tracing::warn!(error = %e, "cannot sweep the shared rate limits");
                        }
                    }
                    changed = stop.changed() => if changed.is_err() { break },
                }
            }
            // Taken out under the lock, these can no longer be spent by requests still
            // finishing on this node.
            self.give_back(Instant::now(), true).await;
        })
    }
}

/// Clears a key's batch mark when dropped.
struct BatchMark<'a> {
    limiter: &'a SharedLimiter,
    key: LimitKey,
}

impl Drop for BatchMark<'_> {
    fn drop(&mut self) {
        self.limiter.batch_done(self.key);
    }
}

impl RateLimiter for SharedLimiter {
    fn check(&self, key: LimitKey, per_minute: u32) -> BoxFuture<'_, Decision> {
        Box::pin(self.decide(key, per_minute))
    }

    fn spawn_upkeep(self: Arc<Self>, stop: watch::Receiver<bool>) -> Option<JoinHandle<()>> {
        Some(self.upkeep(stop))
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
        RateTake { granted: i64::from(allowed), remaining, reset_ms, retry_ms, at_slot: 0 }
    }

    #[test]
    fn batches_only_far_from_the_limit() {
        assert_eq!(batch_size(0), 1);
        assert_eq!(batch_size(59), 1);
        assert_eq!(batch_size(1023), 1);
        assert_eq!(batch_size(1024), 64);
        assert_eq!(batch_size(4096), 256);
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

    /// A limiter whose store is never reached: these tests drive its allowances directly.
    async fn offline_limiter(dir: &std::path::Path) -> SharedLimiter {
        let url = format!("sqlite://{}", dir.join("r.db").display());
        SharedLimiter::new(Store::open(&url, None).await.unwrap())
    }

    fn granted(count: i64, remaining: i64, at_slot: i64) -> RateTake {
        RateTake { granted: count, remaining, reset_ms: 60_000, retry_ms: 0, at_slot }
    }

    /// Keeps a round trip's answer as `take` does (one of the grant for the asking
    /// request); returns the tokens held.
    fn answer(limiter: &SharedLimiter, key: LimitKey, take: RateTake, asked: Instant) -> u32 {
        let decision = shared_decision(take, 100_000, T0 / 1_000_000);
        let kept = u32::try_from(take.granted - 1).unwrap();
        limiter.keep(key, &take, &decision, asked, kept)
    }

    /// What `spend` said, without the notifier.
    #[derive(Debug, PartialEq, Eq)]
    enum Said {
        Spent { remaining: u32, refill: u32 },
        Wait,
        Ask(u32),
    }

    fn spend(limiter: &SharedLimiter, key: LimitKey, now: Instant, may_wait: bool) -> Said {
        match limiter.spend(key, 100_000, now, may_wait) {
            Next::Spent(d, refill) => Said::Spent { remaining: d.remaining, refill },
            Next::Wait(_) => Said::Wait,
            Next::Ask(want) => Said::Ask(want),
        }
    }

    const B: u32 = MAX_BATCH;

    /// A key with an allowance of a batch less one, counted in slot 12, asked for at `t`.
    async fn with_a_batch(limiter: &SharedLimiter, key: LimitKey, t: Instant) {
        assert_eq!(spend(limiter, key, t, true), Said::Ask(1), "nothing known of the key yet");
        assert_eq!(answer(limiter, key, granted(1, 99_999, 10), t), 0);
        assert_eq!(spend(limiter, key, t, true), Said::Ask(B), "far from the limit: a batch");
        assert_eq!(answer(limiter, key, granted(B.into(), 99_999 - i64::from(B), 12), t), B - 1);
        limiter.batch_done(key);
    }

    #[tokio::test]
    async fn one_batch_is_asked_for_at_a_time_and_the_next_ahead_of_need() {
        let dir = tempfile::tempdir().unwrap();
        let limiter = offline_limiter(dir.path()).await;
        let key = LimitKey::Key(1);
        let t = Instant::now();
        assert_eq!(spend(&limiter, key, t, true), Said::Ask(1));
        answer(&limiter, key, granted(1, 99_999, 10), t);
        assert_eq!(spend(&limiter, key, t, true), Said::Ask(B));
        assert_eq!(spend(&limiter, key, t, true), Said::Wait, "a batch is on its way");
        assert_eq!(spend(&limiter, key, t, false), Said::Ask(1), "after one wait, a request asks alone");
        let left_in_db = 99_999 - B;
        assert_eq!(answer(&limiter, key, granted(B.into(), left_in_db.into(), 12), t), B - 1);
        limiter.batch_done(key);
        let soon = t + Duration::from_millis(10);
        for held in (B / 2 + 1..B - 1).rev() {
            assert_eq!(spend(&limiter, key, soon, true), Said::Spent { remaining: left_in_db + held, refill: 0 });
        }
        assert_eq!(
            spend(&limiter, key, soon, true),
            Said::Spent { remaining: left_in_db + B / 2, refill: B },
            "half a batch left: this request asks for the next one ahead"
        );
        assert_eq!(spend(&limiter, key, soon, true), Said::Spent { remaining: left_in_db + B / 2 - 1, refill: 0 });
        // The next batch replaces what is left, which is set aside to be given back.
        let refill = granted(B.into(), (left_in_db - B).into(), 13);
        let decision = shared_decision(refill, 100_000, T0 / 1_000_000);
        assert_eq!(limiter.keep(key, &refill, &decision, soon, B), B);
        limiter.batch_done(key);
        let a = limiter.lock().by_key.get(&key).map(|a| (a.until, a.at_slot)).unwrap();
        assert_eq!(a, (soon + ALLOWANCE_TTL, 13));
        assert_eq!(limiter.lock().unspent, vec![(key, Unspent { at_slot: 12, count: B / 2 - 1 })]);
    }

    #[tokio::test]
    async fn unspent_tokens_are_set_aside_for_giving_back_once_expired() {
        let dir = tempfile::tempdir().unwrap();
        let limiter = offline_limiter(dir.path()).await;
        let (key, other) = (LimitKey::Key(1), LimitKey::Key(2));
        let t = Instant::now();
        for k in [key, other] {
            with_a_batch(&limiter, k, t).await;
            assert!(matches!(spend(&limiter, k, t, true), Said::Spent { .. }));
        }
        let expired = t + ALLOWANCE_TTL;
        // A request after expiry sets the rest aside instead of spending it.
        assert_eq!(spend(&limiter, key, expired, true), Said::Ask(B));
        assert_eq!(limiter.lock().unspent, vec![(key, Unspent { at_slot: 12, count: B - 2 })]);
        limiter.batch_done(key);
        // The upkeep collects the set-aside and every other expired allowance.
        let mut collected = limiter.lock().collect_unspent(expired, false);
        collected.sort_by_key(|(k, _)| k.bucket());
        let both = vec![(key, Unspent { at_slot: 12, count: B - 2 }), (other, Unspent { at_slot: 12, count: B - 2 })];
        assert_eq!(collected, both);
        assert!(limiter.lock().collect_unspent(expired, false).is_empty(), "given back once");
        // Records idle for a while are forgotten.
        limiter.lock().collect_unspent(t + FORGET_AFTER + Duration::from_millis(1), false);
        assert!(limiter.lock().by_key.is_empty());
    }

    #[tokio::test]
    async fn a_stopping_node_sets_aside_even_unexpired_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let limiter = offline_limiter(dir.path()).await;
        let key = LimitKey::Key(1);
        let t = Instant::now();
        with_a_batch(&limiter, key, t).await;
        assert!(limiter.lock().collect_unspent(t, false).is_empty(), "not expired yet");
        assert_eq!(limiter.lock().collect_unspent(t, true), vec![(key, Unspent { at_slot: 12, count: B - 1 })]);
        assert_eq!(spend(&limiter, key, t, true), Said::Ask(B), "nothing left to spend");
    }

    #[tokio::test]
    async fn a_request_waiting_for_a_batch_is_woken_when_it_arrives_or_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let limiter = Arc::new(offline_limiter(dir.path()).await);
        let key = LimitKey::Key(1);
        let t = Instant::now();
        answer(&limiter, key, granted(1, 99_999, 10), t);
        assert_eq!(spend(&limiter, key, t, true), Said::Ask(B));
        // The waiter finds no batch, and after waking asks the (absent) database alone:
        // the offline store fails, so its own window decides.
        let waiter = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.decide(key, 100_000).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "it waits for the batch");
        limiter.batch_done(key);
        let decision = tokio::time::timeout(Duration::from_secs(1), waiter).await.expect("woken").unwrap();
        assert!(decision.allowed);
    }

    #[tokio::test]
    async fn keys_near_their_limit_are_not_tracked() {
        let dir = tempfile::tempdir().unwrap();
        let limiter = offline_limiter(dir.path()).await;
        for id in 0..100 {
            assert_eq!(answer(&limiter, LimitKey::Key(id), granted(1, 59, 10), Instant::now()), 0);
        }
        assert!(limiter.lock().by_key.is_empty());
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
