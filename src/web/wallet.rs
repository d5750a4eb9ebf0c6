//! Wallet: balances, the statements with their CSV and PDF, and the entries, newest first,
//! filtered by type, status and month, a page at a time and as CSV.

use crate::http::routing::get;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Deserialize;

use super::extract::{PageError, SignedIn};
use super::pages::{page_number, render, utc_midnight_day, when_text, Chrome};
use crate::domain::settings::TimeZone;
use crate::domain::statement::{Entry, Remittance};
use crate::domain::view::EntryFilter;
use crate::domain::wallet::{EntryStatus, EntryType};
use crate::state::AppState;
use crate::usecases::wallet::statement::pounds;
use crate::usecases::wallet::{self, Format};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/wallet", get(wallet_page))
        .route("/wallet/entries.csv", get(entries_csv))
        .route("/wallet/statements/{file}", get(statement_file))
}

#[derive(askama::Template)]
#[template(path = "dashboard/wallet.html")]
pub struct WalletPage {
    pub chrome: Chrome,
    pub available: String,
    pub pending: String,
    pub paid: String,
    pub lifetime: String,
    pub hold_hours: u32,
    /// The day of the next statement, in words (`1 Dec 2026`).
    pub next_payout_date: String,
    /// The brand's time zone, for the instants of the tables.
    pub zone: TimeZone,
    pub entries: Vec<Entry>,
    /// How many entries the filters keep (up to the count's cap), in words, this page and
    /// how many pages.
    pub total: i64,
    pub total_words: String,
    pub page: i64,
    pub pages: i64,
    /// The filters chosen (`""` for none), the months offered (`YYYY-MM`, words), and the
    /// filters as a query string.
    pub kind_filter: String,
    pub status_filter: String,
    pub month: String,
    pub months: Vec<(String, String)>,
    pub filters: String,
    pub statements: Vec<StatementRow>,
    /// The last 12 statements' amounts, oldest first, as a bar chart (`<svg>`).
    pub chart: String,
}

/// A statement as the wallet's table shows it.
pub struct StatementRow {
    pub id: i64,
    pub number: i64,
    /// From the previous statement's end to its own, in words.
    pub period: String,
    pub issued: String,
    pub lines: i64,
    pub amount: String,
}

impl WalletPage {
    pub fn gbp(&self, pence: &i64) -> String {
        pounds(*pence)
    }

    /// An instant of the wallet's answers (RFC 3339) as every page writes instants.
    pub fn at(&self, instant: &str) -> String {
        when_text(instant, self.zone)
    }

    /// An entry's type (`sale`, `trade_in`) in words.
    pub fn kind<'a>(&self, kind: &'a str) -> &'a str {
        match EntryType::named(kind) {
            Some(t) => t.words(),
            None => kind,
        }
    }

    /// Where an entry stands, in words: in the hold, available for the next statement, or
    /// on the statement (by its number) that pays it.
    pub fn status(&self, entry: &Entry) -> String {
        let Some(remittance_id) = entry.remittance_id else {
            let status = EntryStatus::ALL.into_iter().find(|s| s.as_str() == entry.status);
            return status.map_or(entry.status, |s| s.words()).to_owned();
        };
        match self.statements.iter().find(|s| s.id == remittance_id) {
            Some(s) => format!("On statement No. {}", s.number),
            None => "On a statement".to_owned(),
        }
    }
}

/// The entries' filters, as the query string carries them.
#[derive(Debug, Default, Deserialize)]
struct EntriesQuery {
    /// `sale` or `trade_in`; anything else is any.
    #[serde(default)]
    kind: String,
    /// `pending`, `available` or `paid`; anything else is any.
    #[serde(default)]
    status: String,
    /// `YYYY-MM`: entries delivered that month (in the brand's time zone).
    #[serde(default)]
    month: String,
    #[serde(default)]
    page: String,
}

impl EntriesQuery {
    fn kind(&self) -> Option<EntryType> {
        EntryType::ALL.into_iter().find(|k| k.as_str() == self.kind)
    }

    fn status(&self) -> Option<EntryStatus> {
        EntryStatus::ALL.into_iter().find(|s| s.as_str() == self.status)
    }

