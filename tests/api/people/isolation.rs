//! Every people endpoint: admin keys only (a member's key and a key without the scope get
//! 403 `forbidden`), and another brand's ids are unknown (404).

use rehome::domain::user::Role;
use reqwest::Method;
use serde_json::{json, Value};

use super::{AUDIT, KEYS, TEAM};
use crate::helpers::{assert_error, json, spawn_app};

#[tokio::test]
async fn a_members_key_and_a_key_without_the_scope_are_forbidden_everywhere() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (bob, _) = app.user(&acme, "Bob", Role::Member).await;
    let (_, member_key) = app.user(&acme, "Sam", Role::Member).await;
    let read_only = app.key(acme.user_id, "read", None, None).await;
    let write_only = app.key(acme.user_id, "write", None, None).await;
    let key_id = json(app.get(KEYS, &acme.key).await).await["data"][0]["id"].clone();

    let calls: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, TEAM.into(), None),
        (Method::POST, TEAM.into(), Some(json!({"email": "x@acme.example", "display_name": "X"}))),
        (Method::PATCH, format!("{TEAM}/{bob}"), Some(json!({"role": "admin"}))),
        (Method::DELETE, format!("{TEAM}/{bob}"), None),
        (Method::GET, KEYS.into(), None),
        (Method::POST, KEYS.into(), Some(json!({"label": "x"}))),
        (Method::POST, format!("{KEYS}/{key_id}/roll"), Some(json!({}))),
        (Method::DELETE, format!("{KEYS}/{key_id}"), None),
        (Method::GET, AUDIT.into(), None),
    ];
    for (method, path, body) in &calls {
        let reading = *method == Method::GET;
        let wrong_scope = if reading { &write_only } else { &read_only };
        for key in [&member_key, wrong_scope] {
            let mut request = app.request(method.clone(), path, key);
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request.send().await.unwrap();
            assert_error(response, 403, "forbidden").await;
        }
        let anonymous = app.request(method.clone(), path, "").send().await.unwrap();
        assert_error(anonymous, 401, "missing_bearer_token").await;
    }
    // Nothing was changed by the refused calls.
    let team = json(app.get(TEAM, &acme.key).await).await;
    assert_eq!(team["members"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn another_brands_members_and_keys_are_not_found() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    let (their_member, _) = app.user(&beta, "Bea", Role::Member).await;
    let their_key = json(app.get(KEYS, &beta.key).await).await["data"][0]["id"].clone();

    for id in [their_member, beta.user_id] {
        let path = format!("{TEAM}/{id}");
        assert_error(app.patch(&path, &acme.key, &json!({"role": "admin"})).await, 404, "member_not_found").await;
        assert_error(app.delete(&path, &acme.key).await, 404, "member_not_found").await;
    }
    assert_error(app.delete(&format!("{KEYS}/{their_key}"), &acme.key).await, 404, "key_not_found").await;
    let roll = app.post(&format!("{KEYS}/{their_key}/roll"), &acme.key, &json!({})).await;
    assert_error(roll, 404, "key_not_found").await;

    let team = json(app.get(TEAM, &acme.key).await).await;
    assert!(team["members"].as_array().unwrap().iter().all(|m| m["id"] != their_member && m["id"] != beta.user_id));
    let keys = json(app.get(KEYS, &acme.key).await).await;
    assert!(keys["data"].as_array().unwrap().iter().all(|k| k["id"] != their_key));
    // Beta's team and key are untouched.
    assert_eq!(json(app.get(TEAM, &beta.key).await).await["members"].as_array().unwrap().len(), 2);
    assert_eq!(json(app.get(KEYS, &beta.key).await).await["data"][0]["revoked_at"], Value::Null);
}
