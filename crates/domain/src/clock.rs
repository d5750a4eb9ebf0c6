//! What time it is for the rules that expire: an API key at its `expires_at`, an
//! idempotency key after its time to live. The system's time; a test moves it ahead
//! ([`Clock::advance`]) instead of waiting for an expiry in real time.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};

/// The system's time, plus however far it was moved ahead (never, outside tests). Clones
/// share one reading.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    ahead_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + TimeDelta::milliseconds(self.ahead_ms.load(Ordering::Relaxed))
    }

    /// Moves this clock, and every clone of it, `by` ahead.
    pub fn advance(&self, by: std::time::Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.ahead_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_move_together_and_only_ahead_of_the_system() {
        let clock = Clock::default();
        let seen = clock.clone();
        let before = Utc::now();
        assert!(clock.now() >= before && clock.now() - before < TimeDelta::seconds(5));
        clock.advance(std::time::Duration::from_secs(3600));
        assert!(seen.now() - Utc::now() > TimeDelta::minutes(59), "a clone reads the moved time");
    }
}
