//! Collections: sold clearance items with their buyer's window; an admin schedules each
//! one's day inside it, and moves a scheduled collection to another day or cancels it, each
//! after a confirmation step (the buyer is mailed, the event sent again, the change audited).
//! Members see the lists read-only.

use crate::http::routing::{get, post};
use crate::web::extract::reasons_on;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use super::confirm::{self, Asked, Confirm};
use super::extract::{AdminForm, PageError, SignedIn, SignedInAdmin};
use super::notice::{Flash, Notice};
use super::pages::{day, render, Chrome, FieldErrors};
use crate::domain::collection::{
    Collection, CollectionMove, CollectionQuery, CollectionRequest, CollectionStatus, COLLECTION_BODY,
    COLLECTION_MOVE_BODY,
};
use crate::domain::order::{order_reference, BuyerWindow};
use crate::domain::reader::object;
use crate::state::AppState;
use crate::usecases::marketplace::collections::{self, day_words, ChangeError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::warehouses;

const COLLECTIONS: &str = "/dashboard/collections";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/collections", get(collections_page).merge(post(schedule)))
        .route("/collections.csv", get(collections_csv))
        .route("/collections/{id}/move", get(confirm_move).merge(post(move_collection)))
        .route("/collections/{id}/cancel", get(confirm_cancel).merge(post(cancel_collection)))
}

pub struct CollectionRow {
    pub order_id: i64,
    pub reference: String,
    pub listing_id: i64,
    /// The title sold; empty when it is not known any more.
    pub title: String,
    pub quantity: i64,
    pub window_start: String,
    pub window_end: String,
    /// The buyer window as people read it: `30 Nov to 9 Dec 2026`.
    pub window_words: String,
    /// The first day a date may be chosen: the window's first, or today for a scheduled
    /// collection being moved.
    pub open_from: String,
    /// What to choose when a date is refused: the days still open, in words.
    pub date_sentence: String,
    /// Scheduled: the collection's id, its day (`YYYY-MM-DD`), and whether that day has
    /// passed (nothing can be changed then).
    pub collection_id: Option<String>,
    pub scheduled_on: String,
    pub passed: bool,
    /// `None` while unscheduled; the date as people read it.
    pub scheduled_for: Option<String>,
    /// Scheduled: the collection's warehouse ("" when none). To schedule: the warehouse the
    /// form proposes (the listing's, else the default).
    pub warehouse_id: Option<String>,
    pub warehouse_label: String,
}

#[derive(askama::Template)]
#[template(path = "dashboard/collections.html")]
pub struct CollectionsPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    /// The filter chosen: `""` (both lists), `unscheduled` or `scheduled`.
    pub status: String,
    pub unscheduled: Vec<CollectionRow>,
    pub scheduled: Vec<CollectionRow>,
    /// `(id, label)`.
    pub warehouses: Vec<(String, String)>,
    pub notice: Option<String>,
    /// The order the errors are about, the errors, and the date given.
    pub failed: Option<(i64, FieldErrors, String)>,
}

impl CollectionsPage {
    /// The reasons shown beside the date field of `order_id`'s row.
    pub fn error_for(&self, order_id: &i64) -> Option<String> {
        self.failed.as_ref().filter(|(id, ..)| id == order_id).map(|(_, errors, _)| errors.all())
    }

    /// The reasons about an order no longer offered (scheduled or cancelled meanwhile, or
    /// unknown), shown above the lists.
    pub fn stray_error(&self) -> Option<String> {
        let (id, errors, _) = self.failed.as_ref()?;
        let offered = |rows: &[CollectionRow], movable: bool| {
            rows.iter().any(|r| r.order_id == *id && (!movable || (r.collection_id.is_some() && !r.passed)))
        };
        let shown = offered(&self.unscheduled, false) || (self.is_admin && offered(&self.scheduled, true));
        (!shown).then(|| errors.all())
    }

    /// The date given in `order_id`'s refused form, to show it again.
    pub fn date_for(&self, order_id: &i64) -> &str {
        self.failed.as_ref().filter(|(id, ..)| id == order_id).map_or("", |(.., date)| date.as_str())
    }

    /// The date a scheduled row's move form shows: the one refused, else its day.
    pub fn move_date<'a>(&'a self, row: &'a CollectionRow) -> &'a str {
        match self.date_for(&row.order_id) {
            "" => &row.scheduled_on,
            given => given,
        }
    }

    /// Whether the warehouse `id` is the one `row`'s form proposes.
    pub fn proposes(&self, row: &CollectionRow, id: &str) -> bool {
        row.warehouse_id.as_deref() == Some(id)
    }
}

const COLLECTIONS_SHOWN: i64 = 100;
/// The most orders one CSV holds (in buyer-window order, under the filter).
const CSV_ROWS: i64 = 10_000;

