//! Bulk import: the XLSX template, and validating or committing a spreadsheet of listings.
//! Each row goes through the same path as `POST /v1/listings` and fails with its codes.

use crate::http::docs::refusals::refusals;
use std::borrow::Cow;

use crate::http::routing::{get, post};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Serialize;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::body::multipart::{self, Part};
use crate::http::body::{self as request_body, JsonObject};
use crate::http::docs::enums::BulkMode;
use crate::http::files;
use crate::http::listings;
use crate::http::query::QueryParams;
use crate::http::Json;
use crate::import::{self, read_form, read_upload, BulkUpload, Mode, RowMarks, Upload, UploadRefused, MAX_ROWS};
use crate::state::AppState;
use crate::usecases::bulk::{self, RowError};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(bulk_template, bulk_validate, bulk_validate_workbook, bulk_commit),
    components(schemas(
        Upload,
        BulkValidation,
        ValidatedRow,
        Pinned,
        ErrorDetail,
        BulkCommit,
        CommittedRow,
        XlsxFile
    ))
)]
pub struct BulkApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings/bulk-template", get(bulk_template))
        .route("/listings/bulk-validate", post(bulk_validate))
        .route("/listings/bulk-validate/workbook", post(bulk_validate_workbook))
        .route("/listings/bulk-commit", post(bulk_commit))
}

/// An .xlsx workbook (a response body; nothing reads it).
pub struct XlsxFile;

impl utoipa::PartialSchema for XlsxFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .content_media_type("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
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
    /// What committing the row would do (`ok` only): `created`, or `updated` in `upsert` mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "created")]
    pub action: Option<&'static str>,
    /// The create-listing reason codes of the row; empty when `ok`.
    #[schema(example = json!(["price_gbp_required", "category_required"]))]
    pub errors: Vec<String>,
    #[serde(flatten)]
    pub at: Pinned,
}

/// Where a row's errors are in the sheet (error rows only). `column`, `cell` and `value`
/// are those of the row's first error that belongs to one cell, absent when none does;
/// `error_details` pins every error.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Pinned {
    /// The header of the faulty cell's column, as uploaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "price_gbp")]
    pub column: Option<String>,
    /// The faulty cell's A1 reference, as the sheet shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "B7")]
    pub cell: Option<String>,
    /// The faulty cell's content as read; empty for a blank cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "twelve")]
    pub value: Option<String>,
    /// Every error of the row, in order, with its cell when it belongs to one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub error_details: Vec<ErrorDetail>,
}

/// One error of a row and the cell it belongs to.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    #[schema(example = "price_gbp_invalid")]
    pub code: String,
    /// What is wrong and what to do, in a sentence (as `validation_failed`'s `errors[].message`).
    #[schema(
        example = "Give `price_gbp` in pounds, between £0.01 and £1,000,000.00 with at most two decimals (e.g. 450 or 19.99)."
    )]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl Pinned {
    fn of(errors: &[RowError]) -> Self {
        let first = errors.iter().find_map(|e| e.at.as_ref());
        Self {
            column: first.map(|at| at.column.clone()),
            cell: first.map(|at| at.cell.clone()),
            value: first.map(|at| at.value.clone()),
            error_details: errors
                .iter()
                .map(|e| ErrorDetail {
                    code: e.code.clone(),
                    message: e.message.clone(),
                    column: e.at.as_ref().map(|at| at.column.clone()),
                    cell: e.at.as_ref().map(|at| at.cell.clone()),
                    value: e.at.as_ref().map(|at| at.value.clone()),
                })
                .collect(),
        }
    }
}

