//! The wallet (decisions 10.3, 10.5): balances, entries, and the statements that paid
//! them, as JSON, CSV and PDF.

use crate::http::docs::refusals::refusals;
use crate::http::routing::get;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Router;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::domain::money::Pence;
use crate::domain::outcome::Outcome;
use crate::domain::redemption::CURRENCY;
use crate::domain::statement::{Entry, Remittance, Totals};
use crate::error::{ApiError, ApiResult};
use crate::http::auth::Caller;
use crate::http::files;
use crate::http::listings::{NumberedPaging, PageMeta};
use crate::http::query::QueryParams;
use crate::http::Json;
use crate::state::AppState;
use crate::usecases::wallet::statement::Statement;
use crate::usecases::wallet::{self, Format};

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(get_wallet, list_entries, list_remittances, get_remittance, statement_csv, statement_pdf),
    components(schemas(WalletView, Entry, EntryPage, EntryMeta, Remittance, RemittancePage, Totals)),
    tags((name = "Wallet", description = "What the brand is owed: one ledger entry per delivered clearance sale \
and per credit trade-in, pending for the settlement hold after delivery, then available until the monthly \
statement (remittance) pays it. See docs/wallet.md."))
)]
pub struct WalletApi;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/wallet", get(get_wallet))
        .route("/wallet/entries", get(list_entries))
        .route("/remittances", get(list_remittances))
        .route("/remittances/{id}", get(get_remittance))
        .route("/remittances/{id}/statement.csv", get(statement_csv))
        .route("/remittances/{id}/statement.pdf", get(statement_pdf))
}

/// The brand's balances. Always `lifetime = available + pending + paid`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WalletView {
    /// Slug of the brand.
    pub brand_id: String,
    /// `GBP`.
    pub currency: &'static str,
    /// Past the hold, not yet on a statement.
    pub available_pence: i64,
    pub available: f64,
    /// Within the hold after delivery.
    pub pending_pence: i64,
    pub pending: f64,
    /// On issued statements.
    pub paid_pence: i64,
    pub paid: f64,
    pub lifetime_pence: i64,
    pub lifetime: f64,
    /// The settlement hold after delivery, in hours (`REHOME_SETTLEMENT_HOLD_HOURS`).
    pub hold_hours: u32,
    /// `YYYY-MM-DD`: the next monthly run (00:00 UTC that day).
    #[schema(format = Date)]
    pub next_payout_date: String,
}

