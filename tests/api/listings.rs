//! Listings over real HTTP: creating, reading and listing, and the codes of each endpoint.
//! Changes (PATCH, delete, bulk delete), isolation and ownership are in `listings_changes`.

use rehome::domain::user::Role;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app, spawn_app_with, Partner, TestApp};

/// A valid create body with `changes` merged in (`null` removes a key).
pub fn listing(changes: Value) -> Value {
    let mut body = json!({
        "title": "Oak frame sofa",
        "price_gbp": 450,
        "condition": "excellent",
        "category": "3-Seater Sofas",
        "faults": ["None"],
    });
    if let (Some(body), Some(changes)) = (body.as_object_mut(), changes.as_object()) {
        for (key, value) in changes {
            if value.is_null() {
                body.remove(key);
            } else {
                body.insert(key.clone(), value.clone());
            }
        }
    }
    body
}

/// Creates a listing and returns its detail, failing the test on anything but 201.
pub async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let response = app.post("/v1/listings", key, &body).await;
    let status = response.status();
    let detail = json(response).await;
    assert_eq!(status, 201, "create answered {detail}");
    detail
}

pub async fn create_id(app: &TestApp, key: &str, changes: Value) -> i64 {
    create(app, key, listing(changes)).await["id"].as_i64().unwrap()
}

pub async fn list(app: &TestApp, key: &str, query: &str) -> Value {
    let response = app.get(&format!("/v1/listings{query}"), key).await;
    assert_eq!(response.status(), 200);
    json(response).await
}

pub fn ids(page: &Value) -> Vec<i64> {
    page["data"].as_array().unwrap().iter().map(|l| l["id"].as_i64().unwrap()).collect()
}

pub async fn warehouse(app: &TestApp, partner: &Partner, label: &str) -> String {
    let response = app.post("/v1/partner/settings/warehouses", &partner.key, &json!({"label": label})).await;
    assert_eq!(response.status(), 201);
    json(response).await["warehouse"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn create_answers_201_with_the_full_detail() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let detail = create(
        &app,
        &partner.key,
        listing(json!({
            "description": "Solid oak, <b>re-upholstered</b>",
            "channel": "clearance",
            "sale_price_gbp": 399.99,
            "rrp_gbp": 1200,
            "delivery_contribution_gbp": 30,
            "brand": "Loaf",
            "colour": "Grey",
            "fabric": "Linen",
            "age_years": "2 years old",
            "available_from": "2026-12-01",
            "quantity": 3,
            "measurements": [{"type": "3-Seater", "w_cm": 210, "d_cm": 95.5, "h_cm": 85}],
            "exposed_to": ["Dogs"],
            "faults": ["Fire Label"],
            "sku": "OAK-3S-01",
            "warehouse_location": "Bay 4",
        })),
    )
    .await;
    let id = detail["id"].as_i64().unwrap();
    assert!(id > 0);
    let expected = json!({
        "id": id,
        "title": "Oak frame sofa",
        "price": 399.99,
        "price_pence": 39999,
        "currency": "GBP",
        "status": "active",
        "image_url": "",
        "brand_id": "acme",
        "url": format!("{}/marketplace/listings/{id}", app.base),
        "view_count": 0,
        "category": "3-Seater Sofas",
        "channel": "clearance",
        // 39999 − commission 6000 − VAT 1200 − delivery 3000.
        "payout": 297.99,
        "payout_pence": 29799,
        "deleted_at": null,
    });
    let detail_fields = json!({
        "description": "Solid oak, <b>re-upholstered</b>",
        "regular_price": 450.0,
        "regular_price_pence": 45000,
        "sale_price": 399.99,
        "sale_price_pence": 39999,
        "rrp": 1200.0,
        "rrp_pence": 120000,
        "brand": "Loaf",
        "colour": "Grey",
        "fabric": "Linen",
        "age_years": "2 years old",
        "condition": "excellent",
        "available_from": "2026-12-01",
        "exposed_to": ["Dogs"],
        "faults": ["Fire Label"],
        "sku": "OAK-3S-01",
        "warehouse_location": "Bay 4",
        "delivery_contribution_gbp": 30,
        "quantity": 3,
        "images": [],
        "seller": {"id": partner.user_id, "display_name": "Ada Admin"},
        "warehouse_id": null,
        "measurements": [{"type": "3-Seater", "w_cm": 210, "d_cm": 95.5, "h_cm": 85}],
        "image_imports": [],
    });
    let mut expected = expected;
    expected.as_object_mut().unwrap().extend(detail_fields.as_object().unwrap().clone());
    let mut actual = detail.clone();
    let created_at = actual.as_object_mut().unwrap().remove("created_at").unwrap();
    let updated_at = actual.as_object_mut().unwrap().remove("updated_at").unwrap();
    assert_eq!(actual, expected);
    let created_at = created_at.as_str().unwrap();
    assert!(created_at.ends_with('Z'), "{created_at}");
    assert!(chrono::DateTime::parse_from_rfc3339(created_at).is_ok());
    assert_eq!(updated_at, created_at);
}

#[tokio::test]
async fn a_minimal_listing_takes_the_defaults() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let detail = create(&app, &partner.key, listing(json!({}))).await;
    assert_eq!(detail["channel"], "exchange");
    assert_eq!(detail["status"], "active");
    assert_eq!(detail["quantity"], 1);
    assert_eq!(detail["delivery_contribution_gbp"], 0);
    assert_eq!(detail["price"], 450.0);
    assert_eq!(detail["payout"], 450.0, "exchange listings pay no commission");
    for field in ["sale_price", "sale_price_pence", "rrp", "rrp_pence", "warehouse_id"] {
        assert!(detail[field].is_null(), "{field} in {detail}");
    }
    // Text fields are always strings, empty when unset.
    for field in
        ["description", "brand", "colour", "fabric", "age_years", "available_from", "sku", "warehouse_location"]
    {
        assert_eq!(detail[field], "", "{field} in {detail}");
    }
    assert_eq!(detail["exposed_to"], json!([]));
    assert_eq!(detail["measurements"], json!([]));
}

