//! Bulk import drafts (issue 31 item 4): a file uploaded on the dashboard, kept for review
//! until it is imported (at most once), discarded or expires. A brand's live drafts are
//! capped, the cap counted under the brand's lock (PostgreSQL: its `brands` row; SQLite
//! has one writer), so a burst of uploads cannot pass it; committing claims the draft in
//! the same transaction as the listings it saves, so two concurrent commits save once.

use super::listings::save_import_in;
use super::{on_pool, Store, StoreError, Ts, BRAND_LOCK};
use crate::{ListingEdit, ListingUpdate, NewListing};
use rehome_domain::view::BulkDraftRecord;
use rehome_domain::view::SavedListing;

const DRAFT_COLUMNS: &str = "d.id, d.brand_id, d.user_id, u.name AS uploader, d.filename, d.mode, d.row_count, \
                             d.created_at, d.expires_at, d.committed_at, d.result";

/// A draft to keep.
#[derive(Debug, Clone, Copy)]
pub struct NewBulkDraft<'a> {
    pub brand_id: i64,
    pub user_id: i64,
    pub filename: &'a str,
    pub mode: &'a str,
    pub file: &'a [u8],
    pub row_count: i64,
    pub created_at: Ts,
    pub expires_at: Ts,
    /// A draft of the brand, not yet imported, that this upload replaces (a corrected file).
    pub replaces: Option<i64>,
}

/// What keeping a draft did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftInsert {
    Kept(i64),
    /// The brand already has `cap` live drafts: nothing was kept.
    Full,
}

impl Store {
    /// Keeps a draft unless the brand has `cap` live ones (not imported, not expired);
    /// first deletes the brand's expired drafts and the one it replaces.
    pub async fn insert_bulk_draft(&self, new: NewBulkDraft<'_>, cap: i64) -> Result<DraftInsert, StoreError> {
        let lock = BRAND_LOCK.of(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(lock).bind(new.brand_id).execute(&mut *tx).await?;
            sqlx::query("DELETE FROM bulk_drafts WHERE brand_id = $1 AND expires_at <= $2")
                .bind(new.brand_id)
                .bind(new.created_at)
                .execute(&mut *tx)
                .await?;
            if let Some(replaced) = new.replaces {
                sqlx::query("DELETE FROM bulk_drafts WHERE id = $1 AND brand_id = $2 AND committed_at IS NULL")
                    .bind(replaced)
                    .bind(new.brand_id)
                    .execute(&mut *tx)
                    .await?;
            }
            let live: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM bulk_drafts WHERE brand_id = $1 AND committed_at IS NULL")
                    .bind(new.brand_id)
                    .fetch_one(&mut *tx)
                    .await?;
            if live >= cap {
                return Ok(DraftInsert::Full);
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO bulk_drafts (brand_id, user_id, filename, mode, file, row_count, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(new.brand_id)
            .bind(new.user_id)
            .bind(new.filename)
            .bind(new.mode)
            .bind(new.file)
            .bind(new.row_count)
            .bind(new.created_at)
            .bind(new.expires_at)
            .fetch_one(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(DraftInsert::Kept(id))
        })
    }

    /// The brand's draft `id` (expired ones too, until they are deleted).
    pub async fn bulk_draft(&self, brand_id: i64, id: i64) -> Result<Option<BulkDraftRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!(
                "SELECT {DRAFT_COLUMNS} FROM bulk_drafts d JOIN users u ON u.id = d.user_id \
                 WHERE d.id = $1 AND d.brand_id = $2"
            ))
            .bind(id)
            .bind(brand_id)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// The file of the brand's draft `id`, while it is not imported.
    pub async fn bulk_draft_file(&self, brand_id: i64, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        on_pool!(self, read, |pool| {
            let file: Option<Option<Vec<u8>>> =
                sqlx::query_scalar("SELECT file FROM bulk_drafts WHERE id = $1 AND brand_id = $2")
                    .bind(id)
                    .bind(brand_id)
                    .fetch_optional(pool)
                    .await?;
            Ok(file.flatten())
        })
    }

    /// The brand's drafts waiting for review at `now`, newest first.
    pub async fn live_bulk_drafts(&self, brand_id: i64, now: Ts) -> Result<Vec<BulkDraftRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!(
                "SELECT {DRAFT_COLUMNS} FROM bulk_drafts d JOIN users u ON u.id = d.user_id \
                 WHERE d.brand_id = $1 AND d.committed_at IS NULL AND d.expires_at > $2 \
                 ORDER BY d.created_at DESC, d.id DESC"
            ))
            .bind(brand_id)
            .bind(now)
            .fetch_all(pool)
            .await?)
        })
    }

    /// Deletes the brand's draft `id` unless it was imported; true when one was deleted.
    pub async fn discard_bulk_draft(&self, brand_id: i64, id: i64) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query("DELETE FROM bulk_drafts WHERE id = $1 AND brand_id = $2 AND committed_at IS NULL")
                .bind(id)
                .bind(brand_id)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Imports the brand's draft `id`, once: in one transaction, claims it (not imported,
    /// not expired at `now`; its file is dropped), saves `new` and `edits` as
    /// [`Store::save_listings`] does, and records `result` of what was saved. `None` when
    /// the draft could not be claimed (imported meanwhile, expired or gone): nothing saved.
    pub async fn commit_bulk_draft<R>(
        &self,
        brand_id: i64,
        id: i64,
        audit: &rehome_domain::audit::AuditEntry,
        new: &[NewListing<'_>],
        edits: &[ListingEdit<'_>],
        result: R,
    ) -> Result<Option<(Vec<SavedListing>, Vec<ListingUpdate>)>, StoreError>
    where
        R: FnOnce(&[SavedListing], &[ListingUpdate]) -> String + Send,
    {
        let now = Ts::now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let claimed = sqlx::query(
                "UPDATE bulk_drafts SET committed_at = $3, file = NULL \
                 WHERE id = $1 AND brand_id = $2 AND committed_at IS NULL AND expires_at > $3",
            )
            .bind(id)
            .bind(brand_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            if claimed.rows_affected() != 1 {
                return Ok(None);
            }
            let saved = save_import_in((&mut *tx).into(), new, edits, now).await?;
            self.import_events((&mut *tx).into(), &saved, now, audit).await?;
            let (created, updated) = saved;
            sqlx::query("UPDATE bulk_drafts SET result = $2 WHERE id = $1")
                .bind(id)
                .bind(result(&created, &updated))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some((created, updated)))
        })
    }

    /// Deletes up to `limit` drafts expired at `now` (the retention job).
    pub async fn prune_bulk_drafts(&self, now: Ts, limit: i64) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query(
                "DELETE FROM bulk_drafts WHERE id IN \
                 (SELECT id FROM bulk_drafts WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)",
            )
            .bind(now)
            .bind(limit)
            .execute(pool)
            .await?;
            Ok(done.rows_affected())
        })
    }
}
