//! Sessions: idle (12 h) and absolute (7 days) expiry, last sight written at most once a
//! minute, sign-out, a password change ending sessions, a user no longer active.

use chrono::{TimeDelta, Utc};
use rehome::domain::time::Ts;

use super::{admin, audit_actions, sql_ts, Browser, PASSWORD};
use crate::helpers::spawn_app;

fn ago(delta: TimeDelta) -> Ts {
    Ts::from(Utc::now() - delta)
}

async fn session_id(app: &crate::helpers::TestApp, browser: &Browser) -> i64 {
    let hash = rehome::domain::apikey::hash_secret(&browser.session().expect("a session cookie"));
    let raw = app.db.raw().await;
    let id = crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query_scalar("SELECT id FROM sessions WHERE token_hash = $1").bind(&hash[..]).fetch_one(pool).await
    });
    raw.close().await;
    id.expect("session row")
}

#[tokio::test]
async fn a_session_idle_for_12_hours_ends() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let id = session_id(&app, &browser).await;
    sql_ts(&app, "UPDATE sessions SET last_seen_at = $1 WHERE id = $2", ago(TimeDelta::hours(11)), id).await;
    assert_eq!(browser.get("/dashboard").await.status, 200, "11 idle hours are fine");
    sql_ts(
        &app,
        "UPDATE sessions SET last_seen_at = $1 WHERE id = $2",
        ago(TimeDelta::hours(12) + TimeDelta::seconds(5)),
        id,
    )
    .await;
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
}

#[tokio::test]
async fn a_session_ends_7_days_after_it_began_however_busy() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let id = session_id(&app, &browser).await;
    sql_ts(&app, "UPDATE sessions SET created_at = $1 WHERE id = $2", ago(TimeDelta::days(6)), id).await;
    assert_eq!(browser.get("/dashboard").await.status, 200);
    sql_ts(
        &app,
        "UPDATE sessions SET created_at = $1 WHERE id = $2",
        ago(TimeDelta::days(7) + TimeDelta::seconds(5)),
        id,
    )
    .await;
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
    // An ended session stays ended.
    sql_ts(&app, "UPDATE sessions SET created_at = $1 WHERE id = $2", ago(TimeDelta::hours(1)), id).await;
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
}

#[tokio::test]
async fn last_seen_is_written_at_most_once_a_minute() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let id = session_id(&app, &browser).await;
    let seen = || async {
        let raw = app.db.raw().await;
        let at: Ts = crate::helpers::on_raw!(&raw, |pool| {
            sqlx::query_scalar("SELECT last_seen_at FROM sessions WHERE id = $1")
                .bind(id)
                .fetch_one(pool)
                .await
                .unwrap()
        });
        raw.close().await;
        at
    };
    let two_minutes_ago = ago(TimeDelta::minutes(2));
    sql_ts(&app, "UPDATE sessions SET last_seen_at = $1 WHERE id = $2", two_minutes_ago, id).await;
    browser.get("/dashboard").await;
    let touched = seen().await;
    assert!(touched > ago(TimeDelta::seconds(30)), "a stale sight is refreshed");
    browser.get("/dashboard").await;
    assert_eq!(seen().await, touched, "not written again within the minute");
}

#[tokio::test]
async fn signing_out_ends_the_session_for_good() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let token = browser.session().unwrap();
    let csrf = browser.get("/dashboard").await.csrf();
    let page = browser.post("/dashboard/logout", &[("csrf", &csrf)]).await;
    page.assert_redirect("/dashboard/login");
    assert!(browser.session().is_none(), "the cookie is cleared");
    // The old token no longer works even if presented again.
    browser.cookies.insert("rehome_session".into(), token);
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
    assert!(audit_actions(&app, partner.brand_id).await.contains(&"sign_out".to_owned()));
}

#[tokio::test]
async fn changing_the_password_ends_the_other_sessions_or_all_of_them() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut here = Browser::signed_in(&app, &email).await;
    let mut elsewhere = Browser::signed_in(&app, &email).await;
    let new = "a brand new passphrase";
    let csrf = here.get("/dashboard").await.csrf();

    // Field errors beside their fields, nothing changed.
    let mismatch = here
        .post(
            "/dashboard/account/password",
            &[
                ("current_password", PASSWORD),
                ("new_password", new),
                ("confirm_password", "different"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(mismatch.status, 422);
    assert!(mismatch.body.contains("The passwords do not match."));
    let short = here
        .post(
            "/dashboard/account/password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "short"),
                ("confirm_password", "short"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert!(short.body.contains("Use 12 to 128 characters."));
    let blank = " ".repeat(12);
    let fields =
        [("current_password", PASSWORD), ("new_password", &blank), ("confirm_password", &blank), ("csrf", &csrf)];
    let blank = here.post("/dashboard/account/password", &fields).await;
    assert_eq!(blank.status, 422);
    assert!(blank.body.contains("Spaces alone are not a password."), "{}", blank.body);
    let wrong = here
        .post(
            "/dashboard/account/password",
            &[
                ("current_password", "not my password"),
                ("new_password", new),
                ("confirm_password", new),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert!(wrong.body.contains("The current password is incorrect."));
    assert_eq!(elsewhere.get("/dashboard").await.status, 200);

    let changed = here
        .post(
            "/dashboard/account/password",
            &[("current_password", PASSWORD), ("new_password", new), ("confirm_password", new), ("csrf", &csrf)],
        )
        .await;
    changed.assert_redirect("/dashboard/account");
    let account = here.get("/dashboard/account").await;
    assert_eq!(account.status, 200, "this session stays");
    assert!(account.body.contains("Your password was changed"), "{}", account.body);
    elsewhere.get("/dashboard").await.assert_redirect("/dashboard/login");
    assert_eq!(Browser::new(&app).sign_in(&email, PASSWORD).await.status, 401);
    assert!(audit_actions(&app, partner.brand_id).await.contains(&"password.changed".to_owned()));

    // Everywhere, this session included.
    let mut third = Browser::new(&app);
    third.sign_in(&email, new).await.assert_redirect("/dashboard");
    let csrf = here.get("/dashboard").await.csrf();
    let fields = [
        ("current_password", new),
        ("new_password", PASSWORD),
        ("confirm_password", PASSWORD),
        ("sign_out_everywhere", "on"),
        ("csrf", &csrf),
    ];
    here.post("/dashboard/account/password", &fields).await.assert_redirect("/dashboard/login");
    here.get("/dashboard").await.assert_redirect("/dashboard/login");
    third.get("/dashboard").await.assert_redirect("/dashboard/login");
}

#[tokio::test]
async fn a_session_of_a_user_no_longer_active_is_invalid() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE users SET status = 'removed' WHERE id = {}", partner.user_id)).await;
    raw.close().await;
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
}
