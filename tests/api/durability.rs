//! A write answered 2xx is durable (decisions 13.0): on a disk that fills, every write is
//! either kept or refused (`507 insufficient_storage`, or 503), never acknowledged and
//! lost; the server recovers by itself when space returns, and a restart finds every
//! acknowledged write. Each test runs the real server on a database on a tmpfs of its own
//! (SQLite's file; on PostgreSQL a tablespace there, the server's WAL staying on its own
//! disk), fills the disk around it, and drives one kind of write through the three phases.

use std::collections::BTreeSet;

use rehome::config::Config;
use serde_json::{json, Value};

use crate::helpers::{json, on_postgres, spawn_app_on, Partner, SmallDisk, TestApp};
use crate::listings::listing;
use crate::marketplace::{ops_post, OPS_TOKEN};

/// Free space left beside the database when the disk is filled: some writes' worth (fewer
/// on PostgreSQL, whose WAL is elsewhere, so that the small writes fill it too).
fn left_free() -> u64 {
    if on_postgres() {
        192 * 1024
    } else {
        1024 * 1024
    }
}

/// Refusals to see before the disk counts as full for the test.
const REFUSALS: usize = 12;

/// Writes tried at most while the disk is full.
const ATTEMPTS: usize = 600;

/// Writes after space returns, each of which must be kept.
const AFTER_SPACE_RETURNS: usize = 10;

/// What one kind of write is, for the three phases.
trait Write {
    /// Writes the `n`th value: `Some(id)` when the server acknowledged it (2xx), `None`
    /// when it refused it as storage full or unavailable; anything else fails the test.
    async fn write(&self, app: &TestApp, partner: &Partner, n: usize) -> Option<String>;

    /// Asserts that every acknowledged write is there, read back over the API.
    async fn assert_kept(&self, app: &TestApp, partner: &Partner, acknowledged: &[String]);
}

/// `Some(id)` for a 2xx (taking the id with `id_of`), `None` for 507 or 503 with the
/// documented code and `Retry-After`; panics on anything else.
async fn outcome(response: reqwest::Response, id_of: impl Fn(&Value) -> Option<String>) -> Option<String> {
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").cloned();
    let body = json(response).await;
    match status {
        200..=299 => Some(id_of(&body).unwrap_or_else(|| panic!("no id in {body}"))),
        507 | 503 => {
            let expected = if status == 507 { "insufficient_storage" } else { "database_unavailable" };
            assert_eq!(body["code"], expected, "{body}");
            assert!(retry_after.is_some(), "{status} without Retry-After");
            None
        }
        other => panic!("a write on a full disk answered {other}: {body}"),
    }
}

fn adjust(config: &mut Config) {
    config.ops_token = Some(OPS_TOKEN.into());
    config.allow_private_network = true;
    config.webhook_allow_http = true;
}

/// Fills the disk, writes until refused, checks; frees it, writes, checks; restarts, checks.
async fn fills_refuses_recovers_and_restarts(test: &str, kind: impl Write) {
    let Some(disk) = SmallDisk::mount(test, 24) else { return };
    let dir = tempfile::tempdir().expect("media dir");
    let app = spawn_app_on(disk.database().await, dir, adjust).await;
    let partner = app.partner("full-disk").await;
    // Whatever the kind needs first (a listing to sell, an endpoint) is written now.
    let mut acknowledged = Vec::new();
    acknowledged.extend(kind.write(&app, &partner, 0).await);
    assert_eq!(acknowledged.len(), 1, "a write before the disk fills");

    disk.fill(left_free());
    let mut refused = 0;
    for n in 1..ATTEMPTS {
        match kind.write(&app, &partner, n).await {
            Some(id) => acknowledged.push(id),
            None => refused += 1,
        }
        if refused == REFUSALS {
            break;
        }
    }
    assert_unique(&acknowledged);
    kind.assert_kept(&app, &partner, &acknowledged).await;
    assert_eq!(refused, REFUSALS, "the disk never filled ({} writes acknowledged)", acknowledged.len());
    eprintln!("{test}: {} writes acknowledged, then {refused} refused", acknowledged.len());

    disk.free();
    for n in ATTEMPTS..ATTEMPTS + AFTER_SPACE_RETURNS {
        let id = kind.write(&app, &partner, n).await;
        acknowledged.push(id.unwrap_or_else(|| panic!("write {n} refused after space returned")));
    }
    assert_unique(&acknowledged);
    kind.assert_kept(&app, &partner, &acknowledged).await;

    let (db, dir) = app.stop_and_keep().await;
    let app = spawn_app_on(db, dir, adjust).await;
    kind.assert_kept(&app, &partner, &acknowledged).await;
    app.stop().await;
}

fn assert_unique(ids: &[String]) {
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "an id acknowledged twice: {ids:?}");
}

