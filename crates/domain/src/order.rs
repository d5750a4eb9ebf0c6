//! Orders placed on the marketplace and the buyer's delivery window.

use chrono::{DateTime, Days, NaiveDate, Utc};
use serde_json::{Map, Value};

use super::body::{BodySpec, Field, FieldType};
use super::reader::BodyReader;
use super::wire::wire_names;
use crate::FieldError;

/// Days from today (UTC) to the start of the buyer window when the order does not say.
pub const DEFAULT_WINDOW_LEAD_DAYS: u64 = 3;
/// The window is 10 days counted inclusively: end = start + 9.
pub const WINDOW_DAYS: u64 = 10;
/// The most units one order may buy (the clearance stock maximum).
pub const MAX_ORDER_QUANTITY: i64 = 10_000;

/// The buyer's 10-day delivery window, both dates inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuyerWindow {
    pub start: NaiveDate,
    pub end: NaiveDate,
}

impl BuyerWindow {
    /// The window starting on `start`, or `None` when it would run past the calendar.
    pub fn starting(start: NaiveDate) -> Option<Self> {
        Some(Self { start, end: start.checked_add_days(Days::new(WINDOW_DAYS - 1))? })
    }

    /// The default window: starting 3 days after `today`.
    pub fn default_from(today: NaiveDate) -> Option<Self> {
        Self::starting(today.checked_add_days(Days::new(DEFAULT_WINDOW_LEAD_DAYS))?)
    }

    pub fn contains(&self, date: NaiveDate) -> bool {
        (self.start..=self.end).contains(&date)
    }

    /// The window as people read it: `30 Nov to 9 Dec 2026` (the year once when both days
    /// share it).
    pub fn words(&self) -> String {
        use chrono::Datelike;
        let first = if self.start.year() == self.end.year() {
            self.start.format("%-d %b")
        } else {
            self.start.format("%-d %b %Y")
        };
        format!("{first} to {}", self.end.format("%-d %b %Y"))
    }

    /// `scheduled_for_invalid` on `field`, its sentence naming this window.
    pub fn refusal(&self, field: &str) -> super::FieldError {
        super::FieldError {
            field: field.to_owned(),
            code: format!("{field}_invalid"),
            message: format!("Choose a date from {}: the buyer's collection window.", self.words()),
        }
    }
}

/// `#<id>`, the display reference of an order.
pub fn order_reference(id: i64) -> String {
    format!("#{id}")
}

/// Where an order stands: `placed`, then `completed` when the item reaches the buyer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderStatus {
    Placed,
    Completed,
}

wire_names!(OrderStatus { Placed => "placed", Completed => "completed" });

pub const ORDER_BODY: BodySpec = BodySpec {
    name: "OrderInput",
    doc: "The body of `POST /ops/v1/orders`: a buyer buys units of an active listing.",
    fields: &[
        Field::required("listing_id", FieldType::Integer { min: 1, max: i64::MAX }, "The listing bought."),
        Field::optional("quantity", FieldType::Integer { min: 1, max: MAX_ORDER_QUANTITY }, "1..10000, default 1."),
        Field::optional("buyer_window_start", FieldType::Date, "`YYYY-MM-DD`; default 3 days from today (UTC)."),
    ],
    example: r#"{"listing_id": 42, "quantity": 1, "buyer_window_start": "2026-11-24"}"#,
};

/// `POST /ops/v1/orders`: a buyer buys `quantity` units of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRequest {
    pub listing_id: i64,
    pub quantity: i64,
    pub window: BuyerWindow,
}

impl OrderRequest {
    pub fn parse(body: &Map<String, Value>, today: NaiveDate) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &ORDER_BODY);
        let listing_id = r.integer("listing_id", 1..=i64::MAX);
        let listing_id = r.require("listing_id", listing_id);
        let quantity = r.integer("quantity", 1..=MAX_ORDER_QUANTITY).unwrap_or(1);
        let window = match r.date("buyer_window_start") {
            Some(start) => BuyerWindow::starting(start).or_else(|| r.fail("buyer_window_start", "invalid")),
            None => BuyerWindow::default_from(today),
        };
        let parsed = listing_id.zip(window).map(|(listing_id, window)| Self { listing_id, quantity, window });
        let parsed = r.finish(parsed)?;
        parsed.ok_or_else(|| vec![FieldError::of("buyer_window_start", "invalid")])
    }
}

crate::documented_body!(OrderRequest, ORDER_BODY);

