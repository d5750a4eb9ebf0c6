//! Integrations (admins): API keys (create with the secret shown once, revoke) and the
//! webhook endpoint (URL, enabled, rotate the signing secret, send a test event). Every
//! action calls the use case the API calls, with the same body.

use crate::http::routing::{get, post};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Map};

use crate::domain::reader::object;

use super::confirm::{self, Confirm};
use super::extract::{require_admin, PageError, SignedIn, SignedInForm};
use super::notice::{Flash, Notice};
use super::pages::{render, when, Chrome, FieldErrors};
use crate::domain::key_request::{key_prefix, KeyRequest, RollRequest};
use crate::domain::webhook::{SecretRotation, WebhookPatch};
use crate::state::AppState;
use crate::usecases::people::keys::{self, CreateKeyError, RevokeKeyError, RollKeyError};
use crate::usecases::people::sessions::LiveSession;
use crate::usecases::webhooks::{self, ConfigureError, RotateError, TestEventError};

const PAGE: &str = "/dashboard/integrations";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/integrations", get(page))
        .route("/integrations/keys/new", get(new_key_page))
        .route("/integrations/keys", post(create_key))
        .route("/integrations/keys/{id}/revoke", get(confirm_revoke).merge(post(revoke_key)))
        .route("/integrations/keys/{id}/roll", post(roll_key))
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
    pub created: String,
    pub last_used: String,
    pub active: bool,
}

#[derive(askama::Template)]
#[template(path = "dashboard/integrations.html")]
pub struct IntegrationsPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub keys: Vec<KeyRow>,
    /// A key just created: its label and secret, shown this once.
    pub new_key: Option<(String, String)>,
    pub webhook_url: String,
    pub webhook_enabled: bool,
    /// A signing secret just created or rotated, shown this once.
    pub signing_secret: Option<String>,
    pub notice: Option<String>,
    pub errors: FieldErrors,
}

#[derive(askama::Template)]
#[template(path = "dashboard/new_key.html")]
pub struct NewKeyPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub label: String,
    pub errors: FieldErrors,
}

/// What to show besides the current keys and endpoint.
#[derive(Default)]
struct Shown {
    new_key: Option<(String, String)>,
    signing_secret: Option<String>,
    notice: Option<String>,
    errors: FieldErrors,
    /// The URL and enabled flag as posted (a refused form keeps them).
    posted: Option<(String, bool)>,
}

async fn integrations(
    state: &AppState,
    session: &LiveSession,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, PageError> {
    let actor = session.actor();
    let now = chrono::Utc::now();
    let keys = keys::keys(&state.core, &actor)
        .await?
        .into_iter()
        .map(|k| KeyRow {
            active: k.revoked_at.is_none() && k.expires_at.is_none_or(|at| at.get() > now),
            id: k.id,
            prefix: key_prefix(&k.lookup),
            label: k.label,
            scopes: k.scopes,
            created: when(k.created_at.get()),
            last_used: k.last_used_at.map_or_else(|| "never".to_owned(), |t| when(t.get())),
        })
        .collect();
    let endpoint = webhooks::endpoint(&state.core, &actor).await?;
    let (stored_url, stored_enabled) = endpoint.as_ref().map_or((String::new(), true), |e| (e.url.clone(), e.enabled));
    let (webhook_url, webhook_enabled) = shown.posted.unwrap_or((stored_url, stored_enabled));
    let page = IntegrationsPage {
        chrome: Chrome::signed_in(session),
        csrf: session.record.csrf_token.clone(),
        keys,
        new_key: shown.new_key,
        webhook_url,
        webhook_enabled,
        signing_secret: shown.signing_secret,
        notice: shown.notice,
        errors: shown.errors,
    };
    Ok(render(status, &page))
}

async fn page(State(state): State<AppState>, SignedIn(session): SignedIn, flash: Flash) -> Result<Response, PageError> {
    require_admin(&session)?;
    let shown = Shown { notice: flash.text().map(str::to_owned), ..Shown::default() };
    integrations(&state, &session, StatusCode::OK, shown).await
}

async fn confirm_revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    SignedIn(session): SignedIn,
) -> Result<Response, PageError> {
    require_admin(&session)?;
    let id = id.parse::<i64>().ok();
    let now = chrono::Utc::now();
    let key = keys::keys(&state.core, &session.actor())
        .await?
        .into_iter()
        .find(|k| Some(k.id) == id && k.revoked_at.is_none() && k.expires_at.is_none_or(|at| at.get() > now));
    let Some(key) = key else {
        return Ok(Redirect::to(PAGE).into_response());
    };
    let name = if key.label.is_empty() { key_prefix(&key.lookup) } else { format!("“{}”", key.label) };
    Ok(confirm::page(
        &session,
        Confirm {
            title: format!("Revoke the key {name}?"),
            lines: vec![
                format!(
                    "Every request signed with the key {} is refused from now on, on every node.",
                    key_prefix(&key.lookup)
                ),
                "Anything still using it stops working: give it a new key first (Create key).".to_owned(),
                "A revoked key cannot be brought back.".to_owned(),
            ],
            action: format!("{PAGE}/keys/{}/revoke", key.id),
            button: "Revoke key".to_owned(),
            cancel: PAGE.to_owned(),
        },
    ))
}

