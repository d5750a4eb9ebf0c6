//! The outbox's claims without a server: concurrent workers never lease one message twice.

use std::collections::HashSet;

use chrono::{TimeDelta, Utc};
use rehome::store::Store;

use super::*;
use crate::helpers::{open_store, spawn_app};

/// Claims until the outbox has nothing due for `owner`; answers the ids it got.
async fn drain(store: Store, owner: &'static str) -> Vec<i64> {
    let mut ids = Vec::new();
    loop {
        let now = Utc::now();
        let claimed = store.claim_mail(owner, now, now + TimeDelta::minutes(5), 3).await.expect("claim");
        if claimed.is_empty() {
            return ids;
        }
        ids.extend(claimed.iter().map(|m| m.id));
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn concurrent_claims_never_lease_one_message_twice() {
    // No mail settings: the server's own worker is off and the test's stores do the claiming.
    let app = spawn_app().await;
    const N: usize = 90;
    let subjects: Vec<String> = (0..N).map(|i| format!("Message {i}")).collect();
    let mails: Vec<_> = subjects.iter().map(|s| plain("zoe@brand.example", s, "Hello")).collect();
    enqueue(&app, &mails).await;

    // Three workers, each with a store (a pool) of its own, as on three nodes.
    let owners = ["a", "b", "c"];
    let mut tasks = Vec::new();
    for owner in owners {
        let store = open_store(&app.db.url).await;
        tasks.push(tokio::spawn(drain(store, owner)));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await.expect("claimer"));
    }
    let union: HashSet<i64> = all.iter().flatten().copied().collect();
    let total: usize = all.iter().map(Vec::len).sum();
    assert_eq!(total, N, "claims per worker: {:?}", all.iter().map(Vec::len).collect::<Vec<_>>());
    assert_eq!(union.len(), N, "a message was leased twice");

    // Each counts one attempt, and a leased message is not due for anyone else.
    let rows = outbox(&app).await;
    assert!(rows.iter().all(|r| r.attempts == 1), "{rows:?}");
    let now = Utc::now();
    assert!(app.store.claim_mail("d", now, now + TimeDelta::minutes(5), 100).await.expect("claim").is_empty());
    // Released leases are due again at once.
    for owner in owners {
        app.store.release_mail_leases(owner).await.expect("release");
    }
    let again = app.store.claim_mail("d", now, now + TimeDelta::minutes(5), 100).await.expect("claim");
    assert_eq!(again.len(), N);
    assert!(again.iter().all(|m| m.attempts == 2));
    app.stop().await;
}
