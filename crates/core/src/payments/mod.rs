//! Taking a buyer's payment (decisions 14.4), behind one port: [`Gateway`]. The storefront's
//! checkout holds the stock, asks the gateway for a payment page and sends the buyer there;
//! the gateway's signed notice (or, when none comes, the job that asks it once the hold
//! lapses) says whether the buyer paid. `REHOME_PAYMENTS=none` (the default) has no gateway:
//! the order is placed at once and the marketplace takes payment outside rehome.
//!
//! One adapter: [`stripe::Stripe`] (Stripe Checkout Sessions). No HTTP server types, no SQL.

pub mod stripe;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;

use crate::config::{Config, PaymentsKind};

/// The gateway `REHOME_PAYMENTS` names (checked by `Config::resolve`), `None` for `none`.
pub fn from_config(config: &Config) -> Result<Option<Arc<dyn Gateway>>, reqwest::Error> {
    Ok(match config.payments {
        PaymentsKind::None => None,
        PaymentsKind::Stripe => {
            let secret =
                |s: &Option<crate::config::Secret>| s.as_ref().map(|s| s.expose().to_owned()).unwrap_or_default();
            Some(Arc::new(stripe::Stripe::new(
                &config.stripe_api_url,
                &secret(&config.stripe_secret_key),
                &secret(&config.stripe_webhook_secret),
            )?))
        }
    })
}

/// A payment page to open for a held purchase.
#[derive(Debug, Clone)]
pub struct SessionRequest<'a> {
    /// The hold the payment is for (`client_reference_id`, metadata).
    pub hold_id: i64,
    /// A key the gateway uses to make a repeated request harmless.
    pub idempotency_key: &'a str,
    pub title: &'a str,
    pub unit_amount_pence: i64,
    pub quantity: i64,
    pub customer_email: &'a str,
    /// Where the buyer returns, paid or not: the order's page.
    pub return_url: &'a str,
    /// When the page stops taking payment.
    pub expires_at: DateTime<Utc>,
}

/// A payment page opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: String,
    pub url: String,
}

/// How a payment stands, as the gateway says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// The buyer may still pay.
    Open,
    /// Paid (or nothing was due).
    Paid,
    /// The buyer finished, but the money has not arrived yet (a delayed payment method).
    Processing,
    /// It can no longer be paid: expired, or the delayed payment failed.
    Lapsed,
}

/// What a verified notice from the gateway says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentEvent {
    /// The session's payment arrived.
    Paid { session_id: String, hold_id: Option<i64> },
    /// The session can no longer be paid.
    Lapsed { session_id: String, hold_id: Option<i64> },
    /// Anything else (another kind of event, a payment still processing): nothing to do.
    Ignored,
}

/// Why the gateway did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No answer (connection, timeout) or one that could not be read: try again later.
    #[error("the payment service could not be reached: {0}")]
    Unreachable(String),
    /// It answered with an error.
    #[error("the payment service refused ({status}): {message}")]
    Refused { status: u16, message: String },
}

/// Why a notice was not believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the notice carries no signature header")]
    Missing,
    #[error("the signature header cannot be read")]
    Malformed,
    #[error("no signature matches the notice")]
    Mismatch,
    #[error("the signature's timestamp is outside the tolerance")]
    Stale,
    #[error("the notice is not an event this service can read")]
    Unreadable,
}

/// A payment service.
pub trait Gateway: Send + Sync {
    /// Its name, stored with each hold (`stripe`).
    fn name(&self) -> &'static str;

    /// The origin of the payment pages, which the checkout form is allowed to lead to.
    fn page_origin(&self) -> &'static str;

    /// Opens a payment page.
    fn open<'a>(&'a self, request: &'a SessionRequest<'a>) -> BoxFuture<'a, Result<Session, GatewayError>>;

    /// How the payment of a session stands.
    fn state<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<SessionState, GatewayError>>;

    /// Closes an open session, so that it can no longer be paid; answers how it stands
    /// after (paid, when the buyer paid first).
    fn close<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<SessionState, GatewayError>>;

    /// Verifies a notice (its body and signature header) at `now` and reads it.
    fn notice(&self, body: &[u8], signature: Option<&str>, now: DateTime<Utc>) -> Result<PaymentEvent, SignatureError>;
}
