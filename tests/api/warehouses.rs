//! The warehouse address book and its one default: `/v1/partner/settings/warehouses`.

use rehome::domain::user::Role;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json, spawn_app, Partner, TestApp};

const WAREHOUSES: &str = "/v1/partner/settings/warehouses";
const UNKNOWN_ID: &str = "4f1c2a57-3b0e-4d6a-9a43-8d2c1e5f7b90";

fn one(id: &str) -> String {
    format!("{WAREHOUSES}/{id}")
}

fn set_default_path(id: &str) -> String {
    format!("{WAREHOUSES}/{id}/set-default")
}

async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let response = app.post(WAREHOUSES, key, &body).await;
    let status = response.status();
    let answer = json(response).await;
    assert_eq!(status, 201, "{body} -> {answer}");
    answer["warehouse"].clone()
}

async fn create_labelled(app: &TestApp, partner: &Partner, label: &str) -> String {
    create(app, &partner.key, json!({ "label": label })).await["id"].as_str().unwrap().to_owned()
}

async fn list(app: &TestApp, key: &str) -> Vec<Value> {
    let response = app.get(WAREHOUSES, key).await;
    assert_eq!(response.status(), 200);
    json(response).await["warehouses"].as_array().unwrap().clone()
}

/// The ids of the warehouses flagged default.
fn defaults(warehouses: &[Value]) -> Vec<String> {
    warehouses.iter().filter(|w| w["is_default"] == true).map(|w| w["id"].as_str().unwrap().to_owned()).collect()
}

fn labels(warehouses: &[Value]) -> Vec<&str> {
    warehouses.iter().map(|w| w["label"].as_str().unwrap()).collect()
}

async fn default_label(app: &TestApp, partner: &Partner) -> String {
    let warehouses = list(app, &partner.key).await;
    let ids = defaults(&warehouses);
    assert_eq!(ids.len(), 1, "exactly one default in {warehouses:?}");
    warehouses.iter().find(|w| w["id"] == ids[0]).unwrap()["label"].as_str().unwrap().to_owned()
}

async fn fails(response: reqwest::Response, codes: &[&str]) {
    let answer = assert_error(response, 400, "validation_failed").await;
    assert_eq!(answer["message"], codes.join(", "));
    let listed: Vec<&str> = answer["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(listed, codes);
}

#[tokio::test]
async fn a_brand_without_warehouses_lists_none() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let body = json(app.get(WAREHOUSES, &partner.key).await).await;
    assert_eq!(body, json!({"brand_id": "acme", "warehouses": []}));
}

#[tokio::test]
async fn create_answers_201_with_the_whole_warehouse() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let response = app
        .post(
            WAREHOUSES,
            &partner.key,
            &json!({
                "label": " Leeds DC ",
                "contact_name": "Sam Yard",
                "contact_email": "Yard@Acme.Example",
                "contact_phone": "0113 496 0000",
                "address_1": "Unit 4, Ring Road",
                "address_2": "",
                "city": "Leeds",
                "postcode": "LS1 4AP",
            }),
        )
        .await;
    assert_eq!(response.status(), 201);
    let body = json(response).await;
    assert_eq!(body["brand_id"], "acme");
    let w = &body["warehouse"];
    let id = w["id"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 4);
    assert_eq!(w["label"], "Leeds DC");
    assert_eq!(w["contact_email"], "Yard@acme.example");
    assert_eq!(w["country"], "United Kingdom");
    assert_eq!(w["address_2"], "");
    assert_eq!(w["is_default"], true);
    assert!(w["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(list(&app, &partner.key).await, vec![w.clone()]);
}

#[tokio::test]
async fn the_first_warehouse_becomes_the_default_even_when_asked_not_to() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = create(&app, &partner.key, json!({"label": "First", "is_default": false})).await;
    assert_eq!(first["is_default"], true);
}

