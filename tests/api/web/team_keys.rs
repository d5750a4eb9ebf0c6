//! Team and keys in the dashboard (issue 31 item 6): keys created with the API's scopes,
//! owner and expiry, rolled with the API's overlap, their secret shown once after a
//! redirect (a reload makes no other key); invitations sent again (the old link stops
//! working, a new mail is queued, a limit a day) or cancelled after a confirmation; roles
//! changed with the last-admin rule, under a burst too. Admins only, CSRF checked, audited.

use std::time::Duration;

use rehome::domain::limits::INVITATION_LINKS_PER_DAY;
use rehome::domain::outcome::Outcome;
use rehome::domain::user::Role;
use serde_json::Value;

use super::{admin, audit_actions, set_password, Browser, Page, PASSWORD};
use crate::helpers::{json, poll, spawn_app, spawn_app_with, Partner, TestApp};

const KEYS: &str = "/v1/partner/settings/integrations/keys";
const TEAM: &str = "/v1/partner/settings/team";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&#34;").replace('\'', "&#39;")
}

/// The value of the read-only field `id` (a secret shown once).
fn shown(page: &Page, id: &str) -> Option<String> {
    let marker = format!("id=\"{id}\" type=\"text\" value=\"");
    let start = page.body.find(&marker)? + marker.len();
    let end = page.body[start..].find('"')? + start;
    Some(page.body[start..end].to_owned())
}

async fn keys(app: &TestApp, partner: &Partner) -> Vec<Value> {
    json(app.get(KEYS, &partner.key).await).await["data"].as_array().cloned().unwrap_or_default()
}

async fn team(app: &TestApp, partner: &Partner) -> Vec<Value> {
    json(app.get(TEAM, &partner.key).await).await["members"].as_array().cloned().unwrap_or_default()
}

/// A signed-in member (role `member`) of the partner's brand, and their id.
async fn member(app: &TestApp, partner: &Partner, name: &str) -> (Browser, i64) {
    let (id, _) = app.user(partner, name, Role::Member).await;
    set_password(app, id).await;
    let email = format!("{}@{}.example", name.to_lowercase().replace(' ', "."), partner.slug);
    let mut browser = Browser::new(app);
    browser.sign_in(&email, PASSWORD).await.assert_redirect("/dashboard");
    (browser, id)
}

/// Invites `email` from the dashboard; answers the invitation page's link and the member's id.
async fn invite(browser: &mut Browser, app: &TestApp, email: &str, name: &str) -> (String, i64) {
    let csrf = browser.get("/dashboard/team/invite").await.csrf();
    let fields = [("csrf", csrf.as_str()), ("email", email), ("name", name), ("role", "member")];
    let sent = browser.post("/dashboard/team/invite", &fields).await;
    sent.assert_redirect("/dashboard/team");
    let page = browser.get("/dashboard/team").await;
    assert_eq!(page.status, 200);
    let link = shown(&page, "invitation-link").unwrap_or_else(|| panic!("the link, shown once: {}", page.body));
    let path = link.strip_prefix(&app.base).expect("a link to this server").to_owned();
    let id = page
        .body
        .split("/dashboard/team/")
        .filter_map(|s| s.split_once("/resend-invitation").map(|(id, _)| id))
        .find_map(|id| id.parse::<i64>().ok())
        .expect("the invited member's resend form");
    (path, id)
}

