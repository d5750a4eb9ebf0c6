//! What the brand has and is owed: Listings (filters, search, pages), Redemptions (list,
//! redeem a code), Wallet (balances, entries, statements with their CSV and PDF).

use crate::http::routing::{get, post};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Deserialize;

use super::extract::{require_admin, PageError, SignedIn, SignedInForm};
use super::notice::{Flash, Notice};
use super::pages::{page_number, render, utc_midnight_day, when, when_text, Chrome, FieldErrors};
use crate::domain::credit_code::{RedeemRequest, REDEEM_BODY};
use crate::domain::listing::{price, Channel, ListingQuery, ListingStatus};
use crate::domain::settings::TimeZone;
use crate::domain::statement::{Entry, Remittance};
use crate::domain::wallet::{EntryStatus, EntryType};
use crate::domain::FieldError;
use crate::state::AppState;
use crate::usecases::listings;
use crate::usecases::marketplace::credits::{self, RedeemError};
use crate::usecases::marketplace::redemptions;
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::wallet::statement::pounds;
use crate::usecases::wallet::{self, Format};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/listings", get(listings_page))
        .route("/redemptions", get(redemptions_page))
        .route("/redemptions/check", post(check_code))
        .route("/redemptions/redeem", post(redeem))
        .route("/wallet", get(wallet_page))
        .route("/wallet/statements/{file}", get(statement_file))
}

// ---- Listings ----

pub struct ListingRow {
    pub id: i64,
    pub title: String,
    pub status: &'static str,
    pub channel: &'static str,
    pub category: String,
    pub price: String,
    pub views: i64,
    pub created: String,
    /// The live page on the marketplace; `None` for a draft.
    pub live_url: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/listings.html")]
pub struct ListingsPage {
    pub chrome: Chrome,
    pub is_admin: bool,
    /// What the last action did ("Listing deleted…"), once.
    pub notice: Option<&'static str>,
    pub rows: Vec<ListingRow>,
    pub q: String,
    pub status: String,
    pub channel: String,
    pub page: i64,
    pub pages: i64,
    pub total: i64,
    /// The query string of the filters, for the page links.
    pub filters: String,
    /// Why the search was refused (the API's rule for `q`), shown in place of results.
    pub search_error: Option<String>,
    /// The filters' choices (their wire names in the query string, their words shown).
    pub statuses: &'static [ListingStatus],
    pub channels: &'static [Channel],
}

#[derive(Debug, Deserialize)]
struct ListingsQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    channel: String,
    page: Option<String>,
}

const PER_PAGE: i64 = 25;

async fn listings_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
    Query(query): Query<ListingsQuery>,
) -> Result<Response, PageError> {
    let status = query.status.parse::<ListingStatus>().ok();
    let channel = query.channel.parse::<Channel>().ok();
    // The API's search rule: a search too long is refused with its reason, never cut.
    let (words, search_error) = match query.q.trim() {
        "" => (Vec::new(), None),
        q => match ListingQuery::search_words(q) {
            Some(words) => (words, None),
            None => (Vec::new(), Some(FieldError::of("q", "invalid").message)),
        },
    };
    let page = page_number(query.page.as_deref(), 100_000);
    let found = match search_error {
        Some(_) => Default::default(),
        None => {
            let filter = ListingQuery { status, channel, sku: None, words };
            listings::list(&state.core, &session.actor(), filter, PER_PAGE, (page - 1) * PER_PAGE).await?
        }
    };
    let rows = found
        .listings
        .into_iter()
        .map(|l| ListingRow {
            id: l.id,
            title: l.title,
            status: l.status.words(),
            channel: l.channel.words(),
            category: l.category,
            price: pounds(price(l.regular_price, l.sale_price).get()),
            views: l.view_count,
            created: when(l.created_at.get(), session.zone()),
            live_url: (l.status != crate::domain::listing::ListingStatus::Draft)
                .then(|| format!("{}/listings/{}", state.config.marketplace_url(), l.id)),
        })
        .collect();
    let filters = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("q", &query.q)
        .append_pair("status", status.map_or("", ListingStatus::as_str))
        .append_pair("channel", channel.map_or("", Channel::as_str))
        .finish();
    let view = ListingsPage {
        chrome: Chrome::signed_in(&session),
        is_admin: session.is_admin(),
        notice: flash.text(),
        rows,
        q: query.q,
        status: status.map_or("", ListingStatus::as_str).to_owned(),
        channel: channel.map_or("", Channel::as_str).to_owned(),
        page,
        pages: (found.total + PER_PAGE - 1) / PER_PAGE,
        total: found.total,
        filters,
        search_error,
        statuses: ListingStatus::ALL,
        channels: Channel::ALL,
    };
    Ok(render(StatusCode::OK, &view))
}

