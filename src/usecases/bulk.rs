//! Bulk import: the XLSX template, and validating or committing a spreadsheet of listings.
//! Each row goes through the listings' create use case and fails with its codes.

use serde_json::{Map, Value};

use super::listings::{self, NewListingBody};
use super::Core;
use crate::domain::listing::{validate, Channel, ValidListing};
use crate::domain::taxonomy::Options;
use crate::domain::user::Actor;
use crate::domain::FieldError;
use crate::import::{self, ImportError, Sheet, Upload};
use crate::store::StoreError;

/// The title shown for a row whose title cell is blank.
const MISSING_TITLE: &str = "(missing title)";

/// Why a bulk operation did not run.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    /// The file is not one the import reads, or has too many rows: nothing was written.
    #[error(transparent)]
    File(#[from] ImportError),
    /// The template could not be written.
    #[error("cannot write the template: {0}")]
    Template(#[from] rust_xlsxwriter::XlsxError),
    /// The blocking task reading or writing a file failed.
    #[error("a file task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The import template for the actor's brand: its manufacturer brands in the dropdowns.
pub async fn template(core: &Core, actor: &Actor) -> Result<Vec<u8>, BulkError> {
    let brands = Options::with_brands(core.store.manufacturer_brand_names(actor.brand_id).await?).brands;
    Ok(tokio::task::spawn_blocking(move || import::template(&brands)).await??)
}

/// One data row of a file and what the create use case says of it.
#[derive(Debug)]
pub struct CheckedRow<T> {
    /// The row as the spreadsheet numbers it: the header is row 1, the first data row 2.
    pub row: u32,
    /// The row's title, or `(missing title)`.
    pub title: String,
    /// The row's outcome, or its create-listing reason codes.
    pub outcome: Result<T, Vec<String>>,
}

/// A file's rows checked, or committed.
#[derive(Debug)]
pub struct BulkReport<T> {
    /// The header row as uploaded.
    pub headers: Vec<String>,
    /// Headers that name no import column: their cells are not imported.
    pub unknown_columns: Vec<String>,
    pub rows: Vec<CheckedRow<T>>,
}

/// Checks every row exactly as creating it would, writing nothing.
pub async fn validate_file(core: &Core, actor: &Actor, upload: Upload) -> Result<BulkReport<()>, BulkError> {
    let file = read(upload).await?;
    let rows = checked(core, actor, file.rows).await?;
    let rows =
        rows.into_iter().map(|row| CheckedRow { row: row.row, title: row.title, outcome: row.outcome.map(drop) });
    Ok(BulkReport { headers: file.headers, unknown_columns: file.unknown_columns, rows: rows.collect() })
}

/// Creates a clearance listing of the actor for each valid row, all in one transaction,
/// and reports the others; each created row's outcome is its listing's id.
pub async fn commit_file(core: &Core, actor: &Actor, upload: Upload) -> Result<BulkReport<i64>, BulkError> {
    let file = read(upload).await?;
    let mut rows = Vec::with_capacity(file.rows.len());
    let mut valid: Vec<(usize, NewListingBody)> = Vec::new();
    for row in checked(core, actor, file.rows).await? {
        let outcome = match row.outcome {
            Ok(listing) => {
                valid.push((rows.len(), listing));
                // Replaced by the id once saved.
                Ok(0)
            }
            Err(errors) => Err(errors),
        };
        rows.push(CheckedRow { row: row.row, title: row.title, outcome });
    }
    let (positions, bodies): (Vec<usize>, Vec<NewListingBody>) = valid.into_iter().unzip();
    let saved = listings::save(core, actor, bodies).await?;
    for (position, saved) in positions.into_iter().zip(saved) {
        rows[position].outcome = Ok(saved.record.id);
    }
    Ok(BulkReport { headers: file.headers, unknown_columns: file.unknown_columns, rows })
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
    title: String,
    body: Map<String, Value>,
    validated: Result<ValidListing, Vec<FieldError>>,
}

/// Each row with the listing it makes, or its reason codes: the store's checks on top of
/// the validator's, exactly as for a single create.
async fn checked(
    core: &Core,
    actor: &Actor,
    rows: Vec<ReadRow>,
) -> Result<Vec<CheckedRow<NewListingBody>>, StoreError> {
    let mut checked = Vec::with_capacity(rows.len());
    for row in rows {
        let outcome = listings::prepare(core, actor, &row.body, row.validated).await?;
        let outcome = outcome.map_err(|errors| errors.into_iter().map(|e| e.code).collect());
        checked.push(CheckedRow { row: row.row, title: row.title, outcome });
    }
    Ok(checked)
}

/// The file read and validated off the async workers (parsing and sanitising 200
/// descriptions is CPU work); only the store's checks are left.
async fn read(upload: Upload) -> Result<ReadFile, BulkError> {
    Ok(tokio::task::spawn_blocking(move || import::read(&upload).map(validated)).await??)
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
