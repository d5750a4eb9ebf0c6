//! Photos: `POST /v1/listings/upload-photo`, `GET /v1/listings/photos/{id}`, and the public
//! media route `GET /media/{name}` (outside `/v1`: photo URLs are public, no key needed).

use crate::http::docs::refusals::refusals;
use std::borrow::Cow;

use crate::http::routing::{get, post};
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::body::{BodySpec, Field, FieldType};
use crate::domain::outcome::Outcome;
use crate::domain::view::PhotoRecord;
use crate::domain::FieldError;
use crate::error::{ApiError, ApiResult, HttpRefusal};
use crate::http::auth::Caller;
use crate::http::body;
use crate::http::body::multipart::{self, Part};
use crate::http::Json;
use crate::media::base64::{self, DecodeError};
use crate::media::pool;
use crate::media::{url_or_empty, MediaName, CACHE_CONTROL, MAX_IMAGE_BYTES};
use crate::state::AppState;
use crate::usecases::photos::{self, PhotoUpload};

#[derive(utoipa::OpenApi)]
#[openapi(paths(upload_photo, get_photo), components(schemas(PhotoUploadBody, PhotoForm, PhotoResult, PhotoSizes)))]
pub struct PhotosApi;

/// The `/v1` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/listings/upload-photo", post(upload_photo)).route("/listings/photos/{id}", get(get_photo))
}

/// The public media route, mounted outside `/v1` (no key, no rate limit).
pub fn media_router() -> Router<AppState> {
    Router::new().route("/media/{name}", get(serve_media))
}

/// The body of `upload-photo`, read by `decode_upload`.
pub const PHOTO_UPLOAD_BODY: BodySpec = BodySpec {
    name: "PhotoUploadBody",
    doc: "Body of `upload-photo`.",
    fields: &[
        Field::required(
            "image_base64",
            FieldType::Lines { max: MAX_IMAGE_BASE64 },
            "Standard base64 of a JPEG, PNG, WebP or GIF, under 10 MiB (10,485,760 bytes) decoded. Padding \
optional, whitespace ignored, a `data:image/...;base64,` prefix accepted.",
        ),
        Field::optional(
            "filename",
            FieldType::Text { max: 255 },
            "Shown only; default `upload.jpg`; cut to 100 characters. Never used as a path.",
        ),
    ],
    example: r#"{"image_base64": "data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "filename": "sofa.jpg"}"#,
};

/// Longest `image_base64` documented: a photo just under the limit, as base64, with room
/// for line breaks (the decoded size is what is enforced).
const MAX_IMAGE_BASE64: usize = MAX_IMAGE_BYTES / 3 * 4 + MAX_IMAGE_BYTES / 38;

/// The JSON body of `upload-photo` as the document shows it ([`PHOTO_UPLOAD_BODY`]); it is
/// read into the use case's [`PhotoUpload`].
pub struct PhotoUploadBody;

crate::documented_body!(PhotoUploadBody, PHOTO_UPLOAD_BODY);

/// The photo upload as a form (`multipart/form-data`): what `curl -F file=@sofa.jpg` sends.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct PhotoForm {
    /// The photo: a JPEG, PNG, WebP or GIF under 10 MiB (10,485,760 bytes).
    #[schema(value_type = String, format = Binary, max_length = 10485760)]
    pub file: Vec<u8>,
    /// Shown only; default the file part's own file name, else `upload.jpg`; cut to 100
    /// characters. Never used as a path.
    #[schema(max_length = 255)]
    pub filename: Option<String>,
}

/// Thumbnail URLs; empty strings until the background job has made them.
#[derive(Debug, Serialize, ToSchema)]
pub struct PhotoSizes {
    /// Fits in 300×300.
    pub medium: String,
    /// Fits in 1024×1024.
    pub large: String,
}

