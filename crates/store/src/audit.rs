//! The audit log: appended in the transaction of the change it records, read newest first.

use super::{on_conn, on_pool, Conn, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;
use rehome_domain::view::{AuditFilter, AuditRecord};

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
        self.audit_entries(brand_id, limit, after, &AuditFilter::default()).await
    }

    /// Up to `limit` of the brand's entries older than `after` that `filter` keeps, newest
    /// first (the brand's entries are read newest first by their index until `limit` match).
    pub async fn audit_entries(
        &self,
        brand_id: i64,
        limit: i64,
        after: Option<i64>,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let mut sql = String::from(
            "SELECT id, at, actor_type, actor_id, actor_display, action, target, ip FROM audit_log
             WHERE brand_id = $1 AND ($2 IS NULL OR id < $2)",
        );
        let mut next = 4;
        if !filter.prefixes.is_empty() {
            let likes: Vec<String> = (0..filter.prefixes.len()).map(|n| format!("action LIKE ${}", next + n)).collect();
            sql.push_str(&format!(" AND ({})", likes.join(" OR ")));
            next += filter.prefixes.len();
        }
        if filter.actor.is_some() {
            sql.push_str(&format!(" AND actor_type = ${} AND actor_id = ${}", next, next + 1));
        }
        sql.push_str(" ORDER BY id DESC LIMIT $3");
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_as(&sql).bind(brand_id).bind(after).bind(limit);
            for prefix in filter.prefixes {
                query = query.bind(format!("{prefix}%"));
            }
            if let Some((kind, id)) = filter.actor {
                query = query.bind(kind.as_str()).bind(id);
            }
            Ok(query.fetch_all(pool).await?)
        })
    }
}
