//! The webhook endpoint and the delivery log as the use cases answer them.

use chrono::{DateTime, Utc};

use crate::webhook::{DeliveryStatus, FailureClass};

#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct WebhookEndpointRecord {
    pub brand_id: i64,
    pub url: String,
    pub enabled: bool,
    pub signing_secret: String,
    pub secret_rotated_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The event types it receives, comma-separated (decisions 15.3).
    pub event_types: String,
}

impl WebhookEndpointRecord {
    /// The event types it receives, in the order chosen.
    pub fn event_types(&self) -> Vec<&str> {
        self.event_types.split(',').filter(|t| !t.is_empty()).collect()
    }
}

/// One event as the delivery log shows it.
#[derive(Debug, Clone)]
pub struct DeliveryRecord {
    pub event_id: String,
    pub event_type: String,
    pub status: DeliveryStatus,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<FailureClass>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub seq: i64,
}

/// One attempt of the delivery log.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub attempted_at: DateTime<Utc>,
    pub url: String,
    pub status_code: Option<i64>,
    pub error: Option<FailureClass>,
    pub duration_ms: i64,
    /// The start of what the endpoint answered (at most 1 KiB), when it answered a body.
    pub response_excerpt: Option<String>,
}
