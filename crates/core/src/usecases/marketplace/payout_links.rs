//! A customer chooses a payout on a page (decisions 14.6): the marketplace asks for a link
//! for a completed exchange order; the page offers the brand's enabled choices with each
//! one's value; the choice is recorded by the same use case and event as
//! `POST /ops/v1/orders/{id}/payout-choice`. A link works once and for 14 days.

use chrono::{DateTime, Days, Utc};

use super::checkout::token_sha256;
use super::payouts::{self, PayoutChoiceError};
use crate::usecases::Core;
use rehome_domain::money::Pence;
use rehome_domain::payout::{CustomerChoice, PayoutChoice, PayoutOptions};
use rehome_domain::redemption::Redemption;
use rehome_domain::time::Ts;
use rehome_domain::view::OrderRecord;
use rehome_store::StoreError;

/// How long a link works.
pub const LINK_DAYS: u64 = 14;

/// A link made: its page's address (shown once) and when it stops working.
#[derive(Debug, Clone)]
pub struct PayoutLink {
    pub url: String,
    pub expires_at: Ts,
}

/// Makes a link for the customer of a completed exchange order, who has not chosen yet.
/// `customer_id` is the customer the choice is recorded for (default: `order-<id>`).
pub async fn create(core: &Core, order_id: i64, customer_id: Option<String>) -> Result<PayoutLink, PayoutChoiceError> {
    let order = payouts::awaiting_choice(core, order_id).await?;
    let token = super::random_token()?;
    let expires_at = Utc::now()
        .checked_add_days(Days::new(LINK_DAYS))
        .map(Ts::from)
        .ok_or_else(|| anyhow::anyhow!("no date 14 days from now"))?;
    let customer_id = customer_id.unwrap_or_else(|| format!("order-{}", order.id));
    core.store.create_payout_link(&token_sha256(&token), order.id, &customer_id, expires_at).await?;
    let url = format!("{}/marketplace/payouts/{token}", core.config.public_url.as_deref().unwrap_or_default());
    Ok(PayoutLink { url, expires_at })
}

/// What a link's page offers.
#[derive(Debug, Clone)]
pub struct PayoutOffer {
    pub order: OrderRecord,
    /// The brand's display name.
    pub brand: String,
    pub options: PayoutOptions,
    /// Each enabled choice with its value, credit first.
    pub choices: Vec<(CustomerChoice, Pence)>,
    pub expires_at: Ts,
}

/// Where a link stands.
#[derive(Debug, Clone)]
pub enum LinkState {
    Open(Box<PayoutOffer>),
    /// Used, expired, or the order's payout already chosen (410).
    Gone,
    /// No such link (404).
    Unknown,
}

/// The page a link opens, as of `now`.
pub async fn open(core: &Core, token: &str, now: DateTime<Utc>) -> Result<LinkState, StoreError> {
    if token.len() != 32 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(LinkState::Unknown);
    }
    let Some(link) = core.store.payout_link(&token_sha256(token)).await? else {
        return Ok(LinkState::Unknown);
    };
    if link.used_at.is_some() || link.expires_at.get() <= now || core.store.order_has_redemption(link.order_id).await? {
        return Ok(LinkState::Gone);
    }
    let Some(order) = core.store.order(link.order_id, None).await? else {
        return Ok(LinkState::Unknown);
    };
    let options = core.store.payout_options(order.brand_id).await?;
    let base = Pence::new(order.total_pence());
    let choices = [CustomerChoice::Credit, CustomerChoice::Cash]
        .into_iter()
        .filter(|c| options.offers(*c))
        .map(|c| (c, options.value(c, base)))
        .collect();
    let brand = match crate::usecases::storefront::brand_face(core, &order.brand_slug).await? {
        Some(face) => face.name,
        None => order.brand_slug.clone(),
    };
    Ok(LinkState::Open(Box::new(PayoutOffer { order, brand, options, choices, expires_at: link.expires_at })))
}

/// Why a choice on a link's page was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    #[error("no such link")]
    Unknown,
    /// Used (also by another tab a moment ago) or expired.
    #[error("the link is used or expired")]
    Gone,
    #[error(transparent)]
    Choice(#[from] PayoutChoiceError),
}

/// Records the customer's choice through the link: the payout-choice use case (one
/// redemption per order, whatever arrives at once), then the link marked used.
pub async fn redeem(
    core: &Core,
    token: &str,
    mut choice: PayoutChoice,
    now: DateTime<Utc>,
) -> Result<Redemption, RedeemError> {
    let offer = match open(core, token, now).await.map_err(PayoutChoiceError::from)? {
        LinkState::Open(offer) => offer,
        LinkState::Gone => return Err(RedeemError::Gone),
        LinkState::Unknown => return Err(RedeemError::Unknown),
    };
    let hash = token_sha256(token);
    let link = core.store.payout_link(&hash).await.map_err(PayoutChoiceError::from)?.ok_or(RedeemError::Unknown)?;
    choice.customer_id = link.customer_id;
    let redemption = match payouts::choose(core, offer.order.id, choice).await {
        Ok(redemption) => redemption,
        // Another tab chose a moment ago: this link is spent.
        Err(PayoutChoiceError::ChoiceExists) => return Err(RedeemError::Gone),
        Err(e) => return Err(e.into()),
    };
    core.store.use_payout_link(&hash).await.map_err(PayoutChoiceError::from)?;
    Ok(redemption)
}