    /// The month asked for and its first instant and the next month's, in `zone`.
    fn month(&self, zone: TimeZone) -> Option<(chrono::NaiveDate, crate::domain::time::Ts, crate::domain::time::Ts)> {
        use chrono::{Datelike, TimeZone as _};
        let first = chrono::NaiveDate::parse_from_str(&format!("{}-01", self.month.trim()), "%Y-%m-%d").ok()?;
        let next = first.checked_add_months(chrono::Months::new(1))?;
        let start = |day: chrono::NaiveDate| {
            zone.tz().from_local_datetime(&day.and_hms_opt(0, 0, 0)?).earliest().map(|at| at.to_utc())
        };
        (first.year() >= 2000).then_some(())?;
        Some((first, crate::domain::time::Ts::from(start(first)?), crate::domain::time::Ts::from(start(next)?)))
    }

    fn filter(&self, zone: TimeZone) -> EntryFilter {
        EntryFilter {
            kind: self.kind(),
            status: self.status(),
            month: self.month(zone).map(|(_, from, until)| (from, until)),
        }
    }

    /// The filters as a query string, for the pages' links and the CSV.
    fn filters(&self, zone: TimeZone) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        if let Some(kind) = self.kind() {
            query.append_pair("kind", kind.as_str());
        }
        if let Some(status) = self.status() {
            query.append_pair("status", status.as_str());
        }
        if let Some((first, ..)) = self.month(zone) {
            query.append_pair("month", &first.format("%Y-%m").to_string());
        }
        query.finish()
    }
}

/// Entries a page of the wallet shows.
const ENTRIES_PER_PAGE: i64 = 50;
/// The most entries one CSV holds (the newest the filters keep).
const CSV_ROWS: i64 = 10_000;

/// The last 24 months, newest first, as the month filter offers them.
fn months_offered(zone: TimeZone) -> Vec<(String, String)> {
    use chrono::Datelike;
    let today = chrono::Utc::now().with_timezone(&zone.tz()).date_naive();
    let mut first = today.with_day(1).unwrap_or(today);
    let mut months = Vec::with_capacity(24);
    for _ in 0..24 {
        months.push((first.format("%Y-%m").to_string(), first.format("%B %Y").to_string()));
        match first.checked_sub_months(chrono::Months::new(1)) {
            Some(previous) => first = previous,
            None => break,
        }
    }
    months
}

async fn wallet_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<EntriesQuery>,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let zone = session.zone();
    let w = wallet::wallet(&state.core, &actor).await?;
    let page = page_number(Some(&query.page), 100_000);
    let (entries, total) = wallet::entries_listed(
        &state.core,
        &actor,
        &query.filter(zone),
        ENTRIES_PER_PAGE,
        (page - 1) * ENTRIES_PER_PAGE,
    )
    .await?;
    let (statements, _) = wallet::remittances(&state.core, &actor, 100, 0).await?;
    let b = w.balances;
    let view = WalletPage {
        chrome: Chrome::signed_in(&session),
        available: pounds(b.available),
        pending: pounds(b.pending),
        paid: pounds(b.paid),
        lifetime: pounds(w.lifetime()),
        hold_hours: w.hold.get(),
        next_payout_date: utc_midnight_day(w.next_payout_date, zone),
        zone,
        chart: statements_chart(&statements, zone),
        entries,
        total,
        page,
        pages: super::pages::pages_of(total, ENTRIES_PER_PAGE),
        total_words: super::pages::count_words(total, "entry", "entries"),
        kind_filter: query.kind().map_or("", EntryType::as_str).to_owned(),
        status_filter: query.status().map_or("", EntryStatus::as_str).to_owned(),
        month: query.month(zone).map(|(first, ..)| first.format("%Y-%m").to_string()).unwrap_or_default(),
        months: months_offered(zone),
        filters: query.filters(zone),
        statements: statement_rows(&statements, zone),
    };
    Ok(render(StatusCode::OK, &view))
}

