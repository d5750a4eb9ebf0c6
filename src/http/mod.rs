//! The HTTP edge: the router, the middleware every request passes, and one module per resource.

pub mod auth;
pub mod body;
pub mod bulk;
pub mod collections;
pub mod credits;
pub mod docs;
pub mod files;
mod health;
pub mod idempotency;
pub mod json;
pub mod limit;
pub mod listings;
pub mod metrics;
pub mod ops;
pub mod options;
pub mod payouts;
pub mod people;
pub mod photos;
pub mod precondition;
pub mod query;
pub mod redemptions;
pub mod routing;
pub mod serve;
pub mod settings;
pub mod wallet;
pub mod warehouses;
pub mod webhooks;

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::FutureExt;

use crate::error::{panic_response, ApiError, HttpRefusal, Limited};
use crate::limit::LimitKey;
use crate::metrics::{method_index, Metrics, RateLimit, RouteSeries};
use crate::state::AppState;
use auth::Identity;
pub use json::Json;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Where the API is mounted; the router strips it before the API's own routes see a request.
pub const V1: &str = "/v1";

/// The whole application as one service: `routes` (the API's and the dashboard's, which the
/// composition root `app` merges) inside the edge every request passes (request id and
/// access log, a panic answered 500). The edge wraps the router once: `Router::layer` would
/// wrap every route in it, and each request cloned the boxed stack of its route (`/healthz`
/// went from 38 allocations a request to 21; issue 19).
///
/// With a metrics listener, every answer is also counted by method, route template and
/// status (the handlers of `routing` name their route); without one nothing is recorded.
pub fn edge(routes: Router, state: &AppState) -> impl serve::App {
    let metrics = state.config.metrics_addr.is_some().then(|| state.metrics.clone());
    Observed { inner: routes, metrics }
}

/// The body limit for axum's extractors (JSON, bytes, multipart) where bodies are read:
/// the API, the dashboard and the operator API, not the probes, docs and media (it is an
/// extension inserted into every request it wraps).
pub fn body_limit(state: &AppState) -> DefaultBodyLimit {
    DefaultBodyLimit::max(state.config.max_body_bytes)
}

/// The API's routes: `/v1` behind its gate, probes, docs, media and the operator API. The
/// dashboard is merged beside them by `app`; the fallbacks are [`unknown_route`] and
/// [`method_not_allowed`].
pub fn routes(state: &AppState) -> Router<AppState> {
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
        .merge(people::router());
    let v1 = v1.fallback(unknown_route).method_not_allowed_fallback(method_not_allowed).with_state(state.clone());
    let limit = body_limit(state);
    // The gate wraps the `/v1` router as a whole, not each of its routes (see `edge`).
    let v1 = gated(state.clone(), tower::Layer::layer(&limit, v1));

    // The operator API sits outside the `/v1` gate, behind its own token (absent without one).
    let ops = ops::router(state).map(|ops| ops.layer(limit));
    let app = Router::new().merge(health::router()).merge(docs::page_router()).merge(photos::media_router());
    let app = match ops {
        Some(ops) => app.nest("/ops/v1", ops),
        None => app,
    };
    app.nest_service(V1, v1)
}

/// The answer to a path no route serves.
pub async fn unknown_route() -> ApiError {
    HttpRefusal::NoRoute.into()
}

/// The answer to a method a route does not serve.
pub async fn method_not_allowed() -> ApiError {
    HttpRefusal::MethodNotAllowed.into()
}

/// The key id of an authenticated request, left on the response for the access log.
#[derive(Clone, Copy)]
struct KeyId(i64);

/// A service that runs `run(context, request, inner)` for every request: what
/// `middleware::from_fn_with_state` does, without boxing and cloning the inner service on
/// every request as that does. The `/v1` gate is made of it.
#[derive(Clone)]
struct Around<C, S> {
    context: C,
    inner: S,
    run: fn(C, Request, S) -> BoxFuture<Response>,
}

impl<C, S> tower::Service<Request> for Around<C, S>
where
    C: Clone,
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures_util::future::Map<BoxFuture<Response>, fn(Response) -> Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        (self.run)(self.context.clone(), request, take_ready(&mut self.inner)).map(Ok)
    }
}

/// The `/v1` gate around `inner`: [`gate`] on every request, then `Idempotency-Key`
/// (inside the gate: it needs the caller's key, and replays count against the quota).
fn gated<S>(state: AppState, inner: S) -> Around<AppState, S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    Around { context: state, inner, run: |state, request, inner| Box::pin(gate(state, request, inner)) }
}

