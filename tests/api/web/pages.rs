//! The dashboard's pages over real HTTP (decisions 9): each page behind the session, with
//! the security headers and the navigation; admin forms refused without a CSRF token or to
//! a member (403, nothing changed); each action goes through the API's use case, with its
//! validation codes shown beside the field.

use std::time::Duration;

use rehome::domain::event::{Event, EventType};
use rehome::domain::outcome::Outcome;
use rehome::domain::user::Role;
use serde_json::json;

use super::{admin, set_password, Browser, Page, PASSWORD};
use crate::helpers::{json, on_raw, TestApp};
use crate::marketplace::{choose, complete, credit_code, listing, market_app, order, sold_exchange};

const PAGES: [&str; 11] = [
    "/dashboard/listings",
    "/dashboard/orders",
    "/dashboard/bulk-import",
    "/dashboard/settings",
    "/dashboard/integrations",
    "/dashboard/deliveries",
    "/dashboard/redemptions",
    "/dashboard/collections",
    "/dashboard/team",
    "/dashboard/wallet",
    "/dashboard/audit-log",
];
const NAV: [&str; 11] = [
    "Listings",
    "Orders",
    "Bulk import",
    "Settings",
    "Integrations",
    "Deliveries",
    "Redemptions",
    "Collections",
    "Team",
    "Wallet",
    "Audit log",
];
const ADMIN_ONLY: [&str; 3] = ["/dashboard/integrations", "/dashboard/team", "/dashboard/audit-log"];

fn nav_links(page: &Page) -> Vec<String> {
    let nav = page
        .body
        .split("<nav id=\"dashboard-nav\" aria-label=\"Dashboard\">")
        .nth(1)
        .and_then(|rest| rest.split("</nav>").next());
    nav.unwrap_or_default().split("\">").skip(1).filter_map(|s| s.split("</a>").next()).map(str::to_owned).collect()
}

async fn member(app: &TestApp, partner: &crate::helpers::Partner) -> Browser {
    let (member_id, _) = app.user(partner, "Mo Member", Role::Member).await;
    set_password(app, member_id).await;
    let mut browser = Browser::new(app);
    browser.sign_in(&format!("mo.member@{}.example", partner.slug), PASSWORD).await.assert_redirect("/dashboard");
    browser
}

#[tokio::test]
async fn every_page_needs_a_session_and_carries_the_headers_and_the_navigation() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut anonymous = Browser::new(&app);
    for path in PAGES {
        anonymous.get(path).await.assert_redirect("/dashboard/login");
    }
    let mut browser = Browser::signed_in(&app, &email).await;
    for path in PAGES {
        let page = browser.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let csp = page.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(page.headers["referrer-policy"], "same-origin");
        assert_eq!(nav_links(&page), NAV, "{path}");
        assert!(page.body.contains(">Sign out</button>"));
    }
    // A member: the admin pages are neither linked nor served.
    let mut mo = member(&app, &partner).await;
    let page = mo.get("/dashboard/listings").await;
    let expected: Vec<&str> =
        NAV.iter().copied().filter(|t| !["Integrations", "Team", "Audit log"].contains(t)).collect();
    assert_eq!(nav_links(&page), expected);
    for path in ADMIN_ONLY {
        assert_eq!(mo.get(path).await.status, 403, "{path}");
    }
}

#[tokio::test]
async fn admin_forms_without_a_token_or_from_a_member_are_refused_and_change_nothing() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let payouts = [("credit_boost_percent", "150"), ("code_validity_days", "30"), ("credit_enabled", "on")];
    assert_eq!(ada.post("/dashboard/settings/payouts", &payouts).await.status, 403, "no token");
    let forged = [("csrf", "not-the-token"), ("label", "x")];
    assert_eq!(ada.post("/dashboard/integrations/keys", &forged).await.status, 403, "wrong token");

    let mut mo = member(&app, &partner).await;
    let csrf = mo.get("/dashboard/settings").await.csrf();
    let page = mo.get("/dashboard/settings").await;
    assert!(!page.body.contains(">Save</button>"), "no Save for a member");
    let mut with_token = payouts.to_vec();
    with_token.push(("csrf", &csrf));
    assert_eq!(mo.post("/dashboard/settings/payouts", &with_token).await.status, 403, "a member");
    assert_eq!(mo.post("/dashboard/integrations/keys", &[("csrf", &csrf), ("label", "x")]).await.status, 403);

    let options = json(app.get("/v1/partner/settings/payouts", &partner.key).await).await;
    assert_eq!(options["credit_boost_percent"], 100, "{options}");
    assert_eq!(options["cash_enabled"], true);
    let keys = json(app.get("/v1/partner/settings/integrations/keys", &partner.key).await).await;
    assert!(keys["data"].as_array().unwrap().iter().all(|k| k["label"] == ""), "no key made by a form: {keys}");
}

/// Every admin page and action of the dashboard, with the records they name: a member who
/// asks for one with a valid token is refused (403) whatever the form holds. The pages
/// extract the admin the use cases need, so a page that forgot to ask would not compile;
/// this list proves the extractors answer as decisions 9.4 says.
#[tokio::test]
async fn every_admin_page_and_action_refuses_a_member_and_changes_nothing() {
    let app = market_app().await;
    let (partner, _) = admin(&app, "acme").await;
    let id = listing(&app, &partner, json!({})).await;
    let warehouse = json(app.get("/v1/partner/settings/warehouses", &partner.key).await).await;
    let warehouse = warehouse["data"][0]["id"].as_str().unwrap_or("wh_unknown").to_owned();
    let mut mo = member(&app, &partner).await;
    let me = "1";
    let before = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;

    let pages = [
        "/dashboard/integrations".to_owned(),
        "/dashboard/integrations/keys/new".to_owned(),
        "/dashboard/integrations/keys/1/revoke".to_owned(),
        "/dashboard/integrations/keys/1/roll".to_owned(),
        "/dashboard/integrations/webhook/rotate".to_owned(),
        "/dashboard/team".to_owned(),
        "/dashboard/team/invite".to_owned(),
        format!("/dashboard/team/{me}/remove"),
        format!("/dashboard/team/{me}/reset-two-step"),
        format!("/dashboard/team/{me}/cancel-invitation"),
        format!("/dashboard/team/{me}/make-member"),
        "/dashboard/audit-log".to_owned(),
        "/dashboard/audit-log.csv".to_owned(),
        "/dashboard/listings/new".to_owned(),
        format!("/dashboard/listings/{id}/edit"),
        format!("/dashboard/listings/{id}/delete"),
        format!("/dashboard/listings/{id}/photos/1/remove"),
        "/dashboard/deliveries/replay-dead".to_owned(),
        "/dashboard/collections/1/move?scheduled_for=2030-01-01".to_owned(),
        "/dashboard/collections/1/cancel".to_owned(),
        format!("/dashboard/settings/warehouses/{warehouse}/delete"),
    ];
    for path in &pages {
        let page = mo.get(path).await;
        assert_eq!(page.status, 403, "GET {path}: {}", page.body);
        assert!(page.body.contains("For admins"), "GET {path}");
    }

    let csrf = mo.get("/dashboard/settings").await.csrf();
    let forms = [
        "/dashboard/account/require-two-step".to_owned(),
        "/dashboard/bulk-import/drafts/1/import".to_owned(),
        "/dashboard/bulk-import/drafts/1/discard".to_owned(),
        "/dashboard/collections".to_owned(),
        "/dashboard/collections/1/move".to_owned(),
        "/dashboard/collections/1/cancel".to_owned(),
        "/dashboard/integrations/keys".to_owned(),
        "/dashboard/integrations/keys/1/revoke".to_owned(),
        "/dashboard/integrations/keys/1/roll".to_owned(),
        "/dashboard/integrations/webhook".to_owned(),
        "/dashboard/integrations/webhook/rotate".to_owned(),
        "/dashboard/integrations/webhook/test".to_owned(),
        format!("/dashboard/listings/{id}/delete"),
        format!("/dashboard/listings/{id}/photos/1/remove"),
        "/dashboard/deliveries/replay-dead".to_owned(),
        "/dashboard/deliveries/evt_1/replay".to_owned(),
        "/dashboard/redemptions/check".to_owned(),
        "/dashboard/redemptions/redeem".to_owned(),
        "/dashboard/settings/payouts".to_owned(),
        "/dashboard/settings/brand".to_owned(),
        "/dashboard/settings/billing".to_owned(),
        "/dashboard/settings/time-zone".to_owned(),
        "/dashboard/settings/warehouses".to_owned(),
        format!("/dashboard/settings/warehouses/{warehouse}"),
        format!("/dashboard/settings/warehouses/{warehouse}/default"),
        format!("/dashboard/settings/warehouses/{warehouse}/delete"),
        "/dashboard/team/invite".to_owned(),
        format!("/dashboard/team/{me}/remove"),
        format!("/dashboard/team/{me}/reset-two-step"),
        format!("/dashboard/team/{me}/resend-invitation"),
        format!("/dashboard/team/{me}/reset-password"),
        format!("/dashboard/team/{me}/cancel-invitation"),
        format!("/dashboard/team/{me}/make-admin"),
        format!("/dashboard/team/{me}/make-member"),
    ];
    let fields = [
        ("csrf", csrf.as_str()),
        ("label", "x"),
        ("email", "sam@acme.example"),
        ("name", "Sam"),
        ("role", "admin"),
        ("url", "https://example.com/hook"),
        ("order_id", "1"),
        ("scheduled_for", "2030-01-01"),
        ("code", "RH-AAAA-BBBB"),
        ("confirm", "yes"),
        ("status", "dead"),
        ("page", "1"),
        ("time_zone", "Europe/Paris"),
    ];
    for path in &forms {
        let page = mo.post(path, &fields).await;
        assert_eq!(page.status, 403, "POST {path}: {}", page.body);
    }
    // The multipart forms check their token and the admin in one step.
    let multipart = [
        "/dashboard/listings/new".to_owned(),
        format!("/dashboard/listings/{id}"),
        format!("/dashboard/listings/{id}/photos"),
        "/dashboard/bulk-import".to_owned(),
    ];
    for path in &multipart {
        let page = mo.post_multipart(path, &[("csrf", csrf.as_str()), ("title", "Changed")], None).await;
        assert_eq!(page.status, 403, "POST {path}: {}", page.body);
    }

    let after = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;
    let changes = |log: &serde_json::Value| {
        let entries = log["data"].as_array().cloned().unwrap_or_default();
        entries.into_iter().filter(|e| !e["action"].as_str().unwrap_or("").starts_with("sign_in.")).count()
    };
    assert_eq!(changes(&after), changes(&before), "nothing a member asked for was done: {after}");
}