#[tokio::test]
async fn a_later_warehouse_is_an_alternate_unless_asked() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    create_labelled(&app, &partner, "First").await;
    let second = create(&app, &partner.key, json!({"label": "Second"})).await;
    assert_eq!(second["is_default"], false);
    let third = create(&app, &partner.key, json!({"label": "Third", "is_default": false})).await;
    assert_eq!(third["is_default"], false);
    assert_eq!(default_label(&app, &partner).await, "First");
    assert_eq!(labels(&list(&app, &partner.key).await), ["First", "Second", "Third"]);
}

#[tokio::test]
async fn creating_with_is_default_true_demotes_the_previous_default() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    create_labelled(&app, &partner, "First").await;
    let second = create(&app, &partner.key, json!({"label": "Second", "is_default": true})).await;
    assert_eq!(second["is_default"], true);
    assert_eq!(default_label(&app, &partner).await, "Second");
}

#[tokio::test]
async fn patching_is_default_true_demotes_the_previous_default() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    create_labelled(&app, &partner, "First").await;
    let second = create_labelled(&app, &partner, "Second").await;
    let response = app.patch(&one(&second), &partner.key, &json!({"is_default": true})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await["warehouse"]["is_default"], true);
    assert_eq!(default_label(&app, &partner).await, "Second");
    // Asking again changes nothing.
    let response = app.patch(&one(&second), &partner.key, &json!({"is_default": true})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(default_label(&app, &partner).await, "Second");
}

#[tokio::test]
async fn patching_is_default_false_on_the_default_is_is_default_invalid() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = create_labelled(&app, &partner, "First").await;
    let second = create_labelled(&app, &partner, "Second").await;
    fails(app.patch(&one(&first), &partner.key, &json!({"is_default": false})).await, &["is_default_invalid"]).await;
    assert_eq!(default_label(&app, &partner).await, "First");
    // On an alternate it is already so.
    let response = app.patch(&one(&second), &partner.key, &json!({"is_default": false, "city": "York"})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await["warehouse"]["is_default"], false);
    assert_eq!(default_label(&app, &partner).await, "First");
}

#[tokio::test]
async fn set_default_promotes_and_answers_the_full_list() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = create_labelled(&app, &partner, "First").await;
    let second = create_labelled(&app, &partner, "Second").await;
    create_labelled(&app, &partner, "Third").await;
    let response = app.request(Method::POST, &set_default_path(&second), &partner.key).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body = json(response).await;
    assert_eq!(body["brand_id"], "acme");
    let warehouses = body["warehouses"].as_array().unwrap();
    assert_eq!(labels(warehouses), ["First", "Second", "Third"]);
    assert_eq!(defaults(warehouses), std::slice::from_ref(&second));
    assert_eq!(list(&app, &partner.key).await, *warehouses);

    // On the current default it changes nothing.
    let body = json(app.post(&set_default_path(&second), &partner.key, &json!({})).await).await;
    assert_eq!(defaults(body["warehouses"].as_array().unwrap()), [second]);
    let body = json(app.post(&set_default_path(&first), &partner.key, &json!({})).await).await;
    assert_eq!(defaults(body["warehouses"].as_array().unwrap()), [first]);
}

#[tokio::test]
async fn deleting_the_default_promotes_the_first_remaining_by_creation_order() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = create_labelled(&app, &partner, "First").await;
    create_labelled(&app, &partner, "Second").await;
    let third = create_labelled(&app, &partner, "Third").await;
    app.post(&set_default_path(&third), &partner.key, &json!({})).await;

    let response = app.delete(&one(&third), &partner.key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await, json!({"deleted": true, "id": third}));
    assert_eq!(default_label(&app, &partner).await, "First");

    app.delete(&one(&first), &partner.key).await;
    assert_eq!(default_label(&app, &partner).await, "Second");
}

#[tokio::test]
async fn deleting_an_alternate_keeps_the_default() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    create_labelled(&app, &partner, "First").await;
    let second = create_labelled(&app, &partner, "Second").await;
    assert_eq!(app.delete(&one(&second), &partner.key).await.status(), 200);
    assert_eq!(default_label(&app, &partner).await, "First");
    assert_eq!(list(&app, &partner.key).await.len(), 1);
}

