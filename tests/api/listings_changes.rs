//! Changing listings over real HTTP: PATCH, soft delete and bulk delete, with isolation
//! between brands and ownership between users of one brand.

use rehome::domain::user::Role;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app};
use crate::listings::{create, create_id, ids, list, listing, warehouse};

#[tokio::test]
async fn another_brand_cannot_see_or_touch_a_listing() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let id = create_id(&app, &acme.key, json!({})).await;
    let path = format!("/v1/listings/{id}");

    assert_eq!(list(&app, &other.key, "?status=any").await["meta"]["total"], 0);
    assert_error(app.get(&path, &other.key).await, 404, "listing_not_found").await;
    assert_error(app.patch(&path, &other.key, &json!({"title": "Mine now"})).await, 404, "listing_not_found").await;
    assert_error(app.patch(&path, &other.key, &json!({})).await, 404, "listing_not_found").await;
    assert_error(app.delete(&path, &other.key).await, 404, "listing_not_found").await;
    let bulk = json(app.post("/v1/listings/bulk-delete", &other.key, &json!({"ids": [id]})).await).await;
    assert_eq!(bulk["results"], json!([{"id": id, "ok": false, "errors": ["listing_not_found"]}]));

    let still = json(app.get(&path, &acme.key).await).await;
    assert_eq!(still["title"], "Oak frame sofa");
}

#[tokio::test]
async fn another_user_of_the_brand_may_read_but_not_change_a_listing() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (_, colleague) = app.user(&acme, "Cole League", Role::Admin).await;
    let id = create_id(&app, &acme.key, json!({})).await;
    let path = format!("/v1/listings/{id}");

    assert_eq!(ids(&list(&app, &colleague, "").await), [id]);
    let detail = json(app.get(&path, &colleague).await).await;
    assert_eq!(detail["seller"], json!({"id": acme.user_id, "display_name": "Ada Admin"}));
    assert_error(app.delete(&path, &colleague).await, 403, "forbidden_not_owner").await;
    assert_eq!(app.get(&path, &acme.key).await.status(), 200, "still there");
}

#[tokio::test]
async fn patch_by_another_user_is_forbidden_not_owner() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let (_, colleague) = app.user(&acme, "Cole League", Role::Admin).await;
    let id = create_id(&app, &acme.key, json!({})).await;
    let response = app.patch(&format!("/v1/listings/{id}"), &colleague, &json!({"title": "Taken"})).await;
    assert_error(response, 403, "forbidden_not_owner").await;
}

#[tokio::test]
async fn patch_changes_only_the_given_fields() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let created = create(
        &app,
        &partner.key,
        listing(json!({"brand": "Loaf", "sku": "A-1", "channel": "clearance", "quantity": 2})),
    )
    .await;
    let id = created["id"].as_i64().unwrap();
    let response = app
        .patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"title": "Renamed", "quantity": 7, "sku": null}))
        .await;
    assert_eq!(response.status(), 200);
    let patched = json(response).await;
    assert_eq!(patched["title"], "Renamed");
    assert_eq!(patched["quantity"], 7);
    assert_eq!(patched["sku"], "", "null clears");
    assert_eq!(patched["brand"], "Loaf");
    assert_eq!(patched["created_at"], created["created_at"]);
    assert!(patched["updated_at"].as_str() > created["updated_at"].as_str());
    assert_eq!(json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await, patched);
}

#[tokio::test]
async fn patch_can_set_status_draft_and_back() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let path = format!("/v1/listings/{id}");
    assert_eq!(json(app.patch(&path, &partner.key, &json!({"status": "draft"})).await).await["status"], "draft");
    assert_eq!(ids(&list(&app, &partner.key, "").await), Vec::<i64>::new());
    assert_eq!(json(app.patch(&path, &partner.key, &json!({"status": "active"})).await).await["status"], "active");
    let error =
        assert_error(app.patch(&path, &partner.key, &json!({"status": "closed"})).await, 400, "validation_failed")
            .await;
    assert_eq!(error["message"], "status_invalid");
}

#[tokio::test]
async fn patch_with_an_empty_object_is_no_fields() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({})).await;
    assert_error(app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({})).await, 400, "no_fields").await;
}

#[tokio::test]
async fn patch_validates_the_merged_listing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"channel": "clearance", "quantity": 4, "sale_price_gbp": 300})).await;
    let path = format!("/v1/listings/{id}");
    let cases = [
        (json!({"channel": "exchange"}), "quantity_invalid"),
        (json!({"price_gbp": 250}), "sale_price_gbp_invalid"),
        (json!({"title": null}), "title_required"),
        (json!({"faults": []}), "faults_required"),
        (json!({"id": 3}), "id_unknown"),
        (json!({"quantity": "three"}), "quantity_invalid"),
    ];
    for (patch, message) in cases {
        let error = assert_error(app.patch(&path, &partner.key, &patch).await, 400, "validation_failed").await;
        assert_eq!(error["message"], message, "for {patch}");
    }
    let unchanged = json(app.get(&path, &partner.key).await).await;
    assert_eq!((unchanged["channel"].as_str(), unchanged["quantity"].as_i64()), (Some("clearance"), Some(4)));
    let both = json(app.patch(&path, &partner.key, &json!({"channel": "exchange", "quantity": 1})).await).await;
    assert_eq!((both["channel"].as_str(), both["quantity"].as_i64()), (Some("exchange"), Some(1)));
}