fn id_field(body: &Value) -> Option<String> {
    body["id"].as_i64().map(|id| id.to_string())
}

/// A listing with a long description, so that the disk fills in a few hundred.
fn bulky(n: usize) -> Value {
    listing(json!({"title": format!("Sofa {n}"), "description": filler(1500)}))
}

/// About `chars` characters of text no database compresses much (PostgreSQL compresses
/// long values, and a repeated sentence would take no room).
fn filler(chars: usize) -> String {
    let mut text = String::with_capacity(chars + 40);
    while text.len() < chars {
        text.push_str(&uuid::Uuid::new_v4().simple().to_string());
        text.push(' ');
    }
    text
}

struct Listings;

impl Write for Listings {
    async fn write(&self, app: &TestApp, partner: &Partner, n: usize) -> Option<String> {
        outcome(app.post("/v1/listings", &partner.key, &bulky(n)).await, id_field).await
    }

    async fn assert_kept(&self, app: &TestApp, partner: &Partner, acknowledged: &[String]) {
        assert_readable(app, partner, "/v1/listings", acknowledged).await;
    }
}

#[tokio::test]
async fn listings_created_on_a_full_disk_are_kept_or_refused_never_lost() {
    fills_refuses_recovers_and_restarts("listings", Listings).await;
}

struct BulkCommits;

impl Write for BulkCommits {
    /// A file of three rows committed; the id is the three product ids.
    async fn write(&self, app: &TestApp, partner: &Partner, n: usize) -> Option<String> {
        let long = filler(1000);
        let csv = format!(
            "title,price_gbp,category,condition,faults,description\n\
             Sofa {n}a,450,Sofa Beds,excellent,None,{long}\n\
             Sofa {n}b,450,Sofa Beds,excellent,None,{long}\n\
             Sofa {n}c,450,Sofa Beds,excellent,None,{long}\n"
        );
        let response = app.post("/v1/listings/bulk-commit", &partner.key, &json!({"csv_text": csv})).await;
        outcome(response, |report| {
            let ids: Vec<String> = report["rows"]
                .as_array()?
                .iter()
                .map(|row| row["product_id"].as_i64().map(|id| id.to_string()))
                .collect::<Option<_>>()?;
            (ids.len() == 3).then(|| ids.join(","))
        })
        .await
    }

    async fn assert_kept(&self, app: &TestApp, partner: &Partner, acknowledged: &[String]) {
        Listings.assert_kept(app, partner, &split(acknowledged)).await;
    }
}

/// Asserts that `GET {collection}/{id}` answers 200 for every acknowledged id.
async fn assert_readable(app: &TestApp, partner: &Partner, collection: &str, acknowledged: &[String]) {
    for id in acknowledged {
        let response = app.get(&format!("{collection}/{id}"), &partner.key).await;
        assert_eq!(response.status(), 200, "acknowledged {collection}/{id} is not there");
    }
}

fn split(joined: &[String]) -> Vec<String> {
    joined.iter().flat_map(|ids| ids.split(',').map(str::to_owned)).collect()
}

#[tokio::test]
async fn bulk_commits_on_a_full_disk_are_kept_whole_or_refused_whole() {
    fills_refuses_recovers_and_restarts("bulk commits", BulkCommits).await;
}

struct Settings;

const BRAND: &str = "/v1/partner/settings/brand";

impl Write for Settings {
    /// A warehouse added, then the brand's name changed to the warehouse's id: the id is
    /// both (each write must be kept or refused; the name shows the last one kept).
    async fn write(&self, app: &TestApp, partner: &Partner, n: usize) -> Option<String> {
        let label = format!("Depot {n} {}", &filler(60)[..60]);
        let response = app.post("/v1/partner/settings/warehouses", &partner.key, &json!({"label": label})).await;
        let warehouse = outcome(response, |body| body["warehouse"]["id"].as_str().map(str::to_owned)).await?;
        let response = app.patch(BRAND, &partner.key, &json!({"display_name": format!("Acme {warehouse}")})).await;
        outcome(response, |_| Some(warehouse.clone())).await
    }

    async fn assert_kept(&self, app: &TestApp, partner: &Partner, acknowledged: &[String]) {
        let response = app.get("/v1/partner/settings/warehouses", &partner.key).await;
        assert_eq!(response.status(), 200);
        let book = json(response).await.to_string();
        for id in acknowledged {
            assert!(book.contains(&format!("\"{id}\"")), "acknowledged warehouse {id} is not there");
        }
        let response = app.get(BRAND, &partner.key).await;
        let brand = json(response).await;
        let last = acknowledged.last().map(|id| format!("Acme {id}"));
        assert_eq!(brand["profile"]["display_name"].as_str().map(str::to_owned), last, "the last name acknowledged");
    }
}

