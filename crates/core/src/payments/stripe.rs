//! Stripe Checkout (decisions 14.4): a Checkout Session per held purchase
//! (`POST /v1/checkout/sessions`, form-encoded, with an `Idempotency-Key`), its state read
//! (`GET /v1/checkout/sessions/{id}`) and an open one closed (`POST …/{id}/expire`) when the
//! hold lapses; the `checkout.session.*` webhook events verified by Stripe's signature
//! scheme (`Stripe-Signature: t=…,v1=…`, HMAC-SHA256 of `t.body` under the endpoint's
//! secret, five minutes' tolerance).
//!
//! The requests are checked against Stripe's published OpenAPI description and the
//! signatures against Stripe's own library in `tests/stripe/`; docs/payments.md says what
//! was and was not tried against the live service.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::{Gateway, GatewayError, PaymentEvent, Session, SessionRequest, SessionState, SignatureError};

/// The API version every request asks for, so that answers keep the shape read here: the
/// version of the OpenAPI description the requests are checked against (tests/stripe).
pub const API_VERSION: &str = "2023-08-16";
/// Where Stripe's hosted payment pages are.
pub const PAGE_ORIGIN: &str = "https://checkout.stripe.com";
/// How old a signed notice may be (Stripe's libraries' default).
pub const TOLERANCE: chrono::TimeDelta = chrono::TimeDelta::minutes(5);
const TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest notice read; Stripe's checkout events are a few kilobytes.
pub const MAX_NOTICE_BYTES: usize = 256 * 1024;

/// The Stripe adapter.
pub struct Stripe {
    client: reqwest::Client,
    api: String,
    secret_key: String,
    webhook_secret: String,
}

impl Stripe {
    /// `api` is `https://api.stripe.com` but for tests.
    pub fn new(api: &str, secret_key: &str, webhook_secret: &str) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()?;
        Ok(Self {
            client,
            api: api.trim_end_matches('/').to_owned(),
            secret_key: secret_key.to_owned(),
            webhook_secret: webhook_secret.to_owned(),
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        form: Option<String>,
        idempotency_key: Option<&str>,
    ) -> Result<SessionObject, GatewayError> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.api))
            .bearer_auth(&self.secret_key)
            .header("Stripe-Version", API_VERSION);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(form) = form {
            request = request.header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(form);
        }
        let response = request.send().await.map_err(|e| GatewayError::Unreachable(e.without_url().to_string()))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| GatewayError::Unreachable(e.without_url().to_string()))?;
        if !status.is_success() {
            let message = serde_json::from_slice::<ErrorAnswer>(&body)
                .map(|answer| answer.error.message.unwrap_or_default())
                .unwrap_or_else(|_| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
            if status.is_server_error() || status.as_u16() == 429 {
                return Err(GatewayError::Unreachable(format!("{status}: {message}")));
            }
            return Err(GatewayError::Refused { status: status.as_u16(), message });
        }
        serde_json::from_slice(&body).map_err(|e| GatewayError::Unreachable(format!("an unreadable answer: {e}")))
    }
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
}

/// The fields of a Checkout Session read here.
#[derive(Debug, Deserialize)]
struct SessionObject {
    id: String,
    url: Option<String>,
    status: Option<String>,
    payment_status: Option<String>,
    client_reference_id: Option<String>,
}

impl SessionObject {
    fn state(&self) -> SessionState {
        match (self.status.as_deref(), self.payment_status.as_deref()) {
            (Some("complete"), Some("paid" | "no_payment_required")) => SessionState::Paid,
            (Some("complete"), _) => SessionState::Processing,
            (Some("expired"), _) => SessionState::Lapsed,
            _ => SessionState::Open,
        }
    }

    fn hold_id(&self) -> Option<i64> {
        self.client_reference_id.as_deref()?.strip_prefix("hold_")?.parse().ok()
    }
}

