//! Writing listings: creating (one, or a bulk import's rows together), updating and
//! trashing them, each in one transaction that ends by taking the brand's listing clock.

use std::fmt::Write;

use super::super::{now, on_conn, on_pool, record_audit, Conn, Store, StoreError, Ts};
use super::clock;
use super::{ImageSlot, ImageSource, ListingEdit, ListingUpdate, NewListing};
use rehome_domain::audit::AuditEntry;
use rehome_domain::listing::{ImageStatus, ListingFields};
use rehome_domain::money::Pence;
use rehome_domain::taxonomy::OTHER_BRAND;
use rehome_domain::view::{ListingImage, ListingRecord, Removal, SavedListing};

/// The columns of a listing's stored fields, in the order [`bind_listing_fields!`] binds
/// them: the insert and the update name their placeholders from this list, so the group of
/// 22 binds is written once and no statement numbers them by hand.
const FIELD_COLUMNS: [&str; 22] = [
    "status",
    "channel",
    "title",
    "description",
    "category",
    "condition",
    "regular_price_pence",
    "sale_price_pence",
    "rrp_pence",
    "delivery_contribution_gbp",
    "manufacturer_brand",
    "colour",
    "fabric",
    "age_years",
    "available_from",
    "quantity",
    "measurements",
    "exposed_to",
    "faults",
    "sku",
    "warehouse_location",
    "warehouse_id",
];

/// `INSERT INTO listings`: the brand and user ($1, $2), the fields from $3, then the time of
/// creation (created and updated).
static INSERT_LISTING: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let n = FIELD_COLUMNS.len();
    let fields: Vec<String> = (3..3 + n).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO listings (brand_id, user_id, {}, created_at, updated_at)
         VALUES ($1, $2, {}, ${at}, ${at})
         RETURNING id",
        FIELD_COLUMNS.join(", "),
        fields.join(", "),
        at = 3 + n
    )
});

/// `UPDATE listings` of a listing as it was read: the fields from $1, then the time of the
/// change, and the listing's id, brand, seller and version.
static UPDATE_LISTING: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let n = FIELD_COLUMNS.len();
    let fields: Vec<String> = FIELD_COLUMNS.iter().zip(1..).map(|(column, i)| format!("{column} = ${i}")).collect();
    format!(
        "UPDATE listings SET {}, updated_at = ${}, version = version + 1
         WHERE id = ${} AND brand_id = ${} AND user_id = ${} AND version = ${} AND deleted_at IS NULL",
        fields.join(", "),
        n + 1,
        n + 2,
        n + 3,
        n + 4,
        n + 5
    )
});

/// Binds a listing's stored fields, in the order of [`FIELD_COLUMNS`]. A macro, not a
/// function, so it serves every query type and backend.
macro_rules! bind_listing_fields {
    ($query:expr, $fields:expr, $brand:expr) => {{
        let f: &ListingFields = $fields;
        $query
            .bind(f.status.as_str())
            .bind(f.channel.as_str())
            .bind(&f.title)
            .bind(&f.description)
            .bind(&f.category)
            .bind(f.condition.as_str())
            .bind(f.regular_price.get())
            .bind(f.sale_price.map(Pence::get))
            .bind(f.rrp.map(Pence::get))
            .bind(i64::from(f.delivery_contribution_gbp))
            .bind($brand)
            .bind(&f.colour)
            .bind(&f.fabric)
            .bind(&f.age_years)
            .bind(&f.available_from)
            .bind(f.quantity)
            .bind(json_text(&f.measurements)?)
            .bind(json_text(&f.exposed_to)?)
            .bind(json_text(&f.faults)?)
            .bind(&f.sku)
            .bind(&f.warehouse_location)
            .bind(&f.warehouse_id)
    }};
}

