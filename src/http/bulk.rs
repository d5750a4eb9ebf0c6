//! Bulk import: the XLSX template, and validating or committing a spreadsheet of listings.
//! Each row goes through the same path as `POST /v1/listings` and fails with its codes.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::listing::{validate, Channel, ValidListing};
use crate::domain::taxonomy::Options;
use crate::domain::FieldError;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::auth::Caller;
use crate::http::body::JsonObject;
use crate::http::listings::{self, NewListingBody};
use crate::import::{self, ImportError, Sheet, Upload, MAX_ROWS};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(bulk_template, bulk_validate, bulk_commit),
    components(schemas(BulkBody, BulkValidation, ValidatedRow, BulkCommit, CommittedRow, XlsxFile))
)]
pub struct BulkApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings/bulk-template", get(bulk_template))
        .route("/listings/bulk-validate", post(bulk_validate))
        .route("/listings/bulk-commit", post(bulk_commit))
}

/// The title shown for a row whose title cell is blank.
const MISSING_TITLE: &str = "(missing title)";

/// The body of `bulk-validate` and `bulk-commit`: one of the two fields.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BulkBody {
    /// The file, base64: an .xlsx workbook or a CSV file (UTF-8, UTF-16 or Windows-1252;
    /// comma, semicolon or tab separated), told apart by content. At most 5 MiB decoded.
    file_b64: Option<String>,
    /// Legacy: the CSV as text.
    csv_text: Option<String>,
}

