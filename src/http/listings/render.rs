//! Listing responses: the spec's summary and detail tables plus the `_pence` twins and the
//! additive fields of the decisions.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::listing::{price, ImageStatus, Measurement};
use crate::domain::money::{payout, Pence};
use crate::domain::view::{ListingImage, ListingRecord, ListingSummaryRecord};

/// A listing as list pages show it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListingSummary {
    pub id: i64,
    pub title: String,
    /// What a buyer pays, GBP: the sale price when set, else the regular price.
    #[schema(example = 79.99)]
    pub price: f64,
    #[schema(example = 7999)]
    pub price_pence: i64,
    /// Always `GBP`.
    #[schema(value_type = String, example = "GBP")]
    pub currency: &'static str,
    /// `active`, `draft` or `closed`.
    #[schema(value_type = crate::http::docs::enums::ListingStatus)]
    pub status: &'static str,
    /// The cover image (the first ready image); empty while there is none.
    pub image_url: String,
    /// Slug of the owning partner workspace.
    pub brand_id: String,
    /// The listing on the consumer marketplace.
    pub url: String,
    /// RFC 3339, UTC.
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.000000Z")]
    pub created_at: String,
    /// RFC 3339, UTC: the last change of the listing (fields, status, stock, seller,
    /// warehouse, or trashing). Sync walks follow it.
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.000000Z")]
    pub updated_at: String,
    /// RFC 3339, UTC, when the listing was trashed: only sync pages (`updated_since`) show
    /// trashed listings; null otherwise.
    #[schema(format = DateTime, value_type = Option<String>, example = json!(null))]
    pub deleted_at: Option<String>,
    pub view_count: i64,
    pub category: String,
    /// `clearance` or `exchange`.
    #[schema(value_type = crate::http::docs::enums::Channel)]
    pub channel: &'static str,
    /// Partner payout per single sale after commission, VAT and delivery contribution, GBP.
    pub payout: f64,
    pub payout_pence: i64,
}

/// The seller: the user whose API key created the listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct Seller {
    pub id: i64,
    pub display_name: String,
}

/// One requested image and how far its import (or photo link) got.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImageImport {
    /// Place in the listing's image order; 0 is the cover.
    pub position: i64,
    /// The URL given in `images`, for an import.
    pub source_url: Option<String>,
    /// The photo given in `attachment_ids`.
    pub attachment_id: Option<i64>,
    /// `pending`, `done` or `failed`.
    #[schema(value_type = String, example = "pending")]
    pub status: &'static str,
    /// The image's own URL once `done`.
    pub url: Option<String>,
    /// Why the import failed.
    pub error: Option<String>,
}

/// A listing with every field.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListingDetail {
    #[serde(flatten)]
    pub summary: ListingSummary,
    /// Plain text or sanitised basic HTML. Text fields are always strings: empty when unset.
    pub description: String,
    /// `price_gbp` as given, GBP.
    pub regular_price: f64,
    pub regular_price_pence: i64,
    /// Promotional price, GBP; null when none.
    pub sale_price: Option<f64>,
    pub sale_price_pence: Option<i64>,
    /// Original retail price, GBP; null when none.
    pub rrp: Option<f64>,
    pub rrp_pence: Option<i64>,
    /// Manufacturer brand.
    pub brand: String,
    pub colour: String,
    pub fabric: String,
    pub age_years: String,
    /// `like-new`, `excellent`, `gently-used` or `fair`.
    #[schema(value_type = crate::http::docs::enums::Condition)]
    pub condition: &'static str,
    /// `YYYY-MM-DD`, or empty when unset.
    #[schema(schema_with = date_or_empty)]
    pub available_from: String,
    pub exposed_to: Vec<String>,
    pub faults: Vec<String>,
    pub sku: String,
    pub warehouse_location: String,
    /// Whole pounds: 0, 30, 60 or 129.
    pub delivery_contribution_gbp: u32,
    pub quantity: i64,
    /// Ready image URLs in order; index 0 is the cover.
    pub images: Vec<String>,
    pub seller: Seller,
    /// The collection warehouse (UUID); null when the brand has none.
    pub warehouse_id: Option<String>,
    /// One entry per piece, as given.
    pub measurements: Vec<Measurement>,
    /// Every requested image with its import state.
    pub image_imports: Vec<ImageImport>,
}

/// Where the brand slug and marketplace base come from when rendering.
pub struct Context<'a> {
    pub brand_slug: &'a str,
    pub marketplace_url: &'a str,
    /// Base of photo URLs ([`crate::config::Config::media_url`]).
    pub media_url: &'a str,
}

