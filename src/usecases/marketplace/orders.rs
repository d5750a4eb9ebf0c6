//! Orders (operator API): a buyer buys, the item is delivered, a listing is viewed.

use chrono::Utc;

use crate::domain::order::{Completion, OrderRequest};
use crate::store::{BuyerInsert, OrderCompletion, OrderPlacement, OrderRecord, StoreError, Ts};
use crate::usecases::{wallet, Core};

#[derive(Debug, thiserror::Error)]
pub enum PlaceOrderError {
    #[error("no such listing")]
    ListingNotFound,
    #[error("the listing is not on sale")]
    ListingNotActive,
    #[error("the listing has fewer units than ordered")]
    InsufficientStock,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Sells the units: the stock is taken atomically (never oversold however many buy at
/// once) and the listing closes when it reaches zero.
pub async fn place(core: &Core, request: &OrderRequest) -> Result<OrderRecord, PlaceOrderError> {
    place_for(core, request, None).await
}

/// [`place`] for a buyer on the storefront: the buyer and the confirmation mail are written
/// with the order, by the same conditional update that takes the stock.
pub async fn place_for(
    core: &Core,
    request: &OrderRequest,
    buyer: Option<&BuyerInsert<'_>>,
) -> Result<OrderRecord, PlaceOrderError> {
    match core.store.place_order_for(request, buyer).await? {
        OrderPlacement::Placed(order) => Ok(order),
        OrderPlacement::ListingNotFound => Err(PlaceOrderError::ListingNotFound),
        OrderPlacement::ListingNotActive => Err(PlaceOrderError::ListingNotActive),
        OrderPlacement::InsufficientStock => Err(PlaceOrderError::InsufficientStock),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompleteOrderError {
    #[error("no such order")]
    OrderNotFound,
    #[error("the order is already completed")]
    AlreadyCompleted,
    /// `completed_at` is more than a day ahead of now.
    #[error("the completion time is in the future")]
    CompletedAtInvalid,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How far ahead of this node's clock a given completion time may be: a delivery recorded
/// in another time zone's "today", or by a clock that runs fast, is not refused.
const FUTURE_SLACK: chrono::TimeDelta = chrono::TimeDelta::days(1);

/// The item reached the buyer (at the time given, else now): the sale is complete, and a
/// clearance sale's wallet entry is written with it (decisions 10.1). A given
/// time may not lie in the future. (One before the order was placed is accepted: operators
/// record deliveries from their own systems' clocks.)
pub async fn complete(core: &Core, order_id: i64, completion: Completion) -> Result<OrderRecord, CompleteOrderError> {
    let now = Utc::now();
    if completion.completed_at.is_some_and(|at| at > now + FUTURE_SLACK) {
        return Err(CompleteOrderError::CompletedAtInvalid);
    }
    let completed_at = Ts::from(completion.completed_at.unwrap_or(now));
    let order = core.store.order(order_id, None).await?.ok_or(CompleteOrderError::OrderNotFound)?;
    if order.is_completed() {
        return Err(CompleteOrderError::AlreadyCompleted);
    }
    // A delivered clearance sale earns the brand its payout (an exchange sale earns only
    // when its customer chooses credit).
    let entry = (!order.is_exchange()).then(|| wallet::sale_entry(&order, completed_at, core.config.hold()));
    match core.store.complete_order(order_id, completed_at, entry.as_ref()).await? {
        OrderCompletion::Completed(order) => Ok(order),
        OrderCompletion::NotFound => Err(CompleteOrderError::OrderNotFound),
        OrderCompletion::AlreadyCompleted => Err(CompleteOrderError::AlreadyCompleted),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CountViewError {
    #[error("no such listing")]
    ListingNotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Counts one view of a listing that is not trashed; answers the new count.
pub async fn count_view(core: &Core, listing_id: i64) -> Result<i64, CountViewError> {
    core.store.count_view(listing_id).await?.ok_or(CountViewError::ListingNotFound)
}
