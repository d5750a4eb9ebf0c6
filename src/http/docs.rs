//! The OpenAPI 3.1 document (generated from the handlers), and the `/docs` page that renders
//! it with Redoc: a vendored bundle served by the binary itself, so the page works offline
//! and loads nothing from another origin.

mod answers;

use std::sync::LazyLock;

use crate::http::routing::get;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::app::AppState;
use crate::domain::FieldError;
use crate::error::ErrorBody;

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

static OPENAPI_JSON: LazyLock<String> =
    LazyLock::new(|| document().to_pretty_json().unwrap_or_else(|_| "{}".to_owned()));

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

/// Routes under `/v1` (behind the gate, public: the document needs no key).
pub fn api_router() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi_json))
}

pub fn page_router() -> Router<AppState> {
    Router::new().route("/docs", get(docs_page)).route(REDOC_PATH, get(redoc_js))
}

async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON.as_str())
}

async fn docs_page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, DOCS_CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        DOCS_PAGE.as_str(),
    )
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
