//! Request bodies: JSON objects read with our own errors, so that even a syntax error or an
//! oversized body answers in the `{code, message}` shape.
//!
//! Two bounds keep a body from costing more than it weighs:
//! - **Its shape**, checked on the bytes before any value is built: more keys and items
//!   than [`MAX_JSON_MEMBERS`] or nesting deeper than [`MAX_JSON_DEPTH`] is refused at once
//!   (a 14 MB body of a million one-letter keys used to build a 300 MB map first). No body
//!   of the API comes near either: the largest, a listing with every list full, holds
//!   about 200 keys and items, three levels deep.
//! - **Large bodies at once**: a body over [`LARGE_BODY_BYTES`] is read and parsed only
//!   while it holds one of a few places ([`LargeBodies`]); when none frees up within
//!   [`LARGE_BODY_WAIT`] it is answered `503 server_busy` with `Retry-After`.

pub mod large;
pub mod memory;
pub mod multipart;

use std::pin::Pin;

use axum::body::HttpBody;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequest, Request};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use tokio::sync::OwnedSemaphorePermit;

use crate::error::{ApiError, HttpRefusal};
use crate::http::auth::Identity;
use crate::http::serve::BodyTooSlow;
use crate::state::AppState;
pub use large::{LargeBodies, LARGE_BODY_WAIT};

/// Most keys and array items, counted together at every level, a JSON body may hold: fifty
/// times the largest body of the API, and few enough that building them costs well under a
/// millisecond.
pub const MAX_JSON_MEMBERS: usize = 10_000;
/// Deepest nesting of objects and arrays in a JSON body (the API's deepest is 3).
pub const MAX_JSON_DEPTH: usize = 32;
/// A body over this size is large: it is read and parsed only while it holds a place.
pub const LARGE_BODY_BYTES: usize = 1024 * 1024;

/// A request body that is a JSON object. Fields are parsed by each resource, which reports
/// every bad field at once as `validation_failed`.
#[derive(Debug, Clone)]
pub struct JsonObject(pub Map<String, Value>);

impl FromRequest<AppState> for JsonObject {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        check_json_content_type(&request).map_err(IntoResponse::into_response)?;
        let body = read_body(request, state).await?;
        parse_object(&body.bytes).map(JsonObject).map_err(IntoResponse::into_response)
    }
}

/// A body that is a JSON object, or empty (read as `{}`); the content type is checked only
/// when there is a body.
#[derive(Debug, Clone)]
pub struct OptionalJsonObject(pub Map<String, Value>);

impl FromRequest<AppState> for OptionalJsonObject {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let content_type = check_json_content_type(&request);
        let body = read_body(request, state).await?;
        if body.bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(Map::new()));
        }
        content_type.map_err(IntoResponse::into_response)?;
        parse_object(&body.bytes).map(Self).map_err(IntoResponse::into_response)
    }
}

/// A whole request body; a large one keeps its place until this is dropped (after it is
/// parsed).
pub struct ReadBody {
    pub bytes: Vec<u8>,
    _place: Option<OwnedSemaphorePermit>,
    /// Its bytes, charged against the bodies' memory budgets until dropped.
    _charge: memory::Charge,
}

/// Reads the whole body, within the server's size limit, into one buffer sized from
/// `Content-Length` (no collect-then-copy). A body announced or found to be over
/// [`LARGE_BODY_BYTES`] first takes a place among the large bodies, or is answered 503.
pub async fn read_body(request: Request, state: &AppState) -> Result<ReadBody, Response> {
    let limit = state.config.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(payload_too_large().into_response());
    }
    // What it announces is charged before a byte is read; what comes beyond, as it comes.
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip());
    let key_id = match request.extensions().get::<Identity>() {
        Some(Identity::Key(caller)) => Some(caller.key_id),
        _ => None,
    };
    let mut charge = state.body_memory.charge(peer, key_id);
    charge.grow(declared.unwrap_or(0) as u64).map_err(over_budget)?;
    let mut place = None;
    if declared.is_some_and(|n| n > LARGE_BODY_BYTES) {
        place = Some(state.large_bodies.enter().await.ok_or_else(large_bodies_busy)?);
    }
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(limit));
    let mut stream = request.into_body();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_frame(cx)).await {
        let frame = frame.map_err(|e| unreadable(&e).into_response())?;
        let Ok(data) = frame.into_data() else { continue };
        if bytes.len() + data.len() > limit {
            return Err(payload_too_large().into_response());
        }
        let held = (bytes.len() + data.len()) as u64;
        charge.grow(held.saturating_sub(charge.bytes())).map_err(over_budget)?;
        if place.is_none() && bytes.len() + data.len() > LARGE_BODY_BYTES {
            place = Some(state.large_bodies.enter().await.ok_or_else(large_bodies_busy)?);
        }
        bytes.extend_from_slice(&data);
    }
    Ok(ReadBody { bytes, _place: place, _charge: charge })
}

