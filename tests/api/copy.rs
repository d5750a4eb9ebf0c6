//! `rehome copy-to-postgres`: what a SQLite server stored reads back the same from a
//! PostgreSQL node after the copy. Runs only with `REHOME_TEST_POSTGRES`.

use std::path::Path;
use std::time::Duration;

use image::ImageFormat;
use rehome::config::Config;
use rehome::domain::user::Role;
use serde_json::{json, Value};

use crate::helpers::{json, on_postgres, open_store, run_rehome, TestDb, TEST_DATA_KEY};
use crate::limits_shared::Node;
use crate::listings::listing;
use crate::marketplace::OPS_TOKEN;
use crate::photos::{b64, image_bytes, thumbnails_settled, UPLOAD};
use crate::webhooks::receiver::Receiver;
use crate::webhooks::{DELIVERIES, WEBHOOK};

/// The same settings on both sides, so URLs in answers do not depend on the node.
fn settings(config: &mut Config) {
    config.public_url = Some("https://api.rehome.example".into());
    config.ops_token = Some(OPS_TOKEN.into());
    config.allow_private_network = true;
    config.webhook_allow_http = true;
    config.webhook_retry_base_ms = 100;
    config.webhook_timeout_ms = 1000;
    config.webhook_poll_ms = 50;
}

fn copy_to_postgres(from: &str, to: &str) -> (bool, String, String) {
    run_rehome(&["copy-to-postgres", "--from", from, "--to", to], &[])
}

async fn ok_json(response: reqwest::Response, expected: u16) -> Value {
    let status = response.status().as_u16();
    let body = json(response).await;
    assert_eq!(status, expected, "{body}");
    body
}

async fn read(node: &Node, key: &str, path: &str) -> Value {
    ok_json(node.get(path, key).await, 200).await
}

/// What the source wrote, and where to read it back.
struct Written {
    key: String,
    limited_key: String,
    revoked_key: String,
    paths: Vec<String>,
    listing_ids: Vec<i64>,
    code: String,
}

