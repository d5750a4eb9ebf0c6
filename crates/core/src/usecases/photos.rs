//! Photos: uploading one for listings, and reading it back with its thumbnails.

use bytes::Bytes;

use super::Core;
use crate::media::original::{self, Refusal as ImageRefusal};
use crate::media::{sanitize_filename, MediaName};
use crate::usecases::refusal::Refusal;
use rehome_domain::listing::PhotoSource;
use rehome_domain::outcome::Outcome;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::PhotoRecord;
use rehome_store::{NewPhoto, StoreError};

/// A photo as uploaded: its bytes (decoded, within the size limit) and the name given.
#[derive(Debug)]
pub struct PhotoUpload {
    pub bytes: Vec<u8>,
    pub filename: Option<String>,
}

/// Why a photo was not stored.
#[derive(Debug, thiserror::Error)]
pub enum UploadPhotoError {
    /// Not a readable JPEG, PNG, WebP or GIF (by its header, or its pixels).
    #[error("not a readable image")]
    UnsupportedImage,
    /// More pixels than [`crate::media::sniff::MAX_PIXELS`], by its header: never decoded.
    #[error("{width}×{height} pixels is over the budget")]
    TooManyPixels { width: u32, height: u32 },
    #[error("cannot store a photo: {0}")]
    Media(#[from] std::io::Error),
    #[error("preparing a photo failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<UploadPhotoError> for Refusal {
    fn from(e: UploadPhotoError) -> Self {
        match e {
            UploadPhotoError::UnsupportedImage => Outcome::UnsupportedImage.into(),
            UploadPhotoError::TooManyPixels { width, height } => Outcome::TooManyPixels { width, height }.into(),
            // The media directory's disk is full: nothing was stored, as with a full database.
            UploadPhotoError::Media(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                Refusal::StorageFull(format!("cannot store a photo: {e}"))
            }
            UploadPhotoError::Media(e) => Refusal::internal("cannot store a photo", e),
            UploadPhotoError::Task(e) => Refusal::internal("upload decoding failed", e),
            UploadPhotoError::Store(e) => e.into(),
        }
    }
}

/// Stores a photo of the actor's brand, typed from its bytes (not its name), decoded,
/// turned upright and re-encoded without its metadata ([`original::prepare`]): the bytes
/// uploaded are never served back. Its thumbnails are made in the background.
pub async fn upload(core: &Core, actor: &Admin, upload: PhotoUpload) -> Result<PhotoRecord, UploadPhotoError> {
    let PhotoUpload { bytes, filename } = upload;
    // Decoding and encoding are CPU work: off the async threads.
    let prepared = tokio::task::spawn_blocking(move || original::prepare(&bytes)).await?;
    let photo = prepared.map_err(|refusal| match refusal {
        ImageRefusal::TooManyPixels { width, height } => UploadPhotoError::TooManyPixels { width, height },
        ImageRefusal::Unsupported | ImageRefusal::Undecodable(_) => UploadPhotoError::UnsupportedImage,
    })?;
    let name = MediaName::original(photo.kind);
    let byte_size = photo.bytes.len() as i64;
    core.media.put(&name, Bytes::from(photo.bytes)).await?;
    let photo = core
        .store
        .insert_photo(NewPhoto {
            brand_id: actor.brand_id,
            user_id: Some(actor.user_id),
            source: PhotoSource::Upload,
            name: name.as_str(),
            mime: photo.kind.mime(),
            filename: &sanitize_filename(filename.as_deref()),
            byte_size,
            width: i64::from(photo.width),
            height: i64::from(photo.height),
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

impl From<GetPhotoError> for Refusal {
    fn from(e: GetPhotoError) -> Self {
        match e {
            GetPhotoError::NotFound => Outcome::PhotoNotFound.into(),
            GetPhotoError::Store(e) => e.into(),
        }
    }
}

/// One of the brand's photos, with its thumbnails once ready.
pub async fn get(core: &Core, actor: &Actor, id: i64) -> Result<PhotoRecord, GetPhotoError> {
    core.store.photo(actor.brand_id, id).await?.ok_or(GetPhotoError::NotFound)
}

/// A stored photo or thumbnail, by the name the service gave it.
pub async fn media(core: &Core, name: &MediaName) -> std::io::Result<Option<Bytes>> {
    core.media.get(name).await
}
