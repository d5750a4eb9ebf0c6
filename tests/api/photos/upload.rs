//! `POST /v1/listings/upload-photo`, the media route, thumbnails and `attachment_ids`.

use image::ImageFormat;
use serde_json::json;

use super::*;
use crate::helpers::{assert_error, json, spawn_app};
use crate::listings::{create, listing};

#[tokio::test]
async fn each_of_the_four_types_is_stored_detected_from_its_bytes_and_served_publicly() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    for (format, mime, extension) in [
        (ImageFormat::Jpeg, "image/jpeg", "jpg"),
        (ImageFormat::Png, "image/png", "png"),
        (ImageFormat::WebP, "image/webp", "webp"),
        (ImageFormat::Gif, "image/gif", "gif"),
    ] {
        let bytes = image_bytes(format, 40, 30);
        // The file name lies; the bytes decide.
        let response = upload(&app, &partner.key, &bytes, Some("photo.txt")).await;
        assert_eq!(response.status(), 201);
        let photo = json(response).await;
        assert!(photo["attachment_id"].as_i64().is_some_and(|id| id > 0), "{photo}");
        assert_eq!(photo["mime"], mime);
        assert_eq!(photo["sizes"], json!({"medium": "", "large": ""}), "thumbnails come later");
        assert_eq!((photo["width"].as_i64(), photo["height"].as_i64()), (Some(40), Some(30)));
        let url = photo["url"].as_str().unwrap();
        assert!(url.starts_with(&format!("{}/media/", app.base)) && url.ends_with(extension), "{url}");

        let response = reqwest::get(url).await.unwrap();
        assert_eq!(response.status(), 200, "no key is needed for a photo URL");
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], mime);
        assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
        let served = response.bytes().await.unwrap().to_vec();
        assert_eq!(headers["content-length"], served.len().to_string().as_str());
        assert_eq!(photo["bytes"], served.len(), "the size given is the size served");
        // Served re-encoded (never the bytes sent), in the same format and size.
        assert_eq!(image::guess_format(&served).unwrap(), format);
        assert_eq!(dimensions(&served), (40, 30));
        if matches!(format, ImageFormat::Png | ImageFormat::WebP) {
            let pixels = |b: &[u8]| image::load_from_memory(b).unwrap().to_rgba8();
            assert_eq!(pixels(&served), pixels(&bytes), "{mime} keeps every pixel");
        }
    }
}

#[tokio::test]
async fn thumbnails_fit_their_boxes_and_appear_after_the_upload() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let photo = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Jpeg, 1500, 1000)).await;
    let id = photo["attachment_id"].as_i64().unwrap();
    let done = thumbnails_settled(&app.base, &partner.key, id).await;
    assert_eq!(done["thumbnail_status"], "done", "{done}");
    assert_eq!(done["url"], photo["url"]);
    let (status, mime, medium) = fetch(done["sizes"]["medium"].as_str().unwrap()).await;
    assert_eq!((status, mime.as_str()), (200, "image/jpeg"));
    assert_eq!(dimensions(&medium), (300, 200));
    let (_, _, large) = fetch(done["sizes"]["large"].as_str().unwrap()).await;
    assert_eq!(dimensions(&large), (1024, 683));
    // Small images are not enlarged.
    let small = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Png, 120, 80)).await;
    let small = thumbnails_settled(&app.base, &partner.key, small["attachment_id"].as_i64().unwrap()).await;
    let (_, _, large) = fetch(small["sizes"]["large"].as_str().unwrap()).await;
    assert_eq!(dimensions(&large), (120, 80));
}

#[tokio::test]
async fn an_animated_gif_is_thumbnailed_from_its_first_frame() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let photo = uploaded(&app, &partner.key, &animated_gif(64, 32)).await;
    assert_eq!(photo["mime"], "image/gif");
    let done = thumbnails_settled(&app.base, &partner.key, photo["attachment_id"].as_i64().unwrap()).await;
    let (_, _, medium) = fetch(done["sizes"]["medium"].as_str().unwrap()).await;
    let pixel = image::load_from_memory(&medium).unwrap().to_rgb8().get_pixel(10, 10).0;
    assert!(pixel[0] > 200 && pixel[2] < 60, "first frame is red, got {pixel:?}");
}

