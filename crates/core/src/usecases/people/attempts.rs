//! Attempts at a secret (a password at sign-in, a two-step code, the current password on
//! the password form), counted against the sign-in limits before they are checked
//! (decisions 8.1, 13.0; the arithmetic is `domain::lockout`). An attempt the limits
//! refuse checks nothing; one they admit is a failure until [`Attempt::uncount`] takes
//! it back, so attempts sent at the same moment check at most the allowance. An attempt
//! refused only because others were counted a moment ago waits (at most 3 s) for them to
//! be checked: right passwords sent together all get in, wrong ones still lock.

use std::net::IpAddr;

use chrono::{DateTime, TimeDelta, Utc};

use crate::usecases::Core;
use rehome_domain::lockout::refused_until;
use rehome_domain::time::Ts;
use rehome_store::{AttemptKeys, Reservation, StoreError};

/// The lockout window (`signin_lock_seconds`).
pub(crate) fn window(core: &Core) -> TimeDelta {
    TimeDelta::seconds(i64::try_from(core.config.signin_lock_seconds).unwrap_or(i64::MAX / 1000))
}

/// How recent an attempt not yet settled must be to count as still being checked (one left
/// unsettled by a crash is a failure after this).
const IN_FLIGHT: TimeDelta = TimeDelta::seconds(10);
/// The longest an attempt waits for attempts in flight before it is refused.
const IN_FLIGHT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
const RETRY_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// An attempt admitted and counted: check its secret, then say whether it was right.
#[derive(Debug)]
#[must_use = "a counted attempt stays a failure unless it succeeded"]
pub(crate) struct Attempt {
    id: i64,
    /// The email's failures the decision saw, this attempt's last.
    pub email_failures: Vec<DateTime<Utc>>,
}

impl Attempt {
    /// Counts an attempt for `email_key` (naming `user_id`, if any) from `ip`, or `None`
    /// when the email or the address has used its allowance.
    pub async fn begin(
        core: &Core,
        email_key: &str,
        user_id: Option<i64>,
        ip: IpAddr,
    ) -> Result<Option<Self>, StoreError> {
        Ok(Self::begin_or_until(core, email_key, user_id, ip).await?.ok())
    }

    /// As [`Attempt::begin`], a refusal saying until when the limits refuse (when known).
    pub async fn begin_or_until(
        core: &Core,
        email_key: &str,
        user_id: Option<i64>,
        ip: IpAddr,
    ) -> Result<Result<Self, Option<DateTime<Utc>>>, StoreError> {
        let window = window(core);
        let limit = usize::try_from(core.config.signin_address_limit).unwrap_or(usize::MAX);
        let ip = ip.to_string();
        let keys = AttemptKeys { email_key, user_id, ip: &ip };
        // Two windows back: a lock begun by failures up to a window old lasts a window.
        let since = Ts::from(core.clock.now() - window * 2);
        let instants = |failures: &[Ts]| failures.iter().map(|t| t.get()).collect::<Vec<_>>();
        // Refused while an attempt counted in the last moments may still be being checked
        // (a right one is then taken back): wait for it, a little at a time, rather than
        // refuse a right password sent at the same moment as others.
        let waited_from = tokio::time::Instant::now();
        loop {
            let since_in_flight = Ts::from(core.clock.now() - IN_FLIGHT);
            let mut until = None;
            let decided = core
                .store
                .reserve_sign_in_attempt(&keys, since, since_in_flight, &core.clock, |at, email, address| {
                    until = refused_until(&instants(email), &instants(address), at.get(), window, limit);
                    until.is_none()
                })
                .await?;
            match decided {
                Reservation::Counted { id, email_failures } => {
                    let email_failures = email_failures.into_iter().map(Ts::get).collect();
                    return Ok(Ok(Self { id, email_failures }));
                }
                Reservation::Refused { in_flight } => {
                    if !in_flight || waited_from.elapsed() >= IN_FLIGHT_WAIT {
                        return Ok(Err(until));
                    }
                    tokio::time::sleep(RETRY_EVERY).await;
                }
            }
        }
    }

    /// The secret was right, or was never checked (the server was busy): not a failure.
    pub async fn uncount(self, core: &Core) -> Result<(), StoreError> {
        core.store.release_sign_in_attempt(self.id).await
    }

    /// The secret was wrong: the attempt stays counted, as a failure (no longer in flight).
    pub async fn failed(self, core: &Core) -> Result<(), StoreError> {
        core.store.settle_sign_in_attempt(self.id).await
    }
}
