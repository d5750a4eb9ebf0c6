//! Files as files (decisions 15.1): the photo upload and the bulk files take
//! `multipart/form-data` with a file part named `file`, as `curl -F` and generated clients
//! send them, with the same answers, limits and errors as the JSON form; an idempotent
//! retry of the same form (a new boundary each send) is the same request.

use image::ImageFormat;
use reqwest::multipart::{Form, Part};
use serde_json::Value;

use crate::bulk::{file, validate, xlsx, C};
use crate::helpers::{assert_error, json as body_json, spawn_app, TestApp};
use crate::photos::{image_bytes, UPLOAD};

async fn send(app: &TestApp, key: &str, path: &str, form: Form) -> reqwest::Response {
    app.request(reqwest::Method::POST, path, key).multipart(form).send().await.unwrap()
}

fn file_part(bytes: Vec<u8>, name: &str, mime: &str) -> Part {
    Part::bytes(bytes).file_name(name.to_owned()).mime_str(mime).unwrap()
}

#[tokio::test]
async fn a_photo_sent_as_a_form_is_stored_as_its_json_twin_is() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let png = image_bytes(ImageFormat::Png, 40, 30);
    let answer =
        send(&app, &partner.key, UPLOAD, Form::new().part("file", file_part(png.clone(), "sofa.png", "image/png")))
            .await;
    assert_eq!(answer.status(), 201);
    let photo = body_json(answer).await;
    assert_eq!((photo["mime"].as_str(), photo["filename"].as_str()), (Some("image/png"), Some("sofa.png")), "{photo}");
    assert_eq!((photo["width"].as_i64(), photo["bytes"].as_i64()), (Some(40), Some(png.len() as i64)));
    // The form's `filename` field names it; the bytes, not the part's type, decide the type.
    let form = Form::new().part("file", file_part(png, "x.txt", "text/plain")).text("filename", "Oak sofa.png");
    let photo = body_json(send(&app, &partner.key, UPLOAD, form).await).await;
    assert_eq!(
        (photo["mime"].as_str(), photo["filename"].as_str()),
        (Some("image/png"), Some("Oak sofa.png")),
        "{photo}"
    );
    // The photo serves as any other.
    let served = app.client.get(photo["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(served.status(), 200);
}

#[tokio::test]
async fn a_form_without_its_file_or_with_other_parts_is_refused_and_stores_nothing() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let png = || file_part(image_bytes(ImageFormat::Png, 8, 8), "a.png", "image/png");
    let refused = send(&app, &partner.key, UPLOAD, Form::new().text("filename", "a.png")).await;
    let body = assert_error(refused, 400, "no_image").await;
    assert!(body["message"].as_str().unwrap().contains("file part named `file`"), "{body}");
    let extra = send(&app, &partner.key, UPLOAD, Form::new().part("file", png()).text("colour", "red")).await;
    let body = assert_error(extra, 400, "validation_failed").await;
    assert!(body["message"].as_str().unwrap().contains("colour_unknown"), "{body}");
    let twice = send(&app, &partner.key, UPLOAD, Form::new().part("file", png()).part("file", png())).await;
    let body = assert_error(twice, 400, "validation_failed").await;
    assert!(body["message"].as_str().unwrap().contains("file_invalid"), "{body}");
    let text = send(
        &app,
        &partner.key,
        UPLOAD,
        Form::new().part("file", file_part(b"not an image".to_vec(), "a.png", "image/png")),
    )
    .await;
    assert_error(text, 415, "unsupported_mime").await;
    let big = send(
        &app,
        &partner.key,
        UPLOAD,
        Form::new().part("file", file_part(vec![0u8; 10 * 1024 * 1024], "big.png", "image/png")),
    )
    .await;
    assert_error(big, 413, "image_too_large").await;
    let broken = app
        .request(reqwest::Method::POST, UPLOAD, &partner.key)
        .header("content-type", "multipart/form-data; boundary=xyz")
        .body("--xyz\r\nno headers here")
        .send()
        .await
        .unwrap();
    assert_error(broken, 400, "invalid_body").await;
    let plain = app
        .request(reqwest::Method::POST, UPLOAD, &partner.key)
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    let body = assert_error(plain, 415, "unsupported_media_type").await;
    assert!(body["message"].as_str().unwrap().contains("multipart/form-data"), "{body}");
    let pool = app.db.raw().await;
    assert_eq!(pool.count("SELECT COUNT(*) FROM photos").await, 0, "nothing stored");
    pool.close().await;
}

