//! The audit log API: newest first, paged by id, brand-scoped.

use serde_json::{json, Value};

use super::{reasons, AUDIT, KEYS};
use crate::helpers::{json, spawn_app};

#[tokio::test]
async fn the_audit_log_pages_newest_first_and_names_the_actor() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let mut created = Vec::new();
    for n in 0..5 {
        let key = json(app.post(KEYS, &acme.key, &json!({"label": format!("k{n}")})).await).await;
        created.push(key["id"].as_i64().unwrap());
    }
    let first = json(app.get(&format!("{AUDIT}?limit=2"), &acme.key).await).await;
    assert_eq!(first["meta"]["limit"], 2);
    assert_eq!(first["meta"]["has_more"], true);
    let entries = first["data"].as_array().unwrap();
    let targets: Vec<&Value> = entries.iter().map(|e| &e["target"]).collect();
    assert_eq!(targets, [&json!(format!("key:{}", created[4])), &json!(format!("key:{}", created[3]))]);
    let entry = &entries[0];
    let mut fields: Vec<&String> = entry.as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(fields, ["action", "actor", "at", "id", "ip", "target"]);
    assert_eq!(entry["action"], "key.created");
    assert!(entry["id"].is_i64());
    assert_eq!(entry["actor"]["type"], "key");
    assert!(entry["actor"]["id"].is_i64());
    assert_eq!(entry["actor"]["display"], "Ada Admin (API key)");
    assert_eq!(entry["ip"], "127.0.0.1");
    assert!(entry["at"].as_str().unwrap().parse::<chrono::DateTime<chrono::Utc>>().is_ok());
    assert_eq!(first["meta"]["next_after"], entries[1]["id"]);

    let mut seen: Vec<i64> = entries.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    let mut after = first["meta"]["next_after"].clone();
    while !after.is_null() {
        let page = json(app.get(&format!("{AUDIT}?limit=2&after={after}"), &acme.key).await).await;
        seen.extend(page["data"].as_array().unwrap().iter().map(|e| e["id"].as_i64().unwrap()));
        assert_eq!(page["meta"]["has_more"], !page["meta"]["next_after"].is_null());
        after = page["meta"]["next_after"].clone();
    }
    // The five keys, and first the helper's key, created by the operator (the CLI's path).
    assert_eq!(seen.len(), 6);
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "newest first: {seen:?}");
    let oldest = json(app.get(&format!("{AUDIT}?after={}", seen[4]), &acme.key).await).await;
    let operator = &oldest["data"][0];
    assert_eq!((&operator["action"], &operator["ip"]), (&json!("key.created"), &Value::Null));
    assert_eq!(operator["actor"], json!({"type": "operator", "id": null, "display": "operator"}));

    let default = json(app.get(AUDIT, &acme.key).await).await;
    assert_eq!((&default["meta"]["limit"], &default["meta"]["has_more"]), (&json!(50), &json!(false)));
    assert_eq!(default["meta"]["next_after"], Value::Null);
}

#[tokio::test]
async fn a_bad_limit_or_position_is_validation_failed() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    for (query, expected) in [
        ("limit=0", vec!["limit_invalid"]),
        ("limit=101", vec!["limit_invalid"]),
        ("limit=ten", vec!["limit_invalid"]),
        ("after=abc", vec!["after_invalid"]),
        ("after=0", vec!["after_invalid"]),
        ("limit=-1&after=-5", vec!["limit_invalid", "after_invalid"]),
    ] {
        assert_eq!(reasons(app.get(&format!("{AUDIT}?{query}"), &acme.key).await).await, expected, "{query}");
    }
    assert_eq!(app.get(&format!("{AUDIT}?limit=100&after=999999"), &acme.key).await.status(), 200);
}

#[tokio::test]
async fn each_brand_reads_only_its_own_log() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    let created = json(app.post(KEYS, &acme.key, &json!({"label": "a"})).await).await;
    let target = json!(format!("key:{}", created["id"]));
    let ours = json(app.get(AUDIT, &acme.key).await).await;
    assert_eq!(ours["data"][0]["target"], target);
    // Beta sees its own entry (its key, made by the operator) and nothing of acme's, from
    // any position.
    let theirs = json(app.get(AUDIT, &beta.key).await).await;
    assert_eq!(theirs["data"].as_array().unwrap().len(), 1);
    let after = ours["data"][0]["id"].as_i64().unwrap() + 1;
    let later = json(app.get(&format!("{AUDIT}?after={after}"), &beta.key).await).await;
    assert_eq!(later["data"], theirs["data"]);
    assert!(theirs["data"].as_array().unwrap().iter().all(|e| e["target"] != target));
}
