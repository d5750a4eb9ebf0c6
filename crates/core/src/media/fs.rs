//! The filesystem media store: `<root>/<first two hex>/<name>`, written to
//! `<root>/tmp/` first and renamed into place.

use std::io::{self, Write};
use std::path::PathBuf;

use bytes::Bytes;

use super::{MediaFuture, MediaName, MediaStore};

#[derive(Debug, Clone)]
pub struct FsMediaStore {
    root: PathBuf,
}

impl FsMediaStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Only ever built from a [`MediaName`], which holds no separator and no `..`.
    fn path(&self, name: &MediaName) -> PathBuf {
        self.root.join(&name.as_str()[..2]).join(name.as_str())
    }
}

impl MediaStore for FsMediaStore {
    fn put<'a>(&'a self, name: &'a MediaName, bytes: Bytes) -> MediaFuture<'a, ()> {
        let target = self.path(name);
        let tmp_dir = self.root.join("tmp");
        let tmp = tmp_dir.join(format!("{}.{}.part", name.as_str(), uuid::Uuid::new_v4().simple()));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                std::fs::create_dir_all(&tmp_dir)?;
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let written = (|| {
                    let mut file = std::fs::File::create(&tmp)?;
                    file.write_all(&bytes)?;
                    file.sync_all()?;
                    std::fs::rename(&tmp, &target)
                })();
                if written.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                written
            })
            .await
            .map_err(io::Error::other)?
        })
    }

    fn get<'a>(&'a self, name: &'a MediaName) -> MediaFuture<'a, Option<Bytes>> {
        let path = self.path(name);
        Box::pin(async move {
            match tokio::fs::read(&path).await {
                Ok(bytes) => Ok(Some(Bytes::from(bytes))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::ImageKind;

    #[tokio::test]
    async fn objects_are_written_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsMediaStore::new(dir.path());
        let name = MediaName::original(ImageKind::Jpeg);
        assert_eq!(store.get(&name).await.unwrap(), None);
        store.put(&name, Bytes::from_static(b"abc")).await.unwrap();
        assert_eq!(store.get(&name).await.unwrap().as_deref(), Some(&b"abc"[..]));
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0, "no temp file left behind");
    }
}