/// The list's filter, as the query string carries it: `unscheduled` or `scheduled`;
/// anything else shows both.
#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    #[serde(default)]
    status: String,
}

impl ListQuery {
    fn status(&self) -> Option<CollectionStatus> {
        [CollectionStatus::Unscheduled, CollectionStatus::Scheduled].into_iter().find(|s| s.as_str() == self.status)
    }

    fn query(&self) -> CollectionQuery {
        self.status().map_or(CollectionQuery::Any, CollectionQuery::Only)
    }
}

async fn collections_view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<String>,
    failed: Option<(i64, FieldErrors, String)>,
) -> Result<Response, PageError> {
    collections_filtered(state, session, status, notice, failed, &ListQuery::default()).await
}

async fn collections_filtered(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<String>,
    failed: Option<(i64, FieldErrors, String)>,
    query: &ListQuery,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let (orders, _) = collections::list(&state.core, &actor, query.query(), COLLECTIONS_SHOWN, 0).await?;
    let warehouses = warehouses::list(&state.core, &actor).await?;
    let default = warehouses.iter().find(|w| w.is_default).map(|w| w.id.clone());
    let (mut unscheduled, mut scheduled) = (Vec::new(), Vec::new());
    let today = chrono::Utc::now().date_naive();
    for order in orders {
        let (warehouse_id, warehouse_label, scheduled_for) = match &order.collection {
            Some(c) => (
                c.warehouse_id.clone(),
                c.warehouse_label.clone(),
                Some(c.scheduled_for.parse().map_or_else(|_| c.scheduled_for.clone(), day)),
            ),
            None => {
                // The listing's warehouse while it is still one of the brand's, else the default.
                let proposed = order
                    .listing_warehouse_id
                    .as_ref()
                    .filter(|id| warehouses.iter().any(|w| &w.id == *id))
                    .cloned()
                    .or_else(|| default.clone());
                let label = warehouses.iter().find(|w| Some(&w.id) == proposed.as_ref()).map(|w| w.label.clone());
                (proposed, label.unwrap_or_default(), None)
            }
        };
        let collection = order.collection.as_ref();
        let scheduled_on = collection.and_then(|c| c.scheduled_for.parse::<chrono::NaiveDate>().ok());
        // A scheduled collection moves to a day still to come.
        let open = match collection {
            Some(_) => BuyerWindow { start: order.window.start.max(today), end: order.window.end },
            None => order.window,
        };
        let row = CollectionRow {
            order_id: order.order_id,
            reference: order_reference(order.order_id),
            listing_id: order.listing_id,
            title: order.title,
            quantity: order.quantity,
            window_start: order.window.start.to_string(),
            window_end: order.window.end.to_string(),
            window_words: order.window.words(),
            open_from: open.start.to_string(),
            date_sentence: format!("Choose a date from {}: the buyer's collection window.", open.words()),
            collection_id: collection.map(|c| c.id.clone()),
            scheduled_on: scheduled_on.map(|d| d.to_string()).unwrap_or_default(),
            passed: scheduled_on.is_some_and(|d| d < today),
            scheduled_for,
            warehouse_id,
            warehouse_label,
        };
        if row.scheduled_for.is_some() {
            scheduled.push(row);
        } else {
            unscheduled.push(row);
        }
    }
    // A date missing, malformed or outside the window is answered with that order's window.
    // (A date both missing and malformed says so once: a sentence is said once.)
    let failed = failed.map(|(id, errors, date)| {
        let dated = errors.reasons().iter().any(|e| e.code.starts_with("scheduled_for_"));
        match unscheduled.iter().chain(&scheduled).find(|r| r.order_id == id) {
            Some(row) if dated => {
                let sentence = row.date_sentence.clone();
                (id, errors.worded("scheduled_for", sentence), date)
            }
            _ => (id, errors, date),
        }
    });
    let page = CollectionsPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        status: query.status().map_or("", CollectionStatus::as_str).to_owned(),
        unscheduled,
        scheduled,
        warehouses: warehouses.into_iter().map(|w| (w.id, w.label)).collect(),
        notice,
        failed,
    };
    Ok(render(status, &page))
}

async fn collections_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
    Query(query): Query<ListQuery>,
) -> Result<Response, PageError> {
    collections_filtered(&state, &session, StatusCode::OK, flash.said(), None, &query).await
}

