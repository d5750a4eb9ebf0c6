//! Orders placed on the marketplace and the buyer's delivery window.

use chrono::{DateTime, Days, NaiveDate, Utc};
use serde_json::{Map, Value};

use super::reader::BodyReader;
use crate::domain::FieldError;

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
}

/// `#<id>`, the display reference of an order.
pub fn order_reference(id: i64) -> String {
    format!("#{id}")
}

/// `POST /ops/v1/orders`: a buyer buys `quantity` units of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRequest {
    pub listing_id: i64,
    pub quantity: i64,
    pub window: BuyerWindow,
}

impl OrderRequest {
    pub fn parse(body: &Map<String, Value>, today: NaiveDate) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::new(body, &["listing_id", "quantity", "buyer_window_start"]);
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

/// `POST /ops/v1/orders/{id}/complete`: when the item was delivered (default now).
pub fn parse_completion(body: &Map<String, Value>) -> Result<Option<DateTime<Utc>>, Vec<FieldError>> {
    let mut r = BodyReader::new(body, &["completed_at"]);
    let completed_at = r.timestamp("completed_at");
    r.finish(completed_at)
}

/// `POST /v1/partner/collections`: the partner confirms the collection date of an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionRequest {
    pub order_id: i64,
    pub scheduled_for: NaiveDate,
    pub warehouse_id: Option<String>,
}

impl CollectionRequest {
    /// Shapes only; the window and the warehouse are checked against the order and brand.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::new(body, &["order_id", "scheduled_for", "warehouse_id"]);
        let order_id = r.integer("order_id", 1..=i64::MAX);
        let order_id = r.require("order_id", order_id);
        let scheduled_for = r.date("scheduled_for");
        let scheduled_for = r.require("scheduled_for", scheduled_for);
        let warehouse_id = r.text("warehouse_id", 64);
        let parsed =
            order_id.zip(scheduled_for).map(|(order_id, scheduled_for)| Self { order_id, scheduled_for, warehouse_id });
        let parsed = r.finish(parsed)?;
        parsed.ok_or_else(|| vec![FieldError::of("order_id", "invalid")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::domain::reader::object as body;

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
    fn collection_requests_need_an_order_and_a_date() {
        let errors = CollectionRequest::parse(&body(json!({"order_id": "7", "warehouse_id": 3}))).unwrap_err();
        let codes: Vec<_> = errors.into_iter().map(|e| e.code).collect();
        assert_eq!(codes, ["order_id_invalid", "scheduled_for_required", "warehouse_id_invalid"]);
        let ok = CollectionRequest::parse(&body(json!({"order_id": 7, "scheduled_for": "2026-11-25"}))).unwrap();
        assert_eq!((ok.order_id, ok.warehouse_id), (7, None));
    }
}
