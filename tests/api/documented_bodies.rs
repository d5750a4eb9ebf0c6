//! The documented request bodies are exactly the accepted ones: for every partner operation
//! whose OpenAPI document names an `application/json` body, a made-up field is refused as
//! `<field>_unknown`, and no documented property is (each sent with a wrong-type value, so
//! the answer is a validation error and nothing is written).

use serde_json::{json, Map, Value};

use crate::helpers::{json, spawn_app_with, TestApp};
use crate::listings::{create_id, warehouse};

const MADE_UP: &str = "zz_made_up";

/// Bodies that need something before the endpoint reads their fields, and why.
fn base_body(method: &str, path: &str) -> Map<String, Value> {
    let base = match (method, path) {
        // Bulk delete answers `no_ids` alone while `ids` is missing or empty, before it
        // looks at the other fields. An id of no listing: nothing is deleted.
        ("post", "/v1/listings/bulk-delete") => json!({"ids": [999_999_999]}),
        _ => json!({}),
    };
    base.as_object().cloned().unwrap_or_default()
}

/// Properties whose value is checked before the other fields (that error answers alone):
/// sent with a value of the right type that is still refused, and why.
fn value_for(method: &str, path: &str, property: &str, schema: &Value) -> Value {
    match (method, path, property) {
        // A non-string image answers `bad_image_base64` alone; valid base64 of a non-image
        // reaches the field checks.
        ("post", "/v1/listings/upload-photo", "image_base64") => json!("aGVsbG8="),
        _ => wrong_type(schema),
    }
}

/// A value of a type the property does not take.
fn wrong_type(schema: &Value) -> Value {
    let types = match &schema["type"] {
        Value::Array(types) => types.clone(),
        one => vec![one.clone()],
    };
    if types.contains(&json!("object")) {
        json!(7)
    } else {
        json!({"not": "this type"})
    }
}

/// Follows `$ref`s into the components.
fn resolve<'a>(doc: &'a Value, mut schema: &'a Value) -> &'a Value {
    while let Some(reference) = schema["$ref"].as_str() {
        let pointer = reference.strip_prefix('#').unwrap_or_else(|| panic!("external $ref {reference}"));
        schema = doc.pointer(pointer).unwrap_or_else(|| panic!("dangling $ref {reference}"));
    }
    schema
}

/// The reason codes of an answer: those of `validation_failed`, else its one code.
async fn codes(app: &TestApp, key: &str, method: &str, path: &str, body: &Value) -> (u16, Vec<String>) {
    let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
    let response = app.request(method, path, key).json(body).send().await.expect("request");
    let status = response.status().as_u16();
    let answer = json(response).await;
    let codes = match answer["errors"].as_array() {
        Some(errors) => errors.iter().filter_map(|e| e["code"].as_str()).map(str::to_owned).collect(),
        None => answer["code"].as_str().map(str::to_owned).into_iter().collect(),
    };
    (status, codes)
}

#[tokio::test]
async fn every_documented_body_property_is_accepted_and_nothing_else() {
    let app = spawn_app_with(|config| config.rate_limit = 100_000).await;
    let partner = app.partner("acme").await;
    let listing_id = create_id(&app, &partner.key, json!({})).await.to_string();
    let warehouse_id = warehouse(&app, &partner, "Leeds").await;
    let key_id =
        json(app.get("/v1/partner/settings/integrations/keys", &partner.key).await).await["data"][0]["id"].to_string();
    let doc = json(app.get("/v1/openapi.json", "").await).await;

    let mut checked = Vec::new();
    for (template, item) in doc["paths"].as_object().unwrap() {
        if !template.starts_with("/v1/") {
            continue;
        }
        for (method, operation) in item.as_object().unwrap() {
            let Some(content) = operation.pointer("/requestBody/content/application~1json") else {
                continue;
            };
            // Path parameters: a resource of the caller's, so the body is read.
            let path = match template.as_str() {
                "/v1/listings/{id}" => template.replace("{id}", &listing_id),
                "/v1/partner/settings/warehouses/{id}" => template.replace("{id}", &warehouse_id),
                "/v1/partner/settings/team/{user_id}" => template.replace("{user_id}", &partner.user_id.to_string()),
                "/v1/partner/settings/integrations/keys/{id}/roll" => template.replace("{id}", &key_id),
                // The body is read before the collection is looked for.
                "/v1/partner/collections/{id}" => template.replace("{id}", "col_none"),
                other => other.to_owned(),
            };
            assert!(!path.contains('{'), "{method} {template}: add a resource for its path parameters");
            let schema = resolve(&doc, &content["schema"]);
            let properties = schema["properties"].as_object().cloned().unwrap_or_default();
            assert!(!properties.is_empty(), "{method} {template}: a JSON body with no documented property");

            let mut body = base_body(method, template);
            body.insert(MADE_UP.into(), json!(1));
            let (status, found) = codes(&app, &partner.key, method, &path, &Value::Object(body)).await;
            let unknown = format!("{MADE_UP}_unknown");
            assert!(found.contains(&unknown), "{method} {template}: a made-up field got {status} {found:?}");

            for (property, property_schema) in &properties {
                let mut body = base_body(method, template);
                let value = value_for(method, template, property, resolve(&doc, property_schema));
                body.insert(property.clone(), value);
                // The made-up field shows that the fields were read.
                body.insert(MADE_UP.into(), json!(1));
                let (status, found) = codes(&app, &partner.key, method, &path, &Value::Object(body)).await;
                assert!(
                    found.contains(&unknown) && !found.contains(&format!("{property}_unknown")),
                    "{method} {template}: documented property {property} got {status} {found:?}"
                );
            }
            checked.push(format!("{method} {template}"));
        }
    }
    assert!(checked.len() >= 14, "only {} operations with a JSON body: {checked:?}", checked.len());
}

/// Every `$ref` of the OpenAPI document names a schema the document holds (a generated
/// client, or schemathesis, skips what it cannot resolve).
#[tokio::test]
async fn every_reference_of_the_document_resolves() {
    fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    found.push(reference);
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let app = spawn_app_with(|_| {}).await;
    let doc = json(app.get("/v1/openapi.json", "").await).await;
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for reference in found {
        // Schemas, and the shared headers (the rate-limit headers of every answer).
        let pointer = reference.strip_prefix('#').filter(|p| p.starts_with("/components/"));
        let pointer = pointer.unwrap_or_else(|| panic!("{reference}"));
        assert!(doc.pointer(pointer).is_some(), "unresolvable {reference}");
    }
    app.stop().await;
}
