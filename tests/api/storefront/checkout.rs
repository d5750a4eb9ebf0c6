//! Buying from a listing's page (decisions 14.3, 14.5): the form and its double-submit
//! token, the same stock rule as the operator API under bursts, refusals as sentences with
//! nothing taken, the order's private page, and the confirmation mail.

use std::sync::Arc;

use serde_json::json;

use super::{detail, page};
use crate::helpers::{spawn_app, spawn_app_with_mail, SmtpServer, TestApp};
use crate::listings::create_id;

/// What a buyer's browser holds after opening a listing's page: the form's token and the
/// cookie the page set.
#[derive(Clone)]
pub struct Visit {
    pub csrf: String,
    pub cookie: String,
}

pub async fn visit(app: &TestApp, id: i64) -> Visit {
    visit_page(app, &format!("/marketplace/listings/{id}")).await.0
}

/// Opens a page with a form (a listing's, a payout link's): the form's token and the cookie
/// the page set, the page's headers and text.
pub async fn visit_page(app: &TestApp, path: &str) -> (Visit, reqwest::header::HeaderMap, String) {
    let response = app.client.get(app.url(path)).send().await.unwrap();
    let headers = response.headers().clone();
    let cookie = headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("rehome_checkout="))
        .expect("the anti-forgery cookie")
        .to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/marketplace"));
    let pair = cookie.split(';').next().unwrap().to_owned();
    let body = response.text().await.unwrap();
    let field = regex::Regex::new(r#"name="csrf" value="([^"]+)""#).unwrap();
    let csrf = field.captures(&body).expect("the form's csrf field")[1].to_owned();
    (Visit { csrf, cookie: pair }, headers, body)
}

/// The form a buyer fills in.
pub fn buyer(quantity: &str) -> Vec<(&'static str, String)> {
    vec![
        ("name", "Ada Lovelace".to_owned()),
        ("email", "ada@example.com".to_owned()),
        ("phone", String::new()),
        ("postcode", "sw1a 1aa".to_owned()),
        ("quantity", quantity.to_owned()),
    ]
}

/// Posts the checkout form of listing `id`; answers (status, Location, body).
pub async fn buy(app: &TestApp, id: i64, visit: &Visit, form: &[(&str, String)]) -> (u16, String, String) {
    let mut fields: Vec<(&str, String)> = form.to_vec();
    fields.push(("csrf", visit.csrf.clone()));
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = client
        .post(app.url(&format!("/marketplace/listings/{id}/checkout")))
        .header("cookie", &visit.cookie)
        .form(&fields)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let location = response.headers().get("location").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, location, response.text().await.unwrap())
}

async fn quantity(app: &TestApp, partner: &crate::helpers::Partner, id: i64) -> i64 {
    detail(app, partner, id).await["quantity"].as_i64().unwrap()
}

#[tokio::test]
async fn a_buyer_buys_from_the_page_and_follows_a_private_link_to_the_order() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(
        &app,
        &partner.key,
        json!({"title": "Oak sofa", "channel": "clearance", "quantity": 3, "price_gbp": 400}),
    )
    .await;
    let visit = visit(&app, id).await;
    let (status, location, _) = buy(&app, id, &visit, &buyer("2")).await;
    assert_eq!(status, 303);
    let token = location.strip_prefix("/marketplace/orders/").expect("the order's page");
    assert!(token.len() == 32 && token.bytes().all(|b| b.is_ascii_alphanumeric()), "{token}");
    assert_eq!(quantity(&app, &partner, id).await, 1, "two taken");
    let order = page(&app, &location).await;
    assert_eq!(order.status, 200);
    for text in [
        "Oak sofa",
        "£800.00",
        "£400.00 each",
        "Ada Lovelace, <span class=\"nowrap\">SW1A 1AA</span>",
        "Delivery window",
        "Placed",
    ] {
        assert!(order.body.contains(text), "{text}: {}", order.body);
    }
    assert_eq!(order.header("cache-control"), "private, no-store");
    assert!(order.header("x-robots-tag").contains("noindex"));
    assert_eq!(order.header("referrer-policy"), "no-referrer");
    assert_eq!(order.header("etag"), "");
    // The same order the partner's collections show (a clearance sale).
    let collections = crate::helpers::json(app.get("/v1/partner/collections", &partner.key).await).await;
    assert_eq!(collections["data"].as_array().unwrap().len(), 1, "{collections}");
    // Another token, or none, shows nothing.
    assert_eq!(page(&app, "/marketplace/orders/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").await.status, 404);
    assert_eq!(page(&app, "/marketplace/orders/x").await.status, 404);
}

