//! `If-Match` in, `412 precondition_failed` out (decisions 11.5); the tags themselves are
//! the domain's (`domain::precondition`).

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::outcome::Outcome;
use crate::domain::precondition::{content_etag, IfMatch};
use crate::error::ApiError;

/// The request's `If-Match` condition, if it sent one.
pub fn if_match(headers: &HeaderMap) -> Option<IfMatch> {
    let values: Vec<&str> = headers.get_all(header::IF_MATCH).iter().filter_map(|v| v.to_str().ok()).collect();
    (!values.is_empty()).then(|| IfMatch::parse(&values.join(",")))
}

/// A GET's answer, as a `304 Not Modified` when it is a 200 whose `ETag` the request's
/// `If-None-Match` (`none_match`) names (decisions 15.2): the validators and caching headers
/// stay, the body goes. Anything else passes unchanged.
pub fn revalidated(none_match: Option<&HeaderValue>, response: Response) -> Response {
    let (Some(header), StatusCode::OK) = (none_match.and_then(|v| v.to_str().ok()), response.status()) else {
        return response;
    };
    let Some(etag) = response.headers().get(header::ETAG).and_then(|v| v.to_str().ok()) else {
        return response;
    };
    if !crate::domain::precondition::none_match(header, etag) {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.status = StatusCode::NOT_MODIFIED;
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::empty())
}

pub fn precondition_failed() -> ApiError {
    Outcome::PreconditionFailed.into()
}

/// A JSON answer with a content `ETag`: the settings sections, which have no version.
pub struct Tagged<T>(pub T);

impl<T: Serialize> IntoResponse for Tagged<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(bytes) => {
                let etag = content_etag(&bytes);
                ([(header::CONTENT_TYPE, "application/json".to_owned()), (header::ETAG, etag)], bytes).into_response()
            }
            Err(e) => ApiError::Internal(anyhow::anyhow!("cannot serialise an answer: {e}")).into_response(),
        }
    }
}

/// The request's `If-Match`, if any, as a check of a resource's current state: it holds
/// when `represent` (the resource as a GET would answer it) carries a matching tag.
pub struct Guard<F> {
    condition: Option<IfMatch>,
    represent: F,
}

impl<F> Guard<F> {
    pub fn new(headers: &HeaderMap, represent: F) -> Self {
        Self { condition: if_match(headers), represent }
    }

    /// Whether `current` satisfies the condition (always, without one).
    pub fn holds<T, R: Serialize>(&self, current: &T) -> bool
    where
        F: Fn(&T) -> R,
    {
        self.condition.as_ref().is_none_or(|condition| {
            serde_json::to_vec(&(self.represent)(current)).is_ok_and(|bytes| condition.matches(&content_etag(&bytes)))
        })
    }

    /// Whether the request names a condition at all (without one nothing need be checked).
    pub fn is_set(&self) -> bool {
        self.condition.is_some()
    }
}
