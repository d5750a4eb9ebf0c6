//! Bulk import in one pass on the dashboard (issue 31 item 4): an upload is kept as a draft,
//! reviewed on its page with every row's outcome, and imported once with a button, without
//! the file being chosen again. The API's bulk endpoints are unchanged (tests/api/bulk*.rs).

use chrono::{TimeDelta, Utc};
use rehome::domain::outcome::Outcome;
use rehome::domain::retention::Table;
use rehome::domain::time::Ts;
use rehome::domain::user::Role;
use rehome::jobs::retention::{Retention, Settings};

use super::{admin, set_password, sql_i64, sql_ts, Browser, Page};
use crate::helpers::{json, spawn_app, Partner, TestApp};

const BULK: &str = "/dashboard/bulk-import";

/// Two good rows and one whose price is refused (cell B4).
const FIRST: &[u8] = b"title,price_gbp,condition,category,faults,sku\n\
Grey sofa,120,fair,3-Seater Sofas,None,SOFA-1\n\
Blue sofa,140,fair,3-Seater Sofas,None,SOFA-2\n\
Red sofa,-5,fair,3-Seater Sofas,None,SOFA-3\n";

/// The same file with the bad row fixed.
const FIXED: &[u8] = b"title,price_gbp,condition,category,faults,sku\n\
Grey sofa,120,fair,3-Seater Sofas,None,SOFA-1\n\
Blue sofa,140,fair,3-Seater Sofas,None,SOFA-2\n\
Red sofa,95,fair,3-Seater Sofas,None,SOFA-3\n";

fn html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&#34;").replace('\'', "&#39;")
}

async fn listings_total(app: &TestApp, partner: &Partner) -> i64 {
    json(app.get("/v1/listings?status=any", &partner.key).await).await["meta"]["total"].as_i64().expect("total")
}

/// Uploads `file` in `mode`; answers the page (a 303 to the draft on success).
async fn upload(browser: &mut Browser, file: &[u8], mode: &str) -> Page {
    let csrf = browser.get(BULK).await.csrf();
    browser
        .post_multipart(BULK, &[("csrf", &csrf), ("mode", mode)], Some(("file", "stock.csv", "text/csv", file)))
        .await
}

/// Uploads `file` and answers its draft's address.
async fn draft(browser: &mut Browser, file: &[u8], mode: &str) -> String {
    let page = upload(browser, file, mode).await;
    assert_eq!(page.status, 303, "{}", page.body);
    let to = page.location().expect("the draft").to_owned();
    assert!(to.starts_with("/dashboard/bulk-import/drafts/"), "{to}");
    to
}

async fn import(browser: &mut Browser, draft: &str, rows: usize, skipped: usize) -> Page {
    let csrf = browser.get(BULK).await.csrf();
    let (rows, skipped) = (rows.to_string(), skipped.to_string());
    browser.post(&format!("{draft}/import"), &[("csrf", &csrf), ("rows", &rows), ("skipped", &skipped)]).await
}

/// Another tab of the same signed-in browser.
fn tab(app: &TestApp, browser: &Browser) -> Browser {
    let mut other = Browser::new(app);
    other.cookies = browser.cookies.clone();
    other
}

fn draft_id(draft: &str) -> i64 {
    draft.rsplit('/').next().and_then(|id| id.parse().ok()).expect("draft id")
}

