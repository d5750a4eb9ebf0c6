//! Photos as files: the media store (a small trait with a filesystem and an S3-compatible
//! implementation), the names the service gives them, and the image work (type sniffing,
//! base64, the cleaned original, thumbnails).
//!
//! Handlers and jobs hold an `Arc<dyn MediaStore>` chosen at start by [`from_config`].

pub mod base64;
mod fs;
pub mod original;
pub mod pool;
mod s3;
pub mod sniff;
pub mod thumbnail;

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

use crate::config::{Config, MediaStoreKind};

pub use fs::FsMediaStore;
pub use s3::S3MediaStore;
pub use sniff::ImageKind;

pub use rehome_domain::limits::MAX_IMAGE_BYTES;

/// Names are random and objects never change, so any copy may be kept forever.
pub const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

pub type MediaFuture<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + Send + 'a>>;

/// Where photo files live. Objects are written whole or not at all and never change once
/// written (their names are random), so they can be cached forever.
pub trait MediaStore: Send + Sync + fmt::Debug {
    /// Stores `bytes` under `name` atomically: a reader sees the whole object or nothing.
    fn put<'a>(&'a self, name: &'a MediaName, bytes: Bytes) -> MediaFuture<'a, ()>;
    /// The object, or `None` when there is none by that name.
    fn get<'a>(&'a self, name: &'a MediaName) -> MediaFuture<'a, Option<Bytes>>;
}

/// The store `REHOME_MEDIA_STORE` names: the media directory, or an S3-compatible bucket.
pub fn from_config(config: &Config) -> anyhow::Result<Arc<dyn MediaStore>> {
    Ok(match config.media_store {
        MediaStoreKind::Fs => Arc::new(FsMediaStore::new(config.media_dir.clone())),
        MediaStoreKind::S3 => Arc::new(S3MediaStore::from_config(config)?),
    })
}

/// Which rendition of a photo a name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendition {
    Original,
    Medium,
    Large,
}

/// A media object name the service generated: `<32 lower-case hex>[-medium|-large].<ext>`.
/// Nothing else parses, so a name can never climb out of the store (no `/`, no `..`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MediaName(String);

impl MediaName {
    /// A fresh random name for an original of `kind`.
    pub fn original(kind: ImageKind) -> Self {
        Self(format!("{}.{}", uuid::Uuid::new_v4().simple(), kind.extension()))
    }

    /// The name of a thumbnail of this photo, encoded as `extension` (`jpg` or `png`).
    pub fn rendition(&self, rendition: Rendition, extension: &str) -> Self {
        let suffix = match rendition {
            Rendition::Original => "",
            Rendition::Medium => "-medium",
            Rendition::Large => "-large",
        };
        Self(format!("{}{suffix}.{extension}", self.stem()))
    }

    /// A name as stored or requested; `None` unless the service could have made it.
    pub fn parse(text: &str) -> Option<Self> {
        let (base, extension) = text.split_once('.')?;
        ImageKind::from_extension(extension)?;
        let hex = base.strip_suffix("-medium").or_else(|| base.strip_suffix("-large")).unwrap_or(base);
        let well_formed = hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        well_formed.then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 32 hex characters.
    fn stem(&self) -> &str {
        &self.0[..32]
    }

    /// The content type, from the extension the service chose when it sniffed the bytes.
    pub fn mime(&self) -> &'static str {
        self.0.rsplit('.').next().and_then(ImageKind::from_extension).map_or("application/octet-stream", |k| k.mime())
    }

    /// The public URL of the object under the base of photo URLs ([`Config::media_url`]).
    pub fn url(&self, media_url: &str) -> String {
        format!("{media_url}/{}", self.0)
    }
}

impl fmt::Display for MediaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The public URL of a stored name, or `""` for none (thumbnails not ready).
pub fn url_or_empty(name: Option<&str>, media_url: &str) -> String {
    name.and_then(MediaName::parse).map(|n| n.url(media_url)).unwrap_or_default()
}

/// A client file name made safe to keep and show: the last path component, control and
/// path characters dropped, at most 100 characters; `upload.jpg` when nothing is left.
pub fn sanitize_filename(given: Option<&str>) -> String {
    let last = given.unwrap_or("").rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = last
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*'))
        .take(100)
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim();
    if cleaned.is_empty() {
        "upload.jpg".to_owned()
    } else {
        cleaned.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_the_service_makes_parse() {
        let name = MediaName::original(ImageKind::Png);
        assert_eq!(MediaName::parse(name.as_str()), Some(name.clone()));
        let medium = name.rendition(Rendition::Medium, "jpg");
        assert!(medium.as_str().ends_with("-medium.jpg"));
        assert_eq!(MediaName::parse(medium.as_str()), Some(medium));
        for bad in [
            "",
            "../etc/passwd",
            "..%2f..%2fetc%2fpasswd",
            "0123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef.exe",
            "0123456789ABCDEF0123456789ABCDEF.jpg",
            "0123456789abcdef0123456789abcdef.jpg/..",
            "0123456789abcdef0123456789abcde/.jpg",
            "x/0123456789abcdef0123456789abcdef.jpg",
            "0123456789abcdef0123456789abcdef-small.jpg",
            "0123456789abcdef0123456789abcdef.jpg.png",
        ] {
            assert_eq!(MediaName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_store_follows_the_configuration() {
        let fs = from_config(&Config::default()).unwrap();
        assert!(format!("{fs:?}").starts_with("FsMediaStore"), "{fs:?}");
        let s3 = Config { media_store: MediaStoreKind::S3, s3_bucket: Some("photos".into()), ..Config::default() };
        let s3 = from_config(&s3).unwrap();
        assert!(format!("{s3:?}").starts_with("S3MediaStore"), "{s3:?}");
        let no_bucket = Config { media_store: MediaStoreKind::S3, ..Config::default() };
        let error = from_config(&no_bucket).unwrap_err();
        assert!(error.to_string().contains("REHOME_S3_BUCKET"), "{error}");
    }

    #[test]
    fn urls_are_names_under_the_media_base() {
        let name = MediaName::parse("0123456789abcdef0123456789abcdef.png").unwrap();
        assert_eq!(name.url("https://cdn.example/p"), "https://cdn.example/p/0123456789abcdef0123456789abcdef.png");
        assert_eq!(url_or_empty(None, "https://cdn.example/p"), "");
    }

    #[test]
    fn mime_follows_the_extension() {
        assert_eq!(MediaName::parse("0123456789abcdef0123456789abcdef.webp").unwrap().mime(), "image/webp");
        assert_eq!(MediaName::parse("0123456789abcdef0123456789abcdef-large.jpg").unwrap().mime(), "image/jpeg");
    }

    #[test]
    fn file_names_are_never_paths() {
        assert_eq!(sanitize_filename(None), "upload.jpg");
        assert_eq!(sanitize_filename(Some("")), "upload.jpg");
        assert_eq!(sanitize_filename(Some("../../etc/passwd")), "passwd");
        assert_eq!(sanitize_filename(Some("..\\..\\boot.ini")), "boot.ini");
        assert_eq!(sanitize_filename(Some("..")), "upload.jpg");
        assert_eq!(sanitize_filename(Some("sofa\u{0}\n.jpg")), "sofa.jpg");
        assert_eq!(sanitize_filename(Some("a".repeat(300).as_str())).len(), 100);
        assert_eq!(sanitize_filename(Some("My Sofa (1).png")), "My Sofa (1).png");
    }
}
