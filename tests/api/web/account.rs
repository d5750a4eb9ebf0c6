//! The user's own account page (decisions 9.7): recovery codes (shown once, each usable once
//! instead of a two-step code, renewed with the password), turning two-step off with the
//! password and a code, an admin's reset of a member's two-step, the sessions list; and
//! around signing in: the page first asked for, the notice after signing out, the name in
//! the header, and the confirmation step of destructive actions (decisions 9.8).

use rehome::domain::user::Role;
use serde_json::{json, Value};

use super::two_step::{enrol_with_codes, recovery_codes, shown_once};
use super::{admin, audit_actions, set_password, sql_i64, Browser, PASSWORD};
use crate::helpers::{spawn_app, TestApp};

const CODE_PAGE: &str = "/dashboard/login/code";
const ACCOUNT: &str = "/dashboard/account";

/// Signs in with the password: the session then waits for a code; answers its CSRF token.
async fn at_code_stage(app: &TestApp, email: &str) -> (Browser, String) {
    let mut browser = Browser::new(app);
    browser.sign_in(email, PASSWORD).await.assert_redirect(CODE_PAGE);
    let csrf = browser.get(CODE_PAGE).await.csrf();
    (browser, csrf)
}

async fn unused_codes(app: &TestApp, user_id: i64) -> i64 {
    sql_i64(app, &format!("SELECT COUNT(*) FROM recovery_codes WHERE user_id = {user_id} AND used_at IS NULL"))
        .await
        .unwrap_or(0)
}

#[tokio::test]
async fn a_recovery_code_signs_in_once_and_new_codes_replace_the_old() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let (_, codes) = enrol_with_codes(&app, &mut ada, partner.user_id).await;
    assert_eq!(unused_codes(&app, partner.user_id).await, 10);
    // Only hashes are stored.
    let stored = sql_i64(&app, "SELECT COUNT(*) FROM recovery_codes WHERE code_hash IS NOT NULL").await;
    assert_eq!(stored, Some(10));

    // Typed as people type: upper case, a space instead of the dash.
    let (mut phone_lost, csrf) = at_code_stage(&app, &email).await;
    let typed = codes[0].to_uppercase().replace('-', " ");
    // Signed in on the account page, told how many codes are left.
    phone_lost.post(CODE_PAGE, &[("code", &typed), ("csrf", &csrf)]).await.assert_redirect(ACCOUNT);
    let told = phone_lost.get(ACCOUNT).await;
    assert!(
        told.body.contains(
            "You signed in with a recovery code: it cannot be used again. You have 9 unused recovery \
                            codes left."
        ),
        "{}",
        told.body
    );
    assert_eq!(phone_lost.get("/dashboard").await.status, 200);
    let actions = audit_actions(&app, partner.brand_id).await;
    assert!(
        actions.ends_with(&["two_step.recovery_code_used".to_owned(), "sign_in.succeeded".to_owned()]),
        "{actions:?}"
    );
    assert!(phone_lost.get(ACCOUNT).await.body.contains("You have 9 unused recovery codes of 10."));

    // Used once: refused the second time, as a wrong code.
    let (mut again, csrf) = at_code_stage(&app, &email).await;
    let reused = again.post(CODE_PAGE, &[("code", &codes[0]), ("csrf", &csrf)]).await;
    assert_eq!(reused.status, 401);
    assert!(reused.body.contains("The code is incorrect."));

    // New codes need the password; a wrong one changes nothing.
    let csrf = ada.get(ACCOUNT).await.csrf();
    let wrong =
        ada.post("/dashboard/account/recovery-codes", &[("password", "not my password!"), ("csrf", &csrf)]).await;
    assert_eq!(wrong.status, 422);
    assert!(wrong.body.contains("The current password is incorrect"), "{}", wrong.body);
    assert_eq!(unused_codes(&app, partner.user_id).await, 9);
    let renewed = ada.post("/dashboard/account/recovery-codes", &[("password", PASSWORD), ("csrf", &csrf)]).await;
    let renewed = shown_once(&mut ada, &renewed).await;
    let fresh = recovery_codes(&renewed);
    assert_eq!(unused_codes(&app, partner.user_id).await, 10, "a reload of the codes made no new set");
    assert!(fresh.iter().all(|c| !codes.contains(c)));
    assert_eq!(unused_codes(&app, partner.user_id).await, 10);
    assert!(!ada.get(ACCOUNT).await.body.contains(&fresh[0]), "shown once");
    let (mut old, csrf) = at_code_stage(&app, &email).await;
    assert_eq!(old.post(CODE_PAGE, &[("code", &codes[1]), ("csrf", &csrf)]).await.status, 401, "old codes are gone");
    let (mut new, csrf) = at_code_stage(&app, &email).await;
    new.post(CODE_PAGE, &[("code", &fresh[1]), ("csrf", &csrf)]).await.assert_redirect(ACCOUNT);
    assert!(audit_actions(&app, partner.brand_id).await.contains(&"two_step.recovery_codes_renewed".to_owned()));
}

