//! Listings and their images. Every query is scoped to one brand in its `WHERE` clause and
//! skips trashed rows, so a brand can never read or change another brand's listing; changes
//! are further scoped to the seller.

mod clock;
mod rows;

use std::fmt::Write;

use super::{now, on_conn, on_pool, Conn, Dialect, Store, StoreError, Ts};
use crate::domain::listing::{Channel, ImageStatus, ListingFields, ListingStatus, SyncPosition};
use crate::domain::money::Pence;
pub(crate) use clock::{stamp as stamp_listing_change, tick as tick_listing_clock};
use rows::{DetailRow, SummaryRow};

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

/// Where a listing image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// A URL the service fetches in the background (decisions 3.10).
    Import(String),
    /// A photo uploaded with `upload-photo`.
    Attachment(i64),
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

/// The filters of a list page; `None` means any.
#[derive(Debug, Clone, Default)]
pub struct ListingFilter {
    pub status: Option<ListingStatus>,
    pub channel: Option<Channel>,
    /// Exactly this SKU.
    pub sku: Option<String>,
    /// Each word must appear in the title or the SKU, whatever the case.
    pub words: Vec<String>,
}

/// One page of a sync walk (decisions 11.2), in (`updated_at`, `id`) order.
#[derive(Debug, Clone)]
pub struct SyncPage {
    pub listings: Vec<ListingSummaryRecord>,
    /// More listings follow the last one of this page.
    pub has_more: bool,
}

/// One page of listings and how many match the filter in all.
#[derive(Debug, Clone)]
pub struct ListingPage {
    pub listings: Vec<ListingSummaryRecord>,
    pub total: i64,
}

/// A listing to create.
#[derive(Debug, Clone, Copy)]
pub struct NewListing<'a> {
    pub brand_id: i64,
    pub user_id: i64,
    pub seller_name: &'a str,
    pub fields: &'a ListingFields,
    pub images: &'a [ImageSource],
}

/// A saved listing, and whether saving it added a manufacturer brand to the partner's list.
#[derive(Debug, Clone)]
pub struct SavedListing {
    pub record: ListingRecord,
    pub brand_created: bool,
}

/// The outcome of an update.
#[derive(Debug, Clone)]
pub enum ListingUpdate {
    Saved(Box<SavedListing>),
    /// The listing changed (or went) since it was read: read it again and retry.
    Stale,
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

const DETAIL_COLUMNS: &str = "l.id, l.brand_id, l.user_id, u.name AS seller_name, l.status, l.channel, l.title,
    l.description, l.category, l.condition, l.regular_price_pence, l.sale_price_pence, l.rrp_pence,
    l.delivery_contribution_gbp, l.manufacturer_brand, l.colour, l.fabric, l.age_years, l.available_from,
    l.quantity, l.measurements, l.exposed_to, l.faults, l.sku, l.warehouse_location, l.warehouse_id,
    l.view_count, l.version, l.created_at, l.updated_at";

/// The listing's images as one JSON array column, in order, in each backend's dialect.
/// A ready image's `url` is the one recorded, else its photo's path under the service
/// (`/media/<name>`, made absolute when rendered).
const IMAGES_JSON: Dialect = Dialect {
    sqlite: "(SELECT json_group_array(json_object('position', i.position, 'source_url', i.source_url,
        'attachment_id', i.attachment_id, 'status', i.status,
        'url', CASE WHEN i.status = 'done' THEN COALESCE(i.url, '/media/' || p.name) END, 'error', i.error)
        ORDER BY i.position)
     FROM listing_images i LEFT JOIN photos p ON p.id = i.attachment_id WHERE i.listing_id = l.id) AS images_json",
    postgres: "(SELECT COALESCE(json_agg(json_build_object('position', i.position, 'source_url', i.source_url,
        'attachment_id', i.attachment_id, 'status', i.status,
        'url', CASE WHEN i.status = 'done' THEN COALESCE(i.url, '/media/' || p.name) END, 'error', i.error)
        ORDER BY i.position), '[]')::text
     FROM listing_images i LEFT JOIN photos p ON p.id = i.attachment_id WHERE i.listing_id = l.id) AS images_json",
};

/// The columns of a summary, selected by the page subquery `p`...
const SUMMARY_COLUMNS: &str = "l.id, l.title, l.status, l.channel, l.category, l.regular_price_pence,
    l.sale_price_pence, l.delivery_contribution_gbp, l.view_count, l.created_at, l.updated_at, l.deleted_at,
    (SELECT COALESCE(i.url, '/media/' || p.name) FROM listing_images i LEFT JOIN photos p ON p.id = i.attachment_id
     WHERE i.listing_id = l.id AND i.status = 'done' ORDER BY i.position LIMIT 1) AS cover_url";

