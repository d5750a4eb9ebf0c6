//! People and access over the API (decisions 8.5–8.7) and the command line (12.1): the
//! team, API keys, the audit log and their brand isolation, on both backends.

mod audit;
mod cli;
mod invite_mail;
mod isolation;
mod keys;
mod nodes;
mod removal;
mod team;

use std::time::{Duration, Instant};

use reqwest::Response;
use serde_json::{json, Value};

use crate::helpers::{json, on_raw, TestApp};

pub const TEAM: &str = "/v1/partner/settings/team";
pub const KEYS: &str = "/v1/partner/settings/integrations/keys";
pub const AUDIT: &str = "/v1/partner/audit-log";

/// Invites someone with `key`; panics unless the answer is 201. Returns the answer.
pub async fn invite(app: &TestApp, key: &str, email: &str, name: &str, role: &str) -> Value {
    let response = app.post(TEAM, key, &json!({"email": email, "display_name": name, "role": role})).await;
    assert_eq!(response.status(), 201, "invite {email}");
    json(response).await
}

/// The reason codes of a `validation_failed` answer (after checking it is one).
pub async fn reasons(response: Response) -> Vec<String> {
    assert_eq!(response.status(), 400);
    let body = json(response).await;
    assert_eq!(body["code"], "validation_failed", "{body}");
    body["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap().to_owned()).collect()
}

/// Polls until `key` is refused (401), failing after `limit`; answers how long it took.
pub async fn refused_within(app: &TestApp, key: &str, limit: Duration) -> Duration {
    let started = Instant::now();
    let refused = || async {
        let status = app.get("/v1/listings/options", key).await.status();
        assert!(status == 200 || status == 401, "before it is refused, the key works: {status}");
        (status == 401).then(|| started.elapsed())
    };
    crate::helpers::poll(limit, refused).await.unwrap_or_else(|| panic!("key still accepted after {limit:?}"))
}

/// Counts rows with a query on the test's database (`$1` bound to `id`).
pub async fn count(app: &TestApp, sql: &str, id: i64) -> i64 {
    let raw = app.db.raw().await;
    let n: i64 = on_raw!(&raw, |pool| sqlx::query_scalar(sql).bind(id).fetch_one(pool).await.expect(sql));
    raw.close().await;
    n
}

/// Every entry of the brand's audit log (newest first), read with `key`.
pub async fn audit_entries(app: &TestApp, key: &str) -> Vec<Value> {
    let page = json(app.get(&format!("{AUDIT}?limit=100"), key).await).await;
    page["data"].as_array().cloned().unwrap_or_default()
}
