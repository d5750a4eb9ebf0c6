//! The storefront (decisions 14): the marketplace's public pages, a third edge beside the
//! API and the dashboard. Server-rendered, readable without JavaScript, no API key: the
//! catalogue, each listing's page (exactly its `url`), the brands' pages, the sitemap and
//! `robots.txt`.
//!
//! Every answer passes [`edge`]: the per-address limit of `REHOME_MARKETPLACE_RATE_LIMIT`
//! (over it a 429 page with `Retry-After`), a Content-Security-Policy that lets a page load
//! only this origin's stylesheet and images, and `X-Robots-Tag: noindex` on whatever is not
//! a page to index. Pages are cacheable: [`cached`] answers `ETag` and 304.

mod catalogue;
mod listing;
mod order;
pub mod payments;
mod payout;
mod seo;

use std::sync::LazyLock;

use askama::Template;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::http::routing::{get, post};
use crate::limit::LimitKey;
use crate::state::AppState;

/// Where the storefront lives; a listing's default `url` is under it.
pub const BASE: &str = "/marketplace";
const STYLESHEET: &str = include_str!("assets/storefront.css");
/// The stylesheet's path, named by its content so that it can be cached for good.
static STYLESHEET_PATH: LazyLock<String> = LazyLock::new(|| {
    let digest = Sha256::digest(STYLESHEET.as_bytes());
    format!("{BASE}/assets/storefront-{}.css", &hex::encode(digest)[..12])
});

/// The largest form a buyer may post, in bytes.
const FORM_LIMIT: usize = 16 * 1024;

/// How long a browser or a shared cache may keep a page before asking again (decisions
/// 14.7: at most 60 s); asking again is cheap, a 304 when nothing changed.
const PAGE_CACHE: &str = "public, max-age=60";

/// Pages load this origin's stylesheet and images only, run no script, and are never
/// framed; `{style}` is where a page's own inline style (a brand's accent) is allowed by hash.
/// `connect-src 'self'` loosens nothing (no script runs) but lets auditing tools that fetch
/// from inside the page (Lighthouse's robots.txt check) read this origin.
const CSP: &str = "default-src 'none'; style-src 'self'{style}; img-src 'self' data:{media}; connect-src 'self'; form-action 'self'{pay}; \
                   frame-ancestors 'none'; base-uri 'none'";

/// The storefront's routes: `/marketplace/…` and `/robots.txt`, each answer through [`edge`].
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route(BASE, get(catalogue::catalogue))
        .route(&format!("{BASE}/"), get(|| async { Redirect::permanent(BASE) }))
        .route(&format!("{BASE}/listings/{{id}}"), get(listing::listing))
        .route(&format!("{BASE}/listings/{{id}}/checkout"), post(listing::checkout_post))
        .route(&format!("{BASE}/orders/{{token}}"), get(order::order))
        .route(&format!("{BASE}/payouts/{{token}}"), get(payout::payout).merge(post(payout::choose)))
        .route(&format!("{BASE}/brands/{{brand_id}}"), get(catalogue::brand))
        .route(&format!("{BASE}/sitemap.xml"), get(seo::sitemap))
        .route(&format!("{BASE}/sitemaps/{{file}}"), get(seo::sitemap_file))
        .route(STYLESHEET_PATH.as_str(), get(stylesheet))
        .route("/robots.txt", get(seo::robots))
        .route(&format!("{BASE}/{{*rest}}"), get(not_found))
        // Forms of a few fields: nothing a buyer sends is larger.
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(middleware::from_fn_with_state(state.clone(), edge))
}

