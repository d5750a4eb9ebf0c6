//! Rate limiting: N requests in any 60-second window per API key (or per client address
//! for calls without a valid key), and the `X-RateLimit-*` headers on every response.
//!
//! The in-process limiter keeps a sliding log of accepted request times per key, so the
//! quota is exact: N requests pass, the next is refused until the oldest leaves the window,
//! and there is no double burst at a window edge. A key idle for a minute holds no state.

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

/// The accepted request times of one key within the last window, oldest first.
#[derive(Debug, Default)]
pub struct Window {
    accepted: VecDeque<u64>,
}

impl Window {
    /// Decides on a request at `now` (nanoseconds since the epoch) against `limit`, and
    /// records it when accepted.
    pub fn check(&mut self, now: u64, limit: u32) -> Decision {
        let horizon = now.saturating_sub(WINDOW_NANOS);
        while self.accepted.front().is_some_and(|&t| t <= horizon) {
            self.accepted.pop_front();
        }
        let limit_len = limit as usize;
        // A lowered quota leaves more entries than allowed: keep only the newest.
        while self.accepted.len() > limit_len {
            self.accepted.pop_front();
        }
        let allowed = self.accepted.len() < limit_len;
        if allowed {
            self.accepted.push_back(now);
        }
        let newest = self.accepted.back().copied().unwrap_or(now);
        let retry_after = match (allowed, self.accepted.front()) {
            (false, Some(&oldest)) => ceil_secs(oldest + WINDOW_NANOS - now).max(1),
            _ => 0,
        };
        Decision {
            allowed,
            limit,
            remaining: (limit_len - self.accepted.len()) as u32,
            reset_at: ceil_secs(newest + WINDOW_NANOS),
            retry_after,
        }
    }

    /// True when no accepted request is inside the window: the state can be dropped.
    fn is_idle(&self, now: u64) -> bool {
        self.accepted.back().is_none_or(|&t| t <= now.saturating_sub(WINDOW_NANOS))
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
    /// Size at which the next sweep of idle windows runs.
    sweep_at: usize,
}

const MIN_SWEEP: usize = 1024;

impl LocalLimiter {
    pub fn check_at(&self, key: LimitKey, per_minute: u32, now: u64) -> Decision {
        let mut windows = self.windows.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if windows.by_key.len() >= windows.sweep_at.max(MIN_SWEEP) {
            windows.by_key.retain(|_, w| !w.is_idle(now));
            windows.sweep_at = windows.by_key.len() * 2;
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
    fn retry_after_is_at_least_one_second() {
        let mut w = Window::default();
        assert!(w.check(T0, 1).allowed);
        let d = w.check(T0 + WINDOW_NANOS - 1, 1);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, 1);
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