pub const COMPLETION_BODY: BodySpec = BodySpec {
    name: "CompletionInput",
    doc: "The body of `POST /ops/v1/orders/{id}/complete`: optional; an empty body means now.",
    fields: &[Field::optional("completed_at", FieldType::Timestamp, "RFC 3339; default now.")],
    example: r#"{"completed_at": "2026-11-27T15:30:00Z"}"#,
};

/// `POST /ops/v1/orders/{id}/complete`: when the item was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// `None`: now.
    pub completed_at: Option<DateTime<Utc>>,
}

impl Completion {
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &COMPLETION_BODY);
        let completed_at = r.timestamp("completed_at");
        r.finish(Self { completed_at })
    }
}

crate::documented_body!(Completion, COMPLETION_BODY);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::reader::object as body;

    fn date(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn the_window_is_ten_days_inclusive() {
        let window = BuyerWindow::starting(date("2026-12-28")).unwrap();
        assert_eq!(window.end, date("2027-01-06"));
        assert!(window.contains(date("2026-12-28")) && window.contains(date("2027-01-06")));
        assert!(!window.contains(date("2026-12-27")) && !window.contains(date("2027-01-07")));
        assert_eq!(BuyerWindow::default_from(date("2026-11-21")).unwrap().start, date("2026-11-24"));
    }

    #[test]
    fn a_date_outside_the_window_is_refused_with_the_window_in_words() {
        let window = BuyerWindow::starting(date("2026-12-10")).unwrap();
        assert_eq!(window.words(), "10 Dec to 19 Dec 2026");
        let refused = window.refusal("scheduled_for");
        assert_eq!(refused.code, "scheduled_for_invalid", "the code is unchanged");
        assert_eq!(refused.message, "Choose a date from 10 Dec to 19 Dec 2026: the buyer's collection window.");
        assert_eq!(BuyerWindow::starting(date("2026-12-28")).unwrap().words(), "28 Dec 2026 to 6 Jan 2027");
    }

    #[test]
    fn orders_default_to_one_unit_and_the_default_window() {
        let order = OrderRequest::parse(&body(json!({"listing_id": 7})), date("2026-11-21")).unwrap();
        assert_eq!((order.quantity, order.window.start, order.window.end), (1, date("2026-11-24"), date("2026-12-03")));
    }

    #[test]
    fn bad_orders_list_every_reason() {
        let errors = OrderRequest::parse(
            &body(json!({"quantity": 0, "buyer_window_start": "24/11/2026", "x": 1})),
            date("2026-11-21"),
        )
        .unwrap_err();
        let codes: Vec<_> = errors.into_iter().map(|e| e.code).collect();
        assert_eq!(codes, ["listing_id_required", "quantity_invalid", "buyer_window_start_invalid", "x_unknown"]);
        let late = OrderRequest::parse(
            &body(json!({"listing_id": 1, "buyer_window_start": "+262142-12-31"})),
            date("2026-11-21"),
        );
        assert!(late.is_err());
    }

    #[test]
    fn completions_read_an_optional_time() {
        assert_eq!(Completion::parse(&body(json!({}))), Ok(Completion { completed_at: None }));
        let codes: Vec<_> = Completion::parse(&body(json!({"completed_at": "now", "by": 1})))
            .unwrap_err()
            .into_iter()
            .map(|e| e.code)
            .collect();
        assert_eq!(codes, ["completed_at_invalid", "by_unknown"]);
    }

    #[test]
    fn statuses_keep_their_wire_names() {
        for status in [OrderStatus::Placed, OrderStatus::Completed] {
            assert_eq!(status.as_str().parse(), Ok(status));
        }
        assert!("shipped".parse::<OrderStatus>().is_err());
    }

    #[test]
    fn the_documented_fields_are_exactly_the_accepted_ones() {
        for name in ORDER_BODY.names() {
            let errors =
                OrderRequest::parse(&body(json!({ name: null })), date("2026-11-21")).err().unwrap_or_default();
            assert!(!errors.iter().any(|e| e.code.ends_with("_unknown")), "{name}");
        }
        for name in COMPLETION_BODY.names() {
            assert!(Completion::parse(&body(json!({ name: null }))).is_ok(), "{name}");
        }
        let extra = OrderRequest::parse(&body(json!({"listing_id": 1, "price": 1})), date("2026-11-21")).unwrap_err();
        assert_eq!(extra, [FieldError::of("price", "unknown")]);
    }
}
