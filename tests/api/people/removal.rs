//! Removing a member: sessions, keys, invitations and listings in one step; its refusals.

use std::time::Duration;

use rehome::domain::time::Ts;
use rehome::domain::user::Role;
use serde_json::json;

use super::{audit_entries, count, invite, reasons, refused_within, TEAM};
use crate::helpers::{assert_error, json, on_raw, spawn_app, TestApp};
use crate::listings::create_id;

/// An open dashboard session of `user_id`, written directly.
async fn open_session(app: &TestApp, user_id: i64) {
    let raw = app.db.raw().await;
    let token = rehome::domain::apikey::hash_secret(&format!("session-{user_id}"));
    on_raw!(&raw, |pool| sqlx::query(
        "INSERT INTO sessions (token_hash, user_id, stage, csrf_token, ip, created_at, last_seen_at)
         VALUES ($1, $2, 'full', 'csrf', '127.0.0.1', $3, $3)"
    )
    .bind(&token[..])
    .bind(user_id)
    .bind(Ts::now())
    .execute(pool)
    .await
    .map(|_| ())
    .unwrap());
    raw.close().await;
}

#[tokio::test]
async fn removal_ends_sessions_revokes_keys_and_gives_the_listings_to_the_caller_at_once() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (bob, bob_key) = app.user(&acme, "Bob", Role::Admin).await;
    let listings = [create_id(&app, &bob_key, json!({})).await, create_id(&app, &bob_key, json!({})).await];
    let deleted = create_id(&app, &bob_key, json!({})).await;
    assert_eq!(app.delete(&format!("/v1/listings/{deleted}"), &bob_key).await.status(), 200);
    open_session(&app, bob).await;
    let second_key = app.key(bob, "read", None, None).await;
    assert_eq!(app.get("/v1/listings/options", &bob_key).await.status(), 200, "cached before the removal");

    let response = app.delete(&format!("{TEAM}/{bob}"), &acme.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await, json!({"removed": true, "id": bob, "listings_transferred": 2}));

    let waited = refused_within(&app, &bob_key, Duration::from_millis(1500)).await;
    assert!(waited <= Duration::from_millis(1500), "{waited:?}");
    assert_error(app.get("/v1/listings/options", &second_key).await, 401, "invalid_token").await;
    for id in listings {
        let listing = json(app.get(&format!("/v1/listings/{id}"), &acme.key).await).await;
        assert_eq!(listing["seller"]["id"], acme.user_id, "{listing}");
        // The new seller may change it.
        let patched = app.patch(&format!("/v1/listings/{id}"), &acme.key, &json!({"title": "Mine now"})).await;
        assert_eq!(patched.status(), 200);
    }
    assert_eq!(count(&app, "SELECT count(*) FROM sessions WHERE user_id = $1 AND ended_at IS NULL", bob).await, 0);
    assert_eq!(count(&app, "SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL", bob).await, 0);
    assert_eq!(
        count(&app, "SELECT count(*) FROM users WHERE id = $1 AND status = 'removed' AND removed_at IS NOT NULL", bob)
            .await,
        1
    );

    let team = json(app.get(TEAM, &acme.key).await).await;
    assert!(team["members"].as_array().unwrap().iter().all(|m| m["id"] != bob), "{team}");
    assert_error(
        app.patch(&format!("{TEAM}/{bob}"), &acme.key, &json!({"role": "admin"})).await,
        404,
        "member_not_found",
    )
    .await;
    assert_error(app.delete(&format!("{TEAM}/{bob}"), &acme.key).await, 404, "member_not_found").await;
    let entries = audit_entries(&app, &acme.key).await;
    assert!(entries.iter().any(|e| e["action"] == "member.removed" && e["target"] == format!("user:{bob}")));
}

