//! Signing in with a password: alike failures, the per-account lockout and its expiry, the
//! per-address limit, audit entries, and the password rules of the command line.

use super::{admin, audit_actions, Browser, INCORRECT, LOCKED, PASSWORD};
use crate::helpers::{run_rehome, spawn_app, spawn_app_with};

#[tokio::test]
async fn the_right_password_signs_in_whatever_the_email_case() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    browser.sign_in(&email.to_uppercase(), PASSWORD).await.assert_redirect("/dashboard");
    let home = browser.get("/dashboard").await;
    assert_eq!(home.status, 200);
    assert!(home.body.contains("Signed in as Ada Admin"), "{}", home.body);
    assert!(home.body.contains(">Sign out</button>"));
    assert!(audit_actions(&app, partner.brand_id).await.contains(&"sign_in.succeeded".to_owned()));
    let last_login = super::sql_i64(
        &app,
        &format!("SELECT COUNT(*) FROM users WHERE id = {} AND last_login_at IS NOT NULL", partner.user_id),
    )
    .await;
    assert_eq!(last_login, Some(1));
}

#[tokio::test]
async fn an_unknown_email_and_a_wrong_password_fail_alike() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    let wrong = browser.sign_in(&email, "not the password at all").await;
    let unknown = browser.sign_in("nobody@acme.example", PASSWORD).await;
    assert_eq!(wrong.status, 401);
    assert_eq!(unknown.status, wrong.status);
    assert!(wrong.body.contains(INCORRECT), "{}", wrong.body);
    // The same page but for the email typed back into its field.
    assert_eq!(unknown.body.replace("nobody@acme.example", "EMAIL"), wrong.body.replace(&email, "EMAIL"));
    assert!(browser.session().is_none());
    // A user who has no password yet, or is not active, fails the same way.
    let (invited, _) = app.user(&partner, "Ivy Invited", rehome::domain::user::Role::Member).await;
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE users SET status = 'invited' WHERE id = {invited}")).await;
    raw.close().await;
    let page = browser.sign_in("ivy.invited@acme.example", PASSWORD).await;
    assert_eq!((page.status, page.body.contains(INCORRECT)), (401, true));
    // Failures are audited for the known account only (an unknown email has no brand).
    let actions = audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.iter().filter(|a| *a == "sign_in.failed").count(), 2, "{actions:?}");
    let failures = super::sql_i64(&app, "SELECT COUNT(*) FROM sign_in_failures WHERE user_id IS NULL").await;
    assert_eq!(failures, Some(1), "the unknown email's failure counts for its address");
}

#[tokio::test]
async fn five_failures_lock_the_account_right_password_or_not_until_the_window_passes() {
    let app = spawn_app_with(|c| c.signin_lock_seconds = 2).await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    for _ in 0..5 {
        let page = browser.sign_in(&email, "wrong password, again").await;
        assert_eq!(page.status, 401);
        assert!(page.body.contains(INCORRECT));
    }
    let locked = browser.sign_in(&email, PASSWORD).await;
    assert_eq!(locked.status, 401);
    assert!(locked.body.contains(LOCKED), "{}", locked.body);
    // ...and says until when, in UK time, and how long that is.
    assert!(
        locked.body.contains("You can sign in again from ") && locked.body.contains(" (in a minute)."),
        "{}",
        locked.body
    );
    assert!(browser.session().is_none());
    // Another account from the same address is not locked.
    let other = app.partner("other").await;
    super::set_password(&app, other.user_id).await;
    Browser::signed_in(&app, "ada@other.example").await;

    app.advance_clock(std::time::Duration::from_millis(2100));
    browser.sign_in(&email, PASSWORD).await.assert_redirect("/dashboard");
    let actions = audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.iter().filter(|a| *a == "sign_in.failed").count(), 5);
    assert_eq!(actions.iter().filter(|a| *a == "sign_in.locked").count(), 1);
    assert_eq!(actions.last().map(String::as_str), Some("sign_in.succeeded"));
}

#[tokio::test]
async fn an_address_with_too_many_failures_is_refused_for_every_account() {
    let app = spawn_app_with(|c| c.signin_address_limit = 3).await;
    let (_, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    for n in 0..3 {
        let page = browser.sign_in(&format!("spray{n}@acme.example"), "Summer2026!!!").await;
        assert!(page.body.contains(INCORRECT));
    }
    let refused = browser.sign_in(&email, PASSWORD).await;
    assert_eq!(refused.status, 401);
    assert!(refused.body.contains(LOCKED), "{}", refused.body);
    assert!(browser.session().is_none());
}

#[tokio::test]
async fn set_password_reads_stdin_checks_the_length_and_audits_the_operator() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let env = crate::helpers::binary_env(&app.db.url);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let id = partner.user_id.to_string();
    let set = |password: &str| run_with_stdin(&["users", "set-password", &id], &env, password);
    let (ok, _, err) = set("too short\n");
    assert!(!ok && err.contains("12 to 128"), "{err}");
    let (ok, _, err) = set("            \n");
    assert!(!ok && err.contains("not only spaces"), "twelve spaces: {err}");
    let (ok, _, err) = set("éééééééééééé\n");
    assert!(ok, "twelve characters, 24 bytes: {err}");
    let (ok, out, err) = set("a password with spaces \n");
    assert!(ok, "{err}");
    assert!(out.contains("signed out"));
    Browser::new(&app).sign_in("ada@acme.example", "a password with spaces ").await.assert_redirect("/dashboard");
    let entries = app.store.audit_page(partner.brand_id, 10, None).await.unwrap();
    let changed = entries.iter().find(|e| e.action == "password.changed").expect("audited");
    assert_eq!((changed.actor_type.as_str(), changed.target.as_deref()), ("operator", Some(&*format!("user:{id}"))));
    let (ok, _, err) = run_rehome(&["users", "set-password", "999999"], &env);
    assert!(!ok, "{err}");
}

/// Runs the binary with `stdin` as its standard input.
fn run_with_stdin(args: &[&str], env: &[(&str, &str)], stdin: &str) -> (bool, String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(crate::helpers::REHOME_BIN)
        .args(args)
        .env_remove("REHOME_DATA_KEY")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run rehome");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    let output = child.wait_with_output().expect("wait");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into(),
        String::from_utf8_lossy(&output.stderr).into(),
    )
}
