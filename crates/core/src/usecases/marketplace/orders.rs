//! Orders (operator API): a buyer buys, the item is delivered, a listing is viewed.

use chrono::Utc;

use crate::usecases::refusal::Refusal;
use crate::usecases::{wallet, Core};
use rehome_domain::order::{Completion, OrderRequest};
use rehome_domain::outcome::Outcome;
use rehome_domain::time::Ts;
use rehome_domain::view::OrderRecord;
use rehome_store::{BuyerInsert, OrderCompletion, OrderPlacement, StoreError};

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

impl From<PlaceOrderError> for Refusal {
    fn from(e: PlaceOrderError) -> Self {
        match e {
            PlaceOrderError::ListingNotFound => Outcome::UnknownListing.into(),
            PlaceOrderError::ListingNotActive => Outcome::ListingNotActive.into(),
            PlaceOrderError::InsufficientStock => Outcome::InsufficientStock.into(),
            PlaceOrderError::Store(e) => e.into(),
        }
    }
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

impl From<CompleteOrderError> for Refusal {
    fn from(e: CompleteOrderError) -> Self {
        match e {
            CompleteOrderError::OrderNotFound => Outcome::UnknownOrder.into(),
            CompleteOrderError::AlreadyCompleted => Outcome::OrderAlreadyCompleted.into(),
            CompleteOrderError::CompletedAtInvalid => Refusal::field("completed_at", "completed_at_invalid"),
            CompleteOrderError::Store(e) => e.into(),
        }
    }
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

impl From<CountViewError> for Refusal {
    fn from(e: CountViewError) -> Self {
        match e {
            CountViewError::ListingNotFound => Outcome::UnknownListing.into(),
            CountViewError::Store(e) => e.into(),
        }
    }
}

/// Counts one view of a listing that is not trashed; answers the new count.
pub async fn count_view(core: &Core, listing_id: i64) -> Result<i64, CountViewError> {
    core.store.count_view(listing_id).await?.ok_or(CountViewError::ListingNotFound)
}

/// An order as the brand's staff see it (the Orders page, its CSV): of the buyer, the
/// postcode's district only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrandOrder {
    pub id: i64,
    pub listing_id: i64,
    pub title: String,
    pub quantity: i64,
    pub unit_price: rehome_domain::money::Pence,
    pub total: rehome_domain::money::Pence,
    pub status: rehome_domain::order::OrderStatus,
    pub channel: rehome_domain::listing::Channel,
    pub window: rehome_domain::order::BuyerWindow,
    pub collection: Option<chrono::NaiveDate>,
    /// The storefront buyer's postcode district (`SW1A`); `None` for an order from the
    /// operator API.
    pub district: Option<String>,
    pub created_at: Ts,
}

/// A page of the actor's brand's orders, newest first, and how many match in all.
pub async fn for_brand(
    core: &Core,
    actor: &rehome_domain::user::Actor,
    filter: &rehome_domain::view::OrderFilter,
    limit: i64,
    offset: i64,
) -> Result<(Vec<BrandOrder>, i64), StoreError> {
    use rehome_domain::money::Pence;
    let (rows, total) = core.store.brand_orders(actor.brand_id, filter, limit, offset).await?;
    let orders = rows
        .into_iter()
        .map(|row| BrandOrder {
            id: row.id,
            listing_id: row.listing_id,
            title: row.title,
            quantity: row.quantity,
            unit_price: Pence::new(row.unit_price_pence),
            total: Pence::new(row.unit_price_pence.saturating_mul(row.quantity)),
            status: row.status,
            channel: row.channel,
            window: rehome_domain::order::BuyerWindow { start: row.buyer_window_start, end: row.buyer_window_end },
            collection: row.collection,
            district: row.buyer_postcode.as_deref().map(|p| rehome_domain::checkout::district(p).to_owned()),
            created_at: row.created_at,
        })
        .collect();
    Ok((orders, total))
}

/// The Orders page's rows as CSV: a header, then one row per order (money in pounds with two
/// decimals, dates as `YYYY-MM-DD`; a title a spreadsheet would run as a formula written as
/// text).
pub fn orders_csv(orders: &[BrandOrder]) -> Result<Vec<u8>, csv::Error> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "order",
        "placed",
        "listing_id",
        "item",
        "quantity",
        "unit_price_gbp",
        "total_gbp",
        "channel",
        "status",
        "window_start",
        "window_end",
        "collection",
        "buyer_district",
    ])?;
    for o in orders {
        let title = crate::usecases::wallet::csv::spreadsheet_safe(&o.title).unwrap_or_else(|| o.title.clone());
        out.write_record([
            rehome_domain::order::order_reference(o.id),
            o.created_at.get().format("%Y-%m-%d").to_string(),
            o.listing_id.to_string(),
            title,
            o.quantity.to_string(),
            o.unit_price.to_string(),
            o.total.to_string(),
            o.channel.as_str().to_owned(),
            o.status.as_str().to_owned(),
            o.window.start.to_string(),
            o.window.end.to_string(),
            o.collection.map(|d| d.to_string()).unwrap_or_default(),
            o.district.clone().unwrap_or_default(),
        ])?;
    }
    out.into_inner().map_err(|e| e.into_error().into())
}
