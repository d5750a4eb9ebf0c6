//! The one path from a create body to saved listings, shared by `POST /v1/listings` and
//! bulk import, so that a bulk row fails exactly as a single create does: the validator,
//! the reasons only the store can tell, the default warehouse, then one transaction.

use serde_json::{Map, Value};

use crate::app::AppState;
use crate::domain::listing::{referenced_ids, validate, ListingFields, ValidListing};
use crate::domain::FieldError;
use crate::error::ApiResult;
use crate::http::auth::Caller;
use crate::store::{ImageSource, NewListing, SavedListing};

/// A create body that passed every check, ready to save.
#[derive(Debug, Clone)]
pub struct NewListingBody {
    pub fields: ListingFields,
    pub images: Vec<ImageSource>,
}

/// Checks a create body: `Ok(Err(reasons))` lists every reason it is refused (the
/// validator's and the store's); `Err` is a failure of the store itself.
pub async fn prepare(
    state: &AppState,
    caller: &Caller,
    body: &Map<String, Value>,
) -> ApiResult<Result<NewListingBody, Vec<FieldError>>> {
    prepare_validated(state, caller, body, validate(body, None)).await
}

/// [`prepare`] for a body the validator has already read (`validate(body, None)`), which
/// bulk import runs off the async workers with the parsing of its file.
pub async fn prepare_validated(
    state: &AppState,
    caller: &Caller,
    body: &Map<String, Value>,
    validated: Result<ValidListing, Vec<FieldError>>,
) -> ApiResult<Result<NewListingBody, Vec<FieldError>>> {
    Ok(checked(state, caller, body, validated).await?.map(|valid| NewListingBody {
        images: image_sources(&valid.images, &valid.attachment_ids).unwrap_or_default(),
        fields: valid.fields,
    }))
}

/// Saves checked bodies as the caller's listings in one transaction, in order. Those that
/// name no warehouse are collected from the brand's default (read once, only if needed).
pub async fn save(state: &AppState, caller: &Caller, mut bodies: Vec<NewListingBody>) -> ApiResult<Vec<SavedListing>> {
    if bodies.is_empty() {
        return Ok(Vec::new());
    }
    if bodies.iter().any(|b| b.fields.warehouse_id.is_none()) {
        let default = state.store.default_warehouse_id(caller.brand_id).await?;
        for body in bodies.iter_mut().filter(|b| b.fields.warehouse_id.is_none()) {
            body.fields.warehouse_id = default.clone();
        }
    }
    let new: Vec<NewListing<'_>> = bodies
        .iter()
        .map(|b| NewListing {
            brand_id: caller.brand_id,
            user_id: caller.user_id,
            seller_name: &caller.user_name,
            fields: &b.fields,
            images: &b.images,
        })
        .collect();
    let saved = state.store.create_listings(&new).await?;
    if saved.iter().any(|s| s.record.images.iter().any(|i| i.source_url.is_some())) {
        state.photo_jobs.wake_imports();
    }
    if saved.iter().any(|s| s.brand_created) {
        state.options.invalidate(caller.brand_id);
    }
    Ok(saved)
}

/// Adds the reasons only the store can tell (unknown warehouse or photos) to the
/// validator's, so a body learns every reason at once.
pub(super) async fn checked(
    state: &AppState,
    caller: &Caller,
    body: &Map<String, Value>,
    validated: Result<ValidListing, Vec<FieldError>>,
) -> ApiResult<Result<ValidListing, Vec<FieldError>>> {
    let refs = referenced_ids(body);
    let mut errors = match &validated {
        Ok(_) => Vec::new(),
        Err(errors) => errors.clone(),
    };
    if let Some(warehouse) = &refs.warehouse_id {
        if !state.store.warehouse_in_brand(caller.brand_id, warehouse).await? {
            errors.push(FieldError::of("warehouse_id", "invalid"));
        }
    }
    if !refs.attachment_ids.is_empty() {
        let found = state.store.attachments_in_brand(caller.brand_id, &refs.attachment_ids).await?;
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
