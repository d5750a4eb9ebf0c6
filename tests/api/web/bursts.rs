//! Sign-in limits under attempts sent at the same moment (decisions 8.1, 13.0): a burst of
//! sign-ins for one account checks at most five passwords, a burst from one address at
//! most its limit, and a burst of wrong current passwords on the password form at most
//! five. (The two-step code burst is in `two_step.rs`, beside its enrolment helpers.)

use std::sync::Arc;

use tokio::sync::Barrier;
use tokio::task::JoinSet;

use super::{admin, audit_actions, Browser, Page, INCORRECT, LOCKED, PASSWORD};
use crate::helpers::spawn_app_with;

/// A form as a burst posts it.
pub type Fields = Vec<(&'static str, String)>;

/// Posts every form of `forms` to `path` at once (each task waits until all are ready),
/// with `cookie` as the `Cookie` header; answers the pages in the order of `forms`.
pub async fn burst(base: &str, path: &str, cookie: &str, forms: Vec<Fields>) -> Vec<Page> {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let start = Arc::new(Barrier::new(forms.len()));
    let mut set = JoinSet::new();
    for (n, form) in forms.into_iter().enumerate() {
        let (client, start) = (client.clone(), Arc::clone(&start));
        let (url, cookie) = (format!("{base}{path}"), cookie.to_owned());
        set.spawn(async move {
            start.wait().await;
            let response = client.post(url).header("cookie", cookie).form(&form).send().await.expect("POST");
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response.text().await.expect("body");
            (n, Page { status, headers, body })
        });
    }
    let mut pages = set.join_all().await;
    pages.sort_by_key(|(n, _)| *n);
    pages.into_iter().map(|(_, page)| page).collect()
}

pub fn sign_in_form(email: &str, password: &str, csrf: &str) -> Fields {
    vec![("email", email.to_owned()), ("password", password.to_owned()), ("csrf", csrf.to_owned())]
}

fn count(pages: &[Page], status: u16, text: &str) -> usize {
    pages.iter().filter(|p| p.status == status && p.body.contains(text)).count()
}

fn statuses(pages: &[Page]) -> Vec<u16> {
    pages.iter().map(|p| p.status).collect()
}

#[tokio::test]
async fn a_burst_of_sign_ins_for_one_account_checks_at_most_five_passwords() {
    // The address limit is out of the way: only the account's allowance applies.
    let app = spawn_app_with(|c| c.signin_address_limit = 1000).await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    let csrf = browser.get("/dashboard/login").await.csrf();
    let mut forms: Vec<_> = (0..40).map(|n| sign_in_form(&email, &format!("wrong password no. {n}"), &csrf)).collect();
    forms.insert(20, sign_in_form(&email, PASSWORD, &csrf));

    let pages = burst(&app.base, "/dashboard/login", &browser.cookie_header(), forms).await;
    let incorrect = count(&pages, 401, INCORRECT);
    let locked = count(&pages, 401, LOCKED);
    let signed_in = pages.iter().filter(|p| p.location() == Some("/dashboard")).count();
    let busy = pages.iter().filter(|p| p.status == 503 && p.headers.contains_key("retry-after")).count();
    assert_eq!(incorrect + locked + signed_in + busy, 41, "each answer is one of these: {:?}", statuses(&pages));
    assert!(incorrect <= 5, "{incorrect} wrong passwords were checked");
    // Whether the right one came within the allowance or after it, the wrong ones beyond the
    // allowance were refused unchecked.
    assert!(locked >= 35 - busy, "{locked} refused as locked");
    let actions = audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.iter().filter(|a| *a == "sign_in.failed").count(), incorrect, "{actions:?}");
    let sql = format!("SELECT COUNT(*) FROM sign_in_failures WHERE user_id = {}", partner.user_id);
    assert_eq!(super::sql_i64(&app, &sql).await, Some(i64::try_from(incorrect).unwrap()));
    if incorrect == 5 {
        let after = Browser::new(&app).sign_in(&email, PASSWORD).await;
        assert!(after.status == 401 && after.body.contains(LOCKED), "locked after the burst: {}", after.body);
    }
}

/// Eight right passwords for one account sent at the same moment all sign in: an attempt
/// refused only because others were counted a moment ago waits for them to be checked (a
/// right one is taken back), so none is told "too many attempts".
#[tokio::test]
async fn eight_right_passwords_at_once_all_sign_in() {
    let app = spawn_app_with(|c| c.signin_address_limit = 1000).await;
    let (_, email) = admin(&app, "acme").await;
    let mut browser = Browser::new(&app);
    let csrf = browser.get("/dashboard/login").await.csrf();
    let forms: Vec<_> = (0..8).map(|_| sign_in_form(&email, PASSWORD, &csrf)).collect();
    let pages = burst(&app.base, "/dashboard/login", &browser.cookie_header(), forms).await;
    let signed_in = pages.iter().filter(|p| p.location() == Some("/dashboard")).count();
    let busy = pages.iter().filter(|p| p.status == 503 && p.headers.contains_key("retry-after")).count();
    assert_eq!(count(&pages, 401, LOCKED), 0, "a right password was refused as locked: {:?}", statuses(&pages));
    assert_eq!(signed_in + busy, 8, "{:?}", statuses(&pages));
    let sql = "SELECT COUNT(*) FROM sign_in_failures";
    assert_eq!(super::sql_i64(&app, sql).await, Some(0), "every right attempt was taken back");
}