impl Store {
    /// Creates one listing (and its manufacturer brand on first use) in one transaction,
    /// with `audit` about it.
    pub async fn create_listing(&self, new: NewListing<'_>, audit: &AuditEntry) -> Result<SavedListing, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let mut saved = insert_listing((&mut *tx).into(), new, now).await?;
            record_audit((&mut *tx).into(), &audit.about(format!("listing:{}", saved.record.id))).await?;
            self.listing_events((&mut *tx).into(), new.brand_id, &[saved.record.id], now).await?;
            saved.record.updated_at = clock::stamp((&mut *tx).into(), new.brand_id, now, &[saved.record.id]).await?;
            tx.commit().await?;
            Ok(saved)
        })
    }

    /// Writes `fields` over `existing` if it is unchanged since it was read (same version)
    /// and still the seller's; `images`, when given, replace the listing's images. `audit`
    /// is recorded about it with the change.
    pub async fn update_listing(
        &self,
        existing: &ListingRecord,
        fields: &ListingFields,
        images: Option<&[ImageSlot]>,
        audit: &AuditEntry,
    ) -> Result<ListingUpdate, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let Some(mut saved) = update_in((&mut *tx).into(), ListingEdit { existing, fields, images }, now).await?
            else {
                return Ok(ListingUpdate::Stale);
            };
            record_audit((&mut *tx).into(), &audit.about(format!("listing:{}", existing.id))).await?;
            self.listing_events((&mut *tx).into(), existing.brand_id, &[existing.id], now).await?;
            saved.record.updated_at = clock::stamp((&mut *tx).into(), existing.brand_id, now, &[existing.id]).await?;
            tx.commit().await?;
            Ok(ListingUpdate::Saved(Box::new(saved)))
        })
    }

    /// Applies `change` to one of the brand's listings read under the write lock, and saves
    /// what it returns in the same transaction: no other write can come between the read
    /// and the write. On SQLite the lock is the writer's (`BEGIN IMMEDIATE`); on PostgreSQL
    /// the row's (`FOR UPDATE`). For a change whose first, unlocked attempt met another
    /// write ([`ListingUpdate::Stale`]): read again without the lock, it can lose again, and
    /// across two nodes on one SQLite file a writer that waits sleeps in SQLite's busy
    /// handler while the other takes the lock again (issue 30 item 7). `Ok(None)` when there
    /// is no such live listing.
    pub async fn update_listing_locked<T, E>(
        &self,
        brand_id: i64,
        id: i64,
        audit: &AuditEntry,
        change: impl FnOnce(&ListingRecord) -> Result<(ListingFields, Option<Vec<ImageSlot>>, T), E> + Send,
    ) -> Result<Option<Result<(SavedListing, T), E>>, StoreError> {
        let detail = super::DETAIL_SQL.pick(self);
        let postgres = self.postgres().is_some();
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if postgres {
                sqlx::query("SELECT 1 FROM listings WHERE id = $1 AND brand_id = $2 FOR UPDATE")
                    .bind(id)
                    .bind(brand_id)
                    .execute(&mut *tx)
                    .await?;
            }
            let Some(json) =
                sqlx::query_scalar::<_, String>(detail).bind(id).bind(brand_id).fetch_optional(&mut *tx).await?
            else {
                return Ok(None);
            };
            let existing = super::rows::DetailRow::parse(&json)?.into_record()?;
            let (fields, images, extra) = match change(&existing) {
                Ok(changed) => changed,
                Err(refused) => return Ok(Some(Err(refused))),
            };
            let edit = ListingEdit { existing: &existing, fields: &fields, images: images.as_deref() };
            let Some(mut saved) = update_in((&mut *tx).into(), edit, now).await? else {
                // Read under the lock: only a broken invariant gets here.
                return Err(StoreError::Database(sqlx::Error::Protocol(format!(
                    "listing {id} changed while its write lock was held"
                ))));
            };
            record_audit((&mut *tx).into(), &audit.about(format!("listing:{id}"))).await?;
            self.listing_events((&mut *tx).into(), brand_id, &[id], now).await?;
            saved.record.updated_at = clock::stamp((&mut *tx).into(), brand_id, now, &[id]).await?;
            tx.commit().await?;
            Ok(Some(Ok((saved, extra))))
        })
    }

    /// A bulk import's rows in one transaction: `new` created and `edits` applied (each
    /// only if unchanged since it was read: else `Stale`, and the others still saved), or,
    /// should the database fail, none; `audit` recorded once for the import.
    pub async fn save_listings(
        &self,
        new: &[NewListing<'_>],
        edits: &[ListingEdit<'_>],
        audit: &AuditEntry,
    ) -> Result<(Vec<SavedListing>, Vec<ListingUpdate>), StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let saved = save_import_in((&mut *tx).into(), new, edits, now).await?;
            self.import_events((&mut *tx).into(), &saved, now, audit).await?;
            tx.commit().await?;
            Ok(saved)
        })
    }

    /// Trashes each listing of `ids` that is the brand's and whose seller `may_delete`
    /// allows (the domain's ownership rule, [`rehome_domain::user::Actor::may_change_listing_of`]),
    /// and says per distinct id what happened, in the order given: read and trashed in one
    /// write transaction, two statements whatever the count.
    pub async fn delete_listings(
        &self,
        brand_id: i64,
        ids: &[i64],
        may_delete: impl Fn(i64) -> bool + Send + Sync,
        audit: &AuditEntry,
    ) -> Result<Vec<(i64, Removal)>, StoreError> {
        let mut distinct: Vec<i64> = Vec::with_capacity(ids.len());
        for id in ids {
            if !distinct.contains(id) {
                distinct.push(*id);
            }
        }
        if distinct.is_empty() {
            return Ok(Vec::new());
        }
        let list =
            |first: usize, count: usize| (first..first + count).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ");
        let select_sql = format!(
            "SELECT id, user_id FROM listings WHERE brand_id = $1 AND deleted_at IS NULL AND id IN ({})",
            list(2, distinct.len())
        );
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let mut select = sqlx::query_as::<_, (i64, i64)>(&select_sql).bind(brand_id);
            for id in &distinct {
                select = select.bind(*id);
            }
            let owners = select.fetch_all(&mut *tx).await?;
            let removals: Vec<(i64, Removal)> = distinct
                .iter()
                .map(|id| {
                    let removal = match owners.iter().find(|(found, _)| found == id) {
                        None => Removal::NotFound,
                        Some((_, seller)) if !may_delete(*seller) => Removal::NotOwner,
                        Some(_) => Removal::Deleted,
                    };
                    (*id, removal)
                })
                .collect();
            let trashed: Vec<i64> =
                removals.iter().filter(|(_, removal)| *removal == Removal::Deleted).map(|(id, _)| *id).collect();
            if !trashed.is_empty() {
                let delete_sql = format!(
                    "UPDATE listings SET deleted_at = $1, updated_at = $1, version = version + 1
                     WHERE brand_id = $2 AND deleted_at IS NULL AND id IN ({})",
                    list(3, trashed.len())
                );
                let mut delete = sqlx::query(&delete_sql).bind(now).bind(brand_id);
                for id in &trashed {
                    delete = delete.bind(*id);
                }
                delete.execute(&mut *tx).await?;
                for id in &trashed {
                    record_audit((&mut *tx).into(), &audit.about(format!("listing:{id}"))).await?;
                }
                self.listing_events((&mut *tx).into(), brand_id, &trashed, now).await?;
                clock::stamp((&mut *tx).into(), brand_id, now, &trashed).await?;
            }
            tx.commit().await?;
            Ok(removals)
        })
    }
}

