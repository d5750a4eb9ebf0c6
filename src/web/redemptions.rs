//! Redemptions: the brand's trade-in redemptions, newest first, filtered by where each
//! stands and by customer, a page at a time and as CSV; and spending a customer's credit
//! code after checking it (decisions 15.5), admins only.

use crate::http::routing::{get, post};
use crate::web::extract::reasons_on;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;

use super::extract::{AdminForm, PageError, SignedIn};
use super::notice::{Flash, Notice};
use super::pages::{page_number, render, when_text, Chrome, FieldErrors};
use crate::domain::credit_code::{RedeemRequest, REDEEM_BODY};
use crate::domain::settings::TimeZone;
use crate::domain::view::{RedemptionFilter, RedemptionState};
use crate::domain::FieldError;
use crate::state::AppState;
use crate::usecases::marketplace::credits::{self, RedeemError};
use crate::usecases::marketplace::redemptions;
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::wallet::statement::pounds;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/redemptions", get(redemptions_page))
        .route("/redemptions.csv", get(redemptions_csv))
        .route("/redemptions/check", post(check_code))
        .route("/redemptions/redeem", post(redeem))
}

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
    /// How many the filters keep (up to the count's cap), in words, this page and how many
    /// pages.
    pub total: i64,
    pub total_words: String,
    pub page: i64,
    pub pages: i64,
    /// The filters chosen (`""` for none), the state's choices, and the query string.
    pub state: String,
    pub customer: String,
    pub states: Vec<(&'static str, &'static str)>,
    pub filters: String,
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

/// The list's filters, as the query string carries them.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// `not-spent`, `spent`, `expired`, `to-order`, `cash`; anything else is any.
    #[serde(default)]
    state: String,
    /// A customer's id, exactly.
    #[serde(default)]
    customer: String,
    #[serde(default)]
    page: String,
}

/// The states the filter offers: (value, words, state).
const STATES: [(&str, &str, RedemptionState); 5] = [
    ("not-spent", "Credit codes not spent yet", RedemptionState::CodeNotSpent),
    ("spent", "Credit codes spent", RedemptionState::CodeSpent),
    ("expired", "Credit codes expired unspent", RedemptionState::CodeExpired),
    ("to-order", "Credit added to an order", RedemptionState::CreditToOrder),
    ("cash", "Cash", RedemptionState::Cash),
];

impl ListQuery {
    fn state(&self) -> Option<(&'static str, RedemptionState)> {
        STATES.iter().find(|(value, ..)| *value == self.state).map(|(value, _, state)| (*value, *state))
    }

    fn customer(&self) -> Option<String> {
        let customer = self.customer.trim();
        (!customer.is_empty() && customer.len() <= 200).then(|| customer.to_owned())
    }

    fn filter(&self) -> RedemptionFilter {
        RedemptionFilter { state: self.state().map(|(_, state)| state), customer: self.customer() }
    }

    /// The filters as a query string, for the pages' links and the CSV.
    fn filters(&self) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        if let Some((value, _)) = self.state() {
            query.append_pair("state", value);
        }
        if let Some(customer) = self.customer() {
            query.append_pair("customer", &customer);
        }
        query.finish()
    }
}

/// Redemptions a page of the list shows.
const PER_PAGE: i64 = 50;
/// The most redemptions one CSV holds (the newest the filters keep).
const CSV_ROWS: i64 = 10_000;

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

/// A redemption as the list's row (and the CSV's) says it.
fn row(r: crate::domain::redemption::Redemption, zone: TimeZone) -> RedemptionRow {
    RedemptionRow {
        id: r.id,
        customer: r.customer_id,
        choice: choice_words(&r.customer_choice, r.credit_destination.as_deref()),
        value: pounds(r.value_pence),
        code: r.code.clone().unwrap_or_default(),
        sold: when_text(&r.sale_completed_at, zone),
        expires: r.expires_at.as_deref().map(|at| when_text(at, zone)).unwrap_or_default(),
        spent: match (&r.code, &r.spent) {
            (None, _) => String::new(),
            (Some(_), Some(spent)) => {
                let by = spent.by.as_deref().map(|by| format!(" by {by}")).unwrap_or_default();
                format!("Spent {}{by}", when_text(&spent.at, zone))
            }
            (Some(_), None) => "Not spent".to_owned(),
        },
    }
}

