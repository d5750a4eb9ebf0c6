//! `If-Match` in, `412 precondition_failed` out (decisions 11.5); the tags themselves are
//! the domain's (`domain::precondition`).

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::precondition::{content_etag, IfMatch};
use crate::error::ApiError;

/// The request's `If-Match` condition, if it sent one.
pub fn if_match(headers: &HeaderMap) -> Option<IfMatch> {
    let values: Vec<&str> = headers.get_all(header::IF_MATCH).iter().filter_map(|v| v.to_str().ok()).collect();
    (!values.is_empty()).then(|| IfMatch::parse(&values.join(",")))
}

pub fn precondition_failed() -> ApiError {
    ApiError::client(
        StatusCode::PRECONDITION_FAILED,
        "precondition_failed",
        "If-Match does not match the current version (it changed since you read it); nothing was changed. \
         Read it again and retry.",
    )
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

/// Refuses with 412 unless the representation `current` (as a GET would answer it now)
/// satisfies the request's `If-Match`; no condition passes. The check and the write that
/// follows are separate statements: a concurrent PATCH between them is not detected.
pub fn require<T: Serialize>(headers: &HeaderMap, current: &T) -> Result<(), ApiError> {
    let Some(condition) = if_match(headers) else {
        return Ok(());
    };
    let bytes = serde_json::to_vec(current).map_err(|e| ApiError::Internal(e.into()))?;
    if condition.matches(&content_etag(&bytes)) {
        Ok(())
    } else {
        Err(precondition_failed())
    }
}
