//! The one listing validator: a [`ListingInput`] (a create body, a PATCH body, a bulk-import
//! row or a dashboard form), optionally over a stored listing, becomes [`ListingFields`] or every reason it
//! cannot, as `<field>_<reason>` codes.
//!
//! A PATCH is merged field by field with the stored listing and the rules that tie fields
//! together (quantity per channel, sale below regular price, faults present) are checked on
//! the merged result, so no PATCH can leave a listing invalid.

use super::input::{Given, ListingInput};
use super::{Channel, ListingFields, ListingStatus, MAX_CLEARANCE_QUANTITY};
use crate::FieldError;

/// A valid listing and the media the body asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidListing {
    pub fields: ListingFields,
    /// Image URLs to import, replacing the listing's images; `None` when the body left them alone.
    pub images: Option<Vec<String>>,
    /// Uploaded photos to attach, replacing the listing's images; `None` when left alone.
    pub attachment_ids: Option<Vec<i64>>,
}

/// Identifiers a body names whose existence only the store can confirm. The caller checks
/// them and reports `warehouse_id_invalid` / `attachment_ids_invalid`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct References {
    pub warehouse_id: Option<String>,
    pub attachment_ids: Vec<i64>,
}

/// The well-formed warehouse and attachment ids an input names (malformed ones are already
/// reasons of [`validate`]).
pub fn referenced_ids(input: &ListingInput) -> References {
    References {
        warehouse_id: input.warehouse_id.set().cloned(),
        attachment_ids: input.attachment_ids.set().cloned().unwrap_or_default(),
    }
}

/// Validates `input` as a whole listing (create, bulk row) or, with `existing`, as a change
/// to a stored one (PATCH: omitted fields keep their value, `null` clears an optional one).
/// Collects every reason at once.
pub fn validate(input: &ListingInput, existing: Option<&ListingFields>) -> Result<ValidListing, Vec<FieldError>> {
    let mut r = Reader { input, existing, errors: Vec::new() };

    let title = r.read("title", &input.title, |e| Some(e.title.clone()));
    r.require("title", &title);
    let regular_price = r.read("price_gbp", &input.regular_price, |e| Some(e.regular_price));
    r.require("price_gbp", &regular_price);
    let condition = r.read("condition", &input.condition, |e| Some(e.condition));
    r.require("condition", &condition);
    let category = r.read("category", &input.category, |e| Some(e.category.clone()));
    r.require("category", &category);
    let description = r.read("description", &input.description, |e| e.description.clone());
    let channel = r.read("channel", &input.channel, |e| Some(e.channel));
    // `active` or `draft` when given; a stored `closed` stays unless the body changes it.
    let status = r.read("status", &input.status, |e| Some(e.status));
    let sale_price = r.read("sale_price_gbp", &input.sale_price, |e| e.sale_price);
    if let (Got::Value(sale), Got::Value(regular)) = (&sale_price, &regular_price) {
        if sale >= regular {
            r.reject("sale_price_gbp", "invalid");
        }
    }
    let rrp = r.read("rrp_gbp", &input.rrp, |e| e.rrp);
    let delivery =
        r.read("delivery_contribution_gbp", &input.delivery_contribution_gbp, |e| Some(e.delivery_contribution_gbp));
    let brand = r.read("brand", &input.brand, |e| e.brand.clone());
    let colour = r.read("colour", &input.colour, |e| e.colour.clone());
    let fabric = r.read("fabric", &input.fabric, |e| e.fabric.clone());
    let age_years = r.read("age_years", &input.age_years, |e| e.age_years.clone());
    let available_from = r.read("available_from", &input.available_from, |e| e.available_from.clone());
    let quantity = r.read("quantity", &input.quantity, |e| Some(e.quantity));
    r.check_quantity(&quantity, &channel, &status);
    let measurements = r.read("measurements", &input.measurements, |e| Some(e.measurements.clone()));
    let exposed_to = r.read("exposed_to", &input.exposed_to, |e| Some(e.exposed_to.clone()));
    let faults = r.read("faults", &input.faults, |e| Some(e.faults.clone()));
    r.require("faults", &faults);
    let images = r.given("images", &input.images);
    let attachment_ids = r.given("attachment_ids", &input.attachment_ids);
    let sku = r.read("sku", &input.sku, |e| e.sku.clone());
    let warehouse_location = r.read("warehouse_location", &input.warehouse_location, |e| e.warehouse_location.clone());
    let warehouse_id = r.read("warehouse_id", &input.warehouse_id, |e| e.warehouse_id.clone());
    for field in &input.unknown {
        r.errors.push(FieldError::of(field, "unknown"));
    }

    let (Got::Value(title), Got::Value(regular_price), Got::Value(condition), Got::Value(category), Got::Value(faults)) =
        (title, regular_price, condition, category, faults)
    else {
        debug_assert!(!r.errors.is_empty(), "a required field failed without a reason");
        return Err(r.errors);
    };
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let fields = ListingFields {
        title,
        description: description.value(),
        category,
        condition,
        channel: channel.value().unwrap_or(Channel::Exchange),
        status: status.value().unwrap_or(ListingStatus::Active),
        regular_price,
        sale_price: sale_price.value(),
        rrp: rrp.value(),
        delivery_contribution_gbp: delivery.value().unwrap_or(0),
        brand: brand.value(),
        colour: colour.value(),
        fabric: fabric.value(),
        age_years: age_years.value(),
        available_from: available_from.value(),
        quantity: quantity.value().unwrap_or(1),
        measurements: measurements.value().unwrap_or_default(),
        exposed_to: exposed_to.value().unwrap_or_default(),
        faults,
        sku: sku.value(),
        warehouse_location: warehouse_location.value(),
        warehouse_id: warehouse_id.value(),
    };
    Ok(ValidListing { fields, images, attachment_ids })
}