/// An .xlsx workbook.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct XlsxFile(#[allow(dead_code)] Vec<u8>);

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
    /// `ok` or `error`.
    #[schema(example = "error")]
    pub status: &'static str,
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
    /// `success` or `error`.
    #[schema(example = "success")]
    pub status: &'static str,
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
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `read` scope", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn bulk_template(caller: Caller, State(state): State<AppState>) -> ApiResult<Response> {
    let brands = Options::with_brands(state.store.manufacturer_brand_names(caller.brand_id).await?).brands;
    let bytes = tokio::task::spawn_blocking(move || import::template(&brands))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| ApiError::Internal(e.into()))?;
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
    request_body = BulkBody,
    responses(
        (status = 200, description = "Every data row with its create-listing reason codes (bad rows do not fail the request)", body = BulkValidation),
        (status = 400, description = "`bad_file`: no file, invalid base64, not an .xlsx or CSV file, over 5 MiB, a \
workbook over its bounds (zip entries, unpacked size, compression ratio, declared sheet range), no header row, a \
column twice; `validation_failed`: `too_many_rows` (over 200 data rows: nothing is read or written), \
`file_b64_invalid` / `csv_text_invalid` (not a string), `<field>_unknown`; `invalid_body`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn bulk_validate(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BulkValidation>> {
    let file = read(&body).await?;
    let rows: Vec<ValidatedRow> = checked(&state, &caller, file.rows)
        .await?
        .into_iter()
        .map(|(row, title, checked)| match checked {
            Ok(_) => ValidatedRow { row, title, status: "ok", errors: Vec::new() },
            Err(errors) => ValidatedRow { row, title, status: "error", errors },
        })
        .collect();
    Ok(Json(BulkValidation {
        row_count: rows.len(),
        error_count: rows.iter().filter(|r| r.status == "error").count(),
        max_rows: MAX_ROWS,
        headers: file.headers,
        unknown_columns: file.unknown_columns,
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
    request_body = BulkBody,
    responses(
        (status = 200, description = "Per-row results in file order. Valid rows are saved together in one transaction \
with channel `clearance`, the caller as seller and the brand's default warehouse unless the row names one", body = BulkCommit),
        (status = 400, description = "As bulk-validate: `bad_file`, `validation_failed` (`too_many_rows`: nothing is \
written), `invalid_body`", body = ErrorBody),
        (status = 401, description = "`missing_bearer_token` or `invalid_token`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not a partner admin, or no `write` scope", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not JSON", body = ErrorBody),
        (status = 429, description = "`rate_limited`", body = ErrorBody),
    )
)]
pub async fn bulk_commit(
    caller: Caller,
    State(state): State<AppState>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<BulkCommit>> {
    let file = read(&body).await?;
    let mut rows = Vec::with_capacity(file.rows.len());
    let mut valid: Vec<(usize, NewListingBody)> = Vec::new();
    for (row, title, checked) in checked(&state, &caller, file.rows).await? {
        let (status, message) = match checked {
            Ok(listing) => {
                valid.push((rows.len(), listing));
                ("success", None)
            }
            Err(errors) => ("error", Some(errors.join("|"))),
        };
        rows.push(CommittedRow { row, title, status, product_id: None, url: None, message });
    }
    let (positions, bodies): (Vec<usize>, Vec<NewListingBody>) = valid.into_iter().unzip();
    let saved = listings::save(&state, &caller, bodies).await?;
    let cx = listings::context(&state, &caller);
    for (position, saved) in positions.into_iter().zip(saved) {
        rows[position].product_id = Some(saved.record.id);
        rows[position].url = Some(cx.url(saved.record.id));
    }
    let success_count = rows.iter().filter(|r| r.status == "success").count();
    Ok(Json(BulkCommit {
        row_count: rows.len(),
        success_count,
        error_count: rows.len() - success_count,
        unknown_columns: file.unknown_columns,
        rows,
    }))
}

/// An uploaded file's rows, each a create body (on the clearance channel) already through
/// the listing validator.
struct ReadFile {
    headers: Vec<String>,
    unknown_columns: Vec<String>,
    rows: Vec<ReadRow>,
}

struct ReadRow {
    row: u32,
    /// The row's title, or `(missing title)`.
    title: String,
    body: Map<String, Value>,
    validated: Result<ValidListing, Vec<FieldError>>,
}

/// Each row's number and title with the listing it makes, or its reason codes: the store's
/// checks on top of the validator's, exactly as for `POST /v1/listings`.
async fn checked(
    state: &AppState,
    caller: &Caller,
    rows: Vec<ReadRow>,
) -> ApiResult<Vec<(u32, String, Result<NewListingBody, Vec<String>>)>> {
    let mut checked = Vec::with_capacity(rows.len());
    for row in rows {
        let outcome = listings::prepare_validated(state, caller, &row.body, row.validated).await?;
        let outcome = outcome.map_err(|errors| errors.into_iter().map(|e| e.code).collect());
        checked.push((row.row, row.title, outcome));
    }
    Ok(checked)
}

/// The uploaded file of a bulk body, read and validated off the async workers (parsing and
/// sanitising 200 descriptions is CPU work); only the store's checks are left.
async fn read(body: &Map<String, Value>) -> ApiResult<ReadFile> {
    let upload = upload(body)?;
    tokio::task::spawn_blocking(move || import::read(&upload).map(validated))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| match e {
            ImportError::Refused(message) => bad_file(message),
            ImportError::TooManyRows => ApiError::validation(vec![FieldError::new("file", "too_many_rows")]),
        })
}

/// Each row as a create body through the validator, on the clearance channel: bulk import
/// always creates clearance listings.
fn validated(sheet: Sheet) -> ReadFile {
    let rows = sheet
        .rows
        .into_iter()
        .map(|row| {
            let mut body = row.body;
            body.insert("channel".to_owned(), Value::String(Channel::Clearance.as_str().to_owned()));
            let validated = validate(&body, None);
            ReadRow { row: row.row, title: row.title.unwrap_or_else(|| MISSING_TITLE.to_owned()), body, validated }
        })
        .collect();
    ReadFile { headers: sheet.headers, unknown_columns: sheet.unknown_columns, rows }
}

fn bad_file(message: impl Into<std::borrow::Cow<'static, str>>) -> ApiError {
    ApiError::bad_request("bad_file", message)
}

/// `file_b64` or `csv_text` (blank counts as absent), exactly one of them.
fn upload(body: &Map<String, Value>) -> ApiResult<Upload> {
    let mut errors = Vec::new();
    let mut text = |field: &str| match body.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            errors.push(FieldError::of(field, "invalid"));
            None
        }
    };
    let (file, csv) = (text("file_b64"), text("csv_text"));
    for field in body.keys().filter(|k| !["file_b64", "csv_text"].contains(&k.as_str())) {
        errors.push(FieldError::new(field.as_str(), format!("{field}_unknown")));
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    match (file, csv) {
        (Some(file), None) => Upload::from_base64(file).map_err(|e| bad_file(e.to_string())),
        (None, Some(csv)) => Ok(Upload::CsvText(csv.to_owned())),
        (Some(_), Some(_)) => Err(bad_file("Send the file in file_b64 or in csv_text, not both.")),
        (None, None) => Err(bad_file("No file: send the spreadsheet as base64 in file_b64 (or CSV text in csv_text).")),
    }
}
