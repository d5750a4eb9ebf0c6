//! `Idempotency-Key` on the writes under `/v1` (decisions 11.1), as a layer inside the
//! authentication gate: a request with the header claims the key for its API key in the
//! database before it runs, so a duplicate — on this node or another — never runs twice; a
//! 2xx answer is kept for 24 hours and repeated byte for byte to the same request (its
//! `ETag`, `Location` and `Content-Disposition` too), with `Idempotent-Replayed: true`. The
//! same request is the same method, path and parsed JSON body (decisions 11.6). Requests without the header pass straight through.

use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::TimeDelta;

use crate::domain::idempotency::{fingerprint, repeat, valid_key, Repeat, HEADER, KEPT_HEADERS, REPLAYED_HEADER};
use crate::domain::idempotency::{Claim as IdempotencyClaim, KeptAnswer, KeyClaim};
use crate::domain::time::Ts;
use crate::error::{ApiError, HttpRefusal};
use crate::http::auth::Identity;
use crate::http::body::multipart;
use crate::http::body::payload_too_large;
use crate::http::metrics::AnsweredBy;
use crate::http::V1;
use crate::state::AppState;

mod routes;
pub use crate::idempotency::IdempotencyLog;

/// How long a request may hold its key before another node may take the key over (the
/// holder's node died): longer than any request runs.
const LEASE: Duration = Duration::from_secs(600);

pub async fn idempotency<S>(state: &AppState, request: Request, next: S) -> Response
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    if !matches!(*request.method(), Method::POST | Method::PATCH | Method::DELETE) {
        return run(next, request).await;
    }
    let Some(value) = request.headers().get(HEADER) else {
        return run(next, request).await;
    };
    // Without a usable key the handler answers 401 or 403 as it would anyway.
    let Some(Identity::Key(caller)) = request.extensions().get::<Identity>() else {
        return run(next, request).await;
    };
    // The path and query as the client sent them: the router strips the API's prefix
    // before the gate sees the request.
    let uri = request.uri();
    // A method the route does not take, or no route: 405 or 404 as without a key.
    if !routes::is_write(request.method(), &format!("{V1}{}", uri.path())) {
        return run(next, request).await;
    }
    let path = format!("{V1}{}", uri.path_and_query().map_or(uri.path(), |p| p.as_str()));
    let Some(key) = value.to_str().ok().filter(|k| valid_key(k.as_bytes())).map(str::to_owned) else {
        return invalid_key().into_response();
    };
    let key_id = caller.key_id;
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, state.config.max_body_bytes).await {
        Ok(bytes) => bytes,
        // Too slow, or (whatever else broke it off) over the size limit, as before.
        Err(e) => {
            let unreadable = crate::http::body::unreadable(&e);
            let answer =
                if unreadable.status() == StatusCode::REQUEST_TIMEOUT { unreadable } else { payload_too_large() };
            return answer.into_response();
        }
    };
    // A form is compared by its parts, not its bytes: the boundary is the client's pick for
    // each send (decisions 15.1), so the same form sent again is the same request.
    let form = match multipart::boundary(&parts.headers) {
        Some(boundary) => multipart::parts(&boundary, bytes.clone()).await.ok().map(|form| multipart::canonical(&form)),
        None => None,
    };
    let print = fingerprint(parts.method.as_str(), &path, form.as_deref().unwrap_or(&bytes));
    let now = Ts::from(state.core.clock.now());
    let ttl = TimeDelta::seconds(i64::try_from(state.config.idempotency_ttl_s).unwrap_or(i64::MAX));
    let lease_until = Ts::from(now.get() + TimeDelta::from_std(LEASE).unwrap_or_default());
    let expires_at = Ts::from(now.get() + ttl);
    let claim = KeyClaim { key_id, key: key.clone(), fingerprint: print, now, lease_until, expires_at };
    match state.idempotency.claim(claim).await {
        // A full disk or an unreachable database answers 507 or 503 as any write would.
        Err(e) => return ApiError::from_shared(&e).into_response(),
        Ok(IdempotencyClaim::Held(kept)) => return answer_repeat(repeat(kept, &print)),
        Ok(IdempotencyClaim::Claimed) => {}
    }

    // Run to the end even if the client goes away, so the key is always completed or
    // released, never left holding an answer nobody kept.
    let request = Request::from_parts(parts, Body::from(bytes));
    let response = match tokio::spawn(run_apart(next, request)).await {
        Ok((response, answered_by)) => {
            answered_by.hand_on();
            response
        }
        Err(e) => {
            release(state, key_id, key).await;
            return ApiError::Internal(anyhow::anyhow!("handler failed: {e}")).into_response();
        }
    };
    if !response.status().is_success() {
        release(state, key_id, key).await;
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, usize::MAX).await else {
        release(state, key_id, key).await;
        return ApiError::Internal(anyhow::anyhow!("cannot read the answer to keep")).into_response();
    };
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let headers = KEPT_HEADERS
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), parts.headers.get(*name)?.to_str().ok()?.to_owned())))
        .collect();
    let answer = KeptAnswer { key_id, key, status: parts.status.as_u16(), content_type, headers, body: bytes.clone() };
    if let Err(e) = state.idempotency.keep(answer).await {
        // The change is done: the key stays held until its lease ends rather than let a
        // retry run it again.
        tracing::error!(error = %e, key_id, "cannot keep an idempotent answer");
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The rest of the stack's answer to `request`.
async fn run<S>(inner: S, request: Request) -> Response
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>,
{
    match tower::ServiceExt::oneshot(inner, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// [`run`] in a task of its own, with the route that answered (for the request counters: a
/// route tells the edge on the thread it answered on, that task's).
async fn run_apart<S>(inner: S, request: Request) -> (Response, AnsweredBy)
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>,
{
    let response = run(inner, request).await;
    (response, AnsweredBy::take())
}

async fn release(state: &AppState, key_id: i64, key: String) {
    if let Err(e) = state.idempotency.release(key_id, key).await {
        tracing::warn!(error = %e, key_id, "cannot release an idempotency key (it frees itself at its lease's end)");
    }
}

fn answer_repeat(repeat: Repeat) -> Response {
    match repeat {
        Repeat::Replay { status, content_type, headers, body } => {
            let mut response = Response::new(Body::from(body));
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            if let Some(value) = content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            for (name, value) in headers {
                let name = header::HeaderName::from_bytes(name.as_bytes());
                if let (Ok(name), Ok(value)) = (name, HeaderValue::from_str(&value)) {
                    response.headers_mut().insert(name, value);
                }
            }
            response.headers_mut().insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
            response
        }
        Repeat::InUse => ApiError::from(HttpRefusal::IdempotencyKeyInUse).into_response(),
        Repeat::Reused => ApiError::from(HttpRefusal::IdempotencyKeyReused).into_response(),
    }
}

fn invalid_key() -> ApiError {
    HttpRefusal::IdempotencyKeyInvalid.into()
}
