//! Integrations (admins): API keys (create with the API's scopes, owner and expiry; roll
//! with the API's overlap; revoke after a confirmation; a new secret shown once after a
//! redirect, `web::once`) and the webhook endpoint (URL, enabled, rotate the signing
//! secret, send a test event). Every action calls the use case the API calls, with the
//! same body.

use crate::http::routing::{get, post};
use crate::web::extract::outcome_of;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::domain::reader::object;

use super::confirm::{self, Asked, Confirm};
use super::extract::{record_id, AdminForm, PageError, SignedInAdmin};
use super::notice::{Flash, Notice};
use super::once::{self, Made, Shown as Once};
use super::pages::{render, start_of_day, today, when, when_or_never, Chrome, FieldErrors, SummaryLink};
use crate::domain::event::{EventType, DEFAULT_SUBSCRIPTION, SUBSCRIBABLE};
use crate::domain::key_request::{
    key_prefix, KeyRequest, RollRequest, DEFAULT_ROLL_HOURS, KEY_BODY, MAX_LABEL_LEN, MAX_ROLL_HOURS, ROLL_BODY,
};
use crate::domain::outcome::Outcome;
use crate::domain::settings::TimeZone;
use crate::domain::user::{Admin, MemberStatus};
use crate::domain::view::KeyRecord;
use crate::domain::webhook::{SecretRotation, WebhookPatch, ROTATION_BODY, WEBHOOK_BODY};
use crate::state::AppState;
use crate::usecases::people::keys::{self, CreateKeyError, RevokeKeyError, RollKeyError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::people::team;
use crate::usecases::webhooks::{self, ConfigureError, RotateError, TestEventError};

const PAGE: &str = "/dashboard/integrations";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/integrations", get(page))
        .route("/integrations/keys/new", get(new_key_page))
        .route("/integrations/keys", post(create_key))
        .route("/integrations/keys/{id}/revoke", get(confirm_revoke).merge(post(revoke_key)))
        .route("/integrations/keys/{id}/roll", get(roll_page).merge(post(roll_key)))
        .route("/integrations/webhook", post(save_webhook))
        .route("/integrations/webhook/rotate", get(confirm_rotate).merge(post(rotate_secret)))
        .route("/integrations/webhook/test", post(send_test))
}

/// A key as its row shows it.
pub struct KeyRow {
    pub id: i64,
    pub label: String,
    pub prefix: String,
    pub scopes: String,
    pub owner: String,
    pub created: String,
    /// "never", or when it stops (a rolled key: the end of its overlap).
    pub expires: String,
    /// "never", or when and from which address.
    pub last_used: String,
    pub active: bool,
}

#[derive(askama::Template)]
#[template(path = "dashboard/integrations.html")]
pub struct IntegrationsPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub keys: Vec<KeyRow>,
    /// A key just created or rolled: its label and secret, shown this once.
    pub new_key: Option<(String, String)>,
    pub webhook_url: String,
    pub webhook_enabled: bool,
    /// The event types the endpoint may receive, in words, each ticked or not.
    pub event_choices: Vec<EventChoice>,
    /// A signing secret just created or rotated, shown this once.
    pub signing_secret: Option<String>,
    pub notice: Option<String>,
    pub errors: FieldErrors,
}

/// One event type an endpoint may ask for, as the webhook form's checkbox shows it.
pub struct EventChoice {
    /// The type's name (the checkbox's value).
    pub value: &'static str,
    /// What it means, in words.
    pub words: &'static str,
    pub ticked: bool,
}

impl EventChoice {
    /// Every type an endpoint may ask for, ticked if `ticked` names it.
    fn all(ticked: &[String]) -> Vec<Self> {
        SUBSCRIBABLE
            .iter()
            .map(|value| Self { value, words: EventType::words_of(value), ticked: ticked.iter().any(|t| t == value) })
            .collect()
    }
}

/// A member who may own a key, as the form's choice shows them.
pub struct OwnerChoice {
    pub id: String,
    pub name: String,
}

