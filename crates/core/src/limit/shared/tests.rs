use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::limit::{SEC, T0};
use rehome_store::PgStore;

fn take(allowed: bool, remaining: i64, reset_ms: i64, retry_ms: i64) -> RateTake {
    RateTake { granted: i64::from(allowed), remaining, reset_ms, retry_ms, at_slot: 0 }
}

#[test]
fn batches_only_far_from_the_limit() {
    assert_eq!(batch_size(0), 1);
    assert_eq!(batch_size(59), 1);
    assert_eq!(batch_size(1023), 1);
    assert_eq!(batch_size(1024), 64);
    assert_eq!(batch_size(4096), 256);
    assert_eq!(batch_size(u32::MAX), MAX_BATCH);
}

#[test]
fn a_shared_admission_reports_no_retry_and_the_reset_in_unix_seconds() {
    let now_ms = T0 / 1_000_000 + 250;
    let d = shared_decision(take(true, 4, 60_000, 0), 5, now_ms);
    assert_eq!(d, Decision { allowed: true, limit: 5, remaining: 4, reset_at: T0 / SEC + 61, retry_after: 0 });
}

#[test]
fn a_shared_refusal_rounds_retry_up_to_whole_seconds_between_one_and_sixty() {
    let now_ms = T0 / 1_000_000;
    assert_eq!(shared_decision(take(false, 0, 59_000, 1), 5, now_ms).retry_after, 1);
    assert_eq!(shared_decision(take(false, 0, 59_000, 1_001), 5, now_ms).retry_after, 2);
    assert_eq!(shared_decision(take(false, 0, 60_100, 60_100), 5, now_ms).retry_after, 60);
    assert_eq!(shared_decision(take(false, 0, 0, 0), 5, now_ms).retry_after, 1);
    let d = shared_decision(take(false, -3, -1, 500), 5, now_ms);
    assert_eq!((d.remaining, d.reset_at), (0, T0 / SEC));
}

#[test]
fn a_lowered_quota_never_reports_more_remaining_than_the_limit() {
    assert_eq!(shared_decision(take(true, 50, 1_000, 0), 5, T0 / 1_000_000).remaining, 5);
}

#[tokio::test]
async fn without_the_shared_store_a_node_still_limits_on_its_own() {
    // The database does not answer: every check fails over to the local window.
    let limiter = offline_limiter().await;
    assert!(limiter.check(LimitKey::Key(1), 2).await.allowed);
    assert!(limiter.check(LimitKey::Key(1), 2).await.allowed);
    let refused = limiter.check(LimitKey::Key(1), 2).await;
    assert!(!refused.allowed);
    assert!((1..=60).contains(&refused.retry_after));
}

/// A limiter whose store is never reached: these tests drive its allowances directly.
async fn offline_limiter() -> SharedLimiter {
    SharedLimiter::new(PgStore::unreachable().await)
}

fn granted(count: i64, remaining: i64, at_slot: i64) -> RateTake {
    RateTake { granted: count, remaining, reset_ms: 60_000, retry_ms: 0, at_slot }
}

/// Keeps a round trip's answer as `take` does (one of the grant for the asking
/// request); returns the tokens held.
fn answer(limiter: &SharedLimiter, key: LimitKey, take: RateTake, asked: Instant) -> u32 {
    let decision = shared_decision(take, 100_000, T0 / 1_000_000);
    let kept = u32::try_from(take.granted - 1).unwrap();
    limiter.keep(key, &take, &decision, asked, kept)
}

/// What `spend` said, without the notifier.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    Spent { remaining: u32, refill: u32 },
    Wait,
    Ask(u32),
}

fn spend(limiter: &SharedLimiter, key: LimitKey, now: Instant, may_wait: bool) -> Said {
    match limiter.spend(key, 100_000, now, may_wait) {
        Next::Spent(d, refill) => Said::Spent { remaining: d.remaining, refill },
        Next::Wait(_) => Said::Wait,
        Next::Ask(want) => Said::Ask(want),
    }
}

const B: u32 = MAX_BATCH;

/// A key with an allowance of a batch less one, counted in slot 12, asked for at `t`.
async fn with_a_batch(limiter: &SharedLimiter, key: LimitKey, t: Instant) {
    assert_eq!(spend(limiter, key, t, true), Said::Ask(1), "nothing known of the key yet");
    assert_eq!(answer(limiter, key, granted(1, 99_999, 10), t), 0);
    assert_eq!(spend(limiter, key, t, true), Said::Ask(B), "far from the limit: a batch");
    assert_eq!(answer(limiter, key, granted(B.into(), 99_999 - i64::from(B), 12), t), B - 1);
    limiter.batch_done(key);
}

