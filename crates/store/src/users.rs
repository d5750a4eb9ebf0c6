//! Partner users: created by the CLI or invited by an admin, listed as the brand's team.

use sqlx::FromRow;

use super::{enqueue_mail, now, on_conn, on_pool, record_audit, Conn, NewMail, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;
use rehome_domain::user::Role;
use rehome_domain::view::MemberRecord;

#[derive(Debug, Clone, FromRow)]
pub struct UserRecord {
    pub id: i64,
    pub brand_id: i64,
    pub name: String,
    pub email: String,
    pub role: String,
}

/// What creating a user did.
#[derive(Debug, Clone)]
pub enum UserInsert {
    Created(UserRecord),
    /// A live user (of any brand) already has this email.
    EmailTaken,
}

/// The columns of a [`MemberRecord`], for `SELECT … FROM users`.
pub(super) const MEMBER_COLUMNS: &str = "id, brand_id, name, email, role, status, \
    (totp_secret IS NOT NULL) AS totp_enrolled, created_at, last_login_at";

/// Someone to invite: the user (status `invited`), the invitation and, when mail is on, the
/// message that carries its link.
pub struct NewMember<'a> {
    pub brand_id: i64,
    pub name: &'a str,
    /// Normalised (trimmed, lower-case).
    pub email: &'a str,
    pub role: Role,
    pub token_hash: &'a [u8; 32],
    pub expires_at: Ts,
    pub mail: Option<NewMail<'a>>,
}

/// What an invitation did.
#[derive(Debug, Clone)]
pub enum MemberInsert {
    Invited(MemberRecord),
    /// A live user (of any brand) already has this email.
    EmailTaken,
}

impl Store {
    pub async fn create_user(
        &self,
        brand_id: i64,
        name: &str,
        email: &str,
        role: Role,
    ) -> Result<UserInsert, StoreError> {
        on_pool!(self, write, |pool| {
            let inserted = sqlx::query_as(
                "INSERT INTO users (brand_id, name, email, role, created_at) VALUES ($1, $2, $3, $4, $5)
                 RETURNING id, brand_id, name, email, role",
            )
            .bind(brand_id)
            .bind(name)
            .bind(email)
            .bind(role.as_str())
            .bind(now())
            .fetch_one(pool)
            .await;
            match inserted {
                Ok(user) => Ok(UserInsert::Created(user)),
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(UserInsert::EmailTaken),
                Err(e) => Err(e.into()),
            }
        })
    }

    pub async fn user_by_id(&self, id: i64) -> Result<Option<UserRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as("SELECT id, brand_id, name, email, role FROM users WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?)
        })
    }

    pub async fn user_by_email(&self, brand_id: i64, email: &str) -> Result<Option<UserRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as("SELECT id, brand_id, name, email, role FROM users WHERE brand_id = $1 AND email = $2")
                .bind(brand_id)
                .bind(email)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// Any user by id, removed ones included (the CLI's view).
    pub async fn member_by_id(&self, id: i64) -> Result<Option<MemberRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!("SELECT {MEMBER_COLUMNS} FROM users WHERE id = $1"))
                .bind(id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// The brand's users in order of creation; removed ones only when `with_removed`.
    pub async fn members(&self, brand_id: i64, with_removed: bool) -> Result<Vec<MemberRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!(
                "SELECT {MEMBER_COLUMNS} FROM users WHERE brand_id = $1 AND ($2 OR status <> 'removed') ORDER BY id"
            ))
            .bind(brand_id)
            .bind(with_removed)
            .fetch_all(pool)
            .await?)
        })
    }

    /// A member of the brand (invited or active); `None` for an unknown, removed or other
    /// brand's user.
    pub async fn member(&self, brand_id: i64, user_id: i64) -> Result<Option<MemberRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&format!(
                "SELECT {MEMBER_COLUMNS} FROM users WHERE id = $1 AND brand_id = $2 AND status <> 'removed'"
            ))
            .bind(user_id)
            .bind(brand_id)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Creates an invited user with their invitation, the audit entry `entry(user id)` and
    /// the mail, in one transaction. A former member of the brand with this very email
    /// (removed) stays as they were: the invitation is a new person, with a new id.
    pub async fn invite_member(
        &self,
        new: &NewMember<'_>,
        entry: impl FnOnce(i64) -> AuditEntry,
    ) -> Result<MemberInsert, StoreError> {
        let at = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query_scalar(
                "INSERT INTO users (brand_id, name, email, role, status, created_at)
                 VALUES ($1, $2, $3, $4, 'invited', $5) RETURNING id",
            )
            .bind(new.brand_id)
            .bind(new.name)
            .bind(new.email)
            .bind(new.role.as_str())
            .bind(at)
            .fetch_one(&mut *tx)
            .await;
            let id: i64 = match inserted {
                Ok(id) => id,
                // The transaction is spoilt (on PostgreSQL): dropping it rolls back.
                Err(e) if is_unique_violation(&e) => return Ok(MemberInsert::EmailTaken),
                Err(e) => return Err(e.into()),
            };
            insert_invitation((&mut *tx).into(), id, new.token_hash, at, new.expires_at).await?;
            record_audit((&mut *tx).into(), &entry(id)).await?;
            if let Some(mail) = &new.mail {
                enqueue_mail((&mut *tx).into(), self.sealer()?, mail).await?;
            }
            let member = sqlx::query_as(&format!("SELECT {MEMBER_COLUMNS} FROM users WHERE id = $1"))
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(MemberInsert::Invited(member))
        })
    }
}

/// True when `e` is a unique violation: here, the email is taken.
fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Records an invitation on `conn`, the caller's transaction. Earlier unused invitations of
/// the user stop working: only the newest link is valid.
pub async fn insert_invitation(
    conn: Conn<'_>,
    user_id: i64,
    token_hash: &[u8; 32],
    created_at: Ts,
    expires_at: Ts,
) -> Result<(), StoreError> {
    on_conn!(conn, |c| {
        sqlx::query("UPDATE invitations SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL")
            .bind(created_at)
            .bind(user_id)
            .execute(&mut *c)
            .await?;
        sqlx::query("INSERT INTO invitations (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(&token_hash[..])
            .bind(user_id)
            .bind(created_at)
            .bind(expires_at)
            .execute(&mut *c)
            .await?;
        Ok(())
    })
}