/// A field's value after reading: given (or kept), absent, or refused with a reason already recorded.
enum Got<T> {
    Value(T),
    Absent,
    Invalid,
}

impl<T> Got<T> {
    fn value(self) -> Option<T> {
        match self {
            Got::Value(v) => Some(v),
            Got::Absent | Got::Invalid => None,
        }
    }
}

struct Reader<'a> {
    input: &'a ListingInput,
    existing: Option<&'a ListingFields>,
    errors: Vec<FieldError>,
}

impl Reader<'_> {
    /// The input's value of `field` (`null` and blanks are absent), else the stored one.
    fn read<T: Clone>(
        &mut self,
        field: &'static str,
        given: &Given<T>,
        keep: impl FnOnce(&ListingFields) -> Option<T>,
    ) -> Got<T> {
        match given {
            Given::Set(v) => Got::Value(v.clone()),
            Given::Clear => Got::Absent,
            Given::Refused(reason) => {
                self.reject(field, reason);
                Got::Invalid
            }
            Given::Keep => self.existing.and_then(keep).map_or(Got::Absent, Got::Value),
        }
    }

    /// A field that only means something when the body gives it (`null` gives an empty list).
    fn given<T: Clone>(&mut self, field: &'static str, given: &Given<Vec<T>>) -> Option<Vec<T>> {
        match given {
            Given::Keep => None,
            Given::Clear => Some(Vec::new()),
            Given::Set(v) => Some(v.clone()),
            Given::Refused(reason) => {
                self.reject(field, reason);
                None
            }
        }
    }

    fn require<T>(&mut self, field: &'static str, got: &Got<T>) {
        if matches!(got, Got::Absent) {
            self.reject(field, "required");
        }
    }

    fn reject(&mut self, field: &'static str, reason: &str) {
        self.errors.push(super::spec::LISTING_BODY.error(field, reason));
    }

    /// Exchange listings hold exactly one unit, clearance 1..10000; a sold-out (closed)
    /// listing holds none.
    fn check_quantity(&mut self, quantity: &Got<i64>, channel: &Got<Channel>, status: &Got<ListingStatus>) {
        let (Got::Value(quantity), Some(channel)) = (quantity, channel_or_default(channel)) else {
            return;
        };
        let closed = match status {
            Got::Value(status) => *status == ListingStatus::Closed,
            Got::Absent => false,
            Got::Invalid => return,
        };
        let allowed = match channel {
            _ if closed && *quantity == 0 => true,
            Channel::Exchange => *quantity == 1,
            Channel::Clearance => (1..=MAX_CLEARANCE_QUANTITY).contains(quantity),
        };
        if allowed {
            return;
        }
        // Reopening a sold-out listing without giving it stock: say that, not that the
        // quantity the client never sent is wrong.
        let sold_out = self.existing.is_some_and(|e| e.status == ListingStatus::Closed && e.quantity == 0);
        if sold_out && *quantity == 0 && self.input.quantity == Given::Keep {
            self.errors.push(FieldError::new("status", "listing_sold_out"));
        } else {
            self.reject("quantity", "invalid");
        }
    }
}

/// The channel the listing will have; `None` when the given one is invalid.
fn channel_or_default(channel: &Got<Channel>) -> Option<Channel> {
    match channel {
        Got::Value(c) => Some(*c),
        Got::Absent => Some(Channel::Exchange),
        Got::Invalid => None,
    }
}

#[cfg(test)]
mod tests;