#[tokio::test]
async fn deleting_the_last_warehouse_empties_the_book_and_the_next_one_is_default() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let only = create_labelled(&app, &partner, "Only").await;
    assert_eq!(app.delete(&one(&only), &partner.key).await.status(), 200);
    assert!(list(&app, &partner.key).await.is_empty());
    assert_eq!(app.store.default_warehouse_id(partner.brand_id).await.unwrap(), None);
    let next = create(&app, &partner.key, json!({"label": "Next"})).await;
    assert_eq!(next["is_default"], true);
    assert_eq!(app.store.default_warehouse_id(partner.brand_id).await.unwrap().as_deref(), next["id"].as_str());
    assert_error(app.delete(&one(&only), &partner.key).await, 404, "warehouse_not_found").await;
}

#[tokio::test]
async fn a_patch_changes_only_the_fields_given() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let created = create(
        &app,
        &partner.key,
        json!({"label": "Leeds", "city": "Leeds", "address_2": "Bay 3", "contact_email": "yard@acme.example"}),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let response = app.patch(&one(id), &partner.key, &json!({"city": "York", "address_2": "", "country": "GB"})).await;
    assert_eq!(response.status(), 200);
    let w = json(response).await["warehouse"].clone();
    assert_eq!(w["label"], "Leeds");
    assert_eq!(w["city"], "York");
    assert_eq!(w["address_2"], "");
    assert_eq!(w["country"], "United Kingdom");
    assert_eq!(w["contact_email"], "yard@acme.example");
    assert_eq!(w["is_default"], true);
    assert_eq!(w["created_at"], created["created_at"]);
    assert_eq!(list(&app, &partner.key).await, vec![w.clone()]);

    let unchanged = json(app.patch(&one(id), &partner.key, &json!({})).await).await;
    assert_eq!(unchanged["warehouse"]["city"], "York");
}

#[tokio::test]
async fn each_warehouse_field_has_its_reason() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_labelled(&app, &partner, "Main").await;
    let create_cases = [
        (json!({}), "label_required"),
        (json!({"label": ""}), "label_required"),
        (json!({"label": "   "}), "label_required"),
        (json!({"label": 9}), "label_invalid"),
        (json!({"label": "x".repeat(81)}), "label_too_long"),
        (json!({"label": "A", "contact_email": "yard"}), "contact_email_invalid"),
        (json!({"label": "A", "contact_phone": "ask at gate"}), "contact_phone_invalid"),
        (json!({"label": "A", "contact_name": "x".repeat(121)}), "contact_name_too_long"),
        (json!({"label": "A", "address_1": "x".repeat(161)}), "address_1_too_long"),
        (json!({"label": "A", "city": 5}), "city_invalid"),
        (json!({"label": "A", "postcode": "x".repeat(17)}), "postcode_too_long"),
        (json!({"label": "A", "country": ["UK"]}), "country_invalid"),
        (json!({"label": "A", "is_default": "true"}), "is_default_invalid"),
        (json!({"label": "A", "is_default": 1}), "is_default_invalid"),
        (json!({"label": "A", "bay": "4"}), "bay_unknown"),
    ];
    for (body, code) in create_cases {
        fails(app.post(WAREHOUSES, &partner.key, &body).await, &[code]).await;
    }
    let patch_cases = [
        (json!({"label": ""}), "label_required"),
        (json!({"label": null}), "label_required"),
        (json!({"contact_email": "yard@"}), "contact_email_invalid"),
        (json!({"is_default": null}), "is_default_invalid"),
        (json!({"id": "x"}), "id_unknown"),
    ];
    for (body, code) in patch_cases {
        fails(app.patch(&one(&id), &partner.key, &body).await, &[code]).await;
    }
    fails(
        app.post(WAREHOUSES, &partner.key, &json!({"contact_email": "nope", "is_default": "yes"})).await,
        &["contact_email_invalid", "is_default_invalid", "label_required"],
    )
    .await;
    assert_eq!(labels(&list(&app, &partner.key).await), ["Main"]);
}

