//! The day-to-day pages: Deliveries (the webhook log, replay) and Collections (schedule a
//! date inside the buyer window). Members see them read-only; their actions are admins'.

use crate::http::routing::{get, post};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use super::confirm::{self, Confirm};
use super::extract::{require_admin, PageError, SignedIn, SignedInForm};
use super::integrations::Empty;
use super::pages::{page_number, render, when, Chrome, FieldErrors};
use crate::domain::collection::{CollectionQuery, CollectionRequest};
use crate::domain::reader::object;
use crate::domain::webhook::{DeadReplay, DeliveryStatus};
use crate::state::AppState;
use crate::usecases::marketplace::collections::{self, ScheduleError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::webhooks::ReplayError;
use crate::usecases::{warehouses, webhooks};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/deliveries", get(deliveries_page))
        .route("/deliveries/replay-dead", get(confirm_replay_dead).merge(post(replay_dead)))
        .route("/deliveries/{event_id}", get(delivery_page))
        .route("/deliveries/{event_id}/replay", post(replay))
        .route("/collections", get(collections_page).merge(post(schedule)))
}

// ---- Deliveries ----

pub struct DeliveryRow {
    pub event_id: String,
    pub event_type: String,
    pub status: &'static str,
    pub attempts: i64,
    pub last: String,
    pub next_attempt: String,
    pub created: String,
}

fn delivery_row(d: crate::store::DeliveryRecord) -> DeliveryRow {
    DeliveryRow {
        event_id: d.event_id,
        event_type: d.event_type,
        status: d.status.as_str(),
        attempts: d.attempts,
        last: answer(d.last_status_code, d.last_error),
        next_attempt: d.next_attempt_at.map(when).unwrap_or_default(),
        created: when(d.created_at),
    }
}

/// `HTTP 503`, or the failure class when there was no answer.
fn answer(status: Option<i64>, error: Option<crate::domain::webhook::FailureClass>) -> String {
    match (status, error) {
        (Some(code), _) => format!("HTTP {code}"),
        (None, Some(error)) => error.as_str().to_owned(),
        (None, None) => String::new(),
    }
}

#[derive(askama::Template)]
#[template(path = "dashboard/deliveries.html")]
pub struct DeliveriesPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub status: &'static str,
    pub rows: Vec<DeliveryRow>,
    pub total: i64,
    pub notice: Option<String>,
    /// 1-based; `pages` of [`DELIVERIES_SHOWN`], at least 1.
    pub page: i64,
    pub pages: i64,
}

#[derive(Debug, Deserialize)]
struct DeliveriesQuery {
    status: Option<String>,
    page: Option<String>,
}

/// Events a page of deliveries shows, newest first.
const DELIVERIES_SHOWN: i64 = 100;

async fn deliveries_view(
    state: &AppState,
    session: &LiveSession,
    status_filter: Option<&str>,
    page_number: i64,
    notice: Option<String>,
) -> Result<Response, PageError> {
    let status = status_filter.and_then(|s| s.parse::<DeliveryStatus>().ok());
    let offset = (page_number - 1).saturating_mul(DELIVERIES_SHOWN);
    let page = webhooks::deliveries(&state.core, &session.actor(), status, DELIVERIES_SHOWN, offset).await?;
    let pages = ((page.total + DELIVERIES_SHOWN - 1) / DELIVERIES_SHOWN).max(1);
    let rows = page.deliveries.into_iter().map(delivery_row).collect();
    let view = DeliveriesPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        status: status.map_or("any", DeliveryStatus::as_str),
        rows,
        total: page.total,
        notice,
        page: page_number,
        pages,
    };
    Ok(render(StatusCode::OK, &view))
}

async fn deliveries_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<DeliveriesQuery>,
) -> Result<Response, PageError> {
    // A page number that is not one (or past the last page) shows the first page / no rows.
    let page = page_number(query.page.as_deref(), 1_000_000);
    deliveries_view(&state, &session, query.status.as_deref(), page, None).await
}

