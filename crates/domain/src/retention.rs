//! Retention (issue 36): how long the rows that only record the past are kept, and the
//! instants before which the retention job deletes them. The audit log, the ledger and the
//! catalogue itself are kept: they are not here. Delivered webhook events (and their
//! attempts) go a window after their delivery (issue 34); pending and dead ones are kept.

use chrono::{DateTime, TimeDelta, Utc};

use crate::session;

/// How long each pruned kind of row is kept once it no longer serves its purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// A failed sign-in, from when it was made. Never shorter than the lockout period, which
    /// counts these rows (decisions 8.1).
    pub sign_in_failures: TimeDelta,
    /// A session, from when it ended (signed out, or ended for the user) or expired.
    pub sessions: TimeDelta,
    /// An invitation, from when it was used (or replaced by a newer one) or expired.
    pub invitations: TimeDelta,
    /// A mail, from when it was sent or given up.
    pub mail: TimeDelta,
    /// The shared rate limit's window: a counted slot older than it counts for nothing.
    pub rate_limit: TimeDelta,
    /// A delivered webhook event and its attempts, from its delivery.
    pub webhook_events: TimeDelta,
    /// A storefront buyer's details, from the order.
    pub buyers: TimeDelta,
}

/// The rows the job deletes at one instant: those older than each of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cutoffs {
    /// Failures made before this.
    pub sign_in_failures: DateTime<Utc>,
    /// Sessions ended before this.
    pub sessions_ended: DateTime<Utc>,
    /// Sessions last seen before this: expired (idle, or past their absolute limit, after
    /// which they are no longer seen) for at least the window.
    pub sessions_seen: DateTime<Utc>,
    /// Invitations used or expired before this.
    pub invitations: DateTime<Utc>,
    /// Mail sent or given up before this.
    pub mail: DateTime<Utc>,
    /// Webhook events delivered before this.
    pub webhook_events: DateTime<Utc>,
    /// Buyers of orders placed before this.
    pub buyers: DateTime<Utc>,
    /// Idempotency keys that expired (decisions 11.1: 24 hours after the first request)
    /// at or before this: the instant itself, as there is nothing to keep them for.
    pub idempotency: DateTime<Utc>,
    /// Rate limit slots (100 ms each, counted from the Unix epoch) below this. Two windows
    /// back, so that a node's clock running behind the database's never drops a live one.
    pub rate_limit_slot: i64,
}

/// The rate limit's slot length (see `rehome_rate_take` in the PostgreSQL migrations).
const RATE_SLOT_MS: i64 = 100;

impl Windows {
    /// The windows from the settings, in whole hours and days; the sign-in failures' window
    /// is raised to `lockout` if shorter.
    pub fn new(
        sign_in_failure_hours: u32,
        session_days: u32,
        invitation_days: u32,
        mail_days: u32,
        lockout: TimeDelta,
        rate_limit: TimeDelta,
    ) -> Self {
        Self {
            sign_in_failures: TimeDelta::hours(i64::from(sign_in_failure_hours)).max(lockout),
            sessions: TimeDelta::days(i64::from(session_days)),
            invitations: TimeDelta::days(i64::from(invitation_days)),
            mail: TimeDelta::days(i64::from(mail_days)),
            rate_limit,
            // Kept unless a window is set (`keeping_webhook_events`).
            webhook_events: TimeDelta::MAX,
            // Kept unless a window is set (`keeping_buyers`).
            buyers: TimeDelta::MAX,
        }
    }

    /// The same windows, storefront buyers' details kept `days` after their order.
    pub fn keeping_buyers(self, days: u32) -> Self {
        Self { buyers: TimeDelta::days(i64::from(days)), ..self }
    }

    /// The same windows, delivered webhook events kept `days` after their delivery.
    pub fn keeping_webhook_events(self, days: u32) -> Self {
        Self { webhook_events: TimeDelta::days(i64::from(days)), ..self }
    }

    /// What is past its window at `now`.
    pub fn cutoffs(&self, now: DateTime<Utc>) -> Cutoffs {
        let back = |by: TimeDelta| now.checked_sub_signed(by).unwrap_or(DateTime::<Utc>::MIN_UTC);
        let rate_slots = (self.rate_limit.num_milliseconds() + RATE_SLOT_MS - 1) / RATE_SLOT_MS;
        Cutoffs {
            sign_in_failures: back(self.sign_in_failures),
            sessions_ended: back(self.sessions),
            sessions_seen: back(session::IDLE + self.sessions),
            invitations: back(self.invitations),
            mail: back(self.mail),
            webhook_events: back(self.webhook_events),
            buyers: back(self.buyers),
            idempotency: now,
            rate_limit_slot: now.timestamp_millis().div_euclid(RATE_SLOT_MS) - 2 * rate_slots,
        }
    }
}

