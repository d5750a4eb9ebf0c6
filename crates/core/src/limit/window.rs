//! The sliding window of one key's accepted requests.

use std::collections::VecDeque;

use super::{ceil_secs, Decision, WINDOW_NANOS};

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
    pub(super) fn is_idle(&self, now: u64) -> bool {
        self.slots.back().is_none_or(|&(latest, _)| latest + WINDOW_NANOS <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{SEC, T0};
    use proptest::prelude::*;

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
