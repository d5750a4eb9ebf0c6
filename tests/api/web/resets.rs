//! Choosing a new password with a link (the dashboard speaks to people, account recovery):
//! asked for on the sign-in page and mailed through the outbox, or sent by an admin from
//! Team; the link works once, within an hour, only the newest works, and using it ends
//! every session of the user. Asking answers the same whatever the email, and a burst of
//! asks sends no more than the hour's three links.

use super::{admin, audit_actions, set_password, Browser, PASSWORD};
use crate::helpers::{spawn_app, spawn_app_with_mail, SmtpServer, TestApp};

const NEW_PASSWORD: &str = "a brand new passphrase";
const FORGOT: &str = "/dashboard/login/forgot";

/// Asks for a link for `email` on the forgot page; answers the page.
async fn ask(app: &TestApp, email: &str) -> super::Page {
    let mut browser = Browser::new(app);
    let form = browser.get(FORGOT).await;
    assert_eq!(form.status, 200, "{}", form.body);
    browser.post(FORGOT, &[("email", email), ("csrf", &form.csrf())]).await
}

/// The reset link in a mail's text.
fn link_in(text: &str) -> String {
    let start = text.find("/dashboard/reset/").unwrap_or_else(|| panic!("no link in {text}"));
    let end = text[start..].find(char::is_whitespace).map_or(text.len(), |n| start + n);
    text[start..end].to_owned()
}

async fn links_made(app: &TestApp) -> i64 {
    let raw = app.db.raw().await;
    let n = crate::helpers::on_raw!(&raw, |pool| sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM password_resets")
        .fetch_one(pool)
        .await
        .unwrap());
    raw.close().await;
    n
}

#[tokio::test]
async fn a_forgotten_password_is_changed_with_the_mailed_link_once() {
    let Some(smtp) = SmtpServer::start("a_forgotten_password").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let (partner, email) = admin(&app, "acme").await;
    let mut before = Browser::signed_in(&app, &email).await;

    // The sign-in page leads to it; asking answers the same for an account and for none.
    assert!(Browser::new(&app).get("/dashboard/login").await.body.contains("href=\"/dashboard/login/forgot\""));
    let asked = ask(&app, &email.to_uppercase()).await;
    assert_eq!(asked.status, 200);
    assert!(asked.body.contains("If an account uses that email, we have sent it a link"), "{}", asked.body);
    let nobody = ask(&app, "nobody@acme.example").await;
    let token = regex::Regex::new(r#"name="csrf" value="[^"]*""#).unwrap();
    let same = |page: &super::Page, given: &str| token.replace_all(&page.body, "").replace(given, "");
    assert_eq!(same(&nobody, "nobody@acme.example"), same(&asked, &email.to_uppercase()), "the same page for anyone");

    app.settle().await;
    let received = smtp.wait_for(1, 20).await;
    assert_eq!(links_made(&app).await, 1, "no link for an email without an account");
    assert_eq!(received.len(), 1, "no mail for an email without an account: {received:?}");
    assert_eq!(received[0].rcpt_tos, [email.as_str()]);
    assert_eq!(received[0].subject, "Choose a new rehome password");
    let link = link_in(&received[0].text);

    let mut browser = Browser::new(&app);
    let form = browser.get(&link).await;
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains(&email), "{}", form.body);
    let differ =
        browser.post(&link, &[("password", NEW_PASSWORD), ("confirm_password", "other"), ("csrf", &form.csrf())]).await;
    assert_eq!(differ.status, 422);
    assert!(differ.body.contains("The passwords do not match."), "{}", differ.body);
    let short =
        browser.post(&link, &[("password", "short"), ("confirm_password", "short"), ("csrf", &form.csrf())]).await;
    assert_eq!(short.status, 422);
    let done = browser
        .post(&link, &[("password", NEW_PASSWORD), ("confirm_password", NEW_PASSWORD), ("csrf", &form.csrf())])
        .await;
    done.assert_redirect("/dashboard/login");
    let told = browser.get("/dashboard/login").await;
    assert!(told.body.contains("Your password was changed"), "{}", told.body);

    // Once: the link is gone; the old password fails, the new one works; sessions ended.
    assert_eq!(Browser::new(&app).get(&link).await.status, 410);
    let again = Browser::new(&app).post(&link, &[("password", NEW_PASSWORD), ("confirm_password", NEW_PASSWORD)]).await;
    assert!(again.status == 410 || again.status == 403, "{}", again.status);
    before.get("/dashboard").await.assert_redirect("/dashboard/login");
    let mut old = Browser::new(&app);
    assert_eq!(old.sign_in(&email, PASSWORD).await.status, 401);
    Browser::new(&app).sign_in(&email, NEW_PASSWORD).await.assert_redirect("/dashboard");
    let actions = audit_actions(&app, partner.brand_id).await;
    assert!(actions.contains(&"password.reset_sent".to_owned()) && actions.contains(&"password.reset".to_owned()));
    app.stop().await;
}