#[tokio::test]
async fn get_answers_the_same_detail_as_create() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let created = create(&app, &partner.key, listing(json!({"brand": "ikea", "channel": "clearance"}))).await;
    let response = app.get(&format!("/v1/listings/{}", created["id"]), &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await, created);
}

#[tokio::test]
async fn get_of_a_missing_or_malformed_id_is_listing_not_found() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for path in ["/v1/listings/999", "/v1/listings/abc", "/v1/listings/1.5", "/v1/listings/-1", "/v1/listings/%20"] {
        assert_error(app.get(path, &partner.key).await, 404, "listing_not_found").await;
    }
}

#[tokio::test]
async fn new_listings_take_the_brand_default_warehouse_unless_given_one() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let main = warehouse(&app, &partner, "Main").await;
    let overflow = warehouse(&app, &partner, "Overflow").await;
    let detail = create(&app, &partner.key, listing(json!({}))).await;
    assert_eq!(detail["warehouse_id"], main);
    let detail = create(&app, &partner.key, listing(json!({"warehouse_id": overflow.to_uppercase()}))).await;
    assert_eq!(detail["warehouse_id"], overflow);
}

#[tokio::test]
async fn a_warehouse_of_another_brand_is_warehouse_id_invalid() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let theirs = warehouse(&app, &other, "Theirs").await;
    let body = listing(json!({"warehouse_id": theirs}));
    let error = assert_error(app.post("/v1/listings", &acme.key, &body).await, 400, "validation_failed").await;
    assert_eq!(error["message"], "warehouse_id_invalid");
    let unknown = listing(json!({"warehouse_id": "00000000-0000-4000-8000-000000000000", "title": ""}));
    let error = assert_error(app.post("/v1/listings", &acme.key, &unknown).await, 400, "validation_failed").await;
    assert_eq!(error["message"], "title_required, warehouse_id_invalid", "every reason at once");
}

#[tokio::test]
async fn attachment_ids_must_name_photos_of_the_brand() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = listing(json!({"attachment_ids": [1]}));
    let error = assert_error(app.post("/v1/listings", &partner.key, &body).await, 400, "validation_failed").await;
    let message = "Name in `attachment_ids` only photos your brand uploaded (their `attachment_id`).";
    assert_eq!(
        error["errors"],
        json!([{"field": "attachment_ids", "code": "attachment_ids_invalid", "message": message}])
    );
}