#[tokio::test]
async fn listings_go_to_transfer_to_when_it_is_an_active_member_of_the_brand() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    let (bob, bob_key) = app.user(&acme, "Bob", Role::Admin).await;
    let (carol, _) = app.user(&acme, "Carol", Role::Member).await;
    let (gone, _) = app.user(&acme, "Gone", Role::Member).await;
    assert_eq!(app.delete(&format!("{TEAM}/{gone}"), &acme.key).await.status(), 200);
    let invited = invite(&app, &acme.key, "ivy@acme.example", "Ivy", "admin").await["id"].as_i64().unwrap();
    let listing = create_id(&app, &bob_key, json!({})).await;

    let bad =
        [bob.to_string(), invited.to_string(), gone.to_string(), beta.user_id.to_string(), "x".into(), "0".into()];
    for transfer_to in bad {
        let response = app.delete(&format!("{TEAM}/{bob}?transfer_to={transfer_to}"), &acme.key).await;
        assert_eq!(reasons(response).await, ["transfer_to_invalid"], "transfer_to={transfer_to}");
    }
    // Nothing changed on a refusal.
    assert_eq!(app.get("/v1/listings/options", &bob_key).await.status(), 200);

    let response = app.delete(&format!("{TEAM}/{bob}?transfer_to={carol}"), &acme.key).await;
    assert_eq!(json(response).await["listings_transferred"], 1);
    let detail = json(app.get(&format!("/v1/listings/{listing}"), &acme.key).await).await;
    assert_eq!((&detail["seller"]["id"], &detail["seller"]["display_name"]), (&json!(carol), &json!("Carol")));
}

#[tokio::test]
async fn a_key_cannot_remove_its_own_user_nor_an_unknown_one() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    assert_error(app.delete(&format!("{TEAM}/{}", acme.user_id), &acme.key).await, 409, "cannot_remove_self").await;
    for id in ["999999".to_owned(), "abc".to_owned(), beta.user_id.to_string()] {
        assert_error(app.delete(&format!("{TEAM}/{id}"), &acme.key).await, 404, "member_not_found").await;
    }
    assert_eq!(app.get("/v1/listings/options", &beta.key).await.status(), 200);
}

#[tokio::test]
async fn removing_the_last_active_admin_is_refused() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (bob, _) = app.user(&acme, "Bob", Role::Admin).await;
    let (carol, _) = app.user(&acme, "Carol", Role::Member).await;
    // Ada's key still works for a second, but she is no longer an active member: Bob is
    // the brand's only active admin.
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE users SET status = 'invited' WHERE id = {}", acme.user_id)).await;
    raw.close().await;
    let response = app.delete(&format!("{TEAM}/{bob}?transfer_to={carol}"), &acme.key).await;
    assert_error(response, 409, "last_admin").await;
    assert_eq!(count(&app, "SELECT count(*) FROM users WHERE id = $1 AND status = 'active'", bob).await, 1);
}

#[tokio::test]
async fn a_former_member_can_be_invited_again_and_their_old_links_are_dead() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    let sam = invite(&app, &acme.key, "sam@acme.example", "Sam", "member").await;
    let sam_id = sam["id"].as_i64().unwrap();
    assert_eq!(app.delete(&format!("{TEAM}/{sam_id}"), &acme.key).await.status(), 200);
    assert_eq!(count(&app, "SELECT count(*) FROM invitations WHERE user_id = $1 AND used_at IS NULL", sam_id).await, 0);

    // Another brand may now invite the address; so may the first one, as a new person: the
    // removed member stays removed, with their own id, audit entries and keys.
    let elsewhere = invite(&app, &beta.key, "sam@acme.example", "Sam B", "member").await;
    assert_ne!(elsewhere["id"], sam_id);
    assert_eq!(app.delete(&format!("{TEAM}/{}", elsewhere["id"]), &beta.key).await.status(), 200);
    let again = invite(&app, &acme.key, "sam@acme.example", "Sam Again", "admin").await;
    let again_id = again["id"].as_i64().unwrap();
    assert_ne!(again_id, sam_id, "a new person, not the removed member's row");
    assert_ne!(json!(again_id), elsewhere["id"]);
    assert_eq!((&again["status"], &again["role"]), (&json!("invited"), &json!("admin")));
    assert_eq!(count(&app, "SELECT count(*) FROM users WHERE id = $1 AND status = 'removed'", sam_id).await, 1);
    assert_eq!(count(&app, "SELECT count(*) FROM invitations WHERE user_id = $1 AND used_at IS NULL", sam_id).await, 0);
    assert_eq!(
        count(&app, "SELECT count(*) FROM invitations WHERE user_id = $1 AND used_at IS NULL", again_id).await,
        1
    );
    // Still one live person per email: a second invitation of the address is refused.
    let body = json!({"email": "sam@acme.example", "display_name": "Sam", "role": "member"});
    assert_error(app.post(TEAM, &acme.key, &body).await, 409, "email_taken").await;
}
