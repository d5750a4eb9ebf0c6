//! The OpenAPI 3.1 document (generated from the handlers) and a human page rendered from
//! it on the server, so it works offline with no script or CDN.

use std::fmt::Write;
use std::sync::LazyLock;

use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use serde_json::Value;
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
        crate::http::ops::OpsApi::openapi(),
    ];
    for part in parts {
        doc.merge(part);
    }
    doc
}

static OPENAPI_JSON: LazyLock<String> =
    LazyLock::new(|| document().to_pretty_json().unwrap_or_else(|_| "{}".to_owned()));

static DOCS_PAGE: LazyLock<String> = LazyLock::new(|| {
    let doc: Value = serde_json::from_str(&OPENAPI_JSON).unwrap_or(Value::Null);
    render_page(&doc)
});

/// Routes under `/v1` (behind the gate, public: the document needs no key).
pub fn api_router() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi_json))
}

pub fn page_router() -> Router<AppState> {
    Router::new().route("/docs", get(docs_page))
}

async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON.as_str())
}

async fn docs_page() -> Html<&'static str> {
    Html(DOCS_PAGE.as_str())
}

const METHODS: [&str; 5] = ["get", "post", "patch", "put", "delete"];

fn render_page(doc: &Value) -> String {
    let title = doc.pointer("/info/title").and_then(Value::as_str).unwrap_or("API");
    let description = doc.pointer("/info/description").and_then(Value::as_str).unwrap_or("");
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
<style>body{{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}}\
code,pre{{background:#f4f4f4;border-radius:4px;padding:0 .3em}}pre{{padding:.8em;overflow:auto}}\
.op{{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:1em 0}}\
.m{{font-weight:bold;text-transform:uppercase;margin-right:.6em}}table{{border-collapse:collapse}}\
td,th{{border:1px solid #ddd;padding:.2em .6em;text-align:left}}</style></head><body>\
<h1>{t}</h1><p>{d}</p><p>Machine-readable: <a href=\"/v1/openapi.json\">/v1/openapi.json</a> (OpenAPI 3.1).</p>\
<h2>Errors</h2><p>Every error is <code>{{\"code\": \"…\", \"message\": \"…\"}}</code>; \
<code>validation_failed</code> adds <code>errors: [{{field, code}}]</code>.</p><h2>Endpoints</h2>",
        t = escape(title),
        d = escape(description),
    );
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (path, item) in paths {
            for method in METHODS {
                if let Some(op) = item.get(method) {
                    render_operation(&mut html, method, path, op);
                }
            }
        }
    }
    if let Some(schemas) = doc.pointer("/components/schemas").and_then(Value::as_object) {
        html.push_str("<h2>Schemas</h2>");
        for (name, schema) in schemas {
            let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
            let _ = write!(html, "<h3 id=\"schema-{n}\">{n}</h3><pre>{s}</pre>", n = escape(name), s = escape(&pretty));
        }
    }
    html.push_str("</body></html>");
    html
}

fn render_operation(html: &mut String, method: &str, path: &str, op: &Value) {
    let text = |key: &str| op.get(key).and_then(Value::as_str).unwrap_or("");
    let _ = write!(
        html,
        "<div class=\"op\"><p><span class=\"m\">{m}</span><code>{p}</code></p><p><strong>{s}</strong></p><p>{d}</p>",
        m = method,
        p = escape(path),
        s = escape(text("summary")),
        d = escape(text("description")),
    );
    if let Some(params) = op.get("parameters").and_then(Value::as_array) {
        html.push_str("<table><tr><th>Parameter</th><th>In</th><th>Description</th></tr>");
        for p in params {
            let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
            let _ = write!(
                html,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                escape(field("name")),
                escape(field("in")),
                escape(field("description"))
            );
        }
        html.push_str("</table>");
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        html.push_str("<table><tr><th>Status</th><th>Meaning</th></tr>");
        for (status, response) in responses {
            let description = response.get("description").and_then(Value::as_str).unwrap_or("");
            let _ = write!(html, "<tr><td>{}</td><td>{}</td></tr>", escape(status), escape(description));
        }
        html.push_str("</table>");
    }
    html.push_str("</div>");
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_with_every_path_under_v1() {
        let doc: Value = serde_json::from_str(&OPENAPI_JSON).unwrap();
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
    fn the_page_lists_operations_and_escapes_text() {
        assert!(DOCS_PAGE.contains("/v1/listings/options"));
        assert!(!DOCS_PAGE.contains("<script"));
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