#[tokio::test]
async fn payouts_are_saved_and_a_bad_value_is_shown_beside_its_field() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/settings").await;
    // The fields' ranges are the API's (decisions 10), read from one place.
    assert!(page.body.contains(r#"type="number" min="100" max="200""#), "{}", page.body);
    assert!(page.body.contains(r#"type="number" min="1" max="1095""#), "{}", page.body);
    let csrf = page.csrf();
    let bad = [
        ("csrf", csrf.as_str()),
        ("credit_enabled", "on"),
        ("credit_boost_percent", "250"),
        ("code_validity_days", "30"),
    ];
    let page = ada.post("/dashboard/settings/payouts", &bad).await;
    assert_eq!(page.status, 422);
    assert!(
        page.body.contains(&format!(
            "id=\"boost-error\" role=\"alert\">{}<",
            sentence(
                &rehome::domain::payout::PAYOUT_OPTIONS_BODY,
                "credit_boost_percent",
                "credit_boost_percent_invalid"
            )
        )),
        "{}",
        page.body
    );
    assert!(page.body.contains("value=\"250\""), "the value given is kept");
    let good = [
        ("csrf", csrf.as_str()),
        ("credit_enabled", "on"),
        ("credit_boost_percent", "120"),
        ("code_validity_days", "30"),
    ];
    ada.post("/dashboard/settings/payouts", &good).await.assert_redirect("/dashboard/settings");
    let page = ada.get("/dashboard/settings").await;
    assert!(page.body.contains("Payout options saved."), "the notice, once: {}", page.body);
    assert!(!ada.get("/dashboard/settings").await.body.contains("Payout options saved."), "not twice");
    let options = json(app.get("/v1/partner/settings/payouts", &partner.key).await).await;
    assert_eq!(
        options,
        json!({"brand_id": "acme", "credit_enabled": true, "cash_enabled": false, "credit_boost_percent": 120, "code_validity_days": 30})
    );
}

#[tokio::test]
async fn a_key_is_created_with_its_secret_shown_once_and_revoked() {
    let app = market_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    // The webhook's buttons are there before an endpoint is; they say what is missing.
    let page = ada.get("/dashboard/integrations").await;
    assert!(page.body.contains(">Rotate secret</button>") && page.body.contains(">Send test event</button>"));
    let rotated = ada.post("/dashboard/integrations/webhook/rotate", &[("csrf", &page.csrf())]).await;
    assert!(rotated.body.contains("Set an endpoint URL first."), "{}", rotated.body);
    let form = ada.get("/dashboard/integrations/keys/new").await;
    let page = ada.post("/dashboard/integrations/keys", &[("csrf", &form.csrf()), ("label", &"x".repeat(101))]).await;
    assert_eq!(page.status, 422);
    let too_long = "Label can be at most 100 characters.";
    assert!(page.body.contains(&format!("role=\"alert\">{too_long}<")), "{}", page.body);
    let made = ada.post("/dashboard/integrations/keys", &[("csrf", &form.csrf()), ("label", "Stock sync")]).await;
    made.assert_redirect("/dashboard/integrations");
    let page = ada.get("/dashboard/integrations").await;
    let secret = page.value_of("new-key-secret");
    assert_eq!(app.get("/v1/listings/options", &secret).await.status(), 200, "the key works");
    assert!(!ada.get("/dashboard/integrations").await.body.contains(&secret), "shown once");
    let key_id = page
        .body
        .split("/dashboard/integrations/keys/")
        .filter_map(|s| s.split('/').next())
        .find_map(|id| id.parse::<i64>().ok())
        .unwrap();
    let revoked = ada.post(&format!("/dashboard/integrations/keys/{key_id}/revoke"), &[("csrf", &form.csrf())]).await;
    revoked.assert_redirect("/dashboard/integrations");
    let status = || async { app.get("/v1/listings/options", &secret).await.status().as_u16() };
    let refused = crate::helpers::poll(Duration::from_secs(4), || async { Some(status().await).filter(|s| *s == 401) });
    assert_eq!(refused.await, Some(401), "revoked");
}

/// The webhook form offers the event types in words, ticked as the endpoint has them (the
/// spec's two before a first save); ticking the listing events subscribes the endpoint, as
/// the API's `event_types` does; ticking none is refused with a sentence and keeps the form.
#[tokio::test]
async fn the_webhook_form_chooses_the_events_sent() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/integrations").await;
    let csrf = page.csrf();
    let ticked = |body: &str, value: &str| {
        let at = body.find(&format!("value=\"{value}\"")).unwrap_or_else(|| panic!("no box for {value}"));
        body[at..at + body[at..].find('>').unwrap()].contains("checked")
    };
    for (value, words) in [
        ("redemption.created", "Trade-in sold"),
        ("collection.scheduled", "Collection scheduled"),
        ("listing.updated", "Listing updated"),
    ] {
        assert!(page.body.contains(words), "{words}");
        assert_eq!(ticked(&page.body, value), !value.starts_with("listing."), "{value} before a first save");
    }
    let form = [
        ("csrf", csrf.as_str()),
        ("url", "https://hooks.acme.example/rehome"),
        ("enabled", "on"),
        ("event_types", "redemption.created"),
        ("event_types", "listing.created"),
        ("event_types", "listing.updated"),
    ];
    ada.post("/dashboard/integrations/webhook", &form).await.assert_redirect("/dashboard/integrations");
    let settings = json(app.get("/v1/partner/settings/integrations/webhook", &partner.key).await).await;
    assert_eq!(settings["event_types"], json!(["redemption.created", "listing.created", "listing.updated"]));
    let page = ada.get("/dashboard/integrations").await.body;
    assert!(ticked(&page, "listing.updated") && !ticked(&page, "collection.scheduled"), "as saved");
    // None ticked: refused, the URL kept, nothing changed.
    let refused = ada.post("/dashboard/integrations/webhook", &form[..3]).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("https://hooks.acme.example/rehome") && refused.body.contains("event-types-error"));
    let settings = json(app.get("/v1/partner/settings/integrations/webhook", &partner.key).await).await;
    assert_eq!(settings["event_types"], json!(["redemption.created", "listing.created", "listing.updated"]));
}

/// The signing secret of the webhook's first save and of "Rotate secret" is shown once on
/// the page the POST redirects to (post/redirect/get): a reload shows it no more.
#[tokio::test]
async fn a_webhook_signing_secret_is_shown_once_after_a_redirect() {
    let app = market_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/integrations").await.csrf();
    let hook = [
        ("csrf", csrf.as_str()),
        ("url", "https://hooks.acme.example/rehome"),
        ("enabled", "on"),
        ("event_types", "redemption.created"),
        ("event_types", "collection.scheduled"),
    ];
    for (post, fields, notice) in [
        ("/dashboard/integrations/webhook", &hook[..], "Webhook saved."),
        ("/dashboard/integrations/webhook/rotate", &hook[..1], "Signing secret rotated."),
    ] {
        ada.post(post, fields).await.assert_redirect("/dashboard/integrations");
        let page = ada.get("/dashboard/integrations").await.body;
        let marker = "<code class=\"secret\" id=\"signing-secret\">";
        let start = page.find(marker).unwrap_or_else(|| panic!("{post}: no secret shown: {page}")) + marker.len();
        let secret = &page[start..start + page[start..].find('<').unwrap()];
        assert!(secret.starts_with("whsec_"), "{post}: {secret}");
        assert!(page.contains(notice), "{post}: {page}");
        let again = ada.get("/dashboard/integrations").await.body;
        assert!(!again.contains(secret) && !again.contains(notice), "{post}: shown twice");
    }
    // Saved again (the secret exists): the notice alone.
    ada.post("/dashboard/integrations/webhook", &hook).await.assert_redirect("/dashboard/integrations");
    let page = ada.get("/dashboard/integrations").await.body;
    assert!(page.contains("Webhook saved.") && !page.contains("id=\"signing-secret\""), "{page}");
    // A test event: one, then the page with its notice once.
    let sent = ada.post("/dashboard/integrations/webhook/test", &hook[..1]).await;
    sent.assert_redirect("/dashboard/integrations");
    assert!(ada.get("/dashboard/integrations").await.body.contains("Test event queued"));
    assert!(!ada.get("/dashboard/integrations").await.body.contains("Test event queued"), "shown once");
    let events = ada.get("/dashboard/deliveries").await.body;
    assert_eq!(events.matches("<tr id=\"event-").count(), 1, "one event: {events}");
}

#[tokio::test]
async fn an_invitation_shows_its_link_and_a_member_is_removed() {
    let app = market_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/team/invite").await.csrf();
    let taken = [("csrf", csrf.as_str()), ("email", email.as_str()), ("name", "Again"), ("role", "member")];
    let page = ada.post("/dashboard/team/invite", &taken).await;
    assert_eq!(page.status, 422);
    assert!(
        page.body.contains(&format!(
            "role=\"alert\">{}<",
            sentence(&rehome::domain::team::INVITE_BODY, "email", "email_taken")
        )),
        "{}",
        page.body
    );
    let fields = [("csrf", csrf.as_str()), ("email", "sam@acme.example"), ("name", "Sam Stock"), ("role", "member")];
    ada.post("/dashboard/team/invite", &fields).await.assert_redirect("/dashboard/team");
    let page = ada.get("/dashboard/team").await;
    let link = page.value_of("invitation-link");
    let path = link.strip_prefix(&app.base).expect("a link to this server");
    assert_eq!(Browser::new(&app).get(path).await.status, 200, "the invitation opens");
    let sam = page
        .body
        .split("/dashboard/team/")
        .filter_map(|s| s.split_once("/remove").map(|(id, _)| id))
        .find_map(|id| id.parse::<i64>().ok())
        .unwrap();
    // One click on "Remove" opens the confirmation step (decisions 9.8): nothing removed yet.
    let confirm = ada.get(&format!("/dashboard/team/{sam}/remove")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains(">Remove Sam Stock</button>"), "{}", confirm.body);
    assert!(ada.get("/dashboard/team").await.body.contains("sam@acme.example"), "still a member");
    let page = ada.post(&format!("/dashboard/team/{sam}/remove"), &[("csrf", csrf.as_str())]).await;
    page.assert_redirect("/dashboard/team");
    let team = ada.get("/dashboard/team").await;
    assert!(team.body.contains("Member removed"), "{}", team.body);
    assert!(!team.body.contains("sam@acme.example"));
    assert!(!ada.get("/dashboard/team").await.body.contains("Member removed"), "the notice shows once");
}

#[tokio::test]
async fn a_collection_is_scheduled_inside_the_window_and_a_date_outside_is_shown_as_refused() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let listing_id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 2})).await;
    let placed = order(&app, json!({"listing_id": listing_id, "buyer_window_start": "2026-12-10"})).await;
    let order_id = placed["id"].as_i64().unwrap().to_string();
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/collections").await;
    assert!(page.body.contains(&format!("name=\"order_id\" value=\"{order_id}\"")), "{}", page.body);
    let csrf = page.csrf();
    let outside = [("csrf", csrf.as_str()), ("order_id", order_id.as_str()), ("scheduled_for", "2026-12-25")];
    let page = ada.post("/dashboard/collections", &outside).await;
    assert_eq!(page.status, 422);
    let window = "10 Dec to 19 Dec 2026";
    assert!(
        page.body.contains(&format!(
            "id=\"error-{order_id}\" role=\"alert\">Choose a date from {window}: the buyer&#39;s collection window.<"
        )),
        "{}",
        page.body
    );
    assert!(page.body.contains(&format!("<td data-label=\"Buyer window\">{window}</td>")), "the window in words");
    let inside = [("csrf", csrf.as_str()), ("order_id", order_id.as_str()), ("scheduled_for", "2026-12-12")];
    ada.post("/dashboard/collections", &inside).await.assert_redirect("/dashboard/collections");
    let listed = json(app.get("/v1/partner/collections?status=scheduled", &partner.key).await).await;
    assert_eq!(listed["data"][0]["collection"]["scheduled_for"], "2026-12-12", "{listed}");
}