#[tokio::test]
async fn one_batch_is_asked_for_at_a_time_and_the_next_ahead_of_need() {
    let limiter = offline_limiter().await;
    let key = LimitKey::Key(1);
    let t = Instant::now();
    assert_eq!(spend(&limiter, key, t, true), Said::Ask(1));
    answer(&limiter, key, granted(1, 99_999, 10), t);
    assert_eq!(spend(&limiter, key, t, true), Said::Ask(B));
    assert_eq!(spend(&limiter, key, t, true), Said::Wait, "a batch is on its way");
    assert_eq!(spend(&limiter, key, t, false), Said::Ask(1), "after one wait, a request asks alone");
    let left_in_db = 99_999 - B;
    assert_eq!(answer(&limiter, key, granted(B.into(), left_in_db.into(), 12), t), B - 1);
    limiter.batch_done(key);
    let soon = t + Duration::from_millis(10);
    for held in (B / 2 + 1..B - 1).rev() {
        assert_eq!(spend(&limiter, key, soon, true), Said::Spent { remaining: left_in_db + held, refill: 0 });
    }
    assert_eq!(
        spend(&limiter, key, soon, true),
        Said::Spent { remaining: left_in_db + B / 2, refill: B },
        "half a batch left: this request asks for the next one ahead"
    );
    assert_eq!(spend(&limiter, key, soon, true), Said::Spent { remaining: left_in_db + B / 2 - 1, refill: 0 });
    // The next batch replaces what is left, which is set aside to be given back.
    let refill = granted(B.into(), (left_in_db - B).into(), 13);
    let decision = shared_decision(refill, 100_000, T0 / 1_000_000);
    assert_eq!(limiter.keep(key, &refill, &decision, soon, B), B);
    limiter.batch_done(key);
    let a = limiter.lock().by_key.get(&key).map(|a| (a.until, a.at_slot)).unwrap();
    assert_eq!(a, (soon + ALLOWANCE_TTL, 13));
    assert_eq!(limiter.lock().unspent, vec![(key, Unspent { at_slot: 12, count: B / 2 - 1 })]);
}

#[tokio::test]
async fn unspent_tokens_are_set_aside_for_giving_back_once_expired() {
    let limiter = offline_limiter().await;
    let (key, other) = (LimitKey::Key(1), LimitKey::Key(2));
    let t = Instant::now();
    for k in [key, other] {
        with_a_batch(&limiter, k, t).await;
        assert!(matches!(spend(&limiter, k, t, true), Said::Spent { .. }));
    }
    let expired = t + ALLOWANCE_TTL;
    // A request after expiry sets the rest aside instead of spending it.
    assert_eq!(spend(&limiter, key, expired, true), Said::Ask(B));
    assert_eq!(limiter.lock().unspent, vec![(key, Unspent { at_slot: 12, count: B - 2 })]);
    limiter.batch_done(key);
    // The upkeep collects the set-aside and every other expired allowance.
    let mut collected = limiter.lock().collect_unspent(expired, false);
    collected.sort_by_key(|(k, _)| k.bucket());
    let both = vec![(key, Unspent { at_slot: 12, count: B - 2 }), (other, Unspent { at_slot: 12, count: B - 2 })];
    assert_eq!(collected, both);
    assert!(limiter.lock().collect_unspent(expired, false).is_empty(), "given back once");
    // Records idle for a while are forgotten.
    limiter.lock().collect_unspent(t + FORGET_AFTER + Duration::from_millis(1), false);
    assert!(limiter.lock().by_key.is_empty());
}

#[tokio::test]
async fn a_stopping_node_sets_aside_even_unexpired_tokens() {
    let limiter = offline_limiter().await;
    let key = LimitKey::Key(1);
    let t = Instant::now();
    with_a_batch(&limiter, key, t).await;
    assert!(limiter.lock().collect_unspent(t, false).is_empty(), "not expired yet");
    assert_eq!(limiter.lock().collect_unspent(t, true), vec![(key, Unspent { at_slot: 12, count: B - 1 })]);
    assert_eq!(spend(&limiter, key, t, true), Said::Ask(B), "nothing left to spend");
}

#[tokio::test]
async fn a_request_waiting_for_a_batch_is_woken_when_it_arrives_or_is_lost() {
    let limiter = Arc::new(offline_limiter().await);
    let key = LimitKey::Key(1);
    let t = Instant::now();
    answer(&limiter, key, granted(1, 99_999, 10), t);
    assert_eq!(spend(&limiter, key, t, true), Said::Ask(B));
    // The waiter finds no batch, and after waking asks the (absent) database alone:
    // the offline store fails, so its own window decides.
    let waiter = tokio::spawn({
        let limiter = limiter.clone();
        async move { limiter.check(key, 100_000).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "it waits for the batch");
    limiter.batch_done(key);
    let decision = tokio::time::timeout(Duration::from_secs(1), waiter).await.expect("woken").unwrap();
    assert!(decision.allowed);
}

#[tokio::test]
async fn keys_near_their_limit_are_not_tracked() {
    let limiter = offline_limiter().await;
    for id in 0..100 {
        assert_eq!(answer(&limiter, LimitKey::Key(id), granted(1, 59, 10), Instant::now()), 0);
    }
    assert!(limiter.lock().by_key.is_empty());
}
