//! Bulk import in one pass (issue 31 item 4): download the template; upload a spreadsheet or
//! CSV once (a multipart form: a file cannot be posted otherwise without script), which is
//! kept as a draft; review every row's outcome on the draft's page; import it with one
//! button, without choosing the file again. The checks are the use case's
//! (`usecases::bulk::drafts`, over the same rows as the API's bulk endpoints); this module
//! only reads forms and renders.

use crate::http::routing::{get, post};
use axum::extract::{Multipart, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use serde::Deserialize;

use super::extract::{admin_multipart, multipart_parts, record_id, AdminForm, PageError, SignedIn, SignedInAdmin};
use super::notice::{Flash, Notice};
use super::pages::{render, when, Chrome, MessagePage};
use crate::import::{ImportError, Mode, TEMPLATE_FILENAME, XLSX_CONTENT_TYPE};
use crate::state::AppState;
use crate::usecases::bulk::drafts::{
    self, Accepted, Committed, Discard, DraftError, DraftRow, DraftState, Review, RowOutcome, Tally, DRAFT_LIFETIME,
    MAX_LIVE_DRAFTS,
};
use crate::usecases::bulk::{self, BulkError};
use crate::usecases::people::sessions::LiveSession;

const BULK: &str = "/dashboard/bulk-import";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/bulk-import", get(page).merge(post(upload)))
        .route("/bulk-import/template.xlsx", get(template))
        .route("/bulk-import/drafts/{id}", get(review_page))
        .route("/bulk-import/drafts/{id}/import", post(import))
        .route("/bulk-import/drafts/{id}/discard", post(discard))
}

/// A file waiting for review, as the upload page lists it.
pub struct Waiting {
    pub href: String,
    pub filename: String,
    pub uploader: String,
    pub uploaded: String,
    pub rows: i64,
}

#[derive(askama::Template)]
#[template(path = "dashboard/bulk_import.html")]
pub struct BulkPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub notice: Option<&'static str>,
    pub waiting: Vec<Waiting>,
    pub error: Option<String>,
    pub hours: i64,
    pub max_drafts: i64,
}

async fn upload_page(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<&'static str>,
    error: Option<String>,
) -> Result<Response, PageError> {
    let waiting = if let Some(admin) = session.admin() {
        drafts::waiting(&state.core, &admin)
            .await?
            .into_iter()
            .map(|d| Waiting {
                href: format!("{BULK}/drafts/{}", d.id),
                filename: d.filename,
                uploader: d.uploader,
                uploaded: when(d.created_at.get(), session.zone()),
                rows: d.row_count,
            })
            .collect()
    } else {
        Vec::new()
    };
    let page = BulkPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        notice,
        waiting,
        error,
        hours: DRAFT_LIFETIME.num_hours(),
        max_drafts: MAX_LIVE_DRAFTS,
    };
    Ok(render(status, &page))
}

async fn page(State(state): State<AppState>, SignedIn(session): SignedIn, flash: Flash) -> Result<Response, PageError> {
    upload_page(&state, &session, StatusCode::OK, flash.text(), None).await
}

async fn template(State(state): State<AppState>, SignedIn(session): SignedIn) -> Result<Response, PageError> {
    let bytes = bulk::template(&state.core, &session.actor()).await.map_err(PageError::internal)?;
    let disposition = format!("attachment; filename=\"{TEMPLATE_FILENAME}\"");
    Ok(([(header::CONTENT_TYPE, XLSX_CONTENT_TYPE.to_owned()), (header::CONTENT_DISPOSITION, disposition)], bytes)
        .into_response())
}

/// What the upload form held.
#[derive(Default)]
struct Posted {
    csrf: String,
    mode: String,
    filename: String,
    file: Vec<u8>,
    replaces: Option<i64>,
}

async fn read_form(multipart: Multipart) -> Result<Posted, PageError> {
    let mut posted = Posted::default();
    for part in multipart_parts(multipart).await? {
        match part.name.as_str() {
            "csrf" => posted.csrf = part.text(),
            "mode" => posted.mode = part.text(),
            "replaces" => posted.replaces = part.text().parse().ok(),
            "file" => {
                posted.filename = part.filename.clone().unwrap_or_default();
                posted.file = part.bytes.to_vec();
            }
            _ => {}
        }
    }
    Ok(posted)
}