#[tokio::test]
async fn a_key_is_created_with_scopes_owner_and_expiry_and_a_reload_makes_no_other() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (_, mo) = member(&app, &partner, "Mo Member").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let form = ada.get("/dashboard/integrations/keys/new").await;
    for field in
        ["name=\"scopes\" type=\"checkbox\" value=\"read\"", "value=\"write\"", "name=\"expires_at\" type=\"date\""]
    {
        assert!(form.body.contains(field), "{field}: {}", form.body);
    }
    assert!(form.body.contains(&format!("<option value=\"{mo}\">Mo Member</option>")), "{}", form.body);
    let csrf = form.csrf();
    let before = keys(&app, &partner).await.len();

    // Refused: no scope, an expiry in the past; every reason in words beside its field.
    let bad = [("csrf", csrf.as_str()), ("label", ""), ("scopes_offered", "1"), ("expires_at", "2020-01-01")];
    let page = ada.post("/dashboard/integrations/keys", &bad).await;
    assert_eq!(page.status, 422);
    for code in ["label_required", "scopes_invalid", "expires_at_invalid"] {
        assert!(!page.body.contains(code), "{code}: the code is not shown");
    }
    assert!(page.body.contains("Label is required."), "{}", page.body);
    assert!(page.body.contains("Scopes must be read, write or both: tick at least one."), "{}", page.body);
    assert!(page.body.contains("Expires on must be a date after today"), "{}", page.body);
    assert_eq!(keys(&app, &partner).await.len(), before, "nothing made");

    let fields = [
        ("csrf", csrf.as_str()),
        ("label", "Stock sync"),
        ("scopes_offered", "1"),
        ("scopes", "read"),
        ("user_id", &mo.to_string()),
        ("expires_at", "2099-06-30"),
    ];
    let created = ada.post("/dashboard/integrations/keys", &fields).await;
    created.assert_redirect("/dashboard/integrations");
    assert!(created.body.is_empty(), "the secret is not in the redirect");
    let page = ada.get("/dashboard/integrations").await;
    let secret = shown(&page, "new-key-secret").unwrap_or_else(|| panic!("shown: {}", page.body));
    assert!(page.body.contains("data-copy=\"new-key-secret\" hidden>Copy secret</button>"), "a copy button");
    assert!(page.body.contains("/dashboard/assets/copy.js"), "its script, from this origin");
    // Mo's key: it authenticates (what a member may do is the member's rule).
    assert_ne!(app.get("/v1/listings/options", &secret).await.status(), 401, "the key works");

    // A reload shows the list, neither the secret again nor another key.
    let again = ada.get("/dashboard/integrations").await;
    assert!(!again.body.contains(&secret), "shown once");
    assert!(again.body.contains("Stock sync"));
    let listed = keys(&app, &partner).await;
    assert_eq!(listed.len(), before + 1, "one key made");
    let key = &listed[0];
    assert_eq!(
        (&key["label"], &key["scopes"], &key["user_id"]),
        (&Value::from("Stock sync"), &serde_json::json!(["read"]), &Value::from(mo))
    );
    // The date's day begins at midnight in the brand's zone (London, in summer: BST).
    assert_eq!(key["expires_at"].as_str().map(|at| &at[..19]), Some("2099-06-29T23:00:00"));
    assert_eq!(audit_actions(&app, partner.brand_id).await.last().map(String::as_str), Some("key.created"));

    // Used once: its last use is shown, with the address.
    let page = ada.get("/dashboard/integrations").await;
    assert!(page.body.contains(" from 127.0.0.1</td>"), "last used: {}", page.body);
}

#[tokio::test]
async fn a_secret_kept_from_the_redirect_opens_for_no_other_session() {
    let app = spawn_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/integrations/keys/new").await.csrf();
    let made = ada.post("/dashboard/integrations/keys", &[("csrf", &csrf), ("label", "CI"), ("scopes", "read")]).await;
    made.assert_redirect("/dashboard/integrations");
    let sealed = ada.cookies.get("rehome_once").cloned().expect("the sealed secret");
    assert!(!sealed.contains("rhk_"), "sealed, not in the clear");
    // The same person's other session (another browser) is not shown it.
    let mut other = Browser::signed_in(&app, &email).await;
    other.cookies.insert("rehome_once".into(), sealed.clone());
    let page = other.get("/dashboard/integrations").await;
    assert!(shown(&page, "new-key-secret").is_none(), "{}", page.body);
    // An altered cookie shows nothing either, and the right session sees it once.
    let mut altered = sealed.clone().into_bytes();
    altered[10] = if altered[10] == b'A' { b'B' } else { b'A' };
    ada.cookies.insert("rehome_once".into(), String::from_utf8(altered).unwrap());
    assert!(shown(&ada.get("/dashboard/integrations").await, "new-key-secret").is_none());
    ada.cookies.insert("rehome_once".into(), sealed);
    assert!(shown(&ada.get("/dashboard/integrations").await, "new-key-secret").is_some());
    assert!(!ada.cookies.contains_key("rehome_once"), "deleted by the page that showed it");
}

