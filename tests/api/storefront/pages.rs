//! A listing's page in each state of decisions 14.1, brands' pages, the sitemap, caching,
//! headers and the per-address limit.

use std::sync::Arc;

use serde_json::json;

use super::{page, url_path, Page};
use crate::helpers::{spawn_app, spawn_app_with};
use crate::listings::create_id;
use crate::marketplace::{listing, market_app, order};

#[tokio::test]
async fn an_active_listing_page_is_its_url_with_price_labels_and_one_product() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(
        &app,
        &partner.key,
        json!({"title": "Walnut <b>corner</b> sofa & stool", "price_gbp": 1250, "sale_price_gbp": 999.5,
               "channel": "clearance", "quantity": 3, "exposed_to": ["Dogs"], "sku": "WAL-1",
               "description": "<p>Solid walnut.</p><script>alert('x')</script><a href=\"javascript:alert(1)\">x</a>",
               "measurements": [{"type": "Corner Sofa", "w_cm": 250, "d_cm": 180, "h_cm": 85}]}),
    )
    .await;
    let path = url_path(&app, &partner, id).await;
    let page = page(&app, &path).await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").starts_with("text/html"));
    // Every text is escaped; the description is sanitised.
    assert!(page.body.contains("Walnut &#60;b&#62;corner&#60;/b&#62; sofa &#38; stool"), "{}", page.body);
    assert!(!page.body.contains("<b>corner"));
    assert!(page.body.contains("<p>Solid walnut.</p>"));
    assert!(!page.body.contains("alert('x')") && !page.body.contains("javascript:"));
    // Price as a buyer reads it, the sale beside the regular price.
    assert!(page.body.contains("£999.50") && page.body.contains("£1,250.00"));
    // Labels: exposed to dogs, so not pet free; smoke free.
    assert!(page.body.contains("Smoke free") && !page.body.contains("Pet free"));
    assert!(page.body.contains("3 available") && page.body.contains("250 cm"));
    assert!(page.body.contains("href=\"/marketplace/brands/acme\""), "the brand links to its page");
    let canonical = format!("<link rel=\"canonical\" href=\"{}{path}\">", app.base);
    assert!(page.body.contains(&canonical));
    assert!(page.body.contains("<meta property=\"og:title\"") && page.body.contains("twitter:card"));
    let product = page.json_ld();
    assert_eq!(product["@context"], "https://schema.org");
    assert_eq!(product["@type"], "Product");
    assert_eq!(product["name"], "Walnut <b>corner</b> sofa & stool");
    assert_eq!(product["sku"], "WAL-1");
    assert_eq!(product["offers"]["@type"], "Offer");
    assert_eq!(product["offers"]["price"], "999.50");
    assert_eq!(product["offers"]["priceCurrency"], "GBP");
    assert_eq!(product["offers"]["availability"], "https://schema.org/InStock");
    assert_eq!(product["offers"]["url"], format!("{}{path}", app.base));
    // The page is public: no noindex, and cacheable.
    assert_eq!(page.header("x-robots-tag"), "");
    assert!(!page.body.contains("noindex"));
    assert_eq!(page.header("cache-control"), "public, max-age=60");
}

#[tokio::test]
async fn a_listing_without_exposures_is_pet_free_and_smoke_free() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let none = create_id(&app, &partner.key, json!({"exposed_to": ["None"]})).await;
    let unsaid = create_id(&app, &partner.key, json!({})).await;
    let both = create_id(&app, &partner.key, json!({"exposed_to": ["Cats", "Smoke"]})).await;
    for id in [none, unsaid] {
        let page = page(&app, &format!("/marketplace/listings/{id}")).await;
        assert!(page.body.contains("Pet free") && page.body.contains("Smoke free"));
    }
    let page = page(&app, &format!("/marketplace/listings/{both}")).await;
    assert!(!page.body.contains("Pet free") && !page.body.contains("Smoke free"));
}

#[tokio::test]
async fn a_sold_out_listing_is_shown_sold_without_a_way_to_buy() {
    let app = market_app().await;
    let partner = app.partner("acme").await;
    let id = listing(&app, &partner, json!({"channel": "clearance", "quantity": 1, "title": "Last stool"})).await;
    order(&app, json!({"listing_id": id})).await;
    let page = page(&app, &format!("/marketplace/listings/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Sold") && page.body.contains("Last stool"));
    assert!(!page.body.contains("How to buy") && !page.body.contains("available"));
    assert_eq!(page.json_ld()["offers"]["availability"], "https://schema.org/SoldOut");
}

