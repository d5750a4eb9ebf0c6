//! Remittance runs (decisions 10.4): once per brand, numbered without gaps, idempotent, one
//! statement per brand with two nodes running at once, whole or nothing when killed.

use std::time::Duration;

use serde_json::json;

use super::{delivered_sale, hours_ago, run, statement, wallet, wallet_app};
use crate::helpers::{assert_error, binary_env, json, on_raw, Partner, TestApp, REHOME_BIN};
use crate::marketplace::{ops_post, OPS_TOKEN};

#[tokio::test]
async fn a_run_pays_what_is_available_once_and_numbers_each_brands_statements_in_sequence() {
    let app = wallet_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    delivered_sale(&app, &acme, json!(100), 0, 1, hours_ago(60)).await;
    delivered_sale(&app, &acme, json!(200), 30, 1, hours_ago(50)).await;
    delivered_sale(&app, &acme, json!(300), 0, 1, hours_ago(1)).await; // still held
    delivered_sale(&app, &beta, json!(50), 0, 1, hours_ago(49)).await;

    let issued = run(&app, None).await;
    assert_eq!(issued.len(), 2, "one statement per brand with available entries");
    assert_eq!(run(&app, None).await, Vec::<i64>::new(), "running again issues nothing new");

    let list = json(app.get("/v1/remittances", &acme.key).await).await;
    assert_eq!(list["meta"]["total"], 1);
    let first = &list["data"][0];
    assert!(first.get("lines").is_none(), "a list item has no lines: {first}");
    let id = first["id"].as_i64().unwrap();
    let s = statement(&app, &acme, id).await;
    assert_eq!(
        (s["number"].as_i64(), s["brand_id"].as_str(), s["line_count"].as_i64()),
        (Some(1), Some("acme"), Some(2))
    );
    // £100: 8,200; £200 with £30 delivery: 20,000 - 3,000 - 600 - 3,000 = 13,400.
    assert_eq!(s["totals"]["amount_pence"], 21_600);
    assert_eq!(s["totals"]["amount"], 216.0);
    assert_eq!(s["totals"]["gross_pence"], 30_000);
    let lines = s["lines"].as_array().unwrap();
    assert!(lines.iter().all(|l| l["status"] == "paid" && l["remittance_id"] == id));
    let w = wallet(&app, &acme).await;
    assert_eq!(
        [&w["paid_pence"], &w["pending_pence"], &w["available_pence"]],
        [&json!(21_600), &json!(24_600), &json!(0)]
    );

    // The next statement of the brand is number 2; the other brand's numbers are its own.
    let later = hours_ago(49);
    delivered_sale(&app, &acme, json!(10), 0, 1, later).await;
    let next = run(&app, None).await;
    assert_eq!(next.len(), 1);
    assert_eq!(statement(&app, &acme, next[0]).await["number"], 2);
    let beta_list = json(app.get("/v1/remittances", &beta.key).await).await;
    assert_eq!(beta_list["data"][0]["number"], 1);
    // Newest first.
    let list = json(app.get("/v1/remittances?per_page=1", &acme.key).await).await;
    assert_eq!((list["data"][0]["number"].as_i64(), list["meta"]["total_pages"].as_i64()), (Some(2), Some(2)));
}

#[tokio::test]
async fn a_run_as_of_the_future_or_a_bad_instant_is_refused() {
    let app = wallet_app().await;
    let future = super::rfc3339(chrono::Utc::now() + chrono::TimeDelta::hours(1));
    for body in [json!({"as_of": future}), json!({"as_of": "yesterday"}), json!({"as_of": "1999-12-31T00:00:00Z"})] {
        let response = ops_post(&app, "/remittances/run", &body).await;
        let error = assert_error(response, 400, "validation_failed").await;
        assert_eq!(error["errors"][0]["code"], "as_of_invalid", "{body}: {error}");
    }
    let unknown = ops_post(&app, "/remittances/run", &json!({"as_off": "2026-01-01T00:00:00Z"})).await;
    assert_error(unknown, 400, "validation_failed").await;
    let keyless = app.post("/ops/v1/remittances/run", "wrong-token-0123456789", &json!({})).await;
    assert_error(keyless, 401, "invalid_token").await;
}

