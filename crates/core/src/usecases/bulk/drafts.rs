//! Bulk import in one pass (issue 31 item 4): the dashboard keeps an uploaded file as a
//! draft, shows every row's outcome from the same checks as the API's bulk endpoints, and
//! imports the draft when asked, at most once, without the file being chosen again.
//!
//! A draft is checked afresh each time it is shown and again when it is imported, so a SKU
//! saved meanwhile (by this draft's own import, another file or the API) is seen. In create
//! mode a row whose SKU the brand already has is refused ([`SkuCheck::Unique`]): the API's
//! endpoints keep creating it, as they always have. An import saves exactly what the review
//! showed: the form states how many rows it imports and how many refused rows it skips, and
//! if the file now checks differently nothing is saved and the review is shown again.

use chrono::TimeDelta;
use serde::{Deserialize, Serialize};

use super::{planned, read, BulkError, Plan, RowError, SkuCheck};
use crate::import::{Mode, Upload};
use crate::usecases::listings::{self, ListingChange, NewListingBody};
use crate::usecases::Core;
use rehome_domain::outcome::Outcome;
use rehome_domain::time::Ts;
use rehome_domain::user::Admin;
use rehome_domain::view::{BulkDraftRecord, SavedListing};
use rehome_store::{DraftInsert, ListingUpdate, NewBulkDraft, StoreError};

/// How long an uploaded file waits for review: a working day, so a review interrupted by a
/// meeting or lunch survives, while a file nobody imports does not linger.
pub const DRAFT_LIFETIME: TimeDelta = TimeDelta::hours(24);

/// Files a brand may have waiting for review at once (each up to the import's 5 MiB): a
/// burst of uploads cannot fill the disk. Imported drafts keep only their small result.
pub const MAX_LIVE_DRAFTS: i64 = 10;

/// The longest file name kept (in characters); longer ones are shortened.
const MAX_FILENAME_CHARS: usize = 100;

/// Why a draft operation did not run.
#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    /// No draft of the actor's brand has this id.
    #[error("no such draft")]
    NotFound,
    /// The draft expired before it was imported.
    #[error("the draft expired")]
    Expired,
    /// The brand already has [`MAX_LIVE_DRAFTS`] files waiting for review.
    #[error("too many drafts waiting")]
    Full,
    /// The file holds no data rows.
    #[error("the file has no rows")]
    Empty,
    /// The file checks differently from the review the import was asked from: nothing was
    /// saved; the review as it is now.
    #[error("the file checks differently now")]
    Changed(Box<Review>),
    #[error(transparent)]
    Bulk(#[from] BulkError),
}

impl From<StoreError> for DraftError {
    fn from(e: StoreError) -> Self {
        Self::Bulk(e.into())
    }
}

/// What a row does, would do, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowOutcome {
    Create,
    Update,
    /// An update that changes nothing: not written.
    Unchanged,
    Refused,
}

/// One reason a row is refused, as people read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The cell (`C3`), when the reason belongs to one.
    pub cell: Option<String>,
    /// Its column's header, as uploaded.
    pub column: Option<String>,
    /// The cell as read.
    pub value: Option<String>,
    /// What is wrong and what to do, in words (the column by its label).
    pub message: String,
}

impl From<RowError> for Problem {
    fn from(e: RowError) -> Self {
        let (cell, column, value) = match e.at {
            Some(at) => (Some(at.cell), Some(at.column), Some(at.value)),
            None => (None, None, None),
        };
        Self { cell, column, value, message: e.words }
    }
}

/// One data row of a draft.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftRow {
    /// As the spreadsheet numbers it (the header is row 1).
    pub row: u32,
    pub title: String,
    pub outcome: RowOutcome,
    /// The listing created or updated (once imported), or the one a row updates.
    pub listing_id: Option<i64>,
    pub problems: Vec<Problem>,
}

/// How many rows do what.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub create: usize,
    pub update: usize,
    pub unchanged: usize,
    pub refused: usize,
}

