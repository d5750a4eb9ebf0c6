//! Photos: upload, the media route, thumbnails, `attachment_ids`, imports of `images`
//! URLs through the SSRF guard (local image servers in `origin`), and the S3 media store.

mod bench;
mod decoding;
mod imports;
mod metadata;
pub mod origin;
pub mod process;
mod restart;
mod s3;
mod upload;

use std::io::Cursor;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use image::codecs::gif::GifEncoder;
use image::{DynamicImage, Frame, ImageFormat, Rgba, RgbaImage};
use serde_json::{json, Value};

use crate::helpers::{json, TestApp};

pub const UPLOAD: &str = "/v1/listings/upload-photo";
pub const MAX: usize = 10 * 1024 * 1024;

/// A `width`×`height` image in `format`, opaque, with a gradient so encoders have work.
pub fn image_bytes(format: ImageFormat, width: u32, height: u32) -> Vec<u8> {
    let rgb = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 90]));
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(rgb).write_to(&mut out, format).expect("encode test image");
    out.into_inner()
}

/// A two-frame GIF: red, then blue.
pub fn animated_gif(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut out);
        for colour in [Rgba([255, 0, 0, 255]), Rgba([0, 0, 255, 255])] {
            encoder.encode_frame(Frame::new(RgbaImage::from_pixel(width, height, colour))).expect("gif frame");
        }
    }
    out
}

pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

pub async fn upload(app: &TestApp, key: &str, bytes: &[u8], filename: Option<&str>) -> reqwest::Response {
    let mut body = json!({ "image_base64": b64(bytes) });
    if let Some(name) = filename {
        body["filename"] = json!(name);
    }
    app.post(UPLOAD, key, &body).await
}

/// Uploads and returns the 201 body.
pub async fn uploaded(app: &TestApp, key: &str, bytes: &[u8]) -> Value {
    let response = upload(app, key, bytes, None).await;
    let status = response.status();
    let body = json(response).await;
    assert_eq!(status, 201, "upload answered {body}");
    body
}

/// Polls `GET path` until `done` holds of the body (at most 20 s).
pub async fn eventually(base: &str, key: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let client = reqwest::Client::new();
    let read =
        || async { json(client.get(format!("{base}{path}")).bearer_auth(key).send().await.expect("poll")).await };
    match crate::helpers::poll(Duration::from_secs(20), || async { Some(read().await).filter(&done) }).await {
        Some(body) => body,
        None => panic!("gave up waiting on {path}: {}", read().await),
    }
}

/// The photo once its thumbnails are no longer pending.
pub async fn thumbnails_settled(base: &str, key: &str, id: i64) -> Value {
    eventually(base, key, &format!("/v1/listings/photos/{id}"), |p| p["thumbnail_status"] != "pending").await
}

/// The listing once no image import is pending.
pub async fn imports_settled(base: &str, key: &str, id: i64) -> Value {
    eventually(base, key, &format!("/v1/listings/{id}"), |l| {
        l["image_imports"].as_array().is_some_and(|i| i.iter().all(|i| i["status"] != "pending"))
    })
    .await
}

/// Fetches a public URL without a key, returning status, content type and bytes.
pub async fn fetch(url: &str) -> (u16, String, Vec<u8>) {
    let response = reqwest::get(url).await.expect("fetch");
    let status = response.status().as_u16();
    let mime = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    (status, mime, response.bytes().await.expect("body").to_vec())
}

/// Decoded dimensions of an image.
pub fn dimensions(bytes: &[u8]) -> (u32, u32) {
    let image = image::load_from_memory(bytes).expect("decodable image");
    (image.width(), image.height())
}
