//! Listings: list, read, create (shared with bulk import), update, trash and bulk trash,
//! each for the actor's brand; changes only by the listing's seller.

mod create;

use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use create::{checked, image_sources, keep_images};
pub use create::{
    create, prepare, prepare_change, save_draft_import, save_import, CreateListingError, ListingChange, NewListingBody,
};
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::listing::{validate, ImageStatus, ListingInput, ListingQuery, SyncPosition, ValidListing};
use rehome_domain::outcome::Outcome;
use rehome_domain::precondition::{listing_etag, IfMatch};
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::{ListingPage, ListingRecord, Removal, SavedListing, SyncPage};
use rehome_domain::FieldError;
use rehome_store::{ImageSlot, ImageSource, ListingUpdate, StoreError};

/// A page of the brand's listings, newest first, and how many match in all.
pub async fn list(
    core: &Core,
    actor: &Actor,
    query: ListingQuery,
    limit: i64,
    offset: i64,
) -> Result<ListingPage, StoreError> {
    core.store.list_listings(actor.brand_id, query, limit, offset).await
}

/// The titles of the actor's brand's listings among `ids`, trashed ones too.
pub async fn titles(core: &Core, actor: &Actor, ids: &[i64]) -> Result<Vec<(i64, String)>, StoreError> {
    core.store.listing_titles(actor.brand_id, ids).await
}

/// Up to `limit` of the brand's listings changed after `after`, trashed ones included, in
/// the order a sync walk visits them (decisions 11.2).
pub async fn sync(
    core: &Core,
    actor: &Actor,
    query: ListingQuery,
    after: SyncPosition,
    limit: i64,
) -> Result<SyncPage, StoreError> {
    core.store.sync_listings(actor.brand_id, query, after, limit).await
}

/// Why a listing was not read.
#[derive(Debug, thiserror::Error)]
pub enum GetListingError {
    /// Missing, trashed, or another brand's.
    #[error("no such listing")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<GetListingError> for Refusal {
    fn from(e: GetListingError) -> Self {
        match e {
            GetListingError::NotFound => Outcome::ListingNotFound.into(),
            GetListingError::Store(e) => e.into(),
        }
    }
}

/// One of the brand's listings (not trashed).
pub async fn get(core: &Core, actor: &Actor, id: i64) -> Result<ListingRecord, GetListingError> {
    core.store.listing(actor.brand_id, id).await?.ok_or(GetListingError::NotFound)
}

