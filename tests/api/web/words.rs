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
    let saved = ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", " asia/tokyo ")]).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
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
            page.body.contains("id=\"time-zone-error\" role=\"alert\">Give the time zone as its name in the tz database"),
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
    assert!(page.body.contains("<td>3 Jun 2026, 11:00 BST</td>"), "{}", page.body);

    // In Paris the same instant is 12:00 CEST.
    let csrf = ada.get("/dashboard/settings").await.csrf();
    ada.post("/dashboard/settings/time-zone", &[("csrf", &csrf), ("time_zone", "Europe/Paris")]).await;
    assert!(ada.get("/dashboard/wallet").await.body.contains("<td>3 Jun 2026, 12:00 CEST</td>"));

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
        assert!(text.lines().any(|l| l.contains("Issued: ") && (l.contains(" CET") || l.contains(" CEST"))), "in the brand's zone: {text}");
        assert!(text.contains(" 2026-06-01 "), "the lines' dates stay ISO 8601: {text}");
    }
}
