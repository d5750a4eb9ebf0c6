//! Buying from a listing's page (decisions 14.3, 14.5): the order is placed by the same use
//! case and the same conditional update as `POST /ops/v1/orders`, with the buyer and the
//! confirmation mail written in its transaction; the buyer follows an unguessable token to
//! the order's page. Buyers act for nobody: no actor.

use chrono::{DateTime, NaiveDate, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::orders::{self, PlaceOrderError};
use crate::domain::checkout::Buyer;
use crate::domain::order::{order_reference, BuyerWindow, OrderRequest};
use crate::store::{BuyerInsert, BuyerOrder, OrderRecord, OwnedMail, StoreError};
use crate::usecases::Core;

/// An order placed: its page's token (shown once, in the redirect and the mail).
#[derive(Debug, Clone)]
pub struct Placed {
    pub token: String,
    pub order: OrderRecord,
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
    let page = format!("{}/marketplace/orders/{token}", core.config.public_url.as_deref().unwrap_or_default());
    let mail_on = core.config.mail_enabled();
    let brand = listing.brand_name.clone();
    let to = buyer.email.as_str().to_owned();
    let name = buyer.name.clone();
    let confirmation = move |order: &OrderRecord| {
        mail_on.then(|| OwnedMail {
            brand_id: Some(order.brand_id),
            to: to.clone(),
            subject: format!("Your order {}: {}", order_reference(order.id), order.title),
            text: confirmation_text(&name, &brand, order, &page),
        })
    };
    let insert = BuyerInsert {
        token_sha256: &hash,
        name: &buyer.name,
        email: buyer.email.as_str(),
        phone: buyer.phone.as_ref().map(|p| p.as_str()),
        postcode: buyer.postcode.as_str(),
        confirmation: &confirmation,
    };
    let request = OrderRequest { listing_id: id, quantity, window };
    match orders::place_for(core, &request, Some(&insert)).await {
        Ok(order) => {
            core.mail.wake();
            Ok(Placed { token, order })
        }
        Err(PlaceOrderError::ListingNotFound) => Err(CheckoutError::NotFound),
        Err(PlaceOrderError::ListingNotActive) => Err(CheckoutError::SoldOut),
        Err(PlaceOrderError::InsufficientStock) => {
            let left = core.store.market_listing(id).await?.map_or(0, |l| l.record.fields.quantity);
            Err(if left == 0 { CheckoutError::SoldOut } else { CheckoutError::TooMany { left } })
        }
        Err(PlaceOrderError::Store(e)) => Err(e.into()),
    }
}

/// The confirmation mail's text.
fn confirmation_text(name: &str, brand: &str, order: &OrderRecord, page: &str) -> String {
    let total = crate::domain::money::Pence::new(order.total_pence()).pounds();
    let each = crate::domain::money::Pence::new(order.unit_price_pence).pounds();
    format!(
        "Hello {name},\n\nThank you for your order {reference} on the rehome marketplace.\n\n\
         {title} × {quantity}\nPrice: {total} ({each} each)\nSold by: {brand}\n\
         Delivery window: {window}\n\n\
         You pay nothing on this site: {brand} contacts you to take payment and to arrange delivery to your \
         address. {brand} will confirm the day your \
         piece is collected for delivery, and we will email you when they do.\n\n\
         Your order, at any time: {page}\n",
        reference = order_reference(order.id),
        title = order.title,
        quantity = order.quantity,
        window = order.window().words(),
    )
}

/// The order behind a page token, `None` for a token that names none.
pub async fn buyer_order(core: &Core, token: &str) -> Result<Option<BuyerOrder>, StoreError> {
    if token.len() != 32 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(None);
    }
    core.store.buyer_order(&token_sha256(token)).await
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