#[tokio::test]
async fn settings_changed_on_a_full_disk_are_kept_or_refused_never_lost() {
    fills_refuses_recovers_and_restarts("settings", Settings).await;
}

struct WebhookEvents;

const WEBHOOK: &str = "/v1/partner/settings/integrations/webhook";

impl Write for WebhookEvents {
    /// A `ping` event queued (the endpoint is set by the first write).
    async fn write(&self, app: &TestApp, partner: &Partner, n: usize) -> Option<String> {
        if n == 0 {
            let response = app.patch(WEBHOOK, &partner.key, &json!({"url": "http://127.0.0.1:9/hook"})).await;
            assert_eq!(response.status(), 200);
        }
        let response = app.post(&format!("{WEBHOOK}/test"), &partner.key, &json!({})).await;
        outcome(response, |body| body["event_id"].as_str().map(str::to_owned)).await
    }

    async fn assert_kept(&self, app: &TestApp, partner: &Partner, acknowledged: &[String]) {
        assert_readable(app, partner, "/v1/partner/webhooks/deliveries", acknowledged).await;
    }
}

#[tokio::test]
async fn webhook_events_queued_on_a_full_disk_are_kept_or_refused_never_lost() {
    fills_refuses_recovers_and_restarts("webhook events", WebhookEvents).await;
}

struct LedgerEntries;

impl Write for LedgerEntries {
    /// A clearance unit sold and delivered: the delivery writes the sale to the ledger. The
    /// id is the order's.
    async fn write(&self, app: &TestApp, partner: &Partner, n: usize) -> Option<String> {
        let body = listing(
            json!({"title": format!("Chair {n}"), "channel": "clearance", "price_gbp": 120, "description": filler(1500)}),
        );
        let listing = outcome(app.post("/v1/listings", &partner.key, &body).await, id_field).await?;
        let order =
            outcome(ops_post(app, "/orders", &json!({"listing_id": listing.parse::<i64>().ok()})).await, id_field)
                .await?;
        let done = ops_post(app, &format!("/orders/{order}/complete"), &json!({})).await;
        outcome(done, |_| Some(order.clone())).await
    }

    async fn assert_kept(&self, app: &TestApp, partner: &Partner, acknowledged: &[String]) {
        let entries = crate::wallet::all_entries(app, partner).await;
        let sales: BTreeSet<String> = entries
            .iter()
            .filter(|e| e["type"] == "sale")
            .filter_map(|e| e["order_id"].as_i64().map(|id| id.to_string()))
            .collect();
        for id in acknowledged {
            assert!(sales.contains(id), "the sale of acknowledged order {id} is not in the ledger");
        }
        assert_eq!(sales.len(), acknowledged.len(), "a sale in the ledger for an order not acknowledged");
    }
}

#[tokio::test]
async fn ledger_entries_written_on_a_full_disk_are_kept_or_refused_never_lost() {
    fills_refuses_recovers_and_restarts("ledger", LedgerEntries).await;
}

/// A photo the media directory's disk has no room for is refused `507
/// insufficient_storage` (not a 500), and uploads succeed again once space returns.
#[tokio::test]
async fn a_photo_the_media_disk_has_no_room_for_is_refused_507() {
    let Some(disk) = SmallDisk::mount("photos on a full disk", 8) else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = crate::helpers::TestDb::create(dir.path()).await;
    let media = disk.path().join("media");
    let app = spawn_app_on(db, dir, |config| config.media_dir = media).await;
    let partner = app.partner("full-media").await;
    // Noise, so that the re-encoded original is as large as the upload.
    let mut seed: u32 = 7;
    let noise = image::RgbImage::from_fn(300, 300, |_, _| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        image::Rgb([(seed >> 24) as u8, (seed >> 16) as u8, (seed >> 8) as u8])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(noise).write_to(&mut png, image::ImageFormat::Png).expect("png");
    let png = png.into_inner();
    disk.fill(2 * png.len() as u64);

    let mut kept = Vec::new();
    let mut refused = false;
    for _ in 0..20 {
        let response = crate::photos::upload(&app, &partner.key, &png, None).await;
        match outcome(response, id_text).await {
            Some(id) => kept.push(id),
            None => {
                refused = true;
                break;
            }
        }
    }
    assert!(refused, "the disk never filled ({} photos kept)", kept.len());
    assert_readable(&app, &partner, "/v1/listings/photos", &kept).await;
    disk.free();
    let response = crate::photos::upload(&app, &partner.key, &png, None).await;
    assert!(outcome(response, id_text).await.is_some(), "an upload once space returned");
    app.stop().await;
}

fn id_text(body: &Value) -> Option<String> {
    body["attachment_id"].as_i64().map(|id| id.to_string())
}