impl Tally {
    pub fn of(rows: &[DraftRow]) -> Self {
        let mut tally = Self::default();
        for row in rows {
            match row.outcome {
                RowOutcome::Create => tally.create += 1,
                RowOutcome::Update => tally.update += 1,
                RowOutcome::Unchanged => tally.unchanged += 1,
                RowOutcome::Refused => tally.refused += 1,
            }
        }
        tally
    }

    /// Rows an import writes.
    pub fn to_import(self) -> usize {
        self.create + self.update
    }
}

/// Where a draft stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftState {
    /// Waiting for review: the rows say what an import would do now.
    Open,
    /// Imported at this instant: the rows say what was done.
    Imported(Ts),
}

/// A draft and its rows.
#[derive(Debug, Clone)]
pub struct Review {
    pub draft: BulkDraftRecord,
    pub mode: Mode,
    pub state: DraftState,
    pub rows: Vec<DraftRow>,
    /// Headers that name no import column: their cells are not imported.
    pub unknown_columns: Vec<String>,
    pub tally: Tally,
}

/// What the person reviewing saw and asked to import: the rows written and the refused rows
/// skipped. An import goes ahead only if the file still checks to these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    pub rows: usize,
    pub skipped: usize,
}

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    Imported(Tally),
    /// Imported before (by another request, or a repeated one): nothing was saved again.
    AlreadyImported,
}

/// Keeps an uploaded file as a draft of the actor's brand and answers its id. A file the
/// import cannot read (or too large, or with too many rows) is refused whole and not kept;
/// `replaces`, a draft of the brand not yet imported, is deleted (a corrected file).
pub async fn upload(
    core: &Core,
    actor: &Admin,
    filename: &str,
    bytes: Vec<u8>,
    mode: Mode,
    replaces: Option<i64>,
) -> Result<i64, DraftError> {
    // Read once (off the async workers) so that a file the import refuses whole is not kept;
    // a file over the size limit is refused before any parser sees it.
    let (bytes, rows) = tokio::task::spawn_blocking(move || {
        let upload = Upload::File(bytes);
        let rows = crate::import::read(&upload).map(|sheet| sheet.rows.len());
        let bytes = match upload {
            Upload::File(bytes) => bytes,
            Upload::CsvText(text) => text.into_bytes(),
        };
        (bytes, rows)
    })
    .await
    .map_err(BulkError::from)?;
    let rows = rows.map_err(BulkError::from)?;
    if rows == 0 {
        return Err(DraftError::Empty);
    }
    let now = Ts::now();
    let name = clean_filename(filename);
    let new = NewBulkDraft {
        brand_id: actor.brand_id,
        user_id: actor.user_id,
        filename: &name,
        mode: mode.as_str(),
        file: &bytes,
        row_count: i64::try_from(rows).unwrap_or(i64::MAX),
        created_at: now,
        expires_at: Ts::from(now.get() + DRAFT_LIFETIME),
        replaces,
    };
    match core.store.insert_bulk_draft(new, MAX_LIVE_DRAFTS).await? {
        DraftInsert::Kept(id) => Ok(id),
        DraftInsert::Full => Err(DraftError::Full),
    }
}

/// The brand's files waiting for review, newest first.
pub async fn waiting(core: &Core, actor: &Admin) -> Result<Vec<BulkDraftRecord>, StoreError> {
    core.store.live_bulk_drafts(actor.brand_id, Ts::now()).await
}

/// The draft with every row's outcome: what importing it would do now, or what its import did.
pub async fn review(core: &Core, actor: &Admin, id: i64) -> Result<Review, DraftError> {
    // Twice at most: a draft imported between reading it and reading its file is shown imported.
    for _ in 0..2 {
        let draft = core.store.bulk_draft(actor.brand_id, id).await?.ok_or(DraftError::NotFound)?;
        let mode = Mode::parse(&draft.mode).unwrap_or_default();
        if let Some(at) = draft.committed_at {
            let rows = stored_rows(draft.result.as_deref());
            let tally = Tally::of(&rows);
            return Ok(Review {
                draft,
                mode,
                state: DraftState::Imported(at),
                rows,
                unknown_columns: Vec::new(),
                tally,
            });
        }
        match check(core, actor, draft, mode).await {
            Err(DraftError::NotFound) => continue,
            checked => return checked.map(|(review, _)| review),
        }
    }
    Err(DraftError::NotFound)
}