#[tokio::test]
async fn a_forged_missing_or_cross_site_token_buys_nothing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"channel": "clearance", "quantity": 2})).await;
    let real = visit(&app, id).await;
    let forged = [
        Visit { csrf: "0".repeat(32), cookie: format!("rehome_checkout={}", "0".repeat(32)) },
        Visit { csrf: real.csrf.clone(), cookie: "other=1".into() },
        Visit { csrf: "forged".into(), cookie: real.cookie.clone() },
        Visit { csrf: String::new(), cookie: real.cookie.clone() },
    ];
    for visit in &forged {
        let (status, _, body) = buy(&app, id, visit, &buyer("1")).await;
        assert_eq!(status, 403);
        assert!(body.contains("This form has expired") && body.contains("Nothing was bought"));
    }
    let client = reqwest::Client::new();
    let mut fields = buyer("1");
    fields.push(("csrf", real.csrf.clone()));
    let cross_site = client
        .post(app.url(&format!("/marketplace/listings/{id}/checkout")))
        .header("cookie", &real.cookie)
        .header("sec-fetch-site", "cross-site")
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), 403);
    assert_eq!(quantity(&app, &partner, id).await, 2, "nothing taken");
}

#[tokio::test]
async fn refusals_are_sentences_beside_their_fields_with_nothing_taken() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"channel": "clearance", "quantity": 3})).await;
    let visit = visit(&app, id).await;
    let bad = vec![
        ("name", "Ada".to_owned()),
        ("email", "not an email".to_owned()),
        ("phone", "12".to_owned()),
        ("postcode", "NARNIA".to_owned()),
        ("quantity", "1".to_owned()),
    ];
    let (status, _, body) = buy(&app, id, &visit, &bad).await;
    assert_eq!(status, 400);
    assert!(body.contains("Give a UK postcode such as SW1A 1AA"), "{body}");
    assert!(body.contains("Give an email address such as") && body.contains("7 to 15 digits"));
    assert!(body.contains("value=\"NARNIA\"") && body.contains("aria-invalid=\"true\""), "what was typed is kept");
    assert!(!body.contains("postcode_invalid"), "no codes on a page");
    let (status, _, body) = buy(&app, id, &visit, &buyer("5")).await;
    assert_eq!(status, 409);
    assert!(body.contains("Only 3 are left: order 3 or fewer."), "{body}");
    assert_eq!(quantity(&app, &partner, id).await, 3, "nothing taken");
    let exchange = create_id(&app, &partner.key, json!({"channel": "exchange"})).await;
    let visit = super::checkout::visit(&app, exchange).await;
    let (status, _, body) = buy(&app, exchange, &visit, &buyer("2")).await;
    assert_eq!(status, 409);
    assert!(body.contains("Only one is left"), "{body}");
    assert!(!body.contains("How many"), "a single piece offers no quantity");
}

#[tokio::test]
async fn a_piece_sold_meanwhile_is_refused_and_a_trashed_one_is_not_found() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"channel": "exchange"})).await;
    let first = visit(&app, id).await;
    let second = first.clone();
    assert_eq!(buy(&app, id, &first, &buyer("1")).await.0, 303);
    let (status, _, body) = buy(&app, id, &second, &buyer("1")).await;
    assert_eq!(status, 409);
    assert!(body.contains("this piece has just sold") && body.contains("Sold"), "{body}");
    let trashed = create_id(&app, &partner.key, json!({})).await;
    let visit = visit(&app, trashed).await;
    assert_eq!(app.delete(&format!("/v1/listings/{trashed}"), &partner.key).await.status(), 200);
    assert_eq!(buy(&app, trashed, &visit, &buyer("1")).await.0, 404);
}

/// Buyers arriving at once never take more than there is: 12 on the last unit make one
/// order, 200 on 20 units make 20; everyone else reads a sentence.
#[tokio::test]
async fn a_burst_of_buyers_never_buys_more_than_there_is() {
    let app = Arc::new(spawn_app_with_limit().await);
    let partner = app.partner("acme").await;
    for (units, buyers) in [(1, 12), (20, 200)] {
        let id = create_id(&app, &partner.key, json!({"channel": "clearance", "quantity": units})).await;
        let visit = visit(&app, id).await;
        let tasks: Vec<_> = (0..buyers)
            .map(|_| {
                let (app, visit) = (Arc::clone(&app), visit.clone());
                tokio::spawn(async move { buy(&app, id, &visit, &buyer("1")).await })
            })
            .collect();
        let mut placed = 0;
        for task in tasks {
            let (status, _, body) = task.await.unwrap();
            match status {
                303 => placed += 1,
                409 => assert!(body.contains("just sold") || body.contains("left"), "{body}"),
                other => panic!("{other}: {body}"),
            }
        }
        assert_eq!(placed, units, "{buyers} buyers on {units} units");
        assert_eq!(quantity(&app, &partner, id).await, 0);
    }
}

