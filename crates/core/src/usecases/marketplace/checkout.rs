//! Buying from a listing's page (decisions 14.3, 14.5): the order is placed by the same use
//! case and the same conditional update as `POST /ops/v1/orders`, with the buyer and the
//! confirmation mail written in its transaction; the buyer follows an unguessable token to
//! the order's page. Buyers act for nobody: no actor.

use chrono::{DateTime, NaiveDate, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::buyer_mail::confirmation;
use super::orders::{self, PlaceOrderError};
use super::payments::{self, HoldError};
use crate::usecases::Core;
use rehome_domain::checkout::Buyer;
use rehome_domain::order::{BuyerWindow, OrderRequest};
use rehome_domain::view::HoldRecord;
use rehome_domain::view::OrderRecord;
use rehome_store::{BuyerInsert, BuyerOrder, HoldInsert, StockRefusal, StoreError};

/// What buying did: the order is placed (its page's token, shown once, in the redirect and
/// the mail), or the stock is held while the buyer pays on the gateway's page.
#[derive(Debug, Clone)]
pub enum Placed {
    Order { token: String, order: OrderRecord },
    Payment { url: String },
}

/// Why nothing was bought; the page says each in a sentence.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error("no such listing")]
    NotFound,
    #[error("the listing is sold")]
    SoldOut,
    /// Fewer units than asked are left (exchange listings hold one).
    #[error("only {left} left")]
    TooMany { left: i64 },
    /// The payment service could not open a payment page; nothing is held.
    #[error("the payment service is unavailable")]
    PaymentUnavailable,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Buys `quantity` units of listing `id` for `buyer`, delivered in the default window.
pub async fn checkout(core: &Core, id: i64, buyer: &Buyer, quantity: i64) -> Result<Placed, CheckoutError> {
    let listing = core.store.market_listing(id).await?.ok_or(CheckoutError::NotFound)?;
    if listing.trashed {
        return Err(CheckoutError::NotFound);
    }
    let today = Utc::now().date_naive();
    let window = BuyerWindow::default_from(today).ok_or_else(|| anyhow::anyhow!("no buyer window after {today}"))?;
    let token = super::random_token()?;
    let hash = token_sha256(&token);
    let page = format!("{}/marketplace/orders/{token}", core.config.public_url());
    let request = OrderRequest { listing_id: id, quantity, window };
    if let Some(gateway) = core.payments.as_deref() {
        let hold = payments::HoldRequest {
            request: &request,
            insert: HoldInsert {
                token: &token,
                token_sha256: &hash,
                brand_name: &listing.brand_name,
                name: &buyer.name,
                email: buyer.email.as_str(),
                phone: buyer.phone.as_ref().map(|p| p.as_str()),
                postcode: buyer.postcode.as_str(),
                provider: gateway.name(),
                held_until: payments::held_until(Utc::now()),
            },
            return_url: &page,
        };
        return match payments::hold(core, gateway, &hold).await {
            Ok(pay) => Ok(Placed::Payment { url: pay.url }),
            Err(HoldError::Stock(refusal)) => Err(refused(core, id, refusal).await?),
            Err(HoldError::Gateway(_)) => Err(CheckoutError::PaymentUnavailable),
            Err(HoldError::Store(e)) => Err(e.into()),
        };
    }
    let confirmation = confirmation(&core.config, &listing.brand_name, buyer.email.as_str(), &buyer.name, &page, false);
    let insert = BuyerInsert {
        token_sha256: &hash,
        name: &buyer.name,
        email: buyer.email.as_str(),
        phone: buyer.phone.as_ref().map(|p| p.as_str()),
        postcode: buyer.postcode.as_str(),
        confirmation: &confirmation,
    };
    match orders::place_for(core, &request, Some(&insert)).await {
        Ok(order) => {
            core.mail.wake();
            Ok(Placed::Order { token, order })
        }
        Err(PlaceOrderError::ListingNotFound) => Err(refused(core, id, StockRefusal::ListingNotFound).await?),
        Err(PlaceOrderError::ListingNotActive) => Err(refused(core, id, StockRefusal::ListingNotActive).await?),
        Err(PlaceOrderError::InsufficientStock) => Err(refused(core, id, StockRefusal::InsufficientStock).await?),
        Err(PlaceOrderError::Store(e)) => Err(e.into()),
    }
}

/// Why no stock was taken, as the buyer is told: too many asks how many are left.
async fn refused(core: &Core, id: i64, refusal: StockRefusal) -> Result<CheckoutError, StoreError> {
    Ok(match refusal {
        StockRefusal::ListingNotFound => CheckoutError::NotFound,
        StockRefusal::ListingNotActive => CheckoutError::SoldOut,
        StockRefusal::InsufficientStock => {
            let left = core.store.market_listing(id).await?.map_or(0, |l| l.record.fields.quantity);
            if left == 0 {
                CheckoutError::SoldOut
            } else {
                CheckoutError::TooMany { left }
            }
        }
    })
}

/// What an order page shows: the order, or the purchase while it waits for its payment
/// (and after, should the payment lapse).
#[derive(Debug, Clone)]
pub enum BuyerPage {
    Order(BuyerOrder),
    Payment(Box<HoldRecord>),
}

/// The order (or held purchase) behind a page token, `None` for a token that names none.
pub async fn buyer_order(core: &Core, token: &str) -> Result<Option<BuyerPage>, StoreError> {
    if token.len() != 32 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(None);
    }
    let hash = token_sha256(token);
    if let Some(order) = core.store.buyer_order(&hash).await? {
        return Ok(Some(BuyerPage::Order(order)));
    }
    Ok(core.store.hold_by_token(&hash).await?.map(|hold| BuyerPage::Payment(Box::new(hold))))
}

/// SHA-256 of a token, in hex: what is stored and looked up.
pub fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The anti-forgery token of a checkout form on `day` (decisions 14.3): an HMAC of the day
/// under the storefront's secret, the same on every node. The form carries it and so does a
/// `SameSite=Strict` cookie; a post must carry both, equal, and of today or yesterday (a
/// page loaded before midnight still posts).
pub async fn anti_forgery(core: &Core, day: NaiveDate) -> Result<String, StoreError> {
    let secret = core.storefront.csrf_secret(&core.store).await?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).map_err(|e| {
        StoreError::Database(sqlx::Error::Protocol(format!("the anti-forgery secret is unusable: {e}")))
    })?;
    mac.update(format!("checkout:{day}").as_bytes());
    Ok(hex::encode(&mac.finalize().into_bytes()[..16]))
}

/// True when `token` is the anti-forgery token of today or yesterday.
pub async fn anti_forgery_holds(core: &Core, token: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
    use subtle::ConstantTimeEq;
    let today = now.date_naive();
    for day in [Some(today), today.pred_opt()].into_iter().flatten() {
        if bool::from(anti_forgery(core, day).await?.as_bytes().ct_eq(token.as_bytes())) {
            return Ok(true);
        }
    }
    Ok(false)
}
