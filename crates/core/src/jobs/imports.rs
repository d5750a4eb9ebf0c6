//! The image import worker: fetches the URLs a listing gave in `images` through the SSRF
//! guard of [`crate::net`] (http/https only, every address checked and pinned, redirects
//! re-checked and capped at 3, connect and total timeouts), reads at most 10 MiB while
//! streaming, checks the type like an upload, and stores the image as a photo of the
//! listing's brand. Failures are written on the listing's `image_imports` entry as a code;
//! passing ones (timeout, connection, 5xx, 429) are retried first.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::{TimeDelta, Utc};
use reqwest::header::CONTENT_LENGTH;
use reqwest::{Method, StatusCode, Url};
use tokio::task::JoinSet;

use super::photo_queue::PhotoJobs;
use super::queue::{finish_round, Failures, Queue, Runner};
use super::retry::{random_unit, Attempts, Backoff, MAX_GAP};
use crate::config::Config;
use crate::media::original::{self, Refusal};
use crate::media::pool::{self, DecodePool};
use crate::media::{sanitize_filename, sniff, ImageKind, MediaName, MediaStore, MAX_IMAGE_BYTES};
use crate::net::{refusal, ClientSettings, Outbound, Redirects, Refused};
use rehome_domain::listing::PhotoSource;
use rehome_store::{ClaimedImport, NewPhoto, Store, StoreError};

/// The `User-Agent` of every import.
pub const USER_AGENT: &str = "rehome-image-import/1.0";
/// Redirects followed, each one re-checked by the guard.
pub const MAX_REDIRECTS: usize = 3;
/// Imports fetched at once by one worker.
const CONCURRENCY: i64 = 4;

#[derive(Debug, Clone)]
pub struct ImportSettings {
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub attempts: u32,
    pub retry_base: Duration,
    pub poll: Duration,
    pub allow_private_network: bool,
}

impl ImportSettings {
    pub fn from_config(config: &Config) -> Self {
        Self {
            connect_timeout: Duration::from_millis(config.image_import_connect_timeout_ms),
            timeout: Duration::from_millis(config.image_import_timeout_ms),
            attempts: config.image_import_attempts.max(1),
            retry_base: Duration::from_millis(config.image_import_retry_base_ms),
            poll: Duration::from_millis(config.photo_poll_ms),
            allow_private_network: config.allow_private_network,
        }
    }

    /// Longer than any fetch plus storing it.
    fn lease(&self) -> TimeDelta {
        TimeDelta::from_std(self.timeout * 2 + Duration::from_secs(10)).unwrap_or(TimeDelta::minutes(2))
    }

    /// Passing failures are retried after the base, four times longer each time, at most
    /// an hour, until the attempts are used.
    pub fn retries(&self) -> Attempts {
        Attempts { backoff: Backoff { base: self.retry_base, factor: 4, max_gap: MAX_GAP }, attempts: self.attempts }
    }
}

/// Why an import failed: the code shown on the listing, and whether to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportFailure {
    pub code: String,
    pub passing: bool,
}

impl ImportFailure {
    fn permanent(code: impl Into<String>) -> Self {
        Self { code: code.into(), passing: false }
    }

    fn passing(code: impl Into<String>) -> Self {
        Self { code: code.into(), passing: true }
    }
}

/// A fetched image whose type and header checked out.
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub kind: ImageKind,
    pub width: u32,
    pub height: u32,
}

pub struct ImportWorker {
    store: Store,
    media: Arc<dyn MediaStore>,
    jobs: PhotoJobs,
    outbound: Outbound,
    settings: ImportSettings,
    owner: String,
    decodes: DecodePool,
}

impl ImportWorker {
    pub fn new(
        store: Store,
        media: Arc<dyn MediaStore>,
        jobs: PhotoJobs,
        settings: ImportSettings,
        decodes: DecodePool,
    ) -> Result<Self, reqwest::Error> {
        let outbound = Outbound::new(ClientSettings {
            user_agent: USER_AGENT.to_owned(),
            connect_timeout: settings.connect_timeout,
            timeout: settings.timeout,
            redirects: Redirects::Follow(MAX_REDIRECTS),
            allow_private_network: settings.allow_private_network,
        })?;
        let owner = format!("imports-{}", uuid::Uuid::new_v4().simple());
        Ok(Self { store, media, jobs, outbound, settings, owner, decodes })
    }