#[tokio::test]
async fn two_step_turns_off_with_the_password_and_a_code_unless_the_brand_requires_it() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let (_, codes) = enrol_with_codes(&app, &mut ada, partner.user_id).await;
    let csrf = ada.get(ACCOUNT).await.csrf();

    let wrong_code = ada
        .post("/dashboard/account/two-step/off", &[("password", PASSWORD), ("code", "000000"), ("csrf", &csrf)])
        .await;
    assert_eq!(wrong_code.status, 422);
    assert!(wrong_code.body.contains("id=\"off_code-error\">The code is incorrect"), "{}", wrong_code.body);
    let wrong_password = ada
        .post(
            "/dashboard/account/two-step/off",
            &[("password", "not my password!"), ("code", &codes[0]), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(wrong_password.status, 422);
    assert!(wrong_password.body.contains("id=\"off_password-error\">The current password is incorrect"));

    // While the brand requires two-step, it stays on.
    ada.post("/dashboard/account/require-two-step", &[("require_two_step", "on"), ("csrf", &csrf)]).await;
    let required = ada
        .post("/dashboard/account/two-step/off", &[("password", PASSWORD), ("code", &codes[0]), ("csrf", &csrf)])
        .await;
    assert_eq!(required.status, 409);
    assert!(required.body.contains("Your brand requires two-step sign-in"), "{}", required.body);
    assert_eq!(unused_codes(&app, partner.user_id).await, 10, "nothing changed");
    ada.post("/dashboard/account/require-two-step", &[("csrf", &csrf)]).await;

    let done = ada
        .post("/dashboard/account/two-step/off", &[("password", PASSWORD), ("code", &codes[0]), ("csrf", &csrf)])
        .await;
    done.assert_redirect(ACCOUNT);
    let account = ada.get(ACCOUNT).await;
    assert!(account.body.contains("Two-step sign-in is off. Signing in now asks only for your password."));
    assert_eq!(unused_codes(&app, partner.user_id).await, 0, "the recovery codes went with it");
    Browser::signed_in(&app, &email).await;
    assert!(audit_actions(&app, partner.brand_id).await.contains(&"two_step.disabled".to_owned()));
}

#[tokio::test]
async fn an_admin_resets_a_members_two_step_after_a_confirmation() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (mo_id, _) = app.user(&partner, "Mo Member", Role::Member).await;
    set_password(&app, mo_id).await;
    let mo_email = "mo.member@acme.example";
    let mut mo = Browser::signed_in(&app, mo_email).await;
    enrol_with_codes(&app, &mut mo, mo_id).await;
    let enrolled = || async {
        sql_i64(&app, &format!("SELECT COUNT(*) FROM users WHERE id = {mo_id} AND totp_secret IS NOT NULL")).await
    };
    assert_eq!(enrolled().await, Some(1));

    let mut ada = Browser::signed_in(&app, &email).await;
    let team = ada.get("/dashboard/team").await;
    assert!(team.body.contains(&format!("action=\"/dashboard/team/{mo_id}/reset-two-step\"")), "{}", team.body);
    let confirm = ada.get(&format!("/dashboard/team/{mo_id}/reset-two-step")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains(">Reset two-step sign-in for Mo Member</button>"), "{}", confirm.body);
    assert_eq!(enrolled().await, Some(1), "opening the confirmation changes nothing");

    // A member may not; an admin may not reset their own here.
    let mo_csrf = mo.get(ACCOUNT).await.csrf();
    assert_eq!(mo.get(&format!("/dashboard/team/{mo_id}/reset-two-step")).await.status, 403);
    assert_eq!(mo.post(&format!("/dashboard/team/{mo_id}/reset-two-step"), &[("csrf", &mo_csrf)]).await.status, 403);
    let own =
        ada.post(&format!("/dashboard/team/{}/reset-two-step", partner.user_id), &[("csrf", &confirm.csrf())]).await;
    assert_eq!(own.status, 409);
    assert!(own.body.contains("your account page"), "{}", own.body);

    let reset = ada.post(&format!("/dashboard/team/{mo_id}/reset-two-step"), &[("csrf", &confirm.csrf())]).await;
    reset.assert_redirect("/dashboard/team");
    assert!(ada.get("/dashboard/team").await.body.contains("Their two-step sign-in was reset"));
    assert_eq!(enrolled().await, Some(0));
    assert_eq!(unused_codes(&app, mo_id).await, 0);
    mo.get("/dashboard").await.assert_redirect("/dashboard/login");
    Browser::signed_in(&app, mo_email).await;
    let entries = app.store.audit_page(partner.brand_id, 50, None).await.unwrap();
    let entry = entries.iter().find(|e| e.action == "two_step.reset").expect("audited");
    assert_eq!((entry.actor_id, entry.target.as_deref()), (Some(partner.user_id), Some(&*format!("user:{mo_id}"))));
}

