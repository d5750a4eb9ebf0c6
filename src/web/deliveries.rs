//! Deliveries: the webhook log, an event's payload and answers, replay. Members see them
//! read-only; their actions are admins'. Actions answer post/redirect/get with a notice;
//! a Replay sent by htmx answers its row alone, in its new state.

use crate::http::routing::{get, post};
use crate::usecases::refusal::Refusal;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Router;
use serde::Deserialize;
use serde_json::Value;

use super::confirm::{self, Asked, Confirm};
use super::extract::{AdminForm, PageError, SignedIn, SignedInAdmin};
use super::integrations::Empty;
use super::notice::{Flash, Notice};
use super::pages::{page_number, render, when, Chrome, FieldErrors};
use crate::domain::event::EventType;
use crate::domain::reader::object;
use crate::domain::settings::TimeZone;
use crate::domain::view::DeliveryRecord;
use crate::domain::webhook::{DeadReplay, DeliveryStatus, FailureClass, BULK_REPLAY_BODY};
use crate::state::AppState;
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::webhooks;
use crate::usecases::webhooks::ReplayError;

const DELIVERIES: &str = "/dashboard/deliveries";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/deliveries", get(deliveries_page))
        .route("/deliveries/replay-dead", get(confirm_replay_dead).merge(post(replay_dead)))
        .route("/deliveries/{event_id}", get(delivery_page))
        .route("/deliveries/{event_id}/replay", post(replay))
}

// ---- Deliveries ----

pub struct DeliveryRow {
    pub event_id: String,
    /// The wire name (`collection.scheduled`), shown as code on the event's page.
    pub event_type: String,
    /// The type in words.
    pub kind: String,
    /// The status in words.
    pub status: &'static str,
    pub attempts: i64,
    pub last: String,
    pub next_attempt: String,
    pub created: String,
    /// What the Replay just sent by htmx did (or why it did not), shown in the row.
    pub note: Option<String>,
    /// True when `note` says why nothing was done.
    pub refused: bool,
}

fn delivery_row(d: DeliveryRecord, zone: TimeZone) -> DeliveryRow {
    DeliveryRow {
        event_id: d.event_id,
        kind: EventType::words_of(&d.event_type).to_owned(),
        event_type: d.event_type,
        status: d.status.words(),
        attempts: d.attempts,
        last: answer(d.last_status_code, d.last_error),
        next_attempt: d.next_attempt_at.map(|at| when(at, zone)).unwrap_or_default(),
        created: when(d.created_at, zone),
        note: None,
        refused: false,
    }
}

/// `HTTP 503`, or why there was no answer, in words.
fn answer(status: Option<i64>, error: Option<FailureClass>) -> String {
    match (status, error) {
        (Some(code), _) => format!("HTTP {code}"),
        (None, Some(error)) => failure_words(error).to_owned(),
        (None, None) => String::new(),
    }
}

/// A failure without an HTTP answer, as people read it.
fn failure_words(error: FailureClass) -> &'static str {
    match error {
        FailureClass::Timeout => "No answer in time",
        FailureClass::ConnectionFailed => "Could not connect",
        FailureClass::AddressRefused => "Address not allowed",
        FailureClass::HttpStatus => "Refused",
        FailureClass::RedirectNotFollowed => "Redirect not followed",
        FailureClass::InvalidUrl => "The URL cannot be used",
        FailureClass::Undecryptable => "Not sent: the event does not open with this server's data key",
        FailureClass::NoEndpoint => "Waiting: no enabled endpoint",
    }
}

#[derive(askama::Template)]
#[template(path = "dashboard/deliveries.html")]
pub struct DeliveriesPage {
    pub chrome: Chrome,
    /// The filter's choices: the query string's value and its words.
    pub statuses: Vec<(&'static str, &'static str)>,
    pub csrf: String,
    pub is_admin: bool,
    pub status: &'static str,
    pub rows: Vec<DeliveryRow>,
    pub total: i64,
    pub notice: Option<String>,
    /// Why the last action did nothing, in a sentence.
    pub error: Option<String>,
    /// The status filtered on, in words.
    pub status_words: Option<&'static str>,
    /// 1-based; `pages` of [`DELIVERIES_SHOWN`], at least 1.
    pub page: i64,
    pub pages: i64,
}

/// One row of Deliveries alone: the answer to a Replay sent by htmx.
#[derive(askama::Template)]
#[template(path = "dashboard/delivery_row.html")]
pub struct DeliveryRowPartial {
    pub csrf: String,
    pub is_admin: bool,
    pub status: &'static str,
    pub page: i64,
    pub row: DeliveryRow,
}

#[derive(Debug, Deserialize)]
struct DeliveriesQuery {
    status: Option<String>,
    page: Option<String>,
}

