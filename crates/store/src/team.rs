//! Changes to a brand's team that must keep it with an active admin: role changes and
//! removals. Each takes the brand's lock (PostgreSQL: its `brands` row; SQLite has one
//! writer), so two concurrent demotions of the last two admins cannot both pass the count.

use super::listings::tick_listing_clock;
use super::users::MEMBER_COLUMNS;
use super::{now, on_pool, record_audit, Store, StoreError, BRAND_LOCK};
use rehome_domain::audit::AuditEntry;
use rehome_domain::user::Role;
use rehome_domain::view::MemberRecord;

/// Active admins of the brand other than one user.
const OTHER_ACTIVE_ADMINS: &str =
    "SELECT count(*) FROM users WHERE brand_id = $1 AND role = 'admin' AND status = 'active' AND id <> $2";

/// What a role change did.
#[derive(Debug, Clone)]
pub enum RoleUpdate {
    /// The member with the new role (unchanged when it already was that role).
    Done(MemberRecord),
    /// No invited or active member of the brand has this id.
    NotFound,
    /// The brand would be left without an active admin.
    LastAdmin,
}

/// A member to take off the team, and who gets their listings.
#[derive(Debug, Clone, Copy)]
pub struct MemberRemoval {
    pub brand_id: i64,
    pub user_id: i64,
    pub transfer_to: i64,
}

/// What a removal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemovalOutcome {
    Removed {
        listings_transferred: u64,
    },
    NotFound,
    /// `transfer_to` is not an active member of the brand (or is the member removed).
    TransferInvalid,
    LastAdmin,
}

impl Store {
    /// Sets a member's role; `entry` is recorded when the role changes.
    pub async fn change_role(
        &self,
        brand_id: i64,
        user_id: i64,
        role: Role,
        entry: AuditEntry,
    ) -> Result<RoleUpdate, StoreError> {
        let lock = BRAND_LOCK.of(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
            let member: Option<MemberRecord> = sqlx::query_as(&format!(
                "SELECT {MEMBER_COLUMNS} FROM users WHERE id = $1 AND brand_id = $2 AND status <> 'removed'"
            ))
            .bind(user_id)
            .bind(brand_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(member) = member else {
                return Ok(RoleUpdate::NotFound);
            };
            if member.role == role.as_str() {
                return Ok(RoleUpdate::Done(member));
            }
            if role != Role::Admin {
                let others: i64 =
                    sqlx::query_scalar(OTHER_ACTIVE_ADMINS).bind(brand_id).bind(user_id).fetch_one(&mut *tx).await?;
                if others == 0 {
                    return Ok(RoleUpdate::LastAdmin);
                }
            }
            sqlx::query("UPDATE users SET role = $1 WHERE id = $2")
                .bind(role.as_str())
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            record_audit((&mut *tx).into(), &entry).await?;
            tx.commit().await?;
            Ok(RoleUpdate::Done(MemberRecord { role: role.as_str().to_owned(), ..member }))
        })
    }

    /// Takes a member off the team in one transaction: status `removed`, their sessions
    /// ended, their keys revoked, their unused invitations spent, their listings (not
    /// deleted ones) given to `transfer_to`, and `entry` recorded.
    pub async fn remove_member(&self, removal: MemberRemoval, entry: AuditEntry) -> Result<RemovalOutcome, StoreError> {
        let MemberRemoval { brand_id, user_id, transfer_to } = removal;
        let lock = BRAND_LOCK.of(self);
        let at = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
            let role: Option<String> =
                sqlx::query_scalar("SELECT role FROM users WHERE id = $1 AND brand_id = $2 AND status <> 'removed'")
                    .bind(user_id)
                    .bind(brand_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(role) = role else {
                return Ok(RemovalOutcome::NotFound);
            };
            let heir: Option<i64> =
                sqlx::query_scalar("SELECT id FROM users WHERE id = $1 AND brand_id = $2 AND status = 'active'")
                    .bind(transfer_to)
                    .bind(brand_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if heir.is_none() || transfer_to == user_id {
                return Ok(RemovalOutcome::TransferInvalid);
            }
            if role == Role::Admin.as_str() {
                let others: i64 =
                    sqlx::query_scalar(OTHER_ACTIVE_ADMINS).bind(brand_id).bind(user_id).fetch_one(&mut *tx).await?;
                if others == 0 {
                    return Ok(RemovalOutcome::LastAdmin);
                }
            }
            sqlx::query("UPDATE users SET status = 'removed', removed_at = $1 WHERE id = $2")
                .bind(at)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE sessions SET ended_at = $1 WHERE user_id = $2 AND ended_at IS NULL")
                .bind(at)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL")
                .bind(at)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE invitations SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL")
                .bind(at)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            // A new version: a change the removed member validated a moment ago no longer applies.
            let stamp = tick_listing_clock((&mut *tx).into(), brand_id, at).await?;
            let moved = sqlx::query(
                "UPDATE listings SET user_id = $1, version = version + 1, updated_at = $2
                 WHERE brand_id = $3 AND user_id = $4 AND deleted_at IS NULL",
            )
            .bind(transfer_to)
            .bind(stamp)
            .bind(brand_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
            record_audit((&mut *tx).into(), &entry).await?;
            tx.commit().await?;
            Ok(RemovalOutcome::Removed { listings_transferred: moved.rows_affected() })
        })
    }
}