/// The orders the filter keeps (the first [`CSV_ROWS`] in buyer-window order) as CSV: the
/// order, its listing, the buyer's window, and the collection's day and warehouse.
async fn collections_csv(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<ListQuery>,
) -> Result<Response, PageError> {
    let (orders, _) = collections::list(&state.core, &session.actor(), query.query(), CSV_ROWS, 0).await?;
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "order",
        "listing_id",
        "item",
        "quantity",
        "window_start",
        "window_end",
        "status",
        "collection_date",
        "warehouse",
        "collection_id",
    ])
    .map_err(PageError::internal)?;
    for order in orders {
        let title = super::pages::cell(&order.title);
        let status = match order.status() {
            CollectionStatus::Unscheduled => "To schedule",
            CollectionStatus::Scheduled => "Scheduled",
        };
        let c = order.collection.as_ref();
        let warehouse = c.map(|c| c.warehouse_label.clone()).unwrap_or_default();
        out.write_record([
            order_reference(order.order_id),
            order.listing_id.to_string(),
            title,
            order.quantity.to_string(),
            order.window.start.to_string(),
            order.window.end.to_string(),
            status.to_owned(),
            c.map(|c| c.scheduled_for.clone()).unwrap_or_default(),
            super::pages::cell(&warehouse),
            c.map(|c| c.id.clone()).unwrap_or_default(),
        ])
        .map_err(PageError::internal)?;
    }
    let csv = out.into_inner().map_err(|e| PageError::internal(e.into_error()))?;
    Ok(super::pages::csv_download("collections", &session.record.brand_slug, csv))
}

#[derive(Debug, Deserialize)]
struct ScheduleForm {
    #[serde(default)]
    order_id: String,
    #[serde(default)]
    scheduled_for: String,
    #[serde(default)]
    warehouse_id: String,
}

async fn schedule(State(state): State<AppState>, posted: AdminForm<ScheduleForm>) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let order_id = form.order_id.trim().parse::<i64>().map_err(|_| PageError::BadForm)?;
    let mut body = object(json!({"order_id": order_id, "scheduled_for": form.scheduled_for}));
    if !form.warehouse_id.is_empty() {
        body.insert("warehouse_id".to_owned(), Value::String(form.warehouse_id));
    }
    let errors = match CollectionRequest::parse(&body) {
        Ok(request) => match collections::schedule(&state.core, &admin, &request).await {
            Ok(c) => {
                let number = u64::try_from(c.order_id).unwrap_or_default();
                return Ok(Notice::CollectionScheduled.redirect_with(
                    number,
                    COLLECTIONS,
                    state.config.secure_cookies(),
                ));
            }
            Err(refused) => reasons_on("scheduled_for", refused)?,
        },
        Err(errors) => errors,
    };
    let failed = (order_id, FieldErrors::of(&COLLECTION_BODY, errors), form.scheduled_for);
    collections_view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, Some(failed)).await
}

/// The query of a move's confirmation step: the new day and, optionally, the warehouse.
#[derive(Debug, Deserialize)]
struct MoveForm {
    #[serde(default)]
    scheduled_for: String,
    #[serde(default)]
    warehouse_id: String,
}

impl MoveForm {
    fn read(&self) -> Result<CollectionMove, Vec<crate::domain::FieldError>> {
        let mut body = object(json!({"scheduled_for": self.scheduled_for}));
        if !self.warehouse_id.is_empty() {
            body.insert("warehouse_id".to_owned(), Value::String(self.warehouse_id.clone()));
        }
        CollectionMove::parse(&body)
    }
}

/// What a refused change says on the collections page: beside the row's date, or above the
/// lists for a collection gone meanwhile.
async fn refused_change(
    state: &AppState,
    session: &LiveSession,
    order_id: i64,
    errors: Vec<crate::domain::FieldError>,
    date: String,
) -> Result<Response, PageError> {
    let failed = (order_id, FieldErrors::of(&COLLECTION_MOVE_BODY, errors), date);
    collections_view(state, session, StatusCode::UNPROCESSABLE_ENTITY, None, Some(failed)).await
}

/// The reasons of a refused change, or the page's error for a failure of the service.
fn reasons(refused: ChangeError) -> Result<Vec<crate::domain::FieldError>, PageError> {
    reasons_on("scheduled_for", refused)
}

/// The collection `id`'s order, for a refusal about it (0 when it is gone: the error then
/// shows above the lists).
async fn order_of(state: &AppState, session: &LiveSession, id: &str) -> Result<i64, PageError> {
    Ok(collections::scheduled(&state.core, &session.actor(), id).await?.map_or(0, |o| o.order_id))
}

fn warehouse_words(collection: &Collection) -> String {
    if collection.warehouse_label.is_empty() {
        String::new()
    } else {
        format!(" from {}", collection.warehouse_label)
    }
}

