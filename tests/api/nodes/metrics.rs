//! Metrics with two nodes on one database (decisions 13.1–13.2): each node counts the
//! requests it answered, and both read the same outbox gauges from the database.

use super::*;
use crate::metrics::{scrape_at, value};

/// Webhook events wait in the outbox: the brand's endpoint refuses connections, so each
/// attempt fails and is retried later.
const CLOSED_PORT: &str = "http://127.0.0.1:9/hook";

#[tokio::test]
async fn each_node_counts_its_own_requests_and_both_read_the_same_outbox() {
    let env = [("REHOME_METRICS_ADDR", "127.0.0.1:0")];
    let Some(cluster) = Cluster::start("each_node_counts_its_own_requests", 10_000, &env).await else { return };
    let api = &cluster.api;
    let metrics =
        |node: usize| cluster.nodes[node].metrics_addr.clone().expect("the node's metrics address in its log");

    // Three webhook events, emitted through either node, wait in the outbox.
    api.patch(0, WEBHOOK, json!({ "url": CLOSED_PORT })).await.expect(200, "set the webhook URL");
    for node in [0, 1, 0] {
        api.post(node, &format!("{WEBHOOK}/test"), json!({})).await.expect(200, "send a test event");
    }
    // A listing read 5 times through node a and twice through node b.
    let id = api.create_listing(0, json!({})).await["id"].clone();
    let detail = format!("/v1/listings/{id}");
    for node in [0, 0, 1, 0, 0, 1, 0] {
        api.get(node, &detail).await.expect(200, "read the listing");
    }

    let (a, b) = (scrape_at(&metrics(0)).await, scrape_at(&metrics(1)).await);
    let reads = [("method", "GET"), ("route", "/v1/listings/{id}"), ("status", "200")];
    assert_eq!(value(&a, "rehome_http_requests_total", &reads), Some(5.0), "node a's reads");
    assert_eq!(value(&b, "rehome_http_requests_total", &reads), Some(2.0), "node b's reads");
    let create = [("method", "POST"), ("route", "/v1/listings"), ("status", "201")];
    assert_eq!(value(&a, "rehome_http_requests_total", &create), Some(1.0));
    assert_eq!(value(&b, "rehome_http_requests_total", &create), None, "node b created nothing");

    // The outbox is the database's: the same on both nodes, whichever emitted the events.
    let events = cluster.events().await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events.values().all(|status| status == "pending"), "{events:?}");
    for (node, samples) in [("a", &a), ("b", &b)] {
        assert_eq!(value(samples, "rehome_webhook_outbox_pending", &[]), Some(3.0), "node {node}");
        assert_eq!(value(samples, "rehome_jobs_pending", &[("queue", "webhooks")]), Some(3.0), "node {node}");
    }
    let age = |samples| value(samples, "rehome_webhook_outbox_oldest_age_seconds", &[]).expect("the oldest age");
    let (age_a, age_b) = (age(&a), age(&b));
    assert!(age_a >= 0.0 && age_b >= 0.0, "{age_a} {age_b}");
    // The same event, read a moment apart.
    assert!((age_a - age_b).abs() < 5.0, "{age_a} {age_b}");
}
