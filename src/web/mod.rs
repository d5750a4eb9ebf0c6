//! The partner dashboard (decisions 9): server-rendered pages under `/dashboard`, forms
//! that work without JavaScript, sessions in the database.
//!
//! Handlers parse a form, call a use case (`usecases::people::…`) and render a template;
//! the rules live in the use cases. [`extract`] holds what every page builds on: the
//! visitor's session ([`extract::SignedIn`] redirects to the sign-in page without a
//! signed-in one) and forms whose CSRF token is checked before the handler runs
//! ([`extract::SignedInForm`]). [`pages`] holds the layout every page shares.

pub mod account;
pub mod audit;
pub mod bulk;
pub mod collections;
pub mod confirm;
pub mod cookies;
pub mod deliveries;
pub mod extract;
pub mod home;
pub mod integrations;
pub mod invite;
pub mod listing;
pub mod listings;
pub mod notice;
pub mod once;
pub mod orders;
pub mod pages;
pub mod people;
pub mod qr;
pub mod redemptions;
pub mod reset;
pub mod search;
pub mod settings;
pub mod signin;
pub mod wallet;

use std::sync::LazyLock;

use crate::http::routing::get;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;

use crate::state::AppState;
use extract::Visitor;
use pages::{render, Chrome, NotFoundPage};

/// Pages may load only this origin's script, style and images (and `data:` images), never
/// run inline script or style, never be framed, and post forms only here.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// Where signing in starts; every page without a signed-in session redirects here (303).
pub const LOGIN: &str = "/dashboard/login";
/// The signed-in home.
pub const HOME: &str = "/dashboard";
/// The user's own account page.
pub const ACCOUNT: &str = "/dashboard/account";

const STYLESHEET: &str = include_str!("assets/dashboard.css");
/// The vendored htmx (see `src/web/assets/README.md`); versioned, so cached for good.
const HTMX: &str = include_str!("assets/htmx-2.0.11.min.js");
pub const HTMX_PATH: &str = "/dashboard/assets/htmx-2.0.11.min.js";
/// The copy buttons of secrets shown once (ours; a few lines, progressive enhancement).
const COPY: &str = include_str!("assets/copy.js");
pub const COPY_PATH: &str = "/dashboard/assets/copy.js";
/// The navigation's menu button on phones (ours; progressive enhancement).
const MENU: &str = include_str!("assets/menu.js");
pub const MENU_PATH: &str = "/dashboard/assets/menu.js";

/// The dashboard's routes, to nest at `/dashboard` outside the API's `/v1` gate (its pages
/// do not count against the API's per-address limit; sign-in has limits of its own).
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/", get(account::home))
        .merge(signin::router())
        .merge(account::router())
        .merge(invite::router())
        .merge(reset::router())
        .merge(integrations::router())
        .merge(deliveries::router())
        .merge(collections::router())
        .merge(audit::router())
        .merge(redemptions::router())
        .merge(wallet::router())
        .merge(search::router())
        .merge(settings::router())
        .merge(people::router())
        .merge(listings::router())
        .merge(orders::router())
        .merge(bulk::router())
        .merge(listing::router())
        .route("/assets/dashboard.css", get(stylesheet))
        .route(HTMX_PATH.trim_start_matches("/dashboard"), get(htmx))
        .route(COPY_PATH.trim_start_matches("/dashboard"), get(copy_script))
        .route(MENU_PATH.trim_start_matches("/dashboard"), get(menu_script))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), keep_navigation))
        .layer(middleware::from_fn(security_headers))
}

