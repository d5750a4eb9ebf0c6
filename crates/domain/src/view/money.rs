//! Money as the use cases answer it: redemptions, wallet entries, remittances, and the
//! filters of their lists.

use crate::payout::{CreditDestination, CustomerChoice};
use crate::time::Ts;
use crate::wallet::{EntryStatus, EntryType, LineMoney};

#[cfg(feature = "sqlx")]
use super::stored::Destination;

/// What recording a redemption did.
/// Where a redemption stands, for the dashboard's filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedemptionState {
    /// A credit code not spent and not expired.
    CodeNotSpent,
    CodeSpent,
    /// A credit code past its expiry, never spent.
    CodeExpired,
    /// Credit added to the customer's existing order.
    CreditToOrder,
    Cash,
}

/// Which redemptions a list keeps: in a state (any when `None`), of a customer (exact id).
#[derive(Debug, Clone, Default)]
pub struct RedemptionFilter {
    pub state: Option<RedemptionState>,
    pub customer: Option<String>,
}

/// A stored redemption with its brand's slug. The code is stored only sealed with the data
/// key (the store opens it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct RedemptionRecord {
    pub id: String,
    pub brand_slug: String,
    pub customer_id: String,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub customer_choice: CustomerChoice,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "Destination"))]
    pub credit_destination: Option<CreditDestination>,
    pub value_pence: i64,
    pub code_hint: Option<String>,
    pub code_sealed: Option<Vec<u8>>,
    pub expires_at: Option<Ts>,
    pub original_order_id: Option<String>,
    pub related_listing_id: i64,
    pub sale_completed_at: Ts,
    pub created_at: Ts,
    pub redeemed_at: Option<Ts>,
    pub redeemed_order_reference: Option<String>,
    /// Who spent the code, as the audit log names them.
    pub redeemed_by: Option<String>,
}

/// Which entries a list keeps: of a type, in a status (at the reading's `now`), delivered
/// within `[from, until)` (a month); each `None` keeps all.
#[derive(Debug, Clone, Copy, Default)]
pub struct EntryFilter {
    pub kind: Option<EntryType>,
    pub status: Option<EntryStatus>,
    pub month: Option<(Ts, Ts)>,
}

/// A stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct EntryRecord {
    pub id: i64,
    #[cfg_attr(feature = "sqlx", sqlx(rename = "type"))]
    pub kind: String,
    pub order_id: i64,
    pub listing_id: i64,
    pub title: String,
    pub quantity: i64,
    pub gross_pence: i64,
    pub commission_pence: i64,
    pub vat_pence: i64,
    pub delivery_pence: i64,
    pub amount_pence: i64,
    pub delivered_at: Ts,
    pub available_at: Ts,
    pub remittance_id: Option<i64>,
}

impl EntryRecord {
    /// The entry's money, in pence.
    pub fn money(&self) -> LineMoney {
        LineMoney {
            gross: self.gross_pence,
            commission: self.commission_pence,
            vat: self.vat_pence,
            delivery: self.delivery_pence,
            amount: self.amount_pence,
        }
    }
}

/// A stored statement, without its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct RemittanceRecord {
    pub id: i64,
    pub brand_slug: String,
    /// The brand's name (what the statement prints), and its time zone (the heading's
    /// instants).
    pub brand_name: String,
    pub brand_time_zone: String,
    pub number: i64,
    pub period_end: Ts,
    pub issued_at: Ts,
    /// The billing entity at issue, as JSON.
    pub billing: String,
    pub line_count: i64,
    pub gross_pence: i64,
    pub commission_pence: i64,
    pub vat_pence: i64,
    pub delivery_pence: i64,
    pub amount_pence: i64,
    /// The previous statement's `period_end`, where this one's period starts (none for the
    /// brand's first).
    pub period_start: Option<Ts>,
}

impl RemittanceRecord {
    pub fn totals(&self) -> LineMoney {
        LineMoney {
            gross: self.gross_pence,
            commission: self.commission_pence,
            vat: self.vat_pence,
            delivery: self.delivery_pence,
            amount: self.amount_pence,
        }
    }
}