#[tokio::test]
async fn a_burst_from_one_address_checks_at_most_the_address_limit() {
    let app = spawn_app_with(|c| c.signin_address_limit = 3).await;
    let mut browser = Browser::new(&app);
    let csrf = browser.get("/dashboard/login").await.csrf();
    // A spray: a different (unknown) email each time, so only the address limit applies.
    let forms = (0..64).map(|n| sign_in_form(&format!("spray{n}@acme.example"), "Summer2026!!!", &csrf)).collect();

    let pages = burst(&app.base, "/dashboard/login", &browser.cookie_header(), forms).await;
    let incorrect = count(&pages, 401, INCORRECT);
    let locked = count(&pages, 401, LOCKED);
    assert_eq!(incorrect + locked, 64, "{:?}", statuses(&pages));
    assert!(incorrect <= 3, "{incorrect} passwords were checked against a limit of 3");
    let failures = super::sql_i64(&app, "SELECT COUNT(*) FROM sign_in_failures WHERE ip = '127.0.0.1'").await;
    assert_eq!(failures, Some(i64::try_from(incorrect).unwrap()));
}

fn password_form(current: &str, new: &str, csrf: &str) -> Fields {
    vec![
        ("current_password", current.to_owned()),
        ("new_password", new.to_owned()),
        ("confirm_password", new.to_owned()),
        ("csrf", csrf.to_owned()),
    ]
}

const CURRENT_INCORRECT: &str = "The current password is incorrect.";

#[tokio::test]
async fn a_burst_of_wrong_current_passwords_checks_at_most_five_and_each_is_audited() {
    let app = spawn_app_with(|c| c.signin_address_limit = 1000).await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let csrf = browser.get("/dashboard").await.csrf();
    let new = "a brand new passphrase";
    let mut forms: Vec<_> = (0..40).map(|n| password_form(&format!("not my password {n}"), new, &csrf)).collect();
    forms.insert(20, password_form(PASSWORD, new, &csrf));

    let pages = burst(&app.base, "/dashboard/account/password", &browser.cookie_header(), forms).await;
    let incorrect = count(&pages, 422, CURRENT_INCORRECT);
    let locked = count(&pages, 422, LOCKED);
    // A change that went through answers 303 to the account page (post/redirect/get).
    let changed = pages.iter().filter(|p| p.status == 303 && p.location() == Some("/dashboard/account")).count();
    let busy = pages.iter().filter(|p| p.status == 503).count();
    assert_eq!(incorrect + locked + changed + busy, 41, "{:?}", statuses(&pages));
    assert!(incorrect <= 5, "{incorrect} current passwords were checked");
    let actions = audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.iter().filter(|a| *a == "password.change_failed").count(), incorrect, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| *a == "password.change_locked").count(), locked, "{actions:?}");
}

#[tokio::test]
async fn five_wrong_current_passwords_lock_the_password_form_and_sign_in_alike() {
    let app = spawn_app_with(|c| c.signin_lock_seconds = 600).await;
    let (partner, email) = admin(&app, "acme").await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let csrf = browser.get("/dashboard").await.csrf();
    let new = "a brand new passphrase";
    let fields = |current: &'static str| {
        [("current_password", current), ("new_password", new), ("confirm_password", new), ("csrf", csrf.as_str())]
    };
    for _ in 0..5 {
        let page = browser.post("/dashboard/account/password", &fields("not my password")).await;
        assert_eq!(page.status, 422);
        assert!(page.body.contains(CURRENT_INCORRECT), "{}", page.body);
    }
    let refused = browser.post("/dashboard/account/password", &fields(PASSWORD)).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains(LOCKED), "{}", refused.body);
    // Unchanged: the current password is still the old one, and the account's sign-in is
    // locked as well (the same secret was guessed at).
    let page = Browser::new(&app).sign_in(&email, PASSWORD).await;
    assert!(page.body.contains(LOCKED), "{}", page.body);
    let actions = audit_actions(&app, partner.brand_id).await;
    assert_eq!(actions.iter().filter(|a| *a == "password.change_failed").count(), 5, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| *a == "password.change_locked").count(), 1, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| *a == "password.changed").count(), 1, "the operator's only: {actions:?}");
}

#[tokio::test]
async fn after_five_failures_an_unknown_email_is_refused_as_an_existing_one_is() {
    let app = crate::helpers::spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let unknown = "nobody@acme.example";
    let mut answers = Vec::new();
    // One browser, so that the pages differ in nothing but the email typed back.
    let mut browser = Browser::new(&app);
    for typed in [email.as_str(), unknown] {
        for _ in 0..5 {
            let page = browser.sign_in(typed, "not the password at all").await;
            assert!(page.status == 401 && page.body.contains(INCORRECT), "{}", page.body);
        }
        let sixth = browser.sign_in(typed, "not the password at all").await;
        assert_eq!(sixth.status, 401);
        assert!(sixth.body.contains(LOCKED), "{typed}: {}", sixth.body);
        answers.push(sixth.body.replace(typed, "EMAIL"));
    }
    assert_eq!(answers[0], answers[1], "the lock tells nothing about which email has an account");
    // The email is counted as typed, normalised: case and surrounding spaces are the same email.
    let page = Browser::new(&app).sign_in(" NoBody@ACME.example ", "not the password at all").await;
    assert!(page.body.contains(LOCKED), "{}", page.body);
}