#[tokio::test]
async fn image_urls_are_recorded_as_pending_imports() {
    // No import worker: an attempt (img.example does not resolve) would record an error
    // between the answer and the read back.
    let app = spawn_app_with(|c| c.photo_jobs_paused = true).await;
    let partner = app.partner("acme").await;
    let urls = ["https://img.example/a.jpg", "http://img.example/b.png"];
    let detail = create(&app, &partner.key, listing(json!({"images": urls}))).await;
    assert_eq!(detail["images"], json!([]), "only imported images are listed");
    assert_eq!(detail["image_url"], "");
    let imports = detail["image_imports"].as_array().unwrap();
    assert_eq!(imports.len(), 2);
    assert_eq!(imports[0]["position"], 0);
    assert_eq!(imports[0]["source_url"], urls[0]);
    assert_eq!(imports[1]["source_url"], urls[1]);
    assert!(imports.iter().all(|i| i["status"] == "pending"));
    let id = detail["id"].as_i64().unwrap();
    let read = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(read["image_imports"], detail["image_imports"]);

    let patched =
        json(app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"images": [urls[1]]})).await).await;
    assert_eq!(patched["image_imports"].as_array().unwrap().len(), 1, "images replace the list");
    assert_eq!(patched["image_imports"][0]["source_url"], urls[1]);
    let cleared = json(app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"images": null})).await).await;
    assert_eq!(cleared["image_imports"], json!([]));
}

/// The store reads a listing's images in position order from an ordered subquery rather
/// than sorting in the aggregate (issue 19): rows stored in the reverse of their positions
/// still come back by position.
#[tokio::test]
async fn images_come_back_in_position_order_whatever_order_they_were_stored_in() {
    let app = spawn_app_with(|c| c.photo_jobs_paused = true).await;
    let partner = app.partner("acme").await;
    let urls = ["https://img.example/a.jpg", "https://img.example/b.jpg", "https://img.example/c.jpg"];
    let id = create(&app, &partner.key, listing(json!({"images": urls}))).await["id"].as_i64().unwrap();
    // The first stored row takes the last position, the last the first.
    app.db
        .raw()
        .await
        .execute(&format!("UPDATE listing_images SET position = 10 - position WHERE listing_id = {id}"))
        .await;
    let read = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    let imports = read["image_imports"].as_array().unwrap();
    let order: Vec<(i64, &str)> =
        imports.iter().map(|i| (i["position"].as_i64().unwrap(), i["source_url"].as_str().unwrap())).collect();
    assert_eq!(order, [(8, urls[2]), (9, urls[1]), (10, urls[0])]);
}

#[tokio::test]
async fn descriptions_lose_scripts_styles_handlers_and_javascript_urls() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let description = "<p onmouseover=\"steal()\">Deep <em>seats</em></p><script>steal()</script>\
                       <style>body{}</style><a href=\"javascript:steal()\">more</a>";
    let detail = create(&app, &partner.key, listing(json!({"description": description}))).await;
    let kept = detail["description"].as_str().unwrap();
    assert!(kept.contains("<em>seats</em>"), "{kept}");
    for banned in ["<script", "<style", "onmouseover", "javascript:", "steal"] {
        assert!(!kept.contains(banned), "{banned} survived: {kept}");
    }
}

#[tokio::test]
async fn colour_and_fabric_are_matched_to_the_taxonomy() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let detail = create(&app, &partner.key, listing(json!({"colour": "gray", "fabric": "BOUCLE"}))).await;
    assert_eq!((detail["colour"].as_str(), detail["fabric"].as_str()), (Some("Grey"), Some("Bouclé")));
    let detail = create(&app, &partner.key, listing(json!({"colour": "navy", "fabric": "faux-leather"}))).await;
    assert_eq!((detail["colour"].as_str(), detail["fabric"].as_str()), (Some("Navy"), Some("Faux Leather")));
    let detail = create(&app, &partner.key, listing(json!({"fabric": "microfibre"}))).await;
    assert_eq!(detail["fabric"], "Microfiber");
}