/// ...and folded into one JSON array of positional arrays, in list order (see
/// [`SummaryRow`]). The arrays are built here, outside the subquery, because SQLite forgets
/// that a value is JSON when it passes through a subquery column.
const PAGE_JSON: Dialect = Dialect {
    sqlite: "json_group_array(json_array(p.id, p.title, p.status, p.channel, p.category, p.regular_price_pence,
        p.sale_price_pence, p.delivery_contribution_gbp, p.view_count, p.created_at, p.updated_at, p.deleted_at,
        p.cover_url) ORDER BY {order})",
    postgres: "COALESCE(json_agg(json_build_array(p.id, p.title, p.status, p.channel, p.category,
        p.regular_price_pence, p.sale_price_pence, p.delivery_contribution_gbp, p.view_count, p.created_at,
        p.updated_at, p.deleted_at, p.cover_url) ORDER BY {order}), '[]')::text",
};

/// List pages: newest first.
const NEWEST_FIRST: &str = "p.created_at DESC, p.id DESC";
/// Sync pages: in the order of the walk.
const WALK_ORDER: &str = "p.updated_at, p.id";

/// Binds a listing's stored fields, in the column order both the insert and the update
/// name them (`status` through `warehouse_id`). A macro, not a function, so it serves every
/// query type and backend.
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
    /// A brand's listing, unless trashed: one statement, its images included.
    pub async fn listing(&self, brand_id: i64, id: i64) -> Result<Option<ListingRecord>, StoreError> {
        let images_json = IMAGES_JSON.of(self);
        on_pool!(self, read, |pool| {
            let sql = format!(
                "SELECT {DETAIL_COLUMNS}, {images_json} FROM listings l JOIN users u ON u.id = l.user_id
                 WHERE l.id = $1 AND l.brand_id = $2 AND l.deleted_at IS NULL"
            );
            let Some(row) = sqlx::query_as::<_, DetailRow>(&sql).bind(id).bind(brand_id).fetch_optional(pool).await?
            else {
                return Ok(None);
            };
            let images: Vec<ListingImage> = rows::parse_json(&row.images_json, "image list")?;
            Ok(Some(row.listing.into_record(images)?))
        })
    }

    /// A page of a brand's listings, newest first, and the number matching in all: one
    /// statement whatever the page size, served by the partial indexes of migration 0003.
    pub async fn list_listings(
        &self,
        brand_id: i64,
        filter: ListingFilter,
        limit: i64,
        offset: i64,
    ) -> Result<ListingPage, StoreError> {
        let filtered = FilterSql::new(&filter, 2);
        let (predicate, next) = (&filtered.predicate, filtered.next);
        // One statement and one row whatever the page size: the count, and the page as a
        // JSON array in list order. Rows cross from the database thread one by one, so
        // folding the page into one value is what keeps a 100-row page cheap.
        let page_json = PAGE_JSON.of(self).replace("{order}", NEWEST_FIRST);
        let sql = format!(
            "SELECT (SELECT COUNT(*) FROM listings l WHERE l.brand_id = $1 AND l.deleted_at IS NULL{predicate}) AS total,
                    (SELECT {page_json} FROM
                       (SELECT {SUMMARY_COLUMNS} FROM listings l WHERE l.brand_id = $1 AND l.deleted_at IS NULL{predicate}
                        ORDER BY l.created_at DESC, l.id DESC LIMIT ${next} OFFSET ${}) p) AS page",
            next + 1
        );
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_as::<_, (i64, String)>(&sql).bind(brand_id);
            for value in &filtered.values {
                query = query.bind(value.as_str());
            }
            let (total, page) = query.bind(limit).bind(offset).fetch_one(pool).await?;
            Ok(ListingPage { listings: summaries(&page)?, total })
        })
    }

    /// Up to `limit` of a brand's listings after `after` in (`updated_at`, `id`) order,
    /// trashed ones included (decisions 11.2): one statement, served by the `listings_sync`
    /// index of migration 0015. No count: a walk needs only to know whether more follow.
    pub async fn sync_listings(
        &self,
        brand_id: i64,
        filter: ListingFilter,
        after: SyncPosition,
        limit: i64,
    ) -> Result<SyncPage, StoreError> {
        let after_at = Ts::from_micros(after.updated_micros).ok_or_else(|| {
            StoreError::Database(sqlx::Error::Protocol("a sync position outside the calendar".into()))
        })?;
        let filtered = FilterSql::new(&filter, 4);
        let (predicate, next) = (&filtered.predicate, filtered.next);
        let page_json = PAGE_JSON.of(self).replace("{order}", WALK_ORDER);
        let sql = format!(
            "SELECT {page_json} FROM
               (SELECT {SUMMARY_COLUMNS} FROM listings l WHERE l.brand_id = $1 AND (l.updated_at, l.id) > ($2, $3){predicate}
                ORDER BY l.updated_at, l.id LIMIT ${next}) p"
        );
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_scalar::<_, String>(&sql).bind(brand_id).bind(after_at).bind(after.id);
            for value in &filtered.values {
                query = query.bind(value.as_str());
            }
            // One more than asked: whether it exists says if more follow.
            let page = query.bind(limit + 1).fetch_one(pool).await?;
            let mut listings = summaries(&page)?;
            let has_more = listings.len() as i64 > limit;
            listings.truncate(usize::try_from(limit).unwrap_or(0));
            Ok(SyncPage { listings, has_more })
        })
    }

    /// Creates listings (and their manufacturer brands on first use) in one transaction: one
    /// listing for a create, a bulk import's valid rows all together (or, should the
    /// database fail, none).
    pub async fn create_listings(&self, new: &[NewListing<'_>]) -> Result<Vec<SavedListing>, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let mut saved = Vec::with_capacity(new.len());
            for listing in new {
                saved.push(insert_listing((&mut *tx).into(), *listing, now).await?);
            }
            let mut brands: Vec<i64> = new.iter().map(|l| l.brand_id).collect();
            brands.sort_unstable();
            brands.dedup();
            for brand_id in brands {
                let ids: Vec<i64> =
                    saved.iter().filter(|s| s.record.brand_id == brand_id).map(|s| s.record.id).collect();
                let at = clock::stamp((&mut *tx).into(), brand_id, now, &ids).await?;
                for s in saved.iter_mut().filter(|s| s.record.brand_id == brand_id) {
                    s.record.updated_at = at;
                }
            }
            tx.commit().await?;
            Ok(saved)
        })
    }

    /// Creates one listing (and its manufacturer brand on first use) in one transaction.
    pub async fn create_listing(&self, new: NewListing<'_>) -> Result<SavedListing, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let mut saved = insert_listing((&mut *tx).into(), new, now).await?;
            saved.record.updated_at = clock::stamp((&mut *tx).into(), new.brand_id, now, &[saved.record.id]).await?;
            tx.commit().await?;
            Ok(saved)
        })
    }

    /// Writes `fields` over `existing` if it is unchanged since it was read (same version)
    /// and still the seller's; `images`, when given, replace the listing's images.
    pub async fn update_listing(
        &self,
        existing: &ListingRecord,
        fields: &ListingFields,
        images: Option<&[ImageSource]>,
    ) -> Result<ListingUpdate, StoreError> {
        let now = now();
        let f = fields;
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let (brand, brand_created) = match &f.brand {
                Some(name) => resolve_brand((&mut *tx).into(), existing.brand_id, name, now).await?,
                None => (None, false),
            };
            let done = bind_listing_fields!(
                sqlx::query(
                    "UPDATE listings SET status = $1, channel = $2, title = $3, description = $4, category = $5,
                     condition = $6, regular_price_pence = $7, sale_price_pence = $8, rrp_pence = $9,
                     delivery_contribution_gbp = $10, manufacturer_brand = $11, colour = $12, fabric = $13,
                     age_years = $14, available_from = $15, quantity = $16, measurements = $17, exposed_to = $18,
                     faults = $19, sku = $20, warehouse_location = $21, warehouse_id = $22, updated_at = $23,
                     version = version + 1
                 WHERE id = $24 AND brand_id = $25 AND user_id = $26 AND version = $27 AND deleted_at IS NULL"
                ),
                f,
                &brand
            )
            .bind(now)
            .bind(existing.id)
            .bind(existing.brand_id)
            .bind(existing.user_id)
            .bind(existing.version)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Ok(ListingUpdate::Stale);
            }
            let images = match images {
                Some(sources) => {
                    sqlx::query("DELETE FROM listing_images WHERE listing_id = $1")
                        .bind(existing.id)
                        .execute(&mut *tx)
                        .await?;
                    insert_images((&mut *tx).into(), existing.id, sources, now).await?
                }
                None => existing.images.clone(),
            };
            let at = clock::stamp((&mut *tx).into(), existing.brand_id, now, &[existing.id]).await?;
            tx.commit().await?;
            let record = ListingRecord {
                fields: ListingFields { brand, ..f.clone() },
                version: existing.version + 1,
                updated_at: at,
                images,
                ..existing.clone()
            };
            Ok(ListingUpdate::Saved(Box::new(SavedListing { record, brand_created })))
        })
    }

    /// Trashes each listing of `ids` that is the brand's and the user's, and says per
    /// distinct id what happened, in the order given. Two statements whatever the count.
    pub async fn delete_listings(
        &self,
        brand_id: i64,
        user_id: i64,
        ids: &[i64],
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
            |first: usize| (first..first + distinct.len()).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ");
        let select_sql = format!(
            "SELECT id, user_id FROM listings WHERE brand_id = $1 AND deleted_at IS NULL AND id IN ({})",
            list(2)
        );
        let delete_sql = format!(
            "UPDATE listings SET deleted_at = $1, updated_at = $1, version = version + 1
             WHERE brand_id = $2 AND user_id = $3 AND deleted_at IS NULL AND id IN ({})",
            list(4)
        );
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let mut select = sqlx::query_as::<_, (i64, i64)>(&select_sql).bind(brand_id);
            let mut delete = sqlx::query(&delete_sql).bind(now).bind(brand_id).bind(user_id);
            for id in &distinct {
                select = select.bind(*id);
                delete = delete.bind(*id);
            }
            let owners = select.fetch_all(&mut *tx).await?;
            delete.execute(&mut *tx).await?;
            clock::stamp((&mut *tx).into(), brand_id, now, &distinct).await?;
            tx.commit().await?;
            Ok(distinct
                .iter()
                .map(|id| {
                    let removal = match owners.iter().find(|(found, _)| found == id) {
                        None => Removal::NotFound,
                        Some((_, owner)) if *owner != user_id => Removal::NotOwner,
                        Some(_) => Removal::Deleted,
                    };
                    (*id, removal)
                })
                .collect())
        })
    }
}

