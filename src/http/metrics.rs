//! The metrics listener's application (`GET /metrics`), and the layer that tells the edge
//! which route template answered a request.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::app::AppState;

/// The Prometheus text exposition format (version 0.0.4).
const TEXT_FORMAT: HeaderValue = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");

/// What the metrics listener answers: `GET /metrics`, and 404 for anything else.
pub fn app(state: AppState) -> Router {
    Router::new().route("/metrics", get(scrape)).fallback(|| async { StatusCode::NOT_FOUND }).with_state(state)
}

async fn scrape(State(state): State<AppState>) -> Response {
    let text = state.metrics.render(&state.store).await;
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], text).into_response()
}

/// The route template of the route that answered, left on its response for the edge's
/// request counter (axum gives it to the request, which the edge no longer holds).
#[derive(Clone)]
pub(super) struct AnsweredBy(pub MatchedPath);

/// Put on a router's routes with `route_layer`: each answer carries [`AnsweredBy`].
#[derive(Clone, Copy)]
pub(super) struct RecordRoute;

impl<S> tower::Layer<S> for RecordRoute {
    type Service = Recorded<S>;

    fn layer(&self, inner: S) -> Recorded<S> {
        Recorded { inner }
    }
}

#[derive(Clone)]
pub(super) struct Recorded<S> {
    inner: S,
}

impl<S> tower::Service<Request> for Recorded<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Recording<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let route = request.extensions().get::<MatchedPath>().cloned();
        Recording { future: self.inner.call(request), route }
    }
}

pin_project_lite::pin_project! {
    pub(super) struct Recording<F> {
        #[pin]
        future: F,
        route: Option<MatchedPath>,
    }
}

impl<F> Future for Recording<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(mut response) = std::task::ready!(this.future.poll(cx));
        if let Some(route) = this.route.take() {
            response.extensions_mut().insert(AnsweredBy(route));
        }
        Poll::Ready(Ok(response))
    }
}