#[tokio::test]
async fn bodies_that_are_not_json_objects_are_invalid_body() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_labelled(&app, &partner, "Main").await;
    for (method, path) in [(Method::POST, WAREHOUSES.to_owned()), (Method::PATCH, one(&id))] {
        for raw in ["[{\"label\": \"A\"}]", "\"A\"", "{\"label\": ", "null", "true"] {
            let response = app
                .request(method.clone(), &path, &partner.key)
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await
                .unwrap();
            assert_error(response, 400, "invalid_body").await;
        }
    }
}

#[tokio::test]
async fn every_id_endpoint_answers_warehouse_not_found_for_unknown_malformed_and_foreign_ids() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let other = app.partner("other").await;
    let foreign = create_labelled(&app, &other, "Theirs").await;
    create_labelled(&app, &partner, "Mine").await;
    for id in [UNKNOWN_ID, "not-a-uuid", "42", foreign.as_str(), "%FF%FE"] {
        let patch = app.patch(&one(id), &partner.key, &json!({"label": "Hijack"})).await;
        assert_error(patch, 404, "warehouse_not_found").await;
        assert_error(app.delete(&one(id), &partner.key).await, 404, "warehouse_not_found").await;
        let set_default = app.post(&set_default_path(id), &partner.key, &json!({})).await;
        assert_error(set_default, 404, "warehouse_not_found").await;
    }
    let theirs = list(&app, &other.key).await;
    assert_eq!(labels(&theirs), ["Theirs"]);
    assert_eq!(defaults(&theirs), [foreign]);
    assert_eq!(labels(&list(&app, &partner.key).await), ["Mine"]);
}

#[tokio::test]
async fn an_upper_case_id_names_the_same_warehouse() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_labelled(&app, &partner, "Main").await;
    let response = app.patch(&one(&id.to_uppercase()), &partner.key, &json!({"city": "Hull"})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await["warehouse"]["id"], id);
}

#[tokio::test]
async fn each_brand_sees_and_changes_only_its_own_warehouses() {
    let app = spawn_app().await;
    let acme = app.partner("acme").await;
    let other = app.partner("other").await;
    create_labelled(&app, &acme, "Acme One").await;
    let acme_two = create(&app, &acme.key, json!({"label": "Acme Two", "is_default": true})).await;
    let theirs = create(&app, &other.key, json!({"label": "Other One"})).await;
    // The other brand's first warehouse is its default, untouched by acme's.
    assert_eq!(theirs["is_default"], true);
    assert_eq!(labels(&list(&app, &acme.key).await), ["Acme One", "Acme Two"]);
    assert_eq!(labels(&list(&app, &other.key).await), ["Other One"]);
    assert_eq!(json(app.get(WAREHOUSES, &other.key).await).await["brand_id"], "other");
    app.delete(&one(acme_two["id"].as_str().unwrap()), &acme.key).await;
    assert_eq!(default_label(&app, &other).await, "Other One");
    assert_eq!(default_label(&app, &acme).await, "Acme One");
}

#[tokio::test]
async fn members_and_keys_without_the_scope_are_forbidden() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let id = create_labelled(&app, &partner, "Main").await;
    let (_, member) = app.user(&partner, "Mo Member", Role::Member).await;
    let read_only = app.key(partner.user_id, "read", Some(100_000), None).await;
    for key in [&member, &read_only] {
        assert_error(app.post(WAREHOUSES, key, &json!({"label": "X"})).await, 403, "forbidden").await;
        assert_error(app.patch(&one(&id), key, &json!({"label": "X"})).await, 403, "forbidden").await;
        assert_error(app.delete(&one(&id), key).await, 403, "forbidden").await;
        assert_error(app.post(&set_default_path(&id), key, &json!({})).await, 403, "forbidden").await;
    }
    assert_error(app.get(WAREHOUSES, &member).await, 403, "forbidden").await;
    assert_eq!(labels(&list(&app, &read_only).await), ["Main"]);
}