async fn replay(
    State(state): State<AppState>,
    Path(event_id): Path<String>,
    posted: SignedInForm<Empty>,
) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let notice = match webhooks::replay(&state.core, &session.actor(), &event_id).await {
        Ok(_) => format!("Event {event_id} queued for delivery."),
        Err(ReplayError::Store(e)) => return Err(e.into()),
        Err(refused) => format!("Event {event_id} was not replayed: {}", replay_refusal(&refused)),
    };
    deliveries_view(&state, &session, None, 1, Some(notice)).await
}

async fn confirm_replay_dead(SignedIn(session): SignedIn) -> Result<Response, PageError> {
    require_admin(&session)?;
    Ok(confirm::page(
        &session,
        Confirm {
            title: "Retry every dead event?".to_owned(),
            lines: vec![
                "Every event that gave up after its last retry is queued again and sent to your endpoint now."
                    .to_owned(),
                "Your receiver may see events it already handled: deduplicate them by their event id.".to_owned(),
            ],
            action: "/dashboard/deliveries/replay-dead".to_owned(),
            button: "Retry every dead event now".to_owned(),
            cancel: "/dashboard/deliveries?status=dead".to_owned(),
        },
    ))
}

async fn replay_dead(State(state): State<AppState>, posted: SignedInForm<Empty>) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let body = object(serde_json::json!({"status": "dead"}));
    let replayed = match DeadReplay::parse(&body) {
        Ok(request) => webhooks::replay_dead(&state.core, &session.actor(), &request).await,
        Err(errors) => Err(ReplayError::Invalid(errors)),
    };
    let notice = match replayed {
        Ok(n) => format!("{n} dead event(s) queued for delivery."),
        Err(ReplayError::Store(e)) => return Err(e.into()),
        Err(refused) => format!("Nothing was replayed: {}", replay_refusal(&refused)),
    };
    deliveries_view(&state, &session, Some("dead"), 1, Some(notice)).await
}

/// Why a replay was refused, in words (a store failure is never one of them: it is the
/// error page's).
fn replay_refusal(refused: &ReplayError) -> String {
    match refused {
        ReplayError::EventNotFound => "there is no such event.".to_owned(),
        ReplayError::NotConfigured => "set up and enable a webhook endpoint in Integrations first.".to_owned(),
        ReplayError::Invalid(errors) => errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>().join(" "),
        ReplayError::Store(_) => "the service could not do it.".to_owned(),
    }
}

pub struct AttemptRow {
    pub at: String,
    pub url: String,
    pub outcome: String,
    pub duration_ms: i64,
}

#[derive(askama::Template)]
#[template(path = "dashboard/delivery.html")]
pub struct DeliveryPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub event: DeliveryRow,
    pub attempts: Vec<AttemptRow>,
}

