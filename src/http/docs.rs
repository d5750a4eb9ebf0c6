//! The OpenAPI 3.1 document (generated from the handlers), and the `/docs` page that renders
//! it with Redoc: a vendored bundle served by the binary itself, so the page works offline
//! and loads nothing from another origin.

mod answers;
pub mod enums;
mod finish;
pub mod refusals;
mod webhooks;

use std::sync::LazyLock;

use crate::http::routing::get;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::domain::FieldError;
use crate::error::ErrorBody;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "rehome partner API",
        version = "1.0.0",
        description = "Run pre-loved (exchange) and overstock (clearance) furniture resale channels: listings, \
photos, bulk import, settings and signed webhooks. Every call needs `Authorization: Bearer <API_KEY>`; \
errors are JSON `{code, message}`; every `/v1` response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` \
and `X-RateLimit-Reset`."
    ),
    components(schemas(ErrorBody, FieldError)),
    modifiers(&BearerAuth),
    tags((name = "Listings", description = "Inventory items and their taxonomy"))
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("rhk_…").build()),
        );
        components.add_security_scheme(
            "ops",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The operator token, REHOME_OPS_TOKEN (operator API only)"))
                    .build(),
            ),
        );
    }
}

/// The whole document: the common part plus the part each resource module declares.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    let parts = [
        crate::http::options::OptionsApi::openapi(),
        crate::http::listings::ListingsApi::openapi(),
        crate::http::photos::PhotosApi::openapi(),
        crate::http::bulk::BulkApi::openapi(),
        crate::http::settings::SettingsApi::openapi(),
        crate::http::warehouses::WarehousesApi::openapi(),
        crate::http::webhooks::WebhooksApi::openapi(),
        crate::http::payouts::PayoutsApi::openapi(),
        crate::http::redemptions::RedemptionsApi::openapi(),
        crate::http::credits::CreditsApi::openapi(),
        crate::http::collections::CollectionsApi::openapi(),
        crate::http::wallet::WalletApi::openapi(),
        crate::http::people::team::TeamApi::openapi(),
        crate::http::people::keys::KeysApi::openapi(),
        crate::http::people::audit::AuditApi::openapi(),
        crate::http::ops::OpsApi::openapi(),
    ];
    for part in parts {
        doc.merge(part);
    }
    // After the merge, so that they see every operation.
    answers::SharedAnswers.modify(&mut doc);
    answers::CodeSamples.modify(&mut doc);
    answers::TagOrder.modify(&mut doc);
    optional_bodies(&mut doc);
    doc
}

/// A body declared `Option<T>` (one that may be left out) comes out of utoipa as
/// `oneOf: [null, T]`, which would admit a JSON `null` the server refuses: say instead
/// that the body is not required, and is a `T` when sent.
fn optional_bodies(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{Schema, SchemaType, Type};
    use utoipa::openapi::{RefOr, Required};
    let is_null = |schema: &RefOr<Schema>| matches!(schema, RefOr::T(Schema::Object(o)) if matches!(o.schema_type, SchemaType::Type(Type::Null)));
    for item in doc.paths.paths.values_mut() {
        for operation in [&mut item.post, &mut item.patch, &mut item.put, &mut item.delete].into_iter().flatten() {
            let Some(body) = operation.request_body.as_mut() else { continue };
            let mut optional = false;
            for content in body.content.values_mut() {
                if let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema {
                    if let [a, b] = one_of.items.as_slice() {
                        let kept = if is_null(a) {
                            Some(b.clone())
                        } else if is_null(b) {
                            Some(a.clone())
                        } else {
                            None
                        };
                        if let Some(kept) = kept {
                            content.schema = Some(kept);
                            optional = true;
                        }
                    }
                }
            }
            if optional {
                body.required = Some(Required::False);
            }
        }
    }
}

/// The document as served: [`document`] with the passes on its JSON form
/// ([`finish::finish`]: header components, outage answers, `servers`, `webhooks`, …).
pub fn document_json() -> serde_json::Value {
    let mut doc = serde_json::to_value(document()).unwrap_or_default();
    finish::finish(&mut doc);
    webhooks::section(&mut doc);
    doc
}

static OPENAPI_JSON: LazyLock<String> =
    LazyLock::new(|| serde_json::to_string_pretty(&document_json()).unwrap_or_else(|_| "{}".to_owned()));

