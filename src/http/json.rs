//! JSON answers. axum's `Json` writes into a 128-byte `BytesMut` a piece at a time: a
//! listing's detail (about 1.2 KB) grew it four times, and each of its ~300 pieces went
//! through `BufMut::put_slice` (a quarter of the serialising). This one writes into a
//! `Vec` sized for a typical answer.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// What most answers fit in without growing; a page of a hundred grows a few times.
const INITIAL_CAPACITY: usize = 2048;

/// The code and message of `500 internal_error`, when nothing more can be said: what
/// the API error type answers for a failure it does not describe, and what an answer
/// that cannot be serialised becomes.
pub const INTERNAL_ERROR_CODE: &str = "internal_error";
pub const INTERNAL_ERROR_MESSAGE: &str = "The server failed to handle the request; it has been logged.";

/// `500 internal_error` as JSON.
pub fn internal_error() -> Response {
    let body = serde_json::json!({"code": INTERNAL_ERROR_CODE, "message": INTERNAL_ERROR_MESSAGE});
    let mut response = Json(body).into_response();
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}

/// An answer serialised as JSON (`application/json`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(INITIAL_CAPACITY);
        if let Err(e) = serde_json::to_writer(&mut body, &self.0) {
            tracing::error!(error = %e, "an answer could not be serialised");
            return internal_error();
        }
        let mut response = Response::new(Body::from(body));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_are_the_value_as_json() {
        let value = serde_json::json!({"title": "Sofa \"Deep\"", "price": 120, "tags": ["a", "é"]});
        let response = Json(&value).into_response();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&bytes).unwrap(), value);
    }

    #[tokio::test]
    async fn a_value_that_cannot_be_json_is_an_internal_error() {
        let mut map = std::collections::BTreeMap::new();
        map.insert(vec![1u8], 1);
        let response = Json(map).into_response();
        assert_eq!(response.status(), 500);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["code"], "internal_error");
    }
}