/// Writes a bit of everything through the API of a SQLite node: keys, warehouses, payout
/// options, a photo, listings (one with the photo, one deleted), orders, a credit code, a
/// collection, and their webhook events, delivered.
async fn write_everything(node: &Node, url: &str, receiver: &Receiver) -> Written {
    let store = open_store(url).await;
    rehome::usecases::accounts::create_brand(&store, "acme", "Acme Ltd").await.expect("brand");
    rehome::usecases::accounts::create_brand(&store, "globex", "Globex").await.expect("brand");
    let admin =
        rehome::usecases::accounts::create_user(&store, "acme", "Ada", "ada@acme.example", Role::Admin).await.unwrap();
    let mut keys = Vec::new();
    for (scopes, quota) in [("read,write", Some(100_000)), ("read", Some(5)), ("read", None)] {
        let scopes = scopes.parse().unwrap();
        keys.push(rehome::usecases::accounts::create_key(&store, admin.id, scopes, None, quota).await.unwrap());
    }
    let [key, limited_key, revoked] = <[_; 3]>::try_from(keys).ok().unwrap();
    let (key, limited_key) = (key.secret, limited_key.secret);
    rehome::usecases::accounts::revoke_key(&store, revoked.key_id).await.unwrap();
    store.close().await;

    let secret = ok_json(node.patch(WEBHOOK, &key, &json!({"url": receiver.url()})).await, 200).await;
    assert!(secret["signing_secret"].is_string());
    let warehouses = "/v1/partner/settings/warehouses";
    ok_json(node.post(warehouses, &key, &json!({"label": "Leeds"})).await, 201).await;
    let york = ok_json(node.post(warehouses, &key, &json!({"label": "York", "city": "York"})).await, 201).await;
    let york = york["warehouse"]["id"].as_str().unwrap().to_owned();
    ok_json(node.post(&format!("{warehouses}/{york}/set-default"), &key, &json!({})).await, 200).await;
    let payouts = json!({"credit_boost_percent": 115, "code_validity_days": 90});
    ok_json(node.patch("/v1/partner/settings/payouts", &key, &payouts).await, 200).await;

    let photo = ok_json(
        node.post(UPLOAD, &key, &json!({"image_base64": b64(&image_bytes(ImageFormat::Jpeg, 640, 480))})).await,
        201,
    )
    .await;
    let photo_id = photo["attachment_id"].as_i64().unwrap();
    thumbnails_settled(&node.base, &key, photo_id).await;

    let mut listing_ids = Vec::new();
    let bodies = [
        json!({"attachment_ids": [photo_id], "channel": "exchange", "price_gbp": 120,
               "description": "Oak, <b>re-upholstered</b>", "brand": "Made-Up Sofas Co",
               "warehouse_id": york}),
        json!({"title": "Walnut sideboard", "channel": "clearance", "price_gbp": 300, "sale_price_gbp": 249.5,
               "quantity": 3, "category": "Armchairs"}),
        json!({"title": "Gone chair", "price_gbp": 40}),
        json!({"title": "Draft lamp", "price_gbp": 25, "status": "draft"}),
    ];
    for body in bodies {
        let detail = ok_json(node.post("/v1/listings", &key, &listing(body)).await, 201).await;
        listing_ids.push(detail["id"].as_i64().unwrap());
    }
    let gone = node.client.delete(node.url(&format!("/v1/listings/{}", listing_ids[2]))).bearer_auth(&key);
    assert!(gone.send().await.unwrap().status().is_success());

    // An exchange sale paid as a credit code, and a clearance sale collected.
    let ops_post = |path: String, body: Value| {
        node.client.post(node.url(&format!("/ops/v1{path}"))).bearer_auth(OPS_TOKEN).json(&body).send()
    };
    let sold = ok_json(ops_post("/orders".into(), json!({"listing_id": listing_ids[0]})).await.unwrap(), 201).await;
    let sold = sold["id"].as_i64().unwrap();
    let completed = json!({"completed_at": "2026-11-20T15:04:05Z"});
    ok_json(ops_post(format!("/orders/{sold}/complete"), completed).await.unwrap(), 200).await;
    let choice = json!({"customer_id": "cus_1", "customer_choice": "credit", "credit_destination": "code"});
    let redemption = ok_json(ops_post(format!("/orders/{sold}/payout-choice"), choice).await.unwrap(), 201).await;
    let code = redemption["code"].as_str().unwrap().to_owned();
    let placed = json!({"listing_id": listing_ids[1], "buyer_window_start": "2026-12-01"});
    let cleared = ok_json(ops_post("/orders".into(), placed).await.unwrap(), 201).await;
    let collection = json!({"order_id": cleared["id"], "scheduled_for": "2026-12-10", "warehouse_id": york});
    ok_json(node.post("/v1/partner/collections", &key, &collection).await, 201).await;

    // Both events delivered: nothing left for the next node to do.
    let both = |deliveries: &Value| {
        let data = deliveries["data"].as_array().unwrap();
        data.len() == 2 && data.iter().all(|d| d["status"] == "delivered")
    };
    let delivered = crate::helpers::poll(Duration::from_secs(20), || async {
        Some(read(node, &key, DELIVERIES).await).filter(both)
    });
    let deliveries = match delivered.await {
        Some(deliveries) => deliveries,
        None => panic!("events never delivered: {}", read(node, &key, DELIVERIES).await),
    };

    let mut paths = vec![
        "/v1/listings".to_owned(),
        "/v1/listings?status=any".to_owned(),
        format!("/v1/listings/photos/{photo_id}"),
        warehouses.to_owned(),
        WEBHOOK.to_owned(),
        "/v1/partner/settings/payouts".to_owned(),
        "/v1/partner/collections".to_owned(),
        "/v1/redemptions".to_owned(),
        DELIVERIES.to_owned(),
        "/v1/listings/options".to_owned(),
    ];
    paths.extend([0, 1, 3].map(|i| format!("/v1/listings/{}", listing_ids[i])));
    for delivery in deliveries["data"].as_array().unwrap() {
        paths.push(format!("{DELIVERIES}/{}", delivery["event_id"].as_str().unwrap()));
    }
    Written { key, limited_key, revoked_key: revoked.secret, paths, listing_ids, code }
}

