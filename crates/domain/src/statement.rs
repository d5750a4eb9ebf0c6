//! What the wallet shows, as every edge renders it (the JSON API, the CSV and PDF
//! statements, the dashboard): a ledger entry, a statement's totals and a statement, with
//! money in pence and in GBP. Built from the stored rows by the wallet's use cases.

use serde::Serialize;
use serde_json::Value;

use super::money::Pence;
use super::wallet::LineMoney;

/// One ledger entry; also a line of a statement.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Entry {
    pub id: i64,
    /// `sale` (a delivered clearance order) or `trade_in` (a credit choice).
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(rename = "type"))]
    pub kind: String,
    pub order_id: i64,
    /// `#<order id>`.
    pub order_reference: String,
    pub listing_id: i64,
    /// The listing's title when it sold.
    pub title: String,
    pub quantity: i64,
    /// What the buyer paid (quantity × unit price), the commission and the VAT on it (0 on a
    /// trade-in), the delivery contributions (0 on a trade-in) and what the brand is paid
    /// (quantity × payout per unit, or a trade-in's base): each in pence and in GBP.
    #[serde(flatten)]
    pub money: Totals,
    /// When the order was delivered, RFC 3339 UTC.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub delivered_at: String,
    /// When the hold ends, RFC 3339 UTC.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub available_at: String,
    /// `pending`, `available` or `paid`.
    pub status: &'static str,
    /// The statement that paid it, or null.
    pub remittance_id: Option<i64>,
}

/// The columns of a statement's CSV, which are the fields of [`Entry`] in order.
pub const LINE_COLUMNS: [&str; 21] = [
    "id",
    "type",
    "order_id",
    "order_reference",
    "listing_id",
    "title",
    "quantity",
    "gross_pence",
    "gross",
    "commission_pence",
    "commission",
    "vat_pence",
    "vat",
    "delivery_pence",
    "delivery",
    "amount_pence",
    "amount",
    "delivered_at",
    "available_at",
    "status",
    "remittance_id",
];

/// Money in pence with GBP twins.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Totals {
    pub gross_pence: i64,
    pub gross: f64,
    pub commission_pence: i64,
    pub commission: f64,
    pub vat_pence: i64,
    pub vat: f64,
    pub delivery_pence: i64,
    pub delivery: f64,
    pub amount_pence: i64,
    pub amount: f64,
}

impl From<LineMoney> for Totals {
    fn from(m: LineMoney) -> Self {
        Self {
            gross_pence: m.gross,
            gross: gbp(m.gross),
            commission_pence: m.commission,
            commission: gbp(m.commission),
            vat_pence: m.vat,
            vat: gbp(m.vat),
            delivery_pence: m.delivery,
            delivery: gbp(m.delivery),
            amount_pence: m.amount,
            amount: gbp(m.amount),
        }
    }
}

/// A statement. In a list, `lines` is absent.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Remittance {
    pub id: i64,
    /// 1, 2, 3… per brand, without gaps.
    pub number: i64,
    /// Slug of the brand paid.
    pub brand_id: String,
    /// Every entry available at this instant and not paid before is on the statement.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub period_end: String,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub issued_at: String,
    /// The billing entity as it was at issue (the billing settings' fields).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub billing: Value,
    pub line_count: i64,
    pub totals: Totals,
    /// The entries paid, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<Entry>>,
}

/// Pence as GBP, the twin of every `_pence` amount.
fn gbp(pence: i64) -> f64 {
    Pence::new(pence).gbp()
}
