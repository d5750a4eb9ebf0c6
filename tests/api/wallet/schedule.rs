//! The monthly scheduler (decisions 10.4): nothing is issued on a deployment's first start;
//! a month whose run did not happen (the service was down at midnight) is run when a node
//! comes back, as of the 1st, 00:00 UTC, once.

use std::time::Duration;

use chrono::{Datelike, NaiveDate};
use serde_json::json;

use super::{delivered_sale, hours_ago};
use crate::helpers::{json, on_raw, poll, spawn_app_on};
use crate::marketplace::OPS_TOKEN;
use crate::webhooks::webhook_app;

#[tokio::test]
async fn a_missed_month_is_run_when_a_node_comes_back_and_a_first_start_issues_nothing() {
    let app = webhook_app(|c| {
        c.ops_token = Some(OPS_TOKEN.into());
        c.remittance_poll_ms = 50;
    })
    .await;
    let partner = app.partner("acme").await;
    // Delivered 40 days ago: available well before this month's 1st.
    delivered_sale(&app, &partner, json!(100), 0, 1, hours_ago(40 * 24)).await;
    // The scheduler has started: it recorded this month as done.
    let first = app.db.raw().await;
    let runs = "SELECT COUNT(*) FROM remittance_runs WHERE finished_at IS NOT NULL";
    let started = || async {
        let n: i64 = on_raw!(&first, |pool| sqlx::query_scalar(runs).fetch_one(pool).await.unwrap());
        (n > 0).then_some(())
    };
    poll(Duration::from_secs(10), started).await.expect("the scheduler never started");
    first.close().await;
    let list = json(app.get("/v1/remittances", &partner.key).await).await;
    assert_eq!(list["meta"]["total"], 0, "a first start must not issue: {list}");

    // The last run on record is last month's: this month's was missed.
    let today = chrono::Utc::now().date_naive();
    let this_month = NaiveDate::from_ymd_opt(today.year(), today.month(), 1).unwrap();
    let last_month = this_month - chrono::Months::new(1);
    let (db, dir) = app.stop_and_keep().await;
    let raw = db.raw().await;
    raw.execute("DELETE FROM remittance_runs").await;
    raw.execute(&format!(
        "INSERT INTO remittance_runs (period_end, lease_owner, finished_at)
         VALUES ('{last_month}T00:00:00.000000Z', 'earlier', '{last_month}T00:00:05.000000Z')"
    ))
    .await;

    let app = spawn_app_on(db, dir, |c| {
        c.ops_token = Some(OPS_TOKEN.into());
        c.remittance_poll_ms = 50;
    })
    .await;
    let read = || async { json(app.get("/v1/remittances", &partner.key).await).await };
    poll(Duration::from_secs(5), || async { Some(read().await).filter(|l| l["meta"]["total"] == 1) }).await;
    let list = read().await;
    assert_eq!(list["meta"]["total"], 1, "{list}");
    assert_eq!(list["data"][0]["period_end"], format!("{this_month}T00:00:00.000000Z"));
    // The run records its month finished after it has issued the statements: wait for it.
    let done = || async {
        let done: i64 = on_raw!(&raw, |pool| sqlx::query_scalar(
            "SELECT COUNT(*) FROM remittance_runs WHERE finished_at IS NOT NULL"
        )
        .fetch_one(pool)
        .await
        .unwrap());
        (done == 2).then_some(())
    };
    // Later polls find the month done and issue nothing more (a run claims a month only
    // while it is not finished).
    poll(Duration::from_secs(5), done).await.expect("this month's run is recorded done");
    assert_eq!(json(app.get("/v1/remittances", &partner.key).await).await["meta"]["total"], 1);
}