    /// The runner of this worker, woken by [`PhotoJobs::wake_imports`].
    pub fn runner(self) -> Arc<Runner<Self>> {
        let (wake, poll) = (self.jobs.imports.clone(), self.settings.poll);
        Runner::new(self, wake, poll)
    }
}

impl Queue for ImportWorker {
    const NAME: &'static str = "image_imports";

    /// Claims a batch, works it, records it; returns how many were claimed.
    async fn round(self: Arc<Self>, failures: Failures) -> Result<usize, StoreError> {
        let now = Utc::now();
        let lease_until = now + self.settings.lease();
        let max_attempts = i64::from(self.settings.attempts);
        let claimed = self.store.claim_image_imports(&self.owner, now, lease_until, CONCURRENCY, max_attempts).await?;
        let count = claimed.len();
        let mut tasks = JoinSet::new();
        for import in claimed {
            let (worker, failures) = (self.clone(), failures.clone());
            tasks.spawn(async move { worker.import(import, &failures).await });
        }
        finish_round(tasks, Self::NAME, &failures).await;
        Ok(count)
    }

    async fn release(&self) -> Result<(), StoreError> {
        self.store.release_photo_leases(&self.owner).await
    }
}

impl ImportWorker {
    async fn import(&self, import: ClaimedImport, failures: &Failures) {
        let outcome = match fetch(&self.outbound, &import.source_url).await {
            Ok(fetched) => self.keep(&import, fetched).await,
            Err(failure) => Err(failure),
        };
        let recorded = match outcome {
            Ok(()) => Ok(()),
            Err(failure) => {
                let retry_at = failure
                    .passing
                    .then(|| self.settings.retries().next_attempt(import.attempts, Utc::now(), random_unit()))
                    .flatten();
                tracing::info!(image_id = import.id, listing_id = import.listing_id, error = %failure.code,
                    retry = retry_at.is_some(), "image import failed");
                self.store.fail_image_import(&self.owner, import.id, &failure.code, retry_at).await
            }
        };
        if let Err(e) = recorded {
            let what = format!("cannot record the import of image {}; the lease will expire", import.id);
            failures.record(Self::NAME, &what, &e);
        }
    }

    /// Stores a fetched image, cleaned as an upload is ([`original::prepare`]: decoded,
    /// upright, re-encoded without metadata), and records it as the listing's photo.
    async fn keep(&self, import: &ClaimedImport, fetched: Fetched) -> Result<(), ImportFailure> {
        // Within the lease, which also covers the fetch.
        let wait = self.settings.timeout.min(Duration::from_secs(60));
        let _decoding = match pool::cleaning_cost(&fetched.bytes) {
            Some(cost) => {
                Some(self.decodes.admit_within(cost, wait).await.map_err(|_| ImportFailure::passing("server_busy"))?)
            }
            None => None,
        };
        let prepared = tokio::task::spawn_blocking(move || original::prepare(&fetched.bytes)).await.map_err(|e| {
            tracing::error!(error = %e, "preparing an imported image failed");
            ImportFailure::passing("storage_failed")
        })?;
        let fetched = prepared.map_err(|refusal| match refusal {
            Refusal::TooManyPixels { .. } => ImportFailure::permanent("image_too_large"),
            Refusal::Unsupported | Refusal::Undecodable(_) => ImportFailure::permanent("unsupported_mime"),
        })?;
        let name = MediaName::original(fetched.kind);
        let byte_size = fetched.bytes.len() as i64;
        if let Err(e) = self.media.put(&name, Bytes::from(fetched.bytes)).await {
            tracing::error!(error = %e, "cannot store an imported image");
            return Err(ImportFailure::passing("storage_failed"));
        }
        let filename = Url::parse(&import.source_url)
            .ok()
            .and_then(|u| u.path_segments().and_then(|mut s| s.next_back().map(str::to_owned)))
            .filter(|s| !s.is_empty());
        let filename = sanitize_filename(filename.as_deref());
        let photo = NewPhoto {
            brand_id: 0, // the listing's brand, read in the store's transaction
            user_id: None,
            source: PhotoSource::Import,
            name: name.as_str(),
            mime: fetched.kind.mime(),
            filename: &filename,
            byte_size,
            width: i64::from(fetched.width),
            height: i64::from(fetched.height),
        };
        match self.store.finish_image_import(&self.owner, import.id, import.listing_id, photo).await {
            Ok(true) => {
                self.jobs.wake_thumbnails();
                Ok(())
            }
            // The listing's images were replaced meanwhile: nothing to record.
            Ok(false) => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, "cannot record an imported image");
                Err(ImportFailure::passing("storage_failed"))
            }
        }
    }
}