#[tokio::test]
async fn the_wallet_shows_balances_and_serves_statements() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let listing_id = listing(&app, &partner, json!({"channel": "clearance", "price_gbp": 100})).await;
    let order_id = order(&app, json!({"listing_id": listing_id})).await["id"].as_i64().unwrap();
    complete(&app, order_id, json!({"completed_at": "2026-11-01T10:00:00Z"})).await;
    let issued = crate::wallet::run(&app, None).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/wallet").await;
    assert_eq!(page.text_of("paid"), "82.00");
    // Types, statuses and instants in words, never the wire's `trade_in` or RFC 3339.
    assert!(
        page.body.contains(">Sale</td>") && page.body.contains("<td data-label=\"Status\">On statement No. 1</td>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("<dt>On statements</dt>"), "a statement is not a payment: {}", page.body);
    assert!(page.body.contains("(the first statement)</td>"), "the period in words: {}", page.body);
    assert!(
        page.body.contains(">3 Nov 2026, 10:00 GMT</td>"),
        "available after the hold, in the pages' format: {}",
        page.body
    );
    assert!(!page.body.contains("T10:00:00"), "no RFC 3339 instant: {}", page.body);
    // The statements over time, drawn with a text alternative (the table beside it).
    assert!(page.body.contains("<title id=\"statements-chart\">Statement amounts"), "{}", page.body);
    assert_eq!(page.body.matches("<rect ").count(), 1, "a bar per statement");
    let csv = ada.get(&format!("/dashboard/wallet/statements/{}.csv", issued[0])).await;
    assert_eq!(csv.status, 200);
    assert!(csv.body.starts_with("id,type,order_id"), "{}", csv.body);
    // Another brand's statement is not served.
    let (_, other) = admin(&app, "other").await;
    let mut eve = Browser::signed_in(&app, &other).await;
    assert_eq!(
        eve.get(&format!("/dashboard/wallet/statements/{}.pdf", issued[0])).await.location(),
        Some("/dashboard/wallet")
    );
}

#[tokio::test]
async fn a_bulk_upload_shows_each_rows_errors_by_cell_and_needs_the_token() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/bulk-import").await.csrf();
    let csv: &[u8] = b"title,price_gbp,condition,category,faults\nGood sofa,120,fair,3-Seater Sofas,None\nBad sofa,-5,fair,3-Seater Sofas,None\n";
    let file = Some(("file", "stock.csv", "text/csv", csv));
    let forged = ada.post_multipart("/dashboard/bulk-import", &[("mode", "create")], file).await;
    assert_eq!(forged.status, 403);
    // The upload is kept as a draft and reviewed on its own page (tests/api/web/bulk_drafts.rs).
    let kept = ada.post_multipart("/dashboard/bulk-import", &[("csrf", &csrf), ("mode", "create")], file).await;
    assert_eq!(kept.status, 303, "{}", kept.body);
    let draft = kept.location().expect("the draft").to_owned();
    let checked = ada.get(&draft).await;
    assert_eq!(checked.status, 200);
    assert!(
        checked.body.contains(&format!(
            "<strong>B3</strong> price_gbp (“-5”): {}",
            sentence(&rehome::domain::listing::LISTING_BODY, "price_gbp", "price_gbp_invalid")
        )),
        "{}",
        checked.body
    );
    assert!(checked.body.contains("would be created"), "{}", checked.body);
    let listings = json(app.get("/v1/listings?status=any", &partner.key).await).await;
    assert_eq!(listings["meta"]["total"], 0, "reviewing and a forged upload wrote nothing");
    let imported = ada.post(&format!("{draft}/import"), &[("csrf", &csrf), ("rows", "1"), ("skipped", "1")]).await;
    imported.assert_redirect(&draft);
    let listings = json(app.get("/v1/listings?status=any", &partner.key).await).await;
    assert_eq!(listings["meta"]["total"], 1, "the valid row");
}