/// The limit, and the headers of every storefront answer.
async fn edge(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let decision = state
        .limiter
        .check(LimitKey::Shopper(crate::http::client_ip(&request)), state.config.marketplace_rate_limit)
        .await;
    let mut response = if decision.allowed {
        next.run(request).await
    } else {
        let mut page = message(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests",
            "You have opened a lot of pages in the last minute. Wait a moment, then try again.",
        );
        if let Ok(value) = HeaderValue::from_str(&decision.retry_after.max(1).to_string()) {
            page.headers_mut().insert(header::RETRY_AFTER, value);
        }
        page
    };
    let own = response.extensions_mut().remove::<PagePolicy>().unwrap_or_default();
    let images: Vec<String> = media_origin(&state.config).into_iter().chain(own.image_origin).collect();
    // A checkout leads to the gateway's payment page (a form's redirect is held to form-action).
    let pay = state.payments.as_deref().map(crate::payments::Gateway::page_origin);
    let policy = csp(own.style.as_deref(), &images, pay);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::REFERRER_POLICY) {
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    }
    if !response.status().is_success() && response.status() != StatusCode::NOT_MODIFIED {
        let headers = response.headers_mut();
        headers.insert("x-robots-tag", HeaderValue::from_static("noindex"));
        if !headers.contains_key(header::CACHE_CONTROL) {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
    }
    response
}

/// What a page adds to the policy: its inline style (allowed by hash) and the origin of a
/// brand's logo.
#[derive(Clone, Default)]
struct PagePolicy {
    style: Option<String>,
    image_origin: Option<String>,
}

/// The policy of a page: its inline `style` allowed by hash when it has one, and images
/// from `images` (photos on a CDN, a brand's logo) besides this origin's.
fn csp(style: Option<&str>, images: &[String], pay: Option<&str>) -> HeaderValue {
    let allowed = style
        .map(|style| {
            let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
            format!(" 'sha256-{hash}'")
        })
        .unwrap_or_default();
    let images: String = images.iter().map(|origin| format!(" {origin}")).collect();
    let pay = pay.map(|origin| format!(" {origin}")).unwrap_or_default();
    let policy = CSP.replace("{style}", &allowed).replace("{media}", &images).replace("{pay}", &pay);
    HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"))
}

/// The URL prefix of photos on pages: this origin's `/media` unless photos are public
/// elsewhere (`REHOME_MEDIA_PUBLIC_URL`, a bucket or a CDN).
pub fn media_prefix(config: &crate::config::Config) -> String {
    match media_origin(config) {
        Some(_) => config.media_url().to_owned(),
        None => "/media".to_owned(),
    }
}

/// The origin photos come from when it is not this server's `/media`.
fn media_origin(config: &crate::config::Config) -> Option<String> {
    let own = format!("{}/media", config.public_url.as_deref().unwrap_or_default());
    let media = config.media_url();
    if media.is_empty() || media == own {
        return None;
    }
    url::Url::parse(media).ok().map(|u| u.origin().ascii_serialization())
}

/// What the layout puts in every page's head, and the search box's text.
#[derive(Debug, Clone, Default)]
pub struct Head {
    pub title: String,
    pub description: String,
    pub canonical: Option<String>,
    pub og_type: &'static str,
    /// An absolute URL of the page's picture (OpenGraph, Twitter card).
    pub image: Option<String>,
    /// More OpenGraph properties (a product's price).
    pub extra: Vec<(&'static str, String)>,
    /// The page's schema.org JSON-LD, already safe inside a `<script>` element.
    pub json_ld: Option<String>,
    /// The page's own style (a brand's accent colours only), allowed by the CSP by hash.
    pub style: Option<String>,
    /// Another origin the page shows an image from (a brand's logo), allowed by the CSP.
    pub image_origin: Option<String>,
    pub noindex: bool,
    /// The search box's text.
    pub search: String,
}

/// A page of the storefront answered with `status`: `ETag` and `Cache-Control` on a 200,
/// and 304 to an `If-None-Match` that matches (the ETag is the page's own hash, so it
/// changes as soon as anything on the page does).
pub fn cached<T: Template>(request: &HeaderMap, status: StatusCode, page: &T, head: &Head) -> Response {
    let html = match page.render() {
        Ok(html) => html,
        Err(error) => {
            tracing::error!(%error, "cannot render a storefront page");
            return (StatusCode::INTERNAL_SERVER_ERROR, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "error")
                .into_response();
        }
    };
    let mut response = if status == StatusCode::OK {
        cached_bytes(request, "text/html; charset=utf-8", html.into_bytes())
    } else {
        (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
    };
    if head.style.is_some() || head.image_origin.is_some() {
        let policy = PagePolicy { style: head.style.clone(), image_origin: head.image_origin.clone() };
        response.extensions_mut().insert(policy);
    }
    response
}

/// A 200 of `body` with its ETag, or 304 when the client holds it already; gzipped for a
/// browser that takes it (the pages hold no secret of one visitor's, so compressing them
/// leaks nothing), with an ETag of its own.
pub fn cached_bytes(request: &HeaderMap, content_type: &'static str, body: Vec<u8>) -> Response {
    let hash = &hex::encode(Sha256::digest(&body))[..32];
    let gzipped = (body.len() > 1024 && takes_gzip(request)).then(|| gzip_fast(&body)).flatten();
    let etag = if gzipped.is_some() { format!("\"{hash}-gz\"") } else { format!("\"{hash}\"") };
    let etag = HeaderValue::from_str(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
    let common = [
        (header::ETAG, etag.clone()),
        (header::CACHE_CONTROL, HeaderValue::from_static(PAGE_CACHE)),
        (header::VARY, HeaderValue::from_static("Accept-Encoding")),
    ];
    if matches(request, &etag) {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    match gzipped {
        Some(gzipped) => (
            StatusCode::OK,
            common,
            [(header::CONTENT_TYPE, content_type), (header::CONTENT_ENCODING, "gzip")],
            gzipped,
        )
            .into_response(),
        None => (StatusCode::OK, common, [(header::CONTENT_TYPE, content_type)], body).into_response(),
    }
}

/// True when the request's `Accept-Encoding` names gzip.
fn takes_gzip(request: &HeaderMap) -> bool {
    request
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|coding| coding.split(';').next().is_some_and(|c| c.trim() == "gzip")))
}

/// `bytes` gzipped quickly: a page is compressed on every answer.
fn gzip_fast(bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 3), flate2::Compression::fast());
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
}

