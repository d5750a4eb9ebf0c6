//! The warehouse address book of a brand and its one default.

use super::Core;
use crate::usecases::refusal::Refusal;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::outcome::Outcome;
use rehome_domain::settings::{NewWarehouse, Warehouse, WarehouseChange, WarehouseEdit, WarehouseId};
use rehome_domain::user::{Actor, Admin};
use rehome_domain::FieldError;
use rehome_store::{StoreError, WarehouseWriteError};

/// Why a warehouse was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("invalid warehouse")]
    Invalid(Vec<FieldError>),
    /// Another change to the brand's warehouses ran at the same time; try again.
    #[error("concurrent change")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CreateError> for Refusal {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::Invalid(reasons) => reasons.into(),
            CreateError::Contended => Outcome::WarehousesContended.into(),
            CreateError::Store(e) => e.into(),
        }
    }
}

/// Why a warehouse was not changed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("no such warehouse")]
    NotFound,
    /// Includes `is_default_invalid` for un-setting the default.
    #[error("invalid change")]
    Invalid(Vec<FieldError>),
    #[error("concurrent change")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<UpdateError> for Refusal {
    fn from(e: UpdateError) -> Self {
        match e {
            UpdateError::NotFound => Outcome::WarehouseNotFound.into(),
            UpdateError::Invalid(reasons) => reasons.into(),
            UpdateError::Contended => Outcome::WarehousesContended.into(),
            UpdateError::Store(e) => e.into(),
        }
    }
}

/// Why a warehouse was not deleted or made the default.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("no such warehouse")]
    NotFound,
    #[error("concurrent change")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ChangeError> for Refusal {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::NotFound => Outcome::WarehouseNotFound.into(),
            ChangeError::Contended => Outcome::WarehousesContended.into(),
            ChangeError::Store(e) => e.into(),
        }
    }
}

impl From<WarehouseWriteError> for CreateError {
    fn from(e: WarehouseWriteError) -> Self {
        match e {
            WarehouseWriteError::Contended => Self::Contended,
            WarehouseWriteError::Store(e) => Self::Store(e),
        }
    }
}

impl From<WarehouseWriteError> for UpdateError {
    fn from(e: WarehouseWriteError) -> Self {
        match e {
            WarehouseWriteError::Contended => Self::Contended,
            WarehouseWriteError::Store(e) => Self::Store(e),
        }
    }
}

impl From<WarehouseWriteError> for ChangeError {
    fn from(e: WarehouseWriteError) -> Self {
        match e {
            WarehouseWriteError::Contended => Self::Contended,
            WarehouseWriteError::Store(e) => Self::Store(e),
        }
    }
}

/// The brand's warehouses in creation order.
pub async fn list(core: &Core, actor: &Actor) -> Result<Vec<Warehouse>, StoreError> {
    core.store.warehouses(actor.brand_id).await
}

/// Adds a warehouse. The brand's first becomes the default; one asked
/// to be the default demotes the previous one.
pub async fn create(core: &Core, actor: &Admin, new: &NewWarehouse) -> Result<Warehouse, CreateError> {
    Ok(core.store.create_warehouse(actor.brand_id, new, &warehouse_audit(actor, None)).await?)
}

/// Applies a change to the warehouse `id` (any text; one that is not a UUID names no
/// warehouse). The default cannot be un-set.
pub async fn update(core: &Core, actor: &Admin, id: &str, edit: WarehouseEdit) -> Result<Warehouse, UpdateError> {
    let id = WarehouseId::parse(id).ok_or(UpdateError::NotFound)?;
    let current = core.store.warehouse(actor.brand_id, id).await?.ok_or(UpdateError::NotFound)?;
    let patch = edit.of(current.is_default).map_err(UpdateError::Invalid)?;
    match core.store.update_warehouse(actor.brand_id, id, &patch, &warehouse_audit(actor, Some(id))).await? {
        WarehouseChange::Done(warehouse) => Ok(warehouse),
        WarehouseChange::NotFound => Err(UpdateError::NotFound),
        // It became the default after it was read.
        WarehouseChange::DefaultRequired => Err(UpdateError::Invalid(vec![FieldError::of("is_default", "invalid")])),
    }
}

/// Deletes the warehouse `id`; deleting the default promotes the first remaining one.
/// Answers the deleted warehouse's id.
pub async fn delete(core: &Core, actor: &Admin, id: &str) -> Result<WarehouseId, ChangeError> {
    let id = WarehouseId::parse(id).ok_or(ChangeError::NotFound)?;
    match core.store.delete_warehouse(actor.brand_id, id, &warehouse_audit(actor, Some(id))).await? {
        WarehouseChange::Done(()) => Ok(id),
        WarehouseChange::NotFound | WarehouseChange::DefaultRequired => Err(ChangeError::NotFound),
    }
}

/// Makes the warehouse `id` the default and answers every warehouse after the change.
pub async fn set_default(core: &Core, actor: &Admin, id: &str) -> Result<Vec<Warehouse>, ChangeError> {
    let id = WarehouseId::parse(id).ok_or(ChangeError::NotFound)?;
    match core.store.set_default_warehouse(actor.brand_id, id, &warehouse_audit(actor, Some(id))).await? {
        WarehouseChange::Done(warehouses) => Ok(warehouses),
        WarehouseChange::NotFound | WarehouseChange::DefaultRequired => Err(ChangeError::NotFound),
    }
}

/// The audit entry of a change to the brand's warehouses (`warehouse:<id>`, or the list for
/// a new one, whose id is made by the store).
fn warehouse_audit(actor: &Admin, id: Option<WarehouseId>) -> AuditEntry {
    let target = id.map_or_else(|| "warehouses".to_owned(), |id| format!("warehouse:{id}"));
    AuditEntry::by(actor, AuditAction::WarehousesUpdated, Some(target))
}
