//! Dashboard sessions (decisions 8.3): their stages and when they expire.

use chrono::{DateTime, TimeDelta, Utc};

use crate::wire::wire_names;

/// How far through signing in a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The password was right; the two-step code is awaited.
    Code,
    /// The password was right; the brand requires two-step and the user must enrol first.
    Enrol,
    /// Signed in.
    Full,
}

wire_names!(Stage { Code => "code", Enrol => "enrol", Full => "full" });

/// A session ends after this long without a request.
pub const IDLE: TimeDelta = TimeDelta::hours(12);
/// A session ends this long after it began, however busy.
pub const ABSOLUTE: TimeDelta = TimeDelta::days(7);
/// A session waiting for a code ends this long after the password was accepted.
pub const CODE_STAGE: TimeDelta = TimeDelta::minutes(5);
/// A session waiting for enrolment gets longer: installing an authenticator app takes time.
pub const ENROL_STAGE: TimeDelta = TimeDelta::minutes(15);
/// Wrong codes a session waiting for a code allows; the next ends it.
pub const WRONG_CODES: usize = 5;
/// `last_seen_at` is written at most this often, not on every request.
pub const TOUCH_EVERY: TimeDelta = TimeDelta::minutes(1);

/// The stage a correct password (or an accepted invitation) leads to.
pub fn stage_after_password(totp_enrolled: bool, brand_requires_totp: bool) -> Stage {
    if totp_enrolled {
        Stage::Code
    } else if brand_requires_totp {
        Stage::Enrol
    } else {
        Stage::Full
    }
}

/// True while a session begun at `created_at` and last seen at `last_seen_at` is live at `now`.
pub fn is_live(stage: Stage, created_at: DateTime<Utc>, last_seen_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    let limit = match stage {
        Stage::Code => CODE_STAGE,
        Stage::Enrol => ENROL_STAGE,
        Stage::Full => ABSOLUTE,
    };
    now - created_at < limit && now - last_seen_at < IDLE
}

/// True when a request at `now` should record itself as the session's last sight.
pub fn needs_touch(last_seen_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    now - last_seen_at >= TOUCH_EVERY
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn full_sessions_end_after_12_idle_hours_or_7_days() {
        let h = 3600;
        assert!(is_live(Stage::Full, at(0), at(0), at(12 * h - 1)));
        assert!(!is_live(Stage::Full, at(0), at(0), at(12 * h)));
        // Busy all week: still ends at 7 days.
        assert!(is_live(Stage::Full, at(0), at(168 * h - 60), at(168 * h - 1)));
        assert!(!is_live(Stage::Full, at(0), at(168 * h - 60), at(168 * h)));
    }

    #[test]
    fn half_signed_in_sessions_are_short() {
        assert!(is_live(Stage::Code, at(0), at(0), at(299)));
        assert!(!is_live(Stage::Code, at(0), at(0), at(300)));
        assert!(is_live(Stage::Enrol, at(0), at(0), at(899)));
        assert!(!is_live(Stage::Enrol, at(0), at(0), at(900)));
    }

    #[test]
    fn two_step_decides_the_stage_after_the_password() {
        assert_eq!(stage_after_password(true, false), Stage::Code);
        assert_eq!(stage_after_password(true, true), Stage::Code);
        assert_eq!(stage_after_password(false, true), Stage::Enrol);
        assert_eq!(stage_after_password(false, false), Stage::Full);
    }

    #[test]
    fn last_seen_is_written_at_most_once_a_minute() {
        assert!(!needs_touch(at(0), at(59)));
        assert!(needs_touch(at(0), at(60)));
    }
}
