//! Photos and the two background queues that work on them: thumbnails (rows of `photos`)
//! and image imports (rows of `listing_images` with a `source_url`).
//!
//! Both queues work like the webhook outbox: a worker claims due rows with a lease
//! (`lease_owner`, `lease_until`), records the outcome only while it still holds the lease,
//! and a row whose worker died becomes claimable again when the lease runs out. Every
//! claim counts an attempt; a row that has used all its attempts without an outcome (a
//! worker that keeps dying on it) is marked failed instead of being claimed forever.

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use rehome_domain::listing::{ImageStatus, PhotoSource};

use super::listings::touch_listings;
use super::queue::{LeasedQueue, Outcomes};
use super::{now, on_conn, on_pool, Conn, Store, StoreError, Ts};
use rehome_domain::view::PhotoRecord;

/// How many times a thumbnail job is claimed before the photo is given up on.
pub const THUMBNAIL_ATTEMPTS: i64 = 3;

/// A photo to record (its file is already in the media store).
#[derive(Debug, Clone, Copy)]
pub struct NewPhoto<'a> {
    pub brand_id: i64,
    pub user_id: Option<i64>,
    pub source: PhotoSource,
    pub name: &'a str,
    pub mime: &'a str,
    pub filename: &'a str,
    pub byte_size: i64,
    pub width: i64,
    pub height: i64,
}

/// A photo whose thumbnails a worker now holds the lease of.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedThumbnail {
    pub id: i64,
    pub name: String,
    pub attempts: i64,
}

/// An image import a worker now holds the lease of.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedImport {
    /// The `listing_images` row.
    pub id: i64,
    pub listing_id: i64,
    pub source_url: String,
    pub attempts: i64,
}

// The states as the SQL below writes and matches them.
const DONE: &str = ImageStatus::Done.as_str();
const FAILED: &str = ImageStatus::Failed.as_str();

const PHOTO_COLUMNS: &str =
    "id, brand_id, name, mime, filename, byte_size, width, height, thumb_status, medium_name, large_name, created_at";

