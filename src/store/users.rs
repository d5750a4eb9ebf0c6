//! Partner users.

use sqlx::FromRow;

use super::{now, on_pool, Store, StoreError};
use crate::domain::user::Role;

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
    /// The brand already has a user with this email.
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
}
