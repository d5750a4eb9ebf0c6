//! Bulk import: the XLSX template, and validating or committing a spreadsheet of listings.
//! Each row goes through the same path as `POST /v1/listings` and fails with its codes.

use std::borrow::Cow;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::FieldError;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::listings;
use crate::import::{self, read_upload, ImportError, Upload, UploadRefused, MAX_ROWS};
use crate::usecases::bulk::{self, BulkError};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(bulk_template, bulk_validate, bulk_commit),
    components(schemas(Upload, BulkValidation, ValidatedRow, BulkCommit, CommittedRow, XlsxFile))
)]
pub struct BulkApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings/bulk-template", get(bulk_template))
        .route("/listings/bulk-validate", post(bulk_validate))
        .route("/listings/bulk-commit", post(bulk_commit))
}

/// An .xlsx workbook (a response body; nothing reads it).
pub struct XlsxFile;

impl utoipa::PartialSchema for XlsxFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("An .xlsx workbook."))
            .into()
    }
}

impl ToSchema for XlsxFile {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("XlsxFile")
    }
}

/// Whether a validated row would be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValidatedStatus {
    Ok,
    Error,
}

/// Whether a committed row was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommittedStatus {
    Success,
    Error,
}

/// What `bulk-validate` found; nothing is written.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkValidation {
    /// Data rows read, blank rows excluded.
    pub row_count: usize,
    /// Rows that would be refused.
    pub error_count: usize,
    /// Most data rows a file may hold.
    pub max_rows: usize,
    /// The header row as uploaded.
    pub headers: Vec<String>,
    /// Headers that name no import column, and `(column X)` for data under a blank header:
    /// their cells are not imported.
    pub unknown_columns: Vec<String>,
    pub rows: Vec<ValidatedRow>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ValidatedRow {
    /// The row as the spreadsheet numbers it: the header is row 1, the first data row 2.
    pub row: u32,
    /// The row's title, or `(missing title)`.
    pub title: String,
    pub status: ValidatedStatus,
    /// The create-listing reason codes of the row; empty when `ok`.
    #[schema(example = json!(["price_gbp_required", "category_required"]))]
    pub errors: Vec<String>,
}

/// What `bulk-commit` created and refused.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkCommit {
    pub row_count: usize,
    pub success_count: usize,
    pub error_count: usize,
    /// As in `bulk-validate`: these columns were not imported.
    pub unknown_columns: Vec<String>,
    pub rows: Vec<CommittedRow>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CommittedRow {
    pub row: u32,
    pub title: String,
    pub status: CommittedStatus,
    /// The new listing's id (success only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_id: Option<i64>,
    /// The new listing on the marketplace (success only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The row's reason codes joined by `|` (error only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "price_gbp_required|category_required")]
    pub message: Option<String>,
}

/// The import template for the caller: the import columns, with dropdowns of the taxonomy
/// and the caller's manufacturer brands.
#[utoipa::path(
    get,
    path = "/v1/listings/bulk-template",
    tag = "Listings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "An .xlsx workbook (attachment `rehome-bulk-template.xlsx`): a Listings sheet whose \
header row is the import columns, with dropdowns for category, condition, brand, colour, fabric, age_years, \
delivery_contribution_gbp and status; an Instructions sheet with an example row; a hidden Lists sheet",
         content_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", body = XlsxFile),
    )
)]
pub async fn bulk_template(caller: Caller, State(state): State<AppState>) -> ApiResult<Response> {
    let bytes = bulk::template(&state.core, &caller.actor).await?;
    let disposition = format!("attachment; filename=\"{}\"", import::TEMPLATE_FILENAME);
    Ok((
        [(header::CONTENT_TYPE, import::XLSX_CONTENT_TYPE.to_owned()), (header::CONTENT_DISPOSITION, disposition)],
        bytes,
    )
        .into_response())
}

