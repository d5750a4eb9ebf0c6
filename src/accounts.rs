//! Creating brands, users and keys: used by the CLI, by `serve --demo` and by tests.

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};

use crate::domain::apikey::NewKey;
use crate::domain::user::{valid_slug, Role, Scopes};
use crate::store::{BrandInsert, BrandRecord, NewKeyRecord, Store, StoreError, UserInsert, UserRecord};

pub async fn create_brand(store: &Store, slug: &str, name: &str) -> anyhow::Result<BrandRecord> {
    if !valid_slug(slug) {
        bail!("'{slug}' is not a valid brand slug: use 2-63 lower-case letters, digits and dashes");
    }
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 120 {
        bail!("the brand name must have 1 to 120 characters");
    }
    match store.create_brand(slug, name).await? {
        BrandInsert::Created(brand) => Ok(brand),
        BrandInsert::SlugTaken => bail!("a brand with slug '{slug}' already exists"),
    }
}

pub async fn create_user(
    store: &Store,
    brand_slug: &str,
    name: &str,
    email: &str,
    role: Role,
) -> anyhow::Result<UserRecord> {
    let Some(brand) = store.brand_by_slug(brand_slug).await? else {
        bail!("no brand with slug '{brand_slug}'");
    };
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 120 {
        bail!("the user name must have 1 to 120 characters");
    }
    if !email_address::EmailAddress::is_valid(email) {
        bail!("'{email}' is not a valid email address");
    }
    match store.create_user(brand.id, name, email, role).await? {
        UserInsert::Created(user) => Ok(user),
        UserInsert::EmailTaken => bail!("brand '{brand_slug}' already has a user with email {email}"),
    }
}

pub struct CreatedKey {
    pub key_id: i64,
    /// Shown once; only its hash is stored.
    pub secret: String,
}

pub async fn create_key(
    store: &Store,
    user_id: i64,
    scopes: Scopes,
    expires_at: Option<DateTime<Utc>>,
    rate_limit: Option<u32>,
) -> anyhow::Result<CreatedKey> {
    if store.user_by_id(user_id).await?.is_none() {
        bail!("no user with id {user_id}");
    }
    if rate_limit == Some(0) {
        bail!("--rate-limit must be at least 1");
    }
    let key = NewKey::generate().map_err(|e| anyhow::anyhow!("the OS random source failed: {e}"))?;
    let key_id = store
        .create_key(NewKeyRecord { user_id, lookup: &key.lookup, hash: &key.hash, scopes, rate_limit, expires_at })
        .await
        .context("storing the key")?;
    Ok(CreatedKey { key_id, secret: key.secret })
}

pub async fn revoke_key(store: &Store, key_id: i64) -> anyhow::Result<()> {
    match store.revoke_key(key_id).await {
        Err(StoreError::NotFound) => bail!("no key with id {key_id}"),
        other => Ok(other?),
    }
}

pub const DEMO_BRAND: &str = "demo-furniture";
const DEMO_EMAIL: &str = "admin@demo-furniture.example";

/// Seeds the demo brand and admin when missing, and returns a new read/write key for the admin.
pub async fn demo_key(store: &Store) -> anyhow::Result<CreatedKey> {
    let brand = match store.brand_by_slug(DEMO_BRAND).await? {
        Some(brand) => brand,
        None => create_brand(store, DEMO_BRAND, "Demo Furniture Co").await?,
    };
    let user = match store.user_by_email(brand.id, DEMO_EMAIL).await? {
        Some(user) => user,
        None => create_user(store, DEMO_BRAND, "Demo Admin", DEMO_EMAIL, Role::Admin).await?,
    };
    create_key(store, user.id, Scopes { read: true, write: true }, None, None).await
}