#[tokio::test]
async fn a_form_retried_with_the_same_idempotency_key_and_a_new_boundary_replays_the_first_answer() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let png = image_bytes(ImageFormat::Png, 12, 12);
    let post = |png: Vec<u8>| {
        // reqwest picks a new random boundary for every form.
        let form = Form::new().part("file", file_part(png, "a.png", "image/png"));
        app.request(reqwest::Method::POST, UPLOAD, &partner.key)
            .header("Idempotency-Key", "form-retry-1")
            .multipart(form)
            .send()
    };
    let first = post(png.clone()).await.unwrap();
    assert_eq!(first.status(), 201);
    let first = body_json(first).await;
    let again = post(png.clone()).await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers().get("idempotent-replayed").map(|v| v.to_str().unwrap()), Some("true"));
    assert_eq!(body_json(again).await["attachment_id"], first["attachment_id"]);
    // Another file under the same key is another request.
    let other = post(image_bytes(ImageFormat::Png, 13, 12)).await.unwrap();
    assert_eq!(other.status(), 422);
}

fn sheet() -> Vec<u8> {
    xlsx(&[
        vec![C::S("title"), C::S("price_gbp"), C::S("condition"), C::S("category"), C::S("faults")],
        vec![C::S("Oak sofa"), C::N(120.0), C::S("fair"), C::S("Armchairs"), C::S("None")],
        vec![C::S("No price"), C::S(""), C::S("fair"), C::S("Armchairs"), C::S("None")],
    ])
}

#[tokio::test]
async fn a_bulk_file_sent_as_a_form_is_read_as_its_base64_twin() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let by_json = validate(&app, &partner.key, &file(&sheet())).await;
    let mime = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    let answer = send(
        &app,
        &partner.key,
        "/v1/listings/bulk-validate",
        Form::new().part("file", file_part(sheet(), "listings.xlsx", mime)),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let by_form: Value = body_json(answer).await;
    assert_eq!(by_form, by_json);
    assert_eq!(by_form["error_count"], 1, "{by_form}");
    // The workbook of errors, from a form too.
    let workbook = send(
        &app,
        &partner.key,
        "/v1/listings/bulk-validate/workbook",
        Form::new().part("file", file_part(sheet(), "l.xlsx", mime)),
    )
    .await;
    assert_eq!(workbook.status(), 200);
    assert_eq!(workbook.headers()["content-type"], mime);
    // Commit a CSV with `mode` as a field; then upsert by SKU.
    let csv = "title,sku,price_gbp,condition,category,faults\nElm chair,ELM-1,80,fair,Armchairs,None\n";
    let form =
        || Form::new().part("file", file_part(csv.as_bytes().to_vec(), "l.csv", "text/csv")).text("mode", "upsert");
    let committed = body_json(send(&app, &partner.key, "/v1/listings/bulk-commit", form()).await).await;
    assert_eq!(committed["rows"][0]["status"], "success", "{committed}");
    assert_eq!(committed["rows"][0]["action"], "created", "{committed}");
    let again = body_json(send(&app, &partner.key, "/v1/listings/bulk-commit", form()).await).await;
    assert_eq!(again["rows"][0]["action"], "updated", "{again}");
    // No file, a bad mode, another part.
    let none = send(&app, &partner.key, "/v1/listings/bulk-commit", Form::new().text("mode", "create")).await;
    assert_error(none, 400, "bad_file").await;
    let bad = send(
        &app,
        &partner.key,
        "/v1/listings/bulk-commit",
        Form::new().part("file", file_part(csv.as_bytes().to_vec(), "l.csv", "text/csv")).text("mode", "merge"),
    )
    .await;
    let body = assert_error(bad, 400, "validation_failed").await;
    assert!(body["message"].as_str().unwrap().contains("mode_invalid"), "{body}");
}
