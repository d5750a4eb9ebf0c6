//! The brand profile and billing entity of each brand: one row each, created on first save.
//!
//! A save is one upsert that writes only the fields the patch names (`COALESCE` of the new
//! value and the stored one), so concurrent saves of different fields never undo each other.

use sqlx::FromRow;

use super::{now, on_pool, record_audit, Store, StoreError, BRAND_LOCK};
use rehome_domain::audit::AuditEntry;
use rehome_domain::precondition::Precondition;
use rehome_domain::settings::{Billing, BillingPatch, BrandProfile, ProfilePatch};

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

/// A table of one row per brand whose text columns are saved by patch: each column with
/// the value a first save gives it when the patch leaves it out.
struct PatchTable {
    name: &'static str,
    columns: &'static [(&'static str, &'static str)],
}

const PROFILES: PatchTable = PatchTable {
    name: "brand_profiles",
    columns: &[
        ("display_name", ""),
        ("tagline", ""),
        ("description", ""),
        ("support_email", ""),
        ("support_phone", ""),
        ("logo_url", ""),
        ("accent_color", ""),
    ],
};

const BILLING: PatchTable = PatchTable {
    name: "billing_entities",
    columns: &[
        ("company_name", ""),
        ("address_1", ""),
        ("address_2", ""),
        ("city", ""),
        ("postcode", ""),
        ("country", "United Kingdom"),
        ("company_number", ""),
        ("vat_number", ""),
        ("invoice_email", ""),
    ],
};

impl PatchTable {
    fn column_list(&self) -> String {
        self.columns.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ")
    }

    fn select_sql(&self) -> String {
        format!("SELECT {} FROM {} WHERE brand_id = $1", self.column_list(), self.name)
    }

    /// `$1` is the brand, `$2..` the patch's values in column order (`NULL`: leave as is),
    /// and the last the time of the save.
    fn upsert_sql(&self) -> String {
        let (table, columns) = (self.name, self.column_list());
        let at = self.columns.len() + 2;
        let values: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, default))| format!("COALESCE(${}, '{default}')", i + 2))
            .collect();
        let updates: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (c, _))| format!("{c} = COALESCE(${}, {table}.{c})", i + 2))
            .collect();
        format!(
            "INSERT INTO {table} (brand_id, {columns}, created_at, updated_at) VALUES ($1, {}, ${at}, ${at})
             ON CONFLICT (brand_id) DO UPDATE SET {}, updated_at = ${at}
             RETURNING {columns}",
            values.join(", "),
            updates.join(", ")
        )
    }
}

/// What both backends can read a saved row into.
trait SavedRow:
    for<'r> FromRow<'r, sqlx::sqlite::SqliteRow> + for<'r> FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin
{
}

impl<T> SavedRow for T where
    T: for<'r> FromRow<'r, sqlx::sqlite::SqliteRow> + for<'r> FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin
{
}

impl Store {
    /// The saved profile, or `None` before the brand's first save.
    pub async fn brand_profile(&self, brand_id: i64) -> Result<Option<BrandProfile>, StoreError> {
        Ok(self.saved::<ProfileRow>(&PROFILES, brand_id).await?.map(Into::into))
    }

    /// Applies a patch, creating the profile on the first save (the patch then names the
    /// display name: [`ProfilePatch::parse`] requires it when there is no profile yet).
    /// `None` when `guard` refused the profile as it stood: nothing changed.
    pub async fn save_brand_profile(
        &self,
        brand_id: i64,
        patch: &ProfilePatch,
        guard: Option<Precondition<'_, BrandProfile>>,
        audit: &AuditEntry,
    ) -> Result<Option<BrandProfile>, StoreError> {
        let values = [
            &patch.display_name,
            &patch.tagline,
            &patch.description,
            &patch.support_email,
            &patch.support_phone,
            &patch.logo_url,
            &patch.accent_color,
        ];
        self.save_patch::<ProfileRow, _>(&PROFILES, brand_id, &values, guard, audit).await
    }

    /// The saved billing entity, or `None` before the brand's first save.
    pub async fn billing(&self, brand_id: i64) -> Result<Option<Billing>, StoreError> {
        Ok(self.saved::<BillingRow>(&BILLING, brand_id).await?.map(Into::into))
    }

    /// Applies a patch, creating the billing entity on the first save. `None` when `guard`
    /// refused the entity as it stood: nothing changed.
    pub async fn save_billing(
        &self,
        brand_id: i64,
        patch: &BillingPatch,
        guard: Option<Precondition<'_, Billing>>,
        audit: &AuditEntry,
    ) -> Result<Option<Billing>, StoreError> {
        let values = [
            &patch.company_name,
            &patch.address_1,
            &patch.address_2,
            &patch.city,
            &patch.postcode,
            &patch.country,
            &patch.company_number,
            &patch.vat_number,
            &patch.invoice_email,
        ];
        self.save_patch::<BillingRow, _>(&BILLING, brand_id, &values, guard, audit).await
    }

    async fn saved<R: SavedRow>(&self, table: &PatchTable, brand_id: i64) -> Result<Option<R>, StoreError> {
        let sql = table.select_sql();
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(brand_id).fetch_optional(pool).await?))
    }

    /// One upsert that writes only the columns the patch names; `values` in column order.
    /// With a `guard`, the section as it stands (its defaults before the first save) is read
    /// in the same transaction, under the brand's row lock on PostgreSQL (SQLite has one
    /// writer), and nothing is written unless the guard accepts it.
    async fn save_patch<R: SavedRow + Into<D>, D: Default>(
        &self,
        table: &PatchTable,
        brand_id: i64,
        values: &[&Option<String>],
        guard: Option<Precondition<'_, D>>,
        audit: &AuditEntry,
    ) -> Result<Option<D>, StoreError> {
        debug_assert_eq!(values.len(), table.columns.len());
        let sql = table.upsert_sql();
        let select = table.select_sql();
        let lock = BRAND_LOCK.of(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if let Some(guard) = guard {
                sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
                let current: Option<R> = sqlx::query_as(&select).bind(brand_id).fetch_optional(&mut *tx).await?;
                if !guard(&current.map(Into::into).unwrap_or_default()) {
                    return Ok(None);
                }
            }
            let mut query = sqlx::query_as::<_, R>(&sql).bind(brand_id);
            for value in values {
                query = query.bind(value.as_deref());
            }
            let saved = query.bind(now()).fetch_one(&mut *tx).await?;
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(Some(saved.into()))
        })
    }
}

/// Holds a brand's row until the transaction ends, so that a conditional change of a
/// settings section reads the section as no concurrent change can alter it before the write.
/// SQLite runs one writer at a time: there the transaction alone suffices.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_upsert_keeps_what_the_patch_leaves_out() {
        let sql = BILLING.upsert_sql();
        assert!(sql.contains("VALUES ($1, COALESCE($2, ''),"));
        assert!(sql.contains("COALESCE($7, 'United Kingdom')"));
        assert!(sql.contains("invoice_email = COALESCE($10, billing_entities.invoice_email), updated_at = $11"));
        assert!(sql.contains("created_at, updated_at) VALUES ($1,") && sql.ends_with("RETURNING company_name, address_1, address_2, city, postcode, country, company_number, vat_number, invoice_email"));
    }
}
