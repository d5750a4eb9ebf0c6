//! The Orders page (issue 47): every sale of the brand's listings, from storefront buyers and
//! the operator API, with window, collection and the buyer's postcode district only; its
//! filters and CSV; the home counts orders from buyers to deliver; other brands' unseen.

use serde_json::json;

use super::{admin, Browser};
use crate::marketplace::{complete, listing, market_app, order};
use crate::storefront::checkout::{buy, buyer, visit};

#[tokio::test]
async fn the_orders_page_lists_every_sale_with_only_the_buyers_district() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let stool = listing(
        &app,
        &partner,
        json!({"title": "Oak stool", "channel": "clearance", "quantity": 5, "price_gbp": 1250}),
    )
    .await;
    let visited = visit(&app, stool).await;
    assert_eq!(buy(&app, stool, &visited, &buyer("2")).await.0, 303);
    let chair = listing(&app, &partner, json!({"title": "Trade-in chair", "channel": "exchange"})).await;
    let ops = order(&app, json!({"listing_id": chair})).await["id"].as_i64().unwrap();
    complete(&app, ops, json!({})).await;
    let other = app.partner("other").await;
    let theirs = listing(&app, &other, json!({"title": "Not ours"})).await;
    order(&app, json!({"listing_id": theirs})).await;

    let mut browser = Browser::signed_in(&app, &email).await;
    let home = browser.get("/dashboard").await;
    assert!(home.body.contains("1 order from buyers to deliver"), "{}", home.body);
    let page = browser.get("/dashboard/orders").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("2 orders."), "{}", page.body);
    for text in ["Oak stool", "£2,500.00", "Buyer in SW1A", "Placed", "Trade-in chair", "Delivered", "Marketplace"] {
        assert!(page.body.contains(text), "{text}");
    }
    assert!(
        !page.body.contains("SW1A 1AA")
            && !page.body.contains("Ada Lovelace")
            && !page.body.contains("ada@example.com")
    );
    assert!(!page.body.contains("Not ours"), "another brand's order");
    assert!(page.body.contains("aria-current=\"page\">Orders</a>"));
    let buyers = browser.get("/dashboard/orders?from=buyers").await;
    assert!(buyers.body.contains("1 order.") && !buyers.body.contains("Trade-in chair"));
    let delivered = browser.get("/dashboard/orders?status=completed&channel=exchange").await;
    assert!(delivered.body.contains("1 order.") && delivered.body.contains("Trade-in chair"));
    let csv = browser.get("/dashboard/orders.csv?from=buyers").await;
    assert_eq!(csv.status, 200);
    assert!(csv.headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(lines.len(), 2, "{}", csv.body);
    assert!(lines[0].starts_with("order,placed,listing_id,item,quantity,unit_price_gbp,total_gbp"));
    assert!(
        lines[1].contains(",Oak stool,2,1250.00,2500.00,clearance,placed,") && lines[1].ends_with(",SW1A"),
        "{}",
        lines[1]
    );
}

#[tokio::test]
async fn a_title_a_spreadsheet_would_run_is_written_as_text_in_the_csv() {
    let app = market_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let id = listing(&app, &partner, json!({"title": "=HYPERLINK(\"http://x\")", "channel": "clearance"})).await;
    order(&app, json!({"listing_id": id})).await;
    let mut browser = Browser::signed_in(&app, &email).await;
    let csv = browser.get("/dashboard/orders.csv").await;
    assert!(csv.body.contains("\"'=HYPERLINK(\"\"http://x\"\")\""), "{}", csv.body);
}