#[tokio::test]
async fn the_example_imports_two_rows_then_flags_both_skus_and_imports_nothing_twice() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let first = draft(&mut ada, FIRST, "create").await;
    // The review: each row's outcome, the bad cell's sentence (never its code).
    let review = ada.get(&first).await;
    assert_eq!(review.status, 200);
    assert_eq!(review.body.matches("would be created").count(), 3, "2 rows and the summary: {}", review.body);
    let price = html(
        &rehome::domain::words::sentence(
            Some(&rehome::domain::listing::LISTING_BODY),
            "price_gbp",
            "price_gbp_invalid",
        )
        .unwrap(),
    );
    assert!(review.body.contains(&format!("<strong>B4</strong> price_gbp (“-5”): {price}")), "{}", review.body);
    assert!(!review.body.contains("price_gbp_invalid"), "no code on the page");
    assert!(review.body.contains("3 rows: 2 would be created, 1 refused."), "{}", review.body);
    // With a refused row there is no plain "Import 2 rows": skipping it is its own choice.
    assert!(!review.body.contains(">Import 2 rows<"), "{}", review.body);
    assert!(review.body.contains("Import the 2 valid rows, skip 1 refused"), "{}", review.body);
    assert_eq!(listings_total(&app, &partner).await, 0, "reviewing writes nothing");

    // An import that does not acknowledge the refused row imports nothing.
    let silent = import(&mut ada, &first, 2, 0).await;
    assert_eq!(silent.status, 409, "{}", silent.body);
    assert!(silent.body.contains("nothing was") && silent.body.contains("imported"), "{}", silent.body);
    assert_eq!(listings_total(&app, &partner).await, 0);

    // The explicit choice imports the two, then shows them (post/redirect/get, a notice once).
    import(&mut ada, &first, 2, 1).await.assert_redirect(&first);
    assert_eq!(listings_total(&app, &partner).await, 2);
    let done = ada.get(&first).await;
    assert!(done.body.contains("Imported: the rows below are saved."), "{}", done.body);
    assert!(done.body.contains("3 rows: 2 created, 1 not imported."), "{}", done.body);
    assert!(done.body.contains("href=\"/dashboard/listings/"), "links to the listings: {}", done.body);
    assert!(!done.body.contains("/import\""), "no import button on an imported draft");
    assert!(!ada.get(&first).await.body.contains("Imported: the rows"), "the notice is shown once");
    // A repeated POST (a reload that resubmits, a double click) imports nothing.
    import(&mut ada, &first, 2, 1).await.assert_redirect(&first);
    assert!(ada.get(&first).await.body.contains("already imported; nothing was imported again"));
    assert_eq!(listings_total(&app, &partner).await, 2);

    // The fixed file in the default mode: both saved SKUs are flagged, never "would be created".
    let second = draft(&mut ada, FIXED, "create").await;
    let review = ada.get(&second).await;
    let exists = html(&Outcome::SkuExists.message());
    assert_eq!(review.body.matches(&exists).count(), 2, "{}", review.body);
    assert!(review.body.contains("<strong>F2</strong> sku (“SOFA-1”)"), "{}", review.body);
    assert!(review.body.contains("3 rows: 1 would be created, 2 refused."), "{}", review.body);
    import(&mut ada, &second, 1, 2).await.assert_redirect(&second);
    assert_eq!(listings_total(&app, &partner).await, 3, "only the third row: nothing twice");
    let skus = json(app.get("/v1/listings?status=any&sku=SOFA-1", &partner.key).await).await;
    assert_eq!(skus["meta"]["total"], 1);

    // In update mode the same file says what each row does: all three match, none changes.
    let third = draft(&mut ada, FIXED, "upsert").await;
    let review = ada.get(&third).await;
    assert!(review.body.contains("3 rows: 3 unchanged."), "{}", review.body);
    assert!(review.body.contains("every row already matches its listing"), "{}", review.body);
    assert!(!review.body.contains("/import\""), "nothing to import: no button");
}

#[tokio::test]
async fn an_upsert_review_says_which_rows_would_be_updated_and_imports_them() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let first = draft(&mut ada, FIXED, "create").await;
    import(&mut ada, &first, 3, 0).await.assert_redirect(&first);
    let repriced = String::from_utf8(FIXED.to_vec()).expect("utf-8").replace("Blue sofa,140", "Blue sofa,150");
    let second = draft(&mut ada, repriced.as_bytes(), "upsert").await;
    let review = ada.get(&second).await;
    assert!(review.body.contains("3 rows: 1 would be updated, 2 unchanged."), "{}", review.body);
    assert!(review.body.contains(">Import 1 row<"), "{}", review.body);
    import(&mut ada, &second, 1, 0).await.assert_redirect(&second);
    assert_eq!(listings_total(&app, &partner).await, 3);
    let blue = json(app.get("/v1/listings?status=any&sku=SOFA-2", &partner.key).await).await;
    assert_eq!(blue["data"][0]["price"].as_f64(), Some(150.0), "{blue}");
}

