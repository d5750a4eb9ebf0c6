//! Two-step sign-in: enrolment (QR code, secret, otpauth URL), codes computed here from the
//! secret shown on the page (RFC 6238 with totp-rs), each accepted once, the previous step
//! accepted and two steps ago refused, wrong codes, expiry, and the brand's requirement.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use rehome::domain::time::Ts;
use rehome::domain::user::Role;
use totp_rs::{Algorithm, Secret, TOTP};

use super::{admin, audit_actions, set_password, Browser, PASSWORD};
use crate::helpers::{spawn_app, TestApp};

const CODE_PAGE: &str = "/dashboard/login/code";

fn code(secret: &str, step: u64) -> String {
    let bytes = Secret::Encoded(secret.to_owned()).to_bytes().expect("base32 secret");
    TOTP::new(Algorithm::SHA1, 6, 1, 30, bytes, None, String::new()).expect("totp").generate(step * 30)
}

/// The step the server's clock is in after moving it to the middle of its next step: a
/// code computed for it is still of that step when the server checks it (for 15 s).
fn fresh_step(app: &TestApp) -> u64 {
    const STEP_MS: i64 = 30_000;
    let now = app.state.clock.now().timestamp_millis();
    let middle_of_next = (now / STEP_MS + 1) * STEP_MS + STEP_MS / 2;
    app.advance_clock(Duration::from_millis(u64::try_from(middle_of_next - now).unwrap_or(0)));
    u64::try_from(middle_of_next / STEP_MS).unwrap_or(0)
}

/// Enrols the signed-in `browser`; answers the secret. The last used step is then forgotten
/// so that each test chooses its steps freely.
pub async fn enrol(app: &TestApp, browser: &mut Browser, user_id: i64) -> String {
    enrol_with_codes(app, browser, user_id).await.0
}

/// Enrols the signed-in `browser`; answers the secret and the ten recovery codes shown once.
pub async fn enrol_with_codes(app: &TestApp, browser: &mut Browser, user_id: i64) -> (String, Vec<String>) {
    let page = browser.get("/dashboard/account/two-step").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let secret = page.text_of("totp-secret");
    let step = fresh_step(app);
    let done =
        browser.post("/dashboard/account/two-step", &[("code", &code(&secret, step)), ("csrf", &page.csrf())]).await;
    let shown = shown_once(browser, &done).await;
    let codes = recovery_codes(&shown);
    assert!(shown.body.contains("href=\"/dashboard/account\""), "continue to the account: {}", shown.body);
    forget_last_step(app, user_id).await;
    (secret, codes)
}

/// The recovery codes page an action redirected to (post/redirect/get), read once: the codes
/// are there, with a way to copy and download them; read again, it leads to the account
/// page instead and the codes are gone.
pub async fn shown_once(browser: &mut Browser, done: &super::Page) -> super::Page {
    done.assert_redirect("/dashboard/account/recovery-codes");
    let shown = browser.get("/dashboard/account/recovery-codes").await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains("data-copy=\"recovery-codes-text\""), "a copy button: {}", shown.body);
    assert!(shown.body.contains("download=\"rehome-recovery-codes.txt\""), "a download: {}", shown.body);
    let again = browser.get("/dashboard/account/recovery-codes").await;
    again.assert_redirect("/dashboard/account");
    for code in recovery_codes(&shown) {
        assert!(!again.body.contains(&code), "a reload shows the codes no more");
    }
    shown
}

/// The recovery codes a page shows (`xxxxx-xxxxx`), each once.
pub fn recovery_codes(page: &super::Page) -> Vec<String> {
    let list = page.body.split("id=\"recovery-codes\"").nth(1).expect("a list of recovery codes");
    let list = list.split("</ol>").next().unwrap_or_default();
    let codes: Vec<String> =
        list.split("<code>").skip(1).filter_map(|c| c.split("</code>").next()).map(str::to_owned).collect();
    assert_eq!(codes.len(), 10, "{}", page.body);
    assert!(codes.iter().all(|c| c.len() == 11 && c.as_bytes()[5] == b'-'), "{codes:?}");
    codes
}

