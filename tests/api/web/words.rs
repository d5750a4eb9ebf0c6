//! Words on the dashboard (issue 31 item 1): the brand's time zone (a setting, audited,
//! validated beside its field), every instant written in it with the zone's abbreviation,
//! dates in words, and the statements naming the brand by its name.

use serde_json::json;

use super::{admin, audit_actions, Browser};
use crate::helpers::spawn_app;
use crate::marketplace::{complete, listing, market_app, order};
use rehome::domain::user::Role;

/// The zone the settings page shows in its field.
fn zone_field(page: &super::Page) -> String {
    let marker = "id=\"time_zone\" name=\"time_zone\" type=\"text\" autocomplete=\"off\" spellcheck=\"false\" value=\"";
    let start = page.body.find(marker).unwrap_or_else(|| panic!("no zone field in {}", page.body)) + marker.len();
    page.body[start..][..page.body[start..].find('"').unwrap()].to_owned()
}

#[tokio::test]
async fn the_brands_time_zone_is_london_until_an_admin_changes_it_and_pages_follow_it() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/settings").await;
    assert_eq!(zone_field(&page), "Europe/London");
    let csrf = page.csrf();
    let team = ada.get("/dashboard/team").await;
    assert!(team.body.contains(" GMT") || team.body.contains(" BST"), "sign-ins in London time: {}", team.body);

    // Any case, spaces around: the tz database's own spelling is kept.
    let posted = ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", " asia/tokyo ")]).await;
    posted.assert_redirect("/dashboard/settings");
    let saved = ada.get("/dashboard/settings").await;
    assert!(saved.body.contains("Time zone saved."), "{}", saved.body);
    assert_eq!(zone_field(&saved), "Asia/Tokyo");
    let team = ada.get("/dashboard/team").await;
    assert!(team.body.contains(" JST"), "the team's sign-ins in Tokyo time: {}", team.body);
    assert!(!team.body.contains(" GMT") && !team.body.contains(" BST"), "{}", team.body);
    let entries = app.store.audit_page(partner.brand_id, 10, None).await.expect("audit");
    assert!(
        entries.iter().any(|e| e.action == "settings.updated" && e.target.as_deref() == Some("settings:time_zone")),
        "audited like the other settings"
    );

    // The same zone again changes and records nothing.
    let before = audit_actions(&app, partner.brand_id).await.len();
    ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", "Asia/Tokyo")]).await;
    assert_eq!(audit_actions(&app, partner.brand_id).await.len(), before);

    // The API's brand settings are its contract: no time zone there.
    let brand = crate::helpers::json(app.get("/v1/partner/settings/brand", &partner.key).await).await;
    assert!(brand.get("time_zone").is_none(), "{brand}");
}

#[tokio::test]
async fn an_unknown_time_zone_is_refused_beside_its_field_and_changes_nothing() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/settings").await.csrf();
    let before = audit_actions(&app, partner.brand_id).await.len();
    for bad in ["Mars/Olympus", "", "London", "Europe/London\u{0}"] {
        let page = ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", bad)]).await;
        assert_eq!(page.status, 422, "{bad}: {}", page.body);
        assert!(
            page.body.contains("id=\"time-zone-error\" role=\"alert\">Choose a time zone from the list"),
            "the sentence beside the field: {}",
            page.body
        );
        assert!(page.body.contains("aria-describedby=\"time-zone-hint time-zone-error\" aria-invalid=\"true\""));
        assert!(!page.body.contains("time_zone_invalid"), "never the code");
    }
    assert_eq!(zone_field(&ada.get("/dashboard/settings").await), "Europe/London", "nothing changed");
    assert_eq!(audit_actions(&app, partner.brand_id).await.len(), before);
}

#[tokio::test]
async fn a_member_sees_the_time_zone_but_cannot_change_it() {
    let app = spawn_app().await;
    let (partner, _) = admin(&app, "acme").await;
    let (mo_id, _) = app.user(&partner, "Mo", Role::Member).await;
    super::set_password(&app, mo_id).await;
    let mut mo = Browser::signed_in(&app, "mo@acme.example").await;
    let page = mo.get("/dashboard/settings").await;
    assert_eq!(zone_field(&page), "Europe/London");
    assert!(!page.body.contains("<datalist"), "no suggestions for a field that is read only");
    let refused = mo.post("/dashboard/settings/time-zone", &[("csrf", &page.csrf()), ("time_zone", "UTC")]).await;
    assert_eq!(refused.status, 403);
    assert_eq!(zone_field(&mo.get("/dashboard/settings").await), "Europe/London");
}