// ---- Redemptions ----

pub struct RedemptionRow {
    pub id: String,
    pub customer: String,
    pub choice: String,
    pub value: String,
    pub code: String,
    pub sold: String,
    pub expires: String,
    /// For a code: spent (when, by whom) or not; empty for other choices.
    pub spent: String,
}

/// A credit code looked up before it is spent (decisions 15.5): what it is worth and where it
/// stands, and whether it can be spent now.
pub struct CheckedCode {
    /// The code as the customer has it.
    pub code: String,
    pub value: String,
    /// Where it stands, in a sentence.
    pub state: String,
    pub spendable: bool,
    pub customer: String,
}

#[derive(askama::Template)]
#[template(path = "dashboard/redemptions.html")]
pub struct RedemptionsPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub rows: Vec<RedemptionRow>,
    pub code: String,
    pub order_reference: String,
    /// A code just checked: shown with the button that spends it (the confirmation).
    pub checked: Option<CheckedCode>,
    pub notice: Option<String>,
    /// Why the code was refused, beside its field.
    pub error: Option<String>,
    /// Why the order reference was refused, beside its field.
    pub reference_error: Option<String>,
}

/// `credit` (`code`) as people read it: "Credit, as a code".
fn choice_words(choice: &str, destination: Option<&str>) -> String {
    let mut words = choice.replace('_', " ");
    if let Some(first) = words.get(..1) {
        words = first.to_uppercase() + &words[1..];
    }
    match destination {
        Some(destination) => format!("{words}, as a {}", destination.replace('_', " ")),
        None => words,
    }
}

#[derive(Default)]
struct RedeemShown {
    code: String,
    order_reference: String,
    checked: Option<CheckedCode>,
    error: Option<String>,
    reference_error: Option<String>,
}

/// Where a code stands, in words, in the brand's time zone.
fn code_state(redemption: &crate::domain::redemption::Redemption, zone: TimeZone) -> (String, bool) {
    let expires = redemption.expires_at.as_deref().map(|at| when_text(at, zone)).unwrap_or_default();
    if let Some(spent) = &redemption.spent {
        let by = spent.by.as_deref().map(|by| format!(" by {by}")).unwrap_or_default();
        let order = spent.order_reference.as_deref().map(|o| format!(", on order {o}")).unwrap_or_default();
        return (format!("Spent {}{by}{order}: it cannot be spent again.", when_text(&spent.at, zone)), false);
    }
    let expired = redemption
        .expires_at
        .as_deref()
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .is_none_or(|at| at <= chrono::Utc::now());
    if expired {
        return (format!("Expired {expires}: it can no longer be spent."), false);
    }
    (format!("Not spent yet. It can be spent until {expires}."), true)
}

async fn redemptions_view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<String>,
    shown: RedeemShown,
) -> Result<Response, PageError> {
    let page = match redemptions::page(&state.core, &session.actor(), None, None, 100).await {
        Ok(page) => page,
        Err(redemptions::ListRedemptionsError::Store(e)) => return Err(e.into()),
        Err(e) => return Err(PageError::internal(e)),
    };
    let rows = page
        .redemptions
        .into_iter()
        .rev()
        .map(|r| RedemptionRow {
            id: r.id,
            customer: r.customer_id,
            choice: choice_words(&r.customer_choice, r.credit_destination.as_deref()),
            value: pounds(r.value_pence),
            code: r.code.clone().unwrap_or_default(),
            sold: when_text(&r.sale_completed_at, session.zone()),
            expires: r.expires_at.as_deref().map(|at| when_text(at, session.zone())).unwrap_or_default(),
            spent: match (&r.code, &r.spent) {
                (None, _) => String::new(),
                (Some(_), Some(spent)) => {
                    let by = spent.by.as_deref().map(|by| format!(" by {by}")).unwrap_or_default();
                    format!("Spent {}{by}", when_text(&spent.at, session.zone()))
                }
                (Some(_), None) => "Not spent".to_owned(),
            },
        })
        .collect();
    let view = RedemptionsPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        rows,
        code: shown.code,
        order_reference: shown.order_reference,
        checked: shown.checked,
        notice,
        error: shown.error,
        reference_error: shown.reference_error,
    };
    Ok(render(status, &view))
}

async fn redemptions_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
) -> Result<Response, PageError> {
    redemptions_view(&state, &session, StatusCode::OK, flash.said(), RedeemShown::default()).await
}

