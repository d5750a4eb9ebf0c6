//! The team: listing, invitations, email uniqueness and role changes with the last-admin rule.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rehome::domain::apikey::hash_secret;
use rehome::domain::user::Role;
use serde_json::{json, Value};

use super::{audit_entries, count, invite, reasons, TEAM};
use crate::helpers::{assert_error, json, on_raw, spawn_app, spawn_app_with};

fn ts(value: &Value) -> DateTime<Utc> {
    value.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a timestamp: {value}"))
}

#[tokio::test]
async fn the_team_lists_its_invited_and_active_members_and_names_the_caller() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (member_id, _) = app.user(&acme, "Sam Stock", Role::Member).await;
    let invited = invite(&app, &acme.key, "pat@acme.example", "Pat", "admin").await;

    let team = json(app.get(TEAM, &acme.key).await).await;
    assert_eq!(team["brand_id"], "acme");
    assert_eq!(team["caller_id"], acme.user_id);
    let members = team["members"].as_array().unwrap();
    let ids: Vec<i64> = members.iter().map(|m| m["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [acme.user_id, member_id, invited["id"].as_i64().unwrap()]);
    let ada = &members[0];
    let mut keys: Vec<&String> = ada.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["created_at", "display_name", "email", "id", "last_login_at", "role", "status", "totp_enrolled"]);
    assert_eq!(
        (&ada["email"], &ada["display_name"], &ada["role"], &ada["status"]),
        (&json!("ada@acme.example"), &json!("Ada Admin"), &json!("admin"), &json!("active"))
    );
    assert_eq!((&ada["totp_enrolled"], &ada["last_login_at"]), (&json!(false), &Value::Null));
    ts(&ada["created_at"]);
    assert_eq!((&members[1]["role"], &members[2]["status"]), (&json!("member"), &json!("invited")));
}

#[tokio::test]
async fn an_invitation_creates_an_invited_member_with_a_single_link_valid_72_hours() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let before = Utc::now();
    let response = app.post(TEAM, &acme.key, &json!({"email": "  Sam@Acme.Example ", "display_name": " Sam "})).await;
    assert_eq!(response.status(), 201);
    let sam = json(response).await;
    assert_eq!((&sam["email"], &sam["display_name"]), (&json!("sam@acme.example"), &json!("Sam")));
    assert_eq!(
        (&sam["role"], &sam["status"], &sam["totp_enrolled"]),
        (&json!("member"), &json!("invited"), &json!(false))
    );
    let id = sam["id"].as_i64().unwrap();

    let url = sam["invite_url"].as_str().unwrap();
    let token = url.strip_prefix(&format!("{}/dashboard/invite/", app.base)).expect("link under the public URL");
    assert!(token.len() >= 43 && token.bytes().all(|b| b.is_ascii_alphanumeric()), "{token}");
    let expires = ts(&sam["invite_expires_at"]);
    let hours = (expires - before).num_minutes() as f64 / 60.0;
    assert!((71.9..=72.1).contains(&hours), "valid {hours} h");

    // Only the token's hash is kept, on one unused invitation of the member.
    let raw = app.db.raw().await;
    let hashes: Vec<Vec<u8>> = on_raw!(&raw, |pool| sqlx::query_scalar(
        "SELECT token_hash FROM invitations WHERE user_id = $1 AND used_at IS NULL"
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .unwrap());
    raw.close().await;
    assert_eq!(hashes, [hash_secret(token).to_vec()]);
    assert_eq!(count(&app, "SELECT count(*) FROM mail_outbox WHERE brand_id = $1", acme.brand_id).await, 0);

    let entries = audit_entries(&app, &acme.key).await;
    let entry = entries.iter().find(|e| e["action"] == "member.invited").expect("audit entry");
    assert_eq!(entry["target"], format!("user:{id}"));
    assert_eq!((&entry["actor"]["type"], &entry["ip"]), (&json!("key"), &json!("127.0.0.1")));
}