/// A stored photo.
#[derive(Debug, Serialize, ToSchema)]
pub struct PhotoResult {
    /// Pass in `attachment_ids` on listing create/update.
    pub attachment_id: i64,
    /// Public URL of the original.
    pub url: String,
    pub sizes: PhotoSizes,
    /// Detected from the bytes: `image/jpeg`, `image/png`, `image/webp` or `image/gif`.
    #[schema(example = "image/jpeg")]
    pub mime: String,
    /// The sanitised file name.
    pub filename: String,
    pub width: i64,
    pub height: i64,
    pub bytes: i64,
    /// `pending`, `done`, or `failed` (the photo could not be decoded; sizes stay empty).
    #[schema(value_type = String, example = "pending")]
    pub thumbnail_status: &'static str,
}

fn render(photo: &PhotoRecord, media_url: &str) -> PhotoResult {
    PhotoResult {
        attachment_id: photo.id,
        url: url_or_empty(Some(&photo.name), media_url),
        sizes: PhotoSizes {
            medium: url_or_empty(photo.medium_name.as_deref(), media_url),
            large: url_or_empty(photo.large_name.as_deref(), media_url),
        },
        mime: photo.mime.clone(),
        filename: photo.filename.clone(),
        width: photo.width,
        height: photo.height,
        bytes: photo.byte_size,
        thumbnail_status: photo.thumb_status.as_str(),
    }
}

/// The raw body of an upload, read into one buffer sized from `Content-Length` (no
/// collect-then-copy), then parsed borrowing the base64 text from it: a 10 MiB photo is
/// held as its request body and its decoded bytes, nothing more. Being large, it holds one
/// of the large bodies' places until it is decoded ([`body::read_body`]).
pub enum UploadBytes {
    Json(body::ReadBody),
    /// A `multipart/form-data` upload (decisions 15.1): its parts, and the body's place.
    Form(Vec<Part>, body::ReadBody),
}

impl FromRequest<AppState> for UploadBytes {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        if let Some(boundary) = multipart::boundary(request.headers()) {
            let mut read = body::read_body(request, state).await?;
            let bytes = bytes::Bytes::from(std::mem::take(&mut read.bytes));
            let parts = multipart::parts(&boundary, bytes).await.map_err(IntoResponse::into_response)?;
            return Ok(Self::Form(parts, read));
        }
        body::check_json_content_type(&request).map_err(|_| form_or_json().into_response())?;
        body::read_body(request, state).await.map(UploadBytes::Json)
    }
}

/// `415`: neither JSON nor a form.
fn form_or_json() -> ApiError {
    HttpRefusal::NotJsonOrForm.into()
}

