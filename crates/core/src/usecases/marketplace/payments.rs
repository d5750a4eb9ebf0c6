//! Paying on the storefront through a gateway (decisions 14.4). The checkout holds the stock
//! (the same conditional update as an order) and opens a payment page; the order is written
//! when the gateway's signed notice says the buyer paid, and the stock goes back when the
//! payment lapses: on the gateway's notice, or, when none came, by the job below, which asks
//! the gateway once the 30-minute hold is over (closing a page still open first, so that
//! nobody pays for stock that was given back).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use tokio::sync::Notify;

use crate::config::Config;
use crate::jobs::queue::{Failures, Queue, Runner};
use crate::jobs::retry::{random_unit, Backoff};
use crate::jobs::MailJobs;
use crate::payments::{Gateway, GatewayError, PaymentEvent, SessionRequest, SessionState, SignatureError};
use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use rehome_domain::checkout::PAYMENT_HOLD;
use rehome_domain::order::OrderRequest;
use rehome_domain::outcome::Outcome;
use rehome_domain::view::HoldRecord;
use rehome_store::{BuyerInsert, HoldInsert, HoldSettlement, StockRefusal, Store, StoreError};

/// How much longer the gateway's page stays open than the hold: the gateway counts from its
/// own clock, and takes no page shorter than 30 minutes (Stripe).
pub const PAGE_MARGIN: TimeDelta = TimeDelta::minutes(1);
/// How often the job looks for lapsed holds.
const POLL: Duration = Duration::from_secs(5);
/// Holds settled per round.
const BATCH: i64 = 16;
/// How long a round's lease lasts: two calls to the gateway and their writes.
const LEASE: TimeDelta = TimeDelta::minutes(2);
/// The wait after the gateway could not be asked, doubling to an hour.
const RETRY: Backoff = Backoff::doubling(Duration::from_secs(30));

/// What settling needs: the store, the gateway, and the mail to wake.
struct Desk<'a> {
    store: &'a Store,
    config: &'a Config,
    mail: &'a MailJobs,
}

/// A hold made and its payment page opened: where to send the buyer.
pub struct PaymentPage {
    pub url: String,
}

/// Why the buyer could not be sent to pay.
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    #[error("no stock was taken: {0:?}")]
    Stock(StockRefusal),
    /// The gateway could not open a page; the stock was given back.
    #[error("the payment service is unavailable: {0}")]
    Gateway(GatewayError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A buyer's purchase to hold for payment.
pub struct HoldRequest<'a> {
    pub request: &'a OrderRequest,
    pub insert: HoldInsert<'a>,
    /// The order's page, where the buyer comes back.
    pub return_url: &'a str,
}

/// Holds the stock and opens the payment page. Should the gateway fail, the hold is
/// released at once: nothing stays taken for a buyer who cannot pay.
pub async fn hold(core: &Core, gateway: &dyn Gateway, hold: &HoldRequest<'_>) -> Result<PaymentPage, HoldError> {
    let record = core.store.hold_stock(hold.request, &hold.insert).await?.map_err(HoldError::Stock)?;
    let key = format!("rehome-hold-{}-{}", record.id, &record.token_sha256[..16]);
    let session = SessionRequest {
        hold_id: record.id,
        idempotency_key: &key,
        title: &record.title,
        unit_amount_pence: record.unit_price_pence,
        quantity: record.quantity,
        customer_email: hold.insert.email,
        return_url: hold.return_url,
        expires_at: hold.insert.held_until + PAGE_MARGIN,
    };
    match gateway.open(&session).await {
        Ok(page) => {
            core.store.attach_payment_session(record.id, &page.id, &page.url).await?;
            Ok(PaymentPage { url: page.url })
        }
        Err(e) => {
            tracing::warn!(hold = record.id, error = %e, "cannot open a payment page; the stock is given back");
            core.store.release_hold(record.id).await?;
            Err(HoldError::Gateway(e))
        }
    }
}