/// Keeps the file as a draft and shows its review (303); a file refused whole stays on the
/// upload page with the reason beside the file field (422).
async fn upload(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    multipart: Multipart,
) -> Result<Response, PageError> {
    let posted = read_form(multipart).await?;
    let admin = admin_multipart(&session, &posted.csrf)?;
    let refused = |text: String| upload_page(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, Some(text));
    if posted.file.is_empty() {
        return refused("Choose a file (XLSX or CSV) to upload.".to_owned()).await;
    }
    let mode = if posted.mode == "upsert" { Mode::Upsert } else { Mode::Create };
    let kept = drafts::upload(&state.core, &admin, &posted.filename, posted.file, mode, posted.replaces).await;
    match kept {
        Ok(id) => Ok(Redirect::to(&format!("{BULK}/drafts/{id}")).into_response()),
        Err(DraftError::Bulk(BulkError::File(ImportError::TooManyRows))) => {
            refused(format!(
                "The file has more than {} rows of listings; split it into files of at most {} rows and upload each.",
                crate::import::MAX_ROWS,
                crate::import::MAX_ROWS
            ))
            .await
        }
        Err(DraftError::Bulk(BulkError::File(ImportError::Refused(message)))) => refused(message).await,
        Err(DraftError::Empty) => {
            refused(
                "The file has no listings under its header row: fill in at least one row and upload it again.".into(),
            )
            .await
        }
        Err(DraftError::Full) => {
            refused(format!(
                "Your brand already has {MAX_LIVE_DRAFTS} files waiting for review (listed below): import or discard \
                 one of them, then upload this file again."
            ))
            .await
        }
        Err(e) => Err(draft_error(e)),
    }
}

/// One row of the review table.
pub struct ReviewRow {
    pub row: u32,
    pub title: String,
    /// What the row does, in words.
    pub outcome: &'static str,
    pub refused: bool,
    pub listing: Option<String>,
    /// `(cell, column, value, sentence)` of each reason; a reason of the whole row has no cell.
    pub problems: Vec<(String, String, String, String)>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/bulk_review.html")]
pub struct ReviewPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub notice: Option<&'static str>,
    pub error: Option<&'static str>,
    pub id: i64,
    pub filename: String,
    pub uploader: String,
    pub uploaded: String,
    pub expires: String,
    /// `None` while waiting for review; when it was imported.
    pub imported: Option<String>,
    pub upsert: bool,
    pub summary: String,
    pub tally: Tally,
    pub rows: Vec<ReviewRow>,
    pub unknown_columns: String,
}

fn outcome_words(outcome: RowOutcome, imported: bool) -> &'static str {
    match (outcome, imported) {
        (RowOutcome::Create, false) => "would be created",
        (RowOutcome::Update, false) => "would be updated",
        (RowOutcome::Create, true) => "created",
        (RowOutcome::Update, true) => "updated",
        (RowOutcome::Unchanged, _) => "unchanged",
        (RowOutcome::Refused, false) => "refused",
        (RowOutcome::Refused, true) => "not imported",
    }
}

fn review_row(row: DraftRow, imported: bool) -> ReviewRow {
    ReviewRow {
        row: row.row,
        title: row.title,
        outcome: outcome_words(row.outcome, imported),
        refused: row.outcome == RowOutcome::Refused,
        listing: row.listing_id.map(|id| format!("/dashboard/listings/{id}")),
        problems: row
            .problems
            .into_iter()
            .map(|p| (p.cell.unwrap_or_default(), p.column.unwrap_or_default(), p.value.unwrap_or_default(), p.message))
            .collect(),
    }
}

/// "3 rows: 2 would be created, 1 refused."
fn summary(tally: Tally, imported: bool) -> String {
    let rows = tally.create + tally.update + tally.unchanged + tally.refused;
    let parts: Vec<String> = [
        (tally.create, outcome_words(RowOutcome::Create, imported)),
        (tally.update, outcome_words(RowOutcome::Update, imported)),
        (tally.unchanged, "unchanged"),
        (tally.refused, outcome_words(RowOutcome::Refused, imported)),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, words)| format!("{n} {words}"))
    .collect();
    format!("{rows} row{}: {}.", if rows == 1 { "" } else { "s" }, parts.join(", "))
}