#[tokio::test]
async fn patch_of_a_missing_listing_is_listing_not_found() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for path in ["/v1/listings/42", "/v1/listings/x"] {
        assert_error(app.patch(path, &partner.key, &json!({"title": "x"})).await, 404, "listing_not_found").await;
    }
}

#[tokio::test]
async fn patch_can_move_a_listing_to_another_warehouse_of_the_brand() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let main = warehouse(&app, &partner, "Main").await;
    let other = warehouse(&app, &partner, "Other").await;
    let detail = create(&app, &partner.key, listing(json!({}))).await;
    assert_eq!(detail["warehouse_id"], main);
    let path = format!("/v1/listings/{}", detail["id"]);
    assert_eq!(
        json(app.patch(&path, &partner.key, &json!({"warehouse_id": other})).await).await["warehouse_id"],
        other
    );
    let bad = json!({"warehouse_id": "00000000-0000-4000-8000-000000000000"});
    let error = assert_error(app.patch(&path, &partner.key, &bad).await, 400, "validation_failed").await;
    assert_eq!(error["message"], "warehouse_id_invalid");
}

#[tokio::test]
async fn delete_trashes_the_listing_everywhere() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let kept = create_id(&app, &partner.key, json!({})).await;
    let id = create_id(&app, &partner.key, json!({})).await;
    let path = format!("/v1/listings/{id}");
    let response = app.delete(&path, &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await, json!({"deleted": true, "id": id}));

    assert_error(app.get(&path, &partner.key).await, 404, "listing_not_found").await;
    assert_error(app.patch(&path, &partner.key, &json!({"title": "Back"})).await, 404, "listing_not_found").await;
    assert_error(app.delete(&path, &partner.key).await, 404, "listing_not_found").await;
    let page = list(&app, &partner.key, "?status=any").await;
    assert_eq!(ids(&page), [kept]);
    assert_eq!(page["meta"]["total"], 1);
}

#[tokio::test]
async fn bulk_delete_reports_each_id() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    let (_, colleague) = app.user(&acme, "Cole League", Role::Admin).await;
    let mine_a = create_id(&app, &acme.key, json!({})).await;
    let mine_b = create_id(&app, &acme.key, json!({"status": "draft"})).await;
    let colleagues = create_id(&app, &colleague, json!({})).await;
    let theirs = create_id(&app, &other.key, json!({})).await;
    let trashed = create_id(&app, &acme.key, json!({})).await;
    assert_eq!(app.delete(&format!("/v1/listings/{trashed}"), &acme.key).await.status(), 200);

    let body = json!({"ids": [mine_a, colleagues, theirs, 999_999, mine_b, trashed, mine_a]});
    let response = app.post("/v1/listings/bulk-delete", &acme.key, &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        json(response).await,
        json!({
            "success_count": 2,
            "error_count": 4,
            "results": [
                {"id": mine_a, "ok": true},
                {"id": colleagues, "ok": false, "errors": ["forbidden_not_owner"]},
                {"id": theirs, "ok": false, "errors": ["listing_not_found"]},
                {"id": 999_999, "ok": false, "errors": ["listing_not_found"]},
                {"id": mine_b, "ok": true},
                {"id": trashed, "ok": false, "errors": ["listing_not_found"]},
            ],
        })
    );
    assert_eq!(ids(&list(&app, &acme.key, "?status=any").await), [colleagues]);
    assert_eq!(app.get(&format!("/v1/listings/{theirs}"), &other.key).await.status(), 200);
}

#[tokio::test]
async fn bulk_delete_refuses_missing_empty_too_many_and_malformed_ids() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let post = |body: Value| {
        let request = app.request(Method::POST, "/v1/listings/bulk-delete", &partner.key).json(&body);
        async move { request.send().await.unwrap() }
    };
    assert_error(post(json!({})).await, 400, "no_ids").await;
    assert_error(post(json!({"ids": []})).await, 400, "no_ids").await;
    assert_error(post(json!({"ids": null})).await, 400, "no_ids").await;
    assert_error(post(json!({"ids": (1..=101).collect::<Vec<_>>()})).await, 400, "too_many").await;
    let body = json(post(json!({"ids": (1..=100).collect::<Vec<_>>()})).await).await;
    assert_eq!(body["error_count"], 100, "100 ids are allowed");
    for bad in [json!({"ids": ["1"]}), json!({"ids": [1.5]}), json!({"ids": "1,2"}), json!({"ids": [{"id": 1}]})] {
        let error = assert_error(post(bad).await, 400, "validation_failed").await;
        assert_eq!(error["message"], "ids_invalid");
    }
    let error = assert_error(post(json!({"ids": [1], "all": true})).await, 400, "validation_failed").await;
    assert_eq!(error["message"], "all_unknown");
}