/// The rows an import recorded.
fn stored_rows(result: Option<&str>) -> Vec<DraftRow> {
    result.and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default()
}

/// Where a draft that could not be imported now stands: imported (by a concurrent
/// request), expired, or gone.
async fn settled(core: &Core, actor: &Admin, id: i64) -> Result<Committed, DraftError> {
    match core.store.bulk_draft(actor.brand_id, id).await? {
        Some(d) if d.committed_at.is_some() => Ok(Committed::AlreadyImported),
        Some(_) => Err(DraftError::Expired),
        None => Err(DraftError::NotFound),
    }
}

/// Imports the draft as reviewed: its valid rows in one transaction, the draft claimed in it
/// so that it is imported at most once. Refused rows are skipped only when `accepted` says
/// so; if the file now checks to other numbers than `accepted`, nothing is saved.
pub async fn commit(core: &Core, actor: &Admin, id: i64, accepted: Accepted) -> Result<Committed, DraftError> {
    let draft = core.store.bulk_draft(actor.brand_id, id).await?.ok_or(DraftError::NotFound)?;
    if draft.committed_at.is_some() {
        return Ok(Committed::AlreadyImported);
    }
    let mode = Mode::parse(&draft.mode).unwrap_or_default();
    let (review, plans) = match check(core, actor, draft, mode).await {
        // Its file went between the two reads: imported by a concurrent request.
        Err(DraftError::NotFound) => return settled(core, actor, id).await,
        checked => checked?,
    };
    let tally = review.tally;
    if tally.to_import() == 0 || tally.to_import() != accepted.rows || tally.refused != accepted.skipped {
        // A concurrent request may have imported it just now (its rows then check as saved).
        if core.store.bulk_draft(actor.brand_id, id).await?.is_some_and(|d| d.committed_at.is_some()) {
            return Ok(Committed::AlreadyImported);
        }
        return Err(DraftError::Changed(Box::new(review)));
    }
    let mut creates: Vec<(usize, NewListingBody)> = Vec::new();
    let mut changes: Vec<(usize, ListingChange)> = Vec::new();
    for (position, plan) in plans.into_iter().enumerate() {
        match plan {
            Some(Plan::Create(body)) => creates.push((position, *body)),
            Some(Plan::Update(change)) if !change.changes_nothing() => changes.push((position, *change)),
            _ => {}
        }
    }
    let (create_at, bodies): (Vec<usize>, Vec<NewListingBody>) = creates.into_iter().unzip();
    let (change_at, changes): (Vec<usize>, Vec<ListingChange>) = changes.into_iter().unzip();
    let rows = review.rows;
    let result = move |created: &[SavedListing], updated: &[ListingUpdate]| {
        let rows = imported(rows, &create_at, created, &change_at, updated);
        serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_owned())
    };
    match listings::save_draft_import(core, actor, id, bodies, &changes, result).await? {
        Some(_) => {
            let done = core.store.bulk_draft(actor.brand_id, id).await?;
            Ok(Committed::Imported(Tally::of(&stored_rows(done.and_then(|d| d.result).as_deref()))))
        }
        // Claimed by a concurrent request between the read above and the save, or expired.
        None => settled(core, actor, id).await,
    }
}

/// What discarding a draft did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discard {
    Discarded,
    /// Imported already: kept, to show what its import did.
    AlreadyImported,
    NotFound,
}

/// Deletes a draft not yet imported.
pub async fn discard(core: &Core, actor: &Admin, id: i64) -> Result<Discard, StoreError> {
    if core.store.discard_bulk_draft(actor.brand_id, id).await? {
        return Ok(Discard::Discarded);
    }
    Ok(match core.store.bulk_draft(actor.brand_id, id).await? {
        Some(_) => Discard::AlreadyImported,
        None => Discard::NotFound,
    })
}