/// Events a page of deliveries shows, newest first.
const DELIVERIES_SHOWN: i64 = 100;
/// The highest page number a link may name.
const LAST_PAGE: i64 = 1_000_000;

/// The list's status filter: a status, or `None` for any.
fn status_filter(text: Option<&str>) -> Option<DeliveryStatus> {
    text.and_then(|s| s.parse::<DeliveryStatus>().ok())
}

/// Where a Replay leads back to: the list as it was filtered and paged.
fn deliveries_address(status: Option<DeliveryStatus>, page: i64) -> String {
    match (status, page) {
        (None, 1) => DELIVERIES.to_owned(),
        (status, page) => format!("{DELIVERIES}?status={}&page={page}", status.map_or("any", DeliveryStatus::as_str)),
    }
}

async fn deliveries_view(
    state: &AppState,
    session: &LiveSession,
    http_status: StatusCode,
    status: Option<DeliveryStatus>,
    page_number: i64,
    notice: Option<String>,
    error: Option<String>,
) -> Result<Response, PageError> {
    let offset = (page_number - 1).saturating_mul(DELIVERIES_SHOWN);
    let page = webhooks::deliveries(&state.core, &session.actor(), status, DELIVERIES_SHOWN, offset).await?;
    let pages = ((page.total + DELIVERIES_SHOWN - 1) / DELIVERIES_SHOWN).max(1);
    let rows = page.deliveries.into_iter().map(|d| delivery_row(d, session.zone())).collect();
    let view = DeliveriesPage {
        statuses: std::iter::once(("any", "Any status"))
            .chain(DeliveryStatus::ALL.iter().map(|s| (s.as_str(), s.words())))
            .collect(),
        status_words: status.map(DeliveryStatus::words),
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        status: status.map_or("any", DeliveryStatus::as_str),
        rows,
        total: page.total,
        notice,
        error,
        page: page_number,
        pages,
    };
    Ok(render(http_status, &view))
}

async fn deliveries_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
    Query(query): Query<DeliveriesQuery>,
) -> Result<Response, PageError> {
    // A page number that is not one (or past the last page) shows the first page / no rows.
    let page = page_number(query.page.as_deref(), LAST_PAGE);
    let status = status_filter(query.status.as_deref());
    deliveries_view(&state, &session, StatusCode::OK, status, page, flash.said(), None).await
}

/// The Replay form: where it was posted from, to return there.
#[derive(Debug, Deserialize)]
struct ReplayForm {
    /// `event` from an event's page; else the list, filtered and paged as below.
    #[serde(default)]
    back: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    page: String,
}

/// True for a request htmx sent (it swaps part of the page with the answer).
fn from_htmx(headers: &HeaderMap) -> bool {
    headers.get("hx-request").is_some_and(|v| v.as_bytes() == b"true")
}

async fn replay(
    State(state): State<AppState>,
    Path(event_id): Path<String>,
    headers: HeaderMap,
    posted: AdminForm<ReplayForm>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let status = status_filter(Some(form.status.as_str()));
    let page = page_number(Some(form.page.as_str()), LAST_PAGE);
    let replayed = webhooks::replay(&state.core, &admin, &event_id).await;
    let refused = match replayed {
        Ok(record) if from_htmx(&headers) => {
            let mut row = delivery_row(record, session.zone());
            row.note = Some("Queued: sending again now.".to_owned());
            return Ok(row_partial(&session, status, page, row));
        }
        Ok(record) => {
            let to = match form.back.as_str() {
                "event" => format!("{DELIVERIES}/{}", path_segment(&record.event_id)),
                _ => deliveries_address(status, page),
            };
            return Ok(Notice::EventQueued.redirect(&to, state.config.secure_cookies()));
        }
        Err(ReplayError::EventNotFound) => return Err(PageError::NotFound),
        Err(ReplayError::Store(e)) => return Err(e.into()),
        Err(refused) => refused,
    };
    let sentence = refusal_sentence(refused)?;
    if from_htmx(&headers) {
        // The row as it stands, saying why it was not queued (200, so htmx swaps it in).
        let (record, _) = match webhooks::delivery(&state.core, &admin, &event_id).await {
            Ok(found) => found,
            Err(webhooks::DeliveryError::EventNotFound) => return Err(PageError::NotFound),
            Err(webhooks::DeliveryError::Store(e)) => return Err(e.into()),
        };
        let mut row = delivery_row(record, session.zone());
        (row.note, row.refused) = (Some(sentence), true);
        return Ok(row_partial(&session, status, page, row));
    }
    deliveries_view(&state, &session, StatusCode::CONFLICT, status, page, None, Some(sentence)).await
}