/// The service that was polled ready, leaving a fresh clone for the next request.
fn take_ready<S: Clone>(service: &mut S) -> S {
    let clone = service.clone();
    std::mem::replace(service, clone)
}

/// A boxed answer to come.
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Identifies the caller, spends one request of its quota, and writes the rate-limit
/// headers on whatever the request answers (errors included).
async fn gate<S>(state: AppState, mut request: Request, inner: S) -> Response
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let client = client_ip(&request);
    let identity = auth::identify(&state.keys, request.headers(), client).await;
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
        // A GET that names the ETag of what it would answer gets a 304 (decisions 15.2).
        let none_match = matches!(*request.method(), Method::GET | Method::HEAD)
            .then(|| request.headers().get(header::IF_NONE_MATCH).cloned())
            .flatten();
        let response = idempotency::idempotency(&state, request, inner).await;
        precondition::revalidated(none_match.as_ref(), response)
    } else {
        let by = if key_id.is_some() { Limited::Key } else { Limited::Address };
        state.metrics.rate_limited(if key_id.is_some() { RateLimit::Key } else { RateLimit::Address });
        ApiError::RateLimited { retry_after_secs: decision.retry_after, by }.into_response()
    };
    limit::write_headers(&decision, response.headers_mut());
    if let Some(key_id) = key_id {
        response.extensions_mut().insert(key_id);
    }
    response
}

/// The peer address of the connection; never a client-supplied header.
pub(crate) fn client_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// Around `inner`: gives every request an id (echoing a well-formed incoming one), runs it
/// inside a tracing span, answers a panic with 500, and logs one line per response.
///
/// A service and future of its own rather than an `async fn` in a box: every request
/// passes it, and the boxed state machine cost a copy of the request and of the future at
/// each step (about a tenth of a `/healthz` answer's instructions; issue 19).
#[derive(Clone)]
struct Observed<S> {
    inner: S,
    /// Counts every answer, when the metrics listener is on.
    metrics: Option<Arc<Metrics>>,
}

#[cfg(test)]
fn observed<S>(inner: S) -> Observed<S> {
    Observed { inner, metrics: None }
}

impl<S> tower::Service<Request> for Observed<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Observing<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Handlers see the id through the span, not the request's headers: a new one goes
        // straight to the response.
        let given = request.headers().get(&REQUEST_ID).filter(|v| v.to_str().is_ok_and(well_formed_request_id));
        let request_id = given.cloned().unwrap_or_else(new_request_id);
        let id_text = request_id.to_str().unwrap_or_default();
        // The fields are read only when the span is enabled (the access log's level), and
        // the clock only then too: the latency is for the log line.
        let span = tracing::info_span!("request", request_id = %id_text, method = %request.method(), path = %request.uri().path());
        // The clock is read for the log line's latency and the metrics' histogram.
        let started = (!span.is_disabled() || self.metrics.is_some()).then(Instant::now);
        let counted = self.metrics.clone().map(|metrics| (metrics, method_index(request.method())));
        let called = {
            let _entered = span.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request)))
        };
        let (future, panic) = match called {
            Ok(future) => (Some(future), None),
            Err(panic) => (None, Some(panic)),
        };
        Observing { future, panic, span, request_id: Some(request_id), started, counted, answered_by: None }
    }
}

pin_project_lite::pin_project! {
    /// The answer to one request under [`Observed`].
    struct Observing<F> {
        #[pin]
        future: Option<F>,
        // The panic of the inner service's `call`, answered at the first poll.
        panic: Option<Box<dyn std::any::Any + Send>>,
        span: tracing::Span,
        // Taken when the answer is given.
        request_id: Option<HeaderValue>,
        started: Option<Instant>,
        // The metrics to count the answer into, and the request's method (`method_index`).
        counted: Option<(Arc<Metrics>, usize)>,
        // The series of the route that answered (`metrics::take_answered_by`).
        answered_by: Option<Arc<RouteSeries>>,
    }
}