fn review_view(
    session: &LiveSession,
    status: StatusCode,
    review: Review,
    notice: Option<&'static str>,
    error: Option<&'static str>,
) -> Response {
    let imported = match review.state {
        DraftState::Imported(at) => Some(when(at.get(), session.zone())),
        DraftState::Open => None,
    };
    let page = ReviewPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        notice,
        error,
        id: review.draft.id,
        filename: review.draft.filename,
        uploader: review.draft.uploader,
        uploaded: when(review.draft.created_at.get(), session.zone()),
        expires: when(review.draft.expires_at.get(), session.zone()),
        upsert: review.mode == Mode::Upsert,
        summary: summary(review.tally, imported.is_some()),
        tally: review.tally,
        rows: review.rows.into_iter().map(|r| review_row(r, imported.is_some())).collect(),
        unknown_columns: review.unknown_columns.join(", "),
        imported,
    };
    render(status, &page)
}

/// A draft past its expiry: 410, saying how long files are kept and what to do.
fn expired(session: &LiveSession) -> Response {
    let page = MessagePage {
        chrome: Chrome::signed_in(session),
        title: "Upload expired",
        text: "This upload is no longer kept: files wait 24 hours for review. Nothing was imported from it. Upload \
               the file again on the Bulk import page.",
    };
    render(StatusCode::GONE, &page)
}

fn draft_error(e: DraftError) -> PageError {
    match e {
        DraftError::NotFound => PageError::NotFound,
        DraftError::Bulk(BulkError::Store(e)) => e.into(),
        e => PageError::internal(e),
    }
}

async fn review_page(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    Path(id): Path<String>,
    flash: Flash,
) -> Result<Response, PageError> {
    match drafts::review(&state.core, &admin, record_id(&id)?).await {
        Ok(review) => Ok(review_view(&session, StatusCode::OK, review, flash.text(), None)),
        Err(DraftError::Expired) => Ok(expired(&session)),
        Err(e) => Err(draft_error(e)),
    }
}

/// The import button's form: the counts the review showed.
#[derive(Debug, Deserialize)]
struct ImportForm {
    #[serde(default)]
    rows: String,
    #[serde(default)]
    skipped: String,
}

/// Imports the draft as reviewed, then shows it (303) with a notice: a reload shows the
/// result and imports nothing; a second request (a double click, another tab) imports nothing.
async fn import(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<ImportForm>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let id = record_id(&id)?;
    let (Ok(rows), Ok(skipped)) = (form.rows.trim().parse(), form.skipped.trim().parse()) else {
        return Err(PageError::BadForm);
    };
    let here = format!("{BULK}/drafts/{id}");
    let secure = state.config.secure_cookies();
    match drafts::commit(&state.core, &admin, id, Accepted { rows, skipped }).await {
        Ok(Committed::Imported(_)) => Ok(Notice::BulkImported.redirect(&here, secure)),
        Ok(Committed::AlreadyImported) => Ok(Notice::BulkAlreadyImported.redirect(&here, secure)),
        Err(DraftError::Changed(review)) => Ok(review_view(
            &session,
            StatusCode::CONFLICT,
            *review,
            None,
            Some(
                "The file checks differently from when you reviewed it (a listing changed meanwhile), so nothing was \
                 imported. Check the rows below and import again.",
            ),
        )),
        Err(DraftError::Expired) => Ok(expired(&session)),
        Err(e) => Err(draft_error(e)),
    }
}

#[derive(Debug, Deserialize)]
struct Empty {}

/// Discards a draft not yet imported; one already imported is shown as it is.
async fn discard(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { admin, .. } = posted;
    let id = record_id(&id)?;
    match drafts::discard(&state.core, &admin, id).await? {
        Discard::Discarded => Ok(Notice::BulkDiscarded.redirect(BULK, state.config.secure_cookies())),
        Discard::AlreadyImported => Ok(Redirect::to(&format!("{BULK}/drafts/{id}")).into_response()),
        Discard::NotFound => Err(PageError::NotFound),
    }
}
