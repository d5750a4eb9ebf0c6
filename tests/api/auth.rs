use std::time::Duration;

use rehome::domain::user::Role;

use crate::helpers::{assert_error, json, spawn_app, spawn_app_with};

const OPTIONS: &str = "/v1/listings/options";

#[tokio::test]
async fn a_request_without_authorization_is_missing_bearer_token() {
    let app = spawn_app().await;
    assert_error(app.get(OPTIONS, "").await, 401, "missing_bearer_token").await;
}

#[tokio::test]
async fn a_non_bearer_scheme_is_missing_bearer_token() {
    let app = spawn_app().await;
    let response = app.client.get(app.url(OPTIONS)).header("Authorization", "Basic dXNlcjpwYXNz").send().await.unwrap();
    assert_error(response, 401, "missing_bearer_token").await;
}

#[tokio::test]
async fn malformed_tokens_are_invalid_token() {
    let app = spawn_app().await;
    for token in ["nonsense", "rhk_short", "rhk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA000000"] {
        assert_error(app.get(OPTIONS, token).await, 401, "invalid_token").await;
    }
    let response = app.client.get(app.url(OPTIONS)).header("Authorization", "Bearer ").send().await.unwrap();
    assert_error(response, 401, "invalid_token").await;
}

#[tokio::test]
async fn a_key_with_a_valid_checksum_that_was_never_issued_is_invalid_token() {
    let app = spawn_app().await;
    let lookalike = rehome::domain::apikey::NewKey::generate().unwrap().secret;
    assert_error(app.get(OPTIONS, &lookalike).await, 401, "invalid_token").await;
}

#[tokio::test]
async fn unknown_revoked_and_expired_keys_get_byte_identical_bodies() {
    let app = spawn_app_with(|c| c.key_cache_ms = 0).await;
    let partner = app.partner("acme").await;
    let revoked = app.key(partner.user_id, "read", None, None).await;
    let revoked_id = key_id_of(&app, &revoked).await;
    rehome::usecases::accounts::revoke_key(&app.store, revoked_id).await.unwrap();
    let expired =
        app.key(partner.user_id, "read", None, Some(chrono::Utc::now() - chrono::TimeDelta::seconds(1))).await;
    let unknown = rehome::domain::apikey::NewKey::generate().unwrap().secret;

    let mut bodies = Vec::new();
    for key in [&unknown, &revoked, &expired] {
        let response = app.get(OPTIONS, key).await;
        assert_eq!(response.status(), 401);
        bodies.push(response.bytes().await.unwrap());
    }
    assert_eq!(bodies[0], bodies[1]);
    assert_eq!(bodies[1], bodies[2]);
}

#[tokio::test]
async fn a_key_stops_working_at_its_expiry_even_while_cached() {
    let app = spawn_app_with(|c| c.key_cache_ms = 60_000).await;
    let partner = app.partner("acme").await;
    let expires = chrono::Utc::now() + chrono::TimeDelta::milliseconds(1500);
    let key = app.key(partner.user_id, "read", None, Some(expires)).await;
    assert_eq!(app.get(OPTIONS, &key).await.status(), 200);
    app.advance_clock(Duration::from_millis(1700));
    assert_error(app.get(OPTIONS, &key).await, 401, "invalid_token").await;
}

#[tokio::test]
async fn a_revoked_key_stops_working_within_about_a_second() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    assert_eq!(app.get(OPTIONS, &partner.key).await.status(), 200);
    let key_id = key_id_of(&app, &partner.key).await;
    rehome::usecases::accounts::revoke_key(&app.store, key_id).await.unwrap();
    let refused = || async { (app.get(OPTIONS, &partner.key).await.status() == 401).then_some(()) };
    crate::helpers::poll(Duration::from_millis(1500), refused).await;
    assert_error(app.get(OPTIONS, &partner.key).await, 401, "invalid_token").await;
}

#[tokio::test]
async fn a_member_is_forbidden_even_with_both_scopes() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, member_key) = app.user(&partner, "Max Member", Role::Member).await;
    assert_error(app.get(OPTIONS, &member_key).await, 403, "forbidden").await;
}

#[tokio::test]
async fn a_write_only_key_cannot_read() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let write_only = app.key(partner.user_id, "write", None, None).await;
    assert_error(app.get(OPTIONS, &write_only).await, 403, "forbidden").await;
}

#[tokio::test]
async fn a_read_key_reads() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let read_only = app.key(partner.user_id, "read", None, None).await;
    assert_eq!(app.get(OPTIONS, &read_only).await.status(), 200);
}

#[tokio::test]
async fn key_use_is_recorded_with_time_and_address() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    assert_eq!(app.get(OPTIONS, &partner.key).await.status(), 200);
    let key_id = key_id_of(&app, &partner.key).await;
    let last_used = || async {
        let row = app.store.keys_by_lookup(&partner.key[4..12]).await.unwrap();
        row.into_iter().find(|r| r.key_id == key_id).unwrap().last_used_at
    };
    let recorded = crate::helpers::poll(Duration::from_secs(1), last_used).await;
    assert!(recorded.is_some(), "last_used_at was never written");
}

#[tokio::test]
async fn the_error_body_is_json_with_code_and_message_only() {
    let app = spawn_app().await;
    let response = app.get(OPTIONS, "").await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = json(response).await;
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["code", "message"]);
}

/// The id of a key, found through its lookup prefix as the server does.
async fn key_id_of(app: &crate::helpers::TestApp, secret: &str) -> i64 {
    let presented = rehome::domain::apikey::PresentedKey::parse(secret).unwrap();
    app.store
        .keys_by_lookup(presented.lookup())
        .await
        .unwrap()
        .into_iter()
        .find(|row| presented.matches(&row.secret_hash))
        .unwrap()
        .key_id
}
