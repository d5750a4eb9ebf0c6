//! Accepting an invitation: the password form, its rules, single use (also under a race),
//! expiry, signing in (through enrolment when the brand requires two-step).

use chrono::{TimeDelta, Utc};
use rehome::domain::apikey::hash_secret;
use rehome::domain::time::Ts;
use rehome::domain::user::Role;

use super::{audit_actions, Browser};
use crate::helpers::{on_raw, spawn_app, Partner, TestApp};

const GONE: &str = "This invitation has been used or has expired.";

/// An invited member (no password yet) and the token of their link, valid for `valid_for`.
async fn invited(app: &TestApp, partner: &Partner, name: &str, valid_for: TimeDelta) -> (i64, String) {
    let (user_id, _) = app.user(partner, name, Role::Member).await;
    let token = rehome::domain::apikey::random_base62(43).unwrap();
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE users SET status = 'invited' WHERE id = {user_id}")).await;
    let now = Utc::now();
    on_raw!(&raw, |pool| {
        sqlx::query("INSERT INTO invitations (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(&hash_secret(&token)[..])
            .bind(user_id)
            .bind(Ts::from(now))
            .bind(Ts::from(now + valid_for))
            .execute(pool)
            .await
            .unwrap();
    });
    raw.close().await;
    (user_id, token)
}

async fn accept(browser: &mut Browser, token: &str, password: &str, confirm: &str) -> super::Page {
    let path = format!("/dashboard/invite/{token}");
    let form = browser.get(&path).await;
    assert_eq!(form.status, 200, "{}", form.body);
    browser.post(&path, &[("password", password), ("confirm_password", confirm), ("csrf", &form.csrf())]).await
}

#[tokio::test]
async fn an_invitation_sets_the_password_signs_in_and_works_once() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (user_id, token) = invited(&app, &partner, "Ivy New", TimeDelta::hours(72)).await;
    let mut browser = Browser::new(&app);
    let form = browser.get(&format!("/dashboard/invite/{token}")).await;
    for label in
        ["<label for=\"password\">Password</label>", "<label for=\"confirm_password\">Confirm password</label>"]
    {
        assert!(form.body.contains(label), "{label}");
    }
    assert!(form.body.contains(">Set password</button>") && form.body.contains("ivy.new@acme.example"));
    // The password rule as the server checks it (decisions 8.1), read from one place.
    assert!(form.body.contains("12 to 128 characters") && form.body.contains(r#"minlength="12" maxlength="128""#));

    let mismatch = accept(&mut browser, &token, "a good long password", "a good long passwore").await;
    assert_eq!(mismatch.status, 422);
    assert!(mismatch.body.contains("The passwords do not match."));
    let short = accept(&mut browser, &token, "elevenchars", "elevenchars").await;
    assert!(short.body.contains("Use 12 to 128 characters."));
    let long = "x".repeat(129);
    assert!(accept(&mut browser, &token, &long, &long).await.body.contains("Use 12 to 128 characters."));
    // Twelve spaces (or other white space, or invisible characters) are not a password.
    for blank in [" ".repeat(12), "\u{a0}".repeat(12), " \t".repeat(6), "\u{200b}".repeat(12), " ".repeat(128)] {
        let page = accept(&mut browser, &token, &blank, &blank).await;
        assert_eq!(page.status, 422, "{blank:?}");
        assert!(page.body.contains("Spaces alone are not a password."), "{blank:?}: {}", page.body);
    }
    assert!(browser.session().is_none());

    let password = "🦀".repeat(12);
    accept(&mut browser, &token, &password, &password).await.assert_redirect("/dashboard");
    assert!(browser.get("/dashboard").await.body.contains("Signed in as Ivy New"));
    let status =
        super::sql_i64(&app, &format!("SELECT COUNT(*) FROM users WHERE id = {user_id} AND status = 'active'")).await;
    assert_eq!(status, Some(1));
    let actions = audit_actions(&app, partner.brand_id).await;
    assert!(actions.contains(&"member.joined".to_owned()), "{actions:?}");

    // The link is spent: its page and a second acceptance both say so.
    let mut other = Browser::new(&app);
    let page = other.get(&format!("/dashboard/invite/{token}")).await;
    assert_eq!(page.status, 410);
    assert!(page.body.contains(GONE));
    let csrf = other.get("/dashboard/login").await.csrf();
    let again = other
        .post(
            &format!("/dashboard/invite/{token}"),
            &[("password", "another password!"), ("confirm_password", "another password!"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(again.status, 410);
    assert!(other.session().is_none());
    // The password set is the one that works.
    Browser::new(&app).sign_in("ivy.new@acme.example", &password).await.assert_redirect("/dashboard");
}

#[tokio::test]
async fn of_two_concurrent_acceptances_one_wins() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, token) = invited(&app, &partner, "Ivy New", TimeDelta::hours(72)).await;
    let path = format!("/dashboard/invite/{token}");
    let (mut a, mut b) = (Browser::new(&app), Browser::new(&app));
    let (ca, cb) = (a.get(&path).await.csrf(), b.get(&path).await.csrf());
    let (pa, pb) = ("password number one", "password number two");
    let (fa, fb) = (
        [("password", pa), ("confirm_password", pa), ("csrf", &ca)],
        [("password", pb), ("confirm_password", pb), ("csrf", &cb)],
    );
    let (ra, rb) = tokio::join!(a.post(&path, &fa), b.post(&path, &fb));
    let mut statuses = [ra.status, rb.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [303, 410]);
}

#[tokio::test]
async fn an_expired_or_unknown_invitation_shows_the_same_clear_page() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, token) = invited(&app, &partner, "Ivy Late", TimeDelta::seconds(-1)).await;
    let mut browser = Browser::new(&app);
    let expired = browser.get(&format!("/dashboard/invite/{token}")).await;
    let unknown = browser.get("/dashboard/invite/no-such-token").await;
    assert_eq!((expired.status, unknown.status), (410, 410));
    assert!(expired.body.contains(GONE));
    assert_eq!(expired.body, unknown.body);
    let csrf = browser.get("/dashboard/login").await.csrf();
    let posted = browser
        .post(
            &format!("/dashboard/invite/{token}"),
            &[("password", "a good long password"), ("confirm_password", "a good long password"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(posted.status, 410);
}

#[tokio::test]
async fn accepting_in_a_brand_requiring_two_step_leads_to_enrolment() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE brands SET require_totp = TRUE WHERE id = {}", partner.brand_id)).await;
    raw.close().await;
    let (_, token) = invited(&app, &partner, "Ivy New", TimeDelta::hours(72)).await;
    let mut browser = Browser::new(&app);
    let password = "a good long password";
    accept(&mut browser, &token, password, password).await.assert_redirect("/dashboard/account/two-step");
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
    assert_eq!(browser.get("/dashboard/account/two-step").await.status, 200);
}

#[tokio::test]
async fn the_invitation_form_needs_its_csrf_token() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (user_id, token) = invited(&app, &partner, "Ivy New", TimeDelta::hours(72)).await;
    let mut browser = Browser::new(&app);
    let path = format!("/dashboard/invite/{token}");
    browser.get(&path).await;
    let posted = browser
        .post(&path, &[("password", "a good long password"), ("confirm_password", "a good long password")])
        .await;
    assert_eq!(posted.status, 403);
    assert_eq!(browser.get(&path).await.status, 200, "still unused");
    let active =
        super::sql_i64(&app, &format!("SELECT COUNT(*) FROM users WHERE id = {user_id} AND status = 'active'")).await;
    assert_eq!(active, Some(0));
}
