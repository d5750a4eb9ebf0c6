//! The one path from a create body to saved listings, shared by `POST /v1/listings` and
//! bulk import, so that a bulk row fails exactly as a single create does: the validator,
//! the reasons only the store can tell, the default warehouse, then one transaction.

use super::wake_after_save;
use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::listing::{referenced_ids, validate, ImageStatus, ListingFields, ListingInput, ValidListing};
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::{ListingImage, ListingRecord, SavedListing};
use rehome_domain::FieldError;
use rehome_store::{ImageSlot, ImageSource, ListingEdit, ListingUpdate, NewListing, StoreError};

/// A create body that passed every check, ready to save.
#[derive(Debug, Clone)]
pub struct NewListingBody {
    pub fields: ListingFields,
    pub images: Vec<ImageSource>,
}

/// Why a listing was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateListingError {
    /// Every reason the body is refused, the validator's and the store's.
    #[error("invalid listing")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CreateListingError> for Refusal {
    fn from(e: CreateListingError) -> Self {
        match e {
            CreateListingError::Invalid(reasons) => reasons.into(),
            CreateListingError::Store(e) => e.into(),
        }
    }
}

/// Creates one listing sold by the actor.
pub async fn create(core: &Core, actor: &Admin, input: &ListingInput) -> Result<SavedListing, CreateListingError> {
    let listing = prepare(core, actor, input, validate(input, None)).await?.map_err(CreateListingError::Invalid)?;
    let mut bodies = [listing];
    default_warehouse(core, actor, &mut bodies).await?;
    let audit = AuditEntry::by(actor, AuditAction::ListingCreated, None);
    let saved = core.store.create_listing(new_listing(actor, &bodies[0]), &audit).await?;
    wake_after_save(core, actor, [&saved]);
    Ok(saved)
}

/// Checks a create input the validator has already read (`validate(input, None)`; bulk
/// import runs it off the async workers with the parsing of its file): `Ok(Err(reasons))`
/// lists every reason it is refused (the validator's and the store's).
pub async fn prepare(
    core: &Core,
    actor: &Admin,
    input: &ListingInput,
    validated: Result<ValidListing, Vec<FieldError>>,
) -> Result<Result<NewListingBody, Vec<FieldError>>, StoreError> {
    Ok(checked(core, actor, input, validated).await?.map(|valid| NewListingBody {
        images: image_sources(&valid.images, &valid.attachment_ids).unwrap_or_default(),
        fields: valid.fields,
    }))
}

/// A change to an existing listing that passed every check (a bulk upsert row), ready to
/// save: the listing as read, its new fields, and its new images when they change.
#[derive(Debug, Clone)]
pub struct ListingChange {
    pub existing: ListingRecord,
    pub fields: ListingFields,
    pub images: Option<Vec<ImageSlot>>,
}

impl ListingChange {
    /// True when saving it would change nothing: the same fields, and the same images in
    /// the same order (or none given).
    pub fn changes_nothing(&self) -> bool {
        let same_images = |slots: &Vec<ImageSlot>| {
            slots.len() == self.existing.images.len()
                && slots
                    .iter()
                    .zip(&self.existing.images)
                    .all(|(slot, image)| matches!(slot, ImageSlot::Kept(k) if k == image))
        };
        self.fields == self.existing.fields && self.images.as_ref().is_none_or(same_images)
    }
}

/// Checks a change of `existing` by `input` exactly as a PATCH does (PATCH semantics:
/// fields the input leaves out stay as they are): `Ok(Err(reasons))` lists every reason it
/// is refused.
pub async fn prepare_change(
    core: &Core,
    actor: &Admin,
    existing: ListingRecord,
    input: &ListingInput,
) -> Result<Result<ListingChange, Vec<FieldError>>, StoreError> {
    let validated = validate(input, Some(&existing.fields));
    Ok(checked(core, actor, input, validated).await?.map(|valid| ListingChange {
        images: image_sources(&valid.images, &valid.attachment_ids).map(|new| keep_images(&existing, new)),
        fields: valid.fields,
        existing,
    }))
}

/// Saves a bulk import's checked rows in one transaction: `bodies` created as the actor's
/// listings, `changes` written over the listings they were checked against (each only if
/// unchanged since: else [`ListingUpdate::Stale`]), in order.
pub async fn save_import(
    core: &Core,
    actor: &Admin,
    mut bodies: Vec<NewListingBody>,
    changes: &[ListingChange],
) -> Result<(Vec<SavedListing>, Vec<ListingUpdate>), StoreError> {
    if bodies.is_empty() && changes.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    default_warehouse(core, actor, &mut bodies).await?;
    let new: Vec<NewListing<'_>> = bodies.iter().map(|b| new_listing(actor, b)).collect();
    let edits: Vec<ListingEdit<'_>> = changes
        .iter()
        .map(|c| ListingEdit { existing: &c.existing, fields: &c.fields, images: c.images.as_deref() })
        .collect();
    let audit = AuditEntry::by(actor, AuditAction::ListingsImported, None);
    let (created, updated) = core.store.save_listings(&new, &edits, &audit).await?;
    let changed = updated.iter().filter_map(|u| match u {
        ListingUpdate::Saved(saved) => Some(&**saved),
        ListingUpdate::Stale => None,
    });
    wake_after_save(core, actor, changed.chain(&created));
    Ok((created, updated))
}

