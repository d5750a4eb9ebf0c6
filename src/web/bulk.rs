//! Bulk import: download the template, upload a spreadsheet or CSV (a multipart form: a
//! file cannot be posted otherwise without script), see every row's errors by cell, import.
//! Validate and Import call the use cases `POST /v1/listings/bulk-validate` and
//! `bulk-commit` call, so a row fails here exactly as it fails there.

use crate::http::routing::{get, post};
use axum::extract::{Multipart, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::extract::{admin_multipart, multipart_parts, PageError, SignedIn};
use super::pages::{render, Chrome};
use crate::import::{ImportError, Mode, Upload, TEMPLATE_FILENAME, XLSX_CONTENT_TYPE};
use crate::state::AppState;
use crate::usecases::bulk::{self, BulkError, CheckedRow, RowError};
use crate::usecases::people::sessions::LiveSession;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/bulk-import", get(page).merge(post(upload)))
        .route("/bulk-import/template.xlsx", get(template))
}

/// One row of a report.
pub struct ReportRow {
    pub row: u32,
    pub title: String,
    /// `created`/`updated` (with the listing id once imported), or empty when refused.
    pub outcome: String,
    /// `(cell, column, code)` of every reason; a reason of the whole row has no cell.
    pub errors: Vec<(String, String, String)>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/bulk_import.html")]
pub struct BulkPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    /// `validated` or `imported`, with the rows.
    pub report: Option<(&'static str, Vec<ReportRow>)>,
    pub ok_rows: usize,
    pub error: Option<String>,
}

fn view(
    session: &LiveSession,
    status: StatusCode,
    report: Option<(&'static str, Vec<ReportRow>)>,
    error: Option<String>,
) -> Response {
    let ok_rows = report.as_ref().map_or(0, |(_, rows)| rows.iter().filter(|r| r.errors.is_empty()).count());
    let page = BulkPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        report,
        ok_rows,
        error,
    };
    render(status, &page)
}

async fn page(SignedIn(session): SignedIn) -> Response {
    view(&session, StatusCode::OK, None, None)
}

async fn template(State(state): State<AppState>, SignedIn(session): SignedIn) -> Result<Response, PageError> {
    let bytes = bulk::template(&state.core, &session.actor()).await.map_err(PageError::internal)?;
    let disposition = format!("attachment; filename=\"{TEMPLATE_FILENAME}\"");
    Ok(([(header::CONTENT_TYPE, XLSX_CONTENT_TYPE.to_owned()), (header::CONTENT_DISPOSITION, disposition)], bytes)
        .into_response())
}

/// What the multipart form held.
#[derive(Default)]
struct Posted {
    csrf: String,
    action: String,
    mode: String,
    file: Vec<u8>,
}

async fn read_form(multipart: Multipart) -> Result<Posted, PageError> {
    let mut posted = Posted::default();
    for part in multipart_parts(multipart).await? {
        match part.name.as_str() {
            "csrf" => posted.csrf = part.text(),
            "action" => posted.action = part.text(),
            "mode" => posted.mode = part.text(),
            "file" => posted.file = part.bytes.to_vec(),
            _ => {}
        }
    }
    Ok(posted)
}

fn rows_of<T>(rows: Vec<CheckedRow<T>>, ok: impl Fn(T) -> String) -> Vec<ReportRow> {
    rows.into_iter()
        .map(|r| {
            let (outcome, errors) = match r.outcome {
                Ok(value) => (ok(value), Vec::new()),
                Err(errors) => (String::new(), errors.into_iter().map(error_cell).collect()),
            };
            ReportRow { row: r.row, title: r.title, outcome, errors }
        })
        .collect()
}

/// `(cell, column, sentence)` of a reason: the page shows what to do, not the code.
fn error_cell(e: RowError) -> (String, String, String) {
    match e.at {
        Some(at) => (at.cell, at.column, e.message),
        None => (String::new(), String::new(), e.message),
    }
}

async fn upload(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let posted = read_form(multipart).await?;
    admin_multipart(&session, &posted.csrf)?;
    if posted.file.is_empty() {
        return Ok(view(
            &session,
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            Some("Choose a file (XLSX or CSV).".to_owned()),
        ));
    }
    let mode = if posted.mode == "upsert" { Mode::Upsert } else { Mode::Create };
    let actor = session.actor();
    let upload = Upload::File(posted.file);
    let report = if posted.action == "import" {
        bulk::commit_file(&state.core, &actor, upload, mode)
            .await
            .map(|r| ("imported", rows_of(r.rows, |(id, action)| format!("{} #{id}", action.as_str()))))
    } else {
        bulk::validate_file(&state.core, &actor, upload, mode)
            .await
            .map(|r| ("validated", rows_of(r.rows, |action| format!("would be {}", action.as_str()))))
    };
    match report {
        Ok(report) => Ok(view(&session, StatusCode::OK, Some(report), None)),
        Err(BulkError::File(ImportError::TooManyRows)) => Ok(view(
            &session,
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            Some("too_many_rows: the file has more than 200 data rows; nothing was imported.".to_owned()),
        )),
        Err(BulkError::File(ImportError::Refused(message))) => {
            Ok(view(&session, StatusCode::UNPROCESSABLE_ENTITY, None, Some(format!("bad_file: {message}"))))
        }
        Err(e) => Err(PageError::internal(e)),
    }
}