/// The brand's balances now.
#[utoipa::path(
    get,
    path = "/v1/wallet",
    tag = "Wallet",
    security(("bearer" = [])),
    responses((status = 200, description = "The balances", body = WalletView))
)]
pub async fn get_wallet(caller: Caller, State(state): State<AppState>) -> ApiResult<Json<WalletView>> {
    let wallet = wallet::wallet(&state.core, &caller.admin).await?;
    let b = wallet.balances;
    Ok(Json(WalletView {
        brand_id: caller.admin.brand_slug.clone(),
        currency: CURRENCY,
        available_pence: b.available,
        available: Pence::new(b.available).gbp(),
        pending_pence: b.pending,
        pending: Pence::new(b.pending).gbp(),
        paid_pence: b.paid,
        paid: Pence::new(b.paid).gbp(),
        lifetime_pence: wallet.lifetime(),
        lifetime: Pence::new(wallet.lifetime()).gbp(),
        hold_hours: wallet.hold.get(),
        next_payout_date: wallet.next_payout_date.to_string(),
    }))
}

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct EntryMeta {
    pub limit: u32,
    /// More entries follow: pass `next_after` as `after`.
    pub has_more: bool,
    /// The id of the page's last entry (null on an empty page).
    pub next_after: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EntryPage {
    /// Oldest first (ascending id).
    pub data: Vec<Entry>,
    pub meta: EntryMeta,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
struct EntryQuery {
    /// 1 to 100; default 50.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: u32,
    /// An entry id (`meta.next_after`): entries after it.
    #[param(value_type = Option<i64>, minimum = 0)]
    after: i64,
}

impl EntryQuery {
    fn read(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut params = QueryParams::new(pairs);
        let limit = params.number("limit", DEFAULT_LIMIT, MAX_LIMIT);
        let after = match params.get("after").map(str::parse::<i64>) {
            None => 0,
            Some(Ok(n)) if n >= 0 => n,
            Some(_) => params.invalid("after").unwrap_or(0),
        };
        params.finish()?;
        Ok(Self { limit, after })
    }
}

refusals!(ListEntriesRefusals: [
    Invalid("`validation_failed`: `limit_invalid`, `after_invalid`"),
]);

/// The brand's ledger, oldest first; walk it with `after=<meta.next_after>`.
#[utoipa::path(
    get,
    path = "/v1/wallet/entries",
    tag = "Wallet",
    security(("bearer" = [])),
    params(EntryQuery),
    responses(
        (status = 200, description = "One page", body = EntryPage),
        ListEntriesRefusals,
    )
)]
pub async fn list_entries(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<EntryPage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let EntryQuery { limit, after } = EntryQuery::read(&pairs)?;
    let (data, has_more) = wallet::entries(&state.core, &caller.admin, after, limit).await?;
    let next_after = data.last().map(|e| e.id);
    Ok(Json(EntryPage { data, meta: EntryMeta { limit, has_more, next_after } }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RemittancePage {
    /// Newest first; without `lines` (see the statement itself).
    pub data: Vec<Remittance>,
    pub meta: PageMeta,
}

refusals!(ListRemittancesRefusals: [
    Invalid("`validation_failed`: `page_invalid`, `per_page_invalid`"),
]);

/// The brand's statements, newest first.
#[utoipa::path(
    get,
    path = "/v1/remittances",
    tag = "Wallet",
    security(("bearer" = [])),
    params(
        ("page" = Option<u32>, Query, minimum = 1, description = "1-indexed page; default 1"),
        ("per_page" = Option<u32>, Query, minimum = 1, maximum = 100, description = "1 to 100; default 20"),
    ),
    responses(
        (status = 200, description = "One page", body = RemittancePage),
        ListRemittancesRefusals,
    )
)]
pub async fn list_remittances(
    caller: Caller,
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<RemittancePage>> {
    let Query(pairs) = query.map_err(|_| ApiError::field("query", "query_invalid"))?;
    let mut params = QueryParams::new(&pairs);
    let page = params.page();
    params.finish()?;
    let (data, total) = wallet::remittances(&state.core, &caller.admin, page.limit(), page.offset()).await?;
    let meta = PageMeta {
        paging: NumberedPaging::Page,
        page: page.page,
        per_page: page.per_page,
        total,
        total_pages: page.total_pages(total),
        total_is_estimate: false,
        brand_id: caller.admin.brand_slug.clone(),
    };
    Ok(Json(RemittancePage { data, meta }))
}

/// A statement of the caller's brand (404 `remittance_not_found` for any other id).
async fn find(state: &AppState, caller: &Caller, id: Result<Path<String>, PathRejection>) -> ApiResult<Statement> {
    let id = id.ok().and_then(|Path(id)| id.parse::<i64>().ok());
    let found = match id {
        Some(id) => wallet::statement(&state.core, &caller.admin, id).await?,
        None => None,
    };
    found.ok_or_else(|| ApiError::from(Outcome::RemittanceNotFound))
}

refusals!(GetRemittanceRefusals: [
    Outcome(Outcome::RemittanceNotFound),
]);

/// A statement with its lines.
#[utoipa::path(
    get,
    path = "/v1/remittances/{id}",
    tag = "Wallet",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Statement id")),
    responses(
        (status = 200, description = "The statement", body = Remittance),
        GetRemittanceRefusals,
    )
)]
pub async fn get_remittance(
    caller: Caller,
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<Remittance>> {
    let statement = find(&state, &caller, id).await?;
    let mut view = crate::usecases::wallet::statement::summary(&statement.record);
    view.lines = Some(statement.lines);
    Ok(Json(view))
}

refusals!(StatementCsvRefusals: [
    Outcome(Outcome::RemittanceNotFound),
]);

/// The statement as CSV: a header row, one row per line (the JSON lines' fields and
/// values), and a totals row whose `id` is `total`.
#[utoipa::path(
    get,
    path = "/v1/remittances/{id}/statement.csv",
    tag = "Wallet",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Statement id")),
    responses(
        (status = 200, description = "The statement", content_type = "text/csv", body = String),
        StatementCsvRefusals,
    )
)]
pub async fn statement_csv(
    caller: Caller,
    State(state): State<AppState>,
    request: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Response> {
    download(&state, &caller, &request, id, Format::Csv).await
}

refusals!(StatementPdfRefusals: [
    Outcome(Outcome::RemittanceNotFound),
]);

/// The statement as a PDF: the number, the billing entity, every line and the totals.
#[utoipa::path(
    get,
    path = "/v1/remittances/{id}/statement.pdf",
    tag = "Wallet",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Statement id")),
    responses(
        (status = 200, description = "The statement (attachment `remittance-<brand>-<number>.pdf`)", content_type = "application/pdf", body = Vec<u8>),
        StatementPdfRefusals,
    )
)]
pub async fn statement_pdf(
    caller: Caller,
    State(state): State<AppState>,
    request: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<Response> {
    download(&state, &caller, &request, id, Format::Pdf).await
}

/// The statement as a file, its lines read and written one by one (404 as [`find`]).
async fn download(
    state: &AppState,
    caller: &Caller,
    request: &HeaderMap,
    id: Result<Path<String>, PathRejection>,
    format: Format,
) -> ApiResult<Response> {
    let id = id.ok().and_then(|Path(id)| id.parse::<i64>().ok());
    let found = match id {
        Some(id) => wallet::download(&state.core, &caller.admin, id, format).await?,
        None => None,
    };
    let doc = found.ok_or_else(|| ApiError::from(Outcome::RemittanceNotFound))?;
    Ok(files::attachment(request, doc.content_type, &doc.file_name, doc.bytes))
}
