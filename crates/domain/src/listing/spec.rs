//! The listing bodies described once: the fields the validator accepts are the ones the
//! OpenAPI document shows.

use serde_json::{Map, Value};

use super::MAX_CLEARANCE_QUANTITY;
use crate::body::{BodySpec, Field, FieldType};
use crate::limits::{
    BRAND_MAX, DESCRIPTION_MAX, IMAGE_URL_MAX, MATCHED_MAX, MAX_ITEMS, SKU_MAX, TITLE_MAX, WAREHOUSE_LOCATION_MAX,
};
use crate::reader::BodyReader;
use crate::FieldError;

/// One piece of `measurements`.
pub const MEASUREMENT_FIELDS: &[Field] = &[
    Field::required("type", FieldType::Text { max: MATCHED_MAX }, "One of the `item_types` of the options endpoint.")
        .labelled("Piece")
        .rule("must be one of the piece types in the list"),
    Field::required("w_cm", FieldType::Number, "Width in centimetres, above 0 and at most 1000.")
        .labelled("width")
        .rule("must be a number of centimetres above 0 and at most 1000"),
    Field::required("d_cm", FieldType::Number, "Depth in centimetres, above 0 and at most 1000.")
        .labelled("depth")
        .rule("must be a number of centimetres above 0 and at most 1000"),
    Field::required("h_cm", FieldType::Number, "Height in centimetres, above 0 and at most 1000.")
        .labelled("height")
        .rule("must be a number of centimetres above 0 and at most 1000"),
];

/// The body of a listing create, PATCH and bulk-import row.
pub const LISTING_BODY: BodySpec = BodySpec {
    name: "ListingBody",
    doc: "The body of `POST /v1/listings` and `PATCH /v1/listings/{id}` (where every field is optional and \
`null` clears an optional one). Unknown fields are refused.",
    fields: &[
        Field::required("title", FieldType::Text { max: TITLE_MAX }, "1 to 200 characters. Required on create."),
        Field::required(
            "price_gbp",
            FieldType::Money,
            "Regular price in GBP, > 0 with at most two decimals. Required on create.",
        ).labelled("Price (GBP)"),
        Field::required(
            "condition",
            FieldType::Choice(&["like-new", "excellent", "gently-used", "fair"]),
            "`like-new`, `excellent`, `gently-used` or `fair`. Required on create.",
        ),
        Field::required(
            "category",
            FieldType::Text { max: MATCHED_MAX },
            "One of `categories` of the options endpoint. Required on create.",
        ).rule("must be one of your brand's categories"),
        Field::required(
            "faults",
            FieldType::List { item: &FieldType::Text { max: MATCHED_MAX }, min: 1, max: MAX_ITEMS },
            "At least one of `Rips or tears`, `Fire Label`, `None` (`None` alone). Required on create.",
        ).rule("must be one or more of Rips or tears and Fire Label, or None on its own"),
        Field::optional(
            "description",
            FieldType::Lines { max: DESCRIPTION_MAX },
            "Plain text or basic HTML (sanitised), up to 20,000 characters after sanitising.",
        ),
        Field::optional(
            "channel",
            FieldType::Choice(&["clearance", "exchange"]),
            "`clearance` or `exchange` (default).",
        ),
        Field::optional("status", FieldType::Choice(&["active", "draft"]), "`active` (default) or `draft`."),
        Field::optional("sale_price_gbp", FieldType::Money, "Promotional price in GBP, below `price_gbp`.").labelled("Sale price (GBP)"),
        Field::optional("rrp_gbp", FieldType::Money, "Original retail price in GBP.").labelled("RRP (GBP)"),
        Field::optional(
            "delivery_contribution_gbp",
            FieldType::Integer { min: 0, max: 129 },
            "Whole pounds: 0 (default), 30, 60 or 129 (free delivery).",
        ).labelled("Delivery contribution (GBP)").rule("must be 0, 30, 60 or 129 (free delivery)"),
        Field::optional(
            "brand",
            FieldType::Text { max: BRAND_MAX },
            "Manufacturer brand, up to 80 characters; matched case-insensitively, created on first use.",
        ),
        Field::optional(
            "colour",
            FieldType::Text { max: MATCHED_MAX },
            "Matched to `colours` ignoring case and accents (\"gray\" → \"Grey\").",
        ).rule("must be one of the colours in the list"),
        Field::optional(
            "fabric",
            FieldType::Text { max: MATCHED_MAX },
            "Matched to `fabrics` ignoring case and accents (\"boucle\" → \"Bouclé\").",
        ).rule("must be one of the fabrics in the list"),
        Field::optional("age_years", FieldType::Text { max: MATCHED_MAX }, "One of `ages`.").labelled("Age").rule("must be one of the ages in the list"),
        Field::optional("available_from", FieldType::Date, "`YYYY-MM-DD`."),
        Field::optional(
            "quantity",
            FieldType::Integer { min: 1, max: MAX_CLEARANCE_QUANTITY },
            "Default 1. Exchange: exactly 1. Clearance: 1 to 10,000.",
        ).rule("must be 1 for an exchange listing (each trade-in is a single item), or a whole number from 1 to 10,000 for clearance"),
        Field::optional(
            "measurements",
            FieldType::List { item: &FieldType::Object(MEASUREMENT_FIELDS), min: 0, max: MAX_ITEMS },
            "Up to 20 pieces.",
        ).labelled("Measurements").rule("can have at most 20 pieces, each with a type and its width, depth and height"),
        Field::optional(
            "exposed_to",
            FieldType::List { item: &FieldType::Text { max: MATCHED_MAX }, min: 0, max: MAX_ITEMS },
            "`Dogs`, `Cats`, `Smoke` or `None` (`None` alone).",
        ).labelled("Exposed to").rule("must be any of Dogs, Cats and Smoke, or None on its own"),
        Field::optional(
            "images",
            FieldType::List { item: &FieldType::Text { max: IMAGE_URL_MAX }, min: 0, max: MAX_ITEMS },
            "Up to 20 absolute http(s) URLs, imported in the background; first is the cover. Giving `images` or \
`attachment_ids` replaces the listing's images (photos first).",
        ).labelled("Image links").rule("must be at most 20 web addresses starting with https:// or http://"),
        Field::optional(
            "attachment_ids",
            FieldType::List { item: &FieldType::Integer { min: 1, max: i64::MAX }, min: 0, max: MAX_ITEMS },
            "Up to 20 photos from `upload-photo` of the caller's brand.",
        )
        .labelled("Photos"),
        Field::optional("sku", FieldType::Text { max: SKU_MAX }, "Up to 64 characters."),
        Field::optional("warehouse_location", FieldType::Text { max: WAREHOUSE_LOCATION_MAX }, "Up to 64 characters."),
        Field::optional(
            "warehouse_id",
            FieldType::Text { max: 36 },
            "One of the brand's warehouses; default on create: the brand's default warehouse.",
        ).labelled("Warehouse"),
    ],
    example: r#"{"title": "Grey 3-seater sofa", "price_gbp": 450.0, "condition": "excellent", "category": "3-Seater Sofas",
"faults": ["None"], "description": "Barely used, from a smoke-free home.", "channel": "clearance", "status": "active",
"sale_price_gbp": 399.0, "rrp_gbp": 1200.0, "delivery_contribution_gbp": 30, "brand": "Loaf", "colour": "Grey",
"fabric": "Velvet", "age_years": "1 year old", "available_from": "2026-12-01", "quantity": 3,
"measurements": [{"type": "3-Seater", "w_cm": 210, "d_cm": 95, "h_cm": 85}], "exposed_to": ["None"],
"images": ["https://example.com/sofa.jpg"], "sku": "SOF-001", "warehouse_location": "Aisle 4"}"#,
};