/// An error's message page (`extract::BareMessage`) drawn again with the navigation of the
/// signed-in visitor, keeping its status and headers; a visitor not signed in sees it bare.
async fn keep_navigation(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let asked = {
        let mut copy = axum::http::Request::new(());
        *copy.method_mut() = parts.method.clone();
        *copy.uri_mut() = parts.uri.clone();
        *copy.headers_mut() = parts.headers.clone();
        if let Some(info) = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>() {
            copy.extensions_mut().insert(*info);
        }
        copy.into_parts().0
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    let Some(bare) = response.extensions().get::<extract::BareMessage>().cloned() else { return response };
    let mut asked = asked;
    let Ok(visitor) = Visitor::from_request_parts(&mut asked, &state).await else { return response };
    let Some(session) = visitor.signed_in() else { return response };
    let page = pages::MessagePage { chrome: Chrome::signed_in(session), title: bare.title, text: &bare.text };
    let mut drawn = render(response.status(), &page);
    if let Some(retry) = response.headers().get(header::RETRY_AFTER) {
        drawn.headers_mut().insert(header::RETRY_AFTER, retry.clone());
    }
    drawn
}

/// The headers of every dashboard answer; pages (not the stylesheet) are never cached.
async fn security_headers(request: Request, next: Next) -> Response {
    let carried_notice = cookies::get(request.headers(), cookies::NOTICE).is_some();
    // The page's path, for the navigation to mark the current page (`pages::Chrome`).
    let path = format!("{HOME}{}", request.uri().path());
    let mut response = pages::CURRENT_PATH.scope(path, next.run(request)).await;
    let status = response.status();
    let headers = response.headers_mut();
    notice::spend(carried_notice, status, headers);
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // A brand's own pages are never for a search engine (decisions 14: only the storefront is).
    headers.insert("x-robots-tag", HeaderValue::from_static("noindex, nofollow"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

async fn stylesheet(headers: HeaderMap) -> Response {
    static GZIPPED: LazyLock<Option<Vec<u8>>> = LazyLock::new(|| gzip(STYLESHEET.as_bytes()));
    asset(&headers, "text/css; charset=utf-8", "public, max-age=300", STYLESHEET, &GZIPPED)
}

/// A static asset, gzipped when the browser takes it (the assets hold no secret and echo
/// nothing, so compressing them leaks nothing; pages, which hold CSRF tokens, are sent
/// as they are).
pub(crate) fn asset(
    request: &HeaderMap,
    content_type: &'static str,
    cache: &'static str,
    plain: &'static str,
    gzipped: &'static Option<Vec<u8>>,
) -> Response {
    let takes_gzip = request
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|coding| coding.split(';').next().is_some_and(|c| c.trim() == "gzip")));
    let common =
        [(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, cache), (header::VARY, "Accept-Encoding")];
    match gzipped {
        Some(bytes) if takes_gzip => (common, [(header::CONTENT_ENCODING, "gzip")], bytes.as_slice()).into_response(),
        _ => (common, plain).into_response(),
    }
}

pub(crate) fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
}

async fn htmx(headers: HeaderMap) -> Response {
    static GZIPPED: LazyLock<Option<Vec<u8>>> = LazyLock::new(|| gzip(HTMX.as_bytes()));
    asset(&headers, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", HTMX, &GZIPPED)
}

async fn menu_script(headers: HeaderMap) -> Response {
    static GZIPPED: LazyLock<Option<Vec<u8>>> = LazyLock::new(|| gzip(MENU.as_bytes()));
    asset(&headers, "text/javascript; charset=utf-8", "public, max-age=300", MENU, &GZIPPED)
}

async fn copy_script(headers: HeaderMap) -> Response {
    static GZIPPED: LazyLock<Option<Vec<u8>>> = LazyLock::new(|| gzip(COPY.as_bytes()));
    asset(&headers, "text/javascript; charset=utf-8", "public, max-age=300", COPY, &GZIPPED)
}

/// `/dashboard/` (with the slash) is the home too.
pub async fn to_home() -> Redirect {
    Redirect::to(HOME)
}

/// An unknown dashboard path: the sign-in page without a signed-in session, else a 404 page.
async fn not_found(visitor: Visitor) -> Response {
    match visitor.signed_in() {
        Some(session) => render(StatusCode::NOT_FOUND, &NotFoundPage { chrome: Chrome::signed_in(session) }),
        None => Redirect::to(LOGIN).into_response(),
    }
}