/// Twelve asks for one email at once: the hour's three links, no more (one of each
/// answered the same page).
#[tokio::test]
async fn a_burst_of_asks_sends_at_most_the_hours_three_links() {
    let Some(smtp) = SmtpServer::start("a_burst_of_asks").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let (_, email) = admin(&app, "acme").await;
    let asks = futures_util::future::join_all((0..12).map(|_| ask(&app, &email))).await;
    assert!(asks.iter().all(|page| page.status == 200 && page.body.contains("If an account uses that email")));
    // The links are made after the answers: wait for all of them, then for their mail.
    app.settle().await;
    let received = smtp.wait_for(3, 20).await;
    assert_eq!(links_made(&app).await, 3);
    // Only the newest link works.
    let mut live = 0;
    for mail in &received {
        live += usize::from(Browser::new(&app).get(&link_in(&mail.text)).await.status == 200);
    }
    assert_eq!(live, 1, "only the newest link works");
    app.stop().await;
}

#[tokio::test]
async fn an_expired_link_is_gone() {
    let Some(smtp) = SmtpServer::start("an_expired_link").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let (_, email) = admin(&app, "acme").await;
    ask(&app, &email).await;
    let link = link_in(&smtp.wait_for(1, 20).await[0].text);
    let raw = app.db.raw().await;
    raw.execute("UPDATE password_resets SET expires_at = created_at").await;
    raw.close().await;
    let page = Browser::new(&app).get(&link).await;
    assert_eq!(page.status, 410);
    assert!(page.body.contains("links work for an hour"), "{}", page.body);
    app.stop().await;
}

/// Without mail the page says whom to ask; an admin's link is then shown once on Team to
/// hand over, and it works like a mailed one.
#[tokio::test]
async fn without_mail_an_admin_hands_over_a_link_shown_once() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let forgot = Browser::new(&app).get(FORGOT).await;
    assert!(forgot.body.contains("This server cannot send email"), "{}", forgot.body);
    let mut browser = Browser::new(&app);
    let csrf = browser.get("/dashboard/login").await.csrf();
    assert_eq!(browser.post(FORGOT, &[("email", email.as_str()), ("csrf", &csrf)]).await.status, 503);
    let (member_id, _) = app.user(&partner, "Mo", rehome::domain::user::Role::Member).await;
    let member_email = "mo@acme.example";
    set_password(&app, member_id).await;

    let mut ada = Browser::signed_in(&app, &email).await;
    let team = ada.get("/dashboard/team").await;
    assert!(team.body.contains(&format!("/dashboard/team/{member_id}/reset-password")), "{}", team.body);
    let sent = ada.post(&format!("/dashboard/team/{member_id}/reset-password"), &[("csrf", &team.csrf())]).await;
    sent.assert_redirect("/dashboard/team");
    let shown = ada.get("/dashboard/team").await;
    assert!(shown.body.contains(&format!("Password reset link for {member_email}")), "{}", shown.body);
    let link = shown.body.split("/dashboard/reset/").nth(1).and_then(|rest| rest.split('"').next()).expect("a link");
    let link = format!("/dashboard/reset/{link}");
    assert!(!ada.get("/dashboard/team").await.body.contains(&link), "shown once");
    // Not for someone of another brand.
    let (other, _) = admin(&app, "globex").await;
    let refused =
        ada.post(&format!("/dashboard/team/{}/reset-password", other.user_id), &[("csrf", &team.csrf())]).await;
    assert_eq!(refused.status, 404);

    let mut mo = Browser::new(&app);
    let form = mo.get(&link).await;
    assert_eq!(form.status, 200, "{}", form.body);
    mo.post(&link, &[("password", NEW_PASSWORD), ("confirm_password", NEW_PASSWORD), ("csrf", &form.csrf())])
        .await
        .assert_redirect("/dashboard/login");
    Browser::new(&app).sign_in(member_email, NEW_PASSWORD).await.assert_redirect("/dashboard");
    let actions = audit_actions(&app, partner.brand_id).await;
    assert!(actions.contains(&"password.reset_sent".to_owned()) && actions.contains(&"password.reset".to_owned()));
    app.stop().await;
}
