//! The warehouse address book of each brand.
//!
//! Exactly one warehouse of a brand with any is the default. The database refuses a second
//! (the partial unique index `warehouses_one_default`). Every change runs in one
//! transaction that first locks the brand's book (`OPEN_BOOK`), so one brand's changes run
//! one after another on any backend; it demotes before it promotes, and deleting the
//! default promotes another in the same transaction, so no committed state has none or two.
//! Should a change still lose a race on the index, it is tried again.

use std::future::Future;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::listings::tick_listing_clock;
use super::{now, on_pool, record_audit, Store, StoreError};
use rehome_domain::audit::AuditEntry;
use rehome_domain::settings::{NewWarehouse, Warehouse, WarehouseChange, WarehouseId, WarehousePatch};

impl Store {
    /// The brand's default warehouse, if it has any warehouse.
    pub async fn default_warehouse_id(&self, brand_id: i64) -> Result<Option<String>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT id FROM warehouses WHERE brand_id = $1 AND is_default")
                .bind(brand_id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// True when `id` is one of the brand's warehouses.
    pub async fn warehouse_in_brand(&self, brand_id: i64, id: &str) -> Result<bool, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar::<_, i64>("SELECT brand_id FROM warehouses WHERE brand_id = $1 AND id = $2")
                .bind(brand_id)
                .bind(id)
                .fetch_optional(pool)
                .await?
                .is_some())
        })
    }
}

/// How often a warehouse change is tried after losing a race on a unique index. With the
/// book locked first this should not happen; it keeps a legitimate call from failing if
/// it ever does.
const ATTEMPTS: usize = 8;

