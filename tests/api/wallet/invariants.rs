//! A property: after any sequence of sales, trade-in choices and runs, every balance is
//! what an independent model of the rules says, and `lifetime = available + pending + paid`.

use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, SubsecRound, TimeDelta, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

use super::{all_entries, delivered_sale, run, traded_in, wallet, wallet_app};
use crate::helpers::{json, Partner, TestApp};

#[derive(Debug, Clone)]
enum Op {
    Sale { pence: i64, delivery: u32, units: i64, hours_ago: i64 },
    TradeIn { pence: i64, credit: bool, hours_ago: i64 },
    Run { hours_ago: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1i64..500_000, prop::sample::select(vec![0u32, 30, 60, 129]), 1i64..4, 0i64..120)
            .prop_map(|(pence, delivery, units, hours_ago)| Op::Sale { pence, delivery, units, hours_ago }),
        2 => (1i64..500_000, any::<bool>(), 0i64..120)
            .prop_map(|(pence, credit, hours_ago)| Op::TradeIn { pence, credit, hours_ago }),
        2 => (0i64..100).prop_map(|hours_ago| Op::Run { hours_ago }),
    ]
}

/// The model's entry: amount, when available, paid or not.
struct Expected {
    amount: i64,
    available_at: DateTime<Utc>,
    paid: bool,
}

fn half_up(value: i64, percent: i64) -> i64 {
    (value * percent + 50) / 100
}

/// Decisions 3.3 for a clearance unit, written again here as the oracle.
fn clearance_payout(price: i64, delivery_gbp: u32) -> i64 {
    let commission = half_up(price, 15);
    (price - commission - half_up(commission, 20) - i64::from(delivery_gbp) * 100).max(0)
}

fn ago(hours: i64) -> DateTime<Utc> {
    (Utc::now() - TimeDelta::hours(hours)).trunc_subsecs(6)
}

fn gbp(pence: i64) -> serde_json::Value {
    serde_json::from_str(&format!("{}.{:02}", pence / 100, pence % 100)).unwrap()
}

async fn check(app: &TestApp, partner: &Partner, ops: &[Op]) {
    let mut model: Vec<Expected> = Vec::new();
    for op in ops {
        match *op {
            Op::Sale { pence, delivery, units, hours_ago } => {
                let at = ago(hours_ago);
                delivered_sale(app, partner, gbp(pence), delivery, units, at).await;
                let amount = units * clearance_payout(pence, delivery);
                model.push(Expected { amount, available_at: at + TimeDelta::hours(48), paid: false });
            }
            Op::TradeIn { pence, credit, hours_ago } => {
                let at = ago(hours_ago);
                traded_in(app, partner, gbp(pence), if credit { "credit" } else { "cash" }, at).await;
                if credit {
                    model.push(Expected { amount: pence, available_at: at + TimeDelta::hours(48), paid: false });
                }
            }
            Op::Run { hours_ago } => {
                let as_of = ago(hours_ago);
                run(app, Some(as_of)).await;
                for e in model.iter_mut().filter(|e| e.available_at <= as_of) {
                    e.paid = true;
                }
            }
        }
    }
    let now = Utc::now();
    let sum = |f: &dyn Fn(&Expected) -> bool| model.iter().filter(|e| f(e)).map(|e| e.amount).sum::<i64>();
    let paid = sum(&|e| e.paid);
    let available = sum(&|e| !e.paid && e.available_at <= now);
    let pending = sum(&|e| !e.paid && e.available_at > now);

    let w = wallet(app, partner).await;
    let got = |k: &str| w[k].as_i64().unwrap();
    assert_eq!(got("lifetime_pence"), got("available_pence") + got("pending_pence") + got("paid_pence"), "{w}");
    assert_eq!(
        (got("paid_pence"), got("available_pence"), got("pending_pence")),
        (paid, available, pending),
        "{ops:?}"
    );

    let entries = all_entries(app, partner).await;
    assert_eq!(entries.len(), model.len());
    let entry_sum: i64 = entries.iter().map(|e| e["amount_pence"].as_i64().unwrap()).sum();
    assert_eq!(entry_sum, got("lifetime_pence"));
    let list = json(app.get("/v1/remittances?per_page=100", &partner.key).await).await;
    let remitted: i64 =
        list["data"].as_array().unwrap().iter().map(|r| r["totals"]["amount_pence"].as_i64().unwrap()).sum();
    assert_eq!(remitted, paid, "the statements pay exactly what the wallet calls paid");
}

#[test]
fn balances_are_what_the_rules_say_after_any_sequence_of_sales_choices_and_runs() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let app = runtime.block_on(wallet_app());
    let brands = AtomicUsize::new(0);
    let config = ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new(config);
    let outcome = runner.run(&prop::collection::vec(op(), 1..10), |ops| {
        runtime.block_on(async {
            let partner = app.partner(&format!("brand{}", brands.fetch_add(1, Ordering::Relaxed))).await;
            check(&app, &partner, &ops).await;
        });
        Ok(())
    });
    runtime.block_on(app.stop());
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