/// Checks a spreadsheet of listings row by row, exactly as `POST /v1/listings` would,
/// writing nothing.
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-validate",
    tag = "Listings",
    security(("bearer" = [])),
    request_body = Upload,
    responses(
        (status = 200, description = "Every data row with its create-listing reason codes (bad rows do not fail the request)", body = BulkValidation),
        (status = 400, description = "`bad_file`: no file, invalid base64, not an .xlsx or CSV file, over 5 MiB, a \
workbook over its bounds (zip entries, unpacked size, compression ratio, declared sheet range), no header row, a \
column twice; `validation_failed`: `too_many_rows` (over 200 data rows: nothing is read or written), \
`file_b64_invalid` / `csv_text_invalid` (not a string), `<field>_unknown`; `invalid_body`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
    )
)]
pub async fn bulk_validate(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BulkValidation>> {
    let upload = read_upload(&body)?;
    let report = bulk::validate_file(&state.core, &caller.actor, upload).await?;
    let rows: Vec<ValidatedRow> = report
        .rows
        .into_iter()
        .map(|row| match row.outcome {
            Ok(()) => ValidatedRow { row: row.row, title: row.title, status: ValidatedStatus::Ok, errors: Vec::new() },
            Err(errors) => ValidatedRow { row: row.row, title: row.title, status: ValidatedStatus::Error, errors },
        })
        .collect();
    Ok(Json(BulkValidation {
        row_count: rows.len(),
        error_count: rows.iter().filter(|r| r.status == ValidatedStatus::Error).count(),
        max_rows: MAX_ROWS,
        headers: report.headers,
        unknown_columns: report.unknown_columns,
        rows,
    }))
}

/// Creates a clearance listing of the caller for each valid row of a spreadsheet and
/// reports the others; valid rows are created even when others fail.
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-commit",
    tag = "Listings",
    security(("bearer" = [])),
    request_body = Upload,
    responses(
        (status = 200, description = "Per-row results in file order. Valid rows are saved together in one transaction \
with channel `clearance`, the caller as seller and the brand's default warehouse unless the row names one", body = BulkCommit),
        (status = 400, description = "As bulk-validate: `bad_file`, `validation_failed` (`too_many_rows`: nothing is \
written), `invalid_body`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
    )
)]
pub async fn bulk_commit(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BulkCommit>> {
    let upload = read_upload(&body)?;
    let report = bulk::commit_file(&state.core, &caller.actor, upload).await?;
    let cx = listings::context(&state, &caller);
    let rows: Vec<CommittedRow> = report
        .rows
        .into_iter()
        .map(|row| {
            let (status, product_id, message) = match row.outcome {
                Ok(id) => (CommittedStatus::Success, Some(id), None),
                Err(errors) => (CommittedStatus::Error, None, Some(errors.join("|"))),
            };
            let url = product_id.map(|id| cx.url(id));
            CommittedRow { row: row.row, title: row.title, status, product_id, url, message }
        })
        .collect();
    let success_count = rows.iter().filter(|r| r.status == CommittedStatus::Success).count();
    Ok(Json(BulkCommit {
        row_count: rows.len(),
        success_count,
        error_count: rows.len() - success_count,
        unknown_columns: report.unknown_columns,
        rows,
    }))
}

impl From<UploadRefused> for ApiError {
    fn from(e: UploadRefused) -> Self {
        match e {
            UploadRefused::Invalid(errors) => ApiError::validation(errors),
            UploadRefused::File(e) => file_refused(e),
        }
    }
}

impl From<BulkError> for ApiError {
    fn from(e: BulkError) -> Self {
        match e {
            BulkError::File(e) => file_refused(e),
            BulkError::Template(e) => ApiError::Internal(e.into()),
            BulkError::Task(e) => ApiError::Internal(e.into()),
            BulkError::Store(e) => e.into(),
        }
    }
}

fn file_refused(e: ImportError) -> ApiError {
    match e {
        ImportError::Refused(message) => ApiError::bad_request("bad_file", message),
        ImportError::TooManyRows => ApiError::validation(vec![FieldError::new("file", "too_many_rows")]),
    }
}