/// `brands` brands with `sales` available sales each.
async fn brands_with_available_sales(app: &TestApp, brands: usize, sales: usize) -> Vec<Partner> {
    let mut partners = Vec::new();
    for b in 0..brands {
        let partner = app.partner(&format!("brand{b}")).await;
        for _ in 0..sales {
            delivered_sale(app, &partner, json!(25), 0, 1, hours_ago(72)).await;
        }
        partners.push(partner);
    }
    partners
}

/// Every statement is whole (its line count and totals are its entries'), numbers run
/// 1..n per brand, and every brand is either paid in full or not at all. Answers the number
/// of statements.
async fn assert_statements_whole(app: &TestApp) -> i64 {
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        let broken: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM remittances r
             WHERE r.line_count <> (SELECT COUNT(*) FROM ledger_entries e WHERE e.remittance_id = r.id)
                OR r.amount_pence <> (SELECT COALESCE(SUM(amount_pence), 0) FROM ledger_entries e WHERE e.remittance_id = r.id)",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(broken, 0, "a statement disagrees with its entries");
        let gaps: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM (SELECT brand_id, MAX(number) AS top, COUNT(*) AS n FROM remittances GROUP BY brand_id) s
             WHERE s.top <> s.n",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(gaps, 0, "statement numbers have gaps");
        let half_paid: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM (SELECT brand_id FROM ledger_entries GROUP BY brand_id
                                   HAVING COUNT(remittance_id) > 0 AND COUNT(remittance_id) < COUNT(*)) s",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(half_paid, 0, "a brand was paid in part");
        sqlx::query_scalar("SELECT COUNT(*) FROM remittances").fetch_one(pool).await.unwrap()
    })
}

#[tokio::test]
async fn two_nodes_running_at_once_issue_one_statement_per_brand() {
    let app = wallet_app().await;
    let partners = brands_with_available_sales(&app, 6, 3).await;
    let (second, _stop) = second_node_with_ops(&app).await;
    for _ in 0..3 {
        let body = json!({});
        let one = app.client.post(app.url("/ops/v1/remittances/run")).bearer_auth(OPS_TOKEN).json(&body).send();
        let two = app.client.post(format!("{second}/ops/v1/remittances/run")).bearer_auth(OPS_TOKEN).json(&body).send();
        let (one, two) = tokio::join!(one, two);
        assert_eq!((one.unwrap().status().as_u16(), two.unwrap().status().as_u16()), (200, 200));
    }
    assert_eq!(assert_statements_whole(&app).await, partners.len() as i64);
    for partner in &partners {
        let list = json(app.get("/v1/remittances", &partner.key).await).await;
        assert_eq!(list["meta"]["total"], 1, "{}", partner.slug);
        assert_eq!(list["data"][0]["line_count"], 3);
    }
}

/// A second node on `app`'s database, with the operator API on.
async fn second_node_with_ops(app: &TestApp) -> (String, tokio::sync::oneshot::Sender<()>) {
    let config = rehome::config::Config {
        addr: "127.0.0.1:0".parse().unwrap(),
        media_dir: app.dir.path().join("media"),
        ops_token: Some(OPS_TOKEN.into()),
        ..rehome::config::Config::default()
    };
    let server = rehome::app::Server::bind(config, crate::helpers::open_store(&app.db.url).await).await.expect("bind");
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run_until(async move {
        let _ = rx.await;
    }));
    (base, tx)
}

