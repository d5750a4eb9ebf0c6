//! The catalogue (decisions 14.1): every brand's listings on sale, its filters, sorts and
//! pages, its kept facet counts through every change of a listing, and refusals in words.

use serde_json::json;

use super::page;
use crate::helpers::{spawn_app, TestApp};
use crate::listings::create_id;
use crate::marketplace::{listing, market_app, order};

/// Listings of two brands: (id, title) in creation order.
async fn stock(app: &TestApp) -> Vec<i64> {
    let acme = app.partner("acme").await;
    let nord = app.partner("nord").await;
    let rows = [
        (
            &acme,
            json!({"title": "Oak armchair", "category": "Armchairs", "condition": "excellent", "channel": "exchange", "price_gbp": 300}),
        ),
        (
            &acme,
            json!({"title": "Velvet corner sofa", "category": "Corner Sofas", "condition": "like-new", "channel": "clearance", "quantity": 4, "price_gbp": 1200, "sale_price_gbp": 950}),
        ),
        (
            &nord,
            json!({"title": "Linen armchair", "category": "Armchairs", "condition": "fair", "channel": "clearance", "price_gbp": 150}),
        ),
        (
            &nord,
            json!({"title": "Oak footstool", "category": "Footstools", "condition": "excellent", "channel": "exchange", "price_gbp": 80}),
        ),
        (&nord, json!({"title": "Draft sofa", "status": "draft"})),
    ];
    let mut ids = Vec::new();
    for (partner, body) in rows {
        ids.push(create_id(app, &partner.key, body).await);
    }
    ids
}

#[tokio::test]
async fn the_catalogue_shows_every_brand_newest_first_and_each_filter_narrows_it() {
    let app = spawn_app().await;
    let ids = stock(&app).await;
    let (oak_chair, corner, linen, stool) = (ids[0], ids[1], ids[2], ids[3]);
    let all = page(&app, "/marketplace").await;
    assert_eq!(all.status, 200);
    assert_eq!(all.listing_ids(), [stool, linen, corner, oak_chair], "newest first, no draft");
    assert!(all.body.contains("4 pieces"));
    assert!(all.body.contains("Pre-loved") && all.body.contains("Clearance"), "channels in words");
    let cases: [(&str, Vec<i64>); 12] = [
        ("q=oak", vec![stool, oak_chair]),
        ("q=OAK+arm", vec![oak_chair]),
        ("q=nothing-like-it", vec![]),
        ("category=Armchairs", vec![linen, oak_chair]),
        ("category=armchairs", vec![linen, oak_chair]),
        ("condition=excellent", vec![stool, oak_chair]),
        ("channel=clearance", vec![linen, corner]),
        ("brand=nord", vec![stool, linen]),
        ("min_price=150&max_price=300", vec![linen, oak_chair]),
        ("max_price=950", vec![stool, linen, corner, oak_chair]),
        ("sort=price_asc", vec![stool, linen, oak_chair, corner]),
        ("sort=price_desc&channel=exchange", vec![oak_chair, stool]),
    ];
    for (query, expected) in cases {
        let found = page(&app, &format!("/marketplace?{query}")).await;
        assert_eq!(found.status, 200, "{query}");
        assert_eq!(found.listing_ids(), expected, "{query}");
    }
    // The sale price is what a buyer pays: £950 sorts and filters, £1,200 is shown struck.
    let corner_page = page(&app, "/marketplace?category=Corner+Sofas").await;
    assert!(corner_page.body.contains("£950.00") && corner_page.body.contains("<s>"));
    // An empty result says what to try.
    let none = page(&app, "/marketplace?q=nothing-like-it").await;
    assert!(none.body.contains("Nothing matches") && none.body.contains("See all furniture"));
}

