//! Optimistic concurrency (decisions 11.5): the listing detail and the settings GETs answer
//! an `ETag`; a PATCH whose `If-Match` no longer matches answers 412 `precondition_failed`
//! and changes nothing; a matching one answers the new tag.

use reqwest::{Method, Response};
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app, Partner, TestApp};
use crate::listings::create_id;

fn etag(response: &Response) -> String {
    response.headers().get("etag").and_then(|v| v.to_str().ok()).expect("an ETag").to_owned()
}

async fn patch_if(app: &TestApp, partner: &Partner, path: &str, tag: &str, body: &Value) -> Response {
    app.request(Method::PATCH, path, &partner.key).header("If-Match", tag).json(body).send().await.unwrap()
}

#[tokio::test]
async fn a_listing_patch_with_a_stale_tag_changes_nothing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"title": "Oak sofa"})).await;
    let path = format!("/v1/listings/{id}");
    let read = app.get(&path, &partner.key).await;
    let first = etag(&read);
    assert_eq!(first, "\"v1\"");

    let changed = patch_if(&app, &partner, &path, &first, &json!({"title": "Oak sofa, reupholstered"})).await;
    assert_eq!(changed.status(), 200);
    let second = etag(&changed);
    assert_ne!(second, first);
    assert_eq!(etag(&app.get(&path, &partner.key).await), second, "the PATCH answers the tag a GET then shows");

    let stale = patch_if(&app, &partner, &path, &first, &json!({"title": "Lost update"})).await;
    assert_error(stale, 412, "precondition_failed").await;
    let now = json(app.get(&path, &partner.key).await).await;
    assert_eq!(now["title"], "Oak sofa, reupholstered");

    let listed = format!("\"v0\", {second}");
    let changed = patch_if(&app, &partner, &path, &listed, &json!({"title": "Oak sofa, relisted"})).await;
    assert_eq!(changed.status(), 200, "one of the listed tags matches");
    let any = patch_if(&app, &partner, &path, "*", &json!({"title": "Oak sofa, any version"})).await;
    assert_eq!(any.status(), 200, "* matches any version");
    let weak = patch_if(
        &app,
        &partner,
        &path,
        &format!("W/{}", etag(&app.get(&path, &partner.key).await)),
        &json!({"title": "Weak"}),
    )
    .await;
    assert_error(weak, 412, "precondition_failed").await;
    // Without If-Match nothing is checked.
    assert_eq!(app.patch(&path, &partner.key, &json!({"title": "Unconditional"})).await.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn two_patches_with_the_same_tag_at_once_one_wins_one_is_refused() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for round in 0..5 {
        let id = create_id(&app, &partner.key, json!({})).await;
        let path = format!("/v1/listings/{id}");
        let tag = etag(&app.get(&path, &partner.key).await);
        let (edit_a, edit_b) = (json!({"title": "Edit A"}), json!({"title": "Edit B"}));
        let a = patch_if(&app, &partner, &path, &tag, &edit_a);
        let b = patch_if(&app, &partner, &path, &tag, &edit_b);
        let (a, b) = tokio::join!(a, b);
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 412], "round {round}");
    }
    app.stop().await;
}

#[tokio::test]
async fn settings_sections_are_tagged_and_a_stale_patch_changes_nothing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (path, change, lost) in [
        ("/v1/partner/settings/brand", json!({"display_name": "Acme"}), json!({"display_name": "Lost"})),
        ("/v1/partner/settings/billing", json!({"company_name": "Acme Ltd"}), json!({"company_name": "Lost"})),
        ("/v1/partner/settings/payouts", json!({"credit_boost_percent": 110}), json!({"credit_boost_percent": 150})),
    ] {
        let read = app.get(path, &partner.key).await;
        let first = etag(&read);
        let before = json(read).await;
        assert_eq!(etag(&app.get(path, &partner.key).await), first, "{path}: the tag is stable");

        let changed = patch_if(&app, &partner, path, &first, &change).await;
        assert_eq!(changed.status(), 200, "{path}");
        let second = etag(&changed);
        assert_ne!(second, first, "{path}");
        assert_eq!(etag(&app.get(path, &partner.key).await), second, "{path}");

        assert_error(patch_if(&app, &partner, path, &first, &lost).await, 412, "precondition_failed").await;
        let after = json(app.get(path, &partner.key).await).await;
        assert_ne!(after, before, "{path}: the first change stands");
        assert_eq!(etag(&app.get(path, &partner.key).await), second, "{path}: the refused change changed nothing");
    }
    app.stop().await;
}

