//! Redemptions: a customer's recorded payout choice for a sold trade-in (decisions 6.6).

use serde::Serialize;

/// The currency of every value.
pub const CURRENCY: &str = "GBP";

/// A redemption: the `data` of a `redemption.created` event, field for field.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Redemption {
    /// Stable redemption id (`red_…`).
    #[cfg_attr(feature = "openapi", schema(example = "red_4fQk2mZ8xYp1Lw9Tn3Vb6Hs0"))]
    pub id: String,
    /// Slug of the brand the redemption was issued against.
    pub brand_id: String,
    pub customer_id: String,
    /// `credit` or `cash`.
    pub customer_choice: String,
    /// `existing_order` or `code` for credit; null for cash.
    pub credit_destination: Option<String>,
    /// Pre-boosted for credit, unboosted for cash.
    pub value_pence: i64,
    /// Always `value_pence` / 100.
    pub value: f64,
    /// `GBP`.
    pub currency: &'static str,
    /// The single-use code when the destination is `code`, else null. It is shown in full
    /// in the event, in the payout-choice answer and in `GET /v1/redemptions` (the service
    /// keeps it sealed with its data key, and only a hash to find it by); redemptions
    /// recorded before codes were sealed show the hint (`RH-****-****-****-9XKD`).
    #[cfg_attr(feature = "openapi", schema(example = "RH-7Q2M-9XKD-4TPW-H8CN"))]
    pub code: Option<String>,
    /// Expiry of the code when the destination is `code`, else null.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub expires_at: Option<String>,
    /// The order to credit when the destination is `existing_order`, else null.
    pub original_order_id: Option<String>,
    /// The exchange listing whose sale triggered the payout.
    pub related_listing_id: i64,
    /// When the sale completed (delivery to the buyer), RFC 3339 UTC.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub sale_completed_at: String,
    /// Whether and how the code was spent (the dashboard's; not on the wire).
    #[serde(skip)]
    pub spent: Option<Spent>,
}

/// A credit code's spending: when, by whom, on which order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spent {
    /// RFC 3339 UTC.
    pub at: String,
    /// As the audit log names them; unknown for codes spent before it was kept.
    pub by: Option<String>,
    pub order_reference: Option<String>,
}
