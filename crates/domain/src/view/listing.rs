//! Listings as the use cases answer them: a listing's detail, a list page's summaries, a
//! sync page, the outcome of a removal, a photo, a bulk draft.

use crate::channel::Channel;
use crate::listing::{ImageStatus, ListingFields, ListingStatus};
use crate::money::Pence;
use crate::time::Ts;

/// A stored listing with everything its detail shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ListingRecord {
    pub id: i64,
    pub brand_id: i64,
    /// The seller.
    pub user_id: i64,
    pub seller_name: String,
    pub fields: ListingFields,
    pub view_count: i64,
    /// Bumped by every update; an update names the version it was validated against.
    pub version: i64,
    pub created_at: Ts,
    pub updated_at: Ts,
    pub images: Vec<ListingImage>,
}

/// One entry of a listing's ordered image list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ListingImage {
    pub position: i64,
    pub source_url: Option<String>,
    pub attachment_id: Option<i64>,
    pub status: ImageStatus,
    /// Set once the image is ready.
    pub url: Option<String>,
    pub error: Option<String>,
}

/// What a list page shows of each listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListingSummaryRecord {
    pub id: i64,
    pub title: String,
    pub status: ListingStatus,
    pub channel: Channel,
    pub category: String,
    pub regular_price: Pence,
    pub sale_price: Option<Pence>,
    pub delivery_contribution_gbp: u32,
    pub view_count: i64,
    pub created_at: Ts,
    pub updated_at: Ts,
    /// Set once trashed: only a sync page shows trashed listings.
    pub deleted_at: Option<Ts>,
    /// The first ready image.
    pub cover_url: Option<String>,
}

/// One page of a sync walk (decisions 11.2), in (`updated_at`, `id`) order.
#[derive(Debug, Clone)]
pub struct SyncPage {
    pub listings: Vec<ListingSummaryRecord>,
    /// More listings follow the last one of this page.
    pub has_more: bool,
}

/// One page of listings and how many match the filter in all.
#[derive(Debug, Clone, Default)]
pub struct ListingPage {
    pub listings: Vec<ListingSummaryRecord>,
    pub total: i64,
    /// `total` is an estimate: a search matched more than
    /// [`crate::listing::SEARCH_EXACT_TOTAL`] listings (see the store's search).
    pub total_is_estimate: bool,
}

/// A saved listing, and whether saving it added a manufacturer brand to the partner's list.
#[derive(Debug, Clone)]
pub struct SavedListing {
    pub record: ListingRecord,
    pub brand_created: bool,
}

/// Why a listing was not removed (or that it was).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Deleted,
    /// Missing, trashed, or another brand's.
    NotFound,
    /// The brand's, but another user's.
    NotOwner,
}

/// Writes a listing's summary as an event's `data`, given the brand's slug.
pub type ListingView = Box<dyn Fn(&ListingSummaryRecord, &str) -> serde_json::Value + Send + Sync>;

/// A stored photo as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct PhotoRecord {
    pub id: i64,
    pub brand_id: i64,
    pub name: String,
    pub mime: String,
    pub filename: String,
    pub byte_size: i64,
    pub width: i64,
    pub height: i64,
    /// How far its thumbnails got.
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub thumb_status: ImageStatus,
    pub medium_name: Option<String>,
    pub large_name: Option<String>,
    pub created_at: Ts,
}

/// A draft as stored, without its file.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct BulkDraftRecord {
    pub id: i64,
    pub brand_id: i64,
    pub user_id: i64,
    /// The name of the user who uploaded it.
    pub uploader: String,
    pub filename: String,
    /// `create` or `upsert`.
    pub mode: String,
    /// Data rows read at upload.
    pub row_count: i64,
    pub created_at: Ts,
    pub expires_at: Ts,
    pub committed_at: Option<Ts>,
    /// What the import did (JSON written by the use case), once committed.
    pub result: Option<String>,
}
