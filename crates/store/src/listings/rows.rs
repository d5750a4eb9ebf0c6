//! Rows as the database returns them, and their conversion into records.

use crate::{StoreError, Ts};
use rehome_domain::listing::{ListingFields, Measurement};
use rehome_domain::money::Pence;
use rehome_domain::view::{ListingImage, ListingRecord, ListingSummaryRecord};

/// A stored value that does not parse: the database holds something no code wrote.
fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(format!("stored listing has an invalid {what}").into()))
}

fn parse<T: std::str::FromStr>(value: &str, what: &str) -> Result<T, StoreError> {
    value.parse().map_err(|_| corrupt(what))
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|_| corrupt(what))
}

fn pence(value: i64) -> Pence {
    Pence::new(value)
}

fn delivery(value: i64) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| corrupt("delivery contribution"))
}

/// A listing with its images, as the positional JSON array of `DETAIL_JSON` in the store
/// (one value per statement). Instants are RFC 3339 text on either backend; the stored
/// JSON columns (measurements, exposed_to, faults) are text holding JSON.
#[derive(serde::Deserialize)]
pub(super) struct DetailRow {
    id: i64,
    brand_id: i64,
    user_id: i64,
    seller_name: String,
    status: String,
    channel: String,
    title: String,
    description: Option<String>,
    category: String,
    condition: String,
    regular_price_pence: i64,
    sale_price_pence: Option<i64>,
    rrp_pence: Option<i64>,
    delivery_contribution_gbp: i64,
    manufacturer_brand: Option<String>,
    colour: Option<String>,
    fabric: Option<String>,
    age_years: Option<String>,
    available_from: Option<String>,
    quantity: i64,
    measurements: String,
    exposed_to: String,
    faults: String,
    sku: Option<String>,
    warehouse_location: Option<String>,
    warehouse_id: Option<String>,
    view_count: i64,
    version: i64,
    created_at: String,
    updated_at: String,
    images: Vec<ListingImage>,
}

impl DetailRow {
    pub(super) fn parse(json: &str) -> Result<Self, StoreError> {
        parse_json(json, "detail row")
    }

    pub(super) fn into_record(self) -> Result<ListingRecord, StoreError> {
        let measurements: Vec<Measurement> = parse_json(&self.measurements, "measurements")?;
        let fields = ListingFields {
            title: self.title,
            description: self.description,
            category: self.category,
            condition: parse(&self.condition, "condition")?,
            channel: parse(&self.channel, "channel")?,
            status: parse(&self.status, "status")?,
            regular_price: pence(self.regular_price_pence),
            sale_price: self.sale_price_pence.map(pence),
            rrp: self.rrp_pence.map(pence),
            delivery_contribution_gbp: delivery(self.delivery_contribution_gbp)?,
            brand: self.manufacturer_brand,
            colour: self.colour,
            fabric: self.fabric,
            age_years: self.age_years,
            available_from: self.available_from,
            quantity: self.quantity,
            measurements,
            exposed_to: parse_json(&self.exposed_to, "exposed_to")?,
            faults: parse_json(&self.faults, "faults")?,
            sku: self.sku,
            warehouse_location: self.warehouse_location,
            warehouse_id: self.warehouse_id,
        };
        Ok(ListingRecord {
            id: self.id,
            brand_id: self.brand_id,
            user_id: self.user_id,
            seller_name: self.seller_name,
            fields,
            view_count: self.view_count,
            version: self.version,
            created_at: Ts::parse(&self.created_at).ok_or_else(|| corrupt("created_at"))?,
            updated_at: Ts::parse(&self.updated_at).ok_or_else(|| corrupt("updated_at"))?,
            images: self.images,
        })
    }
}

/// A summary as the positional JSON array of `SUMMARY_JSON` in the store.
#[derive(serde::Deserialize)]
pub(super) struct SummaryRow {
    id: i64,
    title: String,
    status: String,
    channel: String,
    category: String,
    regular_price_pence: i64,
    sale_price_pence: Option<i64>,
    delivery_contribution_gbp: i64,
    view_count: i64,
    created_at: String,
    updated_at: String,
    deleted_at: Option<String>,
    cover_url: Option<String>,
}

impl SummaryRow {
    pub(super) fn into_record(self) -> Result<ListingSummaryRecord, StoreError> {
        Ok(ListingSummaryRecord {
            id: self.id,
            title: self.title,
            status: parse(&self.status, "status")?,
            channel: parse(&self.channel, "channel")?,
            category: self.category,
            regular_price: pence(self.regular_price_pence),
            sale_price: self.sale_price_pence.map(pence),
            delivery_contribution_gbp: delivery(self.delivery_contribution_gbp)?,
            view_count: self.view_count,
            created_at: Ts::parse(&self.created_at).ok_or_else(|| corrupt("created_at"))?,
            updated_at: Ts::parse(&self.updated_at).ok_or_else(|| corrupt("updated_at"))?,
            deleted_at: self.deleted_at.map(|at| Ts::parse(&at).ok_or_else(|| corrupt("deleted_at"))).transpose()?,
            cover_url: self.cover_url,
        })
    }
}