#[tokio::test]
async fn a_listing_is_created_with_a_photo_shown_with_its_money_and_edited() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/listings/new").await.csrf();
    let png = crate::photos::image_bytes(image::ImageFormat::Png, 60, 40);
    let photo = Some(("photo", "sofa.png", "image/png", png.as_slice()));
    let fields = |price: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("title", "Grey velvet sofa".to_owned()),
            ("price_gbp", price.to_owned()),
            ("channel", "clearance".to_owned()),
            ("quantity", "2".to_owned()),
            ("category", "3-Seater Sofas".to_owned()),
            ("condition", "excellent".to_owned()),
            ("faults", "None".to_owned()),
            ("delivery_contribution_gbp", "30".to_owned()),
            ("status", "active".to_owned()),
        ]
    };
    let refused_fields = fields("19.999");
    let refused_fields: Vec<(&str, &str)> = refused_fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = ada.post_multipart("/dashboard/listings/new", &refused_fields, None).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains(&format!(
            "id=\"price_gbp-error\" role=\"alert\">{}<",
            sentence(&rehome::domain::listing::LISTING_BODY, "price_gbp", "price_gbp_invalid")
        )),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"19.999\""), "the value given is kept");

    let good = fields("450");
    let good: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let created = ada.post_multipart("/dashboard/listings/new", &good, photo).await;
    let listings = json(app.get("/v1/listings", &partner.key).await).await;
    let listing = &listings["data"][0];
    assert_eq!(listing["title"], "Grey velvet sofa");
    let id = listing["id"].as_i64().unwrap();
    created.assert_redirect(&format!("/dashboard/listings/{id}"));
    let page = ada.get(&format!("/dashboard/listings/{id}")).await.body;
    assert!(page.contains("<dt>Your payout per unit</dt><dd>339.00</dd>"), "450 - 67.50 - 13.50 - 30: {page}");
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(detail["images"].as_array().map(Vec::len), Some(1), "the photo is the listing's: {detail}");

    let mut edit = fields("399.99");
    edit.push(("sku", "SOFA-1".to_owned()));
    let edit: Vec<(&str, &str)> = edit.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let saved = ada.post_multipart(&format!("/dashboard/listings/{id}"), &edit, None).await;
    saved.assert_redirect(&format!("/dashboard/listings/{id}"));
    let shown = ada.get(&format!("/dashboard/listings/{id}")).await.body;
    assert!(shown.contains("Listing saved."), "the notice, once: {shown}");
    assert!(!ada.get(&format!("/dashboard/listings/{id}")).await.body.contains("Listing saved."), "not twice");
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!((detail["price_pence"].as_i64(), detail["sku"].as_str()), (Some(39_999), Some("SOFA-1")), "{detail}");

    // The many-valued fields and the taxonomy: a bad dimension is shown, nothing is saved.
    let form = ada.get(&format!("/dashboard/listings/{id}/edit")).await.body;
    for label in ["Colour", "Fabric", "Age", "Warehouse", "RRP (GBP)", "Available from", "Piece 1 width", "Dogs"] {
        assert!(form.contains(&format!(">{label}</label>")), "{label}: {form}");
    }
    let mut full = fields("399.99");
    for (name, value) in [
        ("rrp_gbp", "1200"),
        ("colour", "Grey"),
        ("fabric", "Velvet"),
        ("age_years", "2 years old"),
        ("exposed_to", "Dogs"),
        ("exposed_to", "Cats"),
        ("measurement_1_type", "3-Seater"),
        ("measurement_1_w_cm", "210"),
        ("measurement_1_d_cm", "wide"),
        ("measurement_1_h_cm", "85"),
    ] {
        full.push((name, value.to_owned()));
    }
    let bad: Vec<(&str, &str)> = full.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = ada.post_multipart(&format!("/dashboard/listings/{id}"), &bad, None).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("id=\"measurements-error\" role=\"alert\">"), "{}", refused.body);
    assert!(refused.body.contains("value=\"wide\""), "the value given is kept");
    let unchanged = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(unchanged["colour"], "", "{unchanged}");
    for (name, value) in full.iter_mut() {
        if *name == "measurement_1_d_cm" {
            *value = "95".to_owned();
        }
    }
    let good: Vec<(&str, &str)> = full.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(ada.post_multipart(&format!("/dashboard/listings/{id}"), &good, None).await.status, 303);
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!((detail["colour"].as_str(), detail["fabric"].as_str()), (Some("Grey"), Some("Velvet")), "{detail}");
    assert_eq!(detail["exposed_to"], serde_json::json!(["Dogs", "Cats"]), "{detail}");
    assert_eq!(detail["measurements"][0]["type"], "3-Seater", "{detail}");
    assert_eq!(detail["measurements"][0]["d_cm"].as_f64(), Some(95.0), "{detail}");
    let form = ada.get(&format!("/dashboard/listings/{id}/edit")).await.body;
    assert!(form.contains("<option value=\"Grey\" selected>") && form.contains("value=\"210\""), "{form}");
    // Cleared on edit: the colour and the pieces.
    let plain = fields("399.99");
    let plain: Vec<(&str, &str)> = plain.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(ada.post_multipart(&format!("/dashboard/listings/{id}"), &plain, None).await.status, 303);
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert!(detail["colour"] == "" && detail["measurements"] == serde_json::json!([]), "{detail}");
    assert_eq!(detail["images"].as_array().map(Vec::len), Some(1), "the photo stays: {detail}");

    // Its photos: one added, made the cover, the other removed; refusals shown.
    let attachments = |detail: &serde_json::Value| -> Vec<i64> {
        detail["image_imports"].as_array().unwrap().iter().filter_map(|i| i["attachment_id"].as_i64()).collect()
    };
    let first = attachments(&detail);
    let photos = format!("/dashboard/listings/{id}/photos");
    let token = [("csrf", csrf.as_str())];
    let jpeg = crate::photos::image_bytes(image::ImageFormat::Jpeg, 50, 50);
    let added = ada.post_multipart(&photos, &token, Some(("photo", "arm.jpg", "image/jpeg", jpeg.as_slice()))).await;
    added.assert_redirect(&format!("/dashboard/listings/{id}"));
    let shown = ada.get(&format!("/dashboard/listings/{id}")).await.body;
    assert!(shown.contains("Photo added."), "{shown}");
    assert!(shown.contains("Make<span class=\"visually-hidden\"> photo 2 the</span> cover</button>"), "{shown}");
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    let both = attachments(&detail);
    assert_eq!((both.len(), both[0]), (2, first[0]), "{detail}");
    let bad = ada.post_multipart(&photos, &token, Some(("photo", "x.png", "image/png", b"not an image"))).await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.body.contains(&format!(
            "id=\"photo-error\" role=\"alert\">x.png was not added: {}<",
            escape(&Outcome::UnsupportedImage.message())
        )),
        "{}",
        bad.body
    );
    ada.post(&format!("{photos}/2/cover"), &token).await.assert_redirect(&format!("/dashboard/listings/{id}"));
    assert!(ada.get(&format!("/dashboard/listings/{id}")).await.body.contains("Cover photo changed."));
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(attachments(&detail), [both[1], both[0]], "the new photo is the cover: {detail}");
    let missing = ada.post(&format!("{photos}/9/remove"), &token).await;
    assert_eq!(missing.status, 422);
    assert!(missing.body.contains(&format!(">{}<", escape(&Outcome::PhotoNotFound.message()))));
    ada.post(&format!("{photos}/2/remove"), &token).await.assert_redirect(&format!("/dashboard/listings/{id}"));
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(attachments(&detail), [both[1]], "{detail}");
    assert_eq!(ada.post(&format!("{photos}/1/remove"), &[]).await.status, 403, "no token, nothing removed");

    // A member may look, not create nor change photos.
    let mut mo = member(&app, &partner).await;
    let page = mo.get(&format!("/dashboard/listings/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(!page.body.contains("Upload photo") && !page.body.contains("Remove photo"));
    assert_eq!(mo.post(&format!("{photos}/1/remove"), &[("csrf", page.csrf().as_str())]).await.status, 403);
    assert_eq!(mo.get("/dashboard/listings/new").await.status, 403);
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(attachments(&detail), [both[1]], "{detail}");
}

#[tokio::test]
async fn brand_billing_and_warehouses_are_edited_in_settings_with_the_apis_rules() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/settings").await.csrf();
    let bad = [
        ("csrf", csrf.as_str()),
        ("company_name", "Acme Sofas Ltd"),
        ("postcode", "not a postcode"),
        ("country", "United Kingdom"),
    ];
    let page = ada.post("/dashboard/settings/billing", &bad).await;
    assert_eq!(page.status, 422);
    assert!(
        page.body.contains(&format!(
            "id=\"billing-postcode-error\" role=\"alert\">{}<",
            sentence(&rehome::domain::settings::BILLING_BODY, "postcode", "postcode_invalid")
        )),
        "{}",
        page.body
    );
    let good = [
        ("csrf", csrf.as_str()),
        ("company_name", "Acme Sofas Ltd"),
        ("postcode", "sw1a1aa"),
        ("country", "uk"),
        ("invoice_email", "ap@acme.example"),
    ];
    ada.post("/dashboard/settings/billing", &good).await.assert_redirect("/dashboard/settings");
    let billing = json(app.get("/v1/partner/settings/billing", &partner.key).await).await;
    assert_eq!(
        (billing["billing"]["postcode"].as_str(), billing["billing"]["country"].as_str()),
        (Some("SW1A 1AA"), Some("United Kingdom")),
        "{billing}"
    );

    let profile = [("csrf", csrf.as_str()), ("display_name", "Acme Sofas"), ("support_email", "help@acme.example")];
    ada.post("/dashboard/settings/brand", &profile).await.assert_redirect("/dashboard/settings");
    let brand = json(app.get("/v1/partner/settings/brand", &partner.key).await).await;
    assert_eq!(brand["profile"]["display_name"], "Acme Sofas", "{brand}");

    let refused = ada.post("/dashboard/settings/warehouses", &[("csrf", csrf.as_str()), ("city", "Leeds")]).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("id=\"warehouse-label-error\""), "{}", refused.body);
    for label in ["Leeds DC", "Bristol yard"] {
        let added = ada
            .post("/dashboard/settings/warehouses", &[("csrf", csrf.as_str()), ("label", label), ("city", "Leeds")])
            .await;
        added.assert_redirect("/dashboard/settings");
    }
    assert!(ada.get("/dashboard/settings").await.body.contains("Warehouse added."), "the notice after adding");
    let list = json(app.get("/v1/partner/settings/warehouses", &partner.key).await).await;
    let second = list["warehouses"].as_array().unwrap().iter().find(|w| w["label"] == "Bristol yard").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ada.post(&format!("/dashboard/settings/warehouses/{second}/default"), &[("csrf", csrf.as_str())])
        .await
        .assert_redirect("/dashboard/settings");
    let list = json(app.get("/v1/partner/settings/warehouses", &partner.key).await).await;
    let default = list["warehouses"].as_array().unwrap().iter().find(|w| w["is_default"] == true).unwrap();
    assert_eq!(default["label"], "Bristol yard");
    // An existing warehouse edited: a bad email is shown beside its field and changes
    // nothing; a good edit is saved (and leaves the default where it is).
    let leeds = list["warehouses"].as_array().unwrap().iter().find(|w| w["label"] == "Leeds DC").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = ada.get("/dashboard/settings").await.body;
    assert!(page.contains("<summary>Edit Leeds DC</summary>"), "{page}");
    let edit = |email: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("label", "Leeds DC".to_owned()),
            ("city", "York".to_owned()),
            ("contact_email", email.to_owned()),
        ]
    };
    let bad = edit("not an email");
    let bad: Vec<(&str, &str)> = bad.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = ada.post(&format!("/dashboard/settings/warehouses/{leeds}"), &bad).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains(&format!(
            "contact_email-error\" role=\"alert\">{}<",
            sentence(&rehome::domain::settings::WAREHOUSE_BODY, "contact_email", "contact_email_invalid")
        )),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"not an email\""), "the value given is kept");
    let good = edit("yard@acme.example");
    let good: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ada.post(&format!("/dashboard/settings/warehouses/{leeds}"), &good).await.assert_redirect("/dashboard/settings");
    let list = json(app.get("/v1/partner/settings/warehouses", &partner.key).await).await;
    let saved = list["warehouses"].as_array().unwrap().iter().find(|w| w["id"] == leeds.as_str()).unwrap();
    assert_eq!((saved["city"].as_str(), saved["is_default"].as_bool()), (Some("York"), Some(false)), "{saved}");
    // A member sees the sections, cannot change them.
    let mut mo = member(&app, &partner).await;
    let page = mo.get("/dashboard/settings").await;
    assert!(!page.body.contains("Update billing") && page.body.contains("Acme Sofas Ltd"));
    let token = page.csrf();
    assert_eq!(
        mo.post("/dashboard/settings/billing", &[("csrf", token.as_str()), ("company_name", "Mine")]).await.status,
        403
    );
}