async fn redemptions_view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<String>,
    shown: RedeemShown,
    query: &ListQuery,
) -> Result<Response, PageError> {
    let page = page_number(Some(&query.page), 100_000);
    let offset = (page - 1) * PER_PAGE;
    let (listed, total) = redemptions::listed(&state.core, &session.actor(), &query.filter(), PER_PAGE, offset).await?;
    let rows = listed.into_iter().map(|r| row(r, session.zone())).collect();
    let view = RedemptionsPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        rows,
        total,
        page,
        pages: super::pages::pages_of(total, PER_PAGE),
        total_words: super::pages::count_words(total, "redemption", "redemptions"),
        state: query.state().map_or("", |(value, _)| value).to_owned(),
        customer: query.customer().unwrap_or_default(),
        states: STATES.iter().map(|(value, words, _)| (*value, *words)).collect(),
        filters: query.filters(),
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
    Query(query): Query<ListQuery>,
) -> Result<Response, PageError> {
    redemptions_view(&state, &session, StatusCode::OK, flash.said(), RedeemShown::default(), &query).await
}

/// The redemptions the filters keep (the newest [`CSV_ROWS`]) as CSV: the list's columns,
/// the value in pounds with two decimals and the times in UTC (RFC 3339).
async fn redemptions_csv(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<ListQuery>,
) -> Result<Response, PageError> {
    let (listed, _) = redemptions::listed(&state.core, &session.actor(), &query.filter(), CSV_ROWS, 0).await?;
    let mut out = csv::Writer::from_writer(Vec::new());
    let safe = super::pages::cell;
    out.write_record([
        "redemption",
        "customer",
        "choice",
        "value_gbp",
        "code",
        "sold_at_utc",
        "expires_at_utc",
        "spent_at_utc",
        "spent_by",
        "spent_on_order",
    ])
    .map_err(PageError::internal)?;
    for r in listed {
        let spent = r.spent.clone();
        let choice = choice_words(&r.customer_choice, r.credit_destination.as_deref());
        out.write_record([
            r.id,
            safe(&r.customer_id),
            choice,
            pounds(r.value_pence),
            r.code.unwrap_or_default(),
            r.sale_completed_at,
            r.expires_at.unwrap_or_default(),
            spent.as_ref().map(|s| s.at.clone()).unwrap_or_default(),
            spent.as_ref().and_then(|s| s.by.as_deref()).map(safe).unwrap_or_default(),
            spent.and_then(|s| s.order_reference).map(|o| safe(&o)).unwrap_or_default(),
        ])
        .map_err(PageError::internal)?;
    }
    let csv = out.into_inner().map_err(|e| PageError::internal(e.into_error()))?;
    Ok(super::pages::csv_download("redemptions", &session.record.brand_slug, csv))
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
async fn check_code(State(state): State<AppState>, posted: AdminForm<RedeemForm>) -> Result<Response, PageError> {
    let AdminForm { session, form, .. } = posted;
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
                return redemptions_view(state, session, StatusCode::OK, None, shown, &ListQuery::default()).await;
            }
            Err(refused) => code_refusal(refused)?,
        },
    };
    refused_code(state, session, form, errors).await
}

/// Spends a credit code once its check was confirmed (post/redirect/get with the value
/// spent); a post without the confirmation shows the check instead. A refused code comes
/// back with its sentence beside its field.
async fn redeem(State(state): State<AppState>, posted: AdminForm<RedeemForm>) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    if form.confirm != "yes" {
        return checked_view(&state, &session, form).await;
    }
    let mut body = crate::domain::reader::object(serde_json::json!({"code": form.code}));
    if !form.order_reference.trim().is_empty() {
        body.insert("order_reference".to_owned(), serde_json::Value::String(form.order_reference.clone()));
    }
    let errors = match RedeemRequest::parse(&body) {
        Err(errors) => errors,
        Ok(request) => match credits::redeem(&state.core, &admin, &request).await {
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
    reasons_on("code", refused)
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
    redemptions_view(state, session, StatusCode::UNPROCESSABLE_ENTITY, None, shown, &ListQuery::default()).await
}
