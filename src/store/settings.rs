//! The brand profile and billing entity of each brand: one row each, created on first save.
//!
//! A save is one upsert that writes only the fields the patch names (`COALESCE` of the new
//! value and the stored one), so concurrent saves of different fields never undo each other.

use sqlx::FromRow;

use super::{now, on_pool, Store, StoreError};
use crate::domain::settings::{Billing, BillingPatch, BrandProfile, ProfilePatch};

#[derive(FromRow)]
struct ProfileRow {
    display_name: String,
    tagline: String,
    description: String,
    support_email: String,
    support_phone: String,
    logo_url: String,
    accent_color: String,
}

impl From<ProfileRow> for BrandProfile {
    fn from(r: ProfileRow) -> Self {
        Self {
            display_name: r.display_name,
            tagline: r.tagline,
            description: r.description,
            support_email: r.support_email,
            support_phone: r.support_phone,
            logo_url: r.logo_url,
            accent_color: r.accent_color,
        }
    }
}

#[derive(FromRow)]
struct BillingRow {
    company_name: String,
    address_1: String,
    address_2: String,
    city: String,
    postcode: String,
    country: String,
    company_number: String,
    vat_number: String,
    invoice_email: String,
}

impl From<BillingRow> for Billing {
    fn from(r: BillingRow) -> Self {
        Self {
            company_name: r.company_name,
            address_1: r.address_1,
            address_2: r.address_2,
            city: r.city,
            postcode: r.postcode,
            country: r.country,
            company_number: r.company_number,
            vat_number: r.vat_number,
            invoice_email: r.invoice_email,
        }
    }
}

const PROFILE_COLUMNS: &str =
    "display_name, tagline, description, support_email, support_phone, logo_url, accent_color";
const BILLING_COLUMNS: &str =
    "company_name, address_1, address_2, city, postcode, country, company_number, vat_number, invoice_email";

impl Store {
    /// The saved profile, or `None` before the brand's first save.
    pub async fn brand_profile(&self, brand_id: i64) -> Result<Option<BrandProfile>, StoreError> {
        let sql = format!("SELECT {PROFILE_COLUMNS} FROM brand_profiles WHERE brand_id = $1");
        on_pool!(self, read, |pool| {
            let row: Option<ProfileRow> = sqlx::query_as(&sql).bind(brand_id).fetch_optional(pool).await?;
            Ok(row.map(Into::into))
        })
    }

    /// Applies a patch, creating the profile on the first save (the patch then names the
    /// display name: [`ProfilePatch::parse`] requires it when there is no profile yet).
    pub async fn save_brand_profile(&self, brand_id: i64, patch: &ProfilePatch) -> Result<BrandProfile, StoreError> {
        let sql = format!(
            "INSERT INTO brand_profiles (brand_id, {PROFILE_COLUMNS}, created_at, updated_at)
             VALUES ($1, COALESCE($2, ''), COALESCE($3, ''), COALESCE($4, ''), COALESCE($5, ''),
                     COALESCE($6, ''), COALESCE($7, ''), COALESCE($8, ''), $9, $9)
             ON CONFLICT (brand_id) DO UPDATE SET
                 display_name = COALESCE($2, brand_profiles.display_name),
                 tagline = COALESCE($3, brand_profiles.tagline),
                 description = COALESCE($4, brand_profiles.description),
                 support_email = COALESCE($5, brand_profiles.support_email),
                 support_phone = COALESCE($6, brand_profiles.support_phone),
                 logo_url = COALESCE($7, brand_profiles.logo_url),
                 accent_color = COALESCE($8, brand_profiles.accent_color),
                 updated_at = $9
             RETURNING {PROFILE_COLUMNS}"
        );
        on_pool!(self, write, |pool| {
            let row: ProfileRow = sqlx::query_as(&sql)
                .bind(brand_id)
                .bind(patch.display_name.as_deref())
                .bind(patch.tagline.as_deref())
                .bind(patch.description.as_deref())
                .bind(patch.support_email.as_deref())
                .bind(patch.support_phone.as_deref())
                .bind(patch.logo_url.as_deref())
                .bind(patch.accent_color.as_deref())
                .bind(now())
                .fetch_one(pool)
                .await?;
            Ok(row.into())
        })
    }

    /// The saved billing entity, or `None` before the brand's first save.
    pub async fn billing(&self, brand_id: i64) -> Result<Option<Billing>, StoreError> {
        let sql = format!("SELECT {BILLING_COLUMNS} FROM billing_entities WHERE brand_id = $1");
        on_pool!(self, read, |pool| {
            let row: Option<BillingRow> = sqlx::query_as(&sql).bind(brand_id).fetch_optional(pool).await?;
            Ok(row.map(Into::into))
        })
    }

    /// Applies a patch, creating the billing entity on the first save.
    pub async fn save_billing(&self, brand_id: i64, patch: &BillingPatch) -> Result<Billing, StoreError> {
        let sql = format!(
            "INSERT INTO billing_entities (brand_id, {BILLING_COLUMNS}, created_at, updated_at)
             VALUES ($1, COALESCE($2, ''), COALESCE($3, ''), COALESCE($4, ''), COALESCE($5, ''),
                     COALESCE($6, ''), COALESCE($7, 'United Kingdom'), COALESCE($8, ''), COALESCE($9, ''),
                     COALESCE($10, ''), $11, $11)
             ON CONFLICT (brand_id) DO UPDATE SET
                 company_name = COALESCE($2, billing_entities.company_name),
                 address_1 = COALESCE($3, billing_entities.address_1),
                 address_2 = COALESCE($4, billing_entities.address_2),
                 city = COALESCE($5, billing_entities.city),
                 postcode = COALESCE($6, billing_entities.postcode),
                 country = COALESCE($7, billing_entities.country),
                 company_number = COALESCE($8, billing_entities.company_number),
                 vat_number = COALESCE($9, billing_entities.vat_number),
                 invoice_email = COALESCE($10, billing_entities.invoice_email),
                 updated_at = $11
             RETURNING {BILLING_COLUMNS}"
        );
        on_pool!(self, write, |pool| {
            let row: BillingRow = sqlx::query_as(&sql)
                .bind(brand_id)
                .bind(patch.company_name.as_deref())
                .bind(patch.address_1.as_deref())
                .bind(patch.address_2.as_deref())
                .bind(patch.city.as_deref())
                .bind(patch.postcode.as_deref())
                .bind(patch.country.as_deref())
                .bind(patch.company_number.as_deref())
                .bind(patch.vat_number.as_deref())
                .bind(patch.invoice_email.as_deref())
                .bind(now())
                .fetch_one(pool)
                .await?;
            Ok(row.into())
        })
    }
}