async fn spawn_app_with_limit() -> TestApp {
    crate::helpers::spawn_app_with(|config| config.marketplace_rate_limit = 100_000).await
}

#[tokio::test]
async fn the_buyer_is_mailed_a_confirmation_with_the_orders_link() {
    let Some(smtp) = SmtpServer::start("checkout confirmation").await else { return };
    let app = spawn_app_with_mail(&smtp, |_| {}).await;
    let partner = app.partner("acme").await;
    let id =
        create_id(&app, &partner.key, json!({"title": "Walnut sideboard", "channel": "clearance", "price_gbp": 1250}))
            .await;
    let visit = visit(&app, id).await;
    let (status, location, _) = buy(&app, id, &visit, &buyer("1")).await;
    assert_eq!(status, 303);
    let received = smtp.wait_for(1, 20).await;
    assert_eq!(received.len(), 1, "{received:?}");
    let mail = &received[0];
    assert_eq!(mail.to, "ada@example.com");
    assert!(mail.subject.starts_with("Your order #") && mail.subject.ends_with("Walnut sideboard"), "{}", mail.subject);
    assert!(mail.text.contains("Hello Ada Lovelace") && mail.text.contains("£1,250.00"), "{}", mail.text);
    assert!(mail.text.contains(&format!("{}{location}", app.base)), "the order's link: {}", mail.text);
    // The same words as HTML beside the text, the link a link.
    assert!(mail.html.contains("Hello Ada Lovelace") && mail.html.contains("£1,250.00"), "{}", mail.html);
    assert!(mail.html.contains(&format!(r#"href="{}{location}""#, app.base)), "{}", mail.html);
    assert!(mail.html.contains(r#"<html lang="en-GB">"#) && !mail.html.contains("<script"), "{}", mail.html);
    // The brand books the collection: the buyer is mailed and the order's page says the day.
    let order_id: i64 = mail.subject.trim_start_matches("Your order #").split(':').next().unwrap().parse().unwrap();
    let window = crate::helpers::json(app.get("/v1/partner/collections", &partner.key).await).await;
    let start = window["data"][0]["buyer_window_start"].as_str().unwrap().to_owned();
    let day = chrono::NaiveDate::parse_from_str(&start, "%Y-%m-%d").unwrap() + chrono::Days::new(1);
    let scheduled = app
        .post("/v1/partner/collections", &partner.key, &json!({"order_id": order_id, "scheduled_for": day.to_string()}))
        .await;
    assert_eq!(scheduled.status(), 201);
    let received = smtp.wait_for(2, 20).await;
    assert_eq!(received.len(), 2, "{received:?}");
    let booked = &received[1];
    assert_eq!(booked.to, "ada@example.com");
    assert_eq!(booked.subject, format!("Collection booked: order #{order_id}"));
    let words = day.format("%A %-d %B %Y").to_string();
    assert!(booked.text.contains(&words) && booked.text.contains("Walnut sideboard"), "{}", booked.text);
    assert!(booked.html.contains(&words) && booked.html.contains("Walnut sideboard"), "{}", booked.html);
    let order = page(&app, &location).await;
    assert!(order.body.contains("Collection booked") && order.body.contains(&words), "{}", order.body);
    // Moved to another day: mailed, and the order's page says the new day.
    let collection = crate::helpers::json(scheduled).await;
    let at = format!("/v1/partner/collections/{}", collection["id"].as_str().unwrap());
    let later = day + chrono::Days::new(2);
    let moved = app.patch(&at, &partner.key, &json!({"scheduled_for": later.to_string()})).await;
    assert_eq!(moved.status(), 200);
    let received = smtp.wait_for(3, 20).await;
    let mail = &received[2];
    assert_eq!(mail.subject, format!("Collection moved: order #{order_id}"));
    let later_words = later.format("%A %-d %B %Y").to_string();
    assert!(mail.text.contains(&later_words) && mail.text.contains(&words), "from and to: {}", mail.text);
    let order = page(&app, &location).await;
    assert!(order.body.contains(&later_words), "{}", order.body);
    // Cancelled: mailed that another day will follow.
    assert_eq!(app.delete(&at, &partner.key).await.status(), 200);
    let received = smtp.wait_for(4, 20).await;
    let mail = &received[3];
    assert_eq!(mail.subject, format!("Collection date withdrawn: order #{order_id}"));
    assert!(mail.text.contains(&later_words) && mail.text.contains("another"), "{}", mail.text);
    let order = page(&app, &location).await;
    assert!(!order.body.contains(&later_words), "{}", order.body);
    app.stop().await;
}