impl NewKeyPage {
    /// The error summary, each reason linking to its field (the scopes to their first box).
    pub fn error_summary(&self) -> Vec<SummaryLink> {
        self.errors.summary(|field| {
            match field {
                "label" => "label",
                "scopes" => "scope-read",
                "user_id" => "user_id",
                "expires_at" => "expires_at",
                _ => "key-form",
            }
            .to_owned()
        })
    }
}

#[derive(askama::Template)]
#[template(path = "dashboard/new_key.html")]
pub struct NewKeyPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub form: KeyForm,
    pub owners: Vec<OwnerChoice>,
    pub max_label: usize,
    /// Tomorrow, the earliest expiry the date field offers (`YYYY-MM-DD`).
    pub tomorrow: String,
    /// The brand's time zone, in which the expiry date begins.
    pub zone: &'static str,
    pub errors: FieldErrors,
}

#[derive(askama::Template)]
#[template(path = "dashboard/roll_key.html")]
pub struct RollKeyPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub id: i64,
    pub name: String,
    pub prefix: String,
    pub hours: String,
    pub max_hours: i64,
    pub errors: FieldErrors,
}

/// What to show besides the current keys and endpoint.
#[derive(Default)]
struct Shown {
    new_key: Option<(String, String)>,
    signing_secret: Option<String>,
    notice: Option<String>,
    errors: FieldErrors,
    /// The form as posted (a refused form keeps it).
    posted: Option<WebhookForm>,
}

/// `never`, or the time.
fn key_active(key: &KeyRecord, now: chrono::DateTime<Utc>) -> bool {
    crate::domain::key_request::key_active(key.revoked_at.map(|t| t.get()), key.expires_at.map(|t| t.get()), now)
}

async fn integrations(
    state: &AppState,
    session: &LiveSession,
    admin: &Admin,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, PageError> {
    let now = Utc::now();
    let members = team::members(&state.core, admin).await?;
    let owner = |user_id: i64| {
        members.iter().find(|m| m.id == user_id).map_or_else(|| "a former member".to_owned(), |m| m.name.clone())
    };
    let zone = session.zone();
    let keys = keys::keys(&state.core, admin)
        .await?
        .into_iter()
        .map(|k| KeyRow {
            active: key_active(&k, now),
            id: k.id,
            prefix: key_prefix(&k.lookup),
            scopes: k.scopes.replace(',', ", "),
            owner: owner(k.user_id),
            created: when(k.created_at.get(), zone),
            expires: when_or_never(k.expires_at.map(|t| t.get()), zone),
            last_used: match (k.last_used_at, k.last_used_ip) {
                (Some(at), Some(ip)) => format!("{} from {ip}", when(at.get(), zone)),
                (at, _) => when_or_never(at.map(|t| t.get()), zone),
            },
            label: k.label,
        })
        .collect();
    let endpoint = webhooks::endpoint(&state.core, admin).await?;
    let stored = || match &endpoint {
        Some(e) => WebhookForm {
            url: e.url.clone(),
            enabled: true,
            event_types: e.event_types().into_iter().map(str::to_owned).collect(),
        }
        .with_enabled(e.enabled),
        None => WebhookForm {
            url: String::new(),
            enabled: true,
            event_types: DEFAULT_SUBSCRIPTION.iter().map(|t| t.as_str().to_owned()).collect(),
        },
    };
    let form = shown.posted.unwrap_or_else(stored);
    let page = IntegrationsPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        keys,
        new_key: shown.new_key,
        webhook_url: form.url,
        webhook_enabled: form.enabled,
        event_choices: EventChoice::all(&form.event_types),
        signing_secret: shown.signing_secret,
        notice: shown.notice,
        errors: shown.errors,
    };
    Ok(render(status, &page))
}