#[tokio::test]
async fn an_events_attempts_are_shown_and_a_key_is_rolled_with_its_new_secret_shown_once() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let hook = json!({"url": "http://127.0.0.1:9/hook", "enabled": true});
    assert_eq!(app.patch("/v1/partner/settings/integrations/webhook", &partner.key, &hook).await.status(), 200);
    let sent = json(app.post("/v1/partner/settings/integrations/webhook/test", &partner.key, &json!({})).await).await;
    let event_id = sent["event_id"].as_str().expect("the test event's id").to_owned();
    let mut ada = Browser::signed_in(&app, &email).await;
    let attempted = || async {
        let entry = crate::webhooks::delivery(&app, &partner, &event_id).await;
        (entry["attempts"].as_i64() >= Some(1)).then_some(())
    };
    crate::helpers::poll(Duration::from_secs(5), attempted).await;
    let page = ada.get(&format!("/dashboard/deliveries/{event_id}")).await;
    assert!(page.body.contains("<dd>Could not connect</dd>"), "an attempt with its failure in words: {}", page.body);
    let csrf = page.csrf();
    let replayed = ada.post("/dashboard/deliveries/replay-dead", &[("csrf", csrf.as_str())]).await;
    replayed.assert_redirect("/dashboard/deliveries");
    let page = ada.get("/dashboard/deliveries").await;
    assert!(page.body.contains("No event was dead, so nothing was queued."), "{}", page.body);

    let keys = json(app.get("/v1/partner/settings/integrations/keys", &partner.key).await).await;
    let key_id = keys["data"][0]["id"].as_i64().unwrap();
    let rolled = ada.post(&format!("/dashboard/integrations/keys/{key_id}/roll"), &[("csrf", csrf.as_str())]).await;
    rolled.assert_redirect("/dashboard/integrations");
    let rolled = ada.get("/dashboard/integrations").await;
    let secret = rolled.value_of("new-key-secret");
    assert_eq!(app.get("/v1/listings/options", &secret).await.status(), 200, "the new key works");
    assert_eq!(app.get("/v1/listings/options", &partner.key).await.status(), 200, "the old one still works for now");
}

#[tokio::test]
async fn deliveries_and_the_audit_log_are_paged_beyond_their_first_hundred() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let hook = json!({"url": "http://127.0.0.1:9/hook", "enabled": true});
    assert_eq!(app.patch("/v1/partner/settings/integrations/webhook", &partner.key, &hook).await.status(), 200);
    for n in 0..101 {
        let sent = app.post("/v1/partner/settings/integrations/webhook/test", &partner.key, &json!({})).await;
        assert_eq!(sent.status(), 200, "test event {n}");
        let boost = json!({"credit_boost_percent": 110 + n % 2});
        assert_eq!(app.patch("/v1/partner/settings/payouts", &partner.key, &boost).await.status(), 200);
    }
    let mut ada = Browser::signed_in(&app, &email).await;

    let first = ada.get("/dashboard/deliveries").await;
    assert!(first.body.contains("101 events, page 1 of 2, newest first."), "{}", first.body);
    assert_eq!(first.body.matches(">Replay</button>").count(), 100, "a hundred rows");
    assert!(first.body.contains("href=\"/dashboard/deliveries?status=any&amp;page=2\" rel=\"next\">Next page<"));
    let second = ada.get("/dashboard/deliveries?status=any&page=2").await;
    assert_eq!(second.body.matches(">Replay</button>").count(), 1, "the oldest event on page 2");
    assert!(second.body.contains("rel=\"prev\">Previous page<") && !second.body.contains("Next page"));
    for odd in ["page=0", "page=x", "page=-3"] {
        let page = ada.get(&format!("/dashboard/deliveries?{odd}")).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("page 1 of 2"), "{odd} shows the first page");
    }

    let newest = ada.get("/dashboard/audit-log").await;
    let older = newest.body.split("/dashboard/audit-log?after=").nth(1).expect("an Older entries link");
    let after: String = older.chars().take_while(char::is_ascii_digit).collect();
    assert!(!newest.body.contains(">Newest entries<"));
    let next = ada.get(&format!("/dashboard/audit-log?after={after}")).await;
    assert_eq!(next.status, 200);
    assert!(next.body.contains(">Newest entries<"), "{}", next.body);
    let rows = |body: &str| body.matches("<tr><td data-label=\"When\">").count();
    assert_eq!(rows(&newest.body), 100);
    let audit = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;
    assert!(rows(&next.body) >= 1 && audit["meta"]["has_more"] == true, "{audit}");
}

