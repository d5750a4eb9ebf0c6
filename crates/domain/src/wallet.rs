//! The wallet (decisions 10): what a brand earns from each sale, when it may be paid, and
//! when the monthly statement pays it. Pure rules: the store keeps the ledger.

use chrono::{DateTime, Datelike, NaiveDate, TimeDelta, TimeZone, Utc};

use serde_json::{Map, Value};

use super::body::{BodySpec, Field, FieldType};
use super::listing::Channel;
use super::money::{Pence, UnitMoney};
use super::reader::BodyReader;
use super::FieldError;

/// What earned an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    /// A clearance order delivered to its buyer.
    Sale,
    /// A sold exchange item whose customer chose store credit (a cash choice earns
    /// nothing: the brand does not pay it through rehome).
    TradeIn,
}

impl EntryType {
    pub const ALL: [Self; 2] = [Self::Sale, Self::TradeIn];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sale => "sale",
            Self::TradeIn => "trade_in",
        }
    }

    /// The type as people read it.
    pub fn words(self) -> &'static str {
        match self {
            Self::Sale => "Sale",
            Self::TradeIn => "Trade-in (store credit)",
        }
    }

    /// The type in a word, for a narrow column (the statement's PDF).
    pub fn word(self) -> &'static str {
        match self {
            Self::Sale => "Sale",
            Self::TradeIn => "Trade-in",
        }
    }

    /// The type of a stored or answered name (`sale`, `trade_in`).
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// Where an entry stands: derived from the time, never flipped by a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus {
    /// Within the hold after delivery.
    Pending,
    /// Past the hold, waiting for the next statement.
    Available,
    /// On a statement.
    Paid,
}

impl EntryStatus {
    /// The status at `now` of an entry available from `available_at`.
    pub fn at(now: DateTime<Utc>, available_at: DateTime<Utc>, remitted: bool) -> Self {
        if remitted {
            Self::Paid
        } else if available_at <= now {
            Self::Available
        } else {
            Self::Pending
        }
    }

    pub const ALL: [Self; 3] = [Self::Pending, Self::Available, Self::Paid];

    /// The status as people read it.
    pub fn words(self) -> &'static str {
        match self {
            Self::Pending => "Pending (in the hold)",
            Self::Available => "Available",
            Self::Paid => "Paid",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Available => "available",
            Self::Paid => "paid",
        }
    }
}

/// The money of an entry, or the totals of a statement, in pence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineMoney {
    /// What the buyer paid.
    pub gross: i64,
    pub commission: i64,
    /// VAT on the commission.
    pub vat: i64,
    /// The delivery contribution.
    pub delivery: i64,
    /// What the brand is paid.
    pub amount: i64,
}

impl LineMoney {
    /// A clearance sale of `quantity` units at `unit_price` (the listing's money at the time
    /// of sale): each part is the quantity times the part of one unit, so the amount is
    /// exactly quantity × payout per unit (decisions 10.1).
    pub fn sale(unit_price: Pence, delivery_contribution_gbp: u32, quantity: i64) -> Self {
        let unit = UnitMoney::of(Channel::Clearance, unit_price, delivery_contribution_gbp);
        let times = |p: Pence| p.get().saturating_mul(quantity);
        Self {
            gross: times(unit.price),
            commission: times(unit.commission),
            vat: times(unit.vat),
            delivery: times(unit.delivery),
            amount: times(unit.payout),
        }
    }

    /// A credit trade-in: the brand owes the redemption's base, the price the item sold for.
    pub fn trade_in(base: Pence) -> Self {
        Self { gross: base.get(), amount: base.get(), ..Self::default() }
    }

    /// Column by column.
    pub fn plus(self, other: Self) -> Self {
        Self {
            gross: self.gross.saturating_add(other.gross),
            commission: self.commission.saturating_add(other.commission),
            vat: self.vat.saturating_add(other.vat),
            delivery: self.delivery.saturating_add(other.delivery),
            amount: self.amount.saturating_add(other.amount),
        }
    }
}

/// The settlement hold: how long after delivery an entry stays pending
/// (`REHOME_SETTLEMENT_HOLD_HOURS`, default 48).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    hours: u32,
}

impl Hold {
    pub const DEFAULT_HOURS: u32 = 48;
    /// A year: a longer hold is a mistake in the setting, not a policy.
    pub const MAX_HOURS: u32 = 24 * 366;

    pub fn hours(hours: u32) -> Option<Self> {
        (hours <= Self::MAX_HOURS).then_some(Self { hours })
    }

    pub fn get(self) -> u32 {
        self.hours
    }