/// A strong entity tag of served bytes: the first 16 bytes of their SHA-256, in hex.
fn entity_tag(bytes: &[u8]) -> HeaderValue {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    HeaderValue::from_str(&format!("\"{hex}\"")).unwrap_or_else(|_| HeaderValue::from_static("\"0\""))
}

static OPENAPI_ETAG: LazyLock<HeaderValue> = LazyLock::new(|| entity_tag(OPENAPI_JSON.as_bytes()));
static DOCS_ETAG: LazyLock<HeaderValue> = LazyLock::new(|| entity_tag(DOCS_PAGE.as_bytes()));

/// True when `If-None-Match` names `etag` (or is `*`): the client's copy is current.
fn not_modified(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let Some(value) = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) else { return false };
    crate::domain::precondition::none_match(value, etag.to_str().unwrap_or_default())
}

/// A public document: its bytes with `ETag` and `Cache-Control: no-cache` (reuse after a
/// cheap revalidation), or 304 when the client's `If-None-Match` names it.
fn document_answer(
    request: &HeaderMap,
    etag: &HeaderValue,
    headers: &[(header::HeaderName, &'static str)],
    body: &'static str,
) -> Response {
    let mut response =
        if not_modified(request, etag) { StatusCode::NOT_MODIFIED.into_response() } else { body.into_response() };
    let answer = response.headers_mut();
    for (name, value) in headers {
        answer.insert(name.clone(), HeaderValue::from_static(value));
    }
    answer.insert(header::ETAG, etag.clone());
    answer.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The vendored Redoc release (see `src/http/assets/README.md`).
const REDOC_VERSION: &str = "2.5.4";
const REDOC_JS: &[u8] = include_bytes!("assets/redoc.standalone.2.5.4.js");
/// Versioned, so that it can be cached for good.
const REDOC_PATH: &str = "/docs/redoc.2.5.4.js";

/// Redoc reads the document from the same origin and renders it; the standalone bundle
/// starts itself on the `<redoc>` element, so the page has no inline script.
static DOCS_PAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rehome API reference</title>
<meta name="generator" content="Redoc {REDOC_VERSION}">
<link rel="icon" href="data:,">
<style>body {{ margin: 0; }}</style>
</head>
<body>
<noscript><p>This reference needs JavaScript. The document it renders is <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1).</p></noscript>
<redoc spec-url="/v1/openapi.json" required-props-first="true" expand-responses="200,201" schema-expansion-level="1" json-sample-expand-level="3" sort-tags-alphabetically="false"></redoc>
<script src="{REDOC_PATH}"></script>
</body>
</html>
"#
    )
});