#[derive(Debug, Deserialize)]
struct RedeemForm {
    #[serde(default)]
    code: String,
    #[serde(default)]
    order_reference: String,
    /// `yes` from the confirmation's button; without it nothing is spent.
    #[serde(default)]
    confirm: String,
}

/// Looks a credit code up without spending it: its value, its expiry, and whether (when, by
/// whom, on which order) it was spent; an unspent one comes with the button that spends it.
async fn check_code(State(state): State<AppState>, posted: SignedInForm<RedeemForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    require_admin(&session)?;
    checked_view(&state, &session, form).await
}

/// The code looked up, shown as the confirmation of its spending, or its field's refusal.
async fn checked_view(state: &AppState, session: &LiveSession, form: RedeemForm) -> Result<Response, PageError> {
    let body = crate::domain::reader::object(serde_json::json!({"code": form.code, "dry_run": true}));
    let errors = match RedeemRequest::parse(&body) {
        Err(errors) => errors,
        Ok(request) => match credits::look_up(&state.core, &session.actor(), &request.code).await {
            Ok(found) => {
                let redemption = redemptions::view(&state.core, found.redemption);
                let (state_words, spendable) = code_state(&redemption, session.zone());
                let checked = CheckedCode {
                    code: found.code,
                    value: format!("£{}", pounds(redemption.value_pence)),
                    state: state_words,
                    spendable,
                    customer: redemption.customer_id,
                };
                let shown = RedeemShown {
                    code: form.code,
                    order_reference: form.order_reference,
                    checked: Some(checked),
                    ..RedeemShown::default()
                };
                return redemptions_view(state, session, StatusCode::OK, None, shown).await;
            }
            Err(refused) => code_refusal(refused)?,
        },
    };
    refused_code(state, session, form, errors).await
}

/// Spends a credit code once its check was confirmed (post/redirect/get with the value
/// spent); a post without the confirmation shows the check instead. A refused code comes
/// back with its sentence beside its field.
async fn redeem(State(state): State<AppState>, posted: SignedInForm<RedeemForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    require_admin(&session)?;
    if form.confirm != "yes" {
        return checked_view(&state, &session, form).await;
    }
    let mut body = crate::domain::reader::object(serde_json::json!({"code": form.code}));
    if !form.order_reference.trim().is_empty() {
        body.insert("order_reference".to_owned(), serde_json::Value::String(form.order_reference.clone()));
    }
    let errors = match RedeemRequest::parse(&body) {
        Err(errors) => errors,
        Ok(request) => match credits::redeem(&state.core, &session.actor(), &request).await {
            Ok(checked) => {
                let pence = u64::try_from(checked.redemption.value_pence).unwrap_or_default();
                let secure = state.config.secure_cookies();
                return Ok(Notice::CodeRedeemed.redirect_with(pence, "/dashboard/redemptions", secure));
            }
            Err(refused) => code_refusal(refused)?,
        },
    };
    refused_code(&state, &session, form, errors).await
}

/// A refused code's reason, pinned to its field; a failure of the store, or a refusal the
/// catalogue does not name, is a failure of the page.
fn code_refusal(refused: RedeemError) -> Result<Vec<FieldError>, PageError> {
    match refused {
        RedeemError::Store(e) => Err(e.into()),
        refused => match refused.outcome() {
            Some(outcome) => Ok(vec![outcome.on("code")]),
            None => Err(PageError::internal(format!("a refusal without an outcome: {refused:?}"))),
        },
    }
}

/// The page with a refused code's (or order reference's) sentence beside its field.
async fn refused_code(
    state: &AppState,
    session: &LiveSession,
    form: RedeemForm,
    errors: Vec<FieldError>,
) -> Result<Response, PageError> {
    let errors = FieldErrors::of(&REDEEM_BODY, errors);
    let shown = RedeemShown {
        error: errors.get("code"),
        reference_error: errors.get("order_reference"),
        code: form.code,
        order_reference: form.order_reference,
        checked: None,
    };
    redemptions_view(state, session, StatusCode::UNPROCESSABLE_ENTITY, None, shown).await
}

// ---- Wallet ----

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

async fn wallet_page(State(state): State<AppState>, SignedIn(session): SignedIn) -> Result<Response, PageError> {
    let actor = session.actor();
    let w = wallet::wallet(&state.core, &actor).await?;
    let (mut entries, _) = wallet::entries(&state.core, &actor, 0, 100).await?;
    entries.reverse();
    let (statements, _) = wallet::remittances(&state.core, &actor, 100, 0).await?;
    let b = w.balances;
    let zone = session.zone();
    let page = WalletPage {
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
        statements: statement_rows(&statements, zone),
    };
    Ok(render(StatusCode::OK, &page))
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