impl<F> Future for Observing<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let _entered = this.span.enter();
        let counting = this.counted.is_some();
        if counting {
            metrics::clear_answered_by();
        }
        let answered = match this.future.as_mut().as_pin_mut() {
            Some(future) => match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                Ok(Poll::Pending) => {
                    // A route may answer while a layer outside it still works (an idempotent
                    // request's answer being stored).
                    if let Some(series) = counting.then(metrics::take_answered_by).flatten() {
                        *this.answered_by = Some(series);
                    }
                    return Poll::Pending;
                }
                Ok(Poll::Ready(Ok(response))) => Ok(response),
                Ok(Poll::Ready(Err(never))) => match never {},
                Err(panic) => Err(panic),
            },
            None => Err(this.panic.take().unwrap_or_else(|| Box::new("polled after its answer"))),
        };
        this.future.set(None);
        let mut response = answered.unwrap_or_else(panic_response);
        if let Some(request_id) = this.request_id.take() {
            response.headers_mut().insert(REQUEST_ID, request_id);
        }
        let key_id = response.extensions().get::<KeyId>().map(|k| k.0);
        let status = response.status().as_u16();
        let elapsed = this.started.map(|started| started.elapsed()).unwrap_or_default();
        if let Some((metrics, method)) = this.counted.take() {
            let answered_by = metrics::take_answered_by().or_else(|| this.answered_by.take());
            let series = answered_by.as_deref().unwrap_or_else(|| metrics.unmatched(method));
            series.record(response.status(), elapsed);
        }
        let latency_ms = elapsed.as_secs_f64() * 1000.0;
        if status >= 500 {
            tracing::error!(status, latency_ms, key_id, "response");
        } else {
            tracing::info!(status, latency_ms, key_id, "response");
        }
        Poll::Ready(Ok(response))
    }
}

/// A new request id: 32 hex digits, a random prefix drawn once per process and a counter.
/// Unique per process and across nodes (the prefix), without a system call per request
/// (a UUID v4 asks the kernel for randomness every time, ~5% of a `/healthz` answer).
fn new_request_id() -> HeaderValue {
    static PREFIX: std::sync::LazyLock<[u8; 16]> =
        std::sync::LazyLock::new(|| hex_digits(uuid::Uuid::new_v4().as_u64_pair().0));
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut id = [0u8; 32];
    id[..16].copy_from_slice(&*PREFIX);
    id[16..].copy_from_slice(&hex_digits(n));
    HeaderValue::from_bytes(&id).unwrap_or_else(|_| HeaderValue::from_static("-"))
}

/// `n` as 16 lowercase hex digits, most significant first.
fn hex_digits(n: u64) -> [u8; 16] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, pair) in out.chunks_exact_mut(2).enumerate() {
        let byte = n.to_be_bytes()[i];
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
    out
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
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        assert_ne!(a, b);
        let n = u64::from_str_radix(&a[16..], 16).unwrap();
        assert!(u64::from_str_radix(&b[16..], 16).unwrap() > n, "a counter in hex");
        assert!(a.len() == 32 && a.bytes().all(|c| c.is_ascii_hexdigit()) && well_formed_request_id(a));
        assert_eq!(a[..16], b[..16], "one prefix per process");
    }

    /// A panic, whether the service panics while called or while its answer runs, is
    /// answered 500 `internal_error` with the request's id, and the server goes on.
    #[tokio::test]
    async fn a_panic_is_answered_500_with_the_request_id() {
        use tower::ServiceExt;
        let in_future = tower::service_fn(|_: Request| async {
            if true {
                panic!("boom in the answer");
            }
            Ok::<Response, Infallible>(Response::new(axum::body::Body::empty()))
        });
        #[derive(Clone)]
        struct PanicsWhenCalled;
        impl tower::Service<Request> for PanicsWhenCalled {
            type Response = Response;
            type Error = Infallible;
            type Future = std::future::Ready<Result<Response, Infallible>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: Request) -> Self::Future {
                panic!("boom in call")
            }
        }
        let answers = [
            observed(in_future).oneshot(Request::new(axum::body::Body::empty())).await,
            observed(PanicsWhenCalled).oneshot(Request::new(axum::body::Body::empty())).await,
        ];
        for answer in answers {
            let Ok(response) = answer;
            assert_eq!(response.status(), axum::http::StatusCode::INTERNAL_SERVER_ERROR);
            assert!(response.headers().get(&REQUEST_ID).is_some_and(|id| id.len() == 32));
            let body = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["code"], "internal_error");
        }
    }

    #[test]
    fn hex_digits_are_the_number_in_lowercase_hex() {
        for n in [0, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(std::str::from_utf8(&hex_digits(n)).unwrap(), format!("{n:016x}"));
        }
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
