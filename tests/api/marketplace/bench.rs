//! The orders benchmark behind docs/performance.md ("Marketplace flows"). Ignored in the
//! normal run; run it in release:
//!
//! ```sh
//! cargo test --release --test api marketplace::bench -- --ignored --nocapture
//! ```
//!
//! 64 concurrent buyers (each its own keep-alive connection) order one unit at a time from
//! one clearance listing with 10,000 units until it sells out; the run then checks that
//! exactly 10,000 orders succeeded, the listing is closed at zero, and the database holds
//! 10,000 orders for it (read through the collections list). `REHOME_BENCH_BUYERS` changes the number of buyers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{listing, market_app, OPS_TOKEN};
use crate::helpers::json;

const STOCK: i64 = 10_000;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: cargo test --release --test api marketplace::bench -- --ignored --nocapture"]
async fn orders_per_second_on_one_listing_under_concurrent_buyers() {
    let buyers: usize = std::env::var("REHOME_BENCH_BUYERS").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({"channel": "clearance", "quantity": STOCK})).await;
    let url = Arc::new(app.url("/ops/v1/orders"));
    let started = Instant::now();
    let tasks: Vec<_> = (0..buyers)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                let client = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
                let (mut sold, mut refused, mut latencies) = (0_i64, 0_i64, Vec::new());
                loop {
                    let t = Instant::now();
                    let response =
                        client.post(url.as_str()).bearer_auth(OPS_TOKEN).json(&json!({"listing_id": id})).send().await;
                    let status = response.map(|r| r.status().as_u16()).unwrap_or(0);
                    latencies.push(t.elapsed());
                    match status {
                        201 => sold += 1,
                        409 => {
                            refused += 1;
                            break;
                        }
                        other => panic!("order answered {other}"),
                    }
                }
                (sold, refused, latencies)
            })
        })
        .collect();
    let (mut sold, mut refused, mut latencies) = (0, 0, Vec::<Duration>::new());
    for task in tasks {
        let (s, r, l) = task.await.unwrap();
        sold += s;
        refused += r;
        latencies.extend(l);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    println!(
        "buyers {buyers}: {sold} orders in {:.2} s = {:.0} orders/s; {refused} refused after sell-out; \
         latency p50 {:?} p90 {:?} p99 {:?} max {:?}; listing quantity {} status {}",
        elapsed.as_secs_f64(),
        sold as f64 / elapsed.as_secs_f64(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        latencies[latencies.len() - 1],
        detail["quantity"],
        detail["status"],
    );
    let orders = json(app.get("/v1/partner/collections?per_page=1", &partner.key).await).await;
    println!("orders recorded: {}", orders["meta"]["total"]);
    assert_eq!(sold, STOCK, "exactly the stock was sold");
    assert_eq!(orders["meta"]["total"], STOCK, "one order row per sale");
    assert_eq!((detail["quantity"].as_i64(), detail["status"].as_str()), (Some(0), Some("closed")));
}