    /// When an entry delivered at `delivered_at` becomes available.
    pub fn available_at(self, delivered_at: DateTime<Utc>) -> DateTime<Utc> {
        delivered_at + TimeDelta::hours(i64::from(self.hours))
    }
}

impl Default for Hold {
    fn default() -> Self {
        Self { hours: Self::DEFAULT_HOURS }
    }
}

/// 00:00 UTC on the 1st of the month of `now`: the period end of the monthly run due at `now`.
pub fn month_start(now: DateTime<Utc>) -> DateTime<Utc> {
    let first = NaiveDate::from_ymd_opt(now.year(), now.month(), 1).unwrap_or(now.date_naive());
    Utc.from_utc_datetime(&first.and_time(chrono::NaiveTime::MIN))
}

/// The next monthly run after `now`: 00:00 UTC on the 1st of the following month.
pub fn next_run(now: DateTime<Utc>) -> DateTime<Utc> {
    let (year, month) = if now.month() == 12 { (now.year() + 1, 1) } else { (now.year(), now.month() + 1) };
    let first = NaiveDate::from_ymd_opt(year, month, 1).unwrap_or(now.date_naive());
    Utc.from_utc_datetime(&first.and_time(chrono::NaiveTime::MIN))
}

pub const RUN_BODY: BodySpec = BodySpec {
    name: "RemittanceRunInput",
    doc: "The body of `POST /ops/v1/remittances/run`: optional; an empty body means now.",
    fields: &[Field::optional(
        "as_of",
        FieldType::Timestamp,
        "RFC 3339, not in the future; default now. Entries available at this instant are paid.",
    )],
    example: r#"{"as_of": "2026-11-01T00:00:00Z"}"#,
};

/// `POST /ops/v1/remittances/run`: the instant whose available entries the run pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRequest {
    /// `None`: now.
    pub as_of: Option<DateTime<Utc>>,
}

impl RunRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &RUN_BODY);
        let as_of = r.timestamp("as_of");
        r.finish(Self { as_of })
    }
}

crate::documented_body!(RunRequest, RUN_BODY);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_sale_keeps_the_parts_of_each_unit_times_the_quantity() {
        // £199.99: commission 30.00 (29.9985 rounded half up), VAT 6.00, delivery £30.
        let money = LineMoney::sale(Pence::new(19_999), 30, 3);
        assert_eq!(
            money,
            LineMoney { gross: 59_997, commission: 9_000, vat: 1_800, delivery: 9_000, amount: 3 * 13_399 }
        );
    }

    #[test]
    fn a_trade_in_owes_its_base() {
        assert_eq!(
            LineMoney::trade_in(Pence::new(12_345)),
            LineMoney { gross: 12_345, amount: 12_345, ..Default::default() }
        );
    }

    #[test]
    fn the_hold_ends_to_the_second() {
        let hold = Hold::default();
        let delivered = at("2026-11-20T10:00:00Z");
        let available = hold.available_at(delivered);
        assert_eq!(available, at("2026-11-22T10:00:00Z"));
        assert_eq!(EntryStatus::at(available - TimeDelta::seconds(1), available, false), EntryStatus::Pending);
        assert_eq!(EntryStatus::at(available, available, false), EntryStatus::Available);
        assert_eq!(EntryStatus::at(available, available, true), EntryStatus::Paid);
        assert!(Hold::hours(Hold::MAX_HOURS + 1).is_none());
    }

    #[test]
    fn runs_fall_on_the_first_of_each_month() {
        assert_eq!(month_start(at("2026-11-25T15:00:00Z")), at("2026-11-01T00:00:00Z"));
        assert_eq!(month_start(at("2026-11-01T00:00:00Z")), at("2026-11-01T00:00:00Z"));
        assert_eq!(next_run(at("2026-11-01T00:00:00Z")), at("2026-12-01T00:00:00Z"));
        assert_eq!(next_run(at("2026-12-31T23:59:59Z")), at("2027-01-01T00:00:00Z"));
    }

    proptest! {
        #[test]
        fn a_sale_is_quantity_times_the_unit_payout(price in 1i64..100_000_000, delivery in prop::sample::select(vec![0u32, 30, 60, 129]), quantity in 1i64..10_000) {
            let money = LineMoney::sale(Pence::new(price), delivery, quantity);
            let unit = UnitMoney::of(Channel::Clearance, Pence::new(price), delivery);
            prop_assert_eq!(money.amount, unit.payout.get() * quantity);
            prop_assert_eq!(money.gross, price * quantity);
            if unit.payout.get() > 0 {
                prop_assert_eq!(money.gross - money.commission - money.vat - money.delivery, money.amount);
            }
        }
    }
}
