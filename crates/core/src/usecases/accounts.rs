//! Creating brands, users and keys: used by the CLI, by `serve --demo` and by tests.

use chrono::{DateTime, Utc};

use crate::usecases::people::passwords;
use rehome_domain::apikey::{random_base62, NewKey};
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::key_request::key_label;
use rehome_domain::team::normalise_email;
use rehome_domain::user::{valid_slug, Admin, Role, Scopes};
use rehome_domain::view::{BrandRecord, KeyRecord, MemberRecord};
use rehome_store::{BrandInsert, NewKeyRecord, Store, StoreError, UserInsert, UserRecord};

/// Why an account operation was refused; the messages are the command line's.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("'{0}' is not a valid brand slug: use 2-63 lower-case letters, digits and dashes")]
    InvalidSlug(String),
    #[error("the brand name must have 1 to 120 characters")]
    InvalidBrandName,
    #[error("a brand with slug '{0}' already exists")]
    SlugTaken(String),
    #[error("no brand with slug '{0}'")]
    NoSuchBrand(String),
    #[error("the user name must have 1 to 120 characters")]
    InvalidUserName,
    #[error("'{0}' is not a valid email address")]
    InvalidEmail(String),
    #[error("a user with email {0} already exists (an email belongs to one user across all brands)")]
    EmailTaken(String),
    #[error("no user with id {0}")]
    NoSuchUser(i64),
    #[error("--rate-limit must be at least 1")]
    InvalidRateLimit,
    #[error("the key label must have at most 100 characters, on one line")]
    InvalidLabel,
    #[error("no key with id {0}")]
    NoSuchKey(i64),
    #[error("the OS random source failed: {0}")]
    Random(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub async fn create_brand(store: &Store, slug: &str, name: &str) -> Result<BrandRecord, AccountError> {
    if !valid_slug(slug) {
        return Err(AccountError::InvalidSlug(slug.to_owned()));
    }
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 120 {
        return Err(AccountError::InvalidBrandName);
    }
    match store.create_brand(slug, name).await? {
        BrandInsert::Created(brand) => Ok(brand),
        BrandInsert::SlugTaken => Err(AccountError::SlugTaken(slug.to_owned())),
    }
}

pub async fn create_user(
    store: &Store,
    brand_slug: &str,
    name: &str,
    email: &str,
    role: Role,
) -> Result<UserRecord, AccountError> {
    let Some(brand) = store.brand_by_slug(brand_slug).await? else {
        return Err(AccountError::NoSuchBrand(brand_slug.to_owned()));
    };
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 120 {
        return Err(AccountError::InvalidUserName);
    }
    let Some(email) = normalise_email(email) else {
        return Err(AccountError::InvalidEmail(email.to_owned()));
    };
    match store.create_user(brand.id, name, &email, role).await? {
        UserInsert::Created(user) => Ok(user),
        UserInsert::EmailTaken => Err(AccountError::EmailTaken(email)),
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
) -> Result<CreatedKey, AccountError> {
    create_labelled_key(store, user_id, "", scopes, expires_at, rate_limit).await
}

/// [`create_key`] with a label (shown in the key list); `""` for none.
pub async fn create_labelled_key(
    store: &Store,
    user_id: i64,
    label: &str,
    scopes: Scopes,
    expires_at: Option<DateTime<Utc>>,
    rate_limit: Option<u32>,
) -> Result<CreatedKey, AccountError> {
    // A blank label is allowed here (an operator's key may have none).
    let label = key_label(label).map_err(|_| AccountError::InvalidLabel)?.unwrap_or_default();
    let label = label.as_str();
    let Some(user) = store.user_by_id(user_id).await? else {
        return Err(AccountError::NoSuchUser(user_id));
    };
    if rate_limit == Some(0) {
        return Err(AccountError::InvalidRateLimit);
    }
    let key = NewKey::generate().map_err(AccountError::Random)?;
    let record = NewKeyRecord { user_id, label, lookup: &key.lookup, hash: &key.hash, scopes, rate_limit, expires_at };
    let entry = |id: i64| by_operator(user.brand_id, AuditAction::KeyCreated, format!("key:{id}"));
    // The operator's keys are not held to a brand's hourly allowance.
    let created = store.create_brand_key(user.brand_id, record, entry).await?;
    Ok(CreatedKey { key_id: created.id, secret: key.secret })
}

/// Revokes a key; running servers stop accepting it within about a second. Recorded in
/// the brand's audit log as the operator's doing.
pub async fn revoke_key(store: &Store, key_id: i64) -> Result<(), AccountError> {
    let Some(brand_id) = store.key_brand(key_id).await? else {
        return Err(AccountError::NoSuchKey(key_id));
    };
    let entry = by_operator(brand_id, AuditAction::KeyRevoked, format!("key:{key_id}"));
    match store.revoke_brand_key(brand_id, key_id, entry).await? {
        Some(_) => Ok(()),
        None => Err(AccountError::NoSuchKey(key_id)),
    }
}

/// An audit entry for what the command line did.
pub fn by_operator(brand_id: i64, action: AuditAction, target: String) -> AuditEntry {
    AuditEntry { brand_id, actor: AuditActor::operator(), action, target: Some(target), ip: None }
}

/// Every user of the brand, removed ones included, in order of creation (`users list`).
pub async fn list_users(store: &Store, brand_slug: &str) -> Result<Vec<MemberRecord>, AccountError> {
    let Some(brand) = store.brand_by_slug(brand_slug).await? else {
        return Err(AccountError::NoSuchBrand(brand_slug.to_owned()));
    };
    Ok(store.members(brand.id, true).await?)
}

/// Every key of the brand's users, newest first, revoked ones included (`keys list`).
pub async fn list_keys(store: &Store, brand_slug: &str) -> Result<Vec<KeyRecord>, AccountError> {
    let Some(brand) = store.brand_by_slug(brand_slug).await? else {
        return Err(AccountError::NoSuchBrand(brand_slug.to_owned()));
    };
    Ok(store.brand_keys(brand.id).await?)
}

pub const DEMO_BRAND: &str = "demo-furniture";
const DEMO_EMAIL: &str = "admin@demo-furniture.example";

/// What `serve --demo` prints: an API key and a dashboard sign-in for the demo admin.
pub struct DemoAccess {
    pub email: &'static str,
    /// A new read/write key and a new random password (the previous password stops
    /// working), when the demo was created just now or a reset was asked for; `None` when
    /// an existing demo was reused as it was.
    pub credentials: Option<(CreatedKey, String)>,
    /// The demo admin, to seed the sample data as.
    pub admin: Admin,
}

/// The label of the key `serve --demo` makes.
const DEMO_KEY_LABEL: &str = "Demo key";

/// Seeds the demo brand and admin when missing, with a read/write key and a generated
/// dashboard password. An existing demo is reused as it is (its password, sessions and
/// keys unchanged), unless `reset`: then the admin gets a new key and a new password (which
/// ends their sessions).
pub async fn demo_access(store: &Store, reset: bool) -> Result<DemoAccess, DemoError> {
    let brand = match store.brand_by_slug(DEMO_BRAND).await? {
        Some(brand) => brand,
        None => create_brand(store, DEMO_BRAND, "Demo Furniture Co").await?,
    };
    let (user, created) = match store.user_by_email(brand.id, DEMO_EMAIL).await? {
        Some(user) => (user, false),
        None => (create_user(store, DEMO_BRAND, "Demo Admin", DEMO_EMAIL, Role::Admin).await?, true),
    };
    let credentials = if created || reset {
        let scopes = Scopes { read: true, write: true };
        let key = create_labelled_key(store, user.id, DEMO_KEY_LABEL, scopes, None, None).await?;
        let password = random_base62(20).map_err(AccountError::Random)?;
        passwords::set_password(store, user.id, &password).await?;
        Some((key, password))
    } else {
        None
    };
    let admin = Admin::operator(brand.id, DEMO_BRAND.to_owned(), user.id, user.name);
    Ok(DemoAccess { email: DEMO_EMAIL, credentials, admin })
}

/// Why the demo could not be seeded.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error(transparent)]
    Password(#[from] passwords::SetPasswordError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
