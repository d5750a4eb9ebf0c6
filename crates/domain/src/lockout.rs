//! Sign-in lockout arithmetic (decisions 8.1), over the instants of recorded failures.
//!
//! Per email: 5 failures within one window (`signin_lock_seconds`, 15 minutes by default)
//! lock the email for a window from the 5th of them, right password or not. Failures are
//! counted by the email as typed ([`email_key`]), whether or not an account has it, so a
//! lock tells nothing about which emails have accounts (and anyone can lock an email for
//! a window by failing five times: decisions 8.1 accept that). Wrong two-step codes and
//! wrong current passwords on the password form count for the account's email too.
//! Per address: `signin_address_limit` failures from one client address (over any emails)
//! within the window refuse that address until the oldest of them leaves the window.
//! Attempts refused while locked are not failures (they check no password), so a lock is
//! not prolonged by hammering it.
//!
//! An attempt is counted before its password is checked ([`may_attempt`] decides, under a
//! lock, whether one more may be), and uncounted when the password was right: attempts sent
//! at the same moment then check at most the allowance (decisions 13.0).

use chrono::{DateTime, TimeDelta, Utc};
use sha2::{Digest, Sha256};

/// Failures for one account within a window that lock it.
pub const ACCOUNT_FAILURES: usize = 5;

/// The key an email's failures are counted under: the SHA-256 (hex) of the email as typed,
/// trimmed and lower-cased, so `Ada@Acme.example ` and `ada@acme.example` are one email and
/// the table of failures holds no address in clear.
pub fn email_key(typed: &str) -> String {
    let normalised = typed.trim().to_lowercase();
    hex::encode(Sha256::digest(format!("rehome sign-in email:{normalised}").as_bytes()))
}

/// True when one more attempt may be checked at `now`: neither the email's failures nor the
/// address's (attempts in flight included) refuse it. Adding the attempt's own instant then
/// leaves at most [`ACCOUNT_FAILURES`] for the email and `address_limit` for the address
/// within any window ending at `now`.
pub fn may_attempt(
    email_failures: &[DateTime<Utc>],
    address_failures: &[DateTime<Utc>],
    now: DateTime<Utc>,
    window: TimeDelta,
    address_limit: usize,
) -> bool {
    refused_until(email_failures, address_failures, now, window, address_limit).is_none()
}

/// Until when one more attempt is refused at `now` (the later of the email's lock and the
/// address's), or `None` when it may be checked.
pub fn refused_until(
    email_failures: &[DateTime<Utc>],
    address_failures: &[DateTime<Utc>],
    now: DateTime<Utc>,
    window: TimeDelta,
    address_limit: usize,
) -> Option<DateTime<Utc>> {
    let email = account_locked_until(email_failures, now, window);
    let address = address_refused_until(address_failures, now, window, address_limit);
    email.max(address)
}

/// Until when the account whose failures are `failures` (any order) is locked at `now`, or
/// `None` when it is not: the latest lock started by a 5th failure within a window of the
/// 1st, lasting a window from that 5th failure.
pub fn account_locked_until(
    failures: &[DateTime<Utc>],
    now: DateTime<Utc>,
    window: TimeDelta,
) -> Option<DateTime<Utc>> {
    let mut sorted = failures.to_vec();
    sorted.sort_unstable();
    sorted
        .windows(ACCOUNT_FAILURES)
        .filter(|run| run[ACCOUNT_FAILURES - 1] - run[0] < window)
        .map(|run| run[ACCOUNT_FAILURES - 1] + window)
        .filter(|until| *until > now)
        .max()
}

