//! The limiter of several nodes on one PostgreSQL: the batch protocol over
//! `rehome_rate_take` and `rehome_rate_give_back`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{now_nanos, Decision, LimitKey, LocalLimiter, WINDOW_MS};
use rehome_store::{PgStore, RateTake};

/// How long a check waits for the database before the local window decides instead.
const SHARED_TIMEOUT: Duration = Duration::from_secs(2);
/// At most one warning about failing shared checks per this many milliseconds.
const WARN_EVERY_MS: u64 = 10_000;
/// How often expired allowances are given back to the database.
pub const GIVE_BACK_EVERY: Duration = Duration::from_millis(50);
/// How long a key's allowance record outlives its last use.
const FORGET_AFTER: Duration = Duration::from_secs(1);

/// The limiter of several nodes on one PostgreSQL: every node spends the same quota, kept
/// in the database (`rehome_rate_take`), so at most N requests pass in any window in all.
///
/// A key far from its limit (at least [`BATCH_FROM`] requests left) takes a small batch of
/// its quota per round trip, an allowance this node spends on its own for at most
/// [`ALLOWANCE_TTL`]: one batch asked for at a time per key, the next one ahead when half
/// a batch is left, and requests that find no tokens meanwhile wait for the batch on its
/// way. Nearer the limit each request is one round trip, so the last
/// requests of a quota are shared exactly between nodes. What an allowance could not spend
/// in time is given back to the database within 50 ms of its expiry (by
/// [`SharedLimiter::spawn_upkeep`]), so exactly N pass when the key keeps asking.
///
/// When the database does not answer (an error, or nothing within 2 s) the
/// request is decided by this node's own window and a warning is logged: a database blip
/// neither fails requests nor stops limiting them (each node then admits up to N).
pub struct SharedLimiter {
    store: PgStore,
    fallback: LocalLimiter,
    /// Milliseconds since the epoch of the last warning, to keep an outage to a few lines.
    warned_at: AtomicU64,
    allowances: Mutex<Allowances>,
}

/// Below this many requests left in a key's quota, each request is one round trip.
pub const BATCH_FROM: i64 = 1024;
/// The most requests one round trip takes.
pub const MAX_BATCH: u32 = 256;
/// How long an allowance may be spent, from the moment it was asked for. The database
/// counts a batch from 200 ms ahead, so every request spent within this is counted for a
/// whole window after it passed.
pub const ALLOWANCE_TTL: Duration = Duration::from_millis(150);

#[derive(Default)]
struct Allowances {
    by_key: HashMap<LimitKey, Allowance>,
    /// Unspent requests taken out of allowances, to be given back to the database.
    unspent: Vec<(LimitKey, Unspent)>,
}

/// What this node knows of a key's shared quota since its last round trip. Kept only for
/// keys far enough from their limit to take batches.
#[derive(Debug)]
struct Allowance {
    /// Requests granted to this node and not spent yet.
    tokens: u32,
    /// Until when they may be spent.
    until: Instant,
    /// The database slot they were counted in.
    at_slot: i64,
    /// Left in the database at the last round trip (this node's unspent tokens not included).
    remaining: u32,
    reset_at: u64,
    /// A batch is being asked for; requests finding no tokens meanwhile wait for it.
    batching: bool,
    /// Wakes the requests waiting for the batch being asked for.
    arrived: Arc<Notify>,
    /// The last round trip for the key.
    seen: Instant,
}

/// What `spend` tells a request to do.
enum Next {
    /// Allowed from this node's allowance; when the second field is not 0, the request
    /// also asks the database for the next batch, of that size.
    Spent(Decision, u32),
    /// A batch is on its way: wait for it, then try again.
    Wait(Arc<Notify>),
    /// Ask the database for this many.
    Ask(u32),
}

/// Requests counted in a database slot and never spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unspent {
    at_slot: i64,
    count: u32,
}

impl Allowance {
    /// Takes the tokens out, if any: they are given back instead of spent.
    fn take_unspent(&mut self) -> Option<Unspent> {
        let count = std::mem::take(&mut self.tokens);
        (count > 0).then_some(Unspent { at_slot: self.at_slot, count })
    }
}

impl Allowances {
    /// Moves the tokens of allowances expired at `now` (all of them with `all`) to the
    /// unspent list, forgets records idle for [`FORGET_AFTER`], and returns the list.
    fn collect_unspent(&mut self, now: Instant, all: bool) -> Vec<(LimitKey, Unspent)> {
        let mut unspent = std::mem::take(&mut self.unspent);
        self.by_key.retain(|&key, a| {
            if all || now >= a.until {
                unspent.extend(a.take_unspent().map(|u| (key, u)));
            }
            a.batching || a.tokens > 0 || now < a.seen + FORGET_AFTER
        });
        unspent
    }
}

