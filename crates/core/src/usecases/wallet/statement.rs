//! What the wallet shows: entries and statements as every edge renders them (the JSON
//! API, the CSV and PDF statements, the dashboard), built once from the stored rows.

use chrono::{DateTime, Utc};
use serde_json::Value;

use rehome_domain::money::Pence;
use rehome_domain::order::order_reference;
use rehome_domain::settings::TimeZone;
use rehome_domain::statement::{Entry, Remittance, Totals};
use rehome_domain::view::{EntryRecord, RemittanceRecord};
use rehome_domain::wallet::{EntryStatus, LineMoney};

/// The entry of `record` as it stands at `now`.
pub fn entry(record: &EntryRecord, now: DateTime<Utc>) -> Entry {
    let status = EntryStatus::at(now, record.available_at.get(), record.remittance_id.is_some());
    Entry {
        id: record.id,
        kind: record.kind.clone(),
        order_id: record.order_id,
        order_reference: order_reference(record.order_id),
        listing_id: record.listing_id,
        title: record.title.clone(),
        quantity: record.quantity,
        money: Totals::from(record.money()),
        delivered_at: record.delivered_at.to_string(),
        available_at: record.available_at.to_string(),
        status: status.as_str(),
        remittance_id: record.remittance_id,
    }
}

/// A statement as its list shows it (without `lines`).
pub fn summary(record: &RemittanceRecord) -> Remittance {
    Remittance {
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

/// A statement with its lines, to render.
#[derive(Debug, Clone)]
pub struct Statement {
    pub record: RemittanceRecord,
    pub lines: Vec<Entry>,
}

impl Statement {
    pub fn new(record: RemittanceRecord, lines: &[EntryRecord]) -> Self {
        let at = record.issued_at.get();
        Self { lines: lines.iter().map(|l| entry(l, at)).collect(), record }
    }

    pub fn number(&self) -> i64 {
        self.record.number
    }

    /// The brand's name, as the statement prints it (its slug is for file names).
    pub fn brand(&self) -> &str {
        &self.record.brand_name
    }

    /// The brand's time zone, in which the heading writes its instants.
    pub fn zone(&self) -> TimeZone {
        TimeZone::stored(&self.record.brand_time_zone)
    }

    pub fn period_end(&self) -> String {
        self.record.period_end.to_string()
    }

    /// The period in words in the brand's zone: `3 Nov 2026, 00:00 GMT to 1 Dec 2026, 00:00
    /// GMT`, or `up to …` for the brand's first statement.
    pub fn period_words(&self) -> String {
        period_words(self.record.period_start.map(|t| t.get()), self.record.period_end.get(), self.zone())
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

    /// The name a person saves the file under: `<brand name> statement <number>.<ext>`
    /// (the CSV's rows are the spec's: a header, the lines, the totals, so the file's
    /// name is where the CSV says whose it is). Characters a file system refuses are
    /// left out.
    pub fn display_file_name(&self, extension: &str) -> String {
        let brand: String = self
            .record
            .brand_name
            .chars()
            .filter(|c| !c.is_control() && !matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|'))
            .collect();
        format!("{} statement {}.{extension}", brand.trim(), self.record.number)
    }

    /// The statement's file names: `remittance-<brand>-<number>.<ext>`.
    pub fn file_name(&self, extension: &str) -> String {
        format!("remittance-{}-{}.{extension}", self.record.brand_slug, self.record.number)
    }
}

/// A statement's period in words in `zone`, from the previous statement's end (none: the
/// brand's first) to its own.
pub fn period_words(start: Option<DateTime<Utc>>, end: DateTime<Utc>, zone: TimeZone) -> String {
    match start {
        Some(start) => format!("{} to {}", zone.when(start), zone.when(end)),
        None => format!("up to {} (the first statement)", zone.when(end)),
    }
}

/// Pounds with two decimals and thousands separators (`1,234.50`), as people read them:
/// the dashboard, the statement's PDF and mail. (The CSV and the API write numbers.)
pub fn pounds(pence: i64) -> String {
    rehome_domain::money::thousands(&Pence::new(pence).to_string())
}