#[tokio::test]
async fn htmx_is_served_by_the_binary_and_configured_for_the_pages_csp() {
    let app = market_app().await;
    let (_partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/listings").await;
    let script = "<script src=\"/dashboard/assets/htmx-2.0.11.min.js\" defer></script>";
    assert!(page.body.contains(script), "{}", page.body);
    for setting in ["\"includeIndicatorStyles\":false", "\"allowEval\":false", "\"historyCacheSize\":0"] {
        assert!(page.body.contains(setting), "{setting}");
    }
    assert!(!ada.get("/dashboard/wallet").await.body.contains("htmx"), "only the pages that use it load it");
    let asset = reqwest::get(format!("{}/dashboard/assets/htmx-2.0.11.min.js", app.base)).await.unwrap();
    assert_eq!(asset.status(), 200);
    assert_eq!(asset.headers()["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(asset.headers()["cache-control"], "public, max-age=31536000, immutable");
    let body = asset.text().await.unwrap();
    assert!(body.starts_with("var htmx=function(){") && body.len() > 40_000);
    // Gzipped for a browser that takes it (static bytes: nothing secret to leak).
    let client = reqwest::Client::new();
    let url = format!("{}/dashboard/assets/htmx-2.0.11.min.js", app.base);
    let gz = client.get(&url).header("accept-encoding", "gzip, deflate, br").send().await.unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    assert_eq!(gz.headers()["vary"], "Accept-Encoding");
    let bytes = gz.bytes().await.unwrap();
    assert!(bytes.starts_with(&[0x1f, 0x8b]) && bytes.len() < body.len() / 2, "{} bytes", bytes.len());
    let mut unzipped = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut unzipped).unwrap();
    assert_eq!(unzipped, body);
    let page = ada.get("/dashboard/listings").await;
    assert!(page.headers.get("content-encoding").is_none(), "pages (with their CSRF tokens) are not compressed");
}

#[tokio::test]
async fn the_home_says_what_needs_doing_and_shows_the_years_sales() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let quiet = ada.get("/dashboard").await;
    assert!(quiet.body.contains("Nothing needs you now"), "{}", quiet.body);

    // A sale delivered this month, an order to collect, an invitation waiting.
    let sold = listing(&app, &partner, json!({"channel": "clearance", "price_gbp": 100, "quantity": 3})).await;
    let sale = order(&app, json!({"listing_id": sold})).await["id"].as_i64().unwrap();
    complete(&app, sale, json!({})).await;
    let to_collect = order(&app, json!({"listing_id": sold, "buyer_window_start": "2026-12-10"})).await;
    let invited = json!({"email": "sam@acme.example", "display_name": "Sam Stock", "role": "member"});
    assert_eq!(app.post("/v1/partner/settings/team", &partner.key, &invited).await.status(), 201);

    // Two of the brand's events dead for good, one of another brand's, one still pending.
    let other = app.partner("other").await;
    let mut dead = Vec::new();
    for brand_id in [partner.brand_id, partner.brand_id, other.brand_id, partner.brand_id] {
        let event = Event::new(brand_id, EventType::RedemptionCreated, json!({"n": dead.len()})).unwrap();
        app.store.emit_event(&event).await.unwrap();
        dead.push(event.id);
    }
    let raw = app.db.raw().await;
    on_raw!(&raw, |pool| {
        sqlx::query("UPDATE webhook_events SET status = 'dead', next_attempt_at = NULL WHERE id IN ($1, $2, $3)")
            .bind(&dead[0])
            .bind(&dead[1])
            .bind(&dead[2])
            .execute(pool)
            .await
            .unwrap();
    });
    raw.close().await;

    let home = ada.get("/dashboard").await;
    assert_eq!(home.status, 200);
    let body = &home.body;
    assert!(!body.contains("Nothing needs you now"), "{body}");
    assert!(body.contains("2 webhook deliveries failed for good"), "the brand's dead events alone: {body}");
    // The sale and the order both wait for their collection.
    assert!(body.contains("2 collections to schedule"), "{body}");
    let end = to_collect["buyer_window_end"].as_str().unwrap();
    let deadline = chrono::NaiveDate::parse_from_str(end, "%Y-%m-%d").unwrap().format("%-d %b %Y").to_string();
    assert!(body.contains(&format!("by {deadline}")), "the deadline in words: {body}");
    let title = json(app.get(&format!("/v1/listings/{sold}"), &partner.key).await).await["title"].clone();
    let linked = format!("<a href=\"/dashboard/listings/{sold}\">{}</a>", title.as_str().unwrap());
    assert!(body.contains(&linked), "each collection names its listing: {body}");
    assert!(body.contains("1 invitation not accepted yet") && body.contains("Sam Stock (sam@acme.example)"));
    assert!(body.contains("<a href=\"/dashboard/listings?status=active\">Active</a>: 1"), "{body}");
    // The chart has a text alternative: this month's sale in the table.
    assert!(body.contains("<svg class=\"chart\"") && body.contains("<title id=\"sales-title\">"), "{body}");
    let month = chrono::Utc::now().format("%b %Y").to_string();
    assert!(body.contains(&format!(
        "<td data-label=\"Month\">{month}</td><td data-label=\"Sales\" class=\"num\">1</td><td data-label=\"Gross (£)\" class=\"num\">100.00</td>"
    )), "{body}");
    assert_eq!(body.matches("<rect ").count(), 12, "a bar per month");

    // A member sees the work, not the team's or the keys'.
    let mut mo = member(&app, &partner).await;
    let theirs = mo.get("/dashboard").await;
    assert!(theirs.body.contains("2 collections to schedule") && !theirs.body.contains("Sam Stock"));
    // ...and is offered only what a member can do: an admin schedules them.
    assert!(!theirs.body.contains("Schedule collections"), "{}", theirs.body);
    assert!(theirs.body.contains("An admin of your team schedules them."), "{}", theirs.body);
    // An admin's page refused, and a record that is not there, keep the navigation.
    for (path, status, said) in [
        ("/dashboard/integrations/keys/new", 403, "This page is for your brand"),
        ("/dashboard/listings/99999", 404, "no such record"),
    ] {
        let page = mo.get(path).await;
        assert_eq!(page.status, status, "{path}");
        assert!(page.body.contains(said), "{path}: {}", page.body);
        assert!(
            page.body.contains("href=\"/dashboard/listings\"") && page.body.contains("Sign out"),
            "{path}: {}",
            page.body
        );
    }
}

/// The sentence a page shows for reason `code` on `field` of the form whose body table is
/// `spec`, as the page escapes it: the field by its label and the rule in words, never the
/// code or the wire name (decisions 15.4).
fn sentence(spec: &rehome::domain::body::BodySpec, field: &str, code: &str) -> String {
    let said = rehome::domain::words::sentence(Some(spec), field, code).expect("worded");
    assert!(!said.contains('`') && !said.contains('_'), "{said}");
    escape(&said)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&#34;").replace('\'', "&#39;")
}

#[tokio::test]
async fn a_listing_is_deleted_only_after_its_confirmation_step_and_a_reload_deletes_nothing_more() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let id = listing(&app, &partner, json!({"title": "Oak sideboard"})).await;
    let kept = listing(&app, &partner, json!({"title": "Teak bench"})).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let path = format!("/dashboard/listings/{id}/delete");

    let detail = ada.get(&format!("/dashboard/listings/{id}")).await;
    assert!(detail.body.contains(&format!("action=\"{path}\"")), "no Delete on the listing's page");
    // One click only asks: the step names the listing, and the way back keeps it.
    let step = ada.get(&path).await;
    assert_eq!(step.status, 200);
    assert!(step.body.contains("Delete \u{201c}Oak sideboard\u{201d}?"), "{}", step.body);
    assert!(step.body.contains("Delete listing") && step.body.contains("No, keep the listing"));
    assert_eq!(app.get(&format!("/v1/listings/{id}"), &partner.key).await.status(), 200, "asking deleted it");
    // With htmx the same step is a fragment for the button's place.
    let inline = ada.get_with(&path, &[("HX-Request", "true")]).await;
    assert!(inline.body.contains("confirm-inline") && !inline.body.contains("<html"), "{}", inline.body);

    let csrf = step.csrf();
    let done = ada.post(&path, &[("csrf", &csrf)]).await;
    done.assert_redirect("/dashboard/listings");
    let list = ada.get("/dashboard/listings").await;
    assert!(list.body.contains("Listing deleted"), "no notice after deleting");
    assert!(!list.body.contains("Oak sideboard") && list.body.contains("Teak bench"));
    assert_eq!(app.get(&format!("/v1/listings/{id}"), &partner.key).await.status(), 404);
    assert_eq!(app.get(&format!("/v1/listings/{kept}"), &partner.key).await.status(), 200);
    // A reload of the POST (or a second tab) finds nothing to delete: the 404 page.
    assert_eq!(ada.post(&path, &[("csrf", &csrf)]).await.status, 404);
    assert_eq!(ada.get("/dashboard/listings/99999/delete").await.status, 404);

    // A member is not offered it and is refused if they post anyway; nothing changes.
    let mut mo = member(&app, &partner).await;
    assert!(!mo.get(&format!("/dashboard/listings/{kept}")).await.body.contains("/delete\""));
    let mo_csrf = mo.get("/dashboard/listings").await.csrf();
    assert_eq!(mo.post(&format!("/dashboard/listings/{kept}/delete"), &[("csrf", &mo_csrf)]).await.status, 403);
    assert_eq!(app.get(&format!("/v1/listings/{kept}"), &partner.key).await.status(), 200);
}

