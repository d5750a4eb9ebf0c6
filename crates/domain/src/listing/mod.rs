//! A listing's content and its rules: the enums of the spec, the validated fields, and the
//! one validator shared by create, PATCH and bulk-import rows.

mod input;
mod matching;
mod parse;
mod query;
mod spec;
mod sync;
mod validate;

use serde::{Deserialize, Serialize};

use super::money::{payout, Pence};
use super::wire::wire_names;

pub use crate::limits::{
    BRAND_MAX, DESCRIPTION_INPUT_MAX, DESCRIPTION_MAX, IMAGE_URL_MAX, MAX_DIMENSION_CM, MAX_ITEMS, SKU_MAX, TITLE_MAX,
    WAREHOUSE_LOCATION_MAX,
};
pub use image::{ImageStatus, PhotoSource};
pub use input::{Given, ListingInput};
pub use query::{ListingQuery, MAX_Q_CHARS, MAX_Q_WORDS, MAX_SKU_CHARS, SEARCH_EXACT_TOTAL};
pub use spec::{BulkDelete, BulkDeleteRefused, ListingPatch, LISTING_BODY, MAX_BULK_IDS, MEASUREMENT_FIELDS};
pub use sync::SyncPosition;
pub use validate::{referenced_ids, validate, References, ValidListing};

pub use super::channel::Channel;

/// A listing's state. `closed` is reached only by selling out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListingStatus {
    Active,
    Draft,
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Condition {
    LikeNew,
    Excellent,
    GentlyUsed,
    Fair,
}

mod image;

wire_names!(ListingStatus { Active => "active", Draft => "draft", Closed => "closed" });
wire_names!(Condition { LikeNew => "like-new", Excellent => "excellent", GentlyUsed => "gently-used", Fair => "fair" });

impl ListingStatus {
    /// The status as people read it (the dashboard's pages).
    pub fn words(self) -> &'static str {
        match self {
            Self::Active => "Active (for sale)",
            Self::Draft => "Draft (not shown)",
            Self::Closed => "Closed (sold out)",
        }
    }
}

impl Condition {
    /// The condition as people read it: the taxonomy's label (one place for its wording).
    pub fn words(self) -> &'static str {
        super::taxonomy::CONDITIONS.iter().find(|c| c.value == self.as_str()).map_or(self.as_str(), |c| c.label)
    }
}

/// The delivery contributions a partner may choose, in whole pounds (129 means free delivery).
pub const DELIVERY_CONTRIBUTIONS_GBP: &[u32] = &[0, 30, 60, 129];

pub use super::limits::MAX_CLEARANCE_QUANTITY;

/// One piece of a listing with its dimensions, returned exactly as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Measurement {
    /// One of the `item_types` of the options endpoint.
    #[serde(rename = "type")]
    pub item_type: String,
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub w_cm: serde_json::Number,
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub d_cm: serde_json::Number,
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub h_cm: serde_json::Number,
}

/// The partner-controlled content of a valid listing. Every value is already checked and
/// canonical (taxonomy spellings, sanitised description, trimmed text).
#[derive(Debug, Clone, PartialEq)]
pub struct ListingFields {
    pub title: String,
    pub description: Option<String>,
    pub category: String,
    pub condition: Condition,
    pub channel: Channel,
    pub status: ListingStatus,
    /// `price_gbp`.
    pub regular_price: Pence,
    pub sale_price: Option<Pence>,
    pub rrp: Option<Pence>,
    pub delivery_contribution_gbp: u32,
    /// Manufacturer brand as the partner typed it; the store swaps in the catalogue spelling.
    pub brand: Option<String>,
    pub colour: Option<String>,
    pub fabric: Option<String>,
    pub age_years: Option<String>,
    /// `YYYY-MM-DD`.
    pub available_from: Option<String>,
    pub quantity: i64,
    pub measurements: Vec<Measurement>,
    pub exposed_to: Vec<String>,
    pub faults: Vec<String>,
    pub sku: Option<String>,
    pub warehouse_location: Option<String>,
    /// The collection warehouse (lower-case hyphenated UUID).
    pub warehouse_id: Option<String>,
}

impl ListingFields {
    /// What a buyer pays: the sale price when set, else the regular price.
    pub fn price(&self) -> Pence {
        price(self.regular_price, self.sale_price)
    }

    /// The partner's payout per single sale at [`Self::price`].
    pub fn payout(&self) -> Pence {
        payout(self.channel, self.price(), self.delivery_contribution_gbp)
    }
}

/// What a buyer pays: the sale price when set, else the regular price.
pub fn price(regular: Pence, sale: Option<Pence>) -> Pence {
    sale.unwrap_or(regular)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_their_wire_names() {
        for channel in Channel::ALL {
            assert_eq!(channel.as_str().parse::<Channel>(), Ok(*channel));
        }
        for status in ListingStatus::ALL {
            assert_eq!(status.as_str().parse::<ListingStatus>(), Ok(*status));
        }
        for condition in Condition::ALL {
            assert_eq!(condition.as_str().parse::<Condition>(), Ok(*condition));
        }
        assert!("Clearance".parse::<Channel>().is_err());
    }

    /// What a page shows is never a wire name: words that start with a capital, without
    /// `_`, `-` between letters or `.`.
    pub(crate) fn assert_words(wire: &str, words: &str) {
        assert_ne!(wire, words);
        assert!(words.starts_with(|c: char| c.is_ascii_uppercase()), "{words}");
        assert!(!words.contains('_') && !words.contains('.'), "{words}");
        assert!(!words.contains(wire), "{words} holds the wire name {wire}");
    }

    #[test]
    fn every_value_people_see_has_words_beside_its_wire_name() {
        for channel in Channel::ALL {
            assert_words(channel.as_str(), channel.words());
        }
        for status in ListingStatus::ALL {
            assert_words(status.as_str(), status.words());
        }
        for condition in Condition::ALL {
            let words = condition.words();
            assert!(words.starts_with(|c: char| c.is_ascii_uppercase()) && !words.contains('-'), "{words}");
        }
        for status in crate::webhook::DeliveryStatus::ALL {
            assert!(status.words().starts_with(|c: char| c.is_ascii_uppercase()), "{}", status.words());
        }
        for action in crate::audit::AuditAction::ALL {
            assert_words(action.as_str(), action.words());
        }
        for kind in crate::event::EventType::ALL {
            assert_words(kind.as_str(), kind.words());
        }
        assert_eq!(crate::event::EventType::words_of("collection.scheduled"), "Collection scheduled");
        assert_eq!(crate::event::EventType::words_of("made.up"), "made.up");
    }

    #[test]
    fn conditions_match_the_taxonomy() {
        let names: Vec<&str> = Condition::ALL.iter().map(|c| c.as_str()).collect();
        let taxonomy: Vec<&str> = crate::taxonomy::CONDITIONS.iter().map(|c| c.value).collect();
        assert_eq!(names, taxonomy);
    }

    #[test]
    fn the_price_is_the_sale_price_when_set() {
        assert_eq!(price(Pence::new(10_000), None), Pence::new(10_000));
        assert_eq!(price(Pence::new(10_000), Some(Pence::new(8_000))), Pence::new(8_000));
    }
}