async fn forget_last_step(app: &TestApp, user_id: i64) {
    let raw = app.db.raw().await;
    raw.execute(&format!("UPDATE users SET totp_last_step = NULL WHERE id = {user_id}")).await;
    raw.close().await;
}

/// Signs in with the password: the session then waits for a code.
async fn to_code_stage(app: &TestApp, email: &str) -> (Browser, String) {
    let mut browser = Browser::new(app);
    browser.sign_in(email, PASSWORD).await.assert_redirect(CODE_PAGE);
    let page = browser.get(CODE_PAGE).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<label for=\"code\">Code</label>") && page.body.contains(">Verify</button>"));
    (browser, page.csrf())
}

#[tokio::test]
async fn enrolment_shows_a_qr_code_the_secret_and_the_otpauth_url_and_confirms_with_a_code() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let page = browser.get("/dashboard/account/two-step").await;
    let secret = page.text_of("totp-secret");
    assert_eq!(secret.len(), 32, "20 bytes in base32");
    assert!(page.body.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""), "an inline SVG QR code");
    let url = page.text_of("totp-url").replace("&#38;", "&").replace("&amp;", "&");
    assert_eq!(url, format!("otpauth://totp/rehome:ada%40acme.example?secret={secret}&issuer=rehome"));
    assert_eq!(
        browser.get("/dashboard/account/two-step").await.text_of("totp-secret"),
        secret,
        "the same until confirmed"
    );

    let wrong = browser.post("/dashboard/account/two-step", &[("code", "12345"), ("csrf", &page.csrf())]).await;
    assert_eq!(wrong.status, 422);
    assert!(wrong.body.contains("The code is incorrect."));
    assert!(browser.get("/dashboard/account").await.body.contains("Two-step sign-in is off."));

    let step = fresh_step(&app);
    let done =
        browser.post("/dashboard/account/two-step", &[("code", &code(&secret, step)), ("csrf", &page.csrf())]).await;
    assert_eq!(recovery_codes(&shown_once(&mut browser, &done).await).len(), 10);
    let account = browser.get("/dashboard/account").await;
    assert!(account.body.contains("Two-step sign-in is on"), "{}", account.body);
    assert!(account.body.contains("You have 10 unused recovery codes of 10."), "{}", account.body);
    assert!(browser.get("/dashboard/account/two-step").await.body.contains("Two-step sign-in is on"));
    assert!(audit_actions(&app, partner.brand_id).await.contains(&"two_step.enrolled".to_owned()));
    // The secret is stored sealed, never in clear.
    let raw = app.db.raw().await;
    let sealed: Vec<u8> = crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query_scalar("SELECT totp_secret FROM users WHERE id = $1")
            .bind(partner.user_id)
            .fetch_one(pool)
            .await
            .unwrap()
    });
    raw.close().await;
    let plain = Secret::Encoded(secret).to_bytes().unwrap();
    assert!(sealed.len() > plain.len() && !sealed.windows(plain.len()).any(|w| w == plain));
}

#[tokio::test]
async fn codes_are_accepted_once_the_previous_step_too_but_not_two_steps_ago() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut first = Browser::signed_in(&app, &email).await;
    let secret = enrol(&app, &mut first, partner.user_id).await;

    let (mut browser, csrf) = to_code_stage(&app, &email).await;
    browser.get("/dashboard").await.assert_redirect("/dashboard/login");
    let waiting_token = browser.session().unwrap();
    let now = fresh_step(&app);
    let old = browser.post(CODE_PAGE, &[("code", &code(&secret, now - 2)), ("csrf", &csrf)]).await;
    assert_eq!(old.status, 401, "two steps ago");
    assert!(old.body.contains("The code is incorrect."));
    let previous = browser.post(CODE_PAGE, &[("code", &code(&secret, now - 1)), ("csrf", &csrf)]).await;
    previous.assert_redirect("/dashboard");
    assert_ne!(browser.session().unwrap(), waiting_token, "a new token once signed in");
    assert_eq!(browser.get("/dashboard").await.status, 200);

    // The same code again, in another sign-in: refused.
    let (mut again, csrf) = to_code_stage(&app, &email).await;
    let reused = again.post(CODE_PAGE, &[("code", &code(&secret, now - 1)), ("csrf", &csrf)]).await;
    assert_eq!(reused.status, 401);
    let current = again.post(CODE_PAGE, &[("code", &code(&secret, now)), ("csrf", &csrf)]).await;
    current.assert_redirect("/dashboard");
    let actions = audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.last().map(String::as_str), Some("sign_in.succeeded"));
    assert_eq!(actions.iter().filter(|a| *a == "sign_in.failed").count(), 2);
}