/// What a refused replay says: the reasons of its form, or the catalogue's sentence; a
/// failure of the service is the page's error.
fn refusal_sentence(refused: ReplayError) -> Result<String, PageError> {
    match Refusal::from(refused) {
        Refusal::Invalid(errors) => Ok(FieldErrors::of(&BULK_REPLAY_BODY, errors).all()),
        Refusal::Refused(outcome) => Ok(outcome.message().into_owned()),
        failed => Err(failed.into()),
    }
}

/// An event id as one segment of a path (ids are the service's own; encoded all the same).
fn path_segment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect()
}

fn row_partial(session: &LiveSession, status: Option<DeliveryStatus>, page: i64, row: DeliveryRow) -> Response {
    let partial = DeliveryRowPartial {
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        status: status.map_or("any", DeliveryStatus::as_str),
        page,
        row,
    };
    let mut response = render(StatusCode::OK, &partial);
    response.headers_mut().insert(header::VARY, header::HeaderValue::from_static("HX-Request"));
    response
}

async fn confirm_replay_dead(
    SignedInAdmin { session, .. }: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    Ok(confirm::page(
        &session,
        asked,
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
            keep: "No, back to the dead events".to_owned(),
            fields: Vec::new(),
        },
    ))
}

async fn replay_dead(State(state): State<AppState>, posted: AdminForm<Empty>) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let body = object(serde_json::json!({"status": "dead"}));
    let replayed = match DeadReplay::parse(&body) {
        Ok(request) => webhooks::replay_dead(&state.core, &admin, &request).await,
        Err(errors) => Err(ReplayError::Invalid(errors)),
    };
    let secure = state.config.secure_cookies();
    let refused = match replayed {
        Ok(0) => return Ok(Notice::NoDeadEvents.redirect(DELIVERIES, secure)),
        Ok(n) => return Ok(Notice::DeadQueued.redirect_with(n, DELIVERIES, secure)),
        Err(ReplayError::Store(e)) => return Err(e.into()),
        Err(refused) => refused,
    };
    let sentence = refusal_sentence(refused)?;
    let dead = Some(DeliveryStatus::Dead);
    deliveries_view(&state, &session, StatusCode::CONFLICT, dead, 1, None, Some(sentence)).await
}

pub struct AttemptRow {
    pub at: String,
    pub url: String,
    pub outcome: String,
    pub duration_ms: i64,
    /// The start of what the endpoint answered (at most 1 KiB), shown escaped.
    pub excerpt: Option<String>,
}

#[derive(askama::Template)]
#[template(path = "dashboard/delivery.html")]
pub struct DeliveryPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub is_admin: bool,
    pub event: DeliveryRow,
    pub attempts: Vec<AttemptRow>,
    /// The payload sent, pretty-printed; `None` when it does not open with this server's key.
    pub payload: Option<String>,
    /// True when the event waits for an enabled endpoint.
    pub no_endpoint: bool,
    pub notice: Option<String>,
}

/// The most of a payload an event's page shows, in bytes.
const PAYLOAD_SHOWN: usize = 64 * 1024;

/// The payload as people read it: JSON indented (any other bytes as text), cut at
/// [`PAYLOAD_SHOWN`].
fn pretty_payload(bytes: &[u8]) -> String {
    let mut text = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    };
    if text.len() > PAYLOAD_SHOWN {
        let mut cut = PAYLOAD_SHOWN;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (cut: the first 64 KB are shown)");
    }
    text
}

async fn delivery_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    flash: Flash,
    Path(event_id): Path<String>,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let found = webhooks::delivery(&state.core, &actor, &event_id).await;
    let payload = webhooks::payload(&state.core, &actor, &event_id).await;
    let ((record, attempts), payload) = match (found, payload) {
        (Ok(found), Ok(payload)) => (found, payload),
        (Err(webhooks::DeliveryError::EventNotFound), _) | (_, Err(webhooks::DeliveryError::EventNotFound)) => {
            return Err(PageError::NotFound)
        }
        (Err(webhooks::DeliveryError::Store(e)), _) | (_, Err(webhooks::DeliveryError::Store(e))) => {
            return Err(e.into())
        }
    };
    let attempts = attempts
        .into_iter()
        .map(|a| AttemptRow {
            at: when(a.attempted_at, session.zone()),
            url: a.url,
            outcome: answer(a.status_code, a.error),
            duration_ms: a.duration_ms,
            excerpt: a.response_excerpt,
        })
        .collect();
    let no_endpoint = record.last_error == Some(FailureClass::NoEndpoint);
    let page = DeliveryPage {
        chrome: Chrome::signed_in(&session),
        csrf: session.record.csrf_token.clone(),
        is_admin: session.is_admin(),
        event: delivery_row(record, session.zone()),
        attempts,
        payload: payload.as_deref().map(pretty_payload),
        no_endpoint,
        notice: flash.said(),
    };
    Ok(render(StatusCode::OK, &page))
}