/// Why a listing was not updated.
#[derive(Debug, thiserror::Error)]
pub enum UpdateListingError {
    #[error("no such listing")]
    NotFound,
    /// The brand's, but another user's.
    #[error("another user's listing")]
    NotOwner,
    /// The body changes nothing: it has no field.
    #[error("no fields")]
    NoFields,
    /// Every reason the merged listing is refused.
    #[error("invalid listing")]
    Invalid(Vec<FieldError>),
    /// The listing kept changing during the update.
    #[error("edit conflict")]
    EditConflict,
    /// The `If-Match` condition does not hold for the listing as it is (or became).
    #[error("precondition failed")]
    PreconditionFailed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<UpdateListingError> for Refusal {
    fn from(e: UpdateListingError) -> Self {
        match e {
            UpdateListingError::NotFound => Outcome::ListingNotFound.into(),
            UpdateListingError::NotOwner => Outcome::NotOwner.into(),
            UpdateListingError::NoFields => Outcome::NoFields.into(),
            UpdateListingError::Invalid(reasons) => reasons.into(),
            UpdateListingError::EditConflict => Outcome::EditConflict.into(),
            UpdateListingError::PreconditionFailed => Outcome::PreconditionFailed.into(),
            UpdateListingError::Store(e) => e.into(),
        }
    }
}

/// Merges `input` over one of the actor's listings and saves it if the merged listing is
/// valid. The listing is read, checked and saved on the condition that it did not change
/// meanwhile; if it did, the change is applied once more to the listing read under the
/// write lock ([`rehome_store::Store::update_listing_locked`]), which no other write can
/// overtake. With `if_match`, the listing must carry one of its tags when read and still
/// when saved (the save is conditional on the version read), else nothing changes.
pub async fn update(
    core: &Core,
    actor: &Admin,
    id: i64,
    input: &ListingInput,
    if_match: Option<&IfMatch>,
) -> Result<SavedListing, UpdateListingError> {
    let existing = core.store.listing(actor.brand_id, id).await?.ok_or(UpdateListingError::NotFound)?;
    // The reasons only the store can tell (an unknown warehouse or photo) concern the
    // input alone: checked once, they hold for the listing read again under the lock.
    let merged = match change_of(actor, &existing, input, if_match) {
        Ok((valid, _)) => Ok(valid),
        Err(UpdateListingError::Invalid(reasons)) => Err(reasons),
        Err(refused) => return Err(refused),
    };
    let valid = checked(core, actor, input, merged).await?.map_err(UpdateListingError::Invalid)?;
    let images = image_sources(&valid.images, &valid.attachment_ids).map(|new| keep_images(&existing, new));
    let audit = AuditEntry::by(actor, AuditAction::ListingUpdated, None);
    let saved = match core.store.update_listing(&existing, &valid.fields, images.as_deref(), &audit).await? {
        ListingUpdate::Saved(saved) => *saved,
        // Changed since it was read: with a condition, the tag it was checked against is gone.
        ListingUpdate::Stale if if_match.is_some() => return Err(UpdateListingError::PreconditionFailed),
        ListingUpdate::Stale => {
            let locked: Option<Result<_, UpdateListingError>> = core
                .store
                .update_listing_locked(actor.brand_id, id, &audit, |existing| {
                    let (valid, images) = change_of(actor, existing, input, None)?;
                    Ok((valid.fields, images, ()))
                })
                .await?;
            locked.ok_or(UpdateListingError::NotFound)??.0
        }
    };
    if saved.record.images.iter().any(|i| i.source_url.is_some() && i.status == ImageStatus::Pending) {
        core.photo_jobs.wake_imports();
    }
    if saved.brand_created {
        core.options.invalidate(actor.brand_id);
    }
    Ok(saved)
}

/// `input` merged over `existing` for `actor`: the valid listing and its new image list,
/// or why not (the store's own checks aside).
fn change_of(
    actor: &Actor,
    existing: &ListingRecord,
    input: &ListingInput,
    if_match: Option<&IfMatch>,
) -> Result<(ValidListing, Option<Vec<ImageSlot>>), UpdateListingError> {
    if !actor.may_change_listing_of(existing.user_id) {
        return Err(UpdateListingError::NotOwner);
    }
    if if_match.is_some_and(|condition| !condition.matches(&listing_etag(existing.version))) {
        return Err(UpdateListingError::PreconditionFailed);
    }
    if input.is_empty() {
        return Err(UpdateListingError::NoFields);
    }
    let valid = validate(input, Some(&existing.fields)).map_err(UpdateListingError::Invalid)?;
    let images = image_sources(&valid.images, &valid.attachment_ids).map(|new| keep_images(existing, new));
    Ok((valid, images))
}

/// What a change of a listing's photos does to its image list (in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhotoChange {
    /// A photo just uploaded by the actor (so of the actor's brand) goes last.
    Add(i64),
    /// The image at this 0-based position goes.
    Remove(usize),
    /// The image at this 0-based position goes first: the cover.
    Cover(usize),
}

