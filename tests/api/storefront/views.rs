//! Views (decisions 14.2): a person's view of a listing on sale counts once a day, robots'
//! never; no address is stored; the operator API's count still works.

use std::sync::Arc;

use serde_json::json;

use super::{detail, get_as, BROWSER};
use crate::helpers::{on_raw, spawn_app};
use crate::listings::create_id;
use crate::marketplace::{listing, market_app, ops_post, order};

const OTHER_BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0";

#[tokio::test]
async fn a_view_counts_once_per_visitor_a_day_and_never_for_robots() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let path = format!("/marketplace/listings/{id}");
    for _ in 0..3 {
        assert_eq!(get_as(&app, &path, BROWSER).await.status, 200);
    }
    assert_eq!(detail(&app, &partner, id).await["view_count"], 1, "one visitor, one view");
    assert_eq!(get_as(&app, &path, OTHER_BROWSER).await.status, 200);
    assert_eq!(detail(&app, &partner, id).await["view_count"], 2, "another browser is another visitor");
    for robot in [
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        "Mozilla/5.0 (compatible; bingbot/2.0)",
    ] {
        assert_eq!(get_as(&app, &path, robot).await.status, 200, "robots see the page");
    }
    assert_eq!(detail(&app, &partner, id).await["view_count"], 2, "robots are not counted");
    // A 304 is a view too, and still once.
    let etag = get_as(&app, &path, BROWSER).await.header("etag").to_owned();
    let again = app.client.get(app.url(&path)).header("user-agent", "A third browser").header("if-none-match", etag);
    assert_eq!(again.send().await.unwrap().status(), 304);
    assert_eq!(detail(&app, &partner, id).await["view_count"], 3);
    // Other listings are viewed apart.
    let other = create_id(&app, &partner.key, json!({})).await;
    get_as(&app, &format!("/marketplace/listings/{other}"), BROWSER).await;
    assert_eq!(detail(&app, &partner, other).await["view_count"], 1);
}

#[tokio::test]
async fn a_burst_of_one_visitors_views_counts_once() {
    let app = Arc::new(spawn_app().await);
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let app = Arc::clone(&app);
            tokio::spawn(async move { get_as(&app, &format!("/marketplace/listings/{id}"), BROWSER).await.status })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), 200);
    }
    assert_eq!(detail(&app, &partner, id).await["view_count"], 1);
}

#[tokio::test]
async fn visitors_are_kept_as_salted_hashes_never_as_addresses() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    get_as(&app, &format!("/marketplace/listings/{id}"), BROWSER).await;
    let raw = app.db.raw().await;
    let (visitors, salts): (Vec<(String, String)>, Vec<String>) = on_raw!(&raw, |pool| {
        let visitors = sqlx::query_as("SELECT day, visitor FROM listing_views").fetch_all(pool).await.unwrap();
        let salts = sqlx::query_scalar("SELECT day FROM view_salts").fetch_all(pool).await.unwrap();
        (visitors, salts)
    });
    raw.close().await;
    assert_eq!(visitors.len(), 1);
    let (day, visitor) = &visitors[0];
    assert_eq!(salts, std::slice::from_ref(day), "one salt, today's");
    assert_eq!(visitor.len(), 32);
    assert!(visitor.bytes().all(|b| b.is_ascii_hexdigit()), "a hash: {visitor}");
    assert!(!visitor.contains("127.0.0.1") && !visitor.contains("Mozilla"));
}

#[tokio::test]
async fn views_of_a_sold_listing_are_not_counted_and_the_operator_count_still_works() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 1})).await;
    let counted = ops_post(&app, &format!("/listings/{id}/views"), &json!({})).await;
    assert_eq!(counted.status(), 200);
    let counted = ops_post(&app, &format!("/listings/{id}/views"), &json!({})).await;
    assert_eq!(crate::helpers::json(counted).await["view_count"], 2, "the operator API counts every call");
    order(&app, json!({"listing_id": id})).await;
    assert_eq!(get_as(&app, &format!("/marketplace/listings/{id}"), BROWSER).await.status, 200);
    assert_eq!(detail(&app, &partner, id).await["view_count"], 2, "a sold listing's page view is not counted");
}