#[tokio::test]
async fn the_wallet_says_its_dates_in_words_and_the_statement_names_the_brand() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let listing_id = listing(&app, &partner, json!({"channel": "clearance", "price_gbp": 100})).await;
    let order_id = order(&app, json!({"listing_id": listing_id})).await["id"].as_i64().unwrap();
    complete(&app, order_id, json!({"completed_at": "2026-06-01T10:00:00Z"})).await;
    let issued = crate::wallet::run(&app, None).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/wallet").await;
    // "Next statement: 1 Dec 2026", never `2026-12-01`.
    let next = page.body.split("Next statement: ").nth(1).expect("next statement").split('.').next().unwrap();
    assert!(regex::Regex::new(r"^\d{1,2} [A-Z][a-z]{2} \d{4}$").unwrap().is_match(next), "{next}");
    // Available two days after delivery, at 11:00 in London's summer.
    assert!(page.body.contains(">3 Jun 2026, 11:00 BST</td>"), "{}", page.body);

    // In Paris the same instant is 12:00 CEST.
    let csrf = ada.get("/dashboard/settings").await.csrf();
    ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", "Europe/Paris")]).await;
    assert!(ada.get("/dashboard/wallet").await.body.contains(">3 Jun 2026, 12:00 CEST</td>"));

    // The files: the brand's name in the name a browser saves them under; the CSV's rows
    // are the spec's (a header, the lines, the totals), ISO 8601 in its date columns.
    let csv = ada.get(&format!("/dashboard/wallet/statements/{}.csv", issued[0])).await;
    let disposition = csv.headers["content-disposition"].to_str().unwrap().to_owned();
    assert!(disposition.contains("filename*=UTF-8''acme%20Ltd%20statement%201.csv"), "{disposition}");
    assert!(disposition.contains("filename=\"remittance-acme-1.csv\""), "{disposition}");
    assert!(csv.body.starts_with("id,type,order_id"), "{}", csv.body);
    assert!(csv.body.contains("2026-06-01T10:00:00"), "ISO 8601 data: {}", csv.body);

    let pdf = reqwest::Client::new()
        .get(format!("{}/dashboard/wallet/statements/{}.pdf", app.base, issued[0]))
        .header("cookie", ada.cookie_header())
        .send()
        .await
        .unwrap();
    assert_eq!(pdf.status(), 200);
    let bytes = pdf.bytes().await.unwrap();
    if let Some(text) = crate::wallet::statements::pdf_text(&bytes) {
        assert!(text.contains("Brand: acme Ltd"), "the name, not the slug: {text}");
        assert!(
            text.lines().any(|l| l.contains("Issued: ") && (l.contains(" CET") || l.contains(" CEST"))),
            "in the brand's zone: {text}"
        );
        assert!(text.contains(" 2026-06-01 "), "the lines' dates stay ISO 8601: {text}");
    }
}

