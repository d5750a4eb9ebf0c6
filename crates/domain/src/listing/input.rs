//! What a listing body says, field by field, as typed values: the one form in which a
//! JSON body, a bulk-import row and a dashboard form reach the listing use cases. Each
//! field is read by its parser as soon as it is given, so a refused one already holds its
//! reason; the rules that tie fields together are [`super::validate`]'s, on the merged
//! listing.

use serde_json::{Map, Value};

use super::parse::{self, Parsed};
use super::{Channel, Condition, ListingStatus, Measurement};
use crate::body::FieldType;
use crate::money::Pence;
use crate::text::form_number;

/// What a body says of one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Given<T> {
    /// Not in the body: a change keeps the stored value, a create has none.
    Keep,
    /// `null` or blank: no value (a change clears it).
    Clear,
    Set(T),
    /// Refused, with the reason's suffix (`invalid`, `too_long`, `required`).
    Refused(&'static str),
}

impl<T> Given<T> {
    fn read(value: Option<&Value>, parse: impl FnOnce(&Value) -> Parsed<T>) -> Self {
        match value {
            None => Given::Keep,
            Some(Value::Null) => Given::Clear,
            Some(value) => match parse(value) {
                Ok(Some(v)) => Given::Set(v),
                Ok(None) => Given::Clear,
                Err(reason) => Given::Refused(reason),
            },
        }
    }

    /// The value given, if any.
    pub fn set(&self) -> Option<&T> {
        match self {
            Given::Set(v) => Some(v),
            _ => None,
        }
    }
}

/// A listing create, change or bulk row, read field by field (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct ListingInput {
    pub title: Given<String>,
    /// `price_gbp`.
    pub regular_price: Given<Pence>,
    pub condition: Given<Condition>,
    pub category: Given<String>,
    pub description: Given<String>,
    pub channel: Given<Channel>,
    pub status: Given<ListingStatus>,
    /// `sale_price_gbp`.
    pub sale_price: Given<Pence>,
    /// `rrp_gbp`.
    pub rrp: Given<Pence>,
    pub delivery_contribution_gbp: Given<u32>,
    pub brand: Given<String>,
    pub colour: Given<String>,
    pub fabric: Given<String>,
    pub age_years: Given<String>,
    pub available_from: Given<String>,
    pub quantity: Given<i64>,
    pub measurements: Given<Vec<Measurement>>,
    pub exposed_to: Given<Vec<String>>,
    pub faults: Given<Vec<String>>,
    /// Image URLs to import: given, they replace the listing's images.
    pub images: Given<Vec<String>>,
    /// Uploaded photos: given, they replace the listing's images (photos first).
    pub attachment_ids: Given<Vec<i64>>,
    pub sku: Given<String>,
    pub warehouse_location: Given<String>,
    pub warehouse_id: Given<String>,
    /// Names the body gave that a listing has no field for, in the body's order.
    pub unknown: Vec<String>,
}

impl Default for ListingInput {
    fn default() -> Self {
        use Given::Keep;
        Self {
            title: Keep,
            regular_price: Keep,
            condition: Keep,
            category: Keep,
            description: Keep,
            channel: Keep,
            status: Keep,
            sale_price: Keep,
            rrp: Keep,
            delivery_contribution_gbp: Keep,
            brand: Keep,
            colour: Keep,
            fabric: Keep,
            age_years: Keep,
            available_from: Keep,
            quantity: Keep,
            measurements: Keep,
            exposed_to: Keep,
            faults: Keep,
            images: Keep,
            attachment_ids: Keep,
            sku: Keep,
            warehouse_location: Keep,
            warehouse_id: Keep,
            unknown: Vec::new(),
        }
    }
}

impl ListingInput {
    /// A JSON body (`POST`/`PATCH /v1/listings`, a bulk row), every field read.
    pub fn from_json(body: &Map<String, Value>) -> Self {
        let mut input = Self::default();
        for (name, value) in body {
            input.give(name, value);
        }
        input
    }

    /// Reads `value` as the field `name` of the listing body (an unknown name is kept as
    /// such).
    pub fn give(&mut self, name: &str, value: &Value) {
        let v = Some(value);
        match name {
            "title" => self.title = Given::read(v, parse::title),
            "price_gbp" => self.regular_price = Given::read(v, parse::money),
            "condition" => self.condition = Given::read(v, parse::condition),
            "category" => self.category = Given::read(v, parse::category),
            "description" => self.description = Given::read(v, parse::description),
            "channel" => self.channel = Given::read(v, parse::channel),
            "status" => self.status = Given::read(v, parse::status),
            "sale_price_gbp" => self.sale_price = Given::read(v, parse::money),
            "rrp_gbp" => self.rrp = Given::read(v, parse::money),
            "delivery_contribution_gbp" => {
                self.delivery_contribution_gbp = Given::read(v, parse::delivery_contribution)
            }
            "brand" => self.brand = Given::read(v, parse::brand),
            "colour" => self.colour = Given::read(v, parse::colour),
            "fabric" => self.fabric = Given::read(v, parse::fabric),
            "age_years" => self.age_years = Given::read(v, parse::age_band),
            "available_from" => self.available_from = Given::read(v, parse::date),
            "quantity" => self.quantity = Given::read(v, parse::quantity),
            "measurements" => self.measurements = Given::read(v, parse::measurements),
            "exposed_to" => self.exposed_to = Given::read(v, parse::exposed_to),
            "faults" => self.faults = Given::read(v, parse::faults),
            "images" => self.images = Given::read(v, parse::images),
            "attachment_ids" => self.attachment_ids = Given::read(v, parse::attachment_ids),
            "sku" => self.sku = Given::read(v, parse::sku),
            "warehouse_location" => self.warehouse_location = Given::read(v, parse::warehouse_location),
            "warehouse_id" => self.warehouse_id = Given::read(v, parse::warehouse_id),
            other => self.unknown.push(other.to_owned()),
        }
    }

    /// Reads a form's text as the field `name`, by the field's type in the listing body's
    /// table: numbers as numbers (so `12.345` is refused as the API refuses it), the rest
    /// as text; blank text gives no value.
    pub fn give_text(&mut self, name: &str, text: &str) {
        let text = text.trim();
        let value = if text.is_empty() {
            Value::Null
        } else {
            match super::LISTING_BODY.fields.iter().find(|f| f.name == name).map(|f| f.ty) {
                Some(FieldType::Money | FieldType::Integer { .. } | FieldType::Number) => form_number(text),
                _ => Value::String(text.to_owned()),
            }
        };
        self.give(name, &value);
    }

    /// True when the body names no field at all.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::LISTING_BODY;

    #[test]
    fn every_documented_field_has_its_place() {
        for field in LISTING_BODY.fields {
            let mut input = ListingInput::default();
            input.give(field.name, &Value::Null);
            assert!(input.unknown.is_empty(), "{} is not read", field.name);
            assert!(!input.is_empty(), "{} is not kept", field.name);
        }
    }

    #[test]
    fn form_text_is_read_by_the_field_type() {
        let mut input = ListingInput::default();
        input.give_text("price_gbp", " 12.50 ");
        input.give_text("quantity", "x");
        input.give_text("title", "  Oak sofa ");
        input.give_text("sku", " ");
        assert_eq!(input.regular_price, Given::Set(Pence::from_gbp_text("12.50").unwrap()));
        assert_eq!(input.quantity, Given::Refused("invalid"));
        assert_eq!(input.title, Given::Set("Oak sofa".to_owned()));
        assert_eq!(input.sku, Given::Clear);
    }
}
