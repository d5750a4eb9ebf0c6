//! The API keys API: list, create, roll with an overlap, revoke; last use recorded.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rehome::domain::user::Role;
use serde_json::{json, Value};

use super::{audit_entries, invite, reasons, refused_within, KEYS};
use crate::helpers::{assert_error, json, spawn_app, TestApp};

fn ts(value: &Value) -> DateTime<Utc> {
    value.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a timestamp: {value}"))
}

async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let response = app.post(KEYS, key, &body).await;
    assert_eq!(response.status(), 201, "create key {body}");
    json(response).await
}

async fn list(app: &TestApp, key: &str) -> Vec<Value> {
    json(app.get(KEYS, key).await).await["data"].as_array().cloned().unwrap()
}

#[tokio::test]
async fn a_created_key_shows_its_secret_once_and_works() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let created = create(&app, &acme.key, json!({"label": " Stock sync "})).await;
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("rhk_"));
    assert_eq!(created["prefix"], &secret[..12]);
    assert_eq!((&created["label"], &created["scopes"]), (&json!("Stock sync"), &json!(["read", "write"])));
    assert_eq!((&created["user_id"], &created["rate_limit_per_minute"]), (&json!(acme.user_id), &json!(60)));
    assert_eq!(
        (&created["expires_at"], &created["revoked_at"], &created["last_used_at"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(app.get("/v1/listings/options", secret).await.status(), 200);

    let keys = list(&app, &acme.key).await;
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["id"], created["id"], "newest first");
    assert!(keys.iter().all(|k| k.get("secret").is_none()), "secrets are never listed");
    let mut fields: Vec<&String> = keys[0].as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "created_at",
            "expires_at",
            "id",
            "label",
            "last_used_at",
            "last_used_ip",
            "prefix",
            "rate_limit_per_minute",
            "revoked_at",
            "scopes",
            "user_id"
        ]
    );
    // The helper's key has its own limit (a contract tier).
    assert_eq!(keys[1]["rate_limit_per_minute"], 100_000);
    let entries = audit_entries(&app, &acme.key).await;
    assert!(entries.iter().any(|e| e["action"] == "key.created" && e["target"] == format!("key:{}", created["id"])));
}

#[tokio::test]
async fn a_key_may_belong_to_another_active_member_with_fewer_scopes_and_an_expiry() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    let (bob, _) = app.user(&acme, "Bob", Role::Admin).await;
    let (sam, _) = app.user(&acme, "Sam", Role::Member).await;
    let invited = invite(&app, &acme.key, "ivy@acme.example", "Ivy", "admin").await["id"].as_i64().unwrap();

    let expires = (Utc::now() + chrono::TimeDelta::hours(2)).to_rfc3339();
    let body = json!({"label": "Reader", "scopes": ["read"], "user_id": bob, "expires_at": expires});
    let created = create(&app, &acme.key, body).await;
    assert_eq!((&created["user_id"], &created["scopes"]), (&json!(bob), &json!(["read"])));
    assert!((ts(&created["expires_at"]) - Utc::now()).num_minutes() >= 119);
    let secret = created["secret"].as_str().unwrap();
    assert_eq!(app.get("/v1/listings/options", secret).await.status(), 200);
    assert_error(app.post(KEYS, secret, &json!({"label": "x"})).await, 403, "forbidden").await;

    // A member's key is made, and refused by the API as every member's key is.
    let member_key = create(&app, &acme.key, json!({"label": "Sam", "user_id": sam})).await;
    assert_error(app.get("/v1/listings/options", member_key["secret"].as_str().unwrap()).await, 403, "forbidden").await;

    for user_id in [invited, beta.user_id, 999_999] {
        let response = app.post(KEYS, &acme.key, &json!({"label": "x", "user_id": user_id})).await;
        assert_eq!(reasons(response).await, ["user_id_invalid"], "user {user_id}");
    }
}

