//! Payouts: the options a brand offers, and a customer's choice for a sold trade-in, which
//! records a redemption and emits `redemption.created`.

use chrono::{Days, Utc};

use super::no_randomness;
use crate::usecases::refusal::Refusal;
use crate::usecases::{wallet, Core};
use rehome_domain::apikey::random_base62;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::credit_code::CreditCode;
use rehome_domain::event::{Event, EventType};
use rehome_domain::money::Pence;
use rehome_domain::outcome::Outcome;
use rehome_domain::payout::{CreditDestination, CustomerChoice, PayoutChoice, PayoutOptions, PayoutOptionsPatch};
use rehome_domain::precondition::Precondition;
use rehome_domain::redemption::{Redemption, CURRENCY};
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::OrderRecord;
use rehome_domain::FieldError;
use rehome_store::{NewRedemption, RedemptionInsert, StoreError};

/// The brand's payout options; the defaults until the first change.
pub async fn options(core: &Core, actor: &Actor) -> Result<PayoutOptions, StoreError> {
    core.store.payout_options(actor.brand_id).await
}

/// Changes the fields the patch names. Later choices are checked against the new options;
/// redemptions already recorded keep their value.
/// Only if `guard` (checked in the write's transaction) accepts the options as they stand.
pub async fn change_options(
    core: &Core,
    actor: &Admin,
    patch: &PayoutOptionsPatch,
    guard: Option<Precondition<'_, PayoutOptions>>,
) -> Result<PayoutOptions, OptionsChangeError> {
    let audit = AuditEntry::by(actor, AuditAction::SettingsUpdated, Some("settings:payouts".to_owned()));
    match core.store.save_payout_options(actor.brand_id, patch, guard, &audit).await? {
        Some(Ok(saved)) => Ok(saved),
        Some(Err(_)) => Err(OptionsChangeError::NoChoice),
        None => Err(OptionsChangeError::PreconditionFailed),
    }
}

