//! Bulk import: the XLSX template, and validating or committing a spreadsheet of listings.
//! Each row goes through the listings' create use case (or, in upsert mode, when its SKU
//! names one of the brand's listings, their PATCH rules) and fails with its codes, each
//! pinned to the sheet cell it belongs to. The dashboard keeps an uploaded file as a draft
//! to review and import once ([`drafts`]), through the same checks.

pub mod drafts;

use serde_json::Value;

use super::listings::{self, ListingChange, NewListingBody};
use super::Core;
use crate::import::{self, CellRef, ImportError, Mode, Sheet, SheetRow, Upload};
use crate::usecases::refusal::Refusal;
use rehome_domain::listing::{validate, Channel, Given, ListingInput, ValidListing, LISTING_BODY};
use rehome_domain::outcome::Outcome;
use rehome_domain::taxonomy::Options;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::ListingRecord;
use rehome_domain::words;
use rehome_domain::FieldError;
use rehome_store::{ListingUpdate, StoreError};

/// The title shown for a row whose title cell is blank.
const MISSING_TITLE: &str = "(missing title)";

/// Why a bulk operation did not run.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    /// The file is not one the import reads, or has too many rows: nothing was written.
    #[error(transparent)]
    File(#[from] ImportError),
    /// The template or an error workbook could not be written.
    #[error("cannot write a workbook: {0}")]
    Template(#[from] rust_xlsxwriter::XlsxError),
    /// The blocking task reading or writing a file failed.
    #[error("a file task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<BulkError> for Refusal {
    fn from(e: BulkError) -> Self {
        match e {
            BulkError::File(e) => e.into(),
            BulkError::Template(e) => Refusal::internal("cannot write a workbook", e),
            BulkError::Task(e) => Refusal::internal("a file task failed", e),
            BulkError::Store(e) => e.into(),
        }
    }
}

/// What a valid row does, or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Updated,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
        }
    }
}

/// One reason a row is refused, and the sheet cell it belongs to when it belongs to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    pub code: String,
    /// The reason's sentence for integrators (the API's `message`, naming the field).
    pub message: String,
    /// The reason's sentence for a brand's staff (the dashboard's review, the annotated
    /// workbook): the column by its label and the rule in words (`domain::words`).
    pub words: String,
    pub at: Option<CellRef>,
}

impl RowError {
    /// A reason of the row as a whole.
    fn of_row(outcome: Outcome) -> Self {
        let message = outcome.message().into_owned();
        Self { code: outcome.code().to_owned(), words: message.clone(), message, at: None }
    }
}

/// The template for the actor's brand: its manufacturer brands in the dropdowns.
pub async fn template(core: &Core, actor: &Actor) -> Result<Vec<u8>, BulkError> {
    let brands = Options::with_brands(core.store.manufacturer_brand_names(actor.brand_id).await?).brands;
    Ok(tokio::task::spawn_blocking(move || import::template(&brands)).await??)
}

/// One data row of a file and what the import says of it.
#[derive(Debug)]
pub struct CheckedRow<T> {
    /// The row as the spreadsheet numbers it: the header is row 1, the first data row 2.
    pub row: u32,
    /// The row's title, or `(missing title)`.
    pub title: String,
    /// The row's outcome, or its reasons.
    pub outcome: Result<T, Vec<RowError>>,
}

/// A file's rows checked, or committed, and the sheet as read.
#[derive(Debug)]
pub struct BulkReport<T> {
    pub sheet: Sheet,
    pub rows: Vec<CheckedRow<T>>,
}

/// Checks every row exactly as committing it would, writing nothing: each valid row says
/// what it would do.
pub async fn validate_file(
    core: &Core,
    actor: &Admin,
    upload: Upload,
    mode: Mode,
) -> Result<BulkReport<Action>, BulkError> {
    let file = read(upload).await?;
    let rows = planned(core, actor, &file.sheet, file.rows, mode, SkuCheck::AsApi).await?;
    let rows = rows
        .into_iter()
        .map(|row| CheckedRow { row: row.row, title: row.title, outcome: row.outcome.map(|plan| plan.action()) })
        .collect();
    Ok(BulkReport { sheet: file.sheet, rows })
}

