//! The partner dashboard (decisions 9): server-rendered pages under `/dashboard`, forms
//! that work without JavaScript, sessions in the database.
//!
//! Handlers parse a form, call a use case (`usecases::people::…`) and render a template;
//! the rules live in the use cases. [`extract`] holds what every page builds on: the
//! visitor's session ([`extract::SignedIn`] redirects to the sign-in page without a
//! signed-in one) and forms whose CSRF token is checked before the handler runs
//! ([`extract::SignedInForm`]). [`pages`] holds the layout every page shares.

pub mod account;
pub mod bulk;
pub mod cookies;
pub mod extract;
pub mod integrations;
pub mod invite;
pub mod listing;
pub mod operations;
pub mod pages;
pub mod people;
pub mod qr;
pub mod records;
pub mod settings;
pub mod signin;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use crate::app::AppState;
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

const STYLESHEET: &str = include_str!("assets/dashboard.css");

/// The dashboard's routes, to nest at `/dashboard` outside the API's `/v1` gate (its pages
/// do not count against the API's per-address limit; sign-in has limits of its own).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(account::home))
        .merge(signin::router())
        .merge(account::router())
        .merge(invite::router())
        .merge(integrations::router())
        .merge(operations::router())
        .merge(settings::router())
        .merge(people::router())
        .merge(records::router())
        .merge(bulk::router())
        .merge(listing::router())
        .route("/assets/dashboard.css", get(stylesheet))
        .fallback(not_found)
        .layer(middleware::from_fn(security_headers))
}

/// The headers of every dashboard answer; pages (not the stylesheet) are never cached.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

async fn stylesheet() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=300")], STYLESHEET)
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