/// The page; after a key was created or rolled, its secret this once (`web::once`).
async fn page(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    flash: Flash,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let secret = Once::take(&state.core, &session, &headers)?
        .filter(|s| matches!(s.made, Made::KeyCreated | Made::KeyRolled | Made::SigningSecret));
    let shown = match secret {
        Some(secret) if secret.made == Made::SigningSecret => Shown {
            notice: Some(flash.text().unwrap_or(secret.made.text()).to_owned()),
            signing_secret: Some(secret.secret),
            ..Shown::default()
        },
        Some(secret) => Shown {
            notice: Some(secret.made.text().to_owned()),
            new_key: Some((secret.name, secret.secret)),
            ..Shown::default()
        },
        None => Shown { notice: flash.text().map(str::to_owned), ..Shown::default() },
    };
    let mut response = integrations(&state, &session, &admin, StatusCode::OK, shown).await?;
    if once::carried(&headers) {
        once::spend(&mut response);
    }
    Ok(response)
}

/// The brand's active key `id` names, if any.
async fn active_key(state: &AppState, admin: &Admin, id: &str) -> Result<Option<KeyRecord>, PageError> {
    let Ok(id) = record_id(id) else { return Ok(None) };
    let now = Utc::now();
    Ok(keys::keys(&state.core, admin).await?.into_iter().find(|k| k.id == id && key_active(k, now)))
}

/// “Label”, or the prefix of a key without one.
fn key_name(key: &KeyRecord) -> String {
    if key.label.is_empty() {
        key_prefix(&key.lookup)
    } else {
        format!("“{}”", key.label)
    }
}

async fn confirm_revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedInAdmin { session, admin }: SignedInAdmin,
    asked: Asked,
) -> Result<Response, PageError> {
    let Some(key) = active_key(&state, &admin, &id).await? else {
        return Ok(confirm::elsewhere(asked, PAGE));
    };
    Ok(confirm::page(
        &session,
        asked,
        Confirm {
            title: format!("Revoke the key {}?", key_name(&key)),
            lines: vec![
                format!(
                    "Every request signed with the key {} is refused from now on, on every node.",
                    key_prefix(&key.lookup)
                ),
                "Anything still using it stops working: give it a new key first (Roll, or Create key).".to_owned(),
                "A revoked key cannot be brought back.".to_owned(),
            ],
            action: format!("{PAGE}/keys/{}/revoke", key.id),
            button: "Revoke key".to_owned(),
            cancel: PAGE.to_owned(),
            keep: "No, keep the key".to_owned(),
            fields: Vec::new(),
        },
    ))
}

async fn confirm_rotate(SignedInAdmin { session, .. }: SignedInAdmin, asked: Asked) -> Result<Response, PageError> {
    Ok(confirm::page(
        &session,
        asked,
        Confirm {
            title: "Rotate the webhook signing secret?".to_owned(),
            lines: vec![
                "A new signing secret is made and shown once.".to_owned(),
                "Deliveries are signed with the new secret at once: update your receiver with it straight away."
                    .to_owned(),
            ],
            action: format!("{PAGE}/webhook/rotate"),
            button: "Rotate secret now".to_owned(),
            cancel: PAGE.to_owned(),
            keep: "No, keep the current secret".to_owned(),
            fields: Vec::new(),
        },
    ))
}

/// The create form as posted: the API's fields (`label`, `scopes`, `user_id`,
/// `expires_at`), read from repeated pairs (`scopes` is two checkboxes).
#[derive(Debug, Clone)]
pub struct KeyForm {
    pub label: String,
    pub read: bool,
    pub write: bool,
    pub user_id: String,
    pub expires_at: String,
}

impl KeyForm {
    fn blank(session: &LiveSession) -> Self {
        Self {
            label: String::new(),
            read: true,
            write: true,
            user_id: session.record.user_id.to_string(),
            expires_at: String::new(),
        }
    }

    fn read(pairs: &[(String, String)]) -> Self {
        let value = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
        // The form marks that it offered the checkboxes (`scopes_offered`): then none ticked
        // is a choice to refuse; a post without either leaves `scopes` out, the API's default.
        let offered = pairs.iter().any(|(k, _)| k == "scopes" || k == "scopes_offered");
        let scope = |scope: &str| !offered || pairs.iter().any(|(k, v)| k == "scopes" && v == scope);
        Self {
            label: value("label"),
            read: scope("read"),
            write: scope("write"),
            user_id: value("user_id").trim().to_owned(),
            expires_at: value("expires_at").trim().to_owned(),
        }
    }

