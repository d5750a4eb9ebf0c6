//! `images` URLs on listings: imported in the background through the SSRF guard.

use serde_json::json;

use super::origin::Origin;
use super::*;
use crate::helpers::spawn_app_with;
use crate::listings::{create, listing};

/// A listing importing `urls`, and its detail once no import is pending.
async fn import(app: &TestApp, key: &str, urls: &[String]) -> Value {
    let detail = create(app, key, listing(json!({ "images": urls }))).await;
    assert!(detail["image_imports"].as_array().unwrap().iter().all(|i| i["status"] == "pending"));
    imports_settled(&app.base, key, detail["id"].as_i64().unwrap()).await
}

fn statuses(detail: &Value) -> Vec<(String, String)> {
    detail["image_imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["status"].as_str().unwrap().to_owned(), i["error"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[tokio::test]
async fn images_from_a_local_server_are_imported_as_photos_of_the_brand_when_private_networks_are_allowed() {
    let origin = Origin::start().await;
    let app = spawn_app_with(|c| c.allow_private_network = true).await;
    let partner = app.partner("acme").await;
    let urls = [origin.url("/sofa.png"), origin.url("/hop/2"), origin.url("/page.html"), origin.url("/missing")];
    let detail = import(&app, &partner.key, &urls).await;
    let ok = |s: &str| (s.to_owned(), String::new());
    assert_eq!(
        statuses(&detail),
        vec![
            ok("done"),
            ok("done"),
            ("failed".into(), "unsupported_mime".into()),
            ("failed".into(), "http_status_404".into())
        ],
        "{detail}"
    );
    let images = detail["images"].as_array().unwrap();
    assert_eq!(images.len(), 2, "failed imports never block the listing: {detail}");
    assert_eq!(detail["image_url"], images[0]);
    let (status, mime, bytes) = fetch(images[0].as_str().unwrap()).await;
    assert_eq!((status, mime.as_str(), dimensions(&bytes)), (200, "image/png", (1200, 800)));
    // The import is a photo of the brand, thumbnails included.
    let photo_id = detail["image_imports"][0]["attachment_id"].as_i64().unwrap();
    let photo = thumbnails_settled(&app.base, &partner.key, photo_id).await;
    assert_eq!(photo["url"], images[0]);
    assert_eq!(dimensions(&fetch(photo["sizes"]["medium"].as_str().unwrap()).await.2), (300, 200));
    assert_eq!(photo["filename"], "sofa.png");
}

#[tokio::test]
async fn loopback_is_refused_without_the_private_network_switch() {
    let origin = Origin::start().await;
    let app = spawn_app_with(|_| {}).await;
    let partner = app.partner("acme").await;
    let named = format!("http://localhost:{}/sofa.png", origin.addr.port());
    let detail = import(&app, &partner.key, &[origin.url("/sofa.png"), named]).await;
    assert_eq!(
        statuses(&detail),
        vec![("failed".into(), "address_refused".into()), ("failed".into(), "address_refused".into())]
    );
    assert_eq!(detail["images"], json!([]));
}

#[tokio::test]
async fn redirects_are_checked_at_every_hop_and_capped_at_three() {
    let origin = Origin::start().await;
    let app = spawn_app_with(|c| c.allow_private_network = true).await;
    let partner = app.partner("acme").await;
    // Even with the switch, link-local (cloud metadata) addresses stay closed.
    let detail =
        import(&app, &partner.key, &[origin.url("/to-metadata"), origin.url("/hop/3"), origin.url("/to-file")]).await;
    assert_eq!(
        statuses(&detail),
        vec![
            ("failed".into(), "address_refused".into()),
            ("failed".into(), "too_many_redirects".into()),
            ("failed".into(), "url_refused".into())
        ]
    );
}

#[tokio::test]
async fn a_slow_server_times_out_and_an_endless_body_stops_at_ten_mebibytes() {
    let origin = Origin::start().await;
    let endless = Origin::endless().await;
    let app = spawn_app_with(|c| {
        c.allow_private_network = true;
        c.image_import_timeout_ms = 500;
        c.image_import_attempts = 2;
        c.image_import_retry_base_ms = 50;
        c.photo_poll_ms = 50;
    })
    .await;
    let partner = app.partner("acme").await;
    let started = std::time::Instant::now();
    let detail = import(&app, &partner.key, &[origin.url("/slow.png"), endless.url("/big.png")]).await;
    assert_eq!(
        statuses(&detail),
        vec![("failed".into(), "timeout".into()), ("failed".into(), "image_too_large".into())],
        "{detail}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(8), "two short attempts, not the 10 s answer");
    assert_eq!(detail["image_imports"][0]["attachment_id"], Value::Null);
}

/// An import that finishes, or fails for good, changes what the listing shows: its
/// `updated_at` moves on, so a sync walk from before shows the listing again.
#[tokio::test]
async fn a_finished_or_failed_import_shows_in_a_sync_walk() {
    let origin = Origin::start().await;
    let app = spawn_app_with(|c| c.allow_private_network = true).await;
    let partner = app.partner("acme").await;
    for (url, status) in [(origin.url("/sofa.png"), "done"), (origin.url("/missing"), "failed")] {
        let created = create(&app, &partner.key, listing(json!({ "images": [url] }))).await;
        let settled = imports_settled(&app.base, &partner.key, created["id"].as_i64().unwrap()).await;
        assert_eq!(settled["image_imports"][0]["status"], status);
        let (before, after) = (created["updated_at"].as_str().unwrap(), settled["updated_at"].as_str().unwrap());
        assert!(after > before, "{status}: updated_at {before} → {after}");
        let walk = format!("/v1/listings?updated_since={}&per_page=100", after.replace('+', "%2B"));
        let page = json(app.get(&walk, &partner.key).await).await;
        let seen: Vec<i64> = page["data"].as_array().unwrap().iter().filter_map(|l| l["id"].as_i64()).collect();
        assert!(seen.contains(&created["id"].as_i64().unwrap()), "{status}: {page}");
    }
}

/// An import whose attempts ran out without an outcome (its worker died each time) is given
/// up, and its listing shows the change to a sync walk like any other.
#[tokio::test]
async fn an_import_given_up_moves_its_listing_on() {
    let app = spawn_app_with(|c| c.photo_jobs_paused = true).await;
    let partner = app.partner("acme").await;
    let created = create(&app, &partner.key, listing(json!({ "images": ["https://images.example/sofa.jpg"] }))).await;
    let raw = app.db.raw().await;
    raw.execute("UPDATE listing_images SET attempts = 5").await;
    raw.close().await;
    let now = chrono::Utc::now();
    let claimed =
        app.store.claim_image_imports("test", now, now + chrono::TimeDelta::seconds(60), 10, 3).await.unwrap();
    assert!(claimed.is_empty());
    let detail = json(app.get(&format!("/v1/listings/{}", created["id"]), &partner.key).await).await;
    assert_eq!(
        (detail["image_imports"][0]["status"].clone(), detail["image_imports"][0]["error"].clone()),
        (json!("failed"), json!("gave_up"))
    );
    assert!(detail["updated_at"].as_str().unwrap() > created["updated_at"].as_str().unwrap(), "{detail}");
}

/// What each image of a listing is: its source URL, its photo and its status.
fn images_of(detail: &Value) -> Vec<(Value, Value, Value)> {
    let imports = detail["image_imports"].as_array().unwrap();
    imports.iter().map(|i| (i["source_url"].clone(), i["attachment_id"].clone(), i["status"].clone())).collect()
}

/// A PATCH sending a listing's image list again keeps what the listing already has: an
/// imported image is not fetched again (same photo), an uploaded photo stays; a failed import
/// is tried again, and only new URLs are fetched.
#[tokio::test]
async fn an_edit_keeps_imported_images_and_fetches_only_new_and_failed_urls() {
    let origin = Origin::start().await;
    let app = spawn_app_with(|c| c.allow_private_network = true).await;
    let partner = app.partner("acme").await;
    let (sofa, missing, new) = (origin.url("/sofa.png"), origin.url("/missing"), origin.url("/sofa.png?v=2"));
    let detail = import(&app, &partner.key, &[sofa.clone(), missing.clone()]).await;
    let id = detail["id"].as_i64().unwrap();
    let imported = detail["image_imports"][0]["attachment_id"].clone();
    assert!(imported.is_i64(), "{detail}");
    assert_eq!((origin.hits("/sofa.png"), origin.hits("/missing")), (1, 1));
    let upload = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Png, 40, 30)).await["attachment_id"].clone();

    let body = json!({ "attachment_ids": [upload], "images": [new, sofa, missing] });
    let patched = json(app.patch(&format!("/v1/listings/{id}"), &partner.key, &body).await).await;
    assert_eq!(patched["image_imports"][2]["status"], "done", "kept as it was, not queued again: {patched}");
    let settled = imports_settled(&app.base, &partner.key, id).await;
    assert_eq!(
        images_of(&settled),
        vec![
            (Value::Null, upload.clone(), json!("done")),
            (json!(new), settled["image_imports"][1]["attachment_id"].clone(), json!("done")),
            (json!(sofa), imported.clone(), json!("done")),
            (json!(missing), Value::Null, json!("failed")),
        ],
        "{settled}"
    );
    assert_ne!(settled["image_imports"][1]["attachment_id"], imported, "a new URL is a new photo");
    assert_eq!(
        (origin.hits("/sofa.png"), origin.hits("/sofa.png?v=2"), origin.hits("/missing")),
        (1, 1, 2),
        "the kept import is not fetched again; the failed one is tried again"
    );

    // The same list again, in another order: nothing is fetched.
    let body = json!({ "attachment_ids": [imported, upload], "images": [new] });
    let patched = json(app.patch(&format!("/v1/listings/{id}"), &partner.key, &body).await).await;
    let kept = images_of(&patched);
    assert_eq!(kept.iter().map(|i| i.2.clone()).collect::<Vec<_>>(), [json!("done"), json!("done"), json!("done")]);
    assert_eq!(kept[0], (json!(sofa), imported, json!("done")), "a photo kept by its attachment keeps its source");
    assert_eq!((origin.hits("/sofa.png"), origin.hits("/sofa.png?v=2")), (1, 1));
}

/// The dashboard's photo buttons change the order or drop one photo and keep the others as
/// they are: an imported image is never fetched again, and it may become the cover.
#[tokio::test]
async fn dashboard_photo_changes_fetch_nothing_again() {
    use crate::web::{admin, Browser};
    let origin = Origin::start().await;
    let app = spawn_app_with(|c| c.allow_private_network = true).await;
    let (partner, email) = admin(&app, "acme").await;
    let upload = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Png, 40, 30)).await["attachment_id"].clone();
    let (sofa, missing) = (origin.url("/sofa.png"), origin.url("/missing"));
    let body = listing(json!({ "attachment_ids": [upload], "images": [sofa, missing] }));
    let id = create(&app, &partner.key, body).await["id"].as_i64().unwrap();
    let before = imports_settled(&app.base, &partner.key, id).await;
    let imported = before["image_imports"][1]["attachment_id"].clone();

    let mut ada = Browser::signed_in(&app, &email).await;
    let csrf = ada.get(&format!("/dashboard/listings/{id}")).await.csrf();
    let token = [("csrf", csrf.as_str())];
    let photos = format!("/dashboard/listings/{id}/photos");
    ada.post(&format!("{photos}/2/cover"), &token).await.assert_redirect(&format!("/dashboard/listings/{id}"));
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(
        images_of(&detail),
        vec![
            (json!(sofa), imported.clone(), json!("done")),
            (Value::Null, upload.clone(), json!("done")),
            (json!(missing), Value::Null, json!("failed")),
        ],
        "the import is the cover, as it was: {detail}"
    );
    ada.post(&format!("{photos}/2/remove"), &token).await.assert_redirect(&format!("/dashboard/listings/{id}"));
    let detail = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(
        images_of(&detail),
        vec![(json!(sofa), imported, json!("done")), (json!(missing), Value::Null, json!("failed"))],
        "{detail}"
    );
    assert_eq!(detail["image_imports"][1]["error"], "http_status_404", "a failed import stays failed: {detail}");
    assert_eq!((origin.hits("/sofa.png"), origin.hits("/missing")), (1, 1), "nothing fetched again");
}