#[tokio::test]
async fn signing_in_returns_to_the_page_first_asked_for_and_only_to_this_sites_pages() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    let asked = browser.get("/dashboard/wallet?year=2026").await;
    asked.assert_redirect("/dashboard/login");
    assert!(browser.cookies.contains_key("rehome_next"));
    browser.sign_in(&email, PASSWORD).await.assert_redirect("/dashboard/wallet?year=2026");
    assert!(!browser.cookies.contains_key("rehome_next"), "spent");
    browser.get("/dashboard/login").await.assert_redirect("/dashboard");

    // A forged page to return to is not followed.
    for forged in ["https%3A%2F%2Fevil.example%2F", "%2F%2Fevil.example", "%2Fv1%2Flistings"] {
        let mut browser = Browser::new(&app);
        browser.cookies.insert("rehome_next".into(), forged.into());
        browser.sign_in(&email, PASSWORD).await.assert_redirect("/dashboard");
    }

    // Through the two-step code page too.
    let mut ada = Browser::signed_in(&app, &email).await;
    let (_, codes) = enrol_with_codes(&app, &mut ada, partner.user_id).await;
    let mut browser = Browser::new(&app);
    browser.get("/dashboard/team").await.assert_redirect("/dashboard/login");
    browser.sign_in(&email, PASSWORD).await.assert_redirect(CODE_PAGE);
    let csrf = browser.get(CODE_PAGE).await.csrf();
    browser.post(CODE_PAGE, &[("code", &codes[0]), ("csrf", &csrf)]).await.assert_redirect("/dashboard/team");
}

#[tokio::test]
async fn signing_out_says_so_once_and_the_name_links_to_the_account_on_every_page() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    for page in
        ["/dashboard", ACCOUNT, "/dashboard/listings", "/dashboard/team", "/dashboard/wallet", "/dashboard/settings"]
    {
        let page = ada.get(page).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("<a class=\"who\" href=\"/dashboard/account\""), "{}", page.body);
    }
    let csrf = ada.get("/dashboard").await.csrf();
    ada.post("/dashboard/logout", &[("csrf", &csrf)]).await.assert_redirect("/dashboard/login");
    let login = ada.get("/dashboard/login").await;
    assert!(login.body.contains("You are signed out."), "{}", login.body);
    assert!(!ada.get("/dashboard/login").await.body.contains("You are signed out."), "once");
}

#[tokio::test]
async fn the_account_lists_its_sessions_and_signs_the_others_out() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut laptop = Browser::signed_in(&app, &email).await;
    let mut phone = Browser::signed_in(&app, &email).await;
    let page = laptop.get(ACCOUNT).await;
    assert_eq!(page.body.matches("127.0.0.1").count(), 2, "{}", page.body);
    assert_eq!(page.body.matches("(this session)").count(), 1);
    laptop.post("/dashboard/account/sessions/end-others", &[("csrf", &page.csrf())]).await.assert_redirect(ACCOUNT);
    assert!(laptop.get(ACCOUNT).await.body.contains("Your other sessions were signed out."));
    phone.get("/dashboard").await.assert_redirect("/dashboard/login");
    assert_eq!(laptop.get("/dashboard").await.status, 200);
}