/// Why a listing's photos did not change.
#[derive(Debug, thiserror::Error)]
pub enum PhotoChangeError {
    #[error("no such listing")]
    NotFound,
    #[error("another user's listing")]
    NotOwner,
    /// No image at the position named.
    #[error("no such photo")]
    NoSuchPhoto,
    /// The listing kept changing during the change.
    #[error("edit conflict")]
    EditConflict,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<PhotoChangeError> for Refusal {
    fn from(e: PhotoChangeError) -> Self {
        match e {
            PhotoChangeError::NotFound => Outcome::ListingNotFound.into(),
            PhotoChangeError::NotOwner => Outcome::NotOwner.into(),
            PhotoChangeError::NoSuchPhoto => Outcome::PhotoNotFound.into(),
            PhotoChangeError::EditConflict => Outcome::EditConflict.into(),
            PhotoChangeError::Store(e) => e.into(),
        }
    }
}

/// Adds, removes or moves to the front one of the actor's listing's images. Every other
/// image is kept as it is (an import is never fetched again); a listing changed meanwhile
/// is read again and the change applied to it (three attempts).
pub async fn change_photos(
    core: &Core,
    actor: &Admin,
    id: i64,
    change: PhotoChange,
) -> Result<SavedListing, PhotoChangeError> {
    let existing = core.store.listing(actor.brand_id, id).await?.ok_or(PhotoChangeError::NotFound)?;
    let slots = photos_after(actor, &existing, change)?;
    let audit = AuditEntry::by(actor, AuditAction::ListingPhotosChanged, None);
    match core.store.update_listing(&existing, &existing.fields, Some(&slots), &audit).await? {
        ListingUpdate::Saved(saved) => Ok(*saved),
        // Changed meanwhile: applied to the listing read under the write lock (see `update`).
        ListingUpdate::Stale => {
            let locked: Option<Result<_, PhotoChangeError>> = core
                .store
                .update_listing_locked(actor.brand_id, id, &audit, |existing| {
                    Ok((existing.fields.clone(), Some(photos_after(actor, existing, change)?), ()))
                })
                .await?;
            Ok(locked.ok_or(PhotoChangeError::NotFound)??.0)
        }
    }
}

/// The image list of `existing` after `change`, every other image kept as it is.
fn photos_after(
    actor: &Actor,
    existing: &ListingRecord,
    change: PhotoChange,
) -> Result<Vec<ImageSlot>, PhotoChangeError> {
    if !actor.may_change_listing_of(existing.user_id) {
        return Err(PhotoChangeError::NotOwner);
    }
    let mut slots: Vec<ImageSlot> = existing.images.iter().cloned().map(ImageSlot::Kept).collect();
    match change {
        PhotoChange::Add(photo) => slots.push(ImageSlot::New(ImageSource::Attachment(photo))),
        PhotoChange::Remove(at) if at < slots.len() => {
            slots.remove(at);
        }
        PhotoChange::Cover(at) if at < slots.len() => {
            let cover = slots.remove(at);
            slots.insert(0, cover);
        }
        PhotoChange::Remove(_) | PhotoChange::Cover(_) => return Err(PhotoChangeError::NoSuchPhoto),
    }
    Ok(slots)
}

/// Why a listing was not trashed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteListingError {
    #[error("no such listing")]
    NotFound,
    #[error("another user's listing")]
    NotOwner,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<DeleteListingError> for Refusal {
    fn from(e: DeleteListingError) -> Self {
        match e {
            DeleteListingError::NotFound => Outcome::ListingNotFound.into(),
            DeleteListingError::NotOwner => Outcome::NotOwner.into(),
            DeleteListingError::Store(e) => e.into(),
        }
    }
}

/// Moves one of the actor's listings to the trash.
pub async fn delete(core: &Core, actor: &Admin, id: i64) -> Result<(), DeleteListingError> {
    let audit = AuditEntry::by(actor, AuditAction::ListingDeleted, None);
    let outcome =
        core.store.delete_listings(actor.brand_id, &[id], |seller| actor.may_change_listing_of(seller), &audit).await?;
    match outcome.first().map(|(_, removal)| *removal) {
        Some(Removal::Deleted) => Ok(()),
        Some(Removal::NotOwner) => Err(DeleteListingError::NotOwner),
        Some(Removal::NotFound) | None => Err(DeleteListingError::NotFound),
    }
}

/// Trashes each of `ids` that is the actor's listing; says per distinct id what happened,
/// in the order given.
pub async fn bulk_delete(core: &Core, actor: &Admin, ids: &[i64]) -> Result<Vec<(i64, Removal)>, StoreError> {
    let audit = AuditEntry::by(actor, AuditAction::ListingDeleted, None);
    core.store.delete_listings(actor.brand_id, ids, |seller| actor.may_change_listing_of(seller), &audit).await
}

/// After new listings are saved: wake the image importer when they named URLs, and drop
/// the cached options when a manufacturer brand was added.
fn wake_after_save<'a>(core: &Core, actor: &Actor, saved: impl IntoIterator<Item = &'a SavedListing>) {
    let (mut imports, mut brands) = (false, false);
    for s in saved {
        imports |= s.record.images.iter().any(|i| i.source_url.is_some());
        brands |= s.brand_created;
    }
    if imports {
        core.photo_jobs.wake_imports();
    }
    if brands {
        core.options.invalidate(actor.brand_id);
    }
}