/// The condition is checked in the transaction of the write: of eight PATCHes of a settings
/// section sent at once with the tag read before, exactly one is applied.
#[tokio::test]
async fn settings_patches_with_the_same_tag_at_once_apply_once() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (path, field) in [
        ("/v1/partner/settings/brand", "display_name"),
        ("/v1/partner/settings/billing", "company_name"),
        ("/v1/partner/settings/payouts", "credit_boost_percent"),
    ] {
        let tag = etag(&app.get(path, &partner.key).await);
        let patches: Vec<_> = (0..8)
            .map(|n| {
                let value = if field == "credit_boost_percent" { json!(101 + n) } else { json!(format!("Name {n}")) };
                let request = app
                    .request(Method::PATCH, path, &partner.key)
                    .header("If-Match", &tag)
                    .json(&json!({ field: value }));
                tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
            })
            .collect();
        let mut statuses = Vec::new();
        for patch in patches {
            statuses.push(patch.await.unwrap());
        }
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 412, 412, 412, 412, 412, 412, 412], "{path}");
    }
    let log = json(app.get("/v1/partner/audit-log?limit=100", &partner.key).await).await;
    let changes = log["data"].as_array().unwrap().iter().filter(|e| e["action"] == "settings.updated").count();
    assert_eq!(changes, 3, "one audit entry per applied change: {log}");
    app.stop().await;
}

/// Two admins editing the webhook endpoint do not overwrite each other (decisions 11.5):
/// its GET answers an `ETag`, a PATCH with a stale one changes nothing, and a PATCH
/// answers the tag a GET then shows, from the first change on.
#[tokio::test]
async fn a_webhook_patch_with_a_stale_tag_changes_nothing() {
    let app = crate::webhooks::webhook_app(|_| {}).await;
    let partner = app.partner("acme").await;
    let path = "/v1/partner/settings/integrations/webhook";
    let unset = etag(&app.get(path, &partner.key).await);

    let created = patch_if(&app, &partner, path, &unset, &json!({"url": "http://127.0.0.1:9/first"})).await;
    assert_eq!(created.status(), 200);
    let first = etag(&created);
    assert_ne!(first, unset);
    assert_eq!(etag(&app.get(path, &partner.key).await), first, "the PATCH answers the tag a GET then shows");

    let again = patch_if(&app, &partner, path, &unset, &json!({"url": "http://127.0.0.1:9/lost"})).await;
    assert_error(again, 412, "precondition_failed").await;
    let changed = patch_if(&app, &partner, path, &first, &json!({"url": "http://127.0.0.1:9/second"})).await;
    assert_eq!(changed.status(), 200);
    let stale = patch_if(&app, &partner, path, &first, &json!({"enabled": false})).await;
    assert_error(stale, 412, "precondition_failed").await;

    let now = json(app.get(path, &partner.key).await).await;
    assert_eq!((now["url"].as_str(), now["enabled"].as_bool()), (Some("http://127.0.0.1:9/second"), Some(true)));
    let any = patch_if(&app, &partner, path, "*", &json!({"enabled": false})).await;
    assert_eq!(any.status(), 200, "`*` matches any");
}

async fn get_if_none_match(app: &TestApp, partner: &Partner, path: &str, tags: &str) -> Response {
    app.request(Method::GET, path, &partner.key).header("If-None-Match", tags).send().await.unwrap()
}

#[tokio::test]
async fn a_listing_read_that_names_its_current_tag_answers_304_without_a_body() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_id(&app, &partner.key, json!({"title": "Oak sofa"})).await;
    let path = format!("/v1/listings/{id}");
    let tag = etag(&app.get(&path, &partner.key).await);
    for header in [tag.clone(), format!("W/{tag}"), format!("\"v0\", {tag}"), "*".to_owned()] {
        let answer = get_if_none_match(&app, &partner, &path, &header).await;
        assert_eq!(answer.status(), 304, "{header}");
        assert_eq!(etag(&answer), tag, "a 304 carries the tag");
        assert!(answer.headers().contains_key("x-ratelimit-remaining"), "{:?}", answer.headers());
        assert_eq!(answer.headers().get("content-type"), None);
        assert_eq!(answer.bytes().await.unwrap().len(), 0);
    }
    // Another tag, or a changed listing: the whole answer.
    assert_eq!(get_if_none_match(&app, &partner, &path, "\"v0\"").await.status(), 200);
    let changed = patch_if(&app, &partner, &path, &tag, &json!({"title": "Oak sofa, reupholstered"})).await;
    assert_eq!(changed.status(), 200);
    let fresh = get_if_none_match(&app, &partner, &path, &tag).await;
    assert_eq!(fresh.status(), 200);
    assert_eq!(json(fresh).await["title"], "Oak sofa, reupholstered");
    // A refusal is never turned into a 304.
    let other = app.partner("other").await;
    assert_eq!(get_if_none_match(&app, &other, &path, "*").await.status(), 404);
}

#[tokio::test]
async fn the_settings_reads_answer_304_to_their_current_tag_too() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for path in [
        "/v1/partner/settings/brand",
        "/v1/partner/settings/billing",
        "/v1/partner/settings/integrations/webhook",
        "/v1/partner/settings/payouts",
    ] {
        let read = app.get(path, &partner.key).await;
        assert_eq!(read.status(), 200, "{path}");
        let tag = etag(&read);
        assert_eq!(get_if_none_match(&app, &partner, path, &tag).await.status(), 304, "{path}");
    }
}
