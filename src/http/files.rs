//! Answers that are files (the bulk template, the error workbook, a statement PDF): the bytes
//! with their media type and an attachment name. The document declares each such answer
//! twice, as its own media type and as `application/octet-stream` (one schema, the same
//! bytes), because generated clients read bytes for the generic type and not for the
//! specific one (openapi-python-client yields a `File` only for `application/octet-stream`).
//! A request whose `Accept` prefers `application/octet-stream` to a binary file's own type is
//! answered with that type; any other `Accept` (or none) gets the file's own. Text files (a
//! CSV statement) are declared and answered as their own type only: generators read text.

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

/// The generic binary media type every file answer also declares.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// `bytes` as an attachment named `file_name`, typed `media_type` unless it is binary and the
/// request's `Accept` prefers `application/octet-stream`.
pub fn attachment(request: &HeaderMap, media_type: &str, file_name: &str, bytes: Vec<u8>) -> Response {
    let accept = request.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let binary = !media_type.starts_with("text/");
    let answered = if binary && prefers(accept, OCTET_STREAM, media_type) { OCTET_STREAM } else { media_type };
    let disposition = format!("attachment; filename=\"{file_name}\"");
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(answered) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// Whether `accept` gives `wanted` a higher quality than `own` (RFC 9110 §12.5.1: the most
/// specific range that matches a type sets its quality; a type no range matches has 0).
fn prefers(accept: &str, wanted: &str, own: &str) -> bool {
    quality(accept, wanted) > quality(accept, own)
}

/// The quality `accept` gives `media_type`, in thousandths; 1000 when `accept` is empty.
fn quality(accept: &str, media_type: &str) -> u32 {
    if accept.trim().is_empty() {
        return 1000;
    }
    let (kind, _) = media_type.split_once('/').unwrap_or((media_type, ""));
    let mut best: Option<(u8, u32)> = None;
    for range in accept.split(',') {
        let mut pieces = range.split(';');
        let name = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        let specificity = if name == media_type {
            3
        } else if name.strip_suffix("/*").is_some_and(|k| k == kind) {
            2
        } else if name == "*/*" {
            1
        } else {
            continue;
        };
        let q = pieces
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(1000, |(_, v)| thousandths(v.trim()));
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0, |(_, q)| q)
}

/// `0.5` → 500; a malformed weight counts as 0 (RFC 9110's `qvalue`, at most three decimals).
fn thousandths(value: &str) -> u32 {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let digits: String = fraction.chars().chain("000".chars()).take(3).collect();
    match (whole, digits.parse::<u32>()) {
        ("1", _) => 1000,
        ("0", Ok(part)) if fraction.len() <= 3 && fraction.chars().all(|c| c.is_ascii_digit()) => part,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDF: &str = "application/pdf";

    #[test]
    fn the_file_keeps_its_own_type_unless_the_generic_one_is_preferred() {
        assert!(!prefers("", OCTET_STREAM, PDF));
        assert!(!prefers("*/*", OCTET_STREAM, PDF));
        assert!(!prefers("application/json", OCTET_STREAM, PDF), "neither named: the file's own");
        assert!(!prefers("application/pdf, application/octet-stream", OCTET_STREAM, PDF));
        assert!(prefers("application/octet-stream", OCTET_STREAM, PDF));
        assert!(prefers("application/octet-stream, */*;q=0.1", OCTET_STREAM, PDF));
        assert!(prefers("application/pdf;q=0.5, application/octet-stream", OCTET_STREAM, PDF));
        assert!(!prefers("application/octet-stream;q=0.5, application/*", OCTET_STREAM, PDF));
    }

    #[test]
    fn weights_are_read_as_thousandths() {
        assert_eq!(thousandths("1"), 1000);
        assert_eq!(thousandths("1.000"), 1000);
        assert_eq!(thousandths("0.5"), 500);
        assert_eq!(thousandths("0.125"), 125);
        assert_eq!(thousandths("0"), 0);
        assert_eq!(thousandths("0.1234"), 0);
        assert_eq!(thousandths("x"), 0);
        assert_eq!(quality("application/pdf;q=0", PDF), 0);
        assert_eq!(quality("text/html", PDF), 0);
    }
}
