//! The wallet and remittance (decisions 10): what each sale earns the brand, its balances,
//! and the statements that pay it, issued monthly (or when the operator runs them) and
//! mailed to the billing `invoice_email`.

pub mod csv;
pub mod pdf;
pub mod statement;

use chrono::{DateTime, NaiveDate, Utc};

use crate::jobs::MailJobs;
use crate::usecases::refusal::Refusal;
use futures_util::{stream, StreamExt, TryStreamExt};
use rehome_domain::money::Pence;
use rehome_domain::statement::{Entry, Remittance};
use rehome_domain::time::Ts;
use rehome_domain::user::Actor;
use rehome_domain::view::{EntryRecord, OrderRecord, RemittanceRecord};
use rehome_domain::wallet::{next_run, EntryType, Hold, LineMoney};
use rehome_store::{Balances, Dialect, NewLedgerEntry, StatementMail, StatementRender, Store, StoreError};
use statement::{pounds, Statement};

/// The entry a delivered clearance order earns: the money of the sale as it sold.
pub fn sale_entry(order: &OrderRecord, delivered_at: Ts, hold: Hold) -> NewLedgerEntry {
    let delivery = u32::try_from(order.delivery_contribution_gbp).unwrap_or(0);
    let money = LineMoney::sale(Pence::new(order.unit_price_pence), delivery, order.quantity);
    entry(order, EntryType::Sale, money, delivered_at, hold)
}

/// The entry a sold exchange item earns when its customer chooses credit: the base, the
/// price it sold for. It is held from the delivery like a sale.
pub fn trade_in_entry(order: &OrderRecord, delivered_at: Ts, hold: Hold) -> NewLedgerEntry {
    entry(order, EntryType::TradeIn, LineMoney::trade_in(Pence::new(order.total_pence())), delivered_at, hold)
}

fn entry(order: &OrderRecord, kind: EntryType, money: LineMoney, delivered_at: Ts, hold: Hold) -> NewLedgerEntry {
    NewLedgerEntry {
        brand_id: order.brand_id,
        kind,
        order_id: order.id,
        listing_id: order.listing_id,
        title: order.title.clone(),
        quantity: order.quantity,
        money,
        delivered_at,
        available_at: Ts::from(hold.available_at(delivered_at.get())),
    }
}

/// A brand's wallet at an instant.
#[derive(Debug, Clone, Copy)]
pub struct Wallet {
    pub balances: Balances,
    pub hold: Hold,
    /// The day of the next monthly run.
    pub next_payout_date: NaiveDate,
}

impl Wallet {
    /// Everything ever earned: available + pending + paid.
    pub fn lifetime(&self) -> i64 {
        self.balances.available + self.balances.pending + self.balances.paid
    }
}

pub async fn wallet(core: &super::Core, actor: &Actor) -> Result<Wallet, StoreError> {
    let now = Utc::now();
    let balances = core.store.wallet_balances(actor.brand_id, Ts::from(now)).await?;
    Ok(Wallet { balances, hold: core.config.hold(), next_payout_date: next_run(now).date_naive() })
}

/// One page of entries: up to `limit` after entry `after` (oldest first), and whether more
/// follow.
pub async fn entries(
    core: &super::Core,
    actor: &Actor,
    after: i64,
    limit: u32,
) -> Result<(Vec<Entry>, bool), StoreError> {
    let mut rows = core.store.wallet_entries(actor.brand_id, after, i64::from(limit) + 1).await?;
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let now = Utc::now();
    Ok((rows.iter().map(|r| statement::entry(r, now)).collect(), has_more))
}

/// A page of the brand's entries that `filter` keeps, newest first (the dashboard's list),
/// and how many it keeps.
pub async fn entries_listed(
    core: &super::Core,
    actor: &Actor,
    filter: &rehome_domain::view::EntryFilter,
    limit: i64,
    offset: i64,
) -> Result<(Vec<Entry>, i64), StoreError> {
    let now = Utc::now();
    let (rows, total) = core.store.brand_entries(actor.brand_id, filter, Ts::from(now), limit, offset).await?;
    Ok((rows.iter().map(|r| statement::entry(r, now)).collect(), total))
}

/// One page of the brand's statements, newest first, and how many there are.
pub async fn remittances(
    core: &super::Core,
    actor: &Actor,
    limit: i64,
    offset: i64,
) -> Result<(Vec<Remittance>, i64), StoreError> {
    let (records, total) = core.store.remittances(actor.brand_id, limit, offset).await?;
    Ok((records.iter().map(statement::summary).collect(), total))
}

/// A statement of the brand, with its lines.
pub async fn statement(core: &super::Core, actor: &Actor, id: i64) -> Result<Option<Statement>, StoreError> {
    Ok(core.store.remittance(actor.brand_id, id).await?.map(|(record, lines)| Statement::new(record, &lines)))
}