#[tokio::test]
async fn an_expired_draft_imports_nothing_and_the_retention_job_removes_it() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let draft = draft(&mut ada, FIXED, "create").await;
    let past = Ts::from(Utc::now() - TimeDelta::minutes(1));
    sql_ts(&app, "UPDATE bulk_drafts SET expires_at = $1 WHERE id = $2", past, draft_id(&draft)).await;
    let page = ada.get(&draft).await;
    assert_eq!(page.status, 410, "{}", page.body);
    assert!(page.body.contains("Upload the file again"), "{}", page.body);
    assert_eq!(import(&mut ada, &draft, 3, 0).await.status, 410);
    assert_eq!(listings_total(&app, &partner).await, 0);
    assert!(!ada.get(BULK).await.body.contains(&draft), "not listed as waiting");
    let report = Retention::new(app.store.clone(), Settings::from_config(&rehome::config::Config::default()))
        .run_once(Utc::now())
        .await
        .expect("retention");
    assert_eq!(report.deleted(Table::BulkDrafts), 1);
    assert_eq!(ada.get(&draft).await.status, 404);
}

#[tokio::test]
async fn another_brands_draft_is_not_found_and_a_member_cannot_open_one() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let draft = draft(&mut ada, FIXED, "create").await;
    let (other, other_email) = admin(&app, "other").await;
    let mut eve = Browser::signed_in(&app, &other_email).await;
    assert_eq!(eve.get(&draft).await.status, 404);
    assert_eq!(import(&mut eve, &draft, 3, 0).await.status, 404);
    let csrf = eve.get(BULK).await.csrf();
    assert_eq!(eve.post(&format!("{draft}/discard"), &[("csrf", &csrf)]).await.status, 404);
    assert!(!eve.get(BULK).await.body.contains("stock.csv"), "not listed for another brand");
    // A member of the brand: the template only.
    let (mo, _) = app.user(&partner, "Mo Member", Role::Member).await;
    set_password(&app, mo).await;
    let mut member = Browser::signed_in(&app, "mo.member@acme.example").await;
    let page = member.get(BULK).await;
    assert!(page.body.contains("template.xlsx") && !page.body.contains("stock.csv"), "{}", page.body);
    assert_eq!(member.get(&draft).await.status, 403);
    assert_eq!(import(&mut member, &draft, 3, 0).await.status, 403);
    assert_eq!(listings_total(&app, &partner).await, 0);
    assert_eq!(listings_total(&app, &other).await, 0);
    // The draft is still there for its brand, and discarding it works once.
    let csrf = ada.get(BULK).await.csrf();
    ada.post(&format!("{draft}/discard"), &[("csrf", &csrf)]).await.assert_redirect(BULK);
    assert!(ada.get(BULK).await.body.contains("The file was discarded"));
    assert_eq!(ada.get(&draft).await.status, 404);
}

#[tokio::test]
async fn two_concurrent_imports_of_a_draft_import_it_once() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    for round in 1..=5 {
        let file = format!(
            "title,price_gbp,condition,category,faults,sku\nSofa {round},120,fair,3-Seater Sofas,None,R{round}-1\n\
             Chair {round},40,fair,3-Seater Sofas,None,R{round}-2\n"
        );
        let draft = draft(&mut ada, file.as_bytes(), "create").await;
        let (mut a, mut b) = (tab(&app, &ada), tab(&app, &ada));
        let (first, second) = tokio::join!(import(&mut a, &draft, 2, 0), import(&mut b, &draft, 2, 0));
        assert_eq!((first.status, second.status), (303, 303), "round {round}: {} / {}", first.body, second.body);
        assert_eq!((first.location(), second.location()), (Some(draft.as_str()), Some(draft.as_str())));
        assert_eq!(listings_total(&app, &partner).await, 2 * round, "round {round}: imported once");
    }
}

