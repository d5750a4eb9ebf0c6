//! The HTTP edge: the router, the middleware every request passes, and one module per resource.

pub mod auth;
pub mod body;
pub mod bulk;
pub mod collections;
pub mod credits;
pub mod docs;
mod health;
pub mod idempotency;
pub mod limit;
pub mod listings;
pub mod ops;
pub mod options;
pub mod payouts;
pub mod people;
pub mod photos;
pub mod precondition;
pub mod query;
pub mod redemptions;
pub mod serve;
pub mod settings;
pub mod wallet;
pub mod warehouses;
pub mod webhooks;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tracing::Instrument;

use crate::app::AppState;
use crate::error::{panic_response, ApiError, Limited};
use crate::limit::LimitKey;
use auth::Identity;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let v1 = Router::new()
        .merge(options::router())
        .merge(listings::router())
        .merge(photos::router())
        .merge(bulk::router())
        .merge(settings::router())
        .merge(warehouses::router())
        .merge(webhooks::router())
        .merge(payouts::router())
        .merge(redemptions::router())
        .merge(credits::router())
        .merge(collections::router())
        .merge(wallet::router())
        .merge(people::router())
        .merge(docs::api_router())
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        // Inside the gate: it needs the caller's key, and replays count against the quota.
        .layer(middleware::from_fn_with_state(state.clone(), idempotency::idempotency))
        .layer(middleware::from_fn_with_state(state.clone(), gate));

    // The operator API sits outside the `/v1` gate, behind its own token (absent without one).
    let ops = ops::router(&state);
    let app = Router::new()
        .merge(health::router())
        .merge(docs::page_router())
        .merge(photos::media_router())
        .nest("/v1", v1)
        // The dashboard: outside the `/v1` gate, so its pages never count against the API's
        // per-address limit (decisions 9.6).
        .nest("/dashboard", crate::web::router())
        .route("/dashboard/", axum::routing::get(crate::web::to_home));
    let app = match ops {
        Some(ops) => app.nest("/ops/v1", ops),
        None => app,
    };
    app.fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(ObserveLayer)
        .with_state(state)
}

async fn unknown_route() -> ApiError {
    ApiError::not_found("not_found", "No such endpoint; see /v1/openapi.json for the API.")
}

async fn method_not_allowed() -> ApiError {
    ApiError::client(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "This endpoint does not accept that method.")
}

/// The key id of an authenticated request, left on the response for the access log.
#[derive(Clone, Copy)]
struct KeyId(i64);

/// Identifies the caller, spends one request of its quota, and writes the rate-limit
/// headers on whatever the request answers (errors included).
async fn gate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let client = client_ip(&request);
    let identity = state.keys.identify(request.headers(), client).await;
    let (limit_key, quota) = match &identity {
        Identity::Key(caller) => (LimitKey::Key(caller.key_id), caller.rate_limit.unwrap_or(state.config.rate_limit)),
        _ => (LimitKey::Addr(client), state.config.rate_limit),
    };
    let key_id = match &identity {
        Identity::Key(caller) => Some(KeyId(caller.key_id)),
        _ => None,
    };
    let decision = state.limiter.check(limit_key, quota).await;
    let mut response = if decision.allowed {
        request.extensions_mut().insert(identity);
        next.run(request).await
    } else {
        let by = if key_id.is_some() { Limited::Key } else { Limited::Address };
        ApiError::RateLimited { retry_after_secs: decision.retry_after, by }.into_response()
    };
    limit::write_headers(&decision, response.headers_mut());
    if let Some(key_id) = key_id {
        response.extensions_mut().insert(key_id);
    }
    response
}

/// The peer address of the connection; never a client-supplied header.
fn client_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// Gives every request an id (echoing a well-formed incoming one), runs it inside a
/// tracing span, and logs one line per response. A service of its own rather than
/// `middleware::from_fn`, which boxes and clones the inner service on every request.
#[derive(Clone, Copy)]
struct ObserveLayer;

impl<S> tower::Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Observe<S> {
        Observe { inner }
    }
}

#[derive(Clone)]
struct Observe<S> {
    inner: S,
}

impl<S> tower::Service<Request> for Observe<S>
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The ready service answers this request; a fresh clone waits for the next one.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(observe(request, inner))
    }
}

async fn observe<S>(mut request: Request, mut inner: S) -> Result<Response, std::convert::Infallible>
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>,
{
    let started = Instant::now();
    let given = request.headers().get(&REQUEST_ID).filter(|v| v.to_str().is_ok_and(well_formed_request_id));
    let request_id = match given {
        Some(given) => given.clone(),
        None => {
            let id = new_request_id();
            let value = HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("-"));
            request.headers_mut().insert(REQUEST_ID, value.clone());
            value
        }
    };
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let id_text = request_id.to_str().unwrap_or_default();
    let span = tracing::info_span!("request", request_id = %id_text, %method, %path);
    let mut response = match inner.call(request).instrument(span.clone()).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    response.headers_mut().insert(REQUEST_ID, request_id.clone());
    let key_id = response.extensions().get::<KeyId>().map(|k| k.0);
    let status = response.status().as_u16();
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| {
        if status >= 500 {
            tracing::error!(status, latency_ms, key_id, "response");
        } else {
            tracing::info!(status, latency_ms, key_id, "response");
        }
    });
    Ok(response)
}

/// A new request id: 32 hex digits, a random prefix drawn once per process and a counter.
/// Unique per process and across nodes (the prefix), without a system call per request
/// (a UUID v4 asks the kernel for randomness every time, ~5% of a `/healthz` answer).
fn new_request_id() -> String {
    static PREFIX: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| uuid::Uuid::new_v4().as_u64_pair().0);
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:016x}{n:016x}", *PREFIX)
}

/// Up to 128 visible characters from a conservative set, so logs and headers stay clean.
fn well_formed_request_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_request_ids_are_32_hex_digits_and_never_repeat() {
        let (a, b) = (new_request_id(), new_request_id());
        assert_ne!(a, b);
        assert!(a.len() == 32 && a.bytes().all(|c| c.is_ascii_hexdigit()) && well_formed_request_id(&a));
        assert_eq!(a[..16], b[..16], "one prefix per process");
    }

    #[test]
    fn request_ids_are_echoed_only_when_well_formed() {
        assert!(well_formed_request_id("req-123_abc.def:9"));
        assert!(!well_formed_request_id(""));
        assert!(!well_formed_request_id("has space"));
        assert!(!well_formed_request_id("<script>"));
        assert!(!well_formed_request_id(&"a".repeat(129)));
    }
}