#[tokio::test]
async fn a_trashed_listing_is_gone_and_a_draft_or_unknown_one_is_not_found() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let trashed = create_id(&app, &partner.key, json!({})).await;
    assert_eq!(app.delete(&format!("/v1/listings/{trashed}"), &partner.key).await.status(), 200);
    let draft = create_id(&app, &partner.key, json!({"status": "draft", "title": "Secret draft"})).await;
    let gone = page(&app, &format!("/marketplace/listings/{trashed}")).await;
    assert_eq!(gone.status, 410);
    assert!(gone.body.contains("removed") && gone.header("x-robots-tag").contains("noindex"));
    let hidden = page(&app, &format!("/marketplace/listings/{draft}")).await;
    assert_eq!(hidden.status, 404);
    assert!(!hidden.body.contains("Secret draft"));
    for path in [
        "/marketplace/listings/999999",
        "/marketplace/listings/abc",
        "/marketplace/listings/-1",
        "/marketplace/nothing",
    ] {
        let missing = page(&app, path).await;
        assert_eq!(missing.status, 404, "{path}");
        assert!(missing.header("content-type").starts_with("text/html"), "{path}: a page, not API JSON");
        assert!(missing.header("x-robots-tag").contains("noindex"));
    }
}

#[tokio::test]
async fn a_brand_page_shows_its_public_profile_and_only_what_is_for_sale() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let profile = json!({"display_name": "Acme <Sofas>", "tagline": "Made in Leeds", "support_email": "help@acme.example",
                         "support_phone": "+44 20 7946 0000", "accent_color": "#123456",
                         "logo_url": "https://cdn.acme.example/logo.png",
                         "description": "Line one\nLine two"});
    assert_eq!(app.patch("/v1/partner/settings/brand", &partner.key, &profile).await.status(), 200);
    let active = create_id(&app, &partner.key, json!({"title": "Shown sofa"})).await;
    create_id(&app, &partner.key, json!({"title": "Draft sofa", "status": "draft"})).await;
    let other = app.partner("other").await;
    create_id(&app, &other.key, json!({"title": "Another brand's sofa"})).await;
    let page = page(&app, "/marketplace/brands/acme").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Acme &#60;Sofas&#62;") && page.body.contains("Made in Leeds"));
    assert!(page.body.contains("mailto:help@acme.example") && page.body.contains("tel:+442079460000"));
    assert_eq!(page.listing_ids(), [active]);
    // The accent is applied by the page's own style, which the policy allows by its hash.
    assert!(page.body.contains("<style>.brand-head.accented{background:#123456;color:#FFFFFF}</style>"));
    let csp = page.header("content-security-policy");
    assert!(csp.contains("style-src 'self' 'sha256-"), "{csp}");
    assert!(!csp.contains("unsafe-inline"));
    // The logo comes from the brand's own host, which the policy names for images alone.
    assert!(page
        .body
        .contains("<img class=\"logo\" src=\"https://cdn.acme.example/logo.png\" alt=\"Acme &#60;Sofas&#62; logo\""));
    assert!(csp.contains("img-src 'self' data: https://cdn.acme.example;"), "{csp}");
    assert!(page.body.contains("<meta property=\"og:image\" content=\"https://cdn.acme.example/logo.png\">"));
    // A colour no text reads on is not used.
    let grey = json!({"accent_color": "#777777"});
    assert_eq!(app.patch("/v1/partner/settings/brand", &partner.key, &grey).await.status(), 200);
    let plain = super::page(&app, "/marketplace/brands/acme").await;
    assert!(!plain.body.contains("<style>") && !plain.header("content-security-policy").contains("sha256"));
    assert_eq!(super::page(&app, "/marketplace/brands/nobody").await.status, 404);
}

#[tokio::test]
async fn pages_answer_304_to_their_etag_until_the_listing_changes() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"price_gbp": 100})).await;
    for path in
        [format!("/marketplace/listings/{id}"), "/marketplace".to_owned(), "/marketplace/brands/acme".to_owned()]
    {
        let first = page(&app, &path).await;
        let etag = first.header("etag").to_owned();
        assert!(etag.starts_with('"') && etag.len() > 10, "{path}: {etag}");
        let again = app.client.get(app.url(&path)).header("if-none-match", &etag).send().await.unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(again.headers()["etag"], etag.as_str());
        assert!(again.bytes().await.unwrap().is_empty());
        let weak =
            app.client.get(app.url(&path)).header("if-none-match", format!("\"x\", W/{etag}")).send().await.unwrap();
        assert_eq!(weak.status(), 304, "{path}: a weak match in a list");
    }
    let listing_path = format!("/marketplace/listings/{id}");
    let etag = page(&app, &listing_path).await.header("etag").to_owned();
    let patch = app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"price_gbp": 90})).await;
    assert_eq!(patch.status(), 200);
    let changed = app.client.get(app.url(&listing_path)).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(changed.status(), 200, "the page changed with the listing");
    assert_ne!(changed.headers()["etag"], etag.as_str());
    assert!(changed.text().await.unwrap().contains("£90.00"));
}