/// The audit log filtered by kind of action and by who acted, pages and CSV keeping the
/// filters; listing changes made in the dashboard and with a key are in it, in words.
#[tokio::test]
async fn the_audit_log_filters_by_kind_and_person_and_downloads_the_same_entries_as_csv() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    // A listing created with the key, then changed and deleted in the dashboard.
    let id = listing(&app, &partner, json!({"title": "=HYPERLINK(\"x\")"})).await;
    let csrf = ada.get(&format!("/dashboard/listings/{id}")).await.csrf();
    let deleted = ada.post(&format!("/dashboard/listings/{id}/delete"), &[("csrf", csrf.as_str())]).await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    let boost = json!({"credit_boost_percent": 110});
    assert_eq!(app.patch("/v1/partner/settings/payouts", &partner.key, &boost).await.status(), 200);

    let all = ada.get("/dashboard/audit-log").await;
    assert!(all.body.contains(">Listing created<") && all.body.contains(">Listing deleted<"), "{}", all.body);
    assert!(all.body.contains(">Listing “=HYPERLINK(&#34;x&#34;)”<"), "named by its title: {}", all.body);
    let listings = ada.get("/dashboard/audit-log?topic=listings").await;
    let rows = |body: &str| body.matches("<tr><td data-label=\"When\">").count();
    assert_eq!(rows(&listings.body), 2, "{}", listings.body);
    assert!(!listings.body.contains(">Settings changed<") && !listings.body.contains(">Signed in<"));
    assert!(listings.body.contains("<option value=\"listings\" selected>"), "the choice is kept");
    // By who: Ada (the dashboard) deleted; the key created.
    let ada_only = ada.get(&format!("/dashboard/audit-log?topic=listings&who=user:{}", partner.user_id)).await;
    assert_eq!(rows(&ada_only.body), 1, "{}", ada_only.body);
    assert!(ada_only.body.contains(">Listing deleted<"));
    let signins = ada.get(&format!("/dashboard/audit-log?topic=sign-in&who=user:{}", partner.user_id)).await;
    assert!(signins.body.contains(">Signed in<") && rows(&signins.body) == 1, "{}", signins.body);
    // Unknown filters show everything, never an error.
    let odd = ada.get("/dashboard/audit-log?topic=%3Cb%3E&who=operator:x").await;
    assert_eq!((odd.status, rows(&odd.body)), (200, rows(&all.body)));

    // The CSV: the same entries, in words, with the action's name, and no formula.
    let csv = ada.get("/dashboard/audit-log.csv?topic=listings").await;
    assert_eq!(csv.status, 200);
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    assert!(csv.headers["content-disposition"].to_str().unwrap().contains("audit-log-acme.csv"));
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(lines[0], "at_utc,who,action,action_name,target,address");
    assert_eq!(lines.len(), 3, "{}", csv.body);
    assert!(
        lines[1].contains(",Listing deleted,listing.deleted,") && lines[2].contains("listing.created"),
        "{lines:?}"
    );
    // A member has no audit log.
    let mut mo = member(&app, &partner).await;
    assert_eq!(mo.get("/dashboard/audit-log.csv").await.status, 403);
}

/// Redemptions newest first, filtered by where each stands and by customer, and the same
/// rows as CSV; the wallet's entries filtered by type, status and month, and as CSV.
#[tokio::test]
async fn redemptions_and_wallet_entries_filter_and_download_as_csv() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let spent = credit_code(&app, &partner, json!(100)).await;
    let unspent = credit_code(&app, &partner, json!(40)).await;
    let (_, cash_order) = sold_exchange(&app, &partner, json!(70)).await;
    let cash = choose(&app, cash_order, json!({"customer_id": "=cus_cash", "customer_choice": "cash"})).await;
    assert_eq!(cash.status(), 201);
    let redeem = json!({"code": spent["code"]});
    assert_eq!(app.post("/v1/partner/credits/redeem", &partner.key, &redeem).await.status(), 200);
    let mut ada = Browser::signed_in(&app, &email).await;
    let rows = |body: &str| body.matches("<tr><td data-label=\"Redemption\">").count();

    let all = ada.get("/dashboard/redemptions").await;
    assert_eq!(rows(&all.body), 3);
    assert!(all.body.contains("3 redemptions, newest first."), "{}", all.body);
    let newest = all.body.find("=cus_cash").unwrap();
    assert!(newest < all.body.find(spent["id"].as_str().unwrap()).unwrap(), "newest first");
    for (state, id) in [("spent", &spent["id"]), ("not-spent", &unspent["id"])] {
        let page = ada.get(&format!("/dashboard/redemptions?state={state}")).await;
        assert_eq!(rows(&page.body), 1, "{state}: {}", page.body);
        assert!(page.body.contains(id.as_str().unwrap()), "{state}");
        assert!(page.body.contains(&format!("<option value=\"{state}\" selected>")), "{state}: the choice is kept");
    }
    let cash_only = ada.get("/dashboard/redemptions?state=cash").await;
    assert_eq!(rows(&cash_only.body), 1);
    let nobody = ada.get("/dashboard/redemptions?state=expired").await;
    assert!(nobody.body.contains("No redemptions match"), "{}", nobody.body);
    let by_customer = ada.get("/dashboard/redemptions?customer=cus_1").await;
    assert_eq!(rows(&by_customer.body), 2, "{}", by_customer.body);

    let csv = ada.get("/dashboard/redemptions.csv?state=cash").await;
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    let lines: Vec<&str> = csv.body.lines().collect();
    assert!(lines[0].starts_with("redemption,customer,choice,value_gbp,code"), "{}", lines[0]);
    assert_eq!(lines.len(), 2, "{}", csv.body);
    assert!(lines[1].contains(",'=cus_cash,Cash,70.00,"), "a formula written as text: {}", lines[1]);
    let spent_csv = ada.get("/dashboard/redemptions.csv?state=spent").await;
    assert!(spent_csv.body.lines().nth(1).is_some_and(|l| l.contains("Ada")), "who spent it: {}", spent_csv.body);

    // The wallet: a sale delivered in November 2026 and the trade-in credits (today).
    let listing_id = listing(&app, &partner, json!({"channel": "clearance", "price_gbp": 100})).await;
    let order_id = order(&app, json!({"listing_id": listing_id})).await["id"].as_i64().unwrap();
    complete(&app, order_id, json!({"completed_at": "2026-11-01T10:00:00Z"})).await;
    let entry_rows = |body: &str| body.matches("<tr><td data-label=\"Order\">").count();
    let wallet = ada.get("/dashboard/wallet").await;
    let total = entry_rows(&wallet.body);
    assert!(total >= 3, "{}", wallet.body);
    let sales = ada.get("/dashboard/wallet?kind=sale").await;
    assert_eq!(entry_rows(&sales.body), 1, "{}", sales.body);
    assert!(sales.body.contains(&format!(">#{order_id}</td>")));
    let november = ada.get("/dashboard/wallet?month=2026-11").await;
    assert!(november.body.contains("<option value=\"2026-11\" selected>November 2026</option>"), "{}", november.body);
    let in_november = entry_rows(&november.body);
    assert!(in_november >= 1 && in_november <= total);
    let paid = ada.get("/dashboard/wallet?status=paid").await;
    assert!(paid.body.contains("No entries match"), "nothing is on a statement yet: {}", paid.body);
    let csv = ada.get("/dashboard/wallet/entries.csv?kind=sale").await;
    let lines: Vec<&str> = csv.body.lines().collect();
    assert!(lines[0].starts_with("order,type,title,quantity,gross_gbp"), "{}", lines[0]);
    assert_eq!(lines.len(), 2, "{}", csv.body);
    assert!(lines[1].starts_with(&format!("#{order_id},Sale,")) && lines[1].contains(",100.00,"), "{}", lines[1]);
    assert!(ada.get("/dashboard/wallet?month=2026-13&kind=%3C").await.status == 200, "odd filters show everything");
}

