//! The retry schedules of the background queues, as data and pure functions.
//!
//! Every queue waits longer after each failed attempt: after the n-th failure (n = 1, 2, …)
//! the nominal gap is `base × factor^(n−1)`, capped at `max_gap` ([`Backoff`]). Jitter
//! shortens each gap by up to 20 % so that work that failed together does not all come back
//! together; a gap is never longer than its nominal value, so the cap holds. A queue stops
//! retrying either when a window closes ([`RetrySchedule`]: webhooks, mail) or after a
//! number of attempts ([`Attempts`]: thumbnails, image imports).
//!
//! The webhook schedule (decisions §9) is the doubling one: 30 s, 1 min, 2 min, … 32 min,
//! 1 h, 1 h, … with the default base, and no attempt after the window closes: the event is
//! then dead.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

/// The longest gap between two attempts.
pub const MAX_GAP: Duration = Duration::from_secs(60 * 60);
/// The largest share of a gap that jitter removes.
pub const JITTER: f64 = 0.2;

/// How long to wait after each failure of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The gap after the first failure.
    pub base: Duration,
    /// How many times longer each gap is than the one before.
    pub factor: u32,
    /// The longest gap.
    pub max_gap: Duration,
}

impl Backoff {
    /// Twice as long each time, at most [`MAX_GAP`].
    pub const fn doubling(base: Duration) -> Self {
        Self { base, factor: 2, max_gap: MAX_GAP }
    }

    /// The gap after the `failures`-th failed attempt (1-based; 0 reads as 1) before jitter.
    pub fn nominal_gap(&self, failures: u32) -> Duration {
        let growth = self.factor.max(1).saturating_pow(failures.saturating_sub(1).min(63));
        self.base.saturating_mul(growth).min(self.max_gap)
    }

    /// The gap after the `failures`-th failed attempt, shortened by jitter: `unit` is a
    /// random number in [0, 1) ([`random_unit`]).
    pub fn gap(&self, failures: u32, unit: f64) -> Duration {
        self.nominal_gap(failures).mul_f64(1.0 - JITTER * unit.clamp(0.0, 1.0))
    }
}

/// Retries within a window that opens when the work is created (or replayed).
#[derive(Debug, Clone, Copy)]
pub struct RetrySchedule {
    pub backoff: Backoff,
    /// How long after an event's creation (or replay) it is retried.
    pub window: Duration,
}

impl RetrySchedule {
    /// The doubling schedule of webhooks and mail.
    pub const fn doubling(base: Duration, window: Duration) -> Self {
        Self { backoff: Backoff::doubling(base), window }
    }

    /// The gap after the `failures`-th failed attempt (1-based) before jitter.
    pub fn nominal_gap(&self, failures: u32) -> Duration {
        self.backoff.nominal_gap(failures)
    }

    /// When to try again after the `failures`-th failed attempt that ended at `now`, or
    /// `None` when that time falls after `retry_until` (the event is dead).
    /// `unit` is a random number in [0, 1) that picks the jitter.
    pub fn next_attempt(
        &self,
        failures: u32,
        now: DateTime<Utc>,
        retry_until: DateTime<Utc>,
        unit: f64,
    ) -> Option<DateTime<Utc>> {
        let next = now + TimeDelta::from_std(self.backoff.gap(failures, unit)).ok()?;
        (next <= retry_until).then_some(next)
    }

    /// The nominal gaps of a window in which every attempt fails instantly: attempt times
    /// are the running sums. Used by tests and docs.
    pub fn nominal_gaps(&self) -> Vec<Duration> {
        let mut gaps = Vec::new();
        let mut elapsed = Duration::ZERO;
        for failures in 1.. {
            let gap = self.nominal_gap(failures);
            if elapsed + gap > self.window {
                break;
            }
            elapsed += gap;
            gaps.push(gap);
        }
        gaps
    }
}

/// Retries up to a number of attempts in all (the first one included).
#[derive(Debug, Clone, Copy)]
pub struct Attempts {
    pub backoff: Backoff,
    pub attempts: u32,
}

