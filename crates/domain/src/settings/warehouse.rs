//! The warehouse address book used for collection logistics.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::{EitherWay, Fields, Lines, Parsed};
use super::shapes::{
    postcode_anywhere, Country, Email, PhoneNumber, COUNTRY_FIELD, EMAIL_RULE, PHONE_RULE, UNITED_KINGDOM,
};
use crate::body::{BodySpec, Field, FieldType};
use crate::FieldError;

/// A warehouse of a brand. Exactly one warehouse of a brand with any is the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Warehouse {
    /// UUID; the `{id}` of the warehouse endpoints.
    pub id: String,
    /// Short name shown in the dashboard.
    pub label: String,
    pub contact_name: String,
    pub contact_email: String,
    pub contact_phone: String,
    pub address_1: String,
    pub address_2: String,
    pub city: String,
    pub postcode: String,
    pub country: String,
    /// True for the brand's one default warehouse; new listings take its address.
    pub is_default: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The id of a warehouse: a UUID, always written lower-case with hyphens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarehouseId(uuid::Uuid);

impl WarehouseId {
    /// A fresh random (version 4) id.
    pub fn new() -> Self {
        Self(uuid::Uuid::new_v4())
    }

    /// `None` for anything that is not a UUID (such an id names no warehouse).
    pub fn parse(s: &str) -> Option<Self> {
        uuid::Uuid::try_parse(s).ok().map(Self)
    }
}

impl Default for WarehouseId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for WarehouseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// The outcome of a change to a warehouse named by id.
#[derive(Debug)]
pub enum WarehouseChange<T> {
    Done(T),
    /// No such warehouse in the brand.
    NotFound,
    /// The change would leave the brand without a default (un-setting the default by PATCH).
    DefaultRequired,
}

pub const LABEL_MAX: usize = 80;
pub const CONTACT_NAME_MAX: usize = 120;
pub const ADDRESS_LINE_MAX: usize = 160;
pub const CITY_MAX: usize = 80;
pub const POSTCODE_MAX: usize = 16;

/// The body of `POST /v1/partner/settings/warehouses` ([`NewWarehouse::parse`]) and of
/// `PATCH /v1/partner/settings/warehouses/{id}` ([`WarehousePatch::parse`]).
pub static WAREHOUSE_BODY: BodySpec = BodySpec {
    name: "WarehouseInput",
    doc: "A warehouse body. On create `label` is required; on PATCH send only the fields to \
          change. Strings are trimmed; `\"\"` or `null` clears a field (not the label); an empty \
          `country` means `United Kingdom`. Other fields are refused (`<field>_unknown`).",
    fields: &[
        Field::required(
            "label",
            FieldType::Text { max: LABEL_MAX },
            "Short name shown in the dashboard (`label_required`). Required on create; never blank.",
        ),
        Field::optional("contact_name", FieldType::Text { max: CONTACT_NAME_MAX }, "Who to ask for at the warehouse."),
        Field::optional(
            "contact_email",
            FieldType::Text { max: Email::MAX_CHARS },
            "An email address with a public domain (`contact_email_invalid`).",
        )
        .rule(EMAIL_RULE),
        Field::optional(
            "contact_phone",
            FieldType::Text { max: PhoneNumber::MAX_CHARS },
            "A number that can be written in E.164: `+` (or `00`) and a country code, 8 to 15 digits, or a UK \
             number starting with 0 (10 or 11 digits); spaces, dashes, dots and brackets allowed \
             (`contact_phone_invalid`).",
        )
        .rule(PHONE_RULE),
        Field::optional("address_1", FieldType::Text { max: ADDRESS_LINE_MAX }, "First address line.")
            .labelled("Address line 1"),
        Field::optional("address_2", FieldType::Text { max: ADDRESS_LINE_MAX }, "Second address line.")
            .labelled("Address line 2"),
        Field::optional("city", FieldType::Text { max: CITY_MAX }, "Town or city."),
        Field::optional(
            "postcode",
            FieldType::Text { max: POSTCODE_MAX },
            "A UK postcode (answered upper-case with one space), or another country's: 2 to 10 letters and \
             digits (`postcode_invalid`).",
        )
        .rule("must be a postcode, like LS1 4AP"),
        COUNTRY_FIELD,
        Field::optional(
            "is_default",
            FieldType::Boolean,
            "`true` makes this warehouse the default and demotes the previous one. A brand's \
             first warehouse is the default whatever this says. `false` on the default is \
             refused (`is_default_invalid`): make another warehouse the default instead.",
        )
        .labelled("Default warehouse")
        .rule("cannot be unticked on the default warehouse: make another warehouse the default instead"),
    ],
    example: r#"{"label": "Leeds DC", "contact_email": "yard@acme.example", "address_1": "1 Dock Road", "city": "Leeds", "postcode": "LS1 4AP", "is_default": true}"#,
};
crate::documented_body!(WarehousePatch, WAREHOUSE_BODY);
crate::documented_patch_body!(WarehouseChanges, WAREHOUSE_BODY, "WarehousePatch");

