//! Webhooks with both nodes running their workers: every event exactly once, and a node
//! killed mid-delivery whose work the other finishes.

use super::*;

/// Waits until the receiver has had no new request for `quiet` (a duplicate still in flight
/// would arrive within it: only time shows that one does not come); returns the hits.
async fn settle(receiver: &Receiver, quiet: Duration) -> Vec<Hit> {
    let last = std::cell::Cell::new((receiver.hits().len(), Instant::now()));
    let quieted = || async {
        let (seen, since) = last.get();
        let now = receiver.hits().len();
        if now != seen {
            last.set((now, Instant::now()));
            return None;
        }
        (since.elapsed() >= quiet).then(|| receiver.hits())
    };
    crate::helpers::poll(Duration::from_secs(30), quieted).await.expect("the receiver never went quiet")
}

/// Hits per event id.
fn hits_per_event(hits: &[Hit]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for hit in hits {
        *counts.entry(hit.event_id()).or_insert(0) += 1;
    }
    counts
}

/// Places `n` single-unit orders of a clearance listing of `n` units and schedules each
/// order's collection, the i-th of each through node `via(i)`: `n` events
/// `collection.scheduled`. Returns the collections' ids.
async fn emit_collections(cluster: &Cluster, n: usize, via: impl Fn(usize) -> usize) -> Vec<String> {
    let api = &cluster.api;
    let listing_id = api.create_listing(via(0), json!({"channel": "clearance", "quantity": n})).await["id"].clone();
    let orders = at_once(n, |i| {
        let api = api.clone();
        let body = json!({ "listing_id": listing_id });
        let node = via(i);
        async move { api.ops(node, "/orders", body).await }
    })
    .await;
    assert_eq!(count(&orders, 201), n, "{:?}", summary(&orders));
    let orders: Vec<Value> = orders.into_iter().map(|o| o.body).collect();
    let scheduled = at_once(n, |i| {
        let api = api.clone();
        let body = json!({"order_id": orders[i]["id"], "scheduled_for": orders[i]["buyer_window_start"]});
        let node = via(i);
        async move { api.post(node, COLLECTIONS, body).await }
    })
    .await;
    assert_eq!(count(&scheduled, 201), n, "{:?}", summary(&scheduled));
    scheduled.iter().map(|c| c.body["id"].as_str().expect("collection id").to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_both_nodes_delivering_a_receiver_sees_every_event_exactly_once() {
    let Some(mut cluster) = Cluster::start("webhooks exactly once", 100_000, &[]).await else {
        return;
    };
    const M: usize = 30;
    let receiver = Receiver::start().await;
    cluster.configure_webhook(&receiver).await;
    // Half the events are written through each node (each wakes its own worker).
    let collections = emit_collections(&cluster, M, |i| i % 2).await;

    let events = cluster.wait_all_delivered(M, Duration::from_secs(30)).await;
    let hits = settle(&receiver, Duration::from_secs(1)).await;
    let per_event = hits_per_event(&hits);
    let twice: Vec<_> = per_event.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    let received: HashSet<&String> = per_event.keys().collect();
    let written: HashSet<&String> = events.keys().collect();
    assert_eq!(received, written, "every event, and only those, reached the receiver");
    assert_eq!(hits.len(), M);
    let data_ids: HashSet<String> = hits
        .iter()
        .map(|h| serde_json::from_slice::<Value>(&h.body).unwrap()["data"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(data_ids, collections.iter().cloned().collect::<HashSet<_>>());
    let attempts = cluster.attempts().await;
    assert!(attempts.values().all(|n| *n == 1), "one recorded attempt per event: {attempts:?}");

    // No event was attempted by both workers. (Which node delivers what is up to their
    // timing: both are offered the oldest due events, so one may win every claim.)
    let by_a: HashSet<String> = cluster.nodes[0].attempted_events().into_iter().collect();
    let by_b: HashSet<String> = cluster.nodes[1].attempted_events().into_iter().collect();
    eprintln!("exactly once: node a attempted {}, node b {}", by_a.len(), by_b.len());
    assert!(by_a.is_disjoint(&by_b), "attempted by both: {:?}", by_a.intersection(&by_b).collect::<Vec<_>>());
    assert_eq!(by_a.len() + by_b.len(), M);
    cluster.assert_no_trouble();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_killed_mid_delivery_leaves_its_events_to_the_other_node() {
    // A 2 s timeout makes a lease 2 × 2 s + 1 s = 5 s (crates/core/src/jobs/webhooks.rs), longer than
    // the receiver's 1.5 s answers; 4 deliveries at a time make the work last a while.
    let env = [("REHOME_WEBHOOK_TIMEOUT_MS", "2000"), ("REHOME_WEBHOOK_CONCURRENCY_PER_ENDPOINT", "4")];
    // A starts alone, so that it certainly holds leases when it dies: with both running,
    // either node may win every claim (both are offered the oldest due events).
    let Some(mut cluster) = Cluster::start_nodes("kill mid-delivery", 100_000, &env, &["a"]).await else {
        return;
    };
    const M: usize = 24;
    let receiver = Receiver::start().await;
    receiver.otherwise(Reply::Slow(Duration::from_millis(1500), 200));
    cluster.configure_webhook(&receiver).await;
    // A delivers 4 at a time to the slow receiver: about 9 s of work.
    emit_collections(&cluster, M, |_| 0).await;
    let ids: HashSet<String> = cluster.events().await.into_keys().collect();
    assert_eq!(ids.len(), M);
    receiver.wait_for_hits(1, Duration::from_secs(10)).await;
    // B joins while A is mid-delivery; then A dies.
    cluster.add_node("b", &env).await;

    cluster.nodes[0].kill();
    let killed_at = Instant::now();
    // A is gone: its leases stay as they are until they run out. (A statement A had already
    // sent may still be running in its database session for a moment: let it end first.)
    tokio::time::sleep(Duration::from_millis(300)).await;
    let at_kill = cluster.leases().await;
    assert!(receiver.hits().len() < M, "killed before the work was done");

    // Until everything is delivered, note every lease that was not there at the kill: those
    // are B's (A can take none), which tells B's lease owner id from A's.
    let frozen: HashSet<(String, String, String)> = at_kill.iter().cloned().collect();
    let owners = std::cell::RefCell::new(HashSet::new());
    let delivered = || async {
        for lease in cluster.leases().await {
            if !frozen.contains(&lease) {
                owners.borrow_mut().insert(lease.1);
            }
        }
        let events = cluster.events().await;
        let seen: HashSet<String> = receiver.hits().iter().map(Hit::event_id).collect();
        (events.values().all(|s| s == "delivered") && ids.iter().all(|id| seen.contains(id))).then_some(())
    };
    if crate::helpers::poll(Duration::from_secs(60), delivered).await.is_none() {
        panic!("not all delivered after the kill: {:?}", cluster.events().await);
    }
    let owners_of_b = owners.into_inner();
    let finished_after = killed_at.elapsed();
    assert_eq!(owners_of_b.len(), 1, "one lease owner after the kill: {owners_of_b:?}");
    let in_flight_at_a: HashSet<&String> =
        at_kill.iter().filter(|(_, owner, _)| !owners_of_b.contains(owner)).map(|(id, _, _)| id).collect();
    assert!(!in_flight_at_a.is_empty(), "node A held no lease when killed: {at_kill:?}");

    let hits = settle(&receiver, Duration::from_secs(1)).await;
    eprintln!(
        "kill mid-delivery: {} leases at the kill, {} of them A's; {} hits for {M} events; all delivered {finished_after:?} after the kill",
        at_kill.len(),
        in_flight_at_a.len(),
        hits.len()
    );
    for (id, n) in hits_per_event(&hits) {
        assert!(ids.contains(&id), "unknown event {id}");
        // A delivery A had sent when it died reached the receiver, but its answer did not
        // reach A: B sends it again after A's lease runs out. Only those may arrive twice.
        if in_flight_at_a.contains(&id) {
            assert!(n <= 2, "{id} (in flight at A) arrived {n} times");
        } else {
            assert_eq!(n, 1, "{id} was not in flight at A but arrived {n} times");
        }
    }
    // B finished A's work.
    let by_b: HashSet<String> = cluster.nodes[1].attempted_events().into_iter().collect();
    for id in &in_flight_at_a {
        assert!(by_b.contains(*id), "{id}, leased by A at the kill, was never attempted by B");
    }
    assert!(
        finished_after >= Duration::from_secs(2),
        "A's leases (5 s) cannot have been retaken after {finished_after:?}"
    );
    cluster.assert_no_trouble();
}