#[tokio::test]
async fn a_key_is_rolled_with_the_overlap_chosen_and_the_old_one_stops_after_it() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let old_secret = app.key(partner.user_id, "read,write", None, None).await;
    let old = keys(&app, &partner).await[0]["id"].as_i64().unwrap();
    let mut ada = Browser::signed_in(&app, &email).await;
    let list = ada.get("/dashboard/integrations").await;
    assert!(list.body.contains(&format!("action=\"/dashboard/integrations/keys/{old}/roll\">")), "a Roll button");
    // "Roll" opens its own step: how long the old key keeps working (the API's default 24).
    let step = ada.get(&format!("/dashboard/integrations/keys/{old}/roll")).await;
    assert_eq!(step.status, 200);
    assert!(step.body.contains("name=\"expires_in_hours\"") && step.body.contains("value=\"24\""), "{}", step.body);
    assert!(step.body.contains(">Roll key</button>"));
    let csrf = step.csrf();
    let path = format!("/dashboard/integrations/keys/{old}/roll");
    let refused = ada.post(&path, &[("csrf", &csrf), ("expires_in_hours", "200")]).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("from 0 to 168"), "{}", refused.body);
    assert_eq!(keys(&app, &partner).await.len(), 2, "nothing rolled");

    let rolled = ada.post(&path, &[("csrf", &csrf), ("expires_in_hours", "2")]).await;
    rolled.assert_redirect("/dashboard/integrations");
    let page = ada.get("/dashboard/integrations").await;
    let secret = shown(&page, "new-key-secret").unwrap_or_else(|| panic!("{}", page.body));
    assert!(page.body.contains("Key rolled."), "{}", page.body);
    assert_eq!(app.get("/v1/listings/options", &secret).await.status(), 200, "the new key works");
    assert_eq!(app.get("/v1/listings/options", &old_secret).await.status(), 200, "the old one, for the overlap");
    let listed = keys(&app, &partner).await;
    let old_row = listed.iter().find(|k| k["id"] == old).unwrap();
    let until = chrono::DateTime::parse_from_rfc3339(old_row["expires_at"].as_str().unwrap()).unwrap();
    let hours = (until.to_utc() - chrono::Utc::now()).num_minutes();
    assert!((115..=120).contains(&hours), "the old key stops within 2 hours: {hours} minutes");
    assert!(!ada.get("/dashboard/integrations").await.body.contains(&secret), "shown once");
    assert_eq!(audit_actions(&app, partner.brand_id).await.last().map(String::as_str), Some("key.rolled"));

    // Rolled with no overlap, the old key is refused (within the key cache's second).
    let new_id = listed[0]["id"].as_i64().unwrap();
    let zero = ada
        .post(&format!("/dashboard/integrations/keys/{new_id}/roll"), &[("csrf", &csrf), ("expires_in_hours", "0")])
        .await;
    zero.assert_redirect("/dashboard/integrations");
    let refused = poll(Duration::from_secs(4), || async {
        Some(app.get("/v1/listings/options", &secret).await.status().as_u16()).filter(|s| *s == 401)
    });
    assert_eq!(refused.await, Some(401));
    // A key no longer active cannot be rolled: the sentence, nothing made.
    let count = keys(&app, &partner).await.len();
    let again = ada.post(&format!("/dashboard/integrations/keys/{new_id}/roll"), &[("csrf", &csrf)]).await;
    assert_eq!(again.status, 409);
    assert!(again.body.contains(&escape(&Outcome::KeyInactive.message())), "{}", again.body);
    assert_eq!(keys(&app, &partner).await.len(), count);
    assert_eq!(ada.get("/dashboard/integrations/keys/99999/roll").await.status, 303, "no such key: back to the list");
    assert_eq!(ada.post("/dashboard/integrations/keys/99999/roll", &[("csrf", &csrf)]).await.status, 404);
}