/// A statement's downloadable forms (decisions 10.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Pdf,
}

impl Format {
    pub fn from_extension(extension: &str) -> Option<Self> {
        match extension {
            "csv" => Some(Self::Csv),
            "pdf" => Some(Self::Pdf),
            _ => None,
        }
    }
}

/// A statement as a file: its bytes, media type and file names.
pub struct Document {
    pub bytes: Vec<u8>,
    pub content_type: &'static str,
    /// `remittance-<brand slug>-<number>.<ext>`.
    pub file_name: String,
    /// `<brand name> statement <number>.<ext>` ([`Statement::display_file_name`]).
    pub display_name: String,
}

/// A statement of the brand rendered as `format`, its lines read and written one by one
/// (a statement of a hundred thousand lines is never held whole), or `None`.
pub async fn download(
    core: &super::Core,
    actor: &Actor,
    id: i64,
    format: Format,
) -> Result<Option<Document>, DownloadError> {
    let render = |record: &RemittanceRecord| {
        let lines = usize::try_from(record.line_count).unwrap_or(0);
        DocumentRender::new(record.clone(), lines, format)
    };
    let rendered = core.store.render_remittance(actor.brand_id, id, |record| Lines(render(record))).await?;
    Ok(rendered.transpose()?)
}

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write the CSV: {0}")]
    Csv(#[from] ::csv::Error),
}

impl From<DownloadError> for Refusal {
    fn from(e: DownloadError) -> Self {
        match e {
            DownloadError::Store(e) => e.into(),
            DownloadError::Csv(e) => Refusal::internal("cannot write the CSV", e),
        }
    }
}

/// A statement's file being written, line by line.
struct DocumentRender {
    head: Statement,
    writer: Writer,
}

enum Writer {
    Csv(csv::Writer),
    Pdf(pdf::Writer),
}

impl DocumentRender {
    fn new(record: RemittanceRecord, lines: usize, format: Format) -> Result<Self, ::csv::Error> {
        let head = Statement { record, lines: Vec::new() };
        let writer = match format {
            Format::Csv => Writer::Csv(csv::Writer::new()?),
            Format::Pdf => Writer::Pdf(pdf::Writer::new(head.clone(), lines)),
        };
        Ok(Self { head, writer })
    }

    fn entry(&mut self, line: &Entry) -> Result<(), ::csv::Error> {
        match &mut self.writer {
            Writer::Csv(csv) => csv.line(line),
            Writer::Pdf(pdf) => {
                pdf.line(line);
                Ok(())
            }
        }
    }

    fn finish(self) -> Result<Document, ::csv::Error> {
        let (bytes, content_type, extension) = match self.writer {
            Writer::Csv(csv) => (csv.finish(&self.head)?, "text/csv; charset=utf-8", "csv"),
            Writer::Pdf(pdf) => (pdf.finish(), "application/pdf", "pdf"),
        };
        Ok(Document {
            bytes,
            content_type,
            file_name: self.head.file_name(extension),
            display_name: self.head.display_file_name(extension),
        })
    }
}

/// A [`DocumentRender`] fed the stored lines; the first error it meets is its answer.
struct Lines(Result<DocumentRender, ::csv::Error>);

impl StatementRender for Lines {
    type Output = Result<Document, ::csv::Error>;

    fn line(&mut self, entry: &EntryRecord) {
        if let Ok(render) = &mut self.0 {
            let at = render.head.record.issued_at.get();
            if let Err(e) = render.entry(&statement::entry(entry, at)) {
                self.0 = Err(e);
            }
        }
    }