/// Until when an address with these failures (any order) is refused at `now`, or `None`:
/// refused while at least `limit` of them fall within the window before `now`, that is until
/// enough of them have aged out to leave `limit - 1`.
pub fn address_refused_until(
    failures: &[DateTime<Utc>],
    now: DateTime<Utc>,
    window: TimeDelta,
    limit: usize,
) -> Option<DateTime<Utc>> {
    let mut recent: Vec<_> = failures.iter().copied().filter(|at| *at > now - window && *at <= now).collect();
    if limit == 0 || recent.len() < limit {
        return None;
    }
    recent.sort_unstable();
    // Once the oldest `len - limit + 1` have aged out, `limit - 1` remain.
    Some(recent[recent.len() - limit] + window)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    const W: TimeDelta = TimeDelta::seconds(900);

    #[test]
    fn four_failures_do_not_lock_and_the_fifth_locks_for_a_window_from_it() {
        let four: Vec<_> = (0..4).map(|i| at(i * 60)).collect();
        assert_eq!(account_locked_until(&four, at(300), W), None);
        let mut five = four.clone();
        five.push(at(600));
        assert_eq!(account_locked_until(&five, at(600), W), Some(at(1500)));
        assert_eq!(account_locked_until(&five, at(1499), W), Some(at(1500)));
        assert_eq!(account_locked_until(&five, at(1500), W), None);
    }

    #[test]
    fn five_failures_spread_over_more_than_a_window_do_not_lock() {
        let spread: Vec<_> = (0..5).map(|i| at(i * 225)).collect(); // last − first = 900 s
        assert_eq!(account_locked_until(&spread, at(900), W), None);
    }

    #[test]
    fn the_latest_lock_wins() {
        let failures: Vec<_> = [0, 10, 20, 30, 40, 500].into_iter().map(at).collect();
        // 10..500 are five within a window too: locked until 500 + 900.
        assert_eq!(account_locked_until(&failures, at(600), W), Some(at(1400)));
    }

    #[test]
    fn an_address_is_refused_from_its_limit_until_the_oldest_ages_out() {
        let failures: Vec<_> = [0, 100, 200].into_iter().map(at).collect();
        assert_eq!(address_refused_until(&failures, at(200), W, 4), None);
        assert_eq!(address_refused_until(&failures, at(200), W, 3), Some(at(900)));
        assert_eq!(address_refused_until(&failures, at(899), W, 3), Some(at(900)));
        assert_eq!(address_refused_until(&failures, at(900), W, 3), None);
        // Five failures, limit 3: refused until only two remain (the third oldest ages out).
        let five: Vec<_> = [0, 100, 200, 300, 400].into_iter().map(at).collect();
        assert_eq!(address_refused_until(&five, at(400), W, 3), Some(at(1100)));
    }

    #[test]
    fn the_email_is_counted_trimmed_and_lower_cased_and_never_in_clear() {
        assert_eq!(email_key(" Ada@ACME.example "), email_key("ada@acme.example"));
        assert_ne!(email_key("ada@acme.example"), email_key("eve@acme.example"));
        assert!(!email_key("ada@acme.example").contains("ada"));
        assert_eq!(email_key("x").len(), 64);
    }

    proptest! {
        /// Attempts admitted one at a time (as the store does, under a lock) never put more
        /// than the allowance within a window, for the email or the address.
        #[test]
        fn admitting_one_at_a_time_never_exceeds_the_allowance(
            gaps in prop::collection::vec(0i64..400, 1..60),
            limit in 1usize..8,
        ) {
            let (mut email, mut address) = (Vec::new(), Vec::new());
            let mut t = 0;
            for gap in gaps {
                t += gap;
                if may_attempt(&email, &address, at(t), W, limit) {
                    email.push(at(t));
                    address.push(at(t));
                }
                let within = |f: &Vec<DateTime<Utc>>| f.iter().filter(|x| **x > at(t) - W).count();
                prop_assert!(within(&email) <= ACCOUNT_FAILURES);
                prop_assert!(within(&address) <= limit);
            }
        }

        #[test]
        fn fewer_than_five_failures_never_lock(secs in prop::collection::vec(0i64..5000, 0..5), now in 0i64..6000) {
            let failures: Vec<_> = secs.into_iter().map(at).collect();
            prop_assert_eq!(account_locked_until(&failures, at(now), W), None);
        }

        #[test]
        fn a_lock_ends_within_a_window_of_the_last_failure_and_ignores_order(
            mut secs in prop::collection::vec(0i64..5000, 0..12),
            now in 0i64..7000,
        ) {
            let failures: Vec<_> = secs.iter().copied().map(at).collect();
            let until = account_locked_until(&failures, at(now), W);
            if let Some(until) = until {
                prop_assert!(until > at(now));
                prop_assert!(until <= *failures.iter().max().unwrap() + W);
            }
            secs.reverse();
            let reversed: Vec<_> = secs.into_iter().map(at).collect();
            prop_assert_eq!(account_locked_until(&reversed, at(now), W), until);
        }

        #[test]
        fn five_failures_within_a_window_lock_until_a_window_after_the_fifth(
            start in 0i64..1000,
            gaps in prop::collection::vec(0i64..225, 4),
        ) {
            let mut t = start;
            let mut failures = vec![at(t)];
            for gap in gaps {
                t += gap;
                failures.push(at(t));
            }
            prop_assume!(t - start < 900);
            prop_assert_eq!(account_locked_until(&failures, at(t), W), Some(at(t) + W));
            prop_assert_eq!(account_locked_until(&failures, at(t) + W, W), None);
        }

        #[test]
        fn an_address_under_its_limit_within_the_window_is_never_refused(
            secs in prop::collection::vec(0i64..5000, 0..20),
            now in 0i64..6000,
            limit in 1usize..10,
        ) {
            let failures: Vec<_> = secs.into_iter().map(at).collect();
            let recent = failures.iter().filter(|f| **f > at(now) - W && **f <= at(now)).count();
            let refused = address_refused_until(&failures, at(now), W, limit);
            prop_assert_eq!(refused.is_some(), recent >= limit);
            if let Some(until) = refused {
                prop_assert!(until > at(now) && until <= at(now) + W);
            }
        }
    }
}
