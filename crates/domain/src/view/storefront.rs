//! The storefront's reads as the use cases answer them: catalogue cards, a listing's page,
//! facet counts, sitemap entries.

use crate::channel::Channel;
use crate::listing::Condition;
use crate::money::Pence;
use crate::time::Ts;

use super::ListingRecord;

/// A listing as a catalogue card shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MarketCard {
    pub id: i64,
    pub title: String,
    pub brand_slug: String,
    /// The brand's display name (its name when it has no profile).
    pub brand_name: String,
    pub channel: Channel,
    pub condition: Condition,
    pub category: String,
    pub regular_price: Pence,
    pub sale_price: Option<Pence>,
    /// The media name of the first ready photo's medium size (the original until it exists).
    pub cover: Option<String>,
}

/// A listing's page, whatever its state (the storefront decides what each state shows).
#[derive(Debug, Clone, PartialEq)]
pub struct MarketListing {
    pub record: ListingRecord,
    pub trashed: bool,
    pub brand_slug: String,
    pub brand_name: String,
    pub photos: Vec<MarketPhoto>,
}

/// A ready photo of a listing: media names of the original and of its sizes once made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketPhoto {
    pub name: String,
    pub medium: Option<String>,
    pub large: Option<String>,
    pub width: i64,
    pub height: i64,
}

/// One listing of a sitemap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapEntry {
    pub id: i64,
    pub updated_at: Ts,
}

/// One kept count: the catalogue's listings of a category, condition and channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetCount {
    pub category: String,
    pub condition: String,
    pub channel: String,
    pub live: i64,
}