/// True when `If-None-Match` names `etag` (weakly: `W/` ignored) or is `*`.
fn matches(request: &HeaderMap, etag: &HeaderValue) -> bool {
    let Some(given) = request.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let ours = etag.to_str().unwrap_or_default();
    given.split(',').map(str::trim).any(|tag| tag == "*" || tag.trim_start_matches("W/") == ours)
}

/// A page that says one thing: an error, a missing page, a limit.
#[derive(Template)]
#[template(path = "storefront/message.html")]
struct MessagePage<'a> {
    head: Head,
    stylesheet: &'a str,
    heading: &'a str,
    text: &'a str,
}

/// A message page with `status`, never cached and never indexed.
pub fn message(status: StatusCode, heading: &str, text: &str) -> Response {
    let head = Head {
        title: format!("{heading} · rehome marketplace"),
        description: text.to_owned(),
        og_type: "website",
        noindex: true,
        ..Head::default()
    };
    let page = MessagePage { head, stylesheet: &STYLESHEET_PATH, heading, text };
    let mut response = cached(&HeaderMap::new(), status, &page, &page.head);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// An answer whose address is its key (an order's page, a payout link's): never cached or
/// indexed, never sent on as a referrer.
pub fn private(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.remove(header::ETAG);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    headers.insert("x-robots-tag", HeaderValue::from_static("noindex, nofollow"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// The storefront's 404 page.
pub fn not_found_page() -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no page here. The item may never have been listed, or the link may be mistyped.",
    )
}

async fn not_found() -> Response {
    not_found_page()
}

/// A failure of the service (a database that did not answer), as a page: nothing was shown,
/// try again. `error` goes to the log only.
pub fn unavailable(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "storefront read failed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        "Something went wrong",
        "We could not load this page. Please try again in a moment.",
    )
}

async fn stylesheet(headers: HeaderMap) -> Response {
    static GZIPPED: LazyLock<Option<Vec<u8>>> = LazyLock::new(|| crate::web::gzip(STYLESHEET.as_bytes()));
    crate::web::asset(&headers, "text/css; charset=utf-8", "public, max-age=31536000, immutable", STYLESHEET, &GZIPPED)
}

/// The stylesheet's path for templates.
pub fn stylesheet_path() -> &'static str {
    STYLESHEET_PATH.as_str()
}

/// `/`: the marketplace is the front door.
pub async fn front_door() -> Redirect {
    Redirect::to(BASE)
}