/// [`save_import`] for a draft the dashboard kept (`usecases::bulk::drafts`): the draft is
/// claimed in the same transaction, so it is imported at most once; `result` records what
/// was saved on it. `None` when it could not be claimed: nothing was saved.
pub async fn save_draft_import<R>(
    core: &Core,
    actor: &Admin,
    draft_id: i64,
    mut bodies: Vec<NewListingBody>,
    changes: &[ListingChange],
    result: R,
) -> Result<Option<(Vec<SavedListing>, Vec<ListingUpdate>)>, StoreError>
where
    R: FnOnce(&[SavedListing], &[ListingUpdate]) -> String + Send,
{
    default_warehouse(core, actor, &mut bodies).await?;
    let new: Vec<NewListing<'_>> = bodies.iter().map(|b| new_listing(actor, b)).collect();
    let edits: Vec<ListingEdit<'_>> = changes
        .iter()
        .map(|c| ListingEdit { existing: &c.existing, fields: &c.fields, images: c.images.as_deref() })
        .collect();
    let audit = AuditEntry::by(actor, AuditAction::ListingsImported, Some(format!("import:{draft_id}")));
    let saved = core.store.commit_bulk_draft(actor.brand_id, draft_id, &audit, &new, &edits, result).await?;
    if let Some((created, updated)) = &saved {
        let changed = updated.iter().filter_map(|u| match u {
            ListingUpdate::Saved(saved) => Some(&**saved),
            ListingUpdate::Stale => None,
        });
        wake_after_save(core, actor, changed.chain(created));
    }
    Ok(saved)
}

/// Bodies that name no warehouse are collected from the brand's default (read once, only
/// if needed).
async fn default_warehouse(core: &Core, actor: &Actor, bodies: &mut [NewListingBody]) -> Result<(), StoreError> {
    if bodies.iter().any(|b| b.fields.warehouse_id.is_none()) {
        let default = core.store.default_warehouse_id(actor.brand_id).await?;
        for body in bodies.iter_mut().filter(|b| b.fields.warehouse_id.is_none()) {
            body.fields.warehouse_id = default.clone();
        }
    }
    Ok(())
}

fn new_listing<'a>(actor: &'a Actor, body: &'a NewListingBody) -> NewListing<'a> {
    NewListing {
        brand_id: actor.brand_id,
        user_id: actor.user_id,
        seller_name: &actor.user_name,
        fields: &body.fields,
        images: &body.images,
    }
}

/// Adds the reasons only the store can tell (unknown warehouse or photos) to the
/// validator's, so an input learns every reason at once.
pub(super) async fn checked(
    core: &Core,
    actor: &Actor,
    input: &ListingInput,
    validated: Result<ValidListing, Vec<FieldError>>,
) -> Result<Result<ValidListing, Vec<FieldError>>, StoreError> {
    let refs = referenced_ids(input);
    let mut errors = match &validated {
        Ok(_) => Vec::new(),
        Err(errors) => errors.clone(),
    };
    if let Some(warehouse) = &refs.warehouse_id {
        if !core.store.warehouse_in_brand(actor.brand_id, warehouse).await? {
            errors.push(FieldError::of("warehouse_id", "invalid"));
        }
    }
    if !refs.attachment_ids.is_empty() {
        let found = core.store.attachments_in_brand(actor.brand_id, &refs.attachment_ids).await?;
        if refs.attachment_ids.iter().any(|id| !found.contains(id)) {
            errors.push(FieldError::of("attachment_ids", "invalid"));
        }
    }
    Ok(match validated {
        Ok(valid) if errors.is_empty() => Ok(valid),
        _ => Err(errors),
    })
}

/// The listing's new image list when the body gave `images` or `attachment_ids`:
/// uploaded photos first, then URLs to import.
pub(super) fn image_sources(
    images: &Option<Vec<String>>,
    attachment_ids: &Option<Vec<i64>>,
) -> Option<Vec<ImageSource>> {
    if images.is_none() && attachment_ids.is_none() {
        return None;
    }
    let photos = attachment_ids.iter().flatten().map(|id| ImageSource::Attachment(*id));
    let imports = images.iter().flatten().map(|url| ImageSource::Import(url.clone()));
    Some(photos.chain(imports).collect())
}

/// An edited listing's new image list, keeping each image it already has: a photo by its
/// attachment, an import by its URL unless it failed (sending a failed URL again is how it
/// is retried). Each image is kept once; only what is left is uploaded or fetched anew.
pub(super) fn keep_images(existing: &ListingRecord, new: Vec<ImageSource>) -> Vec<ImageSlot> {
    let mut left: Vec<&ListingImage> = existing.images.iter().collect();
    new.into_iter()
        .map(|source| {
            let same = |image: &&ListingImage| match &source {
                ImageSource::Attachment(id) => image.attachment_id == Some(*id),
                ImageSource::Import(url) => {
                    image.source_url.as_deref() == Some(url.as_str()) && image.status != ImageStatus::Failed
                }
            };
            match left.iter().position(same) {
                Some(found) => ImageSlot::Kept(left.remove(found).clone()),
                None => ImageSlot::New(source),
            }
        })
        .collect()
}