/// Why the payout options did not change.
#[derive(Debug, thiserror::Error)]
pub enum OptionsChangeError {
    /// The options no longer match the caller's condition (`If-Match`).
    #[error("the options changed since they were read")]
    PreconditionFailed,
    /// The change would leave customers neither credit nor cash to choose.
    #[error("the options would offer no way to be paid")]
    NoChoice,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A change that would offer no way to be paid is a reason pinned to the credit box
/// (`payout_choice_required`).
impl From<OptionsChangeError> for Refusal {
    fn from(e: OptionsChangeError) -> Self {
        match e {
            OptionsChangeError::PreconditionFailed => Outcome::PreconditionFailed.into(),
            OptionsChangeError::NoChoice => vec![FieldError::new("credit_enabled", "payout_choice_required")].into(),
            OptionsChangeError::Store(e) => e.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PayoutChoiceError {
    #[error("no such order")]
    OrderNotFound,
    #[error("the order is not a sold exchange item")]
    OrderNotExchange,
    #[error("the sale is not complete")]
    OrderNotCompleted,
    #[error("the order already has a payout choice")]
    ChoiceExists,
    #[error("the brand does not offer this payout option")]
    ChoiceNotOffered,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<PayoutChoiceError> for Refusal {
    fn from(e: PayoutChoiceError) -> Self {
        match e {
            PayoutChoiceError::OrderNotFound => Outcome::UnknownOrder.into(),
            PayoutChoiceError::OrderNotExchange => Outcome::OrderNotExchange.into(),
            PayoutChoiceError::OrderNotCompleted => Outcome::OrderNotCompleted.into(),
            PayoutChoiceError::ChoiceExists => Outcome::PayoutChoiceExists.into(),
            PayoutChoiceError::ChoiceNotOffered => Outcome::CustomerChoiceNotOffered.into(),
            PayoutChoiceError::Store(e) => e.into(),
            PayoutChoiceError::Internal(e) => e.into(),
        }
    }
}

/// The order, if it is a completed exchange sale whose customer has not chosen yet (a link
/// to choose is made for such an order too).
pub async fn awaiting_choice(core: &Core, order_id: i64) -> Result<OrderRecord, PayoutChoiceError> {
    let order = core.store.order(order_id, None).await?.ok_or(PayoutChoiceError::OrderNotFound)?;
    if !order.is_exchange() {
        return Err(PayoutChoiceError::OrderNotExchange);
    }
    if !order.is_completed() {
        return Err(PayoutChoiceError::OrderNotCompleted);
    }
    // The unique index is what guarantees one choice; asking first lets a repeated choice
    // answer as such before the options are checked.
    if core.store.order_has_redemption(order.id).await? {
        return Err(PayoutChoiceError::ChoiceExists);
    }
    Ok(order)
}

/// The customer whose trade-in sold chooses how to be paid. Records the redemption (with
/// the brand's wallet entry for a credit choice) and emits `redemption.created` in the same
/// transaction, then wakes the webhook worker;
/// answers the redemption (the event's data), with the code in full.
pub async fn choose(core: &Core, order_id: i64, choice: PayoutChoice) -> Result<Redemption, PayoutChoiceError> {
    let order = awaiting_choice(core, order_id).await?;
    let options = core.store.payout_options(order.brand_id).await?;
    if !options.offers(choice.choice) {
        return Err(PayoutChoiceError::ChoiceNotOffered);
    }
    let sale_completed_at = order.completed_at.ok_or_else(|| anyhow::anyhow!("completed order without time"))?;
    let value = options.value(choice.choice, Pence::new(order.total_pence()));
    let now = Utc::now();
    let code = match choice.destination {
        Some(CreditDestination::Code) => Some(CreditCode::generate().map_err(no_randomness)?),
        _ => None,
    };
    let expires_at = code
        .as_ref()
        .and_then(|_| now.checked_add_days(Days::new(u64::from(options.code_validity_days))))
        .map(Ts::from);
    let redemption = Redemption {
        id: format!("red_{}", random_base62(24).map_err(no_randomness)?),
        brand_id: order.brand_slug.clone(),
        customer_id: choice.customer_id.clone(),
        customer_choice: choice.choice.as_str().to_owned(),
        credit_destination: choice.destination.map(|d| d.as_str().to_owned()),
        value_pence: value.get(),
        value: value.gbp(),
        currency: CURRENCY,
        code: code.as_ref().map(|c| c.as_str().to_owned()),
        expires_at: expires_at.map(|t| t.to_string()),
        original_order_id: choice.original_order_id.clone(),
        related_listing_id: order.listing_id,
        sale_completed_at: sale_completed_at.to_string(),
        spent: None,
    };
    let data = serde_json::to_value(&redemption).map_err(anyhow::Error::from)?;
    let event = Event::new(order.brand_id, EventType::RedemptionCreated, data).map_err(no_randomness)?;
    let new = NewRedemption {
        id: redemption.id.clone(),
        brand_id: order.brand_id,
        order_id: order.id,
        customer_id: choice.customer_id,
        customer_choice: choice.choice,
        credit_destination: choice.destination,
        value_pence: value.get(),
        code_hash: code.as_ref().map(CreditCode::lookup_hash),
        code_hint: code.as_ref().map(CreditCode::hint),
        code: code.as_ref().map(|c| c.as_str().to_owned()),
        expires_at,
        original_order_id: choice.original_order_id,
        related_listing_id: order.listing_id,
        sale_completed_at,
        created_at: Ts::from(now),
        // Credit is the brand's to fund: it owes the base (the cash value, unboosted).
        ledger_entry: (choice.choice == CustomerChoice::Credit)
            .then(|| wallet::trade_in_entry(&order, sale_completed_at, core.config.hold())),
    };
    match core.store.record_redemption(&new, &event).await? {
        RedemptionInsert::Recorded => {}
        RedemptionInsert::ChoiceExists => return Err(PayoutChoiceError::ChoiceExists),
    }
    core.outbox.wake();
    Ok(redemption)
}