#[tokio::test]
async fn a_burst_of_uploads_keeps_at_most_the_cap_of_drafts() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let ada = Browser::signed_in(&app, &email).await;
    let cap = rehome::usecases::bulk::drafts::MAX_LIVE_DRAFTS;
    let burst = (0..cap + 8).map(|_| {
        let mut tab = tab(&app, &ada);
        async move { upload(&mut tab, FIXED, "create").await }
    });
    let pages = futures_util::future::join_all(burst).await;
    let kept = pages.iter().filter(|p| p.status == 303).count();
    let refused: Vec<&Page> = pages.iter().filter(|p| p.status == 422).collect();
    assert_eq!(i64::try_from(kept).expect("count"), cap, "{:?}", pages.iter().map(|p| p.status).collect::<Vec<_>>());
    assert_eq!(refused.len(), 8);
    assert!(refused[0].body.contains("files waiting for review"), "{}", refused[0].body);
    let stored =
        sql_i64(&app, &format!("SELECT COUNT(*) FROM bulk_drafts WHERE brand_id = {}", partner.brand_id)).await;
    assert_eq!(stored, Some(cap));
    // A corrected file replaces its draft, so it fits even at the cap.
    let mut ada = ada;
    let csrf = ada.get(BULK).await.csrf();
    // Any kept upload (under load the first one sent may be among the refused).
    let replaced = pages.iter().find(|p| p.status == 303).and_then(Page::location).expect("draft").to_owned();
    let replaces = draft_id(&replaced).to_string();
    let page = ada
        .post_multipart(
            BULK,
            &[("csrf", &csrf), ("mode", "create"), ("replaces", &replaces)],
            Some(("file", "fixed.csv", "text/csv", FIXED)),
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(ada.get(&replaced).await.status, 404, "the replaced draft is gone");
}

#[tokio::test]
async fn a_file_refused_whole_is_not_kept_and_says_why_beside_the_field() {
    let app = spawn_app().await;
    let (partner, email) = admin(&app, "acme").await;
    let mut ada = Browser::signed_in(&app, &email).await;
    let pdf = upload(&mut ada, b"%PDF-1.7 not a sheet", "create").await;
    assert_eq!(pdf.status, 422, "{}", pdf.body);
    assert!(pdf.body.contains("id=\"file-error\" role=\"alert\""), "{}", pdf.body);
    assert!(!pdf.body.contains("bad_file"), "{}", pdf.body);
    let empty = upload(&mut ada, b"title,price_gbp\n", "create").await;
    assert_eq!(empty.status, 422);
    assert!(empty.body.contains("no listings under its header row"), "{}", empty.body);
    let mut many = String::from("title,price_gbp\n");
    for n in 0..201 {
        many.push_str(&format!("Sofa {n},10\n"));
    }
    let many = upload(&mut ada, many.as_bytes(), "create").await;
    assert_eq!(many.status, 422);
    assert!(many.body.contains("more than 200 rows"), "{}", many.body);
    let stored =
        sql_i64(&app, &format!("SELECT COUNT(*) FROM bulk_drafts WHERE brand_id = {}", partner.brand_id)).await;
    assert_eq!(stored, Some(0));
    // Without the token: 403, nothing kept.
    let forged = ada.post_multipart(BULK, &[("mode", "create")], Some(("file", "stock.csv", "text/csv", FIXED))).await;
    assert_eq!(forged.status, 403);
    let stored =
        sql_i64(&app, &format!("SELECT COUNT(*) FROM bulk_drafts WHERE brand_id = {}", partner.brand_id)).await;
    assert_eq!(stored, Some(0));
}