/// The photo of a form: one file part named `file`, and optionally a `filename` field (else
/// the file part's own file name).
fn form_upload(parts: Vec<Part>) -> Result<PhotoUpload, ApiError> {
    let mut file = None;
    let mut filename = None;
    let mut errors = Vec::new();
    for part in parts {
        match part.name.as_str() {
            "file" if file.is_none() => file = Some(part),
            "filename" => match part.text() {
                Some(text) if text.chars().count() <= 255 => filename = Some(text.to_owned()),
                _ => errors.push(FieldError::of("filename", "invalid")),
            },
            "file" => errors.push(FieldError::of("file", "invalid")),
            other => errors.push(FieldError::of(other, "unknown")),
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let file = file.filter(|f| !f.bytes.is_empty()).ok_or_else(no_image)?;
    if file.bytes.len() >= MAX_IMAGE_BYTES {
        return Err(image_too_large());
    }
    let filename = filename.or(file.filename);
    Ok(PhotoUpload { bytes: Vec::from(file.bytes), filename })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadFields<'a> {
    #[serde(borrow, default)]
    image_base64: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    filename: Option<Cow<'a, str>>,
}

/// Parses and decodes an upload (CPU work: run off the async threads); the use case
/// identifies the image.
fn decode_upload(raw: &[u8]) -> Result<PhotoUpload, ApiError> {
    // Serde would also read a struct from a JSON array; only an object is a body.
    if raw.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(explain_bad_body(raw));
    }
    let fields: UploadFields<'_> = serde_json::from_slice(raw).map_err(|_| explain_bad_body(raw))?;
    let text = fields.image_base64.as_deref().unwrap_or("");
    let bytes = base64::decode(text, MAX_IMAGE_BYTES).map_err(|e| match e {
        DecodeError::Empty => no_image(),
        DecodeError::Invalid => HttpRefusal::BadImageBase64("image_base64 is not valid base64.").into(),
        DecodeError::TooLarge => image_too_large(),
    })?;
    Ok(PhotoUpload { bytes, filename: fields.filename.map(Cow::into_owned) })
}

fn no_image() -> ApiError {
    HttpRefusal::NoImage.into()
}

fn image_too_large() -> ApiError {
    Outcome::ImageTooBig.into()
}

/// Why a body did not fit the upload shape: not a JSON object (`invalid_body`), a wrong
/// `image_base64` (`bad_image_base64`), or other fields (`validation_failed`).
fn explain_bad_body(raw: &[u8]) -> ApiError {
    let map = match body::parse_object(raw) {
        Ok(map) => map,
        Err(e) => return e,
    };
    if map.get("image_base64").is_some_and(|v| !v.is_string() && !v.is_null()) {
        return HttpRefusal::BadImageBase64("image_base64 must be a base64 string.").into();
    }
    let mut errors: Vec<FieldError> =
        map.keys().filter(|k| !PHOTO_UPLOAD_BODY.accepts(k)).map(|k| FieldError::of(k, "unknown")).collect();
    if map.get("filename").is_some_and(|v| !matches!(v, Value::String(_) | Value::Null)) {
        errors.push(FieldError::of("filename", "invalid"));
    }
    if errors.is_empty() {
        return ApiError::invalid_body("The request body could not be read as an upload.");
    }
    ApiError::validation(errors)
}

refusals!(UploadPhotoRefusals: [
    Invalid("`no_image` (missing or empty), `bad_image_base64` (not standard base64), `invalid_body` (not a JSON object, or a form that cannot be read), or `validation_failed` (`filename_invalid`, `file_invalid` (a second file part), `<field>_unknown`)"),
    Outcome(Outcome::ImageTooBig),
    Outcome(Outcome::TooManyPixels { width: 0, height: 0 }),
    TooLarge,
    Outcome(Outcome::UnsupportedImage),
    MediaType("JSON or `multipart/form-data`"),
    Busy,
]);

/// Uploads a photo for listings.
///
/// The type is detected from the bytes, not the file name, and the image header must parse.
/// Thumbnails are made in the background: `sizes` are empty strings until then (poll
/// `GET /v1/listings/photos/{id}`). A photo that cannot be decoded (for example a canvas
/// too large to decode safely) is kept, with empty sizes and `thumbnail_status: failed`.
#[utoipa::path(
    post,
    path = "/v1/listings/upload-photo",
    tag = "Listings",
    security(("bearer" = [])),
    request_body(content(
        (PhotoUploadBody = "application/json"),
        (PhotoForm = "multipart/form-data"),
    )),
    responses(
        (status = 201, description = "The stored photo", body = PhotoResult),
        UploadPhotoRefusals,
    )
)]
pub async fn upload_photo(
    caller: Caller,
    State(state): State<AppState>,
    raw: UploadBytes,
) -> Result<(StatusCode, Json<PhotoResult>), Response> {
    // The body (and its large body's place) is let go once it is decoded.
    let decoded = tokio::task::spawn_blocking(move || {
        let upload = match raw {
            UploadBytes::Json(raw) => decode_upload(&raw.bytes),
            UploadBytes::Form(parts, _place) => form_upload(parts),
        };
        upload.map(|upload| (pool::cleaning_cost(&upload.bytes), upload))
    })
    .await
    .map_err(|e| ApiError::Internal(anyhow::anyhow!("upload decoding failed: {e}")).into_response())?;
    let (cost, upload) = decoded.map_err(IntoResponse::into_response)?;
    // An image refused by its header is refused without a decode, and needs no room.
    let _decoding = match cost {
        Some(cost) => Some(state.decodes.admit(cost).await.map_err(|_| decodes_busy())?),
        None => None,
    };
    let photo =
        photos::upload(&state.core, &caller.admin, upload).await.map_err(|e| ApiError::from(e).into_response())?;
    Ok((StatusCode::CREATED, Json(render(&photo, state.config.media_url()))))
}