#[tokio::test]
async fn an_invitation_sent_again_has_a_new_link_a_new_mail_and_the_old_link_stops_working() {
    let app = spawn_app_with(|config| {
        config.smtp_url = Some("smtp://127.0.0.1:9".into());
        config.mail_from = Some("Rehome <noreply@rehome.example>".into());
    })
    .await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let (first, sam) = invite(&mut ada, &app, "sam@acme.example", "Sam Stock").await;
    // A reload of the team page shows the link no more, and invites nobody again.
    let reload = ada.get("/dashboard/team").await;
    assert!(shown(&reload, "invitation-link").is_none());
    assert_eq!(team(&app, &partner).await.len(), 2);
    let csrf = reload.csrf();

    let resend = format!("/dashboard/team/{sam}/resend-invitation");
    ada.post(&resend, &[("csrf", &csrf)]).await.assert_redirect("/dashboard/team");
    let page = ada.get("/dashboard/team").await;
    let link = shown(&page, "invitation-link").unwrap_or_else(|| panic!("{}", page.body));
    let second = link.strip_prefix(&app.base).unwrap().to_owned();
    assert_ne!(second, first);
    assert!(page.body.contains("the earlier one no longer works"), "{}", page.body);
    assert_eq!(Browser::new(&app).get(&first).await.status, 410, "the old link stops working");
    assert_eq!(Browser::new(&app).get(&second).await.status, 200, "the new one opens");
    let mails = super::sql_i64(
        &app,
        &format!(
            "SELECT count(*) FROM mail_outbox WHERE to_address = 'sam@acme.example' AND brand_id = {}",
            partner.brand_id
        ),
    )
    .await;
    assert_eq!(mails, Some(2), "a new mail through the outbox");
    assert_eq!(
        audit_actions(&app, partner.brand_id).await.last().map(String::as_str),
        Some("member.invitation_resent")
    );

    // At most a few links a day: then the sentence, no link, no mail.
    for _ in 2..INVITATION_LINKS_PER_DAY {
        ada.post(&resend, &[("csrf", &csrf)]).await.assert_redirect("/dashboard/team");
    }
    let refused = ada.post(&resend, &[("csrf", &csrf)]).await;
    assert_eq!(refused.status, 429);
    assert!(refused.body.contains(&escape(&Outcome::InvitationsTooFrequent.message())), "{}", refused.body);
    let mails = super::sql_i64(&app, "SELECT count(*) FROM mail_outbox WHERE to_address = 'sam@acme.example'").await;
    assert_eq!(mails, Some(INVITATION_LINKS_PER_DAY));

    // Someone who joined has nothing to resend.
    let (_, mo) = member(&app, &partner, "Mo Member").await;
    let joined = ada.post(&format!("/dashboard/team/{mo}/resend-invitation"), &[("csrf", &csrf)]).await;
    assert_eq!(joined.status, 404);
    assert!(joined.body.contains(&escape(&Outcome::InvitationNotPending.message())), "{}", joined.body);
}

#[tokio::test]
async fn a_burst_of_resends_sends_no_more_links_than_the_days_limit() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let (_, sam) = invite(&mut ada, &app, "sam@acme.example", "Sam Stock").await;
    let csrf = ada.get("/dashboard/team").await.csrf();
    let cookie = ada.cookie_header();
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let url = format!("{}/dashboard/team/{sam}/resend-invitation", app.base);
    let mut sends = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let request = client.post(&url).header("cookie", &cookie).form(&[("csrf", csrf.as_str())]);
        sends.spawn(async move { request.send().await.expect("POST").status().as_u16() });
    }
    let statuses = sends.join_all().await;
    let sent = statuses.iter().filter(|s| **s == 303).count() as i64;
    assert_eq!(sent, INVITATION_LINKS_PER_DAY - 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 303 || *s == 429), "{statuses:?}");
    let links = super::sql_i64(&app, &format!("SELECT count(*) FROM invitations WHERE user_id = {sam}")).await;
    assert_eq!(links, Some(INVITATION_LINKS_PER_DAY));
    let open =
        super::sql_i64(&app, &format!("SELECT count(*) FROM invitations WHERE user_id = {sam} AND used_at IS NULL"))
            .await;
    assert_eq!(open, Some(1), "only the newest link works");
    let resent =
        audit_actions(&app, partner.brand_id).await.iter().filter(|a| *a == "member.invitation_resent").count();
    assert_eq!(resent as i64, sent);
}

#[tokio::test]
async fn an_invitation_is_cancelled_after_a_confirmation_and_its_link_stops_working() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let (link, sam) = invite(&mut ada, &app, "sam@acme.example", "Sam Stock").await;
    let path = format!("/dashboard/team/{sam}/cancel-invitation");
    // One click opens the step: nothing cancelled yet.
    let confirm = ada.get(&path).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains(">Cancel invitation</button>"), "{}", confirm.body);
    assert_eq!(Browser::new(&app).get(&link).await.status, 200, "still open");
    let cancelled = ada.post(&path, &[("csrf", &confirm.csrf())]).await;
    cancelled.assert_redirect("/dashboard/team");
    let page = ada.get("/dashboard/team").await;
    assert!(page.body.contains("Invitation cancelled"), "{}", page.body);
    assert!(!page.body.contains("sam@acme.example"), "off the team list");
    assert!(!ada.get("/dashboard/team").await.body.contains("Invitation cancelled"), "the notice shows once");
    assert_eq!(Browser::new(&app).get(&link).await.status, 410, "the link stops working");
    assert_eq!(
        audit_actions(&app, partner.brand_id).await.last().map(String::as_str),
        Some("member.invitation_cancelled")
    );
    // Again: the sentence, not an error; the confirmation of no pending invitation is the 404 page.
    let again = ada.post(&path, &[("csrf", &confirm.csrf())]).await;
    assert_eq!(again.status, 404);
    assert!(again.body.contains(&escape(&Outcome::InvitationNotPending.message())), "{}", again.body);
    assert_eq!(ada.get(&path).await.status, 404);
    // They can be invited again.
    invite(&mut ada, &app, "sam@acme.example", "Sam Stock").await;
}