impl SharedLimiter {
    pub fn new(store: PgStore) -> Self {
        Self {
            store,
            fallback: LocalLimiter::default(),
            warned_at: AtomicU64::new(0),
            allowances: Mutex::new(Allowances::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Allowances> {
        self.allowances.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Spends one request of this node's allowance for `key`, if it has one; otherwise
    /// says whether to wait for a batch on its way (only if `may_wait`) or how many to ask
    /// the database for. Marks a batch as asked for when it says to ask for one, including
    /// the next batch asked for ahead when a spend leaves half a batch or less.
    fn spend(&self, key: LimitKey, limit: u32, now: Instant, may_wait: bool) -> Next {
        let mut allowances = self.lock();
        let Allowances { by_key, unspent } = &mut *allowances;
        let Some(a) = by_key.get_mut(&key) else {
            return Next::Ask(1);
        };
        if a.tokens > 0 && now < a.until {
            a.tokens -= 1;
            let remaining = a.remaining.saturating_add(a.tokens).min(limit);
            let decision = Decision { allowed: true, limit, remaining, reset_at: a.reset_at, retry_after: 0 };
            let batch = batch_size(a.remaining);
            let refill = if a.tokens <= batch / 2 && !a.batching { batch } else { 1 };
            a.batching |= refill > 1;
            return Next::Spent(decision, if refill > 1 { refill } else { 0 });
        }
        unspent.extend(a.take_unspent().map(|u| (key, u)));
        if a.batching {
            return if may_wait { Next::Wait(a.arrived.clone()) } else { Next::Ask(1) };
        }
        let want = batch_size(a.remaining);
        a.batching = want > 1;
        Next::Ask(want)
    }

    /// Keeps what a round trip asked for at `asked` learnt, adding `tokens` to the
    /// allowance; returns the allowance left.
    fn keep(&self, key: LimitKey, take: &RateTake, decision: &Decision, asked: Instant, tokens: u32) -> u32 {
        let now = Instant::now();
        let mut allowances = self.lock();
        let Allowances { by_key, unspent } = &mut *allowances;
        if tokens == 0 && batch_size(decision.remaining) == 1 && !by_key.contains_key(&key) {
            return 0;
        }
        let a = by_key.entry(key).or_insert_with(|| Allowance {
            tokens: 0,
            until: now,
            at_slot: 0,
            remaining: 0,
            reset_at: 0,
            batching: false,
            arrived: Arc::default(),
            seen: now,
        });
        a.remaining = decision.remaining;
        a.reset_at = decision.reset_at;
        a.seen = now;
        if tokens > 0 {
            // A new batch replaces what is left of the last one, which goes back: each
            // allowance has one deadline and one slot.
            unspent.extend(a.take_unspent().map(|u| (key, u)));
            a.tokens = tokens;
            a.until = asked + ALLOWANCE_TTL;
            a.at_slot = take.at_slot;
        }
        if now < a.until {
            a.tokens
        } else {
            0
        }
    }

    /// Clears the mark of a batch being asked for, once the answer is kept or lost, and
    /// wakes the requests waiting for it.
    fn batch_done(&self, key: LimitKey) {
        if let Some(a) = self.lock().by_key.get_mut(&key) {
            a.batching = false;
            a.arrived.notify_waiters();
        }
    }

    /// True while a batch of `key` is being asked for.
    fn batching(&self, key: LimitKey) -> bool {
        self.lock().by_key.get(&key).is_some_and(|a| a.batching)
    }

    /// Spends one request of `key`'s quota of `per_minute`, shared with every node.
    pub async fn check(&self, key: LimitKey, per_minute: u32) -> Decision {
        let mut may_wait = true;
        let want = loop {
            let asked = Instant::now();
            match self.spend(key, per_minute, asked, may_wait) {
                Next::Spent(decision, 0) => return decision,
                Next::Spent(decision, refill) => {
                    // Allowed already; this request also asks for the next batch, so that
                    // the others keep spending without waiting for it.
                    let _mark = BatchMark { limiter: self, key };
                    if let Err(failure) = self.take(key, per_minute, refill, asked, false).await {
                        self.warn(now_nanos() / 1_000_000, &failure);
                    }
                    return decision;
                }
                Next::Wait(arrived) => {
                    // Registered before the check, so the wake-up cannot be missed.
                    let arrival = arrived.notified();
                    tokio::pin!(arrival);
                    arrival.as_mut().enable();
                    if self.batching(key) && tokio::time::timeout(SHARED_TIMEOUT, arrival).await.is_err() {
                        // The database has not answered the batch in time: decide here
                        // rather than wait for it again with a round trip of its own.
                        return self.fall_back(key, per_minute, "no batch within the time limit");
                    }
                    may_wait = false;
                }
                Next::Ask(want) => break (want, asked),
            }
        };
        let (want, asked) = want;
        // Clears the batch mark however this ends, including when the request is dropped.
        let _mark = (want > 1).then(|| BatchMark { limiter: self, key });
        match self.take(key, per_minute, want, asked, true).await {
            Ok(decision) => decision,
            Err(failure) => self.fall_back(key, per_minute, &failure),
        }
    }

    /// Decides with this node's own window when the database did not answer (logged).
    fn fall_back(&self, key: LimitKey, per_minute: u32, failure: &str) -> Decision {
        let now = now_nanos();
        self.warn(now / 1_000_000, failure);
        self.fallback.check_at(key, per_minute, now)
    }

    /// One round trip taking up to `want` requests of `key`'s quota, asked for at `asked`:
    /// one of them for this request when `for_me`, the rest kept as this node's allowance.
    async fn take(
        &self,
        key: LimitKey,
        limit: u32,
        want: u32,
        asked: Instant,
        for_me: bool,
    ) -> Result<Decision, String> {
        let bucket = key.bucket();
        let take = self.store.take_rate(&bucket, limit, WINDOW_MS, want);
        match tokio::time::timeout(SHARED_TIMEOUT, take).await {
            Ok(Ok(take)) => {
                let mut decision = shared_decision(take, limit, now_nanos() / 1_000_000);
                let kept = u32::try_from(take.granted.saturating_sub(i64::from(for_me))).unwrap_or(0);
                let tokens = self.keep(key, &take, &decision, asked, kept);
                decision.remaining = decision.remaining.saturating_add(tokens).min(limit);
                Ok(decision)
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} ms", SHARED_TIMEOUT.as_millis())),
        }
    }

    /// Logs a failure of the shared store, at most once per [`WARN_EVERY_MS`].
    fn warn(&self, now_ms: u64, failure: &str) {
        let last = self.warned_at.load(Ordering::Relaxed);
        if now_ms >= last + WARN_EVERY_MS
            && self.warned_at.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(error = %failure, "shared rate limit unavailable: this node limits on its own");
        }
    }

    /// Gives back to the database what allowances expired at `now` (every allowance with
    /// `all`) left unspent. A give-back that fails leaves those requests counted: a few
    /// fewer may pass in that window, never more.
    pub async fn give_back(&self, now: Instant, all: bool) {
        let unspent = self.lock().collect_unspent(now, all);
        for (key, Unspent { at_slot, count }) in unspent {
            let bucket = key.bucket();
            let give = self.store.give_back_rate(&bucket, at_slot, count);
            let failure = match tokio::time::timeout(SHARED_TIMEOUT, give).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {} ms", SHARED_TIMEOUT.as_millis()),
            };
            self.warn(now_nanos() / 1_000_000, &failure);
        }
    }
}

/// Clears a key's batch mark when dropped.
struct BatchMark<'a> {
    limiter: &'a SharedLimiter,
    key: LimitKey,
}

impl Drop for BatchMark<'_> {
    fn drop(&mut self) {
        self.limiter.batch_done(self.key);
    }
}

/// The headers' view of what the database decided, at `now_ms` on this node's clock (the
/// database reports durations, so the clocks of nodes and database need not agree).
fn shared_decision(take: RateTake, limit: u32, now_ms: u64) -> Decision {
    let millis = |ms: i64| u64::try_from(ms).unwrap_or(0);
    let retry_after = millis(take.retry_ms).div_ceil(1000).clamp(1, WINDOW_MS / 1000);
    Decision {
        allowed: take.allowed(),
        limit,
        remaining: u32::try_from(take.remaining.clamp(0, i64::from(limit))).unwrap_or(0),
        reset_at: (now_ms + millis(take.reset_ms)).div_ceil(1000),
        retry_after: if take.allowed() { 0 } else { retry_after },
    }
}

/// How many requests to take per round trip when `remaining` were left at the last one:
/// a sixteenth of them, at most [`MAX_BATCH`], and one at a time below [`BATCH_FROM`].
fn batch_size(remaining: u32) -> u32 {
    if i64::from(remaining) < BATCH_FROM {
        1
    } else {
        (remaining / 16).clamp(1, MAX_BATCH)
    }
}

#[cfg(test)]
mod tests;