/// The brand's keys as the API lists them.
async fn keys(app: &TestApp, key: &str) -> Vec<Value> {
    let listed: Value = app.get("/v1/partner/settings/integrations/keys", key).await.json().await.unwrap();
    listed["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn one_click_on_a_destructive_button_changes_nothing() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (mo_id, _) = app.user(&partner, "Mo Member", Role::Member).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let key_id = keys(&app, &partner.key).await[0]["id"].as_i64().unwrap();
    let webhook = json!({"url": "https://hooks.acme.example/rehome", "enabled": true});
    let configured = app.patch("/v1/partner/settings/integrations/webhook", &partner.key, &webhook).await;
    assert_eq!(configured.status(), 200);
    let warehouse: Value = app
        .post("/v1/partner/settings/warehouses", &partner.key, &json!({"label": "North"}))
        .await
        .json()
        .await
        .unwrap();
    let warehouse_id = warehouse["warehouse"]["id"].as_str().expect("a warehouse").to_owned();

    let steps = [
        (format!("/dashboard/integrations/keys/{key_id}/revoke"), ">Revoke key</button>"),
        (format!("/dashboard/team/{mo_id}/remove"), ">Remove Mo Member</button>"),
        ("/dashboard/integrations/webhook/rotate".to_owned(), ">Rotate secret now</button>"),
        ("/dashboard/deliveries/replay-dead".to_owned(), ">Retry every dead event now</button>"),
        (format!("/dashboard/settings/warehouses/{warehouse_id}/delete"), ">Delete warehouse</button>"),
    ];
    for (path, button) in &steps {
        let page = ada.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert!(page.body.contains(button), "{path}: {}", page.body);
        assert!(page.body.contains(&format!("<form method=\"post\" action=\"{path}\">")), "{path}");
        // Asked by htmx: the same step as a fragment to put in place (no page around it),
        // and the answer says it varies with the header.
        let inline = ada.get_with(path, &[("HX-Request", "true")]).await;
        assert_eq!(inline.status, 200, "{path}: {}", inline.body);
        assert!(inline.body.starts_with("<div class=\"confirm-inline\""), "{path}: {}", inline.body);
        assert!(!inline.body.contains("<html") && !inline.body.contains("<nav"), "{path}: {}", inline.body);
        assert!(inline.body.contains(button) && inline.body.contains(&format!("action=\"{path}\"")), "{path}");
        assert_eq!(inline.body.matches("<a href=\"").count(), 1, "{path}: one way back: {}", inline.body);
        assert_eq!(inline.headers.get("vary").and_then(|v| v.to_str().ok()), Some("HX-Request"), "{path}");
    }
    assert!(keys(&app, &partner.key).await.iter().all(|k| k["revoked_at"].is_null()), "no key revoked");
    let team: Value = app.get("/v1/partner/settings/team", &partner.key).await.json().await.unwrap();
    assert!(team["members"].as_array().unwrap().iter().any(|m| m["id"] == mo_id), "still a member");
    let actions = audit_actions(&app, partner.brand_id).await;
    for done in ["key.revoked", "member.removed", "webhook.secret_rotated", "webhook.deliveries_replayed"] {
        assert!(!actions.iter().any(|a| a == done), "{done} after one click: {actions:?}");
    }
    let warehouses: Value = app.get("/v1/partner/settings/warehouses", &partner.key).await.json().await.unwrap();
    assert!(warehouses.to_string().contains(&warehouse_id), "the warehouse is still there");
    // The list pages offer each as a GET form (no token, nothing posted) that htmx sends
    // for the step in its place.
    let integrations = ada.get("/dashboard/integrations").await;
    let revoke = format!("/dashboard/integrations/keys/{key_id}/revoke");
    assert!(integrations.body.contains(&format!(
        "<form method=\"get\" action=\"{revoke}\" hx-get=\"{revoke}\" hx-target=\"this\" hx-swap=\"outerHTML\">"
    )));
    // A step for a key that is gone sends htmx to the page instead of swapping it in.
    let gone = ada.get_with("/dashboard/integrations/keys/99999/revoke", &[("HX-Request", "true")]).await;
    assert_eq!(gone.status, 200);
    assert_eq!(gone.headers.get("hx-redirect").and_then(|v| v.to_str().ok()), Some("/dashboard/integrations"));
}

#[tokio::test]
async fn a_member_on_an_admin_page_and_anyone_on_an_unknown_record_are_told_so() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (mo_id, _) = app.user(&partner, "Mo Member", Role::Member).await;
    set_password(&app, mo_id).await;
    let mut mo = Browser::signed_in(&app, "mo.member@acme.example").await;
    for admin_page in ["/dashboard/team", "/dashboard/integrations", "/dashboard/audit-log"] {
        let page = mo.get(admin_page).await;
        assert_eq!(page.status, 403, "{admin_page}");
        assert!(page.body.contains("This page is for your brand&#39;s admins."), "{}", page.body);
        assert!(!page.body.contains("expired"), "not the CSRF message");
    }
    let mut ada = Browser::signed_in(&app, &email).await;
    for unknown in ["/dashboard/listings/99999", "/dashboard/listings/abc", "/dashboard/deliveries/evt_nope"] {
        let page = ada.get(unknown).await;
        assert_eq!(page.status, 404, "{unknown}: {}", page.body);
        assert!(page.body.contains("There is no such record in your brand"), "{}", page.body);
    }
}