async fn delivery_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(event_id): Path<String>,
) -> Result<Response, PageError> {
    let (record, attempts) = match webhooks::delivery(&state.core, &session.actor(), &event_id).await {
        Ok(found) => found,
        Err(webhooks::DeliveryError::EventNotFound) => return Err(PageError::NotFound),
        Err(webhooks::DeliveryError::Store(e)) => return Err(e.into()),
    };
    let attempts = attempts
        .into_iter()
        .map(|a| AttemptRow {
            at: when(a.attempted_at),
            url: a.url,
            outcome: answer(a.status_code, a.error),
            duration_ms: a.duration_ms,
        })
        .collect();
    let page = DeliveryPage {
        chrome: Chrome::signed_in(&session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        event: delivery_row(record),
        attempts,
    };
    Ok(render(StatusCode::OK, &page))
}

// ---- Collections ----

pub struct CollectionRow {
    pub order_id: i64,
    pub reference: String,
    pub listing_id: i64,
    pub quantity: i64,
    pub window_start: String,
    pub window_end: String,
    /// The buyer window as people read it: `30 Nov to 9 Dec 2026`.
    pub window_words: String,
    /// `None` while unscheduled.
    pub scheduled_for: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/collections.html")]
pub struct CollectionsPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub unscheduled: Vec<CollectionRow>,
    pub scheduled: Vec<CollectionRow>,
    /// `(id, label, default)`.
    pub warehouses: Vec<(String, String, bool)>,
    pub notice: Option<String>,
    /// The order the errors are about, and the errors.
    pub failed: Option<(i64, FieldErrors)>,
}

impl CollectionsPage {
    /// The reasons shown beside the date field of `order_id`'s row.
    pub fn error_for(&self, order_id: &i64) -> Option<String> {
        self.failed.as_ref().filter(|(id, _)| id == order_id).map(|(_, errors)| errors.all())
    }
}

const COLLECTIONS_SHOWN: i64 = 100;

/// `30 Nov to 9 Dec 2026` (the year once when both days share it).
fn window_words(start: chrono::NaiveDate, end: chrono::NaiveDate) -> String {
    use chrono::Datelike;
    let first = if start.year() == end.year() { start.format("%-d %b") } else { start.format("%-d %b %Y") };
    format!("{first} to {}", end.format("%-d %b %Y"))
}

async fn collections_view(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    notice: Option<String>,
    failed: Option<(i64, FieldErrors)>,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let (orders, _) = collections::list(&state.core, &actor, CollectionQuery::Any, COLLECTIONS_SHOWN, 0).await?;
    let (mut unscheduled, mut scheduled) = (Vec::new(), Vec::new());
    for order in orders {
        let row = CollectionRow {
            order_id: order.order_id,
            reference: crate::domain::order::order_reference(order.order_id),
            listing_id: order.listing_id,
            quantity: order.quantity,
            window_start: order.window.start.to_string(),
            window_end: order.window.end.to_string(),
            window_words: window_words(order.window.start, order.window.end),
            scheduled_for: order.collection.as_ref().map(|c| c.scheduled_for.clone()),
        };
        if row.scheduled_for.is_some() {
            scheduled.push(row);
        } else {
            unscheduled.push(row);
        }
    }
    // A date outside the window is answered with that order's window, in words.
    let failed = failed.map(|(id, FieldErrors(mut errors))| {
        if let Some(row) = unscheduled.iter().find(|r| r.order_id == id) {
            for e in errors.iter_mut().filter(|e| e.code == "scheduled_for_invalid") {
                e.message = format!("Choose a date from {}: the buyer's collection window.", row.window_words);
            }
        }
        (id, FieldErrors(errors))
    });
    let page = CollectionsPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        unscheduled,
        scheduled,
        warehouses: warehouses::list(&state.core, &actor)
            .await?
            .into_iter()
            .map(|w| (w.id, w.label, w.is_default))
            .collect(),
        notice,
        failed,
    };
    Ok(render(status, &page))
}

async fn collections_page(State(state): State<AppState>, SignedIn(session): SignedIn) -> Result<Response, PageError> {
    collections_view(&state, &session, StatusCode::OK, None, None).await
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

async fn schedule(State(state): State<AppState>, posted: SignedInForm<ScheduleForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    require_admin(&session)?;
    let order_id = form.order_id.trim().parse::<i64>().map_err(|_| PageError::BadForm)?;
    let mut body = object(json!({"order_id": order_id, "scheduled_for": form.scheduled_for}));
    if !form.warehouse_id.is_empty() {
        body.insert("warehouse_id".to_owned(), Value::String(form.warehouse_id));
    }
    let field = |code: &str| vec![crate::domain::FieldError::new("scheduled_for", code)];
    let errors = match CollectionRequest::parse(&body) {
        Ok(request) => match collections::schedule(&state.core, &session.actor(), &request).await {
            Ok(c) => {
                let notice = format!("Collection of {} scheduled for {}.", c.order_reference, c.scheduled_for);
                return collections_view(&state, &session, StatusCode::OK, Some(notice), None).await;
            }
            Err(ScheduleError::OutsideWindow) => field("scheduled_for_invalid"),
            Err(ScheduleError::UnknownWarehouse) => field("warehouse_id_invalid"),
            Err(ScheduleError::AlreadyScheduled) => field("collection_exists"),
            Err(ScheduleError::OrderNotFound) => field("order_not_found"),
            Err(ScheduleError::Store(e)) => return Err(e.into()),
            Err(e @ ScheduleError::Internal(_)) => return Err(PageError::internal(e)),
        },
        Err(errors) => errors,
    };
    collections_view(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, None, Some((order_id, FieldErrors(errors))))
        .await
}