/// Inserts one listing with its images and, on first use, its manufacturer brand.
async fn insert_listing(conn: Conn<'_>, new: NewListing<'_>, now: Ts) -> Result<SavedListing, StoreError> {
    let f = new.fields;
    on_conn!(conn, |tx| {
        let (brand, brand_created) = match &f.brand {
            Some(name) => resolve_brand((&mut *tx).into(), new.brand_id, name, now).await?,
            None => (None, false),
        };
        let id: i64 = bind_listing_fields!(
            sqlx::query_scalar(
                "INSERT INTO listings (brand_id, user_id, status, channel, title, description, category, condition,
                 regular_price_pence, sale_price_pence, rrp_pence, delivery_contribution_gbp, manufacturer_brand,
                 colour, fabric, age_years, available_from, quantity, measurements, exposed_to, faults, sku,
                 warehouse_location, warehouse_id, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                 $21, $22, $23, $24, $25, $25)
             RETURNING id"
            )
            .bind(new.brand_id)
            .bind(new.user_id),
            f,
            &brand
        )
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        let images = insert_images((&mut *tx).into(), id, new.images, now).await?;
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

/// Records a listing's images in order: uploaded photos are ready at once (their brand was
/// checked by the caller); imports wait for the import worker.
async fn insert_images(
    conn: Conn<'_>,
    listing_id: i64,
    sources: &[ImageSource],
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
        for (position, source) in (0_i64..).zip(sources) {
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

/// `text` as a LIKE pattern matching itself literally (escape character `\`).
/// A list filter as SQL: ` AND …` conditions on `l` numbering their parameters from
/// `first`, and the values to bind to them in order.
struct FilterSql {
    predicate: String,
    values: Vec<String>,
    /// The number of the first parameter after the filter's.
    next: usize,
}

impl FilterSql {
    fn new(filter: &ListingFilter, first: usize) -> Self {
        let mut predicate = String::new();
        let mut values = Vec::new();
        let mut next = first;
        let exact = [
            ("l.status", filter.status.map(|s| s.as_str().to_owned())),
            ("l.channel", filter.channel.map(|c| c.as_str().to_owned())),
            ("l.sku", filter.sku.clone()),
        ];
        for (column, value) in exact {
            if let Some(value) = value {
                let _ = write!(predicate, " AND {column} = ${next}");
                values.push(value);
                next += 1;
            }
        }
        for word in &filter.words {
            let _ = write!(
                predicate,
                " AND (lower(l.title) LIKE lower(${next}) ESCAPE '\\' OR lower(COALESCE(l.sku, '')) LIKE lower(${next}) ESCAPE '\\')"
            );
            values.push(format!("%{}%", escape_like(word)));
            next += 1;
        }
        Self { predicate, values, next }
    }
}

/// A page folded into one JSON array by `PAGE_JSON`, as records.
fn summaries(page: &str) -> Result<Vec<ListingSummaryRecord>, StoreError> {
    let rows: Vec<SummaryRow> = rows::parse_json(page, "listing page")?;
    rows.into_iter().map(SummaryRow::into_record).collect()
}

fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