/// A valid partial update of a warehouse: `None` leaves a field as it is, `Some("")`
/// clears it (an empty `country` goes back to `United Kingdom`). `is_default: Some(true)`
/// makes it the default. Only [`WarehousePatch::parse`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarehousePatch {
    pub label: Option<String>,
    pub contact_name: Option<String>,
    pub contact_email: Option<String>,
    pub contact_phone: Option<String>,
    pub address_1: Option<String>,
    pub address_2: Option<String>,
    pub city: Option<String>,
    pub postcode: Option<String>,
    pub country: Option<String>,
    pub is_default: Option<bool>,
    _parsed: Parsed,
}

/// A valid new warehouse. Only [`NewWarehouse::parse`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWarehouse {
    pub label: String,
    pub contact_name: String,
    pub contact_email: String,
    pub contact_phone: String,
    pub address_1: String,
    pub address_2: String,
    pub city: String,
    pub postcode: String,
    pub country: String,
    /// Asked to be the default. The brand's first warehouse is the default regardless.
    pub is_default: bool,
    _parsed: Parsed,
}

impl WarehousePatch {
    /// Parses a PATCH body for a warehouse that is (`is_default`) or is not the default.
    /// The label cannot be emptied; the default cannot be un-set (a brand with
    /// warehouses always has one default: make another the default instead).
    pub fn parse(body: &Map<String, Value>, is_default: bool) -> Result<Self, Vec<FieldError>> {
        let mut f = Fields::of(body, &WAREHOUSE_BODY);
        let patch = read(&mut f);
        if patch.label.as_deref() == Some("") {
            f.fail::<()>("label", "required");
        }
        if is_default && patch.is_default == Some(false) {
            f.fail::<()>("is_default", "invalid");
        }
        f.finish(patch)
    }
}

/// A change of a warehouse as a body gives it, read for either kind of warehouse: the
/// rules differ only in that the default cannot be un-set, and which kind the warehouse is
/// only the use case learns, after reading it (so an unknown warehouse is
/// `warehouse_not_found` whatever the body): [`EitherWay::of`] with `is_default`.
pub type WarehouseEdit = EitherWay<WarehousePatch>;

impl WarehouseEdit {
    pub fn parse(body: &Map<String, Value>) -> Self {
        EitherWay::read(|is_default| WarehousePatch::parse(body, is_default))
    }
}

impl NewWarehouse {
    /// Parses a create body: `label` is required, `country` defaults to `United Kingdom`.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, Vec<FieldError>> {
        let mut f = Fields::of(body, &WAREHOUSE_BODY);
        let patch = read(&mut f);
        let label = match patch.label {
            Some(label) if !label.is_empty() => label,
            // A label of the wrong type or too long already has its own reason.
            None if f.given("label") => String::new(),
            _ => {
                f.fail::<()>("label", "required");
                String::new()
            }
        };
        let new = Self {
            label,
            contact_name: patch.contact_name.unwrap_or_default(),
            contact_email: patch.contact_email.unwrap_or_default(),
            contact_phone: patch.contact_phone.unwrap_or_default(),
            address_1: patch.address_1.unwrap_or_default(),
            address_2: patch.address_2.unwrap_or_default(),
            city: patch.city.unwrap_or_default(),
            postcode: patch.postcode.unwrap_or_default(),
            country: patch.country.unwrap_or_else(|| UNITED_KINGDOM.to_owned()),
            is_default: patch.is_default.unwrap_or(false),
            _parsed: Parsed,
        };
        f.finish(new)
    }
}