#[tokio::test]
async fn a_run_killed_half_way_leaves_whole_statements_and_the_next_run_issues_the_rest() {
    let app = wallet_app().await;
    // More than two of SQLite's batches (`wallet::SQLITE_BATCH` brands a transaction).
    let brands = 2 * rehome::usecases::wallet::SQLITE_BATCH + 6;
    for partner in brands_with_available_sales(&app, brands, 2).await {
        let billing = json!({"invoice_email": format!("accounts@{}.example", partner.slug)});
        assert_eq!(app.patch("/v1/partner/settings/billing", &partner.key, &billing).await.status(), 200);
    }
    let mut env = binary_env(&app.db.url);
    // Mail on: each statement renders its PDF in its transaction, which makes the run
    // long enough to be killed in the middle.
    env.push(("REHOME_SMTP_URL", "smtp://127.0.0.1:9".to_owned()));
    env.push(("REHOME_MAIL_FROM", "noreply@rehome.example".to_owned()));
    let raw = app.db.raw().await;
    let mut child = std::process::Command::new(REHOME_BIN)
        .args(["remittances", "run"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the run");
    // Kill it as soon as it has issued something, before it is done.
    let mut issued = 0;
    for _ in 0..2_000 {
        issued = on_raw!(&raw, |pool| sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM remittances")
            .fetch_one(pool)
            .await
            .unwrap());
        if issued > 0 || child.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    child.kill().expect("SIGKILL the run");
    child.wait().unwrap();
    assert!(issued > 0, "the run issued nothing before it was killed");
    let after_kill = assert_statements_whole(&app).await;
    assert!(after_kill < brands as i64, "the run finished before it was killed ({after_kill} statements)");
    let mails: i64 =
        on_raw!(&raw, |pool| sqlx::query_scalar("SELECT COUNT(*) FROM mail_outbox").fetch_one(pool).await.unwrap());
    assert_eq!(mails, after_kill, "each statement issued has its mail queued, and only those");

    // The next run issues the rest, and only the rest.
    let rest = run(&app, None).await;
    assert_eq!(after_kill + rest.len() as i64, brands as i64);
    assert_eq!(assert_statements_whole(&app).await, brands as i64);
}

#[tokio::test]
async fn the_command_line_runs_the_remittance() {
    let app = wallet_app().await;
    let acme = app.partner("acme").await;
    delivered_sale(&app, &acme, json!(100), 0, 1, hours_ago(72)).await;
    let env = binary_env(&app.db.url);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (ok, out, err) = crate::helpers::run_rehome(&["remittances", "run"], &env);
    assert!(ok, "{err}");
    assert!(out.starts_with("issued 1 statement(s) as of "), "{out}");
    assert!(out.lines().nth(1).unwrap().contains("\tacme\t1\t1 lines\t82.00 GBP"), "{out}");
    let (ok, out, _) = crate::helpers::run_rehome(&["remittances", "run"], &env);
    assert!(ok && out.starts_with("issued 0 statement(s)"), "{out}");
    let (ok, _, err) = crate::helpers::run_rehome(&["remittances", "run", "--as-of", "2999-01-01T00:00:00Z"], &env);
    assert!(!ok && err.contains("--as-of"), "{err}");
}

/// Each statement issued is in its brand's audit log, by the operator (decisions 8.7).
#[tokio::test]
async fn an_issued_statement_is_in_the_brands_audit_log_by_the_operator() {
    let app = wallet_app().await;
    let partner = app.partner("acme").await;
    delivered_sale(&app, &partner, json!(100), 0, 1, hours_ago(60)).await;
    let id = run(&app, None).await[0];
    let log = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;
    let issued: Vec<&serde_json::Value> =
        log["data"].as_array().unwrap().iter().filter(|e| e["action"] == "remittance.issued").collect();
    assert_eq!(issued.len(), 1, "{log}");
    assert_eq!(issued[0]["actor"]["type"], "operator");
    assert_eq!(issued[0]["target"], format!("remittance:{id}"));
    assert!(run(&app, None).await.is_empty());
    let again = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;
    let count = again["data"].as_array().unwrap().iter().filter(|e| e["action"] == "remittance.issued").count();
    assert_eq!(count, 1, "a run that issues nothing writes nothing");
}