/// The entries the filters keep (the newest [`CSV_ROWS`]) as CSV: money in pounds with two
/// decimals, times in UTC (RFC 3339), the statement's number when one pays the entry.
async fn entries_csv(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<EntriesQuery>,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let filter = query.filter(session.zone());
    let (entries, _) = wallet::entries_listed(&state.core, &actor, &filter, CSV_ROWS, 0).await?;
    let (statements, _) = wallet::remittances(&state.core, &actor, i64::MAX, 0).await?;
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "order",
        "type",
        "title",
        "quantity",
        "gross_gbp",
        "commission_gbp",
        "vat_gbp",
        "delivery_gbp",
        "amount_gbp",
        "delivered_at_utc",
        "available_at_utc",
        "status",
        "statement",
    ])
    .map_err(PageError::internal)?;
    for e in entries {
        let title = super::pages::cell(&e.title);
        let number = e.remittance_id.and_then(|id| statements.iter().find(|s| s.id == id)).map(|s| s.number);
        let kind = EntryType::named(&e.kind).map_or_else(|| e.kind.clone(), |k| k.words().to_owned());
        let status = EntryStatus::ALL.into_iter().find(|s| s.as_str() == e.status).map_or(e.status, EntryStatus::words);
        out.write_record([
            e.order_reference.clone(),
            kind,
            title,
            e.quantity.to_string(),
            pounds(e.money.gross_pence),
            pounds(e.money.commission_pence),
            pounds(e.money.vat_pence),
            pounds(e.money.delivery_pence),
            pounds(e.money.amount_pence),
            e.delivered_at.clone(),
            e.available_at.clone(),
            status.to_owned(),
            number.map(|n| format!("No. {n}")).unwrap_or_default(),
        ])
        .map_err(PageError::internal)?;
    }
    let csv = out.into_inner().map_err(|e| PageError::internal(e.into_error()))?;
    Ok(super::pages::csv_download("wallet-entries", &session.record.brand_slug, csv))
}

/// The statements (newest first) as the table's rows: each one's period runs from the end
/// of the one before it (the next in the list), the brand's first from the start.
fn statement_rows(statements: &[Remittance], zone: TimeZone) -> Vec<StatementRow> {
    let instant = |text: &str| chrono::DateTime::parse_from_rfc3339(text).ok().map(|at| at.to_utc());
    statements
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let start = statements.get(i + 1).filter(|p| p.number + 1 == s.number).and_then(|p| instant(&p.period_end));
            let period = match instant(&s.period_end) {
                // The one before it is past the page's hundred: its end is not known here.
                Some(end) if start.is_none() && s.number > 1 => format!("up to {}", zone.when(end)),
                Some(end) => wallet::statement::period_words(start, end, zone),
                None => s.period_end.clone(),
            };
            StatementRow {
                id: s.id,
                number: s.number,
                period,
                issued: when_text(&s.issued_at, zone),
                lines: s.line_count,
                amount: pounds(s.totals.amount_pence),
            }
        })
        .collect()
}

/// The amounts of the last 12 statements (newest first in `statements`), oldest first,
/// each named by its number and the month its period ends in.
fn statements_chart(statements: &[Remittance], zone: TimeZone) -> String {
    let month = |s: &Remittance| {
        chrono::DateTime::parse_from_rfc3339(&s.period_end)
            .map(|at| at.with_timezone(&zone.tz()).format(" · %b %Y").to_string())
            .unwrap_or_default()
    };
    let bars: Vec<(String, i64)> = statements
        .iter()
        .take(12)
        .rev()
        .map(|s| (format!("No. {}{}", s.number, month(s)), s.totals.amount_pence))
        .collect();
    super::home::bar_chart("statements-chart", "Statement amounts, the last 12", &bars)
}

/// `<id>.csv` or `<id>.pdf` of a statement of the brand.
async fn statement_file(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(file): Path<String>,
) -> Result<Response, PageError> {
    let not_found = || PageError::Redirect("/dashboard/wallet");
    let (id, extension) = file.rsplit_once('.').ok_or_else(not_found)?;
    let id = id.parse::<i64>().map_err(|_| not_found())?;
    let format = Format::from_extension(extension).ok_or_else(not_found)?;
    let doc = wallet::download(&state.core, &session.actor(), id, format)
        .await
        .map_err(PageError::internal)?
        .ok_or_else(not_found)?;
    // The slug's name for old clients, the brand's name (RFC 6266, UTF-8) for browsers.
    let named: String =
        url::form_urlencoded::byte_serialize(doc.display_name.as_bytes()).collect::<String>().replace('+', "%20");
    let disposition = format!("attachment; filename=\"{}\"; filename*=UTF-8''{named}", doc.file_name);
    Ok(([(header::CONTENT_TYPE, doc.content_type), (header::CONTENT_DISPOSITION, disposition.as_str())], doc.bytes)
        .into_response())
}
