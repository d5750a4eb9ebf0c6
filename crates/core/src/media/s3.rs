//! The S3-compatible media store: each object is `<prefix>/<name>` in one bucket, on AWS
//! or any server speaking its API (MinIO, R2, Ceph…), through `object_store`.

use std::fmt;
use std::io;
use std::time::Duration;

use anyhow::{bail, Context};
use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, ClientOptions, ObjectStore, ObjectStoreExt, PutOptions, PutPayload, RetryConfig,
};

use super::{MediaFuture, MediaName, MediaStore, CACHE_CONTROL};
use crate::config::Config;

pub struct S3MediaStore {
    bucket: AmazonS3,
    bucket_name: String,
    /// The root path when there is no prefix.
    prefix: Path,
}

impl S3MediaStore {
    /// The store of `REHOME_S3_*`; builds the client only (no request is made).
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let Some(bucket_name) = config.s3_bucket.as_deref().map(str::trim).filter(|b| !b.is_empty()) else {
            bail!("REHOME_MEDIA_STORE=s3 needs REHOME_S3_BUCKET");
        };
        let prefix = key_prefix(config.s3_prefix.as_deref())?;
        // A plain-http endpoint is only ever one the operator wrote down.
        let options = ClientOptions::new()
            .with_allow_http(config.s3_endpoint.as_deref().is_some_and(|e| e.starts_with("http://")));
        // An upload waits on its put: a few quick retries, not object_store's 3 minutes.
        let retry = RetryConfig { max_retries: 3, retry_timeout: Duration::from_secs(30), ..RetryConfig::default() };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket_name)
            .with_region(&config.s3_region)
            .with_client_options(options)
            .with_retry(retry);
        if let Some(endpoint) = &config.s3_endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        match (&config.s3_access_key_id, &config.s3_secret_access_key) {
            (Some(id), Some(secret)) => {
                builder = builder.with_access_key_id(id).with_secret_access_key(secret.expose());
            }
            (None, None) => {}
            _ => bail!("REHOME_S3_ACCESS_KEY_ID and REHOME_S3_SECRET_ACCESS_KEY must be given together"),
        }
        let bucket = builder.build().context("cannot set up the S3 media store")?;
        Ok(Self { bucket, bucket_name: bucket_name.to_owned(), prefix })
    }

    fn key(&self, name: &MediaName) -> Path {
        self.prefix.clone().join(name.as_str())
    }
}

/// `REHOME_S3_PREFIX` without its outer slashes; empty or absent is the bucket's root.
fn key_prefix(given: Option<&str>) -> anyhow::Result<Path> {
    let trimmed = given.unwrap_or("").trim().trim_matches('/');
    Path::parse(trimmed).with_context(|| format!("REHOME_S3_PREFIX '{trimmed}' is not a valid object key prefix"))
}

/// Only the bucket and prefix: the client holds the credentials.
impl fmt::Debug for S3MediaStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3MediaStore")
            .field("bucket", &self.bucket_name)
            .field("prefix", &self.prefix.as_ref())
            .finish()
    }
}

impl MediaStore for S3MediaStore {
    /// A single PUT: S3 never shows a partly written object. The headers are those of the
    /// media route, for clients that fetch from the bucket (`REHOME_MEDIA_PUBLIC_URL`).
    fn put<'a>(&'a self, name: &'a MediaName, bytes: Bytes) -> MediaFuture<'a, ()> {
        let headers =
            Attributes::from_iter([(Attribute::ContentType, name.mime()), (Attribute::CacheControl, CACHE_CONTROL)]);
        Box::pin(async move {
            let payload = PutPayload::from(bytes);
            self.bucket
                .put_opts(&self.key(name), payload, PutOptions::from(headers))
                .await
                .map_err(io::Error::other)?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, name: &'a MediaName) -> MediaFuture<'a, Option<Bytes>> {
        Box::pin(async move {
            match self.bucket.get(&self.key(name)).await {
                Ok(found) => found.bytes().await.map(Some).map_err(io::Error::other),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(io::Error::other(e)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MediaStoreKind;
    use crate::media::ImageKind;

    fn store(prefix: Option<&str>) -> anyhow::Result<S3MediaStore> {
        S3MediaStore::from_config(&Config {
            media_store: MediaStoreKind::S3,
            s3_bucket: Some("photos".into()),
            s3_endpoint: Some("http://127.0.0.1:9".into()),
            s3_access_key_id: Some("AKIDEXAMPLE".into()),
            s3_secret_access_key: Some("the-secret-key".into()),
            s3_prefix: prefix.map(str::to_owned),
            ..Config::default()
        })
    }

    #[test]
    fn objects_are_keyed_by_name_under_the_optional_prefix() {
        let name = MediaName::original(ImageKind::Png);
        assert_eq!(store(None).unwrap().key(&name).as_ref(), name.as_str());
        assert_eq!(store(Some("")).unwrap().key(&name).as_ref(), name.as_str());
        assert_eq!(store(Some("rehome/media")).unwrap().key(&name).as_ref(), format!("rehome/media/{name}"));
        assert_eq!(store(Some("/rehome/")).unwrap().key(&name).as_ref(), format!("rehome/{name}"));
        assert!(store(Some("a//b")).is_err());
        assert!(store(Some("a/../b")).is_err());
    }

    #[test]
    fn debug_shows_the_bucket_but_never_the_secret() {
        let printed = format!("{:?}", store(Some("p")).unwrap());
        assert!(printed.contains("photos") && !printed.contains("the-secret-key"), "{printed}");
    }
}