    /// The API's body: the same reader decides.
    fn body(&self, zone: TimeZone) -> Map<String, Value> {
        let scopes: Vec<&str> = [("read", self.read), ("write", self.write)]
            .into_iter()
            .filter_map(|(name, on)| on.then_some(name))
            .collect();
        let mut body = object(json!({"label": self.label, "scopes": scopes}));
        if !self.user_id.is_empty() {
            let id = self.user_id.parse::<i64>().map_or_else(|_| json!(self.user_id), |id| json!(id));
            body.insert("user_id".to_owned(), id);
        }
        if !self.expires_at.is_empty() {
            // The date field's day begins at 00:00 in the brand's zone, the instant the API
            // is given (and the key list shows, in the same zone).
            let day = chrono::NaiveDate::parse_from_str(&self.expires_at, "%Y-%m-%d").ok();
            let at = day.map_or_else(
                || self.expires_at.clone(),
                |day| start_of_day(day, zone).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            );
            body.insert("expires_at".to_owned(), json!(at));
        }
        body
    }
}

async fn key_form(
    state: &AppState,
    session: &LiveSession,
    admin: &Admin,
    status: StatusCode,
    form: KeyForm,
    errors: FieldErrors,
) -> Result<Response, PageError> {
    let owners = team::members(&state.core, admin)
        .await?
        .into_iter()
        .filter(|m| m.status == MemberStatus::Active.as_str())
        .map(|m| OwnerChoice {
            id: m.id.to_string(),
            name: if m.id == session.record.user_id { format!("{} (you)", m.name) } else { m.name },
        })
        .collect();
    let page = NewKeyPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        form,
        owners,
        max_label: MAX_LABEL_LEN,
        tomorrow: (today(session.zone()) + chrono::TimeDelta::days(1)).format("%Y-%m-%d").to_string(),
        zone: session.zone().name(),
        errors,
    };
    Ok(render(status, &page))
}

async fn new_key_page(
    State(state): State<AppState>,
    SignedInAdmin { session, admin }: SignedInAdmin,
) -> Result<Response, PageError> {
    let blank = KeyForm::blank(&session);
    key_form(&state, &session, &admin, StatusCode::OK, blank, FieldErrors::default()).await
}

/// Creates the key and answers 303 to the page, which shows its secret once.
async fn create_key(
    State(state): State<AppState>,
    posted: AdminForm<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let form = KeyForm::read(&form);
    let created = match KeyRequest::parse(&form.body(session.zone()), Utc::now()) {
        Ok(request) => keys::create(&state.core, &admin, &request).await,
        Err(errors) => Err(CreateKeyError::Invalid(errors)),
    };
    match created {
        Ok(issued) => show_once(&state, &session, Made::KeyCreated, issued.key.label, issued.secret),
        Err(CreateKeyError::Invalid(errors)) => {
            key_form(
                &state,
                &session,
                &admin,
                StatusCode::UNPROCESSABLE_ENTITY,
                form,
                FieldErrors::of(&KEY_BODY, errors),
            )
            .await
        }
        Err(CreateKeyError::Store(e)) => Err(e.into()),
        Err(CreateKeyError::TooFrequent) => {
            let errors = vec![Outcome::KeysTooFrequent.on("label")];
            key_form(&state, &session, &admin, StatusCode::CONFLICT, form, FieldErrors::of(&KEY_BODY, errors)).await
        }
        Err(e @ CreateKeyError::Random(_)) => Err(PageError::internal(e)),
    }
}

/// 303 to the page with a key's secret sealed for this session.
fn show_once(
    state: &AppState,
    session: &LiveSession,
    made: Made,
    label: String,
    secret: String,
) -> Result<Response, PageError> {
    let name = if label.is_empty() { "(no label)".to_owned() } else { label };
    Once::new(made, name, secret, String::new())
        .redirect(&state.core, session, PAGE, state.config.secure_cookies())
        .map_err(PageError::internal)
}