async fn confirm_rotate(SignedIn(session): SignedIn) -> Result<Response, PageError> {
    require_admin(&session)?;
    Ok(confirm::page(
        &session,
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
        },
    ))
}

async fn new_key_page(SignedIn(session): SignedIn) -> Result<Response, PageError> {
    require_admin(&session)?;
    let page = NewKeyPage {
        chrome: Chrome::signed_in(&session),
        csrf: session.record.csrf_token.clone(),
        label: String::new(),
        errors: FieldErrors::default(),
    };
    Ok(render(StatusCode::OK, &page))
}

#[derive(Debug, Deserialize)]
struct KeyForm {
    #[serde(default)]
    label: String,
}

async fn create_key(State(state): State<AppState>, posted: SignedInForm<KeyForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    require_admin(&session)?;
    let body = object(json!({"label": form.label}));
    let created = match KeyRequest::parse(&body, Utc::now()) {
        Ok(request) => keys::create(&state.core, &session.actor(), &request).await,
        Err(errors) => Err(CreateKeyError::Invalid(errors)),
    };
    match created {
        Ok(issued) => {
            let shown = Shown {
                new_key: Some((issued.key.label, issued.secret)),
                notice: Some("Key created. Copy its secret now: it is not shown again.".to_owned()),
                ..Shown::default()
            };
            integrations(&state, &session, StatusCode::CREATED, shown).await
        }
        Err(CreateKeyError::Invalid(errors)) => {
            let page = NewKeyPage {
                chrome: Chrome::signed_in(&session),
                csrf: session.record.csrf_token.clone(),
                label: form.label,
                errors: FieldErrors(errors),
            };
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
        Err(CreateKeyError::Store(e)) => Err(e.into()),
        Err(e @ CreateKeyError::Random(_)) => Err(PageError::internal(e)),
    }
}

async fn revoke_key(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: SignedInForm<Empty>,
) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let id = id.parse::<i64>().map_err(|_| PageError::BadForm)?;
    match keys::revoke(&state.core, &session.actor(), id).await {
        Ok(_) => Ok(Notice::KeyRevoked.redirect(PAGE, state.config.secure_cookies())),
        Err(RevokeKeyError::NotFound) => Ok(Redirect::to(PAGE).into_response()),
        Err(RevokeKeyError::Store(e)) => Err(e.into()),
    }
}

/// Replaces a key with a new one (shown once); the old one keeps working for 24 hours at
/// most, the API's default.
async fn roll_key(
    State(state): State<AppState>,
    Path(id): Path<String>,
    posted: SignedInForm<Empty>,
) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let id = id.parse::<i64>().map_err(|_| PageError::BadForm)?;
    // The API's defaults: an empty body.
    let rolled = match RollRequest::parse(&Map::new()) {
        Ok(request) => keys::roll(&state.core, &session.actor(), id, &request).await,
        Err(errors) => Err(RollKeyError::Invalid(errors)),
    };
    let shown = match rolled {
        Ok(issued) => Shown {
            new_key: Some((issued.key.label, issued.secret)),
            notice: Some("Key rolled: the old one stops working within 24 hours. Copy the new secret now.".to_owned()),
            ..Shown::default()
        },
        Err(RollKeyError::NotFound | RollKeyError::Inactive) => {
            Shown { notice: Some("That key is no longer active.".to_owned()), ..Shown::default() }
        }
        Err(RollKeyError::Invalid(errors)) => Shown { errors: FieldErrors(errors), ..Shown::default() },
        Err(RollKeyError::Store(e)) => return Err(e.into()),
        Err(e @ RollKeyError::Random(_)) => return Err(PageError::internal(e)),
    };
    integrations(&state, &session, StatusCode::OK, shown).await
}