/// One search box finds each kind of record by what names it, scoped to the brand; people
/// and keys only for an admin.
#[tokio::test]
async fn the_search_finds_listings_orders_codes_customers_events_and_people() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let sideboard = listing(&app, &partner, json!({"title": "Walnut <sideboard>", "sku": "WAL-77"})).await;
    let placed = order(&app, json!({"listing_id": sideboard})).await["id"].as_i64().unwrap();
    let code = credit_code(&app, &partner, json!(40)).await;
    let hook = json!({"url": "http://127.0.0.1:9/hook", "enabled": true});
    assert_eq!(app.patch("/v1/partner/settings/integrations/webhook", &partner.key, &hook).await.status(), 200);
    let sent = app.post("/v1/partner/settings/integrations/webhook/test", &partner.key, &json!({})).await;
    let event_id = json(sent).await["event_id"].as_str().unwrap().to_owned();
    // Another brand's listing with the same word is not found.
    let other = app.partner("globex").await;
    listing(&app, &other, json!({"title": "Walnut chair"})).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let search = |q: &str| {
        format!("/dashboard/search?q={}", url::form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>())
    };

    let home = ada.get("/dashboard").await;
    assert!(home.body.contains("action=\"/dashboard/search\" role=\"search\""), "the home page has the box");
    let words = ada.get(&search("walnut")).await;
    assert_eq!(words.status, 200);
    assert!(
        words.body.contains(&format!("href=\"/dashboard/listings/{sideboard}\">Walnut &#60;sideboard&#62;</a>")),
        "{}",
        words.body
    );
    assert!(!words.body.contains("Walnut chair"), "another brand's listing");
    let by_sku = ada.get(&search("WAL-77")).await;
    assert!(by_sku.body.contains(&format!("/dashboard/listings/{sideboard}")), "{}", by_sku.body);
    let by_order = ada.get(&search(&format!("#{placed}"))).await;
    assert!(by_order.body.contains(&format!("Order #{placed}: Walnut &#60;sideboard&#62;")), "{}", by_order.body);
    let by_code = ada.get(&search(code["code"].as_str().unwrap())).await;
    assert!(by_code.body.contains("£40.00 of credit, not spent yet (customer cus_1)"), "{}", by_code.body);
    let whole = code["code"].as_str().unwrap();
    let tail = &whole[whole.len() - 4..];
    let by_tail = ada.get(&search(&tail.to_lowercase())).await;
    assert!(by_tail.body.contains(&format!("Credit code RH-****-****-****-{tail}")), "{}", by_tail.body);
    assert!(by_tail.body.contains("£40.00 of credit, not spent yet"), "{}", by_tail.body);
    let by_customer = ada.get(&search("cus_1")).await;
    assert!(
        by_customer.body.contains("Customer cus_1")
            && by_customer.body.contains("/dashboard/redemptions?customer=cus_1")
    );
    let by_person = ada.get(&search("ada@")).await;
    assert!(by_person.body.contains(">People<") && by_person.body.contains("ada@acme.example"), "{}", by_person.body);
    let by_event = ada.get(&search(&event_id)).await;
    assert!(by_event.body.contains(&format!("href=\"/dashboard/deliveries/{event_id}\">Event {event_id}</a>")));
    assert!(by_event.body.contains("Test event"), "{}", by_event.body);
    assert!(ada.get(&search("evt_nope")).await.body.contains("Nothing matches"));
    let nothing = ada.get(&search("zebra")).await;
    assert!(nothing.body.contains("Nothing matches “zebra”"), "{}", nothing.body);
    let long = ada.get(&search(&"x".repeat(201))).await;
    assert!(long.body.contains("shorten it to 200 characters"), "{}", long.body);
    // A member finds records, not people.
    let mut mo = member(&app, &partner).await;
    let as_member = mo.get(&search("acme")).await;
    assert_eq!(as_member.status, 200);
    assert!(!as_member.body.contains(">People<"), "{}", as_member.body);
}

/// Several photos chosen at once: on a refused new listing the good ones are kept by the
/// form (named, not chosen again) and a bad one is named with its reason; the listing is
/// then created with them in order. Several added at once to a listing; past twenty, the
/// one too many is named. A kept photo of another brand is refused.
#[tokio::test]
async fn several_photos_at_once_and_photos_kept_when_a_new_listing_is_refused() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/listings/new").await.csrf();
    let png = crate::photos::image_bytes(image::ImageFormat::Png, 60, 40);
    let jpeg = crate::photos::image_bytes(image::ImageFormat::Jpeg, 50, 50);
    let fields = |title: &'static str| {
        vec![
            ("csrf", csrf.as_str()),
            ("title", title),
            ("price_gbp", "120"),
            ("channel", "clearance"),
            ("quantity", "1"),
            ("category", "Armchairs"),
            ("condition", "excellent"),
            ("faults", "None"),
            ("status", "active"),
        ]
    };
    // A bad photo beside two good ones: named, the good ones kept.
    let files = [
        ("photo", "front.png", "image/png", png.as_slice()),
        ("photo", "notes.txt", "image/png", b"not an image".as_slice()),
        ("photo", "side.jpg", "image/jpeg", jpeg.as_slice()),
    ];
    let refused = ada.post_files("/dashboard/listings/new", &fields("Walnut armchair"), &files).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("notes.txt was not kept: The image is not a readable"), "{}", refused.body);
    assert!(refused.body.contains("Kept from your last try, so you need not choose them again: front.png, side.jpg."));
    let kept: Vec<String> = refused
        .body
        .split("name=\"kept_photo\" value=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect();
    assert_eq!(kept.len(), 2, "{}", refused.body);
    // Refused again for a missing title: still kept.
    let mut again = fields("");
    for id in &kept {
        again.push(("kept_photo", id.as_str()));
    }
    again.push(("kept_photo_name", "front.png"));
    again.push(("kept_photo_name", "side.jpg"));
    let refused = ada.post_files("/dashboard/listings/new", &again, &[]).await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("front.png, side.jpg"), "{}", refused.body);
    // Fixed: created with both photos in the order chosen.
    let mut fixed = fields("Walnut armchair");
    for id in &kept {
        fixed.push(("kept_photo", id.as_str()));
    }
    let created = ada.post_files("/dashboard/listings/new", &fixed, &[]).await;
    assert_eq!(created.status, 303, "{}", created.body);
    let listings = json(app.get("/v1/listings", &partner.key).await).await;
    let id = listings["data"][0]["id"].as_i64().unwrap();
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    let attached: Vec<String> = detail["image_imports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["attachment_id"].as_i64())
        .map(|a| a.to_string())
        .collect();
    assert_eq!(attached, kept, "{detail}");

    // Several at once on the listing's page.
    let token = [("csrf", csrf.as_str())];
    let photos = format!("/dashboard/listings/{id}/photos");
    let two = [("photo", "back.png", "image/png", png.as_slice()), ("photo", "arm.jpg", "image/jpeg", jpeg.as_slice())];
    ada.post_files(&photos, &token, &two).await.assert_redirect(&format!("/dashboard/listings/{id}"));
    let page = ada.get(&format!("/dashboard/listings/{id}")).await;
    assert!(page.body.contains("Photos added, in the order you chose them."), "{}", page.body);
    let count = |detail: &serde_json::Value| detail["images"].as_array().map_or(0, Vec::len);
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(count(&detail), 4);
    // Past twenty: the one too many is named, those before it added.
    let many: Vec<(&str, &str, &str, &[u8])> =
        (0..17).map(|_| ("photo", "more.png", "image/png", png.as_slice())).collect();
    let over = ada.post_files(&photos, &token, &many).await;
    assert_eq!(over.status, 422);
    assert!(over.body.contains("more.png was not added: a listing has at most 20 photos"), "{}", over.body);
    assert!(over.body.contains("The 16 photos before it were added."), "{}", over.body);
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(count(&detail), 20);

    // A kept photo that is another brand's is refused, not attached.
    let (globex, other_email) = admin(&app, "globex").await;
    let mut eve = Browser::signed_in(&app, &other_email).await;
    let eve_csrf = eve.get("/dashboard/listings/new").await.csrf();
    let mut stolen = fields("Borrowed photo");
    stolen[0] = ("csrf", eve_csrf.as_str());
    stolen.push(("kept_photo", kept[0].as_str()));
    let refused = eve.post_files("/dashboard/listings/new", &stolen, &[]).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("A photo of this listing is no longer available: add it again."));
    assert!(!refused.body.contains("name=\"kept_photo\""), "a photo refused is not carried again");
    let theirs = json(app.get("/v1/listings?status=any", &globex.key).await).await;
    assert_eq!(theirs["meta"]["total"], 0);
}