impl Attempts {
    /// When to try again after `attempts` attempts, the last failing at `now`, or `None`
    /// when they were all used.
    pub fn next_attempt(&self, attempts: i64, now: DateTime<Utc>, unit: f64) -> Option<DateTime<Utc>> {
        let failures = u32::try_from(attempts.max(1)).unwrap_or(u32::MAX);
        if failures >= self.attempts {
            return None;
        }
        Some(now + TimeDelta::from_std(self.backoff.gap(failures, unit)).ok()?)
    }
}

/// A uniform random number in [0, 1) from the OS (0 if it cannot be read: no jitter).
pub fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default() -> RetrySchedule {
        RetrySchedule::doubling(Duration::from_secs(30), Duration::from_secs(24 * 3600))
    }

    #[test]
    fn gaps_start_at_the_base_and_double_up_to_one_hour() {
        let s = default();
        let secs: Vec<u64> = (1..=10).map(|n| s.nominal_gap(n).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
        assert_eq!(s.nominal_gap(1000), MAX_GAP);
    }

    #[test]
    fn jitter_only_shortens_a_gap_by_up_to_a_fifth() {
        let s = default();
        let now = Utc::now();
        let until = now + TimeDelta::days(1);
        for n in [1, 4, 9] {
            let nominal = TimeDelta::from_std(s.nominal_gap(n)).unwrap();
            assert_eq!(s.next_attempt(n, now, until, 0.0), Some(now + nominal));
            let shortest = s.next_attempt(n, now, until, 0.999_999).unwrap() - now;
            assert!(shortest >= nominal * 8 / 10 - TimeDelta::milliseconds(1) && shortest < nominal, "{shortest}");
        }
        for _ in 0..1000 {
            let unit = random_unit();
            assert!((0.0..1.0).contains(&unit));
            let gap = s.next_attempt(9, now, until, unit).unwrap() - now;
            assert!(gap <= TimeDelta::hours(1) && gap >= TimeDelta::minutes(48));
        }
    }

    #[test]
    fn there_is_no_attempt_after_the_window() {
        let s = default();
        let now = Utc::now();
        assert_eq!(s.next_attempt(1, now, now + TimeDelta::seconds(29), 0.0), None);
        assert!(s.next_attempt(1, now, now + TimeDelta::seconds(30), 0.0).is_some());
    }

    #[test]
    fn a_day_of_failures_makes_thirty_attempts() {
        // 1 first try, 7 doubling gaps (30 s … 32 min = 63.5 min), then hourly: 22 more fit
        // in the remaining 22 h 56.5 min.
        let gaps = default().nominal_gaps();
        assert_eq!(gaps.len() + 1, 30);
        assert!(gaps.iter().sum::<Duration>() <= Duration::from_secs(24 * 3600));
    }

    #[test]
    fn image_imports_wait_four_times_longer_each_time_up_to_an_hour() {
        let backoff = Backoff { base: Duration::from_secs(10), factor: 4, max_gap: MAX_GAP };
        let secs: Vec<u64> = [0, 1, 2, 3, 30].iter().map(|n| backoff.nominal_gap(*n).as_secs()).collect();
        assert_eq!(secs, [10, 10, 40, 160, 3600]);
    }

    #[test]
    fn attempts_end_after_the_last_one_and_each_gap_is_jittered() {
        let capped = Attempts { backoff: Backoff::doubling(Duration::from_secs(10)), attempts: 3 };
        let now = Utc::now();
        assert_eq!(capped.next_attempt(1, now, 0.0), Some(now + TimeDelta::seconds(10)));
        assert_eq!(capped.next_attempt(2, now, 0.0), Some(now + TimeDelta::seconds(20)));
        assert_eq!(capped.next_attempt(3, now, 0.0), None);
        let jittered = capped.next_attempt(2, now, 0.5).unwrap() - now;
        assert_eq!(jittered, TimeDelta::seconds(18));
    }
}