#[tokio::test]
async fn with_mail_configured_the_invitation_is_queued_with_its_link_in_the_same_transaction() {
    let app = spawn_app_with(|config| {
        config.smtp_url = Some("smtp://127.0.0.1:9".into());
        config.mail_from = Some("Rehome <noreply@rehome.example>".into());
    })
    .await;
    let acme = app.partner("acme").await;
    let sam = invite(&app, &acme.key, "sam@acme.example", "Sam", "member").await;
    let url = sam["invite_url"].as_str().unwrap().to_owned();

    let raw = app.db.raw().await;
    let mails: Vec<(String, String, String, Option<Vec<u8>>)> = on_raw!(&raw, |pool| sqlx::query_as(
        "SELECT to_address, subject, text_body, sealed_text FROM mail_outbox WHERE brand_id = $1"
    )
    .bind(acme.brand_id)
    .fetch_all(pool)
    .await
    .unwrap());
    raw.close().await;
    assert_eq!(mails.len(), 1);
    let (to, subject, text, sealed) = &mails[0];
    assert_eq!(to, "sam@acme.example");
    assert!(subject.contains("acme Ltd") && subject.contains("Ada Admin"), "{subject}");
    // The link is sealed at rest: not in the row's text, nor in its sealed bytes.
    assert_eq!(text, "", "the text in the clear");
    let sealed = sealed.as_deref().expect("the text, sealed");
    let token = url.rsplit('/').next().unwrap();
    assert!(!sealed.windows(token.len()).any(|w| w == token.as_bytes()), "the link in the sealed bytes");
    // (The mail tests read the link in the message the SMTP server receives.)
}

#[tokio::test]
async fn an_email_belongs_to_one_live_user_across_all_brands() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    invite(&app, &acme.key, "sam@shared.example", "Sam", "member").await;
    for (key, email) in
        [(&acme.key, "sam@shared.example"), (&beta.key, "SAM@shared.example"), (&beta.key, "ada@acme.example")]
    {
        let response = app.post(TEAM, key, &json!({"email": email, "display_name": "Again"})).await;
        assert_error(response, 409, "email_taken").await;
    }
    // Nothing of the refused invitations was kept.
    assert_eq!(count(&app, "SELECT count(*) FROM users WHERE brand_id = $1", beta.brand_id).await, 1);
}

#[tokio::test]
async fn a_bad_invitation_names_every_reason() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    assert_eq!(reasons(app.post(TEAM, &acme.key, &json!({})).await).await, ["email_required", "display_name_required"]);
    let bad = json!({"email": "nope", "display_name": "x".repeat(121), "role": "owner", "team": 1});
    assert_eq!(
        reasons(app.post(TEAM, &acme.key, &bad).await).await,
        ["email_invalid", "display_name_too_long", "role_invalid", "team_unknown"]
    );
    let response = app.request(reqwest::Method::POST, TEAM, &acme.key).body("[1]").send().await.unwrap();
    assert_error(response, 400, "invalid_body").await;
}

#[tokio::test]
async fn roles_change_but_never_leave_the_brand_without_an_active_admin() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (sam, _) = app.user(&acme, "Sam", Role::Member).await;
    let invited = invite(&app, &acme.key, "pat@acme.example", "Pat", "admin").await;
    let path = |id: i64| format!("{TEAM}/{id}");

    // An invited admin is not an active one: Ada is the last.
    let response = app.patch(&path(acme.user_id), &acme.key, &json!({"role": "member"})).await;
    assert_error(response, 409, "last_admin").await;

    let promoted = json(app.patch(&path(sam), &acme.key, &json!({"role": "admin"})).await).await;
    assert_eq!(
        (&promoted["id"], &promoted["role"], &promoted["status"]),
        (&json!(sam), &json!("admin"), &json!("active"))
    );
    let demoted = app.patch(&path(acme.user_id), &acme.key, &json!({"role": "member"})).await;
    assert_eq!(demoted.status(), 200);
    assert_eq!(json(demoted).await["role"], "member");
    // Ada's key is now a member's: refused everywhere once the key cache (1 s) refreshes.
    let refused = || async { (app.get(TEAM, &acme.key).await.status() == 403).then_some(()) };
    crate::helpers::poll(std::time::Duration::from_millis(1500), refused).await;
    assert_error(app.get(TEAM, &acme.key).await, 403, "forbidden").await;
    let changes = "SELECT count(*) FROM audit_log WHERE action = 'member.role_changed' AND brand_id = $1";
    assert_eq!(count(&app, changes, acme.brand_id).await, 2);
    assert_eq!(invited["status"], "invited");
}