/// Saves every valid row, all in one transaction: a clearance listing of the actor for each
/// row that creates one, the change for each row that updates one; reports the others.
/// Each saved row's outcome is its listing's id and what was done.
pub async fn commit_file(
    core: &Core,
    actor: &Admin,
    upload: Upload,
    mode: Mode,
) -> Result<BulkReport<(i64, Action)>, BulkError> {
    let file = read(upload).await?;
    let mut rows = Vec::with_capacity(file.sheet.rows.len());
    let mut creates: Vec<(usize, NewListingBody)> = Vec::new();
    let mut changes: Vec<(usize, ListingChange)> = Vec::new();
    for row in planned(core, actor, &file.sheet, file.rows, mode, SkuCheck::AsApi).await? {
        let position = rows.len();
        let outcome = match row.outcome {
            Ok(Plan::Create(body)) => {
                creates.push((position, *body));
                Ok((0, Action::Created))
            }
            Ok(Plan::Update(change)) => {
                changes.push((position, *change));
                Ok((0, Action::Updated))
            }
            Err(errors) => Err(errors),
        };
        rows.push(CheckedRow { row: row.row, title: row.title, outcome });
    }
    let (create_positions, bodies): (Vec<usize>, Vec<NewListingBody>) = creates.into_iter().unzip();
    let (change_positions, changes): (Vec<usize>, Vec<ListingChange>) = changes.into_iter().unzip();
    let (created, updated) = listings::save_import(core, actor, bodies, &changes).await?;
    for (position, saved) in create_positions.into_iter().zip(created) {
        rows[position].outcome = Ok((saved.record.id, Action::Created));
    }
    for (position, update) in change_positions.into_iter().zip(updated) {
        rows[position].outcome = match update {
            ListingUpdate::Saved(saved) => Ok((saved.record.id, Action::Updated)),
            // Changed by someone else since this import read it: not overwritten.
            ListingUpdate::Stale => Err(vec![RowError::of_row(Outcome::EditConflict)]),
        };
    }
    Ok(BulkReport { sheet: file.sheet, rows })
}

/// What a valid row will do.
enum Plan {
    Create(Box<NewListingBody>),
    Update(Box<ListingChange>),
}

impl Plan {
    fn action(&self) -> Action {
        match self {
            Self::Create(_) => Action::Created,
            Self::Update(_) => Action::Updated,
        }
    }
}

/// An uploaded file's sheet, and each row's create body (on the clearance channel) already
/// through the listing validator.
struct ReadFile {
    sheet: Sheet,
    rows: Vec<ReadRow>,
}

struct ReadRow {
    /// The create input: the row's cells and the clearance channel.
    input: ListingInput,
    validated: Result<ValidListing, Vec<FieldError>>,
}

/// How the SKUs of a file in create mode are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SkuCheck {
    /// As the API's bulk endpoints always have: create mode creates a listing whatever its
    /// SKU (decisions 10.3; clients rely on it).
    AsApi,
    /// A draft reviewed on the dashboard: in create mode a SKU the brand already has, or one
    /// on an earlier row, refuses the row (it would be a second listing with that SKU).
    Unique,
}