/// Why a gateway's notice was refused.
#[derive(Debug, thiserror::Error)]
pub enum NoticeError {
    /// No gateway is configured.
    #[error("payments are not taken through a gateway")]
    NotConfigured,
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A notice whose signature does not verify is refused as such (its reason is logged by the
/// edge, never answered).
impl From<NoticeError> for Refusal {
    fn from(e: NoticeError) -> Self {
        match e {
            NoticeError::NotConfigured => Outcome::PaymentsNotConfigured.into(),
            NoticeError::Signature(_) => Outcome::PaymentSignatureInvalid.into(),
            NoticeError::Store(e) => e.into(),
        }
    }
}

/// A notice from the gateway (`body` as sent, its signature header): verified, then the
/// payment's hold is settled. A notice about a session this service did not open, or one
/// already settled, changes nothing (the gateway resends notices; each counts once).
pub async fn notice(core: &Core, body: &[u8], signature: Option<&str>) -> Result<(), NoticeError> {
    let gateway = core.payments.as_deref().ok_or(NoticeError::NotConfigured)?;
    let event = gateway.notice(body, signature, Utc::now())?;
    let desk = Desk { store: &core.store, config: &core.config, mail: &core.mail };
    let (session_id, hold_id, paid) = match &event {
        PaymentEvent::Paid { session_id, hold_id } => (session_id, *hold_id, true),
        PaymentEvent::Lapsed { session_id, hold_id } => (session_id, *hold_id, false),
        PaymentEvent::Ignored => return Ok(()),
    };
    let Some(hold) = find(&core.store, session_id, hold_id).await? else {
        tracing::info!(session = %session_id, "a payment notice about a session this service did not open");
        return Ok(());
    };
    if paid {
        settle_paid(&desk, &hold).await?;
    } else {
        core.store.release_hold(hold.id).await?;
    }
    Ok(())
}

/// The hold of a session: by the session recorded, else by the hold the session names (a
/// server that stopped between opening the page and recording it).
async fn find(store: &Store, session_id: &str, hold_id: Option<i64>) -> Result<Option<HoldRecord>, StoreError> {
    if let Some(hold) = store.hold_by_session(session_id).await? {
        return Ok(Some(hold));
    }
    let Some(id) = hold_id else { return Ok(None) };
    Ok(store.hold_by_id(id).await?.filter(|hold| hold.session_id.is_none()))
}

/// Writes the order of a paid hold with the buyer's confirmation.
async fn settle_paid(desk: &Desk<'_>, hold: &HoldRecord) -> Result<(), StoreError> {
    let (Some(name), Some(email), Some(postcode)) = (&hold.name, &hold.email, &hold.postcode) else {
        // Settled already: its details went with it.
        return Ok(());
    };
    let token = desk.store.hold_token(hold).unwrap_or_default();
    let page = format!("{}/marketplace/orders/{token}", desk.config.public_url());
    let confirmation = super::buyer_mail::confirmation(desk.config, &hold.brand_name, email, name, &page, true);
    let buyer = BuyerInsert {
        token_sha256: &hold.token_sha256,
        name,
        email,
        phone: hold.phone.as_deref(),
        postcode,
        confirmation: &confirmation,
    };
    match desk.store.pay_hold(hold.id, &buyer).await? {
        HoldSettlement::Paid(order) => {
            tracing::info!(hold = hold.id, order = order.id, "a payment arrived: the order is placed");
            desk.mail.wake();
        }
        HoldSettlement::AlreadyPaid(_) | HoldSettlement::NotFound => {}
        HoldSettlement::AlreadyReleased => {
            // The job closes a page before it gives the stock back, so the gateway should
            // never take a payment after: if it did, staff must refund it.
            tracing::error!(
                hold = hold.id,
                session = hold.session_id.as_deref().unwrap_or(""),
                "a payment arrived for a hold already released: refund it in the payment service"
            );
        }
    }
    Ok(())
}

/// The job that settles lapsed holds (a leased queue: one node at a time per hold).
pub struct HoldSettler {
    store: Store,
    config: Config,
    mail: MailJobs,
    gateway: Arc<dyn Gateway>,
    owner: String,
}

impl HoldSettler {
    /// The job, when buyers pay through a gateway.
    pub fn new(core: &Core) -> Option<Self> {
        let gateway = core.payments.clone()?;
        Some(Self {
            store: core.store.clone(),
            config: core.config.clone(),
            mail: core.mail.clone(),
            gateway,
            owner: format!("holds-{}", uuid::Uuid::new_v4()),
        })
    }

    pub fn runner(self) -> Arc<Runner<Self>> {
        Runner::new(self, Arc::new(Notify::new()), POLL)
    }

    /// Asks the gateway how a lapsed hold's payment stands and settles it: paid, the order;
    /// lapsed (or closed now), the stock back; still processing, or no answer, ask again.
    async fn settle(&self, hold: &HoldRecord, now: DateTime<Utc>, failures: &Failures) {
        let desk = Desk { store: &self.store, config: &self.config, mail: &self.mail };
        let state = match hold.session_id.as_deref() {
            Some(session) => self.gateway.close(session).await,
            // No page was recorded: if one was opened, it has expired once its margin is past.
            None if now >= hold.held_until.get() + PAGE_MARGIN * 2 => Ok(SessionState::Lapsed),
            None => Ok(SessionState::Processing),
        };
        let outcome = match state {
            Ok(SessionState::Paid) => settle_paid(&desk, hold).await.map_err(|e| e.to_string()),
            Ok(SessionState::Lapsed) => self.store.release_hold(hold.id).await.map(drop).map_err(|e| e.to_string()),
            // Closed pages do not reopen; should the gateway say so, ask again rather than
            // give back stock someone may still pay for.
            Ok(SessionState::Open) => Err("the payment page is still open".to_owned()),
            Ok(SessionState::Processing) => Err("the payment is still processing".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(error) = outcome {
            let tried = u32::try_from(hold.attempts).unwrap_or(u32::MAX);
            let gap = TimeDelta::from_std(RETRY.gap(tried, random_unit())).unwrap_or(TimeDelta::hours(1));
            if let Err(e) = self.store.retry_hold(&self.owner, hold.id, &error, now + gap).await {
                failures.record(Self::NAME, &format!("cannot record the retry of payment hold {}", hold.id), &e);
            }
        }
    }
}

impl Queue for HoldSettler {
    const NAME: &'static str = "payment_holds";

    async fn round(self: Arc<Self>, failures: Failures) -> Result<usize, StoreError> {
        let now = Utc::now();
        let holds = self.store.claim_lapsed_holds(&self.owner, now, now + LEASE, BATCH).await?;
        for hold in &holds {
            self.settle(hold, now, &failures).await;
        }
        Ok(holds.len())
    }

    async fn release(&self) -> Result<(), StoreError> {
        self.store.release_hold_leases(&self.owner).await.map(drop)
    }
}

/// When a hold that starts `now` lapses.
pub fn held_until(now: DateTime<Utc>) -> DateTime<Utc> {
    now + PAYMENT_HOLD
}