    fn finish(self) -> Self::Output {
        self.0?.finish()
    }
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot record the billing entity: {0}")]
    Billing(#[from] serde_json::Error),
}

/// Issues, for every brand with entries available at `as_of` and not yet paid, one
/// statement of them. Each transaction issues a few brands' statements (memory does not
/// grow with the number of brands, and a run that dies leaves whole statements or none):
/// on PostgreSQL one brand each, up to [`Store::write_concurrency`] at once; on SQLite,
/// which has one writer, [`SQLITE_BATCH`] brands each, one after the other. With `mail`,
/// each statement's PDF is queued to the brand's `invoice_email` in the same transaction,
/// rendered page by page as its lines are read (memory does not grow with a statement's
/// lines either), and the mail worker is woken once the run has issued any. Running it
/// again (or on another node at the same time) issues nothing twice: the entries are paid.
/// Answers the statements issued, by brand.
pub async fn run(
    store: &Store,
    as_of: DateTime<Utc>,
    mail: Option<&MailJobs>,
) -> Result<Vec<RemittanceRecord>, RunError> {
    let as_of = Ts::from(as_of);
    let brands = store.brands_with_available_entries(as_of).await?;
    let batch = *BRANDS_PER_TRANSACTION.pick(store);
    // In brand order whatever finishes first; the first error stops the run (the batches in
    // flight roll back: their statements are issued by the next run).
    let batches: Vec<Vec<i64>> = brands.chunks(batch).map(<[i64]>::to_vec).collect();
    let mut statements = stream::iter(batches)
        .map(|brands| issue(store, brands, as_of, mail.is_some()))
        .buffered(store.write_concurrency());
    let mut issued = Vec::new();
    while let Some(records) = statements.try_next().await? {
        issued.extend(records);
    }
    if let (Some(jobs), false) = (mail, issued.is_empty()) {
        jobs.wake();
    }
    Ok(issued)
}

/// Brands per transaction of a run on SQLite. Each commit writes every page it changed to
/// the WAL again, and consecutive brands' statements change the same pages (the tails of
/// `remittances`, `mail_outbox`, `audit_log` and their indexes, the index pages of
/// neighbouring brands, table pages their entries share): 10,000 brands one by one wrote
/// gigabytes (issue 34). The other writers of the node wait for the batch, a few hundred
/// milliseconds on the seeded ledger.
pub const SQLITE_BATCH: usize = 32;

/// Brands per transaction of a run: on PostgreSQL one (several transactions at once), on
/// SQLite [`SQLITE_BATCH`] (one writer, one transaction after another).
const BRANDS_PER_TRANSACTION: Dialect<usize> = Dialect { sqlite: SQLITE_BATCH, postgres: 1 };

/// The statements of `brands` as of `as_of` (those with anything left to pay), in one
/// transaction; with `mail`, each queued to its brand's `invoice_email` (if it has one).
async fn issue(store: &Store, brands: Vec<i64>, as_of: Ts, mail: bool) -> Result<Vec<RemittanceRecord>, RunError> {
    let mut billed = Vec::with_capacity(brands.len());
    let mut recipients = Vec::with_capacity(brands.len());
    for &brand_id in &brands {
        let billing = store.billing(brand_id).await?.unwrap_or_default();
        recipients.push(billing.invoice_email.trim().to_owned());
        billed.push((brand_id, serde_json::to_string(&billing)?));
    }
    let to_mail = |brand_id: i64, record: &RemittanceRecord| {
        let to = brands.iter().position(|b| *b == brand_id).map(|i| recipients[i].as_str())?;
        (mail && !to.is_empty()).then(|| MailRender::new(record, to))
    };
    let issued = store.issue_remittances(&billed, as_of, to_mail).await?;
    for record in &issued {
        tracing::info!(
            brand = record.brand_slug,
            remittance = record.id,
            number = record.number,
            lines = record.line_count,
            "statement issued"
        );
    }
    Ok(issued)
}

/// The mail of an issued statement: a short summary, the PDF attached, written page by
/// page as the statement's lines are read.
struct MailRender {
    to: String,
    issued_at: DateTime<Utc>,
    pdf: pdf::Writer,
}

impl MailRender {
    fn new(record: &RemittanceRecord, to: &str) -> Self {
        let head = Statement { record: record.clone(), lines: Vec::new() };
        let lines = usize::try_from(record.line_count).unwrap_or(0);
        Self { to: to.to_owned(), issued_at: record.issued_at.get(), pdf: pdf::Writer::new(head, lines) }
    }
}

impl StatementRender for MailRender {
    type Output = StatementMail;

    fn line(&mut self, entry: &EntryRecord) {
        self.pdf.line(&statement::entry(entry, self.issued_at));
    }

    fn finish(self) -> StatementMail {
        let statement = self.pdf.head().clone();
        statement_mail(&statement, &self.to, self.pdf.finish())
    }
}

/// The mail of `statement` (its lines not held: `line_count` says how many), `pdf` attached.
fn statement_mail(statement: &Statement, to: &str, pdf: Vec<u8>) -> StatementMail {
    let number = statement.number();
    let totals = statement.totals();
    StatementMail {
        to: to.to_owned(),
        subject: format!("Remittance statement {number} for {}", statement.brand()),
        text: format!(
            "Remittance statement {number} for {brand} is attached.\n\n\
             Period: {period}\nLines: {lines}\nGross: {gross} GBP\nCommission: {commission} GBP\n\
             VAT: {vat} GBP\nDelivery: {delivery} GBP\nAmount payable: {amount} GBP\n",
            brand = statement.brand(),
            period = statement.period_words(),
            lines = statement.record.line_count,
            gross = pounds(totals.gross),
            commission = pounds(totals.commission),
            vat = pounds(totals.vat),
            delivery = pounds(totals.delivery),
            amount = pounds(totals.amount),
        ),
        file_name: statement.file_name("pdf"),
        pdf,
    }
}
