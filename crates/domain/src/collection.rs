//! Collections of sold clearance items: the partner confirms a date inside the buyer's
//! window (decisions 6.8).

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::{Map, Value};

use super::body::{BodySpec, Field, FieldType};
use super::reader::BodyReader;
use crate::FieldError;

/// A warehouse id is at most this long.
pub const WAREHOUSE_ID_MAX: usize = 64;

/// Which clearance orders a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectionQuery {
    Only(CollectionStatus),
    Any,
}

/// Whether a sold clearance item's collection is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectionStatus {
    Unscheduled,
    Scheduled,
}

impl CollectionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unscheduled => "unscheduled",
            Self::Scheduled => "scheduled",
        }
    }
}

/// A confirmed collection: the `data` of a `collection.scheduled` event, field for field.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Collection {
    /// Stable collection id (`col_…`).
    pub id: String,
    /// Slug of the brand.
    pub brand_id: String,
    pub order_id: i64,
    /// `#<order_id>`.
    pub order_reference: String,
    /// The listing sold.
    pub product_id: i64,
    /// `YYYY-MM-DD`, inside the buyer window.
    #[cfg_attr(feature = "openapi", schema(format = Date))]
    pub scheduled_for: String,
    /// When the partner confirmed it, RFC 3339 UTC.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub scheduled_at: String,
    /// Collection-source warehouse; null if the brand has no warehouses.
    pub warehouse_id: Option<String>,
    /// Its label; empty when none is assigned.
    pub warehouse_label: String,
    #[cfg_attr(feature = "openapi", schema(format = Date))]
    pub buyer_window_start: String,
    #[cfg_attr(feature = "openapi", schema(format = Date))]
    pub buyer_window_end: String,
}

pub const COLLECTION_BODY: BodySpec = BodySpec {
    name: "CollectionInput",
    doc: "The body of `POST /v1/partner/collections`.",
    fields: &[
        Field::required("order_id", FieldType::Integer { min: 1, max: i64::MAX }, "A clearance order of the brand.")
            .labelled("Order"),
        Field::required(
            "scheduled_for",
            FieldType::Date,
            "`YYYY-MM-DD` inside the order's buyer window (`scheduled_for_invalid`).",
        )
        .labelled("Collection date")
        .rule("must be a real date inside the buyer's collection window"),
        Field::optional(
            "warehouse_id",
            FieldType::Text { max: WAREHOUSE_ID_MAX },
            "One of the brand's warehouses (`warehouse_id_invalid`); default the listing's\nwarehouse, else the \
             brand's default.",
        )
        .labelled("Warehouse"),
    ],
    example: r#"{"order_id": 17, "scheduled_for": "2026-11-26"}"#,
};

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
        let mut r = BodyReader::of(body, &COLLECTION_BODY);
        let order_id = r.integer("order_id", 1..=i64::MAX);
        let order_id = r.require("order_id", order_id);
        let scheduled_for = r.date("scheduled_for");
        let scheduled_for = r.require("scheduled_for", scheduled_for);
        let warehouse_id = r.text("warehouse_id", WAREHOUSE_ID_MAX);
        let parsed =
            order_id.zip(scheduled_for).map(|(order_id, scheduled_for)| Self { order_id, scheduled_for, warehouse_id });
        let parsed = r.finish(parsed)?;
        parsed.ok_or_else(|| vec![FieldError::of("order_id", "invalid")])
    }
}

crate::documented_body!(CollectionRequest, COLLECTION_BODY);

pub const COLLECTION_MOVE_BODY: BodySpec = BodySpec {
    name: "CollectionMoveInput",
    doc: "The body of `PATCH /v1/partner/collections/{id}`: the collection's new day.",
    fields: &[
        Field::required(
            "scheduled_for",
            FieldType::Date,
            "`YYYY-MM-DD` inside the order's buyer window, today or later (`scheduled_for_invalid`).",
        )
        .labelled("New collection date")
        .rule("must be a real date inside the buyer's collection window, today or later"),
        Field::optional(
            "warehouse_id",
            FieldType::Text { max: WAREHOUSE_ID_MAX },
            "One of the brand's warehouses (`warehouse_id_invalid`); default the collection's warehouse.",
        )
        .labelled("Warehouse"),
    ],
    example: r#"{"scheduled_for": "2026-11-28"}"#,
};

/// `PATCH /v1/partner/collections/{id}`: a scheduled collection moved to another day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionMove {
    pub scheduled_for: NaiveDate,
    /// Another warehouse; `None` keeps the collection's.
    pub warehouse_id: Option<String>,
}

impl CollectionMove {
    /// Shapes only; the window, the day and the warehouse are checked against the order.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut r = BodyReader::of(body, &COLLECTION_MOVE_BODY);
        let scheduled_for = r.date("scheduled_for");
        let scheduled_for = r.require("scheduled_for", scheduled_for);
        let warehouse_id = r.text("warehouse_id", WAREHOUSE_ID_MAX);
        let parsed = r.finish(scheduled_for)?;
        parsed
            .map(|scheduled_for| Self { scheduled_for, warehouse_id })
            .ok_or_else(|| vec![FieldError::of("scheduled_for", "required")])
    }
}

crate::documented_body!(CollectionMove, COLLECTION_MOVE_BODY);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::reader::object as body;

    #[test]
    fn collection_requests_need_an_order_and_a_date() {
        let errors = CollectionRequest::parse(&body(json!({"order_id": "7", "warehouse_id": 3}))).unwrap_err();
        let codes: Vec<_> = errors.into_iter().map(|e| e.code).collect();
        assert_eq!(codes, ["order_id_invalid", "scheduled_for_required", "warehouse_id_invalid"]);
        let ok = CollectionRequest::parse(&body(json!({"order_id": 7, "scheduled_for": "2026-11-25"}))).unwrap();
        assert_eq!((ok.order_id, ok.warehouse_id), (7, None));
    }

    #[test]
    fn the_documented_fields_are_exactly_the_accepted_ones() {
        for name in COLLECTION_BODY.names() {
            let errors = CollectionRequest::parse(&body(json!({ name: null }))).unwrap_err();
            assert!(!errors.iter().any(|e| e.code.ends_with("_unknown")), "{name}");
        }
        let extra = CollectionRequest::parse(&body(json!({"order_id": 1, "scheduled_for": "2026-11-25", "note": "x"})));
        assert_eq!(extra, Err(vec![FieldError::of("note", "unknown")]));
        for name in COLLECTION_MOVE_BODY.names() {
            let errors = CollectionMove::parse(&body(json!({ name: null }))).unwrap_err();
            assert!(!errors.iter().any(|e| e.code.ends_with("_unknown")), "{name}");
        }
        let extra = CollectionMove::parse(&body(json!({"scheduled_for": "2026-11-25", "order_id": 1})));
        assert_eq!(extra, Err(vec![FieldError::of("order_id", "unknown")]));
    }

    #[test]
    fn a_move_needs_a_real_date() {
        let codes = |v: Value| -> Vec<String> {
            CollectionMove::parse(&body(v)).unwrap_err().into_iter().map(|e| e.code).collect()
        };
        assert_eq!(codes(json!({})), ["scheduled_for_required"]);
        assert_eq!(codes(json!({"scheduled_for": "2026-02-30"})), ["scheduled_for_invalid"]);
        assert_eq!(codes(json!({"scheduled_for": "2026-12-09", "warehouse_id": 4})), ["warehouse_id_invalid"]);
        let ok = CollectionMove::parse(&body(json!({"scheduled_for": "2026-12-09"}))).unwrap();
        assert_eq!(ok.warehouse_id, None);
    }
}