#[tokio::test]
async fn brands_match_existing_names_and_are_created_on_first_use() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let brands = |body: Value| {
        body["brands"].as_array().unwrap().iter().map(|b| b.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let before = brands(json(app.get("/v1/listings/options", &acme.key).await).await);

    let detail = create(&app, &acme.key, listing(json!({"brand": "ikea"}))).await;
    assert_eq!(detail["brand"], "IKEA", "matched to the built-in spelling");
    let detail = create(&app, &acme.key, listing(json!({"brand": "Nordic  Nest"}))).await;
    assert_eq!(detail["brand"], "Nordic Nest");
    let detail = create(&app, &acme.key, listing(json!({"brand": "NORDIC NEST"}))).await;
    assert_eq!(detail["brand"], "Nordic Nest", "matched to the partner's own first spelling");

    let after = brands(json(app.get("/v1/listings/options", &acme.key).await).await);
    assert_eq!(after.len(), before.len() + 1);
    assert!(after.contains(&"Nordic Nest".to_owned()));
    assert_eq!(after.last().unwrap(), "Other");
    let theirs = brands(json(app.get("/v1/listings/options", &other.key).await).await);
    assert!(!theirs.contains(&"Nordic Nest".to_owned()), "a partner's brands are its own");
}

#[tokio::test]
async fn the_price_is_the_sale_price_and_the_payout_follows_it() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let detail = create(
        &app,
        &partner.key,
        listing(json!({"price_gbp": 100, "channel": "clearance", "delivery_contribution_gbp": 30})),
    )
    .await;
    assert_eq!(
        (detail["price"].as_f64(), detail["payout"].as_f64(), detail["payout_pence"].as_i64()),
        (Some(100.0), Some(52.0), Some(5200))
    );
    let detail = create(
        &app,
        &partner.key,
        listing(json!({"price_gbp": 100, "sale_price_gbp": 10, "delivery_contribution_gbp": 129})),
    )
    .await;
    assert_eq!(
        (detail["price_pence"].as_i64(), detail["payout_pence"].as_i64()),
        (Some(1000), Some(0)),
        "never below zero"
    );
}

#[tokio::test]
async fn list_answers_summaries_newest_first_with_meta() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = create_id(&app, &partner.key, json!({})).await;
    let second = create_id(&app, &partner.key, json!({"channel": "clearance", "sale_price_gbp": 400})).await;
    let page = list(&app, &partner.key, "").await;
    assert_eq!(ids(&page), [second, first]);
    assert_eq!(
        page["meta"],
        json!({"paging": "page", "page": 1, "per_page": 20, "total": 2, "total_pages": 1, "total_is_estimate": false, "brand_id": "acme"})
    );
    let summary = page["data"][0].as_object().unwrap();
    let mut keys: Vec<&str> = summary.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "brand_id",
            "category",
            "channel",
            "created_at",
            "currency",
            "deleted_at",
            "id",
            "image_url",
            "payout",
            "payout_pence",
            "price",
            "price_pence",
            "status",
            "title",
            "updated_at",
            "url",
            "view_count"
        ]
    );
    assert_eq!(summary["price"], 400.0);
    assert_eq!(summary["payout_pence"], 40000 - 6000 - 1200);
}

#[tokio::test]
async fn pagination_has_a_last_page_and_empty_pages_beyond_it() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let empty = list(&app, &partner.key, "").await;
    assert_eq!(empty["data"], json!([]));
    assert_eq!((empty["meta"]["total"].as_i64(), empty["meta"]["total_pages"].as_i64()), (Some(0), Some(0)));

    let mut created = Vec::new();
    for _ in 0..5 {
        created.push(create_id(&app, &partner.key, json!({})).await);
    }
    created.reverse();
    let page1 = list(&app, &partner.key, "?per_page=2").await;
    let page2 = list(&app, &partner.key, "?per_page=2&page=2").await;
    let page3 = list(&app, &partner.key, "?per_page=2&page=3").await;
    let page4 = list(&app, &partner.key, "?per_page=2&page=4").await;
    assert_eq!(ids(&page1), created[0..2]);
    assert_eq!(ids(&page2), created[2..4]);
    assert_eq!(ids(&page3), created[4..5], "the last page holds the rest");
    assert_eq!(ids(&page4), Vec::<i64>::new(), "past the end is empty, not an error");
    for page in [&page1, &page4] {
        assert_eq!((page["meta"]["total"].as_i64(), page["meta"]["total_pages"].as_i64()), (Some(5), Some(3)));
    }
    assert_eq!(page4["meta"]["page"], 4);
    let all = list(&app, &partner.key, "?per_page=100").await;
    assert_eq!(ids(&all), created);
    assert_eq!(all["meta"]["total_pages"], 1);
}