fn codes(errors: &[RowError]) -> Vec<String> {
    errors.iter().map(|e| e.code.clone()).collect()
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
    /// The listing's id (success only): the new one, or the one updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_id: Option<i64>,
    /// `created` or `updated` (success only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "created")]
    pub action: Option<&'static str>,
    /// The new listing on the marketplace (success only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The row's reason codes joined by `|` (error only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "price_gbp_required|category_required")]
    pub message: Option<String>,
    #[serde(flatten)]
    pub at: Pinned,
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
pub async fn bulk_template(caller: Caller, State(state): State<AppState>, request: HeaderMap) -> ApiResult<Response> {
    let bytes = bulk::template(&state.core, &caller.admin).await?;
    Ok(files::attachment(&request, import::XLSX_CONTENT_TYPE, import::TEMPLATE_FILENAME, bytes))
}

refusals!(BulkValidateRefusals: [
    Invalid(VALIDATE_REFUSALS),
    TooLarge,
    MediaType("JSON or `multipart/form-data`"),
]);

/// Checks a spreadsheet of listings row by row, exactly as `POST /v1/listings` would,
/// writing nothing. (The older spelling `?format=xlsx` still answers the annotated workbook
/// of `POST /v1/listings/bulk-validate/workbook`, for clients written before that operation.)
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-validate",
    tag = "Listings",
    security(("bearer" = [])),
    params(
        ("mode" = Option<BulkMode>, Query, description = "`create` (default) or `upsert` (as the body's `mode`)"),
    ),
    request_body(content((Upload = "application/json"), (BulkForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "Every data row with its create-listing reason codes and their messages, pinned \
to their cells (bad rows do not fail the request)", body = BulkValidation),
        BulkValidateRefusals,
    )
)]
pub async fn bulk_validate(
    caller: Caller,
    State(state): State<AppState>,
    request: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    body: BulkBody,
) -> ApiResult<Response> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let mut params = QueryParams::new(&pairs);
    let workbook = params.choice("format", false, &[("json", false), ("xlsx", true)]);
    let report = validate(&state, &caller, params, &body).await?;
    if workbook {
        return annotated(&request, report).await;
    }
    let rows: Vec<ValidatedRow> = report
        .rows
        .into_iter()
        .map(|row| match row.outcome {
            Ok(action) => ValidatedRow {
                row: row.row,
                title: row.title,
                status: ValidatedStatus::Ok,
                action: Some(action.as_str()),
                errors: Vec::new(),
                at: Pinned::default(),
            },
            Err(errors) => ValidatedRow {
                row: row.row,
                title: row.title,
                status: ValidatedStatus::Error,
                action: None,
                errors: codes(&errors),
                at: Pinned::of(&errors),
            },
        })
        .collect();
    Ok(Json(BulkValidation {
        row_count: rows.len(),
        error_count: rows.iter().filter(|r| r.status == ValidatedStatus::Error).count(),
        max_rows: MAX_ROWS,
        headers: report.sheet.headers,
        unknown_columns: report.sheet.unknown_columns,
        rows,
    })
    .into_response())
}

/// The refusals of both bulk-validate operations.
const VALIDATE_REFUSALS: &str = "`bad_file`: no file, invalid base64, not an .xlsx or CSV file, over 5 MiB, a \
workbook over its bounds (zip entries, unpacked size, compression ratio, declared sheet range), no header row, a \
column twice; `validation_failed`: `too_many_rows` (over 200 data rows: nothing is read or written), \
`file_b64_invalid` / `csv_text_invalid` (not a string), `mode_invalid` (not `create` or `upsert`, or the body and \
the query disagree), `<field>_unknown`; `invalid_body`";

refusals!(BulkValidateWorkbookRefusals: [
    Invalid(VALIDATE_REFUSALS),
    TooLarge,
    MediaType("JSON or `multipart/form-data`"),
]);

/// Checks a spreadsheet of listings as `bulk-validate` does and answers the uploaded sheet
/// back as a workbook: an `errors` column beside each row, each faulty cell filled and
/// given a note with its reasons. Nothing is written.
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-validate/workbook",
    tag = "Listings",
    security(("bearer" = [])),
    params(
        ("mode" = Option<BulkMode>, Query, description = "`create` (default) or `upsert` (as the body's `mode`)"),
    ),
    request_body(content((Upload = "application/json"), (BulkForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "The annotated workbook (attachment `rehome-bulk-errors.xlsx`); a file without \
faults comes back with an empty `errors` column",
         content_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", body = XlsxFile),
        BulkValidateWorkbookRefusals,
    )
)]
pub async fn bulk_validate_workbook(
    caller: Caller,
    State(state): State<AppState>,
    request: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    body: BulkBody,
) -> ApiResult<Response> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let report = validate(&state, &caller, QueryParams::new(&pairs), &body).await?;
    annotated(&request, report).await
}

/// Reads the `mode` query parameter (refusing any other) and the body, and validates the file.
async fn validate(
    state: &AppState,
    caller: &Caller,
    mut params: QueryParams<'_>,
    body: &BulkBody,
) -> ApiResult<bulk::BulkReport<bulk::Action>> {
    let query_mode = query_mode(&mut params);
    params.finish()?;
    let read = body.read()?;
    let mode = mode(read.mode, query_mode)?;
    Ok(bulk::validate_file(&state.core, &caller.admin, read.upload, mode).await?)
}

/// The error workbook of a validation, as a file answer.
async fn annotated(request: &HeaderMap, report: bulk::BulkReport<bulk::Action>) -> ApiResult<Response> {
    let marks: Vec<RowMarks> = report
        .rows
        .iter()
        .filter_map(|row| row.outcome.as_ref().err().map(|errors| (row.row, errors)))
        .map(|(row, errors)| RowMarks {
            row,
            errors: errors.iter().map(|e| (e.words.clone(), e.at.as_ref().map(|at| at.col))).collect(),
        })
        .collect();
    let bytes = tokio::task::spawn_blocking(move || import::error_workbook(&report.sheet, &marks))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok(files::attachment(request, import::XLSX_CONTENT_TYPE, import::ERRORS_FILENAME, bytes))
}