#[tokio::test]
async fn two_concurrent_uses_of_one_code_cannot_both_pass() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut first = Browser::signed_in(&app, &email).await;
    let secret = enrol(&app, &mut first, partner.user_id).await;
    let (mut a, csrf_a) = to_code_stage(&app, &email).await;
    let (mut b, csrf_b) = to_code_stage(&app, &email).await;
    let now = fresh_step(&app);
    let code = code(&secret, now);
    let (fa, fb) = ([("code", code.as_str()), ("csrf", &csrf_a)], [("code", code.as_str()), ("csrf", &csrf_b)]);
    let (ra, rb) = tokio::join!(a.post(CODE_PAGE, &fa), b.post(CODE_PAGE, &fb));
    let passed = [&ra, &rb].iter().filter(|r| r.status == 303).count();
    assert_eq!(passed, 1, "{} / {}", ra.status, rb.status);
}

#[tokio::test]
async fn five_wrong_codes_end_the_sign_in_and_a_code_page_expires_after_5_minutes() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut first = Browser::signed_in(&app, &email).await;
    enrol(&app, &mut first, partner.user_id).await;
    let (mut browser, csrf) = to_code_stage(&app, &email).await;
    for _ in 0..4 {
        let page = browser.post(CODE_PAGE, &[("code", "000000"), ("csrf", &csrf)]).await;
        assert_eq!(page.status, 401);
        assert!(page.body.contains("The code is incorrect."));
    }
    let ended = browser.post(CODE_PAGE, &[("code", "000000"), ("csrf", &csrf)]).await;
    assert_eq!(ended.status, 401);
    assert!(ended.body.contains("sign in again"), "{}", ended.body);
    assert!(browser.session().is_none());
    browser.get(CODE_PAGE).await.assert_redirect("/dashboard/login");

    // Expiry: a fresh app (the account above is now locked by its five failures).
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut first = Browser::signed_in(&app, &email).await;
    enrol(&app, &mut first, partner.user_id).await;
    let (mut browser, _) = to_code_stage(&app, &email).await;
    let raw = app.db.raw().await;
    let six_minutes_ago = Ts::from(Utc::now() - TimeDelta::minutes(6));
    crate::helpers::on_raw!(&raw, |pool| {
        sqlx::query("UPDATE sessions SET created_at = $1 WHERE stage = 'code'")
            .bind(six_minutes_ago)
            .execute(pool)
            .await
            .unwrap();
    });
    raw.close().await;
    browser.get(CODE_PAGE).await.assert_redirect("/dashboard/login");
}