/// A valid PNG padded after its end chunk (which decoders ignore) to `size` bytes.
fn padded_png(size: usize) -> Vec<u8> {
    let mut bytes = image_bytes(ImageFormat::Png, 16, 16);
    bytes.resize(size, 0);
    bytes
}

#[tokio::test]
async fn ten_mebibytes_is_refused_and_one_byte_less_is_accepted() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    assert_error(upload(&app, &partner.key, &padded_png(MAX), None).await, 413, "image_too_large").await;
    let photo = uploaded(&app, &partner.key, &padded_png(MAX - 1)).await;
    assert_eq!(photo["mime"], "image/png");
    // The padding after the image is not kept.
    assert!(photo["bytes"].as_u64().unwrap() < 1_000, "{photo}");
    let done = thumbnails_settled(&app.base, &partner.key, photo["attachment_id"].as_i64().unwrap()).await;
    assert_eq!(done["thumbnail_status"], "done", "trailing bytes do not stop the decoder: {done}");
    // Size is judged before content: 10 MiB of anything is too large.
    let text = vec![b'a'; MAX + 3];
    assert_error(upload(&app, &partner.key, &text, None).await, 413, "image_too_large").await;
}

/// A PNG of a few hundred bytes declaring a `side`×`side` RGBA canvas.
fn png_bomb(side: u32) -> Vec<u8> {
    fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        [&(data.len() as u32).to_be_bytes()[..], kind, data, &crc.finalize().to_be_bytes()].concat()
    }
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA
                                              // A zlib stream of a few zero bytes: far less data than the canvas declares.
    let idat = [0x78, 0x9c, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01];
    [&b"\x89PNG\r\n\x1a\n"[..], &chunk(b"IHDR", &ihdr), &chunk(b"IDAT", &idat), &chunk(b"IEND", &[])].concat()
}

/// The resident memory of this process (the server runs in it), in KiB.
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_pixel_bomb_is_refused_by_its_header_and_never_decoded() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let before = resident_kib();
    // 60,000² RGBA would be 14.4 GB decoded, 16,384² 1 GiB: both refused before any pixel
    // is decoded, six at once.
    let bombs: Vec<_> = [60_000, 16_384, 16_384, 16_384, 7_000, 16_384]
        .into_iter()
        .map(|side| {
            let request = app
                .request(reqwest::Method::POST, UPLOAD, &partner.key)
                .json(&json!({"image_base64": b64(&png_bomb(side))}));
            tokio::spawn(async move { request.send().await.unwrap() })
        })
        .collect();
    for bomb in bombs {
        let refused = assert_error(bomb.await.unwrap(), 413, "image_too_large").await;
        assert!(refused["message"].as_str().unwrap().contains("40 megapixels"), "{refused}");
    }
    let grown_mib = resident_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 64, "the process grew by {grown_mib} MiB");
    let raw = app.db.raw().await;
    let stored: i64 = crate::helpers::on_raw!(&raw, |pool| sqlx::query_scalar("SELECT COUNT(*) FROM photos")
        .fetch_one(pool)
        .await
        .unwrap());
    raw.close().await;
    assert_eq!(stored, 0, "nothing stored");
    // Within the budget (36 megapixels by its header), it is decoded (under the limits) to
    // be re-encoded; its data is short, so it is refused as unreadable.
    let short = upload(&app, &partner.key, &png_bomb(6_000), None).await;
    assert_error(short, 415, "unsupported_mime").await;
    assert_eq!(app.get("/healthz", "").await.status(), 200);
}

async fn post(app: &TestApp, key: &str, body: serde_json::Value) -> reqwest::Response {
    app.post(UPLOAD, key, &body).await
}