/// Same origin only, and the least Redoc needs (each checked in Chromium by
/// tests/browser/docs_page.py): it injects its styles as `<style>` elements (inline styles),
/// runs its search index in a worker made from a `blob:` URL, and draws its icons as `data:`
/// images. The last three directives do not fall back to `default-src`.
const DOCS_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; \
connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Where the document is served: under `/v1`, but outside its gate (decisions 11.7: a
/// public document outside every rate limit, so keyless readers spend no quota).
pub const OPENAPI_PATH: &str = "/v1/openapi.json";

/// The public documents: the OpenAPI document, the `/docs` page and its script, none
/// behind the `/v1` gate.
pub fn page_router() -> Router<AppState> {
    Router::new().route(OPENAPI_PATH, get(openapi_json)).route("/docs", get(docs_page)).route(REDOC_PATH, get(redoc_js))
}

async fn openapi_json(headers: HeaderMap) -> Response {
    let content = [(header::CONTENT_TYPE, "application/json")];
    document_answer(&headers, &OPENAPI_ETAG, &content, OPENAPI_JSON.as_str())
}

async fn docs_page(headers: HeaderMap) -> Response {
    let content = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, DOCS_CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    document_answer(&headers, &DOCS_ETAG, &content, DOCS_PAGE.as_str())
}

async fn redoc_js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        REDOC_JS,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn doc() -> Value {
        serde_json::from_str(&OPENAPI_JSON).unwrap()
    }

    /// Every operation of the document, as (method, path, operation).
    fn operations(doc: &Value) -> Vec<(String, String, Value)> {
        let mut all = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                all.push((method.clone(), path.clone(), operation.clone()));
            }
        }
        all
    }

    fn schemes(operation: &Value) -> Vec<String> {
        let requirements = operation["security"].as_array().cloned().unwrap_or_default();
        requirements.iter().flat_map(|r| r.as_object().unwrap().keys().cloned()).collect()
    }

    #[test]
    fn the_document_is_openapi_3_1_with_every_path_under_v1() {
        let doc = doc();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let paths = doc["paths"].as_object().unwrap();
        assert!(paths.contains_key("/v1/listings/options"));
        assert!(paths.keys().all(|p| p.starts_with("/v1/") || p.starts_with("/ops/v1/")));
        for path in ["/ops/v1/orders", "/v1/redemptions", "/v1/partner/credits/redeem", "/v1/partner/collections"] {
            assert!(paths.contains_key(path), "{path}");
        }
        assert!(doc.pointer("/components/securitySchemes/ops").is_some());
        assert!(doc.pointer("/components/securitySchemes/bearer").is_some());
    }

    #[test]
    fn every_partner_operation_has_the_shared_401_403_and_429_answers() {
        let doc = doc();
        let mut checked = 0;
        for (method, path, operation) in operations(&doc) {
            if !schemes(&operation).contains(&"bearer".to_owned()) {
                continue;
            }
            checked += 1;
            for status in ["401", "403", "429"] {
                let schema = &operation["responses"][status]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {status}");
            }
            let text = |status: &str| operation["responses"][status]["description"].as_str().unwrap().to_owned();
            assert!(text("401").contains("`missing_bearer_token`") && text("401").contains("`invalid_token`"));
            let scope = if method == "get" { "`read` scope" } else { "`write` scope" };
            assert!(
                text("403").contains("`forbidden`:") && text("403").contains(scope),
                "{method} {path}: {}",
                text("403")
            );
            assert_eq!(text("403").matches("`forbidden`").count(), 1, "{method} {path}: {}", text("403"));
            assert!(text("429").starts_with("`rate_limited`"));
            for header in ["Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"] {
                assert!(operation["responses"]["429"]["headers"][header].is_object(), "{method} {path} {header}");
            }
        }
        assert!(checked > 30, "only {checked} partner operations");
        let patch = &doc["paths"]["/v1/listings/{id}"]["patch"]["responses"]["403"]["description"];
        assert!(patch.as_str().unwrap().starts_with("`forbidden_not_owner`"), "the specific 403 text is kept: {patch}");
    }

    #[test]
    fn operator_operations_have_the_operator_401_and_no_rate_limit_answer() {
        let doc = doc();
        let operator: Vec<_> =
            operations(&doc).into_iter().filter(|(_, _, op)| schemes(op).contains(&"ops".to_owned())).collect();
        assert!(!operator.is_empty());
        for (method, path, operation) in operator {
            assert!(path.starts_with("/ops/v1/"), "{path}");
            let unauthorized = operation["responses"]["401"]["description"].as_str().unwrap();
            assert!(unauthorized.contains("REHOME_OPS_TOKEN"), "{method} {path}");
            assert!(operation["responses"]["429"].is_null(), "the operator API is not rate limited: {method} {path}");
            assert_eq!(operation["tags"][0], "Operator");
        }
    }

    #[test]
    fn the_operator_tag_comes_after_every_partner_tag() {
        let doc = doc();
        let tags: Vec<&str> = doc["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tags.last(), Some(&"Operator"), "{tags:?}");
        assert_eq!(tags.first(), Some(&"Listings"), "{tags:?}");
        assert_eq!(doc["x-tagGroups"][0]["name"], "Partner API");
        assert_eq!(doc["x-tagGroups"][1]["tags"], serde_json::json!(["Operator"]));
        let grouped = doc["x-tagGroups"][0]["tags"].as_array().unwrap().len() + 1;
        assert_eq!(grouped, tags.len(), "every tag is in a group (Redoc hides the others)");
        for (method, path, operation) in operations(&doc) {
            let tag = operation["tags"][0].as_str().unwrap_or_default();
            assert!(tags.contains(&tag), "{method} {path}: tag {tag:?} is not declared, so the page would hide it");
        }
    }

    #[test]
    fn every_operation_has_a_curl_sample_with_its_body() {
        let doc = doc();
        for (method, path, operation) in operations(&doc) {
            let sample = operation["x-codeSamples"][0]["source"].as_str().unwrap();
            assert!(sample.starts_with(&format!("curl -X {}", method.to_uppercase())), "{sample}");
            if operation["requestBody"]["content"]["application/json"].is_object() {
                assert!(sample.contains("-d '"), "{method} {path}: {sample}");
            }
        }
    }

    #[test]
    fn bodies_that_may_be_left_out_are_not_required_and_never_null() {
        let doc = doc();
        let roll = &doc["paths"]["/v1/partner/settings/integrations/keys/{id}/roll"]["post"]["requestBody"];
        assert_eq!(roll["required"], false);
        assert_eq!(roll["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/KeyRollInput");
        for (method, path, operation) in operations(&doc) {
            let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
            assert!(schema["oneOf"].is_null(), "{method} {path}: {schema}");
        }
    }

    /// Every schema object of the document (components, paths, webhooks), with where it is.
    fn schemas(value: &Value, at: &str, found: &mut Vec<(String, Value)>) {
        match value {
            Value::Object(map) => {
                if map.contains_key("type") || map.contains_key("anyOf") || map.contains_key("$ref") {
                    found.push((at.to_owned(), value.clone()));
                }
                for (key, child) in map {
                    schemas(child, &format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    schemas(child, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_v1_answer_declares_the_rate_limit_headers_and_every_operation_the_outage_answers() {
        let doc = doc();
        for name in ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"] {
            assert!(doc["components"]["headers"][name]["schema"]["type"] == "integer", "{name}");
        }
        for (method, path, operation) in operations(&doc) {
            let responses = operation["responses"].as_object().unwrap();
            for status in ["500", "503"] {
                assert_eq!(
                    responses[status]["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/ErrorBody"
                );
            }
            assert!(responses["500"]["description"].as_str().unwrap().contains("`internal_error`"));
            assert_eq!(responses.contains_key("507"), method != "get", "{method} {path}");
            if !path.starts_with("/v1/") {
                continue;
            }
            for (status, response) in responses {
                for name in ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"] {
                    let reference = &response["headers"][name]["$ref"];
                    assert_eq!(reference, &format!("#/components/headers/{name}"), "{method} {path} {status}");
                }
            }
            assert_eq!(responses["429"]["headers"]["Retry-After"]["$ref"], "#/components/headers/Retry-After");
        }
    }

    #[test]
    fn files_are_strings_of_their_media_type() {
        let doc = doc();
        let answer =
            |path: &str, media: &str| doc["paths"][path]["get"]["responses"]["200"]["content"][media]["schema"].clone();
        let pdf = answer("/v1/remittances/{id}/statement.pdf", "application/pdf");
        assert_eq!(
            pdf,
            serde_json::json!({"type": "string", "format": "binary", "contentMediaType": "application/pdf"})
        );
        let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
        assert_eq!(answer("/v1/listings/bulk-template", xlsx)["$ref"], "#/components/schemas/XlsxFile");
        let workbook = &doc["components"]["schemas"]["XlsxFile"];
        assert_eq!(
            (&workbook["type"], &workbook["format"], &workbook["contentMediaType"]),
            (&"string".into(), &"binary".into(), &xlsx.into())
        );
        let csv = answer("/v1/remittances/{id}/statement.csv", "text/csv");
        assert_eq!(csv, serde_json::json!({"type": "string", "contentMediaType": "text/csv"}));
        // Binary answers also as octet streams (the same schema); text answers only as text.
        assert_eq!(answer("/v1/remittances/{id}/statement.pdf", "application/octet-stream"), pdf);
        assert_eq!(
            answer("/v1/listings/bulk-template", "application/octet-stream")["$ref"],
            "#/components/schemas/XlsxFile"
        );
        assert!(answer("/v1/remittances/{id}/statement.csv", "application/octet-stream").is_null());
    }

    #[test]
    fn one_component_per_enumerated_concept() {
        let doc = doc();
        let schema = |name: &str, field: &str| {
            let schema = &doc["components"]["schemas"][name];
            let own = &schema["properties"][field];
            let property = if own.is_null() { &schema["allOf"][1]["properties"][field] } else { own };
            let reference = property["$ref"].as_str().or_else(|| property["anyOf"][0]["$ref"].as_str());
            reference.or_else(|| property["items"]["$ref"].as_str()).map(str::to_owned)
        };
        let at = |name: &str| Some(format!("#/components/schemas/{name}"));
        for (body, answer, field, concept) in [
            ("ListingBody", "ListingDetail", "condition", "Condition"),
            ("ListingPatch", "ListingDetail", "condition", "Condition"),
            ("ListingBody", "ListingSummary", "channel", "Channel"),
            ("MemberInviteInput", "Member", "role", "Role"),
            ("MemberRoleInput", "Member", "role", "Role"),
            ("WebhookInput", "WebhookSettings", "event_types", "SubscribableEventType"),
        ] {
            assert_eq!(schema(body, field), at(concept), "{body}.{field}");
            assert_eq!(schema(answer, field), at(concept), "{answer}.{field}");
        }
        assert_eq!(schema("ListingSummary", "status"), at("ListingStatus"));
        assert_eq!(schema("ListingBody", "status"), at("EditableStatus"));
        assert_eq!(schema("Delivery", "type"), at("EventType"));
        assert_eq!(schema("Delivery", "status"), at("DeliveryStatus"));
        let parameter = |path: &str, method: &str, name: &str| {
            doc["paths"][path][method]["parameters"]
                .as_array()
                .and_then(|all| all.iter().find(|p| p["name"] == name))
                .and_then(|p| p["schema"]["$ref"].as_str().map(str::to_owned))
        };
        assert_eq!(parameter("/v1/listings", "get", "channel"), at("Channel"));
        assert_eq!(parameter("/v1/listings/bulk-commit", "post", "mode"), at("BulkMode"));
        // No inline enum anywhere repeats a shared one's values.
        let shared: Vec<Vec<&str>> = enums::shared()
            .into_iter()
            .map(|(_, mut values)| {
                values.sort_unstable();
                values
            })
            .collect();
        let mut found = Vec::new();
        schemas(&doc["paths"], "paths", &mut found);
        for (name, component) in doc["components"]["schemas"].as_object().into_iter().flatten() {
            if !enums::shared().iter().any(|(shared, _)| shared == name) {
                schemas(component, name, &mut found);
            }
        }
        for (at, schema) in &found {
            let Some(values) = schema["enum"].as_array() else { continue };
            let mut values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
            values.sort_unstable();
            assert!(!shared.contains(&values), "{at}: an inline copy of a shared enum: {schema}");
        }
        // A list's meta says which it is.
        let meta = &doc["components"]["schemas"]["ListMeta"];
        assert_eq!(meta["discriminator"]["propertyName"], "paging");
        assert_eq!(meta["discriminator"]["mapping"]["cursor"], "#/components/schemas/SyncMeta");
        assert!(doc["components"]["schemas"]["SyncMeta"]["required"].as_array().unwrap().contains(&"paging".into()));
    }

    #[test]
    fn each_answer_has_one_schema() {
        let doc = doc();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    let schemas: std::collections::BTreeSet<String> = response["content"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(_, body)| body["schema"].to_string())
                        .collect();
                    assert!(schemas.len() <= 1, "{method} {path} {status} answers {schemas:?}");
                }
            }
        }
        let workbook = &doc["paths"]["/v1/listings/bulk-validate/workbook"]["post"]["responses"]["200"]["content"];
        let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
        assert_eq!(workbook[xlsx]["schema"]["$ref"], "#/components/schemas/XlsxFile");
    }

    #[test]
    fn every_instant_is_a_date_time_and_every_date_a_date() {
        let doc = doc();
        let mut found = Vec::new();
        schemas(&doc, "", &mut found);
        let formats = |schema: &Value| -> Vec<String> {
            let mut all = vec![schema["format"].as_str().unwrap_or_default().to_owned()];
            for option in schema["anyOf"].as_array().into_iter().flatten() {
                all.push(option["format"].as_str().unwrap_or_default().to_owned());
            }
            all
        };
        let mut checked = 0;
        for (at, schema) in &found {
            let Some(name) = at.rsplit('/').next() else { continue };
            if !at.contains("/properties/") || schema.get("$ref").is_some() {
                continue;
            }
            let instant = name.ends_with("_at") || name == "next_since" || name == "period_end";
            let date = name.starts_with("buyer_window_")
                || ["scheduled_for", "next_payout_date", "available_from"].contains(&name);
            if instant {
                assert!(formats(schema).iter().any(|f| f == "date-time"), "{at}: {schema}");
                checked += 1;
            } else if date {
                assert!(formats(schema).iter().any(|f| f == "date"), "{at}: {schema}");
                checked += 1;
            }
        }
        assert!(checked >= 40, "only {checked} dates and instants");
    }

    #[test]
    fn no_enum_admits_null_and_no_header_or_documented_field_is_nullable_where_null_is_refused() {
        let doc = doc();
        let mut found = Vec::new();
        schemas(&doc, "", &mut found);
        for (at, schema) in &found {
            if let Some(values) = schema["enum"].as_array() {
                assert!(!values.contains(&Value::Null), "{at}: an enum with null: {schema}");
                assert!(schema["type"].is_string(), "{at}: {schema}");
            }
        }
        let input = |name: &str, field: &str| doc["components"]["schemas"][name]["properties"][field]["type"].clone();
        assert_eq!(input("WebhookInput", "url"), "string");
        assert_eq!(input("BrandProfileInput", "display_name"), "string");
        let channel = &doc["components"]["schemas"]["ListingBody"]["properties"]["channel"];
        assert_eq!(channel["anyOf"][0]["$ref"], "#/components/schemas/Channel");
        assert_eq!(channel["anyOf"][1], serde_json::json!({"type": "null"}));
        for (method, path, operation) in operations(&doc) {
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                assert!(
                    parameter["schema"]["type"].is_string() || parameter["schema"]["$ref"].is_string(),
                    "{method} {path} {}: {}",
                    parameter["name"],
                    parameter["schema"]
                );
            }
        }
    }

    #[test]
    fn the_document_names_a_server_and_describes_every_operation() {
        let doc = doc();
        assert_eq!(doc["servers"][0]["url"], "/");
        for (method, path, operation) in operations(&doc) {
            let description = operation["description"].as_str().unwrap_or_default();
            let summary = operation["summary"].as_str().unwrap_or_default();
            assert!(!description.is_empty() && !summary.is_empty(), "{method} {path}");
            assert!(!summary.contains('\n') && summary.len() <= description.len(), "{method} {path}: {summary}");
        }
    }

    #[test]
    fn the_webhooks_section_has_every_event_type_with_its_envelope_and_headers() {
        use crate::domain::event::EventType;
        let doc = doc();
        let webhooks = doc["webhooks"].as_object().unwrap();
        let types = [
            EventType::Ping,
            EventType::RedemptionCreated,
            EventType::CollectionScheduled,
            EventType::CollectionCancelled,
            EventType::ListingCreated,
            EventType::ListingUpdated,
            EventType::ListingDeleted,
        ];
        assert_eq!(webhooks.len(), types.len());
        for event in types {
            let post = &webhooks[event.as_str()]["post"];
            let reference = post["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap();
            let schema = doc.pointer(reference.trim_start_matches('#')).unwrap();
            assert_eq!(schema["properties"]["type"]["const"], event.as_str());
            let data = schema["properties"]["data"]["$ref"].as_str().unwrap();
            assert!(doc.pointer(data.trim_start_matches('#')).is_some(), "{data}");
            let headers: Vec<&str> =
                post["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            for header in ["webhook-id", "webhook-timestamp", "webhook-signature", "X-Service-Signature"] {
                assert!(headers.contains(&header), "{header}");
            }
        }
    }

    #[test]
    fn the_page_loads_the_same_origin_redoc_bundle_of_the_named_version() {
        assert!(DOCS_PAGE.contains(&format!("<script src=\"/docs/redoc.{REDOC_VERSION}.js\"></script>")));
        assert!(DOCS_PAGE.contains("spec-url=\"/v1/openapi.json\""));
        assert!(!DOCS_PAGE.contains("http://") && !DOCS_PAGE.contains("https://"), "no other origin");
        assert_eq!(REDOC_PATH, format!("/docs/redoc.{REDOC_VERSION}.js"));
        assert!(REDOC_JS.starts_with(b"/*! For license information"));
        let bundle = String::from_utf8_lossy(REDOC_JS);
        assert!(!bundle.contains("cdn.redoc.ly"), "the bundle loads no image from Redocly's CDN");
        assert!(DOCS_CSP.contains("default-src 'none'") && !DOCS_CSP.contains("unsafe-eval"));
    }
}