async fn revoke_key(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<Empty>,
) -> Result<Response, PageError> {
    let AdminForm { admin, .. } = posted;
    let id = record_id(&id)?;
    match keys::revoke(&state.core, &admin, id).await {
        Ok(_) => Ok(Notice::KeyRevoked.redirect(PAGE, state.config.secure_cookies())),
        Err(RevokeKeyError::NotFound) => Err(PageError::NotFound),
        Err(RevokeKeyError::Store(e)) => Err(e.into()),
    }
}

fn roll_form(
    session: &LiveSession,
    key: &KeyRecord,
    status: StatusCode,
    hours: String,
    errors: FieldErrors,
) -> Response {
    let page = RollKeyPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        id: key.id,
        name: key_name(key),
        prefix: key_prefix(&key.lookup),
        hours,
        max_hours: MAX_ROLL_HOURS,
        errors,
    };
    render(status, &page)
}

/// The roll's own step: how long the old key keeps working (the API's `expires_in_hours`),
/// then "Roll key".
async fn roll_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedInAdmin { session, admin }: SignedInAdmin,
) -> Result<Response, PageError> {
    let Some(key) = active_key(&state, &admin, &id).await? else {
        return Ok(Redirect::to(PAGE).into_response());
    };
    Ok(roll_form(&session, &key, StatusCode::OK, DEFAULT_ROLL_HOURS.to_string(), FieldErrors::default()))
}

#[derive(Debug, Deserialize)]
struct RollForm {
    /// Absent (an older form): the API's default.
    expires_in_hours: Option<String>,
}

/// Replaces a key with a new one (its secret shown once, after a redirect); the old one
/// keeps working for the overlap asked for, the API's rule.
async fn roll_key(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: AdminForm<RollForm>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let id = record_id(&id)?;
    let hours = form.expires_in_hours.unwrap_or_default().trim().to_owned();
    let mut body = Map::new();
    if !hours.is_empty() {
        let value = hours.parse::<i64>().map_or_else(|_| json!(hours), |n| json!(n));
        body.insert("expires_in_hours".to_owned(), value);
    }
    let rolled = match RollRequest::parse(&body) {
        Ok(request) => keys::roll(&state.core, &admin, id, &request).await,
        Err(errors) => Err(RollKeyError::Invalid(errors)),
    };
    match rolled {
        Ok(issued) => show_once(&state, &session, Made::KeyRolled, issued.key.label, issued.secret),
        Err(RollKeyError::Invalid(errors)) => match active_key(&state, &admin, &id.to_string()).await? {
            Some(key) => Ok(roll_form(
                &session,
                &key,
                StatusCode::UNPROCESSABLE_ENTITY,
                hours,
                FieldErrors::of(&ROLL_BODY, errors),
            )),
            None => Err(PageError::NotFound),
        },
        Err(RollKeyError::Store(e)) => Err(e.into()),
        Err(e @ RollKeyError::Random(_)) => Err(PageError::internal(e)),
        Err(RollKeyError::NotFound) => Err(PageError::NotFound),
        Err(refused @ RollKeyError::Inactive) => {
            let notice = Some(outcome_of(refused)?.message().into_owned());
            integrations(&state, &session, &admin, StatusCode::CONFLICT, Shown { notice, ..Shown::default() }).await
        }
    }
}

/// A form with nothing but its CSRF token.
#[derive(Debug, Deserialize)]
pub struct Empty {}

/// The webhook form: the URL, the enabled box and a box per event type.
struct WebhookForm {
    url: String,
    enabled: bool,
    event_types: Vec<String>,
}

impl WebhookForm {
    /// Reads the posted fields (a ticked box is present; each event type is one
    /// `event_types` field).
    fn read(pairs: &[(String, String)]) -> Self {
        fn field<'a>(pairs: &'a [(String, String)], name: &'a str) -> impl Iterator<Item = String> + 'a {
            pairs.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.clone())
        }
        Self {
            url: field(pairs, "url").next().unwrap_or_default(),
            enabled: field(pairs, "enabled").next().is_some(),
            event_types: field(pairs, "event_types").collect(),
        }
    }

    fn with_enabled(self, enabled: bool) -> Self {
        Self { enabled, ..self }
    }
}