#[tokio::test]
async fn a_role_change_reads_its_body_and_finds_its_member() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (sam, _) = app.user(&acme, "Sam", Role::Member).await;
    let path = format!("{TEAM}/{sam}");
    assert_eq!(reasons(app.patch(&path, &acme.key, &json!({})).await).await, ["role_required"]);
    assert_eq!(
        reasons(app.patch(&path, &acme.key, &json!({"role": "boss", "x": 1})).await).await,
        ["role_invalid", "x_unknown"]
    );
    for id in ["999999", "abc", "0"] {
        let response = app.patch(&format!("{TEAM}/{id}"), &acme.key, &json!({"role": "admin"})).await;
        assert_error(response, 404, "member_not_found").await;
    }
    // Unchanged role: answered, nothing recorded.
    assert_eq!(app.patch(&path, &acme.key, &json!({"role": "member"})).await.status(), 200);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE brand_id = $1 AND action = 'member.role_changed'",
            acme.brand_id
        )
        .await,
        0
    );
}

/// Two admins demote each other at once, many times over: exactly one succeeds each time.
#[tokio::test]
async fn two_concurrent_demotions_of_the_last_two_admins_leave_exactly_one() {
    let app = Arc::new(spawn_app().await);
    for round in 0..6 {
        let acme = app.partner(&format!("race{round}")).await;
        let (bob, bob_key) = app.user(&acme, "Bob", Role::Admin).await;
        let gate = Arc::new(tokio::sync::Barrier::new(2));
        let demote = |key: String, target: i64| {
            let (app, gate) = (app.clone(), gate.clone());
            tokio::spawn(async move {
                gate.wait().await;
                let response = app.patch(&format!("{TEAM}/{target}"), &key, &json!({"role": "member"})).await;
                let status = response.status().as_u16();
                (status, json(response).await)
            })
        };
        let one = demote(acme.key.clone(), bob);
        let two = demote(bob_key.clone(), acme.user_id);
        let answers = [one.await.unwrap(), two.await.unwrap()];
        let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
        assert!(statuses.contains(&200), "round {round}: {answers:?}");
        // The loser either saw the last-admin rule, or its key had just been demoted.
        let loser = answers.iter().find(|(s, _)| *s != 200).unwrap_or_else(|| panic!("both succeeded: {answers:?}"));
        assert!(
            (loser.0 == 409 && loser.1["code"] == "last_admin") || (loser.0 == 403 && loser.1["code"] == "forbidden"),
            "round {round}: {answers:?}"
        );
        let admins = count(
            &app,
            "SELECT count(*) FROM users WHERE brand_id = $1 AND role = 'admin' AND status = 'active'",
            acme.brand_id,
        )
        .await;
        assert_eq!(admins, 1, "round {round}: {answers:?}");
    }
}

/// Two brands invite one address at once: the unique index lets exactly one have it.
#[tokio::test]
async fn two_concurrent_invitations_of_one_email_leave_exactly_one_user() {
    let app = Arc::new(spawn_app().await);
    let acme = app.partner("acme").await;
    let beta = app.partner("beta").await;
    for round in 0..4 {
        let email = format!("dup{round}@shared.example");
        let gate = Arc::new(tokio::sync::Barrier::new(2));
        let calls: Vec<_> = [acme.key.clone(), beta.key.clone()]
            .into_iter()
            .map(|key| {
                let (app, gate, email) = (app.clone(), gate.clone(), email.clone());
                tokio::spawn(async move {
                    gate.wait().await;
                    let response = app.post(TEAM, &key, &json!({"email": email, "display_name": "Dup"})).await;
                    let status = response.status().as_u16();
                    (status, json(response).await["code"].clone())
                })
            })
            .collect();
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.unwrap());
        }
        answers.sort_by_key(|(status, _)| *status);
        assert_eq!(answers[0].0, 201, "round {round}: {answers:?}");
        assert_eq!((answers[1].0, &answers[1].1), (409, &json!("email_taken")), "round {round}: {answers:?}");
    }
}