#[tokio::test]
async fn facet_counts_are_kept_through_sales_trashing_drafts_and_edits() {
    let app = market_app().await;
    let acme = app.partner("acme").await;
    let chair = listing(&app, &acme, json!({"category": "Armchairs", "channel": "clearance", "quantity": 2})).await;
    let stool = listing(&app, &acme, json!({"category": "Footstools", "channel": "exchange"})).await;
    let draft = listing(&app, &acme, json!({"category": "Armchairs", "channel": "clearance", "status": "draft"})).await;
    let counts = |body: &str| {
        let option = |label: &str| {
            let found = regex::Regex::new(&format!(r"{}\((\d+)\)", regex::escape(&format!("{label} ")))).unwrap();
            found.captures(body).map(|c| c[1].parse::<i64>().unwrap())
        };
        (option("Armchairs"), option("Footstools"), option("Pre-loved"), option("Clearance"))
    };
    let body = page(&app, "/marketplace").await.body;
    assert_eq!(counts(&body), (Some(1), Some(1), Some(1), Some(1)));
    assert!(body.contains("2 pieces"));
    // Counted under the other filters: clearance armchairs only.
    let body = page(&app, "/marketplace?channel=clearance").await.body;
    assert_eq!(counts(&body).0, Some(1));
    assert_eq!(counts(&body).1, None, "an empty category is not offered");
    // A draft going live, a sale that sells out, a trashing and a change of category.
    let live = app.patch(&format!("/v1/listings/{draft}"), &acme.key, &json!({"status": "active"})).await;
    assert_eq!(live.status(), 200);
    order(&app, json!({"listing_id": stool})).await;
    order(&app, json!({"listing_id": chair, "quantity": 1})).await;
    let body = page(&app, "/marketplace").await.body;
    assert_eq!(counts(&body), (Some(2), None, Some(0), Some(2)), "one chair left of two still counts");
    let moved = app.patch(&format!("/v1/listings/{draft}"), &acme.key, &json!({"category": "Footstools"})).await;
    assert_eq!(moved.status(), 200);
    assert_eq!(app.delete(&format!("/v1/listings/{chair}"), &acme.key).await.status(), 200);
    let body = page(&app, "/marketplace").await.body;
    assert_eq!(counts(&body), (None, Some(1), Some(0), Some(1)));
    assert!(body.contains("1 piece<"));
    // Folding the kept rows changes no count.
    app.store.fold_market_counts(1000).await.unwrap();
    assert_eq!(counts(&page(&app, "/marketplace").await.body), (None, Some(1), Some(0), Some(1)));
}

#[tokio::test]
async fn a_search_counts_honestly_and_offers_the_filters_without_counts() {
    let app = spawn_app().await;
    stock(&app).await;
    let found = page(&app, "/marketplace?q=armchair").await;
    assert!(found.body.contains("2 pieces"));
    assert!(found.body.contains(">Armchairs</option>"), "choices without counts under a search");
    let priced = page(&app, "/marketplace?min_price=100").await;
    assert!(priced.body.contains("3 pieces"));
}

#[tokio::test]
async fn pages_of_the_catalogue_hold_24_and_link_to_each_other() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut ids = Vec::new();
    for n in 0..26 {
        ids.push(create_id(&app, &partner.key, json!({"title": format!("Sofa {n}")})).await);
    }
    ids.reverse();
    let first = page(&app, "/marketplace").await;
    assert_eq!(first.listing_ids(), ids[..24]);
    assert!(first.body.contains("Page 1 of 2") && first.body.contains("href=\"/marketplace?page=2\" rel=\"next\""));
    let second = page(&app, "/marketplace?page=2").await;
    assert_eq!(second.listing_ids(), ids[24..]);
    assert!(second.body.contains("rel=\"prev\""));
    assert!(second.body.contains("<meta name=\"robots\" content=\"noindex\">"), "paged views are not indexed");
    assert_eq!(page(&app, "/marketplace?page=3").await.listing_ids(), Vec::<i64>::new());
    // A search's pages are its matches in the same order, read from one search.
    assert_eq!(page(&app, "/marketplace?q=sofa").await.listing_ids(), ids[..24]);
    assert_eq!(page(&app, "/marketplace?q=sofa&page=2").await.listing_ids(), ids[24..]);
    let mut by_price = ids.clone();
    by_price.sort_unstable();
    assert_eq!(page(&app, "/marketplace?q=sofa&sort=price_asc").await.listing_ids(), by_price[..24]);
}

#[tokio::test]
async fn a_query_no_buyer_could_mean_is_answered_400_in_words_showing_everything() {
    let app = spawn_app().await;
    stock(&app).await;
    let cases = [
        ("category=Beds", "That category does not exist"),
        ("condition=new", "That condition does not exist"),
        ("channel=auction", "Choose pre-loved or clearance"),
        ("min_price=ten", "Give prices in pounds"),
        ("min_price=500&max_price=100", "The lowest price must not be above the highest"),
        ("sort=best", "Sort by newest or by price"),
        ("page=0", "That page does not exist"),
        ("page=5000", "That page does not exist"),
        ("brand=nobody", "That brand is not on the marketplace"),
    ];
    for (query, sentence) in cases {
        let refused = page(&app, &format!("/marketplace?{query}")).await;
        assert_eq!(refused.status, 400, "{query}");
        assert!(refused.body.contains(sentence), "{query}: {}", refused.body);
        assert!(!refused.body.contains("_invalid"), "{query}: no codes on a page");
    }
    let everything = page(&app, "/marketplace?category=Beds").await;
    assert_eq!(everything.listing_ids().len(), 4, "the catalogue is shown under the sentence");
    let long = format!("/marketplace?q={}", "w+".repeat(11));
    assert_eq!(page(&app, &long).await.status, 400);
}
