//! The API keys API (decisions 8.6): list, create (the secret shown once), roll with an
//! overlap, revoke. Every change writes its audit entry in its own transaction. Revocation
//! reaches every node within the key cache's lifetime (`REHOME_KEY_CACHE_MS`, 1 s).

use chrono::{TimeDelta, Utc};

use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use rehome_domain::apikey::NewKey;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::key_request::{KeyRequest, RollRequest};
use rehome_domain::limits::KEYS_PER_HOUR;
use rehome_domain::outcome::Outcome;
use rehome_domain::time::Ts;
use rehome_domain::user::Admin;
use rehome_domain::user::MemberStatus;
use rehome_domain::view::KeyRecord;
use rehome_domain::FieldError;
use rehome_store::{KeySecret, NewKeyRecord, RollOutcome, StoreError};

/// A new key and its secret, shown this once.
#[derive(Debug)]
pub struct IssuedKey {
    pub key: KeyRecord,
    pub secret: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateKeyError {
    /// The body's reasons; `user_id_invalid` also when the user is not an active member.
    #[error("invalid key")]
    Invalid(Vec<FieldError>),
    #[error("no randomness for a key: {0}")]
    Random(getrandom::Error),
    /// The brand created `KEYS_PER_HOUR` keys within the hour.
    #[error("too many keys created within the hour")]
    TooFrequent,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CreateKeyError> for Refusal {
    fn from(e: CreateKeyError) -> Self {
        match e {
            CreateKeyError::Invalid(reasons) => reasons.into(),
            CreateKeyError::Random(e) => Refusal::internal("no randomness", e),
            CreateKeyError::TooFrequent => Outcome::KeysTooFrequent.into(),
            CreateKeyError::Store(e) => e.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RollKeyError {
    #[error("invalid roll")]
    Invalid(Vec<FieldError>),
    #[error("no such key")]
    NotFound,
    /// Revoked or expired: nothing to roll over from.
    #[error("the key is revoked or expired")]
    Inactive,
    #[error("no randomness for a key: {0}")]
    Random(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<RollKeyError> for Refusal {
    fn from(e: RollKeyError) -> Self {
        match e {
            RollKeyError::Invalid(reasons) => reasons.into(),
            RollKeyError::NotFound => Outcome::KeyNotFound.into(),
            RollKeyError::Inactive => Outcome::KeyInactive.into(),
            RollKeyError::Random(e) => Refusal::internal("no randomness", e),
            RollKeyError::Store(e) => e.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RevokeKeyError {
    #[error("no such key")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<RevokeKeyError> for Refusal {
    fn from(e: RevokeKeyError) -> Self {
        match e {
            RevokeKeyError::NotFound => Outcome::KeyNotFound.into(),
            RevokeKeyError::Store(e) => e.into(),
        }
    }
}

/// The keys of the brand's users, newest first, revoked ones included.
pub async fn keys(core: &Core, actor: &Admin) -> Result<Vec<KeyRecord>, StoreError> {
    core.store.brand_keys(actor.brand_id).await
}

/// Creates a key for the caller's user or another active member of the brand.
pub async fn create(core: &Core, actor: &Admin, request: &KeyRequest) -> Result<IssuedKey, CreateKeyError> {
    let user_id = match request.user_id {
        None => actor.user_id,
        Some(id) => {
            let member = core.store.member(actor.brand_id, id).await?;
            if member.is_none_or(|m| m.status != MemberStatus::Active.as_str()) {
                return Err(CreateKeyError::Invalid(vec![FieldError::of("user_id", "invalid")]));
            }
            id
        }
    };
    let secret = NewKey::generate().map_err(CreateKeyError::Random)?;
    let record = NewKeyRecord {
        user_id,
        label: &request.label,
        lookup: &secret.lookup,
        hash: &secret.hash,
        scopes: request.scopes,
        rate_limit: None,
        expires_at: request.expires_at,
    };
    let entry = |id: i64| AuditEntry::by(actor, AuditAction::KeyCreated, Some(format!("key:{id}")));
    let since = Ts::from(Utc::now() - TimeDelta::hours(1));
    let key = core
        .store
        .create_brand_key_within(actor.brand_id, record, entry, (since, KEYS_PER_HOUR))
        .await?
        .ok_or(CreateKeyError::TooFrequent)?;
    Ok(IssuedKey { key, secret: secret.secret })
}

/// Replaces a live key with a new one; the old one works for `expires_in_hours` more at
/// most (its own expiry, if sooner, stays).
pub async fn roll(core: &Core, actor: &Admin, key_id: i64, request: &RollRequest) -> Result<IssuedKey, RollKeyError> {
    let secret = NewKey::generate().map_err(RollKeyError::Random)?;
    // The target is the key rolled over from; the answer names the new one.
    let entry = |old: i64, _new: i64| AuditEntry::by(actor, AuditAction::KeyRolled, Some(format!("key:{old}")));
    let outcome = core
        .store
        .roll_key(
            actor.brand_id,
            key_id,
            KeySecret { lookup: &secret.lookup, hash: &secret.hash },
            request.expires_in_hours,
            entry,
        )
        .await?;
    match outcome {
        RollOutcome::Rolled(new) => Ok(IssuedKey { key: *new, secret: secret.secret }),
        RollOutcome::NotFound => Err(RollKeyError::NotFound),
        RollOutcome::Inactive => Err(RollKeyError::Inactive),
    }
}

/// Revokes a key of the brand (again: no change, no new audit entry).
pub async fn revoke(core: &Core, actor: &Admin, key_id: i64) -> Result<KeyRecord, RevokeKeyError> {
    let entry = AuditEntry::by(actor, AuditAction::KeyRevoked, Some(format!("key:{key_id}")));
    core.store.revoke_brand_key(actor.brand_id, key_id, entry).await?.ok_or(RevokeKeyError::NotFound)
}