/// The form of `POST /v1/checkout/sessions`, in Stripe's bracket notation.
pub fn session_form(request: &SessionRequest<'_>) -> String {
    let hold = request.hold_id.to_string();
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("mode", "payment")
        .append_pair("client_reference_id", &format!("hold_{hold}"))
        .append_pair("customer_email", request.customer_email)
        .append_pair("success_url", request.return_url)
        .append_pair("cancel_url", request.return_url)
        .append_pair("expires_at", &request.expires_at.timestamp().to_string())
        .append_pair("line_items[0][quantity]", &request.quantity.to_string())
        .append_pair("line_items[0][price_data][currency]", "gbp")
        .append_pair("line_items[0][price_data][unit_amount]", &request.unit_amount_pence.to_string())
        .append_pair("line_items[0][price_data][product_data][name]", request.title)
        .append_pair("metadata[hold_id]", &hold)
        .append_pair("payment_intent_data[metadata][hold_id]", &hold);
    form.finish()
}

impl Gateway for Stripe {
    fn name(&self) -> &'static str {
        "stripe"
    }

    fn page_origin(&self) -> &'static str {
        PAGE_ORIGIN
    }

    fn open<'a>(&'a self, request: &'a SessionRequest<'a>) -> BoxFuture<'a, Result<Session, GatewayError>> {
        Box::pin(async move {
            let form = session_form(request);
            let session = self
                .call(reqwest::Method::POST, "/v1/checkout/sessions", Some(form), Some(request.idempotency_key))
                .await?;
            let url = session
                .url
                .filter(|url| url.starts_with("https://"))
                .ok_or_else(|| GatewayError::Unreachable("the session has no payment page URL".into()))?;
            Ok(Session { id: session.id, url })
        })
    }

    fn state<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<SessionState, GatewayError>> {
        Box::pin(async move {
            let path = format!("/v1/checkout/sessions/{}", path_segment(session_id)?);
            Ok(self.call(reqwest::Method::GET, &path, None, None).await?.state())
        })
    }

    fn close<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<SessionState, GatewayError>> {
        Box::pin(async move {
            let path = format!("/v1/checkout/sessions/{}/expire", path_segment(session_id)?);
            match self.call(reqwest::Method::POST, &path, Some(String::new()), None).await {
                Ok(session) => Ok(session.state()),
                // Only an open session can be expired: it was paid or expired meanwhile.
                Err(GatewayError::Refused { .. }) => self.state(session_id).await,
                Err(e) => Err(e),
            }
        })
    }

    fn notice(&self, body: &[u8], signature: Option<&str>, now: DateTime<Utc>) -> Result<PaymentEvent, SignatureError> {
        verify(body, signature.ok_or(SignatureError::Missing)?, &self.webhook_secret, now)?;
        read_event(body)
    }
}

/// A session id as a path segment: Stripe's ids are letters, digits and `_`.
fn path_segment(id: &str) -> Result<&str, GatewayError> {
    if !id.is_empty() && id.len() <= 255 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(id)
    } else {
        Err(GatewayError::Refused { status: 400, message: format!("{id:?} is not a session id") })
    }
}

/// Checks a `Stripe-Signature` header (`t=<unix seconds>,v1=<hex>[,v1=…][,v0=…]`): one `v1`
/// must be the HMAC-SHA256 of `<t>.<body>` under `secret` (compared in constant time), and
/// `t` within [`TOLERANCE`] of `now`.
pub fn verify(body: &[u8], header: &str, secret: &str, now: DateTime<Utc>) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (key, value) = part.trim().split_once('=').ok_or(SignatureError::Malformed)?;
        match key {
            "t" => timestamp = Some(value.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            "v1" => signatures.push(hex::decode(value).map_err(|_| SignatureError::Malformed)?),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).map_err(|_| SignatureError::Mismatch)?;
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let expected = mac.finalize().into_bytes();
    if !signatures.iter().any(|candidate| bool::from(candidate.as_slice().ct_eq(expected.as_slice()))) {
        return Err(SignatureError::Mismatch);
    }
    let age = now.timestamp() - timestamp;
    if age.abs() > TOLERANCE.num_seconds() {
        return Err(SignatureError::Stale);
    }
    Ok(())
}

#[derive(Deserialize)]
struct EventObject {
    #[serde(rename = "type")]
    kind: String,
    data: EventData,
}

#[derive(Deserialize)]
struct EventData {
    object: serde_json::Value,
}