/// A bulk file as a form (`multipart/form-data`): what `curl -F file=@listings.xlsx` sends.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct BulkForm {
    /// The file: an .xlsx workbook or a CSV file (UTF-8, UTF-16 or Windows-1252; comma,
    /// semicolon or tab separated), told apart by content. At most 5 MiB.
    #[schema(value_type = String, format = Binary, max_length = 5242880)]
    pub file: Vec<u8>,
    /// `create` (default) or `upsert`, as the JSON body's `mode`.
    #[schema(value_type = Option<String>, pattern = "^(create|upsert)$")]
    pub mode: Option<String>,
}

/// The body of `bulk-validate` and `bulk-commit`: the JSON form, or a form
/// (`multipart/form-data`, decisions 15.1) with a file part named `file`.
pub enum BulkBody {
    Json(serde_json::Map<String, serde_json::Value>),
    /// The form's parts, and the body's place among the large bodies while they are read.
    Form(Vec<Part>, request_body::ReadBody),
}

impl axum::extract::FromRequest<AppState> for BulkBody {
    type Rejection = Response;

    async fn from_request(request: axum::extract::Request, state: &AppState) -> Result<Self, Response> {
        let Some(boundary) = multipart::boundary(request.headers()) else {
            return JsonObject::from_request(request, state).await.map(|JsonObject(map)| Self::Json(map));
        };
        let mut read = request_body::read_body(request, state).await?;
        let bytes = bytes::Bytes::from(std::mem::take(&mut read.bytes));
        let parts = multipart::parts(&boundary, bytes).await.map_err(IntoResponse::into_response)?;
        Ok(Self::Form(parts, read))
    }
}

impl BulkBody {
    fn read(&self) -> Result<BulkUpload, UploadRefused> {
        match self {
            Self::Json(map) => read_upload(map),
            Self::Form(parts, _) => read_form(parts.iter().map(|p| (p.name.as_str(), &p.bytes[..]))),
        }
    }
}

/// `mode` from the query string, if given (`mode_invalid` otherwise noted).
fn query_mode(params: &mut QueryParams<'_>) -> Option<Mode> {
    params.choice("mode", None, &[("create", Some(Mode::Create)), ("upsert", Some(Mode::Upsert))])
}

/// The body's `mode` or the query's (default `create`); both, unless equal: `mode_invalid`.
fn mode(body: Option<Mode>, query: Option<Mode>) -> Result<Mode, ApiError> {
    match (body, query) {
        (Some(a), Some(b)) if a != b => Err(ApiError::field("mode", "mode_invalid")),
        (given, other) => Ok(given.or(other).unwrap_or_default()),
    }
}

refusals!(BulkCommitRefusals: [
    Invalid("As bulk-validate: `bad_file`, `validation_failed` (`too_many_rows`: nothing is \
written; `mode_invalid`), `invalid_body`"),
    TooLarge,
    MediaType("JSON or `multipart/form-data`"),
]);

/// Creates a clearance listing of the caller for each valid row of a spreadsheet and
/// reports the others; valid rows are created even when others fail.
#[utoipa::path(
    post,
    path = "/v1/listings/bulk-commit",
    tag = "Listings",
    security(("bearer" = [])),
    params(
        ("mode" = Option<BulkMode>, Query, description = "`create` (default) or `upsert` (as the body's `mode`): in `upsert` mode a row whose `sku` matches one of the brand's listings updates it"),
    ),
    request_body(content((Upload = "application/json"), (BulkForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "Per-row results in file order. Valid rows are saved together in one transaction \
with channel `clearance`, the caller as seller and the brand's default warehouse unless the row names one", body = BulkCommit),
        BulkCommitRefusals,
    )
)]
pub async fn bulk_commit(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    body: BulkBody,
) -> ApiResult<Json<BulkCommit>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let mut params = QueryParams::new(&pairs);
    let query_mode = query_mode(&mut params);
    params.finish()?;
    let read = body.read()?;
    let mode = mode(read.mode, query_mode)?;
    let report = bulk::commit_file(&state.core, &caller.admin, read.upload, mode).await?;
    let cx = listings::context(&state, &caller);
    let rows: Vec<CommittedRow> = report
        .rows
        .into_iter()
        .map(|row| match row.outcome {
            Ok((id, action)) => CommittedRow {
                row: row.row,
                title: row.title,
                status: CommittedStatus::Success,
                product_id: Some(id),
                action: Some(action.as_str()),
                url: Some(cx.url(id)),
                message: None,
                at: Pinned::default(),
            },
            Err(errors) => CommittedRow {
                row: row.row,
                title: row.title,
                status: CommittedStatus::Error,
                product_id: None,
                action: None,
                url: None,
                message: Some(codes(&errors).join("|")),
                at: Pinned::of(&errors),
            },
        })
        .collect();
    let success_count = rows.iter().filter(|r| r.status == CommittedStatus::Success).count();
    Ok(Json(BulkCommit {
        row_count: rows.len(),
        success_count,
        error_count: rows.len() - success_count,
        unknown_columns: report.sheet.unknown_columns,
        rows,
    }))
}