/// Fetches one image URL through the guard, at most 10 MiB, and identifies it.
pub async fn fetch(outbound: &Outbound, source: &str) -> Result<Fetched, ImportFailure> {
    let url = Url::parse(source).map_err(|_| ImportFailure::permanent("url_invalid"))?;
    let request = outbound.request(Method::GET, &url).map_err(|refused| refused_failure(&refused))?;
    let mut response = request.header("accept", "image/*").send().await.map_err(|e| send_failure(&e))?;
    let status = response.status();
    // The guarded client follows redirects to http(s) URLs it allows; one it hands back
    // points somewhere it does not go (`file:`, `ftp:`, …).
    if status.is_redirection() && response.headers().contains_key(reqwest::header::LOCATION) {
        return Err(ImportFailure::permanent("url_refused"));
    }
    if !status.is_success() {
        let code = format!("http_status_{}", status.as_u16());
        let passing = status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS;
        return Err(ImportFailure { code, passing });
    }
    let declared =
        response.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n >= MAX_IMAGE_BYTES as u64) {
        return Err(ImportFailure::permanent("image_too_large"));
    }
    let mut bytes = Vec::with_capacity(declared.map_or(64 * 1024, |n| n as usize));
    while let Some(chunk) = response.chunk().await.map_err(|e| send_failure(&e))? {
        if bytes.len() + chunk.len() >= MAX_IMAGE_BYTES {
            return Err(ImportFailure::permanent("image_too_large"));
        }
        bytes.extend_from_slice(&chunk);
    }
    // Only the header is read: cheap enough for the async thread.
    let (kind, width, height) = sniff::identify(&bytes).ok_or_else(|| ImportFailure::permanent("unsupported_mime"))?;
    if !sniff::within_pixel_budget(width, height) {
        return Err(ImportFailure::permanent("image_too_large"));
    }
    Ok(Fetched { bytes, kind, width, height })
}

fn refused_failure(refused: &Refused) -> ImportFailure {
    match refused {
        Refused::Scheme | Refused::NoHost => ImportFailure::permanent("url_refused"),
        Refused::Address(_) | Refused::NoAddress => ImportFailure::permanent("address_refused"),
    }
}

fn send_failure(error: &reqwest::Error) -> ImportFailure {
    if let Some(refused) = refusal(error) {
        return refused_failure(refused);
    }
    if error.is_redirect() {
        ImportFailure::permanent("too_many_redirects")
    } else if error.is_timeout() {
        ImportFailure::passing("timeout")
    } else if error.is_connect() {
        ImportFailure::passing("connection_failed")
    } else {
        ImportFailure::passing("fetch_failed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_failures_wait_four_times_longer_each_time_up_to_an_hour() {
        let settings = ImportSettings {
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            attempts: 40,
            retry_base: Duration::from_secs(10),
            poll: Duration::from_secs(1),
            allow_private_network: false,
        };
        let backoff = settings.retries().backoff;
        let secs: Vec<u64> = [0, 1, 2, 3, 30].iter().map(|n| backoff.nominal_gap(*n).as_secs()).collect();
        assert_eq!(secs, [10, 10, 40, 160, 3600]);
        let now = Utc::now();
        assert_eq!(settings.retries().next_attempt(2, now, 0.0), Some(now + TimeDelta::seconds(40)));
        assert_eq!(settings.retries().next_attempt(40, now, 0.0), None);
    }

    #[tokio::test]
    async fn non_http_urls_and_private_addresses_are_refused_before_any_connection() {
        let outbound = Outbound::new(ClientSettings {
            user_agent: USER_AGENT.into(),
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            redirects: Redirects::Follow(MAX_REDIRECTS),
            allow_private_network: false,
        })
        .unwrap();
        let code = |r: Result<Fetched, ImportFailure>| r.err().map(|f| f.code);
        assert_eq!(code(fetch(&outbound, "file:///etc/passwd").await).as_deref(), Some("url_refused"));
        assert_eq!(code(fetch(&outbound, "http://127.0.0.1:9/x.jpg").await).as_deref(), Some("address_refused"));
        assert_eq!(code(fetch(&outbound, "http://localhost:9/x.jpg").await).as_deref(), Some("address_refused"));
        assert_eq!(code(fetch(&outbound, "http://[::ffff:10.0.0.1]/x.jpg").await).as_deref(), Some("address_refused"));
        assert_eq!(code(fetch(&outbound, "not a url").await).as_deref(), Some("url_invalid"));
    }
}
