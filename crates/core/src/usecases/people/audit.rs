//! Reading the brand's audit log (decisions 8.7). Entries are written by the use cases of
//! the changes they record.

use crate::usecases::Core;
use rehome_domain::user::Admin;
use rehome_domain::view::{AuditFilter, AuditRecord};
use rehome_store::StoreError;

/// One page, newest first.
#[derive(Debug)]
pub struct AuditPage {
    pub entries: Vec<AuditRecord>,
    /// Older entries follow: pass the last entry's id as `after`.
    pub has_more: bool,
}

/// Up to `limit` entries that `filter` keeps, older than the entry `after` (all when
/// `None`), newest first.
pub async fn page(
    core: &Core,
    actor: &Admin,
    limit: u32,
    after: Option<i64>,
    filter: &AuditFilter,
) -> Result<AuditPage, StoreError> {
    let mut entries = core.store.audit_entries(actor.brand_id, i64::from(limit) + 1, after, filter).await?;
    let has_more = entries.len() > limit as usize;
    entries.truncate(limit as usize);
    Ok(AuditPage { entries, has_more })
}
