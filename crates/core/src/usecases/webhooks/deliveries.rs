//! The brand's delivery log and replay.

use super::Core;
use crate::usecases::refusal::Refusal;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::outcome::Outcome;
use rehome_domain::user::{Actor, Admin};

use rehome_domain::time::Ts;
use rehome_domain::view::{AttemptRecord, DeliveryRecord};
use rehome_domain::webhook::{DeadReplay, DeliveryStatus};
use rehome_domain::FieldError;
use rehome_store::StoreError;

/// One page of the log and the number of events matching the filter.
#[derive(Debug)]
pub struct DeliveryPage {
    pub deliveries: Vec<DeliveryRecord>,
    pub total: i64,
}

/// Why an event's log was not answered.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("no such event")]
    EventNotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<DeliveryError> for Refusal {
    fn from(e: DeliveryError) -> Self {
        match e {
            DeliveryError::EventNotFound => Outcome::EventNotFound.into(),
            DeliveryError::Store(e) => e.into(),
        }
    }
}

/// Why an event was not queued again.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("no such event")]
    EventNotFound,
    /// The body of a replay of dead events.
    #[error("invalid replay")]
    Invalid(Vec<FieldError>),
    /// No enabled endpoint to deliver to.
    #[error("no enabled webhook endpoint")]
    NotConfigured,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ReplayError> for Refusal {
    fn from(e: ReplayError) -> Self {
        match e {
            ReplayError::EventNotFound => Outcome::EventNotFound.into(),
            ReplayError::Invalid(reasons) => reasons.into(),
            ReplayError::NotConfigured => Outcome::WebhookNotConfigured.into(),
            ReplayError::Store(e) => e.into(),
        }
    }
}

/// The brand's events of one status (or all), newest first: `limit` of them after `offset`.
pub async fn deliveries(
    core: &Core,
    actor: &Actor,
    status: Option<DeliveryStatus>,
    limit: i64,
    offset: i64,
) -> Result<DeliveryPage, StoreError> {
    let (deliveries, total) = core.store.webhook_deliveries(actor.brand_id, status, limit, offset).await?;
    Ok(DeliveryPage { deliveries, total })
}

/// How many of the brand's events have `status` (the home counts the dead ones).
pub async fn count(core: &Core, actor: &Actor, status: DeliveryStatus) -> Result<i64, StoreError> {
    core.store.webhook_event_count(actor.brand_id, status).await
}

/// One event of the brand with every attempt, oldest first.
pub async fn delivery(
    core: &Core,
    actor: &Actor,
    event_id: &str,
) -> Result<(DeliveryRecord, Vec<AttemptRecord>), DeliveryError> {
    core.store.webhook_delivery(actor.brand_id, event_id).await?.ok_or(DeliveryError::EventNotFound)
}

/// The bytes the brand's event sends (its envelope, JSON); `None` when its sealed body
/// does not open with this server's data key.
pub async fn payload(core: &Core, actor: &Actor, event_id: &str) -> Result<Option<Vec<u8>>, DeliveryError> {
    let envelope = core.store.webhook_event_envelope(actor.brand_id, event_id).await?;
    Ok(envelope.ok_or(DeliveryError::EventNotFound)?.ok())
}

/// Queues the event again for immediate delivery (same id and bytes, a fresh retry window)
/// and answers it as the log now shows it.
pub async fn replay(core: &Core, actor: &Admin, event_id: &str) -> Result<DeliveryRecord, ReplayError> {
    // The event is looked up first so that another brand's id is not found whatever the
    // caller's endpoint state.
    if core.store.webhook_delivery(actor.brand_id, event_id).await?.is_none() {
        return Err(ReplayError::EventNotFound);
    }
    if !core.store.webhook_endpoint(actor.brand_id).await?.is_some_and(|e| e.enabled) {
        return Err(ReplayError::NotConfigured);
    }
    if !core
        .store
        .replay_webhook(
            actor.brand_id,
            event_id,
            &AuditEntry::by(actor, AuditAction::DeliveriesReplayed, Some(format!("event:{event_id}"))),
        )
        .await?
    {
        return Err(ReplayError::EventNotFound);
    }
    core.outbox.wake();
    let (delivery, _) =
        core.store.webhook_delivery(actor.brand_id, event_id).await?.ok_or(ReplayError::EventNotFound)?;
    Ok(delivery)
}

/// Queues every dead event of the brand (created at or after `since`, when given) again,
/// each with a fresh retry window; answers how many. Refused, like one replay, without an
/// enabled endpoint.
pub async fn replay_dead(core: &Core, actor: &Admin, request: &DeadReplay) -> Result<u64, ReplayError> {
    if !core.store.webhook_endpoint(actor.brand_id).await?.is_some_and(|e| e.enabled) {
        return Err(ReplayError::NotConfigured);
    }
    let audit = AuditEntry::by(actor, AuditAction::DeliveriesReplayed, Some("events:dead".to_owned()));
    let replayed = core.store.replay_dead_webhooks(actor.brand_id, request.since.map(Ts::from), &audit).await?;
    if replayed > 0 {
        core.outbox.wake();
    }
    Ok(replayed)
}