async fn snapshot(node: &Node, key: &str, paths: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for path in paths {
        out.push(read(node, key, path).await);
    }
    out
}

fn write_key_file(dir: &Path) {
    std::fs::write(dir.join("rehome.key"), TEST_DATA_KEY).unwrap();
}

#[tokio::test]
async fn a_sqlite_database_copied_to_postgres_reads_back_the_same_and_ids_continue() {
    if !on_postgres() {
        eprintln!("skipped: set REHOME_TEST_POSTGRES to a PostgreSQL URL to test copy-to-postgres");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The SQLite server's key file, as `rehome serve` would have left it beside the file.
    write_key_file(dir.path());
    let sqlite = format!("sqlite://{}", dir.path().join("source.db").display());
    let receiver = Receiver::start().await;
    let source = Node::start(dir.path(), &sqlite, settings).await;
    let written = write_everything(&source, &sqlite, &receiver).await;
    let before = snapshot(&source, &written.key, &written.paths).await;
    source.stop().await;

    let target = TestDb::create(dir.path()).await;
    let (ok, out, err) = copy_to_postgres(&sqlite, &target.url);
    assert!(ok, "copy failed:\n{out}\n{err}");
    let counts: Vec<(&str, u64)> = out
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (table, rows, unit) = (words.next()?, words.next()?, words.next()?);
            (unit == "rows").then(|| (table, rows.parse().unwrap()))
        })
        .collect();
    for (table, rows) in [("brands", 2), ("listings", 4), ("photos", 1), ("orders", 2), ("webhook_events", 2)] {
        assert!(counts.contains(&(table, rows)), "{table}: {rows} rows expected in\n{out}");
    }
    let tables: Vec<&str> = counts.iter().map(|(t, _)| *t).collect();
    let at = |t: &str| tables.iter().position(|x| *x == t).unwrap_or_else(|| panic!("{t} not copied:\n{out}"));
    assert!(at("brands") < at("users") && at("users") < at("api_keys") && at("listings") < at("orders"));
    assert!(!tables.contains(&"rate_limit_slots") && !tables.contains(&"_sqlx_migrations"));
    assert!(out.contains("REHOME_DATA_KEY"), "the data key instruction is printed:\n{out}");

    let (ok, out, err) = copy_to_postgres(&sqlite, &target.url);
    assert!(!ok && err.contains("not empty"), "a second copy into the same database is refused:\n{out}\n{err}");

    let node = Node::start(dir.path(), &target.url, settings).await;
    let after = snapshot(&node, &written.key, &written.paths).await;
    for ((path, before), after) in written.paths.iter().zip(&before).zip(&after) {
        assert_eq!(before, after, "GET {path} differs after the copy");
    }

    // Keys keep their quota and their revocation.
    let limited = node.get("/v1/listings/options", &written.limited_key).await;
    assert_eq!(limited.status(), 200);
    assert_eq!(limited.headers()["x-ratelimit-limit"], "5");
    assert_eq!(node.get("/v1/listings/options", &written.revoked_key).await.status(), 401);

    // The code, sealed and hashed on SQLite, is still spendable.
    let spent = node.post("/v1/partner/credits/redeem", &written.key, &json!({"code": written.code})).await;
    assert_eq!(ok_json(spent, 200).await["value_pence"], 13_800);

    // New rows continue after the copied ids.
    let last = *written.listing_ids.iter().max().unwrap();
    let created = ok_json(node.post("/v1/listings", &written.key, &listing(json!({}))).await, 201).await;
    assert_eq!(created["id"], last + 1);
    let placed = node
        .client
        .post(node.url("/ops/v1/orders"))
        .bearer_auth(OPS_TOKEN)
        .json(&json!({"listing_id": last + 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(placed, 201).await["id"], 3);
    let photo = json!({"image_base64": b64(&image_bytes(ImageFormat::Png, 64, 48))});
    assert_eq!(ok_json(node.post(UPLOAD, &written.key, &photo).await, 201).await["attachment_id"], 2);
    node.stop().await;
    drop(target);
}
