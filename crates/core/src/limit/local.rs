//! The single-node limiter.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{now_nanos, Decision, LimitKey, Window, WINDOW_NANOS};

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
    /// Spends one request of `key`'s quota of `per_minute` now.
    pub fn check(&self, key: LimitKey, per_minute: u32) -> Decision {
        self.check_at(key, per_minute, now_nanos())
    }

    /// Spends one request of `key`'s quota at `now` (nanoseconds since the epoch).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{SEC, T0};

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
}
