//! Rate limiting: N requests in any 60-second window per API key (or per client address
//! for calls without a valid key), and the `X-RateLimit-*` headers on every response.
//!
//! The in-process limiter keeps a sliding log of accepted requests per key (coalesced into
//! 10 ms slots), so the quota is exact: N requests pass, the next is refused until the
//! oldest leaves the window, and there is no double burst at a window edge. A key idle for
//! a minute holds no state.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderName, HeaderValue};

pub const WINDOW_NANOS: u64 = 60_000_000_000;

/// Whose quota a request spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKey {
    Key(i64),
    Addr(IpAddr),
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
