//! Request bodies: JSON objects read with our own errors, so that even a syntax error or an
//! oversized body answers in the `{code, message}` shape.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, StatusCode};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::http::serve::BodyTooSlow;

/// A request body that is a JSON object. Fields are parsed by each resource, which reports
/// every bad field at once as `validation_failed`.
#[derive(Debug, Clone)]
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        check_json_content_type(&request)?;
        let bytes = read_bytes(request, state).await?;
        parse_object(&bytes).map(JsonObject)
    }
}

/// A body that is a JSON object, or empty (read as `{}`); the content type is checked only
/// when there is a body.
#[derive(Debug, Clone)]
pub struct OptionalJsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for OptionalJsonObject {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let content_type = check_json_content_type(&request);
        let bytes = read_bytes(request, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(Map::new()));
        }
        content_type?;
        parse_object(&bytes).map(Self)
    }
}

/// The whole body, within the server's size limit.
async fn read_bytes<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            payload_too_large()
        } else {
            unreadable(&rejection)
        }
    })
}

/// Why a body could not be read: it arrived too slowly (408 `request_timeout`), or it broke
/// off (`invalid_body`).
pub fn unreadable(error: &(dyn std::error::Error + 'static)) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if e.is::<BodyTooSlow>() {
            return ApiError::client(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                "The request body arrived too slowly; send it again on a faster connection.",
            );
        }
        cause = e.source();
    }
    ApiError::invalid_body("The request body could not be read.")
}

pub fn payload_too_large() -> ApiError {
    ApiError::client(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        "The request body is larger than the server accepts.",
    )
}

/// A JSON endpoint accepts `application/json` (or any `+json` type); a body without a
/// content type is read as JSON too.
pub fn check_json_content_type(request: &Request) -> Result<(), ApiError> {
    let Some(value) = request.headers().get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let mime = value.to_str().unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json")) {
        Ok(())
    } else {
        Err(ApiError::client(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Send the body as JSON with 'Content-Type: application/json'.",
        ))
    }
}

/// Parses bytes that must hold one JSON object.
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid_body("The request body must be a JSON object.")),
        Err(_) if bytes.iter().all(u8::is_ascii_whitespace) => {
            Err(ApiError::invalid_body("The request body is empty; send a JSON object."))
        }
        Err(e) => Err(ApiError::invalid_body(format!(
            "The request body is not valid JSON (line {}, column {}).",
            e.line(),
            e.column()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<Map<String, Value>, ApiError>) -> String {
        match result {
            Err(ApiError::Client { code, .. }) => code.to_owned(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn only_objects_are_accepted() {
        assert!(parse_object(br#"{"a": 1}"#).is_ok());
        assert_eq!(code(parse_object(b"[1, 2]")), "invalid_body");
        assert_eq!(code(parse_object(b"\"text\"")), "invalid_body");
        assert_eq!(code(parse_object(b"null")), "invalid_body");
        assert_eq!(code(parse_object(b"{\"a\": ")), "invalid_body");
        assert_eq!(code(parse_object(b"")), "invalid_body");
    }
}
