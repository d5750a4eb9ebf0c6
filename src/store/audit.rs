//! The audit log: appended in the transaction of the change it records, read newest first.

use sqlx::FromRow;

use super::{on_conn, on_pool, Conn, Store, StoreError, Ts};
use crate::domain::audit::AuditEntry;

/// A stored entry, as the audit log API shows it.
#[derive(Debug, Clone, FromRow)]
pub struct AuditRecord {
    pub id: i64,
    pub at: Ts,
    pub actor_type: String,
    pub actor_id: Option<i64>,
    pub actor_display: String,
    pub action: String,
    pub target: Option<String>,
    pub ip: Option<String>,
}

/// Appends `entry` on `conn`: the caller's transaction, so the entry exists exactly when
/// the change it records does.
pub async fn record_audit(conn: Conn<'_>, entry: &AuditEntry) -> Result<(), sqlx::Error> {
    on_conn!(conn, |c| {
        sqlx::query(
            "INSERT INTO audit_log (brand_id, at, actor_type, actor_id, actor_display, action, target, ip)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(entry.brand_id)
        .bind(Ts::now())
        .bind(entry.actor.kind.as_str())
        .bind(entry.actor.id)
        .bind(&entry.actor.display)
        .bind(entry.action.as_str())
        .bind(entry.target.as_deref())
        .bind(entry.ip.as_deref())
        .execute(&mut *c)
        .await?;
        Ok(())
    })
}

/// Commits `tx` with `audit` appended when the change happened (`Some`); otherwise lets it
/// roll back, as nothing changed.
pub(crate) async fn commit_audited<DB: sqlx::Database, T>(
    mut tx: super::pool::Transaction<DB>,
    changed: Option<T>,
    audit: &AuditEntry,
) -> Result<Option<T>, StoreError>
where
    for<'c> &'c mut DB::Connection: Into<Conn<'c>>,
{
    if changed.is_some() {
        record_audit((&mut *tx).into(), audit).await?;
        tx.commit().await?;
    }
    Ok(changed)
}

impl Store {
    /// Appends `entry` in a transaction of its own (for what changes nothing else, such as a
    /// failed sign-in).
    pub async fn record_audit(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            let mut conn = pool.acquire().await?;
            record_audit((&mut *conn).into(), entry).await?;
            conn.settle();
            Ok(())
        })
    }

    /// Up to `limit` entries of the brand, newest first, older than the entry `after` when given.
    pub async fn audit_page(
        &self,
        brand_id: i64,
        limit: i64,
        after: Option<i64>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT id, at, actor_type, actor_id, actor_display, action, target, ip FROM audit_log
                 WHERE brand_id = $1 AND ($2 IS NULL OR id < $2) ORDER BY id DESC LIMIT $3",
            )
            .bind(brand_id)
            .bind(after)
            .bind(limit)
            .fetch_all(pool)
            .await?)
        })
    }
}