#[tokio::test]
async fn a_role_is_changed_and_the_brand_keeps_an_admin() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (_, mo) = member(&app, &partner, "Mo Member").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/team").await;
    assert!(page.body.contains(&format!("action=\"/dashboard/team/{mo}/make-admin\"")), "{}", page.body);
    let csrf = page.csrf();
    ada.post(&format!("/dashboard/team/{mo}/make-admin"), &[("csrf", &csrf)]).await.assert_redirect("/dashboard/team");
    assert!(ada.get("/dashboard/team").await.body.contains("Role changed."));
    let role = |members: Vec<Value>, id: i64| members.iter().find(|m| m["id"] == id).map(|m| m["role"].clone());
    assert_eq!(role(team(&app, &partner).await, mo), Some("admin".into()));
    assert_eq!(audit_actions(&app, partner.brand_id).await.last().map(String::as_str), Some("member.role_changed"));

    // Mo makes Ada a member; Ada, now a member, is refused the team page.
    let mut mo_browser = Browser::signed_in(&app, "mo.member@acme.example").await;
    let step = mo_browser.get(&format!("/dashboard/team/{}/make-member", partner.user_id)).await;
    assert!(step.body.contains(">Make Ada Admin a member</button>"), "{}", step.body);
    let mo_csrf = step.csrf();
    let demoted =
        mo_browser.post(&format!("/dashboard/team/{}/make-member", partner.user_id), &[("csrf", &mo_csrf)]).await;
    demoted.assert_redirect("/dashboard/team");
    assert_eq!(ada.get("/dashboard/team").await.status, 403);

    // Mo, the last admin, cannot make themself a member: the sentence, nothing changed.
    let step = mo_browser.get(&format!("/dashboard/team/{mo}/make-member")).await;
    assert!(step.body.contains(">Make me a member</button>"), "{}", step.body);
    let refused = mo_browser.post(&format!("/dashboard/team/{mo}/make-member"), &[("csrf", &mo_csrf)]).await;
    assert_eq!(refused.status, 409);
    assert!(refused.body.contains(&escape(&Outcome::LastAdmin.message())), "{}", refused.body);
    assert!(!refused.body.contains("last_admin"), "no code on the page");
    assert_eq!(role(team(&app, &partner).await, mo), Some("admin".into()));

    // With another admin, making oneself a member leads to one's account page, with a notice.
    mo_browser.post(&format!("/dashboard/team/{}/make-admin", partner.user_id), &[("csrf", &mo_csrf)]).await;
    let own = mo_browser.post(&format!("/dashboard/team/{mo}/make-member"), &[("csrf", &mo_csrf)]).await;
    own.assert_redirect("/dashboard/account");
    assert!(mo_browser.get("/dashboard/account").await.body.contains("You are now a member"));
}