impl Store {
    /// Records an uploaded photo; its thumbnails are queued in the same statement.
    pub async fn insert_photo(&self, new: NewPhoto<'_>) -> Result<PhotoRecord, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut conn = pool.acquire().await?;
            let inserted = insert_photo((&mut *conn).into(), new, now).await?;
            conn.settle();
            Ok(inserted)
        })
    }

    /// One of the brand's photos.
    pub async fn photo(&self, brand_id: i64, id: i64) -> Result<Option<PhotoRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            let sql = format!("SELECT {PHOTO_COLUMNS} FROM photos WHERE id = $1 AND brand_id = $2");
            Ok(sqlx::query_as::<_, PhotoRecord>(&sql).bind(id).bind(brand_id).fetch_optional(pool).await?)
        })
    }

    /// The ids among `ids` that are photos of the brand.
    pub async fn attachments_in_brand(&self, brand_id: i64, ids: &[i64]) -> Result<Vec<i64>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = (0..ids.len()).map(|n| format!("${}", n + 2)).collect::<Vec<_>>().join(", ");
        let sql = format!("SELECT id FROM photos WHERE brand_id = $1 AND id IN ({list})");
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(brand_id);
            for id in ids {
                query = query.bind(*id);
            }
            Ok(query.fetch_all(pool).await?)
        })
    }

    /// Claims up to `limit` photos waiting for thumbnails, leased to `owner` until
    /// `lease_until`; photos that used [`THUMBNAIL_ATTEMPTS`] without an outcome are failed first.
    pub async fn claim_thumbnails(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<ClaimedThumbnail>, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let queue = (&THUMBNAIL_QUEUE, &THUMBNAIL_OUTCOMES);
            let _: Vec<(i64,)> = self.give_up_leased((&mut *tx).into(), queue, now, THUMBNAIL_ATTEMPTS, "id").await?;
            let claimed =
                self.claim_leased((&mut *tx).into(), &THUMBNAIL_QUEUE, owner, now, lease_until, limit).await?;
            tx.commit().await?;
            Ok(claimed)
        })
    }

    /// Records finished thumbnails, if `owner` still holds the lease.
    pub async fn finish_thumbnails(&self, owner: &str, id: i64, medium: &str, large: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(&format!(
                "UPDATE photos SET thumb_status = '{DONE}', medium_name = $1, large_name = $2, thumb_error = NULL,
                     lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL, updated_at = $3
                 WHERE id = $4 AND lease_owner = $5"
            ))
            .bind(medium)
            .bind(large)
            .bind(now())
            .bind(id)
            .bind(owner)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Records a failed thumbnail attempt: retried at `retry_at`, or failed for good when `None`.
    pub async fn fail_thumbnails(
        &self,
        owner: &str,
        id: i64,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        self.fail_leased((&THUMBNAIL_QUEUE, &THUMBNAIL_OUTCOMES), owner, id, error, retry_at).await
    }

    /// Claims up to `limit` due image imports of live listings; rows that used `max_attempts`
    /// without an outcome are failed first.
    pub async fn claim_image_imports(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
        max_attempts: i64,
    ) -> Result<Vec<ClaimedImport>, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let queue = (&IMPORT_QUEUE, &IMPORT_OUTCOMES);
            let returning = "(SELECT brand_id FROM listings WHERE id = listing_id), listing_id";
            let gave_up: Vec<(i64, i64)> =
                self.give_up_leased((&mut *tx).into(), queue, now, max_attempts, returning).await?;
            // Their listings' images changed: a change a sync walk must see.
            let mut brands: Vec<i64> = gave_up.iter().map(|(brand, _)| *brand).collect();
            brands.sort_unstable();
            brands.dedup();
            for brand_id in brands {
                let listings: Vec<i64> =
                    gave_up.iter().filter(|(brand, _)| *brand == brand_id).map(|(_, listing)| *listing).collect();
                self.listing_events((&mut *tx).into(), brand_id, &listings, Ts::from(now)).await?;
                touch_listings((&mut *tx).into(), brand_id, &listings, Ts::from(now)).await?;
            }
            let claimed = self.claim_leased((&mut *tx).into(), &IMPORT_QUEUE, owner, now, lease_until, limit).await?;
            tx.commit().await?;
            Ok(claimed)
        })
    }

    /// Records an imported image: a photo of the listing's brand (thumbnails queued) and the
    /// listing's image row pointing at it, in one transaction. When the row is gone or no
    /// longer leased to `owner` (the listing's images were replaced), nothing is recorded.
    pub async fn finish_image_import(
        &self,
        owner: &str,
        image_id: i64,
        listing_id: i64,
        photo: NewPhoto<'_>,
    ) -> Result<bool, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let brand_id: Option<i64> = sqlx::query_scalar(
                "SELECT l.brand_id FROM listing_images i JOIN listings l ON l.id = i.listing_id
                 WHERE i.id = $1 AND i.listing_id = $2 AND i.lease_owner = $3",
            )
            .bind(image_id)
            .bind(listing_id)
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(brand_id) = brand_id else {
                return Ok(false);
            };
            let record = insert_photo((&mut *tx).into(), NewPhoto { brand_id, ..photo }, now).await?;
            sqlx::query(&format!(
                "UPDATE listing_images SET status = '{DONE}', attachment_id = $1, error = NULL, next_attempt_at = NULL,
                     lease_owner = NULL, lease_until = NULL, updated_at = $2
                 WHERE id = $3"
            ))
            .bind(record.id)
            .bind(now)
            .bind(image_id)
            .execute(&mut *tx)
            .await?;
            // The listing shows a new image: a change a sync walk (and a listing event) must see.
            self.listing_events((&mut *tx).into(), brand_id, &[listing_id], now).await?;
            touch_listings((&mut *tx).into(), brand_id, &[listing_id], now).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Records a failed import attempt: retried at `retry_at`, or failed for good when `None`.
    pub async fn fail_image_import(
        &self,
        owner: &str,
        image_id: i64,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        if retry_at.is_some() {
            return self.fail_leased((&IMPORT_QUEUE, &IMPORT_OUTCOMES), owner, image_id, error, retry_at).await;
        }
        // Failed for good: the listing's image list shows it, a change a sync walk must see.
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let failed: Option<(i64, i64)> = sqlx::query_as(&format!(
                "UPDATE listing_images SET status = '{FAILED}', next_attempt_at = NULL, error = $1,
                     lease_owner = NULL, lease_until = NULL, updated_at = $2
                 WHERE id = $3 AND lease_owner = $4
                 RETURNING listing_id, (SELECT brand_id FROM listings WHERE id = listing_id)"
            ))
            .bind(error)
            .bind(now)
            .bind(image_id)
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((listing_id, brand_id)) = failed {
                self.listing_events((&mut *tx).into(), brand_id, &[listing_id], now).await?;
                touch_listings((&mut *tx).into(), brand_id, &[listing_id], now).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// Gives up the thumbnail and import leases of `owner` (a worker stopping).
    pub async fn release_photo_leases(&self, owner: &str) -> Result<(), StoreError> {
        for queue in [&THUMBNAIL_QUEUE, &IMPORT_QUEUE] {
            self.release_leases(queue.table, queue.lease, owner).await?;
        }
        Ok(())
    }
}

/// Photos waiting for their thumbnails.
const THUMBNAIL_QUEUE: LeasedQueue = LeasedQueue {
    table: "photos",
    from: "photos q",
    pending: "q.thumb_status = 'pending'",
    always_scheduled: false,
    lease: "lease_until",
    touched: true,
    order: "q.id",
    returning: "id, name, attempts",
};
const THUMBNAIL_OUTCOMES: Outcomes =
    Outcomes { status: "thumb_status", error: "thumb_error", gave_up: "'gave up: no attempt finished'" };

/// Image URLs of live listings waiting to be imported.
const IMPORT_QUEUE: LeasedQueue = LeasedQueue {
    table: "listing_images",
    from: "listing_images q JOIN listings l ON l.id = q.listing_id AND l.deleted_at IS NULL",
    pending: "q.status = 'pending' AND q.source_url IS NOT NULL",
    always_scheduled: false,
    lease: "lease_until",
    touched: true,
    order: "q.created_at, q.id",
    returning: "id, listing_id, source_url, attempts",
};
const IMPORT_OUTCOMES: Outcomes = Outcomes { status: "status", error: "error", gave_up: "COALESCE(error, 'gave_up')" };

async fn insert_photo(conn: Conn<'_>, new: NewPhoto<'_>, now: Ts) -> Result<PhotoRecord, StoreError> {
    let sql = format!(
        "INSERT INTO photos (brand_id, user_id, source, name, mime, filename, byte_size, width, height, created_at,
             updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
         RETURNING {PHOTO_COLUMNS}"
    );
    on_conn!(conn, |c| {
        Ok(sqlx::query_as::<_, PhotoRecord>(&sql)
            .bind(new.brand_id)
            .bind(new.user_id)
            .bind(new.source.as_str())
            .bind(new.name)
            .bind(new.mime)
            .bind(new.filename)
            .bind(new.byte_size)
            .bind(new.width)
            .bind(new.height)
            .bind(now)
            .fetch_one(&mut *c)
            .await?)
    })
}
