//! The metrics listener's application (`GET /metrics`), and the handler wrapper that tells
//! the edge which route answered a request.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::extract::{MatchedPath, Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::metrics::{method_index, Metrics, RouteSeries};
use crate::state::AppState;

/// The Prometheus text exposition format (version 0.0.4).
const TEXT_FORMAT: HeaderValue = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");

/// What the metrics listener answers: `GET /metrics`, and 404 for anything else.
pub fn app(state: AppState) -> Router {
    // Not counted: the request families are the public listener's.
    #[allow(clippy::disallowed_methods)]
    let scrape = get(scrape);
    Router::new().route("/metrics", scrape).fallback(|| async { StatusCode::NOT_FOUND }).with_state(state)
}

async fn scrape(State(state): State<AppState>) -> Response {
    let text = state.metrics.render(&state.store).await;
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], text).into_response()
}

/// A handler that hands the request series of its route and method to the edge with its
/// answer ([`take_answered_by`]); [`super::routing`]'s `get`, `post`, … wrap every handler
/// of the API, the dashboard and the probes in it.
///
/// It wraps the handler rather than the route (`route_layer`): a route layer is a boxed
/// service of its own, cloned and its future boxed on every request, which cost about a
/// thousand instructions per request; the wrapped handler is boxed once, as it was.
#[derive(Clone)]
pub struct Counted<H> {
    handler: H,
    /// By [`method_index`] (a `GET` route also answers `HEAD`), each resolved at the first
    /// request, from the route template axum matched.
    series: Arc<[OnceLock<Arc<RouteSeries>>; 8]>,
}

impl<H> Counted<H> {
    pub fn new(handler: H) -> Self {
        Self { handler, series: Arc::default() }
    }

    fn series(&self, request: &Request, metrics: &Metrics) -> Option<Arc<RouteSeries>> {
        let method = method_index(request.method());
        let slot = self.series.get(method)?;
        if let Some(series) = slot.get() {
            return Some(series.clone());
        }
        let route = request.extensions().get::<MatchedPath>()?;
        Some(slot.get_or_init(|| Arc::new(metrics.route_series(method, route.as_str()))).clone())
    }
}

impl<H, T> Handler<T, AppState> for Counted<H>
where
    H: Handler<T, AppState>,
{
    type Future = Recording<H::Future>;

    fn call(self, request: Request, state: AppState) -> Self::Future {
        let series = if state.config.metrics_addr.is_some() { self.series(&request, &state.metrics) } else { None };
        Recording { future: self.handler.call(request, state), series }
    }
}

pin_project_lite::pin_project! {
    pub struct Recording<F> {
        #[pin]
        future: F,
        series: Option<Arc<RouteSeries>>,
    }
}

impl<F: Future<Output = Response>> Future for Recording<F> {
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let this = self.project();
        let answer = std::task::ready!(this.future.poll(cx));
        if let Some(series) = this.series.take() {
            ANSWERED_BY.set(Some(series));
        }
        Poll::Ready(answer)
    }
}

thread_local! {
    /// The series of the route whose answer is ready, from the route to the edge. A route's
    /// answer is ready while the edge polls the request (the route's future runs inside the
    /// edge's, on the same thread), and the edge empties this before each poll and takes it
    /// after: a slot without an allocation or a map insert per request, as a response
    /// extension would be.
    static ANSWERED_BY: Cell<Option<Arc<RouteSeries>>> = const { Cell::new(None) };
}

/// Empties the slot before the edge polls a request (whatever a future polled outside the
/// edge left there is not this request's).
pub(super) fn clear_answered_by() {
    ANSWERED_BY.set(None);
}

/// The series of the route that answered during the edge's last poll, if one did.
pub(super) fn take_answered_by() -> Option<Arc<RouteSeries>> {
    ANSWERED_BY.take()
}

/// The route that answered, carried across a task: taken in the task where the route
/// answered ([`AnsweredBy::take`]), put back in the request's own task
/// ([`AnsweredBy::hand_on`]) as soon as that task has the answer.
pub(crate) struct AnsweredBy(Option<Arc<RouteSeries>>);

impl AnsweredBy {
    pub(crate) fn take() -> Self {
        Self(ANSWERED_BY.take())
    }

    pub(crate) fn hand_on(self) {
        if let Some(series) = self.0 {
            ANSWERED_BY.set(Some(series));
        }
    }
}