#[tokio::test]
async fn a_bad_key_request_names_every_reason() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    assert_eq!(reasons(app.post(KEYS, &acme.key, &json!({})).await).await, ["label_required"]);
    let bad = json!({"label": "x".repeat(101), "scopes": ["admin"], "user_id": "me", "expires_at": "2020-01-01T00:00:00Z", "q": 1});
    assert_eq!(
        reasons(app.post(KEYS, &acme.key, &bad).await).await,
        ["label_too_long", "scopes_invalid", "user_id_invalid", "expires_at_invalid", "q_unknown"]
    );
    assert_eq!(
        reasons(app.post(KEYS, &acme.key, &json!({"label": "a", "scopes": []})).await).await,
        ["scopes_invalid"]
    );
    assert_eq!(
        reasons(app.post(KEYS, &acme.key, &json!({"label": "a", "expires_at": "tomorrow"})).await).await,
        ["expires_at_invalid"]
    );
}

#[tokio::test]
async fn rolling_a_key_makes_a_twin_and_the_old_one_works_until_the_overlap_ends() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let old = create(&app, &acme.key, json!({"label": "Sync", "scopes": ["read"]})).await;
    let old_secret = old["secret"].as_str().unwrap().to_owned();
    let roll = format!("{KEYS}/{}/roll", old["id"]);

    // No body at all: the default overlap of 24 hours.
    let response = app.request(reqwest::Method::POST, &roll, &acme.key).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let new = json(response).await;
    assert_ne!(new["id"], old["id"]);
    assert_ne!(new["secret"], old["secret"]);
    assert_eq!((&new["label"], &new["scopes"], &new["user_id"]), (&old["label"], &old["scopes"], &old["user_id"]));
    assert_eq!((&new["expires_at"], &new["rate_limit_per_minute"]), (&Value::Null, &json!(60)));
    let keys = list(&app, &acme.key).await;
    let rolled = keys.iter().find(|k| k["id"] == old["id"]).unwrap();
    let hours = (ts(&rolled["expires_at"]) - Utc::now()).num_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "{hours}");
    assert_eq!(app.get("/v1/listings/options", &old_secret).await.status(), 200);
    assert_eq!(app.get("/v1/listings/options", new["secret"].as_str().unwrap()).await.status(), 200);

    // A limit of its own is kept; an overlap of 0 stops the old key at once.
    let tier = app.key(acme.user_id, "read,write", Some(500), None).await;
    let tier_id = list(&app, &acme.key).await[0]["id"].clone();
    let twin =
        json(app.post(&format!("{KEYS}/{tier_id}/roll"), &acme.key, &json!({"expires_in_hours": 0})).await).await;
    assert_eq!(twin["rate_limit_per_minute"], 500);
    assert_error(app.get("/v1/listings/options", &tier).await, 401, "invalid_token").await;
    // Rolling again never extends an expiry.
    let again = app.post(&roll, &acme.key, &json!({"expires_in_hours": 168})).await;
    assert_eq!(again.status(), 201);
    let keys = list(&app, &acme.key).await;
    let still = keys.iter().find(|k| k["id"] == old["id"]).unwrap();
    assert_eq!(still["expires_at"], rolled["expires_at"]);

    let entries = audit_entries(&app, &acme.key).await;
    assert_eq!(entries.iter().filter(|e| e["action"] == "key.rolled").count(), 3);
}

#[tokio::test]
async fn a_revoked_or_expired_key_cannot_be_rolled_and_bad_overlaps_are_refused() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let key = create(&app, &acme.key, json!({"label": "Sync"})).await;
    let roll = format!("{KEYS}/{}/roll", key["id"]);
    for hours in [json!(169), json!(-1), json!("24")] {
        let response = app.post(&roll, &acme.key, &json!({"expires_in_hours": hours})).await;
        assert_eq!(reasons(response).await, ["expires_in_hours_invalid"]);
    }
    assert_eq!(reasons(app.post(&roll, &acme.key, &json!({"x": 1})).await).await, ["x_unknown"]);
    let response = app.request(reqwest::Method::POST, &roll, &acme.key).body("not json").send().await.unwrap();
    assert_error(response, 400, "invalid_body").await;

    assert_eq!(app.post(&roll, &acme.key, &json!({"expires_in_hours": 0})).await.status(), 201);
    assert_error(app.post(&roll, &acme.key, &json!({})).await, 409, "key_inactive").await;
    let other = create(&app, &acme.key, json!({"label": "Other"})).await;
    assert_eq!(app.delete(&format!("{KEYS}/{}", other["id"]), &acme.key).await.status(), 200);
    assert_error(app.post(&format!("{KEYS}/{}/roll", other["id"]), &acme.key, &json!({})).await, 409, "key_inactive")
        .await;
}