/// The tables the job prunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    SignInFailures,
    Sessions,
    Invitations,
    Mail,
    IdempotencyKeys,
    /// PostgreSQL only: a single SQLite node counts rate limits in memory.
    RateLimitSlots,
    /// Delivered webhook events and their attempts (issue 34).
    WebhookEvents,
    /// Bulk import drafts past their expiry (`usecases::bulk::drafts`).
    BulkDrafts,
    /// Storefront buyers' details past their window (decisions 14.3; the orders stay).
    Buyers,
}

impl Table {
    pub const ALL: [Self; 9] = [
        Self::SignInFailures,
        Self::Sessions,
        Self::Invitations,
        Self::Mail,
        Self::IdempotencyKeys,
        Self::RateLimitSlots,
        Self::WebhookEvents,
        Self::BulkDrafts,
        Self::Buyers,
    ];

    /// The table's name: the metric's `table` label and the log's.
    pub fn name(self) -> &'static str {
        match self {
            Self::SignInFailures => "sign_in_failures",
            Self::Sessions => "sessions",
            Self::Invitations => "invitations",
            Self::Mail => "mail_outbox",
            Self::IdempotencyKeys => "idempotency_keys",
            Self::RateLimitSlots => "rate_limit_slots",
            Self::WebhookEvents => "webhook_events",
            Self::BulkDrafts => "bulk_drafts",
            Self::Buyers => "order_buyers",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("an instant")
    }

    fn defaults() -> Windows {
        Windows::new(24, 30, 30, 30, TimeDelta::minutes(15), TimeDelta::seconds(60))
    }

    #[test]
    fn each_cutoff_is_its_window_before_now() {
        let now = at("2026-11-27T12:00:00Z");
        let cut = defaults().cutoffs(now);
        assert_eq!(cut.sign_in_failures, at("2026-11-26T12:00:00Z"));
        assert_eq!(cut.sessions_ended, at("2026-10-28T12:00:00Z"));
        assert_eq!(cut.invitations, at("2026-10-28T12:00:00Z"));
        assert_eq!(cut.mail, at("2026-10-28T12:00:00Z"));
        assert_eq!(cut.webhook_events, DateTime::<Utc>::MIN_UTC, "kept unless a window is set");
        assert_eq!(defaults().keeping_webhook_events(7).cutoffs(now).webhook_events, at("2026-11-20T12:00:00Z"));
        assert_eq!(cut.buyers, DateTime::<Utc>::MIN_UTC, "kept unless a window is set");
        assert_eq!(defaults().keeping_buyers(90).cutoffs(now).buyers, at("2026-08-29T12:00:00Z"));
        assert_eq!(cut.idempotency, now);
    }

    #[test]
    fn a_session_goes_a_window_after_it_expired_idle() {
        let now = at("2026-11-27T12:00:00Z");
        // Idle expiry is 12 h after the last request; the window runs from there.
        assert_eq!(defaults().cutoffs(now).sessions_seen, at("2026-10-28T00:00:00Z"));
        let none = Windows::new(24, 0, 0, 0, TimeDelta::minutes(15), TimeDelta::seconds(60));
        assert_eq!(none.cutoffs(now).sessions_seen, at("2026-11-27T00:00:00Z"));
        assert_eq!(none.cutoffs(now).sessions_ended, now);
    }

    #[test]
    fn sign_in_failures_are_kept_at_least_the_lockout_period() {
        let windows = Windows::new(1, 30, 30, 30, TimeDelta::hours(2), TimeDelta::seconds(60));
        assert_eq!(windows.sign_in_failures, TimeDelta::hours(2));
        let windows = Windows::new(0, 30, 30, 30, TimeDelta::minutes(15), TimeDelta::seconds(60));
        assert_eq!(windows.cutoffs(at("2026-11-27T12:00:00Z")).sign_in_failures, at("2026-11-27T11:45:00Z"));
    }

    #[test]
    fn rate_limit_slots_are_kept_two_windows() {
        let now = at("2026-11-27T12:00:00.250Z");
        let slot_now = now.timestamp_millis() / 100;
        assert_eq!(defaults().cutoffs(now).rate_limit_slot, slot_now - 1_200);
        // A window that is not a whole number of slots rounds up, as the counting does.
        let odd = Windows { rate_limit: TimeDelta::milliseconds(150), ..defaults() };
        assert_eq!(odd.cutoffs(now).rate_limit_slot, slot_now - 4);
    }

    #[test]
    fn windows_reaching_before_the_epoch_of_time_keep_everything() {
        let huge = Windows { mail: TimeDelta::MAX, ..defaults() };
        assert_eq!(huge.cutoffs(at("2026-11-27T12:00:00Z")).mail, DateTime::<Utc>::MIN_UTC);
    }
}