/// What a verified event says about a session.
fn read_event(body: &[u8]) -> Result<PaymentEvent, SignatureError> {
    let event: EventObject = serde_json::from_slice(body).map_err(|_| SignatureError::Unreadable)?;
    let session = || -> Result<SessionObject, SignatureError> {
        serde_json::from_value(event.data.object.clone()).map_err(|_| SignatureError::Unreadable)
    };
    Ok(match event.kind.as_str() {
        "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
            let session = session()?;
            match session.state() {
                SessionState::Paid => PaymentEvent::Paid { hold_id: session.hold_id(), session_id: session.id },
                _ => PaymentEvent::Ignored,
            }
        }
        "checkout.session.expired" | "checkout.session.async_payment_failed" => {
            let session = session()?;
            PaymentEvent::Lapsed { hold_id: session.hold_id(), session_id: session.id }
        }
        _ => PaymentEvent::Ignored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(body: &[u8], secret: &str, t: i64) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn a_signature_of_the_body_at_a_recent_time_holds_and_nothing_else_does() {
        let now = Utc::now();
        let body = br#"{"type":"checkout.session.completed"}"#;
        let header = sign(body, "whsec_test", now.timestamp());
        assert_eq!(verify(body, &header, "whsec_test", now), Ok(()));
        assert_eq!(verify(body, &header, "whsec_other", now), Err(SignatureError::Mismatch));
        assert_eq!(verify(b"{}", &header, "whsec_test", now), Err(SignatureError::Mismatch));
        let old = sign(body, "whsec_test", now.timestamp() - 301);
        assert_eq!(verify(body, &old, "whsec_test", now), Err(SignatureError::Stale));
        assert_eq!(verify(body, "v1=00", "whsec_test", now), Err(SignatureError::Malformed));
        assert_eq!(verify(body, "t=1", "whsec_test", now), Err(SignatureError::Malformed));
        assert_eq!(verify(body, "garbage", "whsec_test", now), Err(SignatureError::Malformed));
        // A rolled secret: Stripe signs with both, one v1 each.
        let both = format!(
            "{},{}",
            header,
            sign(body, "whsec_new", now.timestamp()).replace(&format!("t={},", now.timestamp()), "")
        );
        assert_eq!(verify(body, &both, "whsec_new", now), Ok(()));
    }

    #[test]
    fn a_completed_paid_session_is_a_payment_and_an_unpaid_one_waits() {
        let paid = br#"{"type":"checkout.session.completed","data":{"object":{"id":"cs_1","status":"complete","payment_status":"paid","client_reference_id":"hold_7"}}}"#;
        assert_eq!(read_event(paid), Ok(PaymentEvent::Paid { session_id: "cs_1".into(), hold_id: Some(7) }));
        let unpaid = br#"{"type":"checkout.session.completed","data":{"object":{"id":"cs_1","status":"complete","payment_status":"unpaid"}}}"#;
        assert_eq!(read_event(unpaid), Ok(PaymentEvent::Ignored));
        let expired = br#"{"type":"checkout.session.expired","data":{"object":{"id":"cs_2","status":"expired"}}}"#;
        assert_eq!(read_event(expired), Ok(PaymentEvent::Lapsed { session_id: "cs_2".into(), hold_id: None }));
        let other = br#"{"type":"payment_intent.created","data":{"object":{"id":"pi_1"}}}"#;
        assert_eq!(read_event(other), Ok(PaymentEvent::Ignored));
        assert_eq!(read_event(b"[]"), Err(SignatureError::Unreadable));
    }

    #[test]
    fn the_session_form_is_in_bracket_notation() {
        let expires = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let request = SessionRequest {
            hold_id: 9,
            idempotency_key: "k",
            title: "Oak & ash sofa",
            unit_amount_pence: 125_000,
            quantity: 2,
            customer_email: "sam@example.co.uk",
            return_url: "https://shop.example/marketplace/orders/abc",
            expires_at: expires,
        };
        let form = session_form(&request);
        assert!(form.contains("line_items%5B0%5D%5Bprice_data%5D%5Bunit_amount%5D=125000"), "{form}");
        assert!(form.contains("product_data%5D%5Bname%5D=Oak+%26+ash+sofa"), "{form}");
        assert!(form.contains("expires_at=1800000000"), "{form}");
        assert!(form.contains("client_reference_id=hold_9"), "{form}");
    }
}