/// `503 server_busy`: the image decodes' memory stayed taken for the whole wait.
fn decodes_busy() -> Response {
    body::busy("The server is decoding as many images as its memory allows; retry in a moment.")
}

fn photo_not_found() -> ApiError {
    Outcome::PhotoNotFound.into()
}

refusals!(GetPhotoRefusals: [
    Outcome(Outcome::PhotoNotFound),
]);

/// One of the brand's photos, with its thumbnails once ready.
#[utoipa::path(
    get,
    path = "/v1/listings/photos/{id}",
    tag = "Listings",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The photo's `attachment_id`")),
    responses(
        (status = 200, description = "The photo", body = PhotoResult),
        GetPhotoRefusals,
    )
)]
pub async fn get_photo(
    caller: Caller,
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<PhotoResult>> {
    let id: i64 = path.ok().and_then(|Path(id)| id.parse().ok()).ok_or_else(photo_not_found)?;
    let photo = photos::get(&state.core, &caller.admin, id).await?;
    Ok(Json(render(&photo, state.config.media_url())))
}

/// A stored photo or thumbnail. Names are random and objects never change, so they are
/// cached for a year; only names the service generates are looked up (no traversal).
async fn serve_media(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> Response {
    let not_found = || ApiError::from(HttpRefusal::NoMedia).into_response();
    let Some(name) = path.ok().and_then(|Path(name)| MediaName::parse(&name)) else {
        return not_found();
    };
    match photos::media(&state.core, &name).await {
        Ok(Some(bytes)) => {
            let length = bytes.len();
            let mut response = Response::new(Body::from(bytes));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(name.mime()));
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL));
            headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            response
        }
        Ok(None) => not_found(),
        Err(e) => ApiError::Internal(anyhow::Error::new(e).context("cannot read a media object")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(error: ApiError) -> String {
        match error {
            ApiError::Client { code, .. } => code.to_owned(),
            ApiError::Validation(errors) => errors.iter().map(|e| e.code.clone()).collect::<Vec<_>>().join(", "),
            other => format!("{other:?}"),
        }
    }

    fn refused(body: &str) -> String {
        match decode_upload(body.as_bytes()) {
            Ok(_) => "accepted".to_owned(),
            Err(e) => code(e),
        }
    }

    #[test]
    fn bodies_that_do_not_fit_the_upload_shape_say_why() {
        assert_eq!(refused("{}"), "no_image");
        assert_eq!(refused(r#"{"image_base64": null}"#), "no_image");
        assert_eq!(refused(r#"{"image_base64": ""}"#), "no_image");
        assert_eq!(refused(r#"{"image_base64": 12}"#), "bad_image_base64");
        assert_eq!(refused(r#"{"image_base64": "!!!!"}"#), "bad_image_base64");
        assert_eq!(refused(r#"{"image_base64": "aGVsbG8gd29ybGQ="}"#), "accepted");
        assert_eq!(refused(r#"{"image_base64": "aGVsbG8=", "filename": 3}"#), "filename_invalid");
        assert_eq!(refused(r#"{"image_base64": "aGVsbG8=", "colour": "red"}"#), "colour_unknown");
        assert_eq!(refused("[1]"), "invalid_body");
        assert_eq!(refused("{"), "invalid_body");
    }

    #[test]
    fn the_parser_reads_every_documented_field() {
        let example = serde_json::from_str::<Value>(PHOTO_UPLOAD_BODY.example).unwrap();
        let names: Vec<&String> = example.as_object().unwrap().keys().collect();
        assert_eq!(names.len(), PHOTO_UPLOAD_BODY.fields.len(), "the example names every field");
        assert_eq!(refused(PHOTO_UPLOAD_BODY.example), "accepted");
    }
}