#[tokio::test]
async fn list_filters_by_status_and_channel() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let exchange = create_id(&app, &partner.key, json!({})).await;
    let clearance = create_id(&app, &partner.key, json!({"channel": "clearance"})).await;
    let draft = create_id(&app, &partner.key, json!({"status": "draft", "channel": "clearance"})).await;

    assert_eq!(ids(&list(&app, &partner.key, "").await), [clearance, exchange], "active by default");
    assert_eq!(ids(&list(&app, &partner.key, "?status=active").await), [clearance, exchange]);
    assert_eq!(ids(&list(&app, &partner.key, "?status=draft").await), [draft]);
    assert_eq!(ids(&list(&app, &partner.key, "?status=any").await), [draft, clearance, exchange]);
    assert_eq!(ids(&list(&app, &partner.key, "?channel=clearance").await), [clearance]);
    assert_eq!(ids(&list(&app, &partner.key, "?channel=exchange").await), [exchange]);
    let any_clearance = list(&app, &partner.key, "?status=any&channel=clearance").await;
    assert_eq!(ids(&any_clearance), [draft, clearance]);
    assert_eq!(any_clearance["meta"]["total"], 2);
    assert_eq!(list(&app, &partner.key, "?status=draft&channel=exchange").await["meta"]["total"], 0);
}

/// The totals of pages filtered by status alone (or not at all) are read from counts the
/// database keeps as listings are created, change status and are trashed; they must agree
/// with the listings counted one by one (a filter on the channel counts them so).
#[tokio::test]
async fn list_totals_follow_creates_status_changes_and_trash_per_brand() {
    let app = spawn_app().await;
    let (acme, other) = (app.partner("acme").await, app.partner("other").await);
    let totals = |key: String| {
        let app = &app;
        async move {
            let mut totals = Vec::new();
            for query in ["", "?status=draft", "?status=any", "?status=any&channel=exchange"] {
                totals.push(list(app, &key, query).await["meta"]["total"].as_i64().unwrap());
            }
            totals
        }
    };
    let mut acme_ids = Vec::new();
    for changes in [json!({}), json!({}), json!({"status": "draft"})] {
        acme_ids.push(create_id(&app, &acme.key, changes).await);
    }
    create_id(&app, &other.key, json!({})).await;
    assert_eq!(totals(acme.key.clone()).await, [2, 1, 3, 3]);
    assert_eq!(totals(other.key.clone()).await, [1, 0, 1, 1]);

    let draft = format!("/v1/listings/{}", acme_ids[2]);
    assert_eq!(app.patch(&draft, &acme.key, &json!({"status": "active"})).await.status(), 200);
    assert_eq!(totals(acme.key.clone()).await, [3, 0, 3, 3], "a draft made active");
    let first = format!("/v1/listings/{}", acme_ids[0]);
    assert_eq!(app.patch(&first, &acme.key, &json!({"status": "draft"})).await.status(), 200);
    assert_eq!(totals(acme.key.clone()).await, [2, 1, 3, 3], "an active listing made a draft");
    assert_eq!(app.delete(&first, &acme.key).await.status(), 200);
    assert_eq!(totals(acme.key.clone()).await, [2, 0, 2, 2], "a draft trashed");
    assert_eq!(app.delete(&draft, &acme.key).await.status(), 200);
    assert_eq!(totals(acme.key.clone()).await, [1, 0, 1, 1], "an active listing trashed");
    assert_eq!(totals(other.key.clone()).await, [1, 0, 1, 1], "another brand's counts untouched");
}