#[tokio::test]
async fn a_brand_requiring_two_step_makes_members_enrol_before_signing_in() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (member_id, _) = app.user(&partner, "Mo Member", Role::Member).await;
    set_password(&app, member_id).await;
    let member_email = "mo.member@acme.example";

    // A member may not change the rule.
    let mut member = Browser::signed_in(&app, member_email).await;
    let page = member.get("/dashboard/account").await;
    assert!(!page.body.contains("Require two-step"), "not offered to members");
    let refused =
        member.post("/dashboard/account/require-two-step", &[("require_two_step", "on"), ("csrf", &page.csrf())]).await;
    assert_eq!(refused.status, 403);

    let mut admin_browser = Browser::signed_in(&app, &email).await;
    let csrf = admin_browser.get("/dashboard/account").await.csrf();
    let on =
        admin_browser.post("/dashboard/account/require-two-step", &[("require_two_step", "on"), ("csrf", &csrf)]).await;
    on.assert_redirect("/dashboard/account");
    let shown = admin_browser.get("/dashboard/account").await;
    assert!(shown.body.contains("checked") && shown.body.contains("now required for everyone"), "{}", shown.body);
    assert!(!admin_browser.get("/dashboard/account").await.body.contains("now required"), "the notice shows once");
    let entries = app.store.audit_page(partner.brand_id, 20, None).await.unwrap();
    let changed = entries.iter().find(|e| e.action == "two_step.requirement_changed").expect("audited");
    assert_eq!((changed.actor_type.as_str(), changed.actor_id), ("user", Some(partner.user_id)));
    assert_eq!(changed.ip.as_deref(), Some("127.0.0.1"));

    let mut member = Browser::new(&app);
    member.sign_in(member_email, PASSWORD).await.assert_redirect("/dashboard/account/two-step");
    member.get("/dashboard").await.assert_redirect("/dashboard/login");
    let page = member.get("/dashboard/account/two-step").await;
    assert!(page.body.contains("requires two-step"));
    let secret = page.text_of("totp-secret");
    let step = fresh_step(&app);
    let done =
        member.post("/dashboard/account/two-step", &[("code", &code(&secret, step)), ("csrf", &page.csrf())]).await;
    assert_eq!(done.status, 200, "the recovery codes, shown once, with the new session");
    assert_eq!(recovery_codes(&done).len(), 10);
    assert!(done.body.contains("href=\"/dashboard\""), "continue to the home");
    let home = member.get("/dashboard").await;
    assert_eq!(home.status, 200);
    assert!(home.body.contains("Signed in as Mo Member"));
    let actions = audit_actions(&app, partner.brand_id).await;
    assert!(actions.ends_with(&["two_step.enrolled".to_owned(), "sign_in.succeeded".to_owned()]), "{actions:?}");
}

#[tokio::test]
async fn a_burst_of_wrong_codes_checks_at_most_five() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut first = Browser::signed_in(&app, &email).await;
    let secret = enrol(&app, &mut first, partner.user_id).await;
    let (browser, csrf) = to_code_stage(&app, &email).await;
    let step = fresh_step(&app);
    let field = |code: String| vec![("code", code), ("csrf", csrf.clone())];
    let valid: Vec<_> = (step - 1..=step + 1).map(|s| code(&secret, s)).collect();
    let mut forms: Vec<_> =
        (100_000..).map(|n: u32| n.to_string()).filter(|c| !valid.contains(c)).take(40).map(field).collect();
    forms.insert(20, field(code(&secret, step)));

    let pages = super::bursts::burst(&app.base, CODE_PAGE, &browser.cookie_header(), forms).await;
    let wrong = pages.iter().filter(|p| p.status == 401 && p.body.contains("The code is incorrect.")).count();
    let ended = pages.iter().filter(|p| p.status == 401 && p.body.contains("sign in again")).count();
    let gone = pages.iter().filter(|p| p.location() == Some("/dashboard/login")).count();
    let signed_in = pages.iter().filter(|p| p.location() == Some("/dashboard")).count();
    let statuses: Vec<_> = pages.iter().map(|p| p.status).collect();
    assert_eq!(wrong + ended + gone + signed_in, 41, "{statuses:?}");
    // Four wrong codes are answered as wrong; the fifth ends the sign-in; none beyond is checked.
    assert!(wrong <= 4, "{wrong} wrong codes answered as wrong");
    let failed = audit_actions(&app, partner.brand_id).await.iter().filter(|a| *a == "sign_in.failed").count();
    assert!(failed <= 5, "{failed} wrong codes were checked");
}
