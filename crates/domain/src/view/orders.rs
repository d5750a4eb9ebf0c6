//! Orders and collections as the use cases answer them.

use chrono::NaiveDate;

use crate::channel::Channel;
use crate::checkout::HoldStatus;
use crate::order::{BuyerWindow, OrderStatus};
use crate::time::Ts;

/// A stored order with its brand's slug.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct OrderRecord {
    pub id: i64,
    pub brand_id: i64,
    pub brand_slug: String,
    pub listing_id: i64,
    /// As the listing was when it sold.
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub channel: Channel,
    pub quantity: i64,
    pub unit_price_pence: i64,
    pub buyer_window_start: NaiveDate,
    pub buyer_window_end: NaiveDate,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub status: OrderStatus,
    pub completed_at: Option<Ts>,
    pub created_at: Ts,
    /// The listing's title when it sold.
    pub title: String,
    /// The listing's delivery contribution (whole pounds) when it sold.
    pub delivery_contribution_gbp: i64,
}

impl OrderRecord {
    pub fn is_completed(&self) -> bool {
        self.status == OrderStatus::Completed
    }

    pub fn is_exchange(&self) -> bool {
        self.channel == Channel::Exchange
    }

    /// What the whole order sold for, in pence.
    pub fn total_pence(&self) -> i64 {
        self.unit_price_pence.saturating_mul(self.quantity)
    }

    pub fn window(&self) -> BuyerWindow {
        BuyerWindow { start: self.buyer_window_start, end: self.buyer_window_end }
    }
}

/// Which of a brand's orders to list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrderFilter {
    pub status: Option<OrderStatus>,
    pub channel: Option<Channel>,
    /// Only orders placed by buyers on the storefront.
    pub from_buyers: bool,
}

/// One order of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct BrandOrderRow {
    pub id: i64,
    pub listing_id: i64,
    pub title: String,
    pub quantity: i64,
    pub unit_price_pence: i64,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub status: OrderStatus,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub channel: Channel,
    pub buyer_window_start: NaiveDate,
    pub buyer_window_end: NaiveDate,
    pub collection: Option<NaiveDate>,
    /// The storefront buyer's postcode; `None` for an order placed through the operator API
    /// (or whose buyer's details the retention job has deleted).
    pub buyer_postcode: Option<String>,
    pub created_at: Ts,
}

/// A clearance order and its collection, if scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct CollectionRow {
    pub order_id: i64,
    pub brand_slug: String,
    pub listing_id: i64,
    pub quantity: i64,
    pub buyer_window_start: NaiveDate,
    pub buyer_window_end: NaiveDate,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub order_status: OrderStatus,
    pub id: Option<String>,
    pub scheduled_for: Option<NaiveDate>,
    pub scheduled_at: Option<Ts>,
    pub warehouse_id: Option<String>,
    pub warehouse_label: Option<String>,
    /// The title sold (the order's, else its listing's as it is now).
    pub title: Option<String>,
    /// The listing's warehouse as it is now (the collection's default).
    pub listing_warehouse_id: Option<String>,
}

/// A purchase waiting for (or settled by) its payment.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct HoldRecord {
    pub id: i64,
    pub brand_id: i64,
    pub listing_id: i64,
    pub channel: String,
    pub quantity: i64,
    /// The price the buyer is asked to pay for each unit: the listing's when the hold began.
    pub unit_price_pence: i64,
    pub title: String,
    /// The brand's name as the buyer saw it.
    pub brand_name: String,
    pub delivery_contribution_gbp: i64,
    pub buyer_window_start: NaiveDate,
    pub buyer_window_end: NaiveDate,
    pub token_sha256: String,
    /// The page token, sealed (the store opens it); `None` once the hold is settled.
    pub token_sealed: Option<Vec<u8>>,
    /// The buyer's details, kept only while the hold is pending.
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub postcode: Option<String>,
    pub provider: String,
    pub session_id: Option<String>,
    pub session_url: Option<String>,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub status: HoldStatus,
    pub order_id: Option<i64>,
    pub held_until: Ts,
    /// How many times the job has taken the hold (each lapse and retry).
    pub attempts: i64,
    pub created_at: Ts,
}

impl HoldRecord {
    pub fn total_pence(&self) -> i64 {
        self.unit_price_pence.saturating_mul(self.quantity)
    }

    pub fn window(&self) -> BuyerWindow {
        BuyerWindow { start: self.buyer_window_start, end: self.buyer_window_end }
    }
}