/// Checks an open draft's file now, in its mode, as an import would: the review, and each
/// row's plan (`None` for a refused row).
async fn check(
    core: &Core,
    actor: &Admin,
    draft: BulkDraftRecord,
    mode: Mode,
) -> Result<(Review, Vec<Option<Plan>>), DraftError> {
    if draft.expires_at <= Ts::now() {
        return Err(DraftError::Expired);
    }
    let bytes = core.store.bulk_draft_file(actor.brand_id, draft.id).await?.ok_or(DraftError::NotFound)?;
    let file = read(Upload::File(bytes)).await?;
    let checked = planned(core, actor, &file.sheet, file.rows, mode, SkuCheck::Unique).await?;
    let mut rows = Vec::with_capacity(checked.len());
    let mut plans = Vec::with_capacity(checked.len());
    for row in checked {
        let (outcome, listing_id, problems, plan) = match row.outcome {
            Ok(Plan::Create(body)) => (RowOutcome::Create, None, Vec::new(), Some(Plan::Create(body))),
            Ok(Plan::Update(change)) => {
                let outcome = if change.changes_nothing() { RowOutcome::Unchanged } else { RowOutcome::Update };
                (outcome, Some(change.existing.id), Vec::new(), Some(Plan::Update(change)))
            }
            Err(errors) => (RowOutcome::Refused, None, errors.into_iter().map(Problem::from).collect(), None),
        };
        rows.push(DraftRow { row: row.row, title: row.title, outcome, listing_id, problems });
        plans.push(plan);
    }
    let tally = Tally::of(&rows);
    let review =
        Review { draft, mode, state: DraftState::Open, rows, unknown_columns: file.sheet.unknown_columns, tally };
    Ok((review, plans))
}

/// The rows as imported: each saved row with its listing; an update that met a listing
/// changed meanwhile is refused (not overwritten).
fn imported(
    mut rows: Vec<DraftRow>,
    create_at: &[usize],
    created: &[SavedListing],
    change_at: &[usize],
    updated: &[ListingUpdate],
) -> Vec<DraftRow> {
    for (position, saved) in create_at.iter().zip(created) {
        rows[*position].listing_id = Some(saved.record.id);
    }
    for (position, update) in change_at.iter().zip(updated) {
        if let ListingUpdate::Stale = update {
            let row = &mut rows[*position];
            row.outcome = RowOutcome::Refused;
            row.problems = vec![Problem {
                cell: None,
                column: None,
                value: None,
                message: Outcome::EditConflict.message().into_owned(),
            }];
        }
    }
    rows
}

/// The uploaded file's name as shown: its last path part, without control characters,
/// shortened; `upload` when none.
fn clean_filename(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last.chars().filter(|c| !c.is_control()).take(MAX_FILENAME_CHARS).collect();
    let clean = clean.trim();
    if clean.is_empty() {
        "upload".to_owned()
    } else {
        clean.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_is_shown_without_its_path_or_control_characters() {
        assert_eq!(clean_filename("C:\\Users\\ada\\stock.csv"), "stock.csv");
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("a\u{0}b\r\n.csv"), "ab.csv");
        assert_eq!(clean_filename("  "), "upload");
        assert_eq!(clean_filename(&"x".repeat(500)).chars().count(), MAX_FILENAME_CHARS);
    }

    #[test]
    fn an_import_writes_created_and_updated_rows_only() {
        let row = |outcome| DraftRow { row: 2, title: "t".into(), outcome, listing_id: None, problems: Vec::new() };
        let rows =
            [row(RowOutcome::Create), row(RowOutcome::Update), row(RowOutcome::Unchanged), row(RowOutcome::Refused)];
        let tally = Tally::of(&rows);
        assert_eq!(tally, Tally { create: 1, update: 1, unchanged: 1, refused: 1 });
        assert_eq!(tally.to_import(), 2);
    }
}