async fn save_webhook(
    State(state): State<AppState>,
    posted: AdminForm<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    let AdminForm { session, admin, form } = posted;
    let form = WebhookForm::read(&form);
    let body = object(json!({"url": form.url, "enabled": form.enabled, "event_types": form.event_types}));
    let configured = match WebhookPatch::parse(&body, state.core.config.webhook_allow_http) {
        Ok(patch) => webhooks::configure(&state.core, &admin, &patch, None).await,
        Err(errors) => Err(ConfigureError::Invalid(errors)),
    };
    match configured {
        // Post/redirect/get, with the signing secret shown once when this save made it.
        Ok(configured) if configured.secret_created => {
            let secret = configured.endpoint.signing_secret;
            signing_secret_shown(&state, &session, Notice::WebhookSaved, secret)
        }
        Ok(_) => Ok(Notice::WebhookSaved.redirect(PAGE, state.config.secure_cookies())),
        Err(ConfigureError::Invalid(errors)) => {
            let shown =
                Shown { errors: FieldErrors::of(&WEBHOOK_BODY, errors), posted: Some(form), ..Shown::default() };
            integrations(&state, &session, &admin, StatusCode::UNPROCESSABLE_ENTITY, shown).await
        }
        Err(ConfigureError::Store(e)) => Err(e.into()),
        // The form names no condition, so none can fail.
        Err(e @ (ConfigureError::Randomness(_) | ConfigureError::PreconditionFailed)) => Err(PageError::internal(e)),
    }
}

/// 303 to Integrations with the webhook's new signing secret shown once there (web::once)
/// and `notice` above it.
fn signing_secret_shown(
    state: &AppState,
    session: &LiveSession,
    notice: Notice,
    secret: String,
) -> Result<Response, PageError> {
    let secure = state.config.secure_cookies();
    let once = Once::new(Made::SigningSecret, String::new(), secret, String::new());
    let mut response = once.redirect(&state.core, session, PAGE, secure).map_err(PageError::internal)?;
    super::cookies::set_notice(response.headers_mut(), notice.as_str(), secure);
    Ok(response)
}

async fn rotate_secret(State(state): State<AppState>, posted: AdminForm<Empty>) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    // The API's defaults: an empty body.
    let rotated = match SecretRotation::parse(&Map::new()) {
        Ok(rotation) => webhooks::rotate_secret(&state.core, &admin, &rotation).await,
        Err(errors) => Err(RotateError::Invalid(errors)),
    };
    let shown = match rotated {
        // Post/redirect/get: the new secret shown once on the page (web::once), the notice beside it.
        Ok(endpoint) => return signing_secret_shown(&state, &session, Notice::SecretRotated, endpoint.signing_secret),
        Err(RotateError::NotConfigured) => {
            Shown { notice: Some("Set an endpoint URL first.".to_owned()), ..Shown::default() }
        }
        Err(RotateError::Invalid(errors)) => {
            Shown { errors: FieldErrors::of(&ROTATION_BODY, errors), ..Shown::default() }
        }
        Err(RotateError::Store(e)) => return Err(e.into()),
        Err(e @ RotateError::Randomness(_)) => return Err(PageError::internal(e)),
    };
    integrations(&state, &session, &admin, StatusCode::OK, shown).await
}

async fn send_test(State(state): State<AppState>, posted: AdminForm<Empty>) -> Result<Response, PageError> {
    let AdminForm { session, admin, .. } = posted;
    let notice = match webhooks::send_test_event(&state.core, &admin).await {
        // Post/redirect/get: a reload sends no second event.
        Ok(_) => return Ok(Notice::TestEventQueued.redirect(PAGE, state.config.secure_cookies())),
        Err(TestEventError::NotConfigured) => Outcome::WebhookNotConfigured.message().into_owned(),
        Err(TestEventError::Store(e)) => return Err(e.into()),
        Err(e @ TestEventError::Randomness(_)) => return Err(PageError::internal(e)),
    };
    integrations(&state, &session, &admin, StatusCode::OK, Shown { notice: Some(notice), ..Shown::default() }).await
}