#[tokio::test]
async fn the_sitemap_lists_every_listing_on_sale_and_robots_names_it() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let a = create_id(&app, &partner.key, json!({})).await;
    let b = create_id(&app, &partner.key, json!({"channel": "exchange"})).await;
    create_id(&app, &partner.key, json!({"status": "draft"})).await;
    let trashed = create_id(&app, &partner.key, json!({})).await;
    assert_eq!(app.delete(&format!("/v1/listings/{trashed}"), &partner.key).await.status(), 200);
    let sitemap = page(&app, "/marketplace/sitemap.xml").await;
    assert_eq!(sitemap.status, 200);
    assert!(sitemap.header("content-type").starts_with("application/xml"));
    assert!(sitemap.body.contains("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"));
    let locs: Vec<String> = regex::Regex::new("<loc>([^<]+)</loc>")
        .unwrap()
        .captures_iter(&sitemap.body)
        .map(|c| c[1].to_owned())
        .collect();
    let expected: Vec<String> = [a, b].iter().map(|id| format!("{}/marketplace/listings/{id}", app.base)).collect();
    assert_eq!(locs, expected);
    let robots = page(&app, "/robots.txt").await;
    assert_eq!(robots.status, 200);
    assert!(robots.body.contains(&format!("Sitemap: {}/marketplace/sitemap.xml", app.base)));
    assert!(robots.body.contains("Disallow: /dashboard"));
    assert_eq!(page(&app, "/marketplace/sitemaps/1.xml").await.status, 200, "the index's first file");
    assert_eq!(page(&app, "/marketplace/sitemaps/2.xml").await.status, 404);
    assert_eq!(page(&app, "/marketplace/sitemaps/x.xml").await.status, 404);
}

#[tokio::test]
async fn the_front_door_leads_to_the_marketplace() {
    let app = spawn_app().await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = client.get(app.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/marketplace");
    let slash = client.get(app.url("/marketplace/")).send().await.unwrap();
    assert_eq!(slash.headers()["location"], "/marketplace");
}

#[tokio::test]
async fn pages_load_only_this_origin_and_run_no_script() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let stylesheet = regex::Regex::new(r#"<link rel="stylesheet" href="(/marketplace/assets/[^"]+)">"#).unwrap();
    for path in
        ["/marketplace".to_owned(), format!("/marketplace/listings/{id}"), "/marketplace/brands/acme".to_owned()]
    {
        let page: Page = page(&app, &path).await;
        let csp = page.header("content-security-policy");
        assert!(csp.starts_with("default-src 'none'") && !csp.contains("script-src"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"));
        assert_eq!(page.header("x-content-type-options"), "nosniff");
        // The only script element is the JSON-LD data block, never code.
        let scripts = page.body.matches("<script").count();
        assert_eq!(scripts, page.body.matches("<script type=\"application/ld+json\">").count(), "{path}");
        let href = stylesheet.captures(&page.body).expect("the stylesheet")[1].to_owned();
        let css = app.client.get(app.url(&href)).send().await.unwrap();
        assert_eq!(css.status(), 200);
        assert!(css.headers()["cache-control"].to_str().unwrap().contains("immutable"));
    }
    // The dashboard is never for search engines.
    let dashboard = page(&app, "/dashboard/login").await;
    assert!(dashboard.header("x-robots-tag").contains("noindex"));
}

/// A burst from one address past `REHOME_MARKETPLACE_RATE_LIMIT` is held to it: the rest
/// get a 429 page with `Retry-After`, and the API's own quota is untouched.
#[tokio::test]
async fn a_burst_past_the_storefront_limit_gets_429_pages_with_retry_after() {
    let app = Arc::new(spawn_app_with(|config| config.marketplace_rate_limit = 10).await);
    let partner = app.partner("acme").await;
    let tasks: Vec<_> = (0..30)
        .map(|_| {
            let app = Arc::clone(&app);
            tokio::spawn(async move { page(&app, "/marketplace").await })
        })
        .collect();
    let mut ok = 0;
    let mut limited = 0;
    for task in tasks {
        let page = task.await.unwrap();
        match page.status {
            200 => ok += 1,
            429 => {
                limited += 1;
                assert!(page.header("retry-after").parse::<u64>().is_ok_and(|s| (1..=60).contains(&s)));
                assert!(page.header("content-type").starts_with("text/html"));
                assert!(page.body.contains("Too many requests") && page.header("cache-control") == "no-store");
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((ok, limited), (10, 20));
    let api = app.get("/v1/listings", &partner.key).await;
    assert_eq!(api.status(), 200, "the API's quota is its own");
}