/// The `<a href="#…">sentence</a>` links of the page's error summary.
fn summary_links(page: &super::Page) -> Vec<(String, String)> {
    let Some(start) = page.body.find("<div class=\"error-summary\" role=\"alert\" aria-labelledby=\"error-summary-title\" tabindex=\"-1\" autofocus>")
    else {
        return Vec::new();
    };
    let box_html = &page.body[start..start + page.body[start..].find("</div>").unwrap()];
    assert!(box_html.contains("<h2 id=\"error-summary-title\">There is a problem</h2>"), "{box_html}");
    let link = regex::Regex::new(r##"<li><a href="#([^"]+)">([^<]+)</a></li>"##).unwrap();
    link.captures_iter(box_html).map(|c| (c[1].to_owned(), c[2].to_owned())).collect()
}

#[tokio::test]
async fn a_refused_listing_opens_on_a_summary_linking_each_sentence_to_its_field() {
    let app = market_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let form = ada.get("/dashboard/listings/new").await;
    assert!(summary_links(&form).is_empty(), "no summary on a fresh form");
    let csrf = form.csrf();
    let fields = [
        ("csrf", csrf.as_str()),
        ("title", ""),
        ("price_gbp", "19.999"),
        ("channel", "clearance"),
        ("quantity", "2"),
        ("category", "3-Seater Sofas"),
        ("condition", "excellent"),
        ("delivery_contribution_gbp", "30"),
        ("status", "active"),
    ];
    let refused = ada.post_multipart("/dashboard/listings/new", &fields, None).await;
    assert_eq!(refused.status, 422);
    let links = summary_links(&refused);
    let hrefs: Vec<&str> = links.iter().map(|(href, _)| href.as_str()).collect();
    for field in ["title", "price_gbp", "fault-1"] {
        assert!(hrefs.contains(&field), "{field} in {links:?}");
    }
    for (href, sentence) in &links {
        // Each link leads to an element of the page, whose field says the same sentence.
        assert!(refused.body.contains(&format!("id=\"{href}\"")), "#{href} is on the page");
        assert!(refused.body.matches(sentence.as_str()).count() >= 2, "{sentence} beside its field too");
        assert!(!sentence.contains("_invalid") && !sentence.contains("_required"), "a sentence, not a code");
    }
    assert!(
        refused.body.contains("aria-describedby=\"price_gbp-hint price_gbp-error\" aria-invalid=\"true\""),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("id=\"faults-error\""), "the faults' own sentence");
}

#[tokio::test]
async fn settings_invite_and_key_forms_open_on_their_summary_when_refused() {
    let app = market_app().await;
    let (_, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get("/dashboard/settings").await.csrf();

    let payouts = [("csrf", csrf.as_str()), ("credit_boost_percent", "900"), ("code_validity_days", "0")];
    let page = ada.post("/dashboard/settings/payouts", &payouts).await;
    assert_eq!(page.status, 422);
    let hrefs: Vec<String> = summary_links(&page).into_iter().map(|(h, _)| h).collect();
    assert_eq!(hrefs, ["credit_boost_percent", "code_validity_days"], "{}", page.body);

    let billing = [("csrf", csrf.as_str()), ("invoice_email", "not an email")];
    let page = ada.post("/dashboard/settings/billing", &billing).await;
    assert_eq!(page.status, 422);
    let links = summary_links(&page);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].0, "billing-invoice_email");
    assert!(page.body.contains("id=\"billing-invoice_email-error\" role=\"alert\">"), "{}", page.body);

    let zone = ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", "Nowhere")]).await;
    assert_eq!(summary_links(&zone).into_iter().map(|(h, _)| h).collect::<Vec<_>>(), ["time_zone"]);

    let invite = [("csrf", csrf.as_str()), ("email", "nope"), ("name", ""), ("role", "member")];
    let page = ada.post("/dashboard/team/invite", &invite).await;
    assert_eq!(page.status, 422, "{}", page.body);
    assert!(summary_links(&page).iter().any(|(h, _)| h == "email"), "{}", page.body);

    let key = [("csrf", csrf.as_str()), ("label", "CI"), ("expires_at", "2001-01-01")];
    let page = ada.post("/dashboard/integrations/keys", &key).await;
    assert_eq!(page.status, 422, "{}", page.body);
    let hrefs: Vec<String> = summary_links(&page).into_iter().map(|(h, _)| h).collect();
    assert_eq!(hrefs, ["expires_at"]);
}

#[tokio::test]
async fn a_confirmation_says_what_its_way_back_keeps() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let keys = crate::helpers::json(app.get("/v1/partner/settings/integrations/keys", &partner.key).await).await;
    let id = keys["data"][0]["id"].as_str().map_or_else(|| keys["data"][0]["id"].to_string(), str::to_owned);
    let page = ada.get(&format!("/dashboard/integrations/keys/{id}/revoke")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<a href=\"/dashboard/integrations\">No, keep the key</a>"), "{}", page.body);
    assert!(!page.body.contains(">Cancel</a>"));
}

#[tokio::test]
async fn deliveries_and_listings_show_words_and_keep_wire_names_in_their_addresses() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    listing(&app, &partner, json!({"channel": "clearance", "price_gbp": 100})).await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let page = ada.get("/dashboard/deliveries").await;
    assert!(page.body.contains("<option value=\"dead\">Gave up (dead)</option>"), "{}", page.body);
    assert!(page.body.contains("<option value=\"pending\">Waiting to be sent</option>"));
    let page = ada.get("/dashboard/listings").await;
    assert!(page.body.contains(">Clearance (overstock)</td>"), "{}", page.body);
    assert!(page.body.contains("<option value=\"exchange\">Exchange (trade-in)</option>"), "{}", page.body);
    assert!(!page.body.contains(">clearance</td>") && !page.body.contains(">active</td>"));
    let page = ada.get("/dashboard/audit-log").await;
    assert!(!page.body.contains(">key.created</td>"), "{}", page.body);
    // Targets by name, never `user:1` or `key:1`.
    assert!(page.body.contains("<td data-label=\"Target\">Ada"), "{}", page.body);
    assert!(!page.body.contains(">user:") && !page.body.contains(">key:"), "{}", page.body);
}