/// A body refused by a memory budget, before more of it is read: `429 rate_limited` over
/// its network's or its key's, `503 server_busy` over the server's; all `Retry-After: 1`.
fn over_budget(over: memory::Over) -> Response {
    let message = match over {
        memory::Over::Server => {
            return busy("The server holds as many request bodies as it takes at once; retry in a moment.")
        }
        memory::Over::Network => {
            "Your network is sending as many request bodies at once as one network may; retry once some have \
             finished."
        }
        memory::Over::Key => {
            "This API key is sending as many request bodies at once as one key may; retry once some have finished."
        }
    };
    let mut response = ApiError::from(HttpRefusal::BodiesLimited(message)).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `503 server_busy` with `Retry-After: 1`: the large bodies' places are all taken.
fn large_bodies_busy() -> Response {
    busy("The server is reading as many large request bodies as it takes at once; retry in a moment.")
}

/// `503 server_busy` with `Retry-After: 1`, and `message`.
pub fn busy(message: &'static str) -> Response {
    let mut response = ApiError::from(HttpRefusal::Busy(message)).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Why a body could not be read: it arrived too slowly (408 `request_timeout`), or it broke
/// off (`invalid_body`).
pub fn unreadable(error: &(dyn std::error::Error + 'static)) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if e.is::<BodyTooSlow>() {
            return HttpRefusal::TooSlow.into();
        }
        cause = e.source();
    }
    ApiError::invalid_body("The request body could not be read.")
}

pub fn payload_too_large() -> ApiError {
    HttpRefusal::TooLarge.into()
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
        Err(HttpRefusal::NotJson.into())
    }
}

/// Parses bytes that must hold one JSON object, within [`MAX_JSON_MEMBERS`] and
/// [`MAX_JSON_DEPTH`].
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    check_shape(bytes)?;
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

/// Refuses JSON text holding more keys and items than [`MAX_JSON_MEMBERS`] or nesting
/// deeper than [`MAX_JSON_DEPTH`], from its bytes alone, stopping where it passes the bound.
/// Keys and items are counted from above: each comma and each opening bracket outside
/// strings may start one. Strings are skipped with `memchr` (a 14 MB photo in base64 is
/// passed over in about a millisecond). Text that is not JSON may be miscounted; the parser
/// then refuses it anyway.
fn check_shape(bytes: &[u8]) -> Result<(), ApiError> {
    let (mut depth, mut members, mut at) = (0usize, 0usize, 0usize);
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                at += 1;
                // To the closing quote, stepping over escapes (`\"` included).
                loop {
                    let Some(found) = bytes.get(at..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) else {
                        return Ok(());
                    };
                    at += found;
                    if bytes[at] == b'"' {
                        break;
                    }
                    at += 2;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                members += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(ApiError::invalid_body(format!(
                        "The request body nests objects and arrays more than {MAX_JSON_DEPTH} deep; no body of this API \
                         nests more than 3."
                    )));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => members += 1,
            _ => {}
        }
        if members > MAX_JSON_MEMBERS {
            return Err(ApiError::invalid_body(format!(
                "The request body holds more than {MAX_JSON_MEMBERS} keys and array items; no body of this API \
                 holds more than a few hundred."
            )));
        }
        at += 1;
    }
    Ok(())
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

    fn message(result: Result<Map<String, Value>, ApiError>) -> String {
        match result {
            Err(ApiError::Client { message, .. }) => message.into_owned(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn too_many_keys_or_items_are_refused_before_parsing() {
        let keys = |n: usize| {
            let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":1")).collect();
            format!("{{{}}}", members.join(","))
        };
        assert!(parse_object(keys(MAX_JSON_MEMBERS - 1).as_bytes()).is_ok());
        let refused = message(parse_object(keys(MAX_JSON_MEMBERS + 1).as_bytes()));
        assert!(refused.contains("more than 10000 keys and array items"), "{refused}");
        let items = format!("{{\"ids\":[{}]}}", vec!["1"; MAX_JSON_MEMBERS + 1].join(","));
        assert!(message(parse_object(items.as_bytes())).contains("keys and array items"));
        // Commas and brackets inside strings, escaped quotes included, are text.
        let text = format!("{{\"a\":\"{}\\\"{}\"}}", ",[{".repeat(20_000), ",".repeat(20_000));
        assert!(parse_object(text.as_bytes()).is_ok());
    }

    #[test]
    fn nesting_deeper_than_the_bound_is_refused() {
        let nested = |depth: usize| format!("{{\"a\":{}1{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        assert!(parse_object(nested(MAX_JSON_DEPTH).as_bytes()).is_ok());
        let refused = message(parse_object(nested(MAX_JSON_DEPTH + 1).as_bytes()));
        assert!(refused.contains("more than 32 deep"), "{refused}");
    }
}