#[tokio::test]
async fn bodies_that_are_not_images_get_the_spec_codes() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let key = partner.key.as_str();
    assert_error(post(&app, key, json!({})).await, 400, "no_image").await;
    assert_error(post(&app, key, json!({"image_base64": ""})).await, 400, "no_image").await;
    assert_error(post(&app, key, json!({"image_base64": "   "})).await, 400, "no_image").await;
    assert_error(post(&app, key, json!({"image_base64": "not base64 at all!"})).await, 400, "bad_image_base64").await;
    assert_error(post(&app, key, json!({"image_base64": "abcde"})).await, 400, "bad_image_base64").await;
    assert_error(post(&app, key, json!({"image_base64": 42})).await, 400, "bad_image_base64").await;
    assert_error(
        post(&app, key, json!({"image_base64": b64(b"just some text, not a photo\n")})).await,
        415,
        "unsupported_mime",
    )
    .await;
    // Magic bytes alone are not enough: the header must parse.
    assert_error(
        post(&app, key, json!({"image_base64": b64(b"\x89PNG\r\n\x1a\nrest")})).await,
        415,
        "unsupported_mime",
    )
    .await;
    let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
    assert_error(post(&app, key, json!({"image_base64": b64(svg)})).await, 415, "unsupported_mime").await;
    let error =
        assert_error(post(&app, key, json!({"image_base64": "aGk=", "extra": 1})).await, 400, "validation_failed")
            .await;
    assert_eq!(error["message"], "extra_unknown");
    let raw = app.request(reqwest::Method::POST, UPLOAD, &partner.key).header("content-type", "application/json");
    assert_error(raw.body("[]").send().await.unwrap(), 400, "invalid_body").await;
    let raw = app.request(reqwest::Method::POST, UPLOAD, &partner.key).header("content-type", "image/png");
    assert_error(raw.body(image_bytes(ImageFormat::Png, 2, 2)).send().await.unwrap(), 415, "unsupported_media_type")
        .await;
    assert_error(app.post(UPLOAD, "", &json!({})).await, 401, "missing_bearer_token").await;
}

#[tokio::test]
async fn data_uri_prefixes_missing_padding_and_line_breaks_are_accepted() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let bytes = image_bytes(ImageFormat::Png, 9, 7);
    let encoded = b64(&bytes);
    let wrapped = encoded.as_bytes().chunks(76).map(|l| std::str::from_utf8(l).unwrap()).collect::<Vec<_>>().join("\n");
    for text in [
        format!("data:image/png;base64,{encoded}"),
        format!("data:image/jpeg;base64,{encoded}"),
        encoded.trim_end_matches('=').to_owned(),
        wrapped,
    ] {
        let response = app.post(UPLOAD, &partner.key, &json!({ "image_base64": text })).await;
        assert_eq!(response.status(), 201);
        let photo = json(response).await;
        assert_eq!(photo["mime"], "image/png", "the prefix does not decide the type");
        let served = fetch(photo["url"].as_str().unwrap()).await.2;
        let pixels = |b: &[u8]| image::load_from_memory(b).unwrap().to_rgba8();
        assert_eq!(pixels(&served), pixels(&bytes));
    }
}

#[tokio::test]
async fn file_names_are_sanitised_and_never_used_as_paths() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let bytes = image_bytes(ImageFormat::Jpeg, 8, 8);
    for (given, kept) in [
        (Some("../../../../tmp/evil.jpg"), "evil.jpg"),
        (Some("..\\..\\windows\\win.ini"), "win.ini"),
        (Some("/etc/passwd"), "passwd"),
        (Some(".."), "upload.jpg"),
        (Some("sofa\u{0}.jpg"), "sofa.jpg"),
        (None, "upload.jpg"),
    ] {
        let photo = json(upload(&app, &partner.key, &bytes, given).await).await;
        assert_eq!(photo["filename"], kept, "{given:?}");
        let name = photo["url"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
        assert!(name.len() == 36 && name.ends_with(".jpg"), "the service names the file: {name}");
    }
    assert!(!std::path::Path::new("/tmp/evil.jpg").exists());
    let media = app.dir.path().join("media");
    let files: Vec<String> = walk(&media);
    assert!(files.iter().all(|f| !f.contains("evil") && !f.contains("passwd")), "{files:?}");
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path.display().to_string());
        }
    }
    found
}