#[tokio::test]
async fn revoking_a_key_is_idempotent_and_refused_within_about_a_second() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let key = create(&app, &acme.key, json!({"label": "Sync"})).await;
    let secret = key["secret"].as_str().unwrap();
    assert_eq!(app.get("/v1/listings/options", secret).await.status(), 200, "cached");

    let path = format!("{KEYS}/{}", key["id"]);
    let first = json(app.delete(&path, &acme.key).await).await;
    assert_eq!(first["id"], key["id"]);
    assert!(first.get("secret").is_none());
    ts(&first["revoked_at"]);
    let waited = refused_within(&app, secret, Duration::from_millis(1500)).await;
    assert!(waited <= Duration::from_millis(1500));
    let second = app.delete(&path, &acme.key).await;
    assert_eq!(second.status(), 200);
    assert_eq!(json(second).await["revoked_at"], first["revoked_at"]);
    let keys = list(&app, &acme.key).await;
    assert_eq!(keys.iter().find(|k| k["id"] == key["id"]).unwrap()["revoked_at"], first["revoked_at"]);
    let entries = audit_entries(&app, &acme.key).await;
    assert_eq!(entries.iter().filter(|e| e["action"] == "key.revoked").count(), 1);
}

#[tokio::test]
async fn using_a_key_records_when_and_from_which_address() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let key = create(&app, &acme.key, json!({"label": "Sync"})).await;
    let before = Utc::now() - chrono::TimeDelta::seconds(1);
    assert_eq!(app.get("/v1/listings/options", key["secret"].as_str().unwrap()).await.status(), 200);
    let listed = || async {
        let listed = list(&app, &acme.key).await.into_iter().find(|k| k["id"] == key["id"]).unwrap();
        Some(listed).filter(|k| !k["last_used_at"].is_null())
    };
    let used = crate::helpers::poll(Duration::from_secs(5), listed).await.expect("last use never recorded");
    assert!(ts(&used["last_used_at"]) >= before);
    assert_eq!(used["last_used_ip"], "127.0.0.1");
}

#[tokio::test]
async fn keys_of_another_brand_or_unknown_ids_are_key_not_found() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    let theirs = create(&app, &beta.key, json!({"label": "Beta"})).await;
    for id in [theirs["id"].to_string(), "999999".into(), "abc".into()] {
        assert_error(app.delete(&format!("{KEYS}/{id}"), &acme.key).await, 404, "key_not_found").await;
        assert_error(app.post(&format!("{KEYS}/{id}/roll"), &acme.key, &json!({})).await, 404, "key_not_found").await;
    }
    assert!(list(&app, &acme.key).await.iter().all(|k| k["id"] != theirs["id"]));
    assert_eq!(app.get("/v1/listings/options", theirs["secret"].as_str().unwrap()).await.status(), 200);
}

/// A brand creates at most `KEYS_PER_HOUR` keys an hour, keys sent at the same moment
/// included (each key brings rate limits of its own): a burst of thirty creates what is
/// left of the hour's allowance, and the rest are refused `409 keys_too_frequent`, creating
/// nothing.
#[tokio::test]
async fn a_burst_of_key_creations_is_held_to_the_hours_allowance() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let before = json(app.get(KEYS, &partner.key).await).await["data"].as_array().unwrap().len();
    let bodies: Vec<Value> = (0..30).map(|n| json!({"label": format!("burst {n}")})).collect();
    let answers = futures_util::future::join_all(bodies.iter().map(|body| app.post(KEYS, &partner.key, body))).await;
    let mut created = 0;
    for answer in answers {
        match answer.status().as_u16() {
            201 => created += 1,
            409 => assert_eq!(json(answer).await["code"], "keys_too_frequent"),
            other => panic!("{other}"),
        }
    }
    let allowance = usize::try_from(rehome::domain::limits::KEYS_PER_HOUR).unwrap();
    assert_eq!(created + before, allowance, "{before} keys before the burst");
    let after = json(app.get(KEYS, &partner.key).await).await["data"].as_array().unwrap().len();
    assert_eq!(after, allowance);
}