crate::documented_body!(super::ValidListing, LISTING_BODY);
crate::documented_patch_body!(ListingPatch, LISTING_BODY, "ListingPatch");

/// Most ids of one bulk delete.
pub const MAX_BULK_IDS: usize = 100;

/// The body of `POST /v1/listings/bulk-delete`.
pub const BULK_DELETE_BODY: BodySpec = BodySpec {
    name: "BulkDeleteBody",
    doc: "The listings to move to the trash.",
    fields: &[Field::required(
        "ids",
        FieldType::List { item: &FieldType::Integer { min: 1, max: i64::MAX }, min: 1, max: MAX_BULK_IDS },
        "1 to 100 listing ids.",
    )],
    example: r#"{"ids": [101, 102]}"#,
};

/// The ids of a bulk delete, as given (duplicates are reported once, by the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkDelete {
    pub ids: Vec<i64>,
}

crate::documented_body!(BulkDelete, BULK_DELETE_BODY);

/// Why a bulk-delete body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkDeleteRefused {
    /// `ids` missing, `null` or empty.
    NoIds,
    /// More than [`MAX_BULK_IDS`].
    TooMany,
    Invalid(Vec<FieldError>),
}

impl BulkDelete {
    /// `NoIds` and `TooMany` win over every other reason; then `ids_invalid` and the
    /// unknown fields, together.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, BulkDeleteRefused> {
        let mut r = BodyReader::of(body, &BULK_DELETE_BODY);
        let items = match r.raw("ids") {
            None | Some(Value::Null) => return Err(BulkDeleteRefused::NoIds),
            Some(Value::Array(items)) if items.is_empty() => return Err(BulkDeleteRefused::NoIds),
            Some(Value::Array(items)) if items.len() > MAX_BULK_IDS => return Err(BulkDeleteRefused::TooMany),
            Some(value) => value.as_array(),
        };
        let id = |v: &Value| crate::reader::integral(v).filter(|id| *id >= 1);
        let ids = match items.and_then(|items| items.iter().map(id).collect::<Option<Vec<_>>>()) {
            Some(ids) => Some(ids),
            None => r.fail("ids", "invalid"),
        };
        match r.finish(ids) {
            Ok(Some(ids)) => Ok(Self { ids }),
            Ok(None) => Err(BulkDeleteRefused::Invalid(vec![FieldError::of("ids", "invalid")])),
            Err(errors) => Err(BulkDeleteRefused::Invalid(errors)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::object;
    use serde_json::json;

    fn refused(value: Value) -> Vec<String> {
        match BulkDelete::parse(&object(value)) {
            Ok(_) => vec![],
            Err(BulkDeleteRefused::NoIds) => vec!["no_ids".into()],
            Err(BulkDeleteRefused::TooMany) => vec!["too_many".into()],
            Err(BulkDeleteRefused::Invalid(errors)) => errors.into_iter().map(|e| e.code).collect(),
        }
    }

    #[test]
    fn bulk_ids_must_be_a_short_non_empty_integer_array() {
        assert_eq!(BulkDelete::parse(&object(json!({"ids": [3, 1]}))).map(|b| b.ids), Ok(vec![3, 1]));
        assert_eq!(refused(json!({})), ["no_ids"]);
        assert_eq!(refused(json!({"ids": null})), ["no_ids"]);
        assert_eq!(refused(json!({"ids": []})), ["no_ids"]);
        assert_eq!(refused(json!({"ids": (1..=101).collect::<Vec<_>>()})), ["too_many"]);
        assert_eq!(refused(json!({"ids": ["1"]})), ["ids_invalid"]);
        assert_eq!(refused(json!({"ids": [1.5]})), ["ids_invalid"]);
        assert_eq!(refused(json!({"ids": 1})), ["ids_invalid"]);
        assert_eq!(refused(json!({"ids": [0]})), ["ids_invalid"], "the schema says ids are 1 or more");
        assert_eq!(refused(json!({"ids": [3, -1]})), ["ids_invalid"]);
        assert_eq!(refused(json!({"ids": [1], "force": true})), ["force_unknown"]);
        assert_eq!(refused(json!({"ids": "x", "force": true})), ["ids_invalid", "force_unknown"]);
    }

    /// (With the `openapi` feature, as the workspace's tests build the domain.)
    #[cfg(feature = "openapi")]
    #[test]
    fn the_documented_listing_body_is_what_the_validator_accepts() {
        let schema = serde_json::to_value(LISTING_BODY.schema()).unwrap();
        let mut documented: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        documented.sort_unstable();
        let mut accepted: Vec<&str> = LISTING_BODY.names().collect();
        accepted.sort_unstable();
        assert_eq!(documented, accepted);
        let example = object(serde_json::from_str(LISTING_BODY.example).unwrap());
        assert!(
            super::super::validate(&super::super::ListingInput::from_json(&example), None).is_ok(),
            "the example is a valid listing"
        );
        let unknown = object(json!({"title": "x", "colour_code": 3}));
        let codes: Vec<String> = super::super::validate(&super::super::ListingInput::from_json(&unknown), None)
            .unwrap_err()
            .into_iter()
            .map(|e| e.code)
            .collect();
        assert!(codes.contains(&"colour_code_unknown".to_owned()));
    }

    #[test]
    fn listing_text_follows_the_one_text_rule_of_every_body() {
        let codes = |body: Value| -> Vec<String> {
            match super::super::validate(&super::super::ListingInput::from_json(&object(body)), None) {
                Ok(_) => vec![],
                Err(errors) => errors.into_iter().map(|e| e.code).collect(),
            }
        };
        let mut example: Value = serde_json::from_str(LISTING_BODY.example).unwrap();
        example["title"] = json!("Grey\u{7} sofa");
        example["sku"] = json!("A\nB");
        example["description"] = json!("Line one\nLine two\tTabbed");
        assert_eq!(codes(example.clone()), ["title_invalid", "sku_invalid"]);
        example["description"] = json!("Bell\u{7}");
        example["title"] = json!("Sofa");
        example["sku"] = json!(" ");
        assert_eq!(codes(example), ["description_invalid"]);
    }

    #[test]
    fn the_choices_documented_are_the_enums() {
        use super::super::{Channel, Condition};
        let choice = |name: &str| match LISTING_BODY.fields.iter().find(|f| f.name == name).map(|f| f.ty) {
            Some(FieldType::Choice(values)) => values.to_vec(),
            _ => vec![],
        };
        assert_eq!(choice("condition"), Condition::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>());
        assert_eq!(choice("channel"), Channel::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>());
    }
}