#[tokio::test]
async fn the_media_route_serves_only_names_the_service_made() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let photo = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Png, 4, 4)).await;
    let name = photo["url"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    std::fs::write(app.dir.path().join("media").join("secret.txt"), "secret").unwrap();
    // A file to reach beside the media directory on PostgreSQL too (SQLite's database is there).
    let beside = app.dir.path().join("rehome.db");
    if !beside.exists() {
        std::fs::write(beside, "secret").unwrap();
    }
    for path in [
        "/media/..%2frehome.db".to_owned(),
        "/media/..%2F..%2Fetc%2Fpasswd".to_owned(),
        "/media/%2e%2e/rehome.db".to_owned(),
        "/media/secret.txt".to_owned(),
        "/media/tmp".to_owned(),
        format!("/media/{}", name.to_uppercase()),
        format!("/media/{}/..%2f..%2frehome.db", &name[..2]),
        format!("/media/{}", name.replace(".png", ".jpg")),
        "/media/".to_owned(),
    ] {
        let response = app.get(&path, "").await;
        assert_eq!(response.status(), 404, "{path}");
        assert_eq!(json(response).await["code"], "not_found");
    }
    assert_eq!(app.get(&format!("/media/{name}"), "").await.status(), 200);
}

#[tokio::test]
async fn attachment_ids_order_the_images_and_must_be_the_brands_photos() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let other = app.partner("other").await;
    let a = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Png, 5, 5)).await;
    let b = uploaded(&app, &partner.key, &image_bytes(ImageFormat::Jpeg, 5, 5)).await;
    let theirs = uploaded(&app, &other.key, &image_bytes(ImageFormat::Png, 5, 5)).await;
    let (a_id, b_id) = (a["attachment_id"].as_i64().unwrap(), b["attachment_id"].as_i64().unwrap());

    let detail = create(&app, &partner.key, listing(json!({"attachment_ids": [b_id, a_id]}))).await;
    assert_eq!(detail["images"], json!([b["url"], a["url"]]));
    assert_eq!(detail["image_url"], b["url"], "the first is the cover");
    let id = detail["id"].as_i64().unwrap();
    let read = json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await;
    assert_eq!(read["images"], detail["images"]);
    let page = json(app.get("/v1/listings", &partner.key).await).await;
    assert_eq!(page["data"][0]["image_url"], b["url"]);

    let patched =
        json(app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"attachment_ids": [a_id]})).await).await;
    assert_eq!(patched["images"], json!([a["url"]]));
    assert_eq!(patched["image_url"], a["url"]);

    for bad in [json!([theirs["attachment_id"]]), json!([a_id, 999_999])] {
        let error = assert_error(
            app.post("/v1/listings", &partner.key, &listing(json!({"attachment_ids": bad}))).await,
            400,
            "validation_failed",
        )
        .await;
        assert_eq!(error["message"], "attachment_ids_invalid");
        let response = app.patch(&format!("/v1/listings/{id}"), &partner.key, &json!({"attachment_ids": bad})).await;
        assert_error(response, 400, "validation_failed").await;
    }
    // Another brand cannot read the photo through the API either.
    let path = format!("/v1/listings/photos/{a_id}");
    assert_error(app.get(&path, &other.key).await, 404, "photo_not_found").await;
    assert_eq!(app.get(&path, &partner.key).await.status(), 200);
}

#[tokio::test]
async fn a_body_over_the_server_limit_is_payload_too_large() {
    let app = crate::helpers::spawn_app_with(|c| c.max_body_bytes = 4096).await;
    let partner = app.partner("acme").await;
    let response = upload(&app, &partner.key, &padded_png(8000), None).await;
    assert_error(response, 413, "payload_too_large").await;
    assert_eq!(uploaded(&app, &partner.key, &image_bytes(ImageFormat::Png, 4, 4)).await["mime"], "image/png");
}