#[tokio::test]
async fn bad_list_parameters_are_validation_failed() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let cases = [
        ("?page=0", "page_invalid"),
        ("?page=abc", "page_invalid"),
        ("?page=-2", "page_invalid"),
        ("?per_page=0", "per_page_invalid"),
        ("?per_page=101", "per_page_invalid"),
        ("?status=closed", "status_invalid"),
        ("?status=ACTIVE", "status_invalid"),
        ("?channel=both", "channel_invalid"),
        ("?channel=", "channel_invalid"),
        ("?page=0&per_page=500&status=x&channel=y", "page_invalid, per_page_invalid, status_invalid, channel_invalid"),
    ];
    for (query, message) in cases {
        let response = app.get(&format!("/v1/listings{query}"), &partner.key).await;
        let error = assert_error(response, 400, "validation_failed").await;
        assert_eq!(error["message"], message, "for {query}");
    }
}

#[tokio::test]
async fn bodies_that_are_not_json_objects_are_refused() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let send = |method: Method, path: String, content_type: &'static str, body: &'static str| {
        app.request(method, &path, &partner.key).header("content-type", content_type).body(body).send()
    };
    for (method, path) in [
        (Method::POST, "/v1/listings".to_owned()),
        (Method::PATCH, format!("/v1/listings/{id}")),
        (Method::POST, "/v1/listings/bulk-delete".to_owned()),
    ] {
        let malformed = send(method.clone(), path.clone(), "application/json", "{\"title\": ").await.unwrap();
        assert_error(malformed, 400, "invalid_body").await;
        let array = send(method.clone(), path.clone(), "application/json", "[1]").await.unwrap();
        assert_error(array, 400, "invalid_body").await;
        let text = send(method.clone(), path.clone(), "text/plain", "title=x").await.unwrap();
        assert_error(text, 415, "unsupported_media_type").await;
    }
}

#[tokio::test]
async fn listing_endpoints_need_a_partner_admin_key_with_the_right_scope() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let (_, member) = app.user(&partner, "Mem Ber", Role::Member).await;
    let read_only = app.key(partner.user_id, "read", None, None).await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let path = format!("/v1/listings/{id}");

    assert_error(app.get("/v1/listings", "").await, 401, "missing_bearer_token").await;
    assert_error(app.post("/v1/listings", "rhk_nonsense", &listing(json!({}))).await, 401, "invalid_token").await;
    assert_error(app.get(&path, &member).await, 403, "forbidden").await;
    assert_error(app.post("/v1/listings", &member, &listing(json!({}))).await, 403, "forbidden").await;
    assert_eq!(app.get(&path, &read_only).await.status(), 200);
    assert_error(app.post("/v1/listings", &read_only, &listing(json!({}))).await, 403, "forbidden").await;
    assert_error(app.patch(&path, &read_only, &json!({"title": "x"})).await, 403, "forbidden").await;
    assert_error(app.delete(&path, &read_only).await, 403, "forbidden").await;
    assert_error(app.post("/v1/listings/bulk-delete", &read_only, &json!({"ids": [id]})).await, 403, "forbidden").await;
}

#[tokio::test]
async fn listing_routes_answer_json_for_wrong_methods() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    assert_error(app.get("/v1/listings/bulk-delete", &partner.key).await, 405, "method_not_allowed").await;
    assert_error(
        app.request(Method::PUT, "/v1/listings/1", &partner.key).send().await.unwrap(),
        405,
        "method_not_allowed",
    )
    .await;
    assert_eq!(app.get("/v1/listings/options", &partner.key).await.status(), 200, "options is not a listing id");
}

#[tokio::test]
async fn the_openapi_document_describes_every_listing_operation() {
    let app = spawn_app().await;
    let doc = json(app.get("/v1/openapi.json", "").await).await;
    let paths = &doc["paths"];
    for (path, method) in [
        ("/v1/listings", "get"),
        ("/v1/listings", "post"),
        ("/v1/listings/{id}", "get"),
        ("/v1/listings/{id}", "patch"),
        ("/v1/listings/{id}", "delete"),
        ("/v1/listings/bulk-delete", "post"),
    ] {
        assert!(paths[path][method].is_object(), "{method} {path} missing");
    }
    assert!(paths["/v1/listings/{id}"]["patch"]["responses"]["403"].is_object());
    assert!(doc.pointer("/components/schemas/ListingDetail").is_some());
}
