//! `multipart/form-data` bodies (decisions 15.1): the photo upload and the bulk files take a
//! file part named `file` beside their JSON form. The body is read first by
//! [`read_body`](super::read_body), within the same size limit, large-body places and
//! minimum rate as a JSON body; its parts are then taken apart from that buffer, at most
//! [`MAX_PARTS`] of them.

use axum::http::{header, HeaderMap};
use bytes::Bytes;

use crate::error::ApiError;

/// Most parts a form may have: the API's forms have two or three.
pub const MAX_PARTS: usize = 16;
/// Longest name, file name or content type of a part kept.
const MAX_LABEL: usize = 255;

/// One part of a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    /// The file name a file part carries.
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Bytes,
}

impl Part {
    /// The part as text (a form field), `None` when it is not UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// The boundary of a `multipart/form-data` content type; `None` for any other type.
pub fn boundary(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let mime = value.split(';').next().unwrap_or("").trim();
    if !mime.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    multer::parse_boundary(value).ok()
}

/// The parts of a form read whole into `body`, in order.
pub async fn parts(boundary: &str, body: Bytes) -> Result<Vec<Part>, ApiError> {
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::convert::Infallible>(body) });
    let mut form = multer::Multipart::new(stream, boundary);
    let mut parts = Vec::new();
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        if parts.len() == MAX_PARTS {
            return Err(ApiError::invalid_body(format!(
                "The form has more than {MAX_PARTS} parts; send one file part named `file`."
            )));
        }
        let label = |s: Option<&str>| s.map(|s| s.chars().take(MAX_LABEL).collect::<String>());
        let name = label(field.name()).unwrap_or_default();
        let filename = label(field.file_name());
        let content_type = label(field.content_type().map(|m| m.essence_str()));
        let bytes = field.bytes().await.map_err(unreadable)?;
        parts.push(Part { name, filename, content_type, bytes });
    }
    Ok(parts)
}

fn unreadable(e: multer::Error) -> ApiError {
    ApiError::invalid_body(format!("The multipart/form-data body could not be read: {e}."))
}

/// A form's parts written one way, for an idempotency key's fingerprint: each part's name,
/// file name, type and bytes, length-prefixed, in order. The boundary, which a client picks
/// anew for each send, is not part of it, so a retry of the same form is the same request.
pub fn canonical(parts: &[Part]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        for field in [
            part.name.as_bytes(),
            part.filename.as_deref().unwrap_or("").as_bytes(),
            part.content_type.as_deref().unwrap_or("").as_bytes(),
            &part.bytes,
        ] {
            out.extend_from_slice(&(field.len() as u64).to_be_bytes());
            out.extend_from_slice(field);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(boundary: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Bytes {
        let mut body = Vec::new();
        for (name, filename, bytes) in parts {
            body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            match filename {
                Some(f) => body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: image/png\r\n\r\n")
                        .as_bytes(),
                ),
                None => body.extend_from_slice(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes()),
            }
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        Bytes::from(body)
    }

    #[tokio::test]
    async fn a_form_is_read_into_its_parts_and_the_boundary_does_not_change_its_print() {
        let one = parts("b1", form("b1", &[("file", Some("sofa.png"), b"\x89PNG\r\n--b3"), ("mode", None, b"upsert")]))
            .await
            .unwrap();
        assert_eq!(one.len(), 2);
        assert_eq!((one[0].name.as_str(), one[0].filename.as_deref()), ("file", Some("sofa.png")));
        assert_eq!(one[0].content_type.as_deref(), Some("image/png"));
        assert_eq!(&one[0].bytes[..], b"\x89PNG\r\n--b3");
        assert_eq!(one[1].text(), Some("upsert"));
        let two = parts("b2", form("b2", &[("file", Some("sofa.png"), b"\x89PNG\r\n--b3"), ("mode", None, b"upsert")]))
            .await
            .unwrap();
        assert_eq!(canonical(&one), canonical(&two));
        let other = parts("b1", form("b1", &[("file", Some("sofa.png"), b"\x89PNG"), ("mode", None, b"upsert")]))
            .await
            .unwrap();
        assert_ne!(canonical(&one), canonical(&other));
    }

    #[tokio::test]
    async fn a_broken_or_crowded_form_is_refused() {
        assert!(parts("b1", Bytes::from_static(b"--b1\r\nnot a header\r\n")).await.is_err());
        let many: Vec<(&str, Option<&str>, &[u8])> = (0..=MAX_PARTS).map(|_| ("x", None, b"1".as_slice())).collect();
        assert!(parts("b1", form("b1", &many)).await.is_err());
    }
}