/// Many simultaneous default-moving calls on one brand leave exactly one default.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_default_changes_leave_exactly_one_default() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(create_labelled(&app, &partner, &format!("Seed {n}")).await);
    }

    let mut handles = Vec::new();
    for n in 0..50 {
        let client = app.client.clone();
        let base = app.base.clone();
        let key = partner.key.clone();
        let id = ids[n % ids.len()].clone();
        handles.push(tokio::spawn(async move {
            let request = match n % 5 {
                0 => client.post(format!("{base}{}", set_default_path(&id))),
                1 => client
                    .post(format!("{base}{WAREHOUSES}"))
                    .json(&json!({"label": format!("New {n}"), "is_default": true})),
                2 => client.delete(format!("{base}{}", one(&id))),
                3 => client.patch(format!("{base}{}", one(&id))).json(&json!({"is_default": true})),
                _ => client.post(format!("{base}{WAREHOUSES}")).json(&json!({"label": format!("Alt {n}")})),
            };
            request.bearer_auth(key).send().await.unwrap().status().as_u16()
        }));
    }
    for handle in handles {
        let status = handle.await.unwrap();
        assert!([200, 201, 404].contains(&status), "unexpected status {status}");
    }

    let warehouses = list(&app, &partner.key).await;
    assert!(!warehouses.is_empty());
    assert_eq!(defaults(&warehouses).len(), 1, "{warehouses:?}");
    let stored = app.store.warehouses(partner.brand_id).await.unwrap();
    assert_eq!(stored.iter().filter(|w| w.is_default).count(), 1);
    assert_eq!(
        app.store.default_warehouse_id(partner.brand_id).await.unwrap().as_deref(),
        Some(defaults(&warehouses)[0].as_str())
    );
}

/// Simultaneous first warehouses of a brand: exactly one of them becomes the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_warehouses_make_exactly_one_default() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut handles = Vec::new();
    for n in 0..20 {
        let client = app.client.clone();
        let url = app.url(WAREHOUSES);
        let key = partner.key.clone();
        handles.push(tokio::spawn(async move {
            let body = json!({"label": format!("W{n}")});
            client.post(url).bearer_auth(key).json(&body).send().await.unwrap().status().as_u16()
        }));
    }
    for handle in handles {
        assert_eq!(handle.await.unwrap(), 201);
    }
    let warehouses = list(&app, &partner.key).await;
    assert_eq!(warehouses.len(), 20);
    assert_eq!(defaults(&warehouses).len(), 1);
    // The default is the first created.
    assert_eq!(warehouses[0]["is_default"], true);
}

/// Deleting every warehouse at once, each call seeing a default go: none is left behind
/// without a default until the last is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deletes_of_defaults_never_leave_warehouses_without_one() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let mut ids = Vec::new();
    for n in 0..12 {
        ids.push(create_labelled(&app, &partner, &format!("W{n}")).await);
    }
    let mut handles = Vec::new();
    for id in &ids[..8] {
        let client = app.client.clone();
        let url = app.url(&one(id));
        let key = partner.key.clone();
        handles.push(tokio::spawn(async move { client.delete(url).bearer_auth(key).send().await.unwrap().status() }));
    }
    for handle in handles {
        assert_eq!(handle.await.unwrap(), 200);
    }
    let warehouses = list(&app, &partner.key).await;
    assert_eq!(labels(&warehouses), ["W8", "W9", "W10", "W11"]);
    assert_eq!(defaults(&warehouses), [ids[8].clone()]);
}

#[tokio::test]
async fn listings_of_a_deleted_warehouse_move_to_the_new_default_then_to_none() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let first = create_labelled(&app, &partner, "Leeds").await;
    let second = create_labelled(&app, &partner, "York").await;
    let body = json!({"title": "Sofa", "price_gbp": 100, "condition": "fair", "category": "Other", "faults": ["None"]});
    let listing = json(app.post("/v1/listings", &partner.key, &body).await).await;
    assert_eq!(listing["warehouse_id"], first.as_str(), "new listings take the default warehouse");
    let path = format!("/v1/listings/{}", listing["id"]);

    assert_eq!(app.delete(&one(&first), &partner.key).await.status(), 200);
    let moved = json(app.get(&path, &partner.key).await).await;
    assert_eq!(moved["warehouse_id"], second.as_str());

    assert_eq!(app.delete(&one(&second), &partner.key).await.status(), 200);
    let orphaned = json(app.get(&path, &partner.key).await).await;
    assert!(orphaned["warehouse_id"].is_null(), "{orphaned}");
}