#[derive(FromRow)]
struct WarehouseRow {
    id: String,
    label: String,
    contact_name: String,
    contact_email: String,
    contact_phone: String,
    address_1: String,
    address_2: String,
    city: String,
    postcode: String,
    country: String,
    is_default: bool,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<WarehouseRow> for Warehouse {
    fn from(r: WarehouseRow) -> Self {
        Self {
            id: r.id,
            label: r.label,
            contact_name: r.contact_name,
            contact_email: r.contact_email,
            contact_phone: r.contact_phone,
            address_1: r.address_1,
            address_2: r.address_2,
            city: r.city,
            postcode: r.postcode,
            country: r.country,
            is_default: r.is_default,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

const COLUMNS: &str = "id, label, contact_name, contact_email, contact_phone, address_1, address_2, city, postcode, \
                       country, is_default, created_at, updated_at";

/// The brand's warehouses in creation order.
static LIST: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM warehouses WHERE brand_id = $1 ORDER BY created_at, id"));

/// Demotes the brand's default, if any, before another warehouse is promoted: the
/// one-default index never sees two.
const DEMOTE: &str = "UPDATE warehouses SET is_default = FALSE, updated_at = $2 WHERE brand_id = $1 AND is_default";

/// [`DEMOTE`], unless the default is warehouse `$3` (about to be promoted anyway).
const DEMOTE_OTHERS: &str =
    "UPDATE warehouses SET is_default = FALSE, updated_at = $2 WHERE brand_id = $1 AND is_default AND id <> $3";

/// Opens a change to the brand's address book: bumps its revision, which on PostgreSQL
/// locks the brand's book until commit (see the `warehouse_books` migration). It is the
/// first statement of every change, so SQLite takes its write lock at once too.
const OPEN_BOOK: &str = "INSERT INTO warehouse_books (brand_id, revision) VALUES ($1, 1)
     ON CONFLICT (brand_id) DO UPDATE SET revision = warehouse_books.revision + 1";

/// Promotes the brand's first remaining warehouse (creation order) when it has no default.
const PROMOTE_FIRST: &str = "UPDATE warehouses SET is_default = TRUE, updated_at = $2
     WHERE id = (SELECT id FROM warehouses WHERE brand_id = $1 ORDER BY created_at, id LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM warehouses WHERE brand_id = $1 AND is_default)";

/// Moves the listings collected from a deleted warehouse (`$2`) to the brand's default
/// warehouse, or to none when the brand has no warehouse left.
const REHOME_LISTINGS: &str = "UPDATE listings
     SET warehouse_id = (SELECT id FROM warehouses WHERE brand_id = $1 AND is_default), updated_at = $3
     WHERE brand_id = $1 AND warehouse_id = $2";

/// Why a change to a brand's warehouses did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WarehouseWriteError {
    /// Every attempt lost a race on the one-default index: another change to the brand's
    /// warehouses ran at the same time.
    #[error("concurrent change to the brand's warehouses")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Runs one attempt of a change again while it loses a race on a unique index.
async fn retrying<T, F, Fut>(mut attempt: F) -> Result<T, WarehouseWriteError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt().await {
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() && tries < ATTEMPTS => {
                tracing::debug!(tries, "warehouse change lost a race; trying again");
            }
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => return Err(WarehouseWriteError::Contended),
            Err(e) => return Err(StoreError::from(e).into()),
            Ok(value) => return Ok(value),
        }
    }
}

impl Store {
    /// The brand's warehouses in creation order.
    pub async fn warehouses(&self, brand_id: i64) -> Result<Vec<Warehouse>, StoreError> {
        on_pool!(self, read, |pool| {
            let rows: Vec<WarehouseRow> = sqlx::query_as(&LIST).bind(brand_id).fetch_all(pool).await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    pub async fn warehouse(&self, brand_id: i64, id: WarehouseId) -> Result<Option<Warehouse>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM warehouses WHERE brand_id = $1 AND id = $2");
        on_pool!(self, read, |pool| {
            let row: Option<WarehouseRow> =
                sqlx::query_as(&sql).bind(brand_id).bind(id.to_string()).fetch_optional(pool).await?;
            Ok(row.map(Into::into))
        })
    }

    /// Adds a warehouse. It becomes the default when asked to (demoting the previous one)
    /// or when it is the brand's first.
    pub async fn create_warehouse(
        &self,
        brand_id: i64,
        new: &NewWarehouse,
        audit: &AuditEntry,
    ) -> Result<Warehouse, WarehouseWriteError> {
        let insert = format!(
            "INSERT INTO warehouses (id, brand_id, label, contact_name, contact_email, contact_phone, address_1,
                                     address_2, city, postcode, country, is_default, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                     $12 OR NOT EXISTS (SELECT 1 FROM warehouses WHERE brand_id = $2), $13, $13)
             RETURNING {COLUMNS}"
        );
        retrying(|| async {
            on_pool!(self, write, |pool| {
                let mut tx = pool.begin().await?;
                sqlx::query(OPEN_BOOK).bind(brand_id).execute(&mut *tx).await?;
                // Taken once the brand's book is held, so creation order is commit order.
                let at = now();
                if new.is_default {
                    sqlx::query(DEMOTE).bind(brand_id).bind(at).execute(&mut *tx).await?;
                }
                let row: WarehouseRow = sqlx::query_as(&insert)
                    .bind(WarehouseId::new().to_string())
                    .bind(brand_id)
                    .bind(&new.label)
                    .bind(&new.contact_name)
                    .bind(&new.contact_email)
                    .bind(&new.contact_phone)
                    .bind(&new.address_1)
                    .bind(&new.address_2)
                    .bind(&new.city)
                    .bind(&new.postcode)
                    .bind(&new.country)
                    .bind(new.is_default)
                    .bind(at)
                    .fetch_one(&mut *tx)
                    .await?;
                record_audit((&mut *tx).into(), audit).await?;
                tx.commit().await?;
                Ok(row.into())
            })
        })
        .await
    }

    /// Changes the fields the patch names. `is_default: true` demotes the previous default
    /// first; un-setting the default is refused, since a brand with warehouses always has one.
    pub async fn update_warehouse(
        &self,
        brand_id: i64,
        id: WarehouseId,
        patch: &WarehousePatch,
        audit: &AuditEntry,
    ) -> Result<WarehouseChange<Warehouse>, WarehouseWriteError> {
        // `$14`: the patch un-sets the flag, which the default refuses.
        let update = format!(
            "UPDATE warehouses SET
                 label = COALESCE($3, label),
                 contact_name = COALESCE($4, contact_name),
                 contact_email = COALESCE($5, contact_email),
                 contact_phone = COALESCE($6, contact_phone),
                 address_1 = COALESCE($7, address_1),
                 address_2 = COALESCE($8, address_2),
                 city = COALESCE($9, city),
                 postcode = COALESCE($10, postcode),
                 country = COALESCE($11, country),
                 is_default = (is_default OR $12),
                 updated_at = $13
             WHERE brand_id = $1 AND id = $2 AND NOT (is_default AND $14)
             RETURNING {COLUMNS}"
        );
        let id = id.to_string();
        let promote = patch.is_default == Some(true);
        let unset = patch.is_default == Some(false);
        retrying(|| async {
            on_pool!(self, write, |pool| {
                let mut tx = pool.begin().await?;
                sqlx::query(OPEN_BOOK).bind(brand_id).execute(&mut *tx).await?;
                // Taken once the brand's book is held, so creation order is commit order.
                let at = now();
                if promote {
                    sqlx::query(DEMOTE_OTHERS).bind(brand_id).bind(at).bind(&id).execute(&mut *tx).await?;
                }
                let row: Option<WarehouseRow> = sqlx::query_as(&update)
                    .bind(brand_id)
                    .bind(&id)
                    .bind(patch.label.as_deref())
                    .bind(patch.contact_name.as_deref())
                    .bind(patch.contact_email.as_deref())
                    .bind(patch.contact_phone.as_deref())
                    .bind(patch.address_1.as_deref())
                    .bind(patch.address_2.as_deref())
                    .bind(patch.city.as_deref())
                    .bind(patch.postcode.as_deref())
                    .bind(patch.country.as_deref())
                    .bind(promote)
                    .bind(at)
                    .bind(unset)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else {
                    // Nothing changed (the transaction rolls back): tell why.
                    let exists: Option<i64> =
                        sqlx::query_scalar("SELECT brand_id FROM warehouses WHERE brand_id = $1 AND id = $2")
                            .bind(brand_id)
                            .bind(&id)
                            .fetch_optional(&mut *tx)
                            .await?;
                    return Ok(if exists.is_some() {
                        WarehouseChange::DefaultRequired
                    } else {
                        WarehouseChange::NotFound
                    });
                };
                record_audit((&mut *tx).into(), audit).await?;
                tx.commit().await?;
                Ok(WarehouseChange::Done(row.into()))
            })
        })
        .await
    }

    /// Deletes a warehouse. Deleting the default promotes the first remaining warehouse
    /// (creation order) in the same transaction, and listings collected from the deleted
    /// warehouse move to the brand's default (or to none).
    pub async fn delete_warehouse(
        &self,
        brand_id: i64,
        id: WarehouseId,
        audit: &AuditEntry,
    ) -> Result<WarehouseChange<()>, WarehouseWriteError> {
        let id = id.to_string();
        retrying(|| async {
            on_pool!(self, write, |pool| {
                let mut tx = pool.begin().await?;
                sqlx::query(OPEN_BOOK).bind(brand_id).execute(&mut *tx).await?;
                let was_default: Option<bool> =
                    sqlx::query_scalar("DELETE FROM warehouses WHERE brand_id = $1 AND id = $2 RETURNING is_default")
                        .bind(brand_id)
                        .bind(&id)
                        .fetch_optional(&mut *tx)
                        .await?;
                match was_default {
                    None => return Ok(WarehouseChange::NotFound),
                    Some(true) => {
                        sqlx::query(PROMOTE_FIRST).bind(brand_id).bind(now()).execute(&mut *tx).await?;
                    }
                    Some(false) => {}
                }
                let stamp = tick_listing_clock((&mut *tx).into(), brand_id, now()).await?;
                sqlx::query(REHOME_LISTINGS).bind(brand_id).bind(&id).bind(stamp).execute(&mut *tx).await?;
                record_audit((&mut *tx).into(), audit).await?;
                tx.commit().await?;
                Ok(WarehouseChange::Done(()))
            })
        })
        .await
    }

    /// Makes a warehouse the default (demoting the previous one) and answers the brand's
    /// whole list as it stands after the change.
    pub async fn set_default_warehouse(
        &self,
        brand_id: i64,
        id: WarehouseId,
        audit: &AuditEntry,
    ) -> Result<WarehouseChange<Vec<Warehouse>>, WarehouseWriteError> {
        let id = id.to_string();
        retrying(|| async {
            on_pool!(self, write, |pool| {
                let mut tx = pool.begin().await?;
                sqlx::query(OPEN_BOOK).bind(brand_id).execute(&mut *tx).await?;
                // Taken once the brand's book is held, so creation order is commit order.
                let at = now();
                sqlx::query(DEMOTE_OTHERS).bind(brand_id).bind(at).bind(&id).execute(&mut *tx).await?;
                let promoted = sqlx::query(
                    "UPDATE warehouses
                     SET is_default = TRUE, updated_at = CASE WHEN is_default THEN updated_at ELSE $3 END
                     WHERE brand_id = $1 AND id = $2",
                )
                .bind(brand_id)
                .bind(&id)
                .bind(at)
                .execute(&mut *tx)
                .await?;
                if promoted.rows_affected() == 0 {
                    // No such warehouse: the demotion rolls back with the transaction.
                    return Ok(WarehouseChange::NotFound);
                }
                let rows: Vec<WarehouseRow> = sqlx::query_as(&LIST).bind(brand_id).fetch_all(&mut *tx).await?;
                record_audit((&mut *tx).into(), audit).await?;
                tx.commit().await?;
                Ok(WarehouseChange::Done(rows.into_iter().map(Into::into).collect()))
            })
        })
        .await
    }
}