/// The step before a move: the new day checked (as the move would check it), then asked.
async fn confirm_move(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    asked: Asked,
    Path(id): Path<String>,
    Query(form): Query<MoveForm>,
) -> Result<Response, PageError> {
    let request = match form.read() {
        Ok(request) => request,
        Err(errors) => {
            let order_id = order_of(&state, &session, &id).await?;
            return refused_change(&state, &session, order_id, errors, form.scheduled_for).await;
        }
    };
    let (now, after) = match collections::preview_move(&state.core, &admin, &id, &request).await {
        Ok(both) => both,
        Err(ChangeError::NotFound) => return Ok(confirm::elsewhere(asked, COLLECTIONS)),
        Err(refused) => {
            let order_id = order_of(&state, &session, &id).await?;
            return refused_change(&state, &session, order_id, reasons(refused)?, form.scheduled_for).await;
        }
    };
    let was = now.scheduled_for.parse().map_or_else(|_| now.scheduled_for.clone(), day_words);
    let to = after.scheduled_for.parse().map_or_else(|_| after.scheduled_for.clone(), day_words);
    let mut fields = vec![("scheduled_for".to_owned(), after.scheduled_for.clone())];
    if let Some(warehouse) = &request.warehouse_id {
        fields.push(("warehouse_id".to_owned(), warehouse.clone()));
    }
    Ok(confirm::page(
        &session,
        asked,
        Confirm {
            title: format!("Move the collection of order {} to {to}?", now.order_reference),
            lines: vec![
                format!("It is booked for {was}{} now.", warehouse_words(&now)),
                format!("It will be collected on {to}{}.", warehouse_words(&after)),
                "If the buyer ordered on the marketplace, they are emailed the new day.".to_owned(),
                "Your webhook endpoint is sent the collection again with the new day.".to_owned(),
            ],
            action: format!("/dashboard/collections/{id}/move"),
            button: "Move collection".to_owned(),
            cancel: COLLECTIONS.to_owned(),
            keep: format!("No, keep {was}"),
            fields,
        },
    ))
}

async fn move_collection(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<MoveForm>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let refused = match form.read() {
        Ok(request) => match collections::move_to(&state.core, &admin, &id, &request).await {
            Ok(moved) => {
                let number = u64::try_from(moved.order_id).unwrap_or_default();
                return Ok(Notice::CollectionMoved.redirect_with(number, COLLECTIONS, state.config.secure_cookies()));
            }
            Err(refused) => reasons(refused)?,
        },
        Err(errors) => errors,
    };
    let order_id = order_of(&state, &session, &id).await?;
    refused_change(&state, &session, order_id, refused, form.scheduled_for).await
}

/// The step before a cancel.
async fn confirm_cancel(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    asked: Asked,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let now = match collections::preview_cancel(&state.core, &admin, &id).await {
        Ok(now) => now,
        Err(ChangeError::NotFound) => return Ok(confirm::elsewhere(asked, COLLECTIONS)),
        Err(refused) => {
            let order_id = order_of(&state, &session, &id).await?;
            return refused_change(&state, &session, order_id, reasons(refused)?, String::new()).await;
        }
    };
    let was = now.scheduled_for.parse().map_or_else(|_| now.scheduled_for.clone(), day_words);
    let window = match (now.buyer_window_start.parse(), now.buyer_window_end.parse()) {
        (Ok(start), Ok(end)) => BuyerWindow { start, end }.words(),
        _ => format!("{} to {}", now.buyer_window_start, now.buyer_window_end),
    };
    Ok(confirm::page(
        &session,
        asked,
        Confirm {
            title: format!("Cancel the collection of order {} on {was}?", now.order_reference),
            lines: vec![
                format!("Nothing is collected on {was}{}.", warehouse_words(&now)),
                format!(
                    "The order goes back to “To schedule”: choose another day within the buyer's window, {window}."
                ),
                "If the buyer ordered on the marketplace, they are emailed that a new day will follow.".to_owned(),
                "Your webhook endpoint is told, if it asked for cancelled collections.".to_owned(),
            ],
            action: format!("/dashboard/collections/{id}/cancel"),
            button: "Cancel collection".to_owned(),
            cancel: COLLECTIONS.to_owned(),
            keep: "No, keep the collection".to_owned(),
            fields: Vec::new(),
        },
    ))
}

async fn cancel_collection(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<super::integrations::Empty>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    match collections::cancel(&state.core, &admin, &id).await {
        Ok(cancelled) => {
            let number = u64::try_from(cancelled.order_id).unwrap_or_default();
            Ok(Notice::CollectionCancelled.redirect_with(number, COLLECTIONS, state.config.secure_cookies()))
        }
        Err(refused) => {
            let reasons = reasons(refused)?;
            let order_id = order_of(&state, &session, &id).await?;
            refused_change(&state, &session, order_id, reasons, String::new()).await
        }
    }
}