fn read(f: &mut Fields) -> WarehousePatch {
    WarehousePatch {
        label: f.text("label", LABEL_MAX, Lines::One),
        contact_name: f.text("contact_name", CONTACT_NAME_MAX, Lines::One),
        contact_email: f.shaped("contact_email", Email::MAX_CHARS, |s| Email::parse(s).map(String::from)),
        contact_phone: f.shaped("contact_phone", PhoneNumber::MAX_CHARS, |s| PhoneNumber::parse(s).map(String::from)),
        address_1: f.text("address_1", ADDRESS_LINE_MAX, Lines::One),
        address_2: f.text("address_2", ADDRESS_LINE_MAX, Lines::One),
        city: f.text("city", CITY_MAX, Lines::One),
        postcode: f.shaped("postcode", POSTCODE_MAX, postcode_anywhere),
        country: f.text("country", Country::MAX_CHARS, Lines::One).and_then(|c| match Country::parse(&c) {
            Some(country) => Some(String::from(country)),
            None => f.fail("country", "invalid"),
        }),
        is_default: f.boolean("is_default"),
        _parsed: Parsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        let Value::Object(body) = value else { unreachable!() };
        body
    }

    fn codes(errors: Vec<FieldError>) -> Vec<String> {
        errors.into_iter().map(|e| e.code).collect()
    }

    #[test]
    fn each_reason_of_a_new_warehouse() {
        let cases = [
            (json!({}), "label_required"),
            (json!({"label": ""}), "label_required"),
            (json!({"label": "  "}), "label_required"),
            (json!({"label": null}), "label_required"),
            (json!({"label": 3}), "label_invalid"),
            (json!({"label": "x".repeat(81)}), "label_too_long"),
        ];
        for (body, code) in cases {
            assert_eq!(NewWarehouse::parse(&object(body.clone())).map_err(codes), Err(vec![code.to_owned()]), "{body}");
        }
        let with_label = [
            (json!({"contact_email": "yard"}), "contact_email_invalid"),
            (json!({"contact_email": 5}), "contact_email_invalid"),
            (json!({"contact_phone": "ring the bell"}), "contact_phone_invalid"),
            (json!({"contact_name": "x".repeat(121)}), "contact_name_too_long"),
            (json!({"address_1": "x".repeat(161)}), "address_1_too_long"),
            (json!({"address_2": "x".repeat(161)}), "address_2_too_long"),
            (json!({"city": "x".repeat(81)}), "city_too_long"),
            (json!({"postcode": "x".repeat(17)}), "postcode_too_long"),
            (json!({"country": "x".repeat(81)}), "country_too_long"),
            (json!({"is_default": "yes"}), "is_default_invalid"),
            (json!({"is_default": null}), "is_default_invalid"),
            (json!({"dock": 4}), "dock_unknown"),
        ];
        for (extra, code) in with_label {
            let mut body = object(extra.clone());
            body.insert("label".into(), json!("Main"));
            assert_eq!(NewWarehouse::parse(&body).map_err(codes), Err(vec![code.to_owned()]), "{extra}");
        }
    }

    #[test]
    fn the_documented_fields_are_the_accepted_ones() {
        let mut body: Map<String, Value> = WAREHOUSE_BODY.names().map(|n| (n.to_owned(), json!(""))).collect();
        body.insert("label".into(), json!("Main"));
        body.insert("is_default".into(), json!(true));
        assert!(NewWarehouse::parse(&body).is_ok());
        assert!(WarehousePatch::parse(&body, false).is_ok());
        assert_eq!(WAREHOUSE_BODY.names().count(), 10);
    }

    #[test]
    fn a_new_warehouse_defaults_its_country_and_flag() {
        let new = NewWarehouse::parse(&object(json!({"label": " Leeds DC "}))).unwrap();
        assert_eq!(new.label, "Leeds DC");
        assert_eq!(new.country, "United Kingdom");
        assert!(!new.is_default);
        assert_eq!(new.address_2, "");
        let new = NewWarehouse::parse(&object(json!({"label": "A", "country": "gb", "is_default": true}))).unwrap();
        assert_eq!(new.country, "United Kingdom");
        assert!(new.is_default);
    }

    #[test]
    fn every_reason_is_reported_at_once() {
        let body = object(json!({"contact_email": "x", "is_default": 1, "bay": "A"}));
        let errors = codes(NewWarehouse::parse(&body).unwrap_err());
        assert_eq!(errors, ["contact_email_invalid", "is_default_invalid", "label_required", "bay_unknown"]);
    }

    #[test]
    fn a_patch_cannot_empty_the_label() {
        for body in [json!({"label": ""}), json!({"label": null})] {
            let errors = WarehousePatch::parse(&object(body), false).map_err(codes);
            assert_eq!(errors, Err(vec!["label_required".to_owned()]));
        }
    }

    #[test]
    fn a_patch_cannot_unset_the_default() {
        let body = object(json!({"is_default": false}));
        assert_eq!(WarehousePatch::parse(&body, true).map_err(codes), Err(vec!["is_default_invalid".to_owned()]));
        assert_eq!(WarehousePatch::parse(&body, false).unwrap().is_default, Some(false));
        let promote = WarehousePatch::parse(&object(json!({"is_default": true})), false).unwrap();
        assert_eq!(promote.is_default, Some(true));
    }

    #[test]
    fn a_patch_touches_only_the_fields_given() {
        let patch = WarehousePatch::parse(&object(json!({"city": "Leeds", "address_2": ""})), false).unwrap();
        assert_eq!(patch.city.as_deref(), Some("Leeds"));
        assert_eq!(patch.address_2.as_deref(), Some(""));
        assert_eq!(patch.label, None);
        assert_eq!(patch.is_default, None);
        assert_eq!(patch.country, None);
    }

    #[test]
    fn ids_are_uuids_written_one_way() {
        let id = WarehouseId::new();
        assert_eq!(WarehouseId::parse(&id.to_string()), Some(id));
        let upper = WarehouseId::parse("67E55044-10B1-426F-9247-BB680E5FE0C8").unwrap();
        assert_eq!(upper.to_string(), "67e55044-10b1-426f-9247-bb680e5fe0c8");
        for bad in ["", "123", "not-a-uuid", "67e55044-10b1-426f-9247-bb680e5fe0c", "../etc"] {
            assert_eq!(WarehouseId::parse(bad), None, "{bad}");
        }
    }
}
