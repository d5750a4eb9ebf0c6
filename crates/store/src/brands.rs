//! Partner brands (workspaces) and the manufacturer brand catalogue.

use super::{now, on_pool, record_audit, Store, StoreError};
use rehome_domain::audit::AuditEntry;
use rehome_domain::settings::TimeZone;
use rehome_domain::taxonomy::BUILT_IN_BRANDS;
use rehome_domain::view::BrandRecord;

/// What creating a brand did.
#[derive(Debug, Clone)]
pub enum BrandInsert {
    Created(BrandRecord),
    /// Another brand has the slug.
    SlugTaken,
}

impl Store {
    pub async fn create_brand(&self, slug: &str, name: &str) -> Result<BrandInsert, StoreError> {
        on_pool!(self, write, |pool| {
            let inserted = sqlx::query_as(
                "INSERT INTO brands (slug, name, created_at) VALUES ($1, $2, $3) RETURNING id, slug, name",
            )
            .bind(slug)
            .bind(name)
            .bind(now())
            .fetch_one(pool)
            .await;
            match inserted {
                Ok(brand) => Ok(BrandInsert::Created(brand)),
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(BrandInsert::SlugTaken),
                Err(e) => Err(e.into()),
            }
        })
    }

    pub async fn brand_by_slug(&self, slug: &str) -> Result<Option<BrandRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as("SELECT id, slug, name FROM brands WHERE slug = $1")
                .bind(slug)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// The brand's name and time zone (the name the PDF statement and the CSV print).
    pub async fn brand_name_and_zone(&self, brand_id: i64) -> Result<(String, TimeZone), StoreError> {
        on_pool!(self, read, |pool| {
            let (name, zone): (String, String) = sqlx::query_as("SELECT name, time_zone FROM brands WHERE id = $1")
                .bind(brand_id)
                .fetch_one(pool)
                .await?;
            Ok((name, TimeZone::stored(&zone)))
        })
    }

    /// Sets the brand's time zone and records `audit` in the same transaction; answers
    /// whether it changed (the same zone again changes and records nothing).
    pub async fn set_time_zone(&self, brand_id: i64, zone: TimeZone, audit: &AuditEntry) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let changed = sqlx::query("UPDATE brands SET time_zone = $2 WHERE id = $1 AND time_zone <> $2")
                .bind(brand_id)
                .bind(zone.name())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                > 0;
            if changed {
                record_audit((&mut *tx).into(), audit).await?;
            }
            tx.commit().await?;
            Ok(changed)
        })
    }

    /// Manufacturer brand names visible to a partner: the built-in catalogue and its own.
    pub async fn manufacturer_brand_names(&self, brand_id: i64) -> Result<Vec<String>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT name FROM manufacturer_brands WHERE brand_id IS NULL OR brand_id = $1")
                .bind(brand_id)
                .fetch_all(pool)
                .await?)
        })
    }

    /// Inserts the built-in catalogue names that are missing (idempotent, run at start).
    pub(super) async fn seed_manufacturer_brands(&self) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            for name in BUILT_IN_BRANDS {
                sqlx::query(
                    "INSERT INTO manufacturer_brands (brand_id, name, name_key, created_at)
                     SELECT NULL, $1, $2, $3
                     WHERE NOT EXISTS (SELECT 1 FROM manufacturer_brands WHERE brand_id IS NULL AND name_key = $2)",
                )
                .bind(name)
                .bind(name.to_lowercase())
                .bind(now())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }
}