/// Each row's plan, or its reasons: the store's checks on top of the validator's, exactly
/// as for a single create (or, for a row updating a listing, a PATCH of it).
async fn planned(
    core: &Core,
    actor: &Admin,
    sheet: &Sheet,
    reads: Vec<ReadRow>,
    mode: Mode,
    check: SkuCheck,
) -> Result<Vec<CheckedRow<Plan>>, StoreError> {
    let skus: Vec<Option<String>> = sheet.rows.iter().map(sku_of).collect();
    let existing = match (mode, check) {
        (Mode::Create, SkuCheck::AsApi) => Vec::new(),
        _ => {
            let mut wanted: Vec<String> = skus.iter().flatten().cloned().collect();
            wanted.sort_unstable();
            wanted.dedup();
            core.store.listings_by_sku(actor.brand_id, &wanted).await?
        }
    };
    let mut checked = Vec::with_capacity(reads.len());
    for (index, (row, read)) in sheet.rows.iter().zip(reads).enumerate() {
        let target = match (mode, check, &skus[index]) {
            (Mode::Upsert, _, Some(sku)) => match_sku(actor, sku, &skus[..index], &existing),
            (Mode::Create, SkuCheck::Unique, Some(sku)) => new_sku(sku, &skus[..index], &existing),
            _ => Ok(None),
        };
        let outcome = match target {
            Err(outcome) => Err(vec![outcome.on("sku")]),
            Ok(None) => listings::prepare(core, actor, &read.input, read.validated)
                .await?
                .map(|body| Plan::Create(Box::new(body))),
            Ok(Some(listing)) => {
                // PATCH rules: the row's cells only; the listing keeps its channel.
                let mut input = read.input;
                input.channel = Given::Keep;
                listings::prepare_change(core, actor, listing.clone(), &input)
                    .await?
                    .map(|change| Plan::Update(Box::new(change)))
            }
        };
        let outcome = outcome.map_err(|errors| row_errors(sheet, row, errors));
        let title = row.title.clone().unwrap_or_else(|| MISSING_TITLE.to_owned());
        checked.push(CheckedRow { row: row.row, title, outcome });
    }
    Ok(checked)
}

/// The listing a row's SKU updates in upsert mode, none (the row creates one), or why the
/// row is refused: the SKU came earlier in the file, names several listings, or names
/// another user's.
fn match_sku<'a>(
    actor: &Actor,
    sku: &str,
    earlier: &[Option<String>],
    existing: &'a [ListingRecord],
) -> Result<Option<&'a ListingRecord>, Outcome> {
    if earlier.iter().flatten().any(|seen| seen == sku) {
        return Err(Outcome::SkuDuplicateInFile);
    }
    let mut matches = existing.iter().filter(|l| l.fields.sku.as_deref() == Some(sku));
    match (matches.next(), matches.next()) {
        (None, _) => Ok(None),
        (Some(_), Some(_)) => Err(Outcome::SkuAmbiguous),
        (Some(listing), None) if !actor.may_change_listing_of(listing.user_id) => Err(Outcome::NotOwner),
        (Some(listing), None) => Ok(Some(listing)),
    }
}

/// In create mode on the dashboard: the row creates a listing unless its SKU came earlier in
/// the file or is already one of the brand's listings.
fn new_sku<'a>(
    sku: &str,
    earlier: &[Option<String>],
    existing: &[ListingRecord],
) -> Result<Option<&'a ListingRecord>, Outcome> {
    if earlier.iter().flatten().any(|seen| seen == sku) {
        return Err(Outcome::SkuDuplicateInFile);
    }
    if existing.iter().any(|l| l.fields.sku.as_deref() == Some(sku)) {
        return Err(Outcome::SkuExists);
    }
    Ok(None)
}

/// The row's SKU as the validator reads it (trimmed, without invisible characters), when it
/// has one.
fn sku_of(row: &SheetRow) -> Option<String> {
    let sku = match row.body.get("sku")? {
        Value::String(text) => rehome_domain::text::identifier(text).trim().to_owned(),
        other => other.to_string(),
    };
    (!sku.is_empty()).then_some(sku)
}

/// Reasons with the cells they belong to: a field's reason belongs to that field's column
/// in the row (`measurements[1].w_cm` to `measurements`), when the sheet has it.
fn row_errors(sheet: &Sheet, row: &SheetRow, errors: Vec<FieldError>) -> Vec<RowError> {
    errors
        .into_iter()
        .map(|e| {
            let field = e.field.split(['[', '.']).next().unwrap_or_default();
            let words = words::sentence(Some(&LISTING_BODY), &e.field, &e.code).unwrap_or_else(|| e.message.clone());
            RowError { at: sheet.cell_of(row, field), code: e.code, message: e.message, words }
        })
        .collect()
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
        .iter()
        .map(|row| {
            let mut input = ListingInput::from_json(&row.body);
            input.channel = Given::Set(Channel::Clearance);
            let validated = validate(&input, None);
            ReadRow { input, validated }
        })
        .collect();
    ReadFile { sheet, rows }
}