/// A form with nothing but its CSRF token.
#[derive(Debug, Deserialize)]
pub struct Empty {}

#[derive(Debug, Deserialize)]
struct WebhookForm {
    #[serde(default)]
    url: String,
    /// A checkbox: present when ticked.
    enabled: Option<String>,
}

async fn save_webhook(State(state): State<AppState>, posted: SignedInForm<WebhookForm>) -> Result<Response, PageError> {
    let SignedInForm { session, form } = posted;
    require_admin(&session)?;
    let enabled = form.enabled.is_some();
    let body = object(json!({"url": form.url, "enabled": enabled}));
    let configured = match WebhookPatch::parse(&body, state.core.config.webhook_allow_http) {
        Ok(patch) => webhooks::configure(&state.core, &session.actor(), &patch, None).await,
        Err(errors) => Err(ConfigureError::Invalid(errors)),
    };
    let shown = match configured {
        Ok(configured) => Shown {
            signing_secret: configured.secret_created.then(|| configured.endpoint.signing_secret.clone()),
            notice: Some("Webhook saved.".to_owned()),
            ..Shown::default()
        },
        Err(ConfigureError::Invalid(errors)) => {
            let shown = Shown { errors: FieldErrors(errors), posted: Some((form.url, enabled)), ..Shown::default() };
            return integrations(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, shown).await;
        }
        Err(ConfigureError::Store(e)) => return Err(e.into()),
        // The form names no condition, so none can fail.
        Err(e @ (ConfigureError::Randomness(_) | ConfigureError::PreconditionFailed)) => {
            return Err(PageError::internal(e))
        }
    };
    integrations(&state, &session, StatusCode::OK, shown).await
}

async fn rotate_secret(State(state): State<AppState>, posted: SignedInForm<Empty>) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    // The API's defaults: an empty body.
    let rotated = match SecretRotation::parse(&Map::new()) {
        Ok(rotation) => webhooks::rotate_secret(&state.core, &session.actor(), &rotation).await,
        Err(errors) => Err(RotateError::Invalid(errors)),
    };
    let shown = match rotated {
        Ok(endpoint) => Shown {
            signing_secret: Some(endpoint.signing_secret),
            notice: Some("Signing secret rotated.".to_owned()),
            ..Shown::default()
        },
        Err(RotateError::NotConfigured) => {
            Shown { notice: Some("Set an endpoint URL first.".to_owned()), ..Shown::default() }
        }
        Err(RotateError::Invalid(errors)) => Shown { errors: FieldErrors(errors), ..Shown::default() },
        Err(RotateError::Store(e)) => return Err(e.into()),
        Err(e @ RotateError::Randomness(_)) => return Err(PageError::internal(e)),
    };
    integrations(&state, &session, StatusCode::OK, shown).await
}

async fn send_test(State(state): State<AppState>, posted: SignedInForm<Empty>) -> Result<Response, PageError> {
    let session = posted.session;
    require_admin(&session)?;
    let notice = match webhooks::send_test_event(&state.core, &session.actor()).await {
        Ok(event_id) => format!("Test event {event_id} queued; see Deliveries."),
        Err(TestEventError::NotConfigured) => {
            "No test event was sent: set up and enable a webhook endpoint first.".to_owned()
        }
        Err(TestEventError::Store(e)) => return Err(e.into()),
        Err(e @ TestEventError::Randomness(_)) => return Err(PageError::internal(e)),
    };
    integrations(&state, &session, StatusCode::OK, Shown { notice: Some(notice), ..Shown::default() }).await
}