impl Context<'_> {
    /// The listing's page on the consumer marketplace.
    pub fn url(&self, id: i64) -> String {
        format!("{}/listings/{id}", self.marketplace_url)
    }

    /// An image URL as stored: a photo of this service is stored as `/media/<name>`.
    fn image_url(&self, stored: &str) -> String {
        match stored.strip_prefix("/media/") {
            Some(name) => format!("{}/{name}", self.media_url),
            None => stored.to_owned(),
        }
    }
}

fn money(pence: Pence) -> (f64, i64) {
    (pence.gbp(), pence.get())
}

pub fn summary(record: &ListingSummaryRecord, cx: &Context<'_>) -> ListingSummary {
    let price = price(record.regular_price, record.sale_price);
    let payout = payout(record.channel, price, record.delivery_contribution_gbp);
    ListingSummary {
        id: record.id,
        title: record.title.clone(),
        price: price.gbp(),
        price_pence: price.get(),
        currency: "GBP",
        status: record.status.as_str(),
        image_url: record.cover_url.as_deref().map(|u| cx.image_url(u)).unwrap_or_default(),
        brand_id: cx.brand_slug.to_owned(),
        url: cx.url(record.id),
        created_at: record.created_at.to_string(),
        updated_at: record.updated_at.to_string(),
        deleted_at: record.deleted_at.map(|at| at.to_string()),
        view_count: record.view_count,
        category: record.category.clone(),
        channel: record.channel.as_str(),
        payout: payout.gbp(),
        payout_pence: payout.get(),
    }
}

pub fn detail(record: ListingRecord, cx: &Context<'_>) -> ListingDetail {
    let f = record.fields;
    let images: Vec<String> = record
        .images
        .iter()
        .filter(|i| i.status == ImageStatus::Done)
        .filter_map(|i| i.url.as_deref())
        .map(|u| cx.image_url(u))
        .collect();
    let summary_record = ListingSummaryRecord {
        id: record.id,
        title: f.title,
        status: f.status,
        channel: f.channel,
        category: f.category,
        regular_price: f.regular_price,
        sale_price: f.sale_price,
        delivery_contribution_gbp: f.delivery_contribution_gbp,
        view_count: record.view_count,
        created_at: record.created_at,
        updated_at: record.updated_at,
        deleted_at: None,
        // Already absolute: `summary` leaves it as it is.
        cover_url: images.first().cloned(),
    };
    let (regular_price, regular_price_pence) = money(f.regular_price);
    ListingDetail {
        summary: summary(&summary_record, cx),
        description: f.description.unwrap_or_default(),
        regular_price,
        regular_price_pence,
        sale_price: f.sale_price.map(Pence::gbp),
        sale_price_pence: f.sale_price.map(Pence::get),
        rrp: f.rrp.map(Pence::gbp),
        rrp_pence: f.rrp.map(Pence::get),
        brand: f.brand.unwrap_or_default(),
        colour: f.colour.unwrap_or_default(),
        fabric: f.fabric.unwrap_or_default(),
        age_years: f.age_years.unwrap_or_default(),
        condition: f.condition.as_str(),
        available_from: f.available_from.unwrap_or_default(),
        exposed_to: f.exposed_to,
        faults: f.faults,
        sku: f.sku.unwrap_or_default(),
        warehouse_location: f.warehouse_location.unwrap_or_default(),
        delivery_contribution_gbp: f.delivery_contribution_gbp,
        quantity: f.quantity,
        images,
        seller: Seller { id: record.user_id, display_name: record.seller_name },
        warehouse_id: f.warehouse_id,
        measurements: f.measurements,
        image_imports: record.images.into_iter().map(|i| image_import(i, cx)).collect(),
    }
}

fn image_import(image: ListingImage, cx: &Context<'_>) -> ImageImport {
    ImageImport {
        position: image.position,
        source_url: image.source_url,
        attachment_id: image.attachment_id,
        status: image.status.as_str(),
        url: image.url.as_deref().map(|u| cx.image_url(u)),
        error: image.error,
    }
}

/// A date (`YYYY-MM-DD`), or `""` when unset (text fields are never null).
fn date_or_empty() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{AnyOfBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
    let any_of = AnyOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::Date))))
        .item(ObjectBuilder::new().schema_type(Type::String).max_length(Some(0)))
        .description(Some("`YYYY-MM-DD`, or empty when unset."))
        .build();
    utoipa::openapi::Schema::AnyOf(any_of)
}
