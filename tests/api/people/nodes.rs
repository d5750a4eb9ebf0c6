//! Two server nodes on one PostgreSQL database, each with its own key cache: a member
//! removed, or a key revoked, through one node is refused by the other within about a
//! second. (On SQLite, one node: `removal.rs` and `keys.rs`.)

use std::time::{Duration, Instant};

use rehome::domain::user::Role;
use serde_json::json;

use super::{KEYS, TEAM};
use crate::helpers::{json, on_postgres, second_node, spawn_app};

/// Polls `base` with `key` until it answers 401; answers how long that took.
async fn refused_on(client: &reqwest::Client, base: &str, key: &str) -> Duration {
    let started = Instant::now();
    let refused = || async {
        let status = client.get(format!("{base}/v1/listings/options")).bearer_auth(key).send().await.unwrap().status();
        assert!(status == 200 || status == 401, "{status}");
        (status == 401).then(|| started.elapsed())
    };
    crate::helpers::poll(Duration::from_millis(1600), refused).await.expect("still accepted by the other node")
}

#[tokio::test]
async fn a_member_removed_on_one_node_is_refused_by_the_other_within_a_second() {
    if !on_postgres() {
        eprintln!("skipped: two nodes need REHOME_TEST_POSTGRES");
        return;
    }
    let app = spawn_app().await;
    let (other, _stop) = second_node(&app).await;
    let client = reqwest::Client::new();
    let acme = app.partner("acme").await;
    let (bob, bob_key) = app.user(&acme, "Bob", Role::Admin).await;
    let spare = json(app.post(KEYS, &acme.key, &json!({"label": "spare", "user_id": bob})).await).await;
    let spare = spare["secret"].as_str().unwrap().to_owned();
    for key in [&bob_key, &spare] {
        let answer = client.get(format!("{other}/v1/listings/options")).bearer_auth(key).send().await.unwrap();
        assert_eq!(answer.status(), 200, "cached on the other node");
    }

    assert_eq!(app.delete(&format!("{TEAM}/{bob}"), &acme.key).await.status(), 200);
    let waited = refused_on(&client, &other, &bob_key).await;
    assert!(waited <= Duration::from_millis(1600), "{waited:?}");
    // Every key of the member: the spare one too.
    refused_on(&client, &other, &spare).await;
}

#[tokio::test]
async fn a_key_revoked_on_one_node_is_refused_by_the_other_within_a_second() {
    if !on_postgres() {
        eprintln!("skipped: two nodes need REHOME_TEST_POSTGRES");
        return;
    }
    let app = spawn_app().await;
    let (other, _stop) = second_node(&app).await;
    let client = reqwest::Client::new();
    let acme = app.partner("acme").await;
    let key = json(app.post(KEYS, &acme.key, &json!({"label": "sync"})).await).await;
    let secret = key["secret"].as_str().unwrap().to_owned();
    let answer = client.get(format!("{other}/v1/listings/options")).bearer_auth(&secret).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(app.delete(&format!("{KEYS}/{}", key["id"]), &acme.key).await.status(), 200);
    let waited = refused_on(&client, &other, &secret).await;
    assert!(waited <= Duration::from_millis(1600), "{waited:?}");
}