impl Store {
    /// The listing events of a bulk import's saved rows (see [`Store::listing_events`]),
    /// and its `audit` entry.
    pub(crate) async fn import_events(
        &self,
        mut conn: Conn<'_>,
        (created, updated): &(Vec<SavedListing>, Vec<ListingUpdate>),
        now: Ts,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        record_audit(conn.reborrow(), audit).await?;
        let saved: Vec<&ListingRecord> = created
            .iter()
            .map(|s| &s.record)
            .chain(updated.iter().filter_map(|u| match u {
                ListingUpdate::Saved(saved) => Some(&saved.record),
                ListingUpdate::Stale => None,
            }))
            .collect();
        let mut brands: Vec<i64> = saved.iter().map(|r| r.brand_id).collect();
        brands.sort_unstable();
        brands.dedup();
        for brand_id in brands {
            let ids: Vec<i64> = saved.iter().filter(|r| r.brand_id == brand_id).map(|r| r.id).collect();
            self.listing_events(conn.reborrow(), brand_id, &ids, now).await?;
        }
        Ok(())
    }
}

/// A bulk import's rows in the caller's transaction (see [`Store::save_listings`]).
pub(crate) async fn save_import_in(
    conn: Conn<'_>,
    new: &[NewListing<'_>],
    edits: &[ListingEdit<'_>],
    now: Ts,
) -> Result<(Vec<SavedListing>, Vec<ListingUpdate>), StoreError> {
    on_conn!(conn, |c| {
        let mut created = Vec::with_capacity(new.len());
        for listing in new {
            created.push(insert_listing((&mut *c).into(), *listing, now).await?);
        }
        let mut updated = Vec::with_capacity(edits.len());
        for edit in edits {
            updated.push(update_in((&mut *c).into(), *edit, now).await?);
        }
        let mut brands: Vec<i64> = created.iter().chain(updated.iter().flatten()).map(|s| s.record.brand_id).collect();
        brands.sort_unstable();
        brands.dedup();
        for brand_id in brands {
            let mut saved: Vec<&mut SavedListing> = created
                .iter_mut()
                .chain(updated.iter_mut().flatten())
                .filter(|s| s.record.brand_id == brand_id)
                .collect();
            let ids: Vec<i64> = saved.iter().map(|s| s.record.id).collect();
            let at = clock::stamp((&mut *c).into(), brand_id, now, &ids).await?;
            for s in &mut saved {
                s.record.updated_at = at;
            }
        }
        let updated = updated
            .into_iter()
            .map(|u| u.map_or(ListingUpdate::Stale, |saved| ListingUpdate::Saved(Box::new(saved))))
            .collect();
        Ok((created, updated))
    })
}

/// Inserts one listing with its images and, on first use, its manufacturer brand.
async fn insert_listing(conn: Conn<'_>, new: NewListing<'_>, now: Ts) -> Result<SavedListing, StoreError> {
    let f = new.fields;
    on_conn!(conn, |tx| {
        let (brand, brand_created) = match &f.brand {
            Some(name) => resolve_brand((&mut *tx).into(), new.brand_id, name, now).await?,
            None => (None, false),
        };
        let id: i64 =
            bind_listing_fields!(sqlx::query_scalar(&INSERT_LISTING).bind(new.brand_id).bind(new.user_id), f, &brand)
                .bind(now)
                .fetch_one(&mut *tx)
                .await?;
        let sources: Vec<(i64, &ImageSource)> = (0_i64..).zip(new.images).collect();
        let images = insert_images((&mut *tx).into(), id, &sources, now).await?;
        let record = ListingRecord {
            id,
            brand_id: new.brand_id,
            user_id: new.user_id,
            seller_name: new.seller_name.to_owned(),
            fields: ListingFields { brand, ..f.clone() },
            view_count: 0,
            version: 1,
            created_at: now,
            updated_at: now,
            images,
        };
        Ok(SavedListing { record, brand_created })
    })
}

/// Writes an edit inside the caller's transaction, with `updated_at` = `now` until the
/// caller stamps it; `None` when the listing changed (or went, or changed hands) since it
/// was read.
async fn update_in(conn: Conn<'_>, edit: ListingEdit<'_>, now: Ts) -> Result<Option<SavedListing>, StoreError> {
    let ListingEdit { existing, fields: f, images } = edit;
    on_conn!(conn, |tx| {
        let (brand, brand_created) = match &f.brand {
            Some(name) => resolve_brand((&mut *tx).into(), existing.brand_id, name, now).await?,
            None => (None, false),
        };
        let done = bind_listing_fields!(sqlx::query(&UPDATE_LISTING), f, &brand)
            .bind(now)
            .bind(existing.id)
            .bind(existing.brand_id)
            .bind(existing.user_id)
            .bind(existing.version)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let images = match images {
            Some(slots) => replace_images((&mut *tx).into(), existing, slots, now).await?,
            None => existing.images.clone(),
        };
        let record = ListingRecord {
            fields: ListingFields { brand, ..f.clone() },
            version: existing.version + 1,
            updated_at: now,
            images,
            ..existing.clone()
        };
        Ok(Some(SavedListing { record, brand_created }))
    })
}

/// The catalogue spelling of a manufacturer brand: a case-insensitive match among the
/// built-in names and the partner's own, else the name as given, added to the partner's
/// list. Two transactions (or nodes) adding the same name at once both succeed with one
/// row: the insert yields to the unique index, and the name is then read back.
async fn resolve_brand(
    conn: Conn<'_>,
    brand_id: i64,
    name: &str,
    now: Ts,
) -> Result<(Option<String>, bool), StoreError> {
    // `Other` is every brand's catch-all, not a manufacturer of the list.
    if name.eq_ignore_ascii_case(OTHER_BRAND) {
        return Ok((Some(OTHER_BRAND.to_owned()), false));
    }
    let key = name.to_lowercase();
    // `COALESCE(brand_id, 0)` matches the unique index on (COALESCE(brand_id, 0), name_key).
    const FIND: &str = "SELECT name FROM manufacturer_brands WHERE COALESCE(brand_id, 0) IN (0, $1) AND name_key = $2
         ORDER BY brand_id IS NULL DESC LIMIT 1";
    on_conn!(conn, |tx| {
        let found: Option<String> = sqlx::query_scalar(FIND).bind(brand_id).bind(&key).fetch_optional(&mut *tx).await?;
        if let Some(found) = found {
            return Ok((Some(found), false));
        }
        let added = sqlx::query(
            "INSERT INTO manufacturer_brands (brand_id, name, name_key, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
        )
        .bind(brand_id)
        .bind(name)
        .bind(&key)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if added == 1 {
            return Ok((Some(name.to_owned()), true));
        }
        let found: Option<String> = sqlx::query_scalar(FIND).bind(brand_id).bind(&key).fetch_optional(&mut *tx).await?;
        Ok((Some(found.unwrap_or_else(|| name.to_owned())), false))
    })
}

/// Replaces `existing`'s images by `slots`, in order. A kept image keeps its row (its
/// import's state, attempts and lease), only moved: kept rows go to negative positions
/// first (`-1 - new`), the others are deleted, the new ones inserted, and the kept ones
/// flipped back, so that no statement ever meets `UNIQUE (listing_id, position)` twice.
async fn replace_images(
    conn: Conn<'_>,
    existing: &ListingRecord,
    slots: &[ImageSlot],
    now: Ts,
) -> Result<Vec<ListingImage>, StoreError> {
    let mut kept: Vec<(i64, &ListingImage)> = Vec::new();
    let mut new: Vec<(i64, &ImageSource)> = Vec::new();
    for (position, slot) in (0_i64..).zip(slots) {
        match slot {
            ImageSlot::Kept(image) => kept.push((position, image)),
            ImageSlot::New(source) => new.push((position, source)),
        }
    }
    on_conn!(conn, |tx| {
        for &(position, image) in &kept {
            sqlx::query(
                "UPDATE listing_images SET position = $1, updated_at = $2 WHERE listing_id = $3 AND position = $4",
            )
            .bind(-1 - position)
            .bind(now)
            .bind(existing.id)
            .bind(image.position)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("DELETE FROM listing_images WHERE listing_id = $1 AND position >= 0")
            .bind(existing.id)
            .execute(&mut *tx)
            .await?;
        let inserted = insert_images((&mut *tx).into(), existing.id, &new, now).await?;
        if !kept.is_empty() {
            sqlx::query("UPDATE listing_images SET position = -1 - position WHERE listing_id = $1 AND position < 0")
                .bind(existing.id)
                .execute(&mut *tx)
                .await?;
        }
        let moved = kept.iter().map(|&(position, image)| ListingImage { position, ..image.clone() });
        let mut images: Vec<ListingImage> = moved.chain(inserted).collect();
        images.sort_by_key(|i| i.position);
        Ok(images)
    })
}

/// Records a listing's images at their positions: uploaded photos are ready at once (their
/// brand was checked by the caller); imports wait for the import worker.
async fn insert_images(
    conn: Conn<'_>,
    listing_id: i64,
    sources: &[(i64, &ImageSource)],
    now: Ts,
) -> Result<Vec<ListingImage>, StoreError> {
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = String::from(
        "INSERT INTO listing_images (listing_id, position, source_url, attachment_id, status, created_at, updated_at)
         VALUES ",
    );
    for i in 0..sources.len() {
        let n = 3 + i * 4;
        let _ = write!(sql, "{}($1, ${n}, ${}, ${}, ${}, $2, $2)", if i == 0 { "" } else { ", " }, n + 1, n + 2, n + 3);
    }
    on_conn!(conn, |tx| {
        let mut insert = sqlx::query(&sql).bind(listing_id).bind(now);
        let mut images = Vec::with_capacity(sources.len());
        for &(position, source) in sources {
            let (source_url, attachment_id, status, url) = match source {
                ImageSource::Import(url) => (Some(url.clone()), None, ImageStatus::Pending, None),
                ImageSource::Attachment(id) => {
                    let name: Option<String> = sqlx::query_scalar("SELECT name FROM photos WHERE id = $1")
                        .bind(*id)
                        .fetch_optional(&mut *tx)
                        .await?;
                    (None, Some(*id), ImageStatus::Done, name.map(|n| format!("/media/{n}")))
                }
            };
            insert = insert.bind(position).bind(source_url.clone()).bind(attachment_id).bind(status.as_str());
            images.push(ListingImage { position, source_url, attachment_id, status, url, error: None });
        }
        insert.execute(&mut *tx).await?;
        Ok(images)
    })
}

fn json_text<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Database(sqlx::Error::Encode(Box::new(e))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(sql: &str) -> String {
        sql.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The statements made from the column list are the ones once numbered by hand.
    #[test]
    fn the_listing_statements_number_their_placeholders_from_the_column_list() {
        assert_eq!(
            words(&INSERT_LISTING),
            words(
                "INSERT INTO listings (brand_id, user_id, status, channel, title, description, category, condition,
                 regular_price_pence, sale_price_pence, rrp_pence, delivery_contribution_gbp, manufacturer_brand,
                 colour, fabric, age_years, available_from, quantity, measurements, exposed_to, faults, sku,
                 warehouse_location, warehouse_id, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                 $21, $22, $23, $24, $25, $25) RETURNING id"
            )
        );
        assert_eq!(
            words(&UPDATE_LISTING),
            words(
                "UPDATE listings SET status = $1, channel = $2, title = $3, description = $4, category = $5,
                 condition = $6, regular_price_pence = $7, sale_price_pence = $8, rrp_pence = $9,
                 delivery_contribution_gbp = $10, manufacturer_brand = $11, colour = $12, fabric = $13,
                 age_years = $14, available_from = $15, quantity = $16, measurements = $17, exposed_to = $18,
                 faults = $19, sku = $20, warehouse_location = $21, warehouse_id = $22, updated_at = $23,
                 version = version + 1
                 WHERE id = $24 AND brand_id = $25 AND user_id = $26 AND version = $27 AND deleted_at IS NULL"
            )
        );
    }
}