#[tokio::test]
async fn two_admins_making_each_other_members_at_once_leave_exactly_one_admin() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (bo, bo_key) = app.user(&partner, "Bo Boss", Role::Admin).await;
    set_password(&app, bo).await;
    let ada = Browser::signed_in(&app, &email).await;
    let bo_browser = Browser::signed_in(&app, "bo.boss@acme.example").await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    // The team as an admin reads it: with the key of whichever of the two is still an admin
    // (a member's key may not read the team).
    let members = || async {
        for key in [&partner.key, &bo_key] {
            let answer = app.get(TEAM, key).await;
            if answer.status() == 200 {
                return json(answer).await["members"].as_array().cloned().unwrap_or_default();
            }
        }
        Vec::new()
    };
    let admins =
        || async { members().await.iter().filter(|m| m["role"] == "admin" && m["status"] == "active").count() };
    let mut ada = ada;
    let mut bo_browser = bo_browser;
    for round in 0..5 {
        let ada_csrf = ada.get("/dashboard/account").await.csrf();
        let bo_csrf = bo_browser.get("/dashboard/account").await.csrf();
        let demote = |cookie: String, csrf: String, target: i64| {
            let request = client
                .post(format!("{}/dashboard/team/{target}/make-member", app.base))
                .header("cookie", cookie)
                .form(&[("csrf", csrf)]);
            async move { request.send().await.expect("POST").status().as_u16() }
        };
        let (a, b) = tokio::join!(
            demote(ada.cookie_header(), ada_csrf, bo),
            demote(bo_browser.cookie_header(), bo_csrf, partner.user_id)
        );
        assert_eq!(admins().await, 1, "round {round}: {a} {b}");
        assert!([a, b].contains(&303), "round {round}: one of them went through: {a} {b}");
        assert!([a, b].iter().all(|s| [303, 403, 409].contains(s)), "round {round}: {a} {b}");
        // Whoever is still an admin makes the other one an admin again.
        let ada_admin = members().await.iter().any(|m| m["id"] == partner.user_id && m["role"] == "admin");
        let (winner, other) = if ada_admin { (&mut ada, bo) } else { (&mut bo_browser, partner.user_id) };
        let csrf = winner.get("/dashboard/team").await.csrf();
        winner
            .post(&format!("/dashboard/team/{other}/make-admin"), &[("csrf", &csrf)])
            .await
            .assert_redirect("/dashboard/team");
        assert_eq!(admins().await, 2);
    }
}

#[tokio::test]
async fn the_new_actions_are_for_admins_with_the_pages_token() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let (mut mo, mo_id) = member(&app, &partner, "Mo Member").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let (_, sam) = invite(&mut ada, &app, "sam@acme.example", "Sam Stock").await;
    let key = keys(&app, &partner).await[0]["id"].as_i64().unwrap();
    let mo_csrf = mo.get("/dashboard/account").await.csrf();
    let posts = [
        format!("/dashboard/integrations/keys/{key}/roll"),
        format!("/dashboard/team/{sam}/resend-invitation"),
        format!("/dashboard/team/{sam}/cancel-invitation"),
        format!("/dashboard/team/{mo_id}/make-admin"),
        format!("/dashboard/team/{}/make-member", partner.user_id),
    ];
    let before = (keys(&app, &partner).await.len(), audit_actions(&app, partner.brand_id).await.len());
    for path in &posts {
        let page = mo.post(path, &[("csrf", &mo_csrf)]).await;
        assert_eq!(page.status, 403, "{path}");
        assert!(
            page.body.contains("for your brand&#39;s admins") || page.body.contains("for your brand's admins"),
            "{path}: {}",
            page.body
        );
        assert_eq!(ada.post(path, &[]).await.status, 403, "{path}: no token");
        assert_eq!(ada.post(path, &[("csrf", "forged")]).await.status, 403, "{path}: a forged token");
    }
    for path in [format!("/dashboard/integrations/keys/{key}/roll"), format!("/dashboard/team/{sam}/cancel-invitation")]
    {
        assert_eq!(mo.get(&path).await.status, 403, "{path}");
    }
    let after = (keys(&app, &partner).await.len(), audit_actions(&app, partner.brand_id).await.len());
    assert_eq!(before, after, "nothing changed");
    assert!(team(&app, &partner).await.iter().any(|m| m["id"] == sam && m["status"] == "invited"));
}

#[tokio::test]
async fn empty_states_say_what_to_do_next() {
    let app = spawn_app().await;
    let partner = app.partner("solo").await;
    set_password(&app, partner.user_id).await;
    let raw_key = keys(&app, &partner).await[0]["id"].as_i64().unwrap();
    let mut ada = Browser::signed_in(&app, "ada@solo.example").await;
    let team = ada.get("/dashboard/team").await;
    assert!(team.body.contains("You are the only person on the team. Invite a colleague"), "{}", team.body);
    // A revoked key is still listed; a brand without keys is told what they are for.
    assert_eq!(app.delete(&format!("{KEYS}/{raw_key}"), &partner.key).await.status(), 200);
    assert!(!ada.get("/dashboard/integrations").await.body.contains("No API keys yet"));
    let later = rehome::domain::time::Ts::from(chrono::Utc::now() + chrono::TimeDelta::days(1));
    super::sql_ts(&app, "DELETE FROM api_keys WHERE created_at < $1 AND user_id = $2", later, partner.user_id).await;
    let page = ada.get("/dashboard/integrations").await;
    assert!(page.body.contains("No API keys yet. Create a key for each program"), "{}", page.body);
}
