//! Applies the rate limiter (see [`crate::limit`]) at the edge: the `X-RateLimit-*`
//! headers every response carries. A refusal's `Retry-After` is written by
//! [`ApiError::RateLimited`](crate::error::ApiError::RateLimited).

use axum::http::{HeaderMap, HeaderName, HeaderValue};

use crate::limit::Decision;

/// Writes what `decision` reports of the caller's quota on a response's headers.
pub fn write_headers(decision: &Decision, headers: &mut HeaderMap) {
    static LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
    static REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
    static RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
    headers.insert(LIMIT.clone(), HeaderValue::from(decision.limit));
    headers.insert(REMAINING.clone(), HeaderValue::from(decision.remaining));
    headers.insert(RESET.clone(), HeaderValue::from(decision.reset_at));
}
