//! Photos: uploading one for listings, and reading it back with its thumbnails.

use axum::body::Bytes;

use super::Core;
use crate::domain::listing::PhotoSource;
use crate::domain::user::Actor;
use crate::media::{sanitize_filename, sniff, MediaName};
use crate::store::{NewPhoto, PhotoRecord, StoreError};

/// A photo as uploaded: its bytes (decoded, within the size limit) and the name given.
#[derive(Debug)]
pub struct PhotoUpload {
    pub bytes: Vec<u8>,
    pub filename: Option<String>,
}

/// Why a photo was not stored.
#[derive(Debug, thiserror::Error)]
pub enum UploadPhotoError {
    /// Not a readable JPEG, PNG, WebP or GIF.
    #[error("not a readable image")]
    UnsupportedImage,
    /// More pixels than [`sniff::MAX_PIXELS`], by its header: never decoded.
    #[error("{width}×{height} pixels is over the budget")]
    TooManyPixels { width: u32, height: u32 },
    #[error("cannot store a photo: {0}")]
    Media(#[from] std::io::Error),
    #[error("identifying a photo failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stores a photo of the actor's brand, typed from its bytes (not its name) and with a
/// header that must parse; its thumbnails are made in the background.
pub async fn upload(core: &Core, actor: &Actor, upload: PhotoUpload) -> Result<PhotoRecord, UploadPhotoError> {
    let PhotoUpload { bytes, filename } = upload;
    // Reading the header is decoder work: off the async threads.
    let (bytes, identified) = tokio::task::spawn_blocking(move || {
        let identified = sniff::identify(&bytes);
        (bytes, identified)
    })
    .await?;
    let (kind, width, height) = identified.ok_or(UploadPhotoError::UnsupportedImage)?;
    if !sniff::within_pixel_budget(width, height) {
        return Err(UploadPhotoError::TooManyPixels { width, height });
    }
    let name = MediaName::original(kind);
    let byte_size = bytes.len() as i64;
    core.media.put(&name, Bytes::from(bytes)).await?;
    let photo = core
        .store
        .insert_photo(NewPhoto {
            brand_id: actor.brand_id,
            user_id: Some(actor.user_id),
            source: PhotoSource::Upload,
            name: name.as_str(),
            mime: kind.mime(),
            filename: &sanitize_filename(filename.as_deref()),
            byte_size,
            width: i64::from(width),
            height: i64::from(height),
        })
        .await?;
    core.photo_jobs.wake_thumbnails();
    Ok(photo)
}

/// Why a photo was not read.
#[derive(Debug, thiserror::Error)]
pub enum GetPhotoError {
    /// No such photo in the actor's brand.
    #[error("no such photo")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One of the brand's photos, with its thumbnails once ready.
pub async fn get(core: &Core, actor: &Actor, id: i64) -> Result<PhotoRecord, GetPhotoError> {
    core.store.photo(actor.brand_id, id).await?.ok_or(GetPhotoError::NotFound)
}

/// A stored photo or thumbnail, by the name the service gave it.
pub async fn media(core: &Core, name: &MediaName) -> std::io::Result<Option<Bytes>> {
    core.media.get(name).await
}
