//! What the wallet shows: entries and statements as every edge renders them (the JSON
//! API, the CSV and PDF statements, the dashboard), built once from the stored rows.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::money::Pence;
use crate::domain::order::order_reference;
use crate::domain::wallet::{EntryStatus, LineMoney};
use crate::store::{EntryRecord, RemittanceRecord};

/// One ledger entry (decisions 10.3); also a line of a statement.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Entry {
    pub id: i64,
    /// `sale` (a delivered clearance order) or `trade_in` (a credit choice).
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub kind: String,
    pub order_id: i64,
    /// `#<order id>`.
    pub order_reference: String,
    pub listing_id: i64,
    /// The listing's title when it sold.
    pub title: String,
    pub quantity: i64,
    /// What the buyer paid: quantity × unit price.
    pub gross_pence: i64,
    pub gross: f64,
    /// Quantity × the commission of one unit (0 on a trade-in).
    pub commission_pence: i64,
    pub commission: f64,
    /// Quantity × the VAT on one unit's commission (0 on a trade-in).
    pub vat_pence: i64,
    pub vat: f64,
    /// Quantity × the delivery contribution (0 on a trade-in).
    pub delivery_pence: i64,
    pub delivery: f64,
    /// What the brand is paid: quantity × payout per unit, or a trade-in's base.
    pub amount_pence: i64,
    pub amount: f64,
    /// When the order was delivered, RFC 3339 UTC.
    #[schema(format = DateTime)]
    pub delivered_at: String,
    /// When the hold ends, RFC 3339 UTC.
    #[schema(format = DateTime)]
    pub available_at: String,
    /// `pending`, `available` or `paid`.
    pub status: &'static str,
    /// The statement that paid it, or null.
    pub remittance_id: Option<i64>,
}

impl Entry {
    /// The entry as it stands at `now`.
    pub fn at(record: &EntryRecord, now: DateTime<Utc>) -> Self {
        let status = EntryStatus::at(now, record.available_at.get(), record.remittance_id.is_some());
        Self {
            id: record.id,
            kind: record.kind.clone(),
            order_id: record.order_id,
            order_reference: order_reference(record.order_id),
            listing_id: record.listing_id,
            title: record.title.clone(),
            quantity: record.quantity,
            gross_pence: record.gross_pence,
            gross: gbp(record.gross_pence),
            commission_pence: record.commission_pence,
            commission: gbp(record.commission_pence),
            vat_pence: record.vat_pence,
            vat: gbp(record.vat_pence),
            delivery_pence: record.delivery_pence,
            delivery: gbp(record.delivery_pence),
            amount_pence: record.amount_pence,
            amount: gbp(record.amount_pence),
            delivered_at: record.delivered_at.to_string(),
            available_at: record.available_at.to_string(),
            status: status.as_str(),
            remittance_id: record.remittance_id,
        }
    }
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
#[derive(Debug, Clone, Serialize, ToSchema)]
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

/// A statement (decisions 10.5). In a list, `lines` is absent.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Remittance {
    pub id: i64,
    /// 1, 2, 3… per brand, without gaps.
    pub number: i64,
    /// Slug of the brand paid.
    pub brand_id: String,
    /// Every entry available at this instant and not paid before is on the statement.
    #[schema(format = DateTime)]
    pub period_end: String,
    #[schema(format = DateTime)]
    pub issued_at: String,
    /// The billing entity as it was at issue (the billing settings' fields).
    #[schema(value_type = Object)]
    pub billing: Value,
    pub line_count: i64,
    pub totals: Totals,
    /// The entries paid, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<Entry>>,
}

impl Remittance {
    pub fn summary(record: &RemittanceRecord) -> Self {
        Self {
            id: record.id,
            number: record.number,
            brand_id: record.brand_slug.clone(),
            period_end: record.period_end.to_string(),
            issued_at: record.issued_at.to_string(),
            billing: serde_json::from_str(&record.billing).unwrap_or(Value::Null),
            line_count: record.line_count,
            totals: record.totals().into(),
            lines: None,
        }
    }
}

/// A statement with its lines, to render.
#[derive(Debug, Clone)]
pub struct Statement {
    pub record: RemittanceRecord,
    pub lines: Vec<Entry>,
}

impl Statement {
    pub fn new(record: RemittanceRecord, lines: &[EntryRecord]) -> Self {
        let at = record.issued_at.get();
        Self { lines: lines.iter().map(|l| Entry::at(l, at)).collect(), record }
    }

    pub fn number(&self) -> i64 {
        self.record.number
    }

    pub fn brand(&self) -> &str {
        &self.record.brand_slug
    }

    pub fn period_end(&self) -> String {
        self.record.period_end.to_string()
    }

    pub fn issued_at(&self) -> String {
        self.record.issued_at.to_string()
    }

    pub fn totals(&self) -> LineMoney {
        self.record.totals()
    }

    /// The billing entity, one printed line per set field.
    pub fn billing_lines(&self) -> Vec<String> {
        let billing: Value = serde_json::from_str(&self.record.billing).unwrap_or(Value::Null);
        let field = |name: &str| billing.get(name).and_then(Value::as_str).unwrap_or("").trim().to_owned();
        let city_line = [field("city"), field("postcode")].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>();
        let mut lines =
            vec![field("company_name"), field("address_1"), field("address_2"), city_line.join(" "), field("country")];
        for (label, name) in
            [("Company number", "company_number"), ("VAT number", "vat_number"), ("Invoices to", "invoice_email")]
        {
            let value = field(name);
            if !value.is_empty() {
                lines.push(format!("{label}: {value}"));
            }
        }
        lines.retain(|l| !l.is_empty());
        if lines.is_empty() {
            lines.push("(no billing entity set)".to_owned());
        }
        lines
    }

    /// The statement's file names: `remittance-<brand>-<number>.<ext>`.
    pub fn file_name(&self, extension: &str) -> String {
        format!("remittance-{}-{}.{extension}", self.record.brand_slug, self.record.number)
    }
}

fn gbp(pence: i64) -> f64 {
    Pence::new(pence).gbp()
}

/// Pounds with two decimals (`1234.50`), as statements print them.
pub fn pounds(pence: i64) -> String {
    Pence::new(pence).to_string()
}
