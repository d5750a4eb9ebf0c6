//! The brand's webhook endpoint and its signing secret. The delivery log and replay are in
//! [`deliveries`].

mod deliveries;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use reqwest::Url;

use super::Core;
use crate::jobs::signature::generate_secret;
use crate::net::{self, ResolveError};
use crate::usecases::refusal::Refusal;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::event::{Event, EventType};
use rehome_domain::outcome::Outcome;
use rehome_domain::precondition::Precondition;
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::WebhookEndpointRecord;
use rehome_domain::webhook::{SecretRotation, WebhookPatch};
use rehome_domain::FieldError;
use rehome_store::{EndpointChange, EndpointInsert, StoreError};

pub use deliveries::{
    count, deliveries, delivery, payload, replay, replay_dead, DeliveryError, DeliveryPage, ReplayError,
};

/// How long configuration waits for DNS before accepting a name it could not resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// The endpoint after a change.
#[derive(Debug)]
pub struct Configured {
    pub endpoint: WebhookEndpointRecord,
    /// The signing secret was just created: the answer shows it, this once.
    pub secret_created: bool,
}

/// Why the endpoint was not configured.
#[derive(Debug, thiserror::Error)]
pub enum ConfigureError {
    /// The body's reasons (`url_required` when the first change names no URL, `url_invalid`
    /// for a non-public destination).
    #[error("invalid webhook settings")]
    Invalid(Vec<FieldError>),
    #[error("no randomness for a signing secret: {0}")]
    Randomness(getrandom::Error),
    /// `If-Match` named another version of the endpoint: nothing changed.
    #[error("the endpoint changed since it was read")]
    PreconditionFailed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ConfigureError> for Refusal {
    fn from(e: ConfigureError) -> Self {
        match e {
            ConfigureError::Invalid(reasons) => reasons.into(),
            ConfigureError::Randomness(e) => Refusal::internal("no randomness", e),
            ConfigureError::PreconditionFailed => Outcome::PreconditionFailed.into(),
            ConfigureError::Store(e) => e.into(),
        }
    }
}

/// Why the secret was not rotated.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("invalid rotation")]
    Invalid(Vec<FieldError>),
    #[error("no webhook endpoint")]
    NotConfigured,
    #[error("no randomness for a signing secret: {0}")]
    Randomness(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Rotating with no URL is 404 (there is nothing to rotate), where a replay with no
/// enabled endpoint is 409.
impl From<RotateError> for Refusal {
    fn from(e: RotateError) -> Self {
        match e {
            RotateError::Invalid(reasons) => reasons.into(),
            RotateError::NotConfigured => Outcome::WebhookUrlMissing.into(),
            RotateError::Randomness(e) => Refusal::internal("no randomness", e),
            RotateError::Store(e) => e.into(),
        }
    }
}

/// The brand's endpoint, if configured.
pub async fn endpoint(core: &Core, actor: &Actor) -> Result<Option<WebhookEndpointRecord>, StoreError> {
    core.store.webhook_endpoint(actor.brand_id).await
}

/// Applies a change of the endpoint: sets the URL and/or pauses or resumes deliveries. The first URL
/// creates the endpoint with a new signing secret. Wakes the worker when deliveries are on,
/// so events that waited for an endpoint go out.
/// With a `guard` (`If-Match`), only if the endpoint as it stands (none before the first
/// change) satisfies it, checked where nothing can change it before the write.
pub async fn configure(
    core: &Core,
    actor: &Admin,
    patch: &WebhookPatch,
    guard: Option<Precondition<'_, Option<WebhookEndpointRecord>>>,
) -> Result<Configured, ConfigureError> {
    if let Some(url) = &patch.url {
        if !destination_allowed(url, core.config.allow_private_network).await {
            return Err(ConfigureError::Invalid(vec![FieldError::new("url", "url_invalid")]));
        }
    }
    let url = patch.url.as_ref().map(Url::as_str);
    let existing = core.store.webhook_endpoint(actor.brand_id).await?;
    let configured = match (existing, url) {
        (None, None) => return Err(ConfigureError::Invalid(vec![FieldError::new("url", "url_required")])),
        // The endpoint is created only if the condition holds of "none"; one created
        // meanwhile is changed below, under the condition again.
        (None, Some(_)) if guard.is_some_and(|holds| !holds(&None)) => return Err(ConfigureError::PreconditionFailed),
        (None, Some(url)) => {
            let secret = generate_secret().map_err(ConfigureError::Randomness)?;
            let enabled = patch.enabled.unwrap_or(true);
            match core
                .store
                .create_webhook_endpoint(
                    actor.brand_id,
                    url,
                    enabled,
                    &secret,
                    patch.event_types.as_deref(),
                    &webhook_audit(actor, AuditAction::WebhookUpdated),
                )
                .await?
            {
                EndpointInsert::Created(endpoint) => Configured { endpoint, secret_created: true },
                // Another request configured it first: this one is a change of it.
                EndpointInsert::AlreadyExists => update(core, actor, Some(url), patch, guard).await?,
            }
        }
        (Some(_), url) => update(core, actor, url, patch, guard).await?,
    };
    // Events emitted while the endpoint was off or paused lie behind where the worker looks.
    if configured.endpoint.enabled {
        core.outbox.rescan();
    }
    Ok(configured)
}

async fn update(
    core: &Core,
    actor: &Admin,
    url: Option<&str>,
    patch: &WebhookPatch,
    guard: Option<Precondition<'_, Option<WebhookEndpointRecord>>>,
) -> Result<Configured, ConfigureError> {
    let audit = webhook_audit(actor, AuditAction::WebhookUpdated);
    let types = patch.event_types.as_deref();
    match core.store.update_webhook_endpoint(actor.brand_id, url, patch.enabled, types, guard, &audit).await? {
        EndpointChange::Changed(endpoint) => Ok(Configured { endpoint, secret_created: false }),
        EndpointChange::PreconditionFailed => Err(ConfigureError::PreconditionFailed),
        // Endpoints are never deleted, so one seen a moment ago is still there.
        EndpointChange::Missing => Err(StoreError::Database(sqlx::Error::RowNotFound).into()),
    }
}

/// Replaces the signing secret; the answer shows the new one, this once. With an overlap
/// (`expire_previous_in_hours` > 0) deliveries are signed with both secrets until then.
pub async fn rotate_secret(
    core: &Core,
    actor: &Admin,
    rotation: &SecretRotation,
) -> Result<WebhookEndpointRecord, RotateError> {
    let previous_until = (rotation.expire_previous_in_hours > 0)
        .then(|| Ts::from(Utc::now() + TimeDelta::hours(rotation.expire_previous_in_hours)));
    let secret = generate_secret().map_err(RotateError::Randomness)?;
    let audit = webhook_audit(actor, AuditAction::WebhookSecretRotated);
    core.store
        .rotate_webhook_secret(actor.brand_id, &secret, previous_until, &audit)
        .await?
        .ok_or(RotateError::NotConfigured)
}

/// Why no test event was sent.
#[derive(Debug, thiserror::Error)]
pub enum TestEventError {
    /// No enabled endpoint to deliver to.
    #[error("no enabled webhook endpoint")]
    NotConfigured,
    #[error("no randomness for an event id: {0}")]
    Randomness(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<TestEventError> for Refusal {
    fn from(e: TestEventError) -> Self {
        match e {
            TestEventError::NotConfigured => Outcome::WebhookNotConfigured.into(),
            TestEventError::Randomness(e) => Refusal::internal("no randomness", e),
            TestEventError::Store(e) => e.into(),
        }
    }
}

/// Sends a `ping` event (`data: {brand_id}`) through the delivery queue, so it is signed,
/// retried and logged like any other; answers its id.
pub async fn send_test_event(core: &Core, actor: &Admin) -> Result<String, TestEventError> {
    if !core.store.webhook_endpoint(actor.brand_id).await?.is_some_and(|e| e.enabled) {
        return Err(TestEventError::NotConfigured);
    }
    let data = serde_json::json!({ "brand_id": actor.brand_slug });
    let event = Event::new(actor.brand_id, EventType::Ping, data).map_err(TestEventError::Randomness)?;
    let audit = AuditEntry::by(actor, AuditAction::WebhookTestSent, Some(format!("event:{}", event.id)));
    core.store.emit_audited_event(&event, &audit).await?;
    core.outbox.wake();
    Ok(event.id)
}

/// An entry about the brand's webhook endpoint.
fn webhook_audit(actor: &Admin, action: AuditAction) -> AuditEntry {
    AuditEntry::by(actor, action, Some("webhook".to_owned()))
}

/// False for a URL whose host is, or resolves to, a non-public address. A name that does
/// not resolve now is allowed: DNS may be set up later, and every delivery checks again.
async fn destination_allowed(url: &Url, allow_private_network: bool) -> bool {
    if net::check_url(url, allow_private_network).is_err() {
        return false;
    }
    if allow_private_network {
        return true;
    }
    let Some(host) = url.host_str().filter(|h| !h.starts_with('[') && h.parse::<std::net::IpAddr>().is_err()) else {
        return true;
    };
    // A name that is not a public one (`localhost.`, `LOCALHOST`, a single label, an internal
    // suffix) is refused whatever the resolver says of it now.
    if !rehome_domain::address::is_public_host(host) {
        return false;
    }
    !matches!(
        tokio::time::timeout(RESOLVE_TIMEOUT, net::resolve_checked(host, false)).await,
        Ok(Err(ResolveError::Refused(_)))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn private_destinations_are_refused_at_configuration() {
        for url in [
            "https://127.0.0.1/x",
            "https://[::1]/x",
            "https://10.1.2.3/x",
            "https://localhost/x",
            "http://LOCALHOST./x",
            "https://api.localhost/x",
            "https://hooks/x",
            "https://hooks.internal/x",
        ] {
            let url = Url::parse(url).unwrap();
            assert!(!destination_allowed(&url, false).await, "{url}");
            assert!(destination_allowed(&url, true).await, "{url}");
        }
    }
}
