//! The brand profile and the billing entity (read whole, changed by partial update) and the
//! brand's time zone.

use super::Core;
use crate::usecases::refusal::Refusal;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::outcome::Outcome;
use rehome_domain::precondition::Precondition;
use rehome_domain::settings::{Billing, BillingEdit, BrandProfile, ProfileEdit, TimeZone};
use rehome_domain::user::{Actor, Admin};
use rehome_domain::FieldError;
use rehome_store::StoreError;

/// Why a settings PATCH changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("invalid settings")]
    Invalid(Vec<FieldError>),
    /// The section no longer matches the caller's condition (`If-Match`): nothing changed.
    #[error("the section changed since it was read")]
    PreconditionFailed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<PatchError> for Refusal {
    fn from(e: PatchError) -> Self {
        match e {
            PatchError::Invalid(reasons) => reasons.into(),
            PatchError::PreconditionFailed => Outcome::PreconditionFailed.into(),
            PatchError::Store(e) => e.into(),
        }
    }
}

/// The brand profile; every field empty before the first save.
pub async fn profile(core: &Core, actor: &Actor) -> Result<BrandProfile, StoreError> {
    Ok(core.store.brand_profile(actor.brand_id).await?.unwrap_or_default())
}

/// Applies a change to the brand profile and answers the whole profile, if `guard`
/// (checked in the write's transaction) accepts the profile as it stands. The first save
/// must name the display name.
pub async fn update_profile(
    core: &Core,
    actor: &Admin,
    edit: ProfileEdit,
    guard: Option<Precondition<'_, BrandProfile>>,
) -> Result<BrandProfile, PatchError> {
    let first_save = core.store.brand_profile(actor.brand_id).await?.is_none();
    let patch = edit.of(first_save).map_err(PatchError::Invalid)?;
    let audit = settings_audit(actor, "profile");
    core.store.save_brand_profile(actor.brand_id, &patch, guard, &audit).await?.ok_or(PatchError::PreconditionFailed)
}

/// The billing entity; empty but for `country` before the first save.
pub async fn billing(core: &Core, actor: &Actor) -> Result<Billing, StoreError> {
    Ok(core.store.billing(actor.brand_id).await?.unwrap_or_default())
}

/// Applies a change to the billing entity (checked against the one on file) and answers
/// the whole entity, if `guard` (checked in the write's transaction) accepts the entity as
/// it stands.
pub async fn update_billing(
    core: &Core,
    actor: &Admin,
    edit: BillingEdit,
    guard: Option<Precondition<'_, Billing>>,
) -> Result<Billing, PatchError> {
    let current = billing(core, actor).await?;
    let patch = edit.of(&current).map_err(PatchError::Invalid)?;
    let audit = settings_audit(actor, "billing");
    core.store.save_billing(actor.brand_id, &patch, guard, &audit).await?.ok_or(PatchError::PreconditionFailed)
}

/// Sets the time zone the brand's dashboard pages write instants in (audited as
/// `settings:time_zone` when it changes). Answers whether it changed.
pub async fn change_time_zone(core: &Core, actor: &Admin, zone: TimeZone) -> Result<bool, StoreError> {
    core.store.set_time_zone(actor.brand_id, zone, &settings_audit(actor, "time_zone")).await
}

/// The audit entry of a change to one settings section (`settings:profile`).
fn settings_audit(actor: &Admin, section: &str) -> AuditEntry {
    AuditEntry::by(actor, AuditAction::SettingsUpdated, Some(format!("settings:{section}")))
}
