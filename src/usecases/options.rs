//! The listing options of a brand: the fixed taxonomy and its manufacturer brands, kept
//! serialised per brand for a short while.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

// `Bytes`, shared cheaply between requests.
use bytes::Bytes;

use super::Core;
use crate::domain::taxonomy::Options;
use crate::domain::user::Actor;
use crate::store::StoreError;

/// Why the options could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("cannot encode the options: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The brand's options as JSON, from the cache when fresh.
pub async fn options(core: &Core, actor: &Actor) -> Result<Bytes, OptionsError> {
    if let Some(body) = core.options.get(actor.brand_id) {
        return Ok(body);
    }
    let names = core.store.manufacturer_brand_names(actor.brand_id).await?;
    let body = Bytes::from(serde_json::to_vec(&Options::with_brands(names))?);
    core.options.put(actor.brand_id, body.clone());
    Ok(body)
}

/// Each brand's serialised options, kept briefly: the taxonomy is fixed and manufacturer
/// brands change rarely. Writers that add a brand call [`OptionsCache::invalidate`];
/// other nodes see it within the time to live.
pub struct OptionsCache {
    ttl: Duration,
    entries: Mutex<HashMap<i64, (Instant, Bytes)>>,
}

const MAX_CACHED_BRANDS: usize = 10_000;

impl OptionsCache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    fn get(&self, brand_id: i64) -> Option<Bytes> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(&brand_id).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, body)| body.clone())
    }

    fn put(&self, brand_id: i64, body: Bytes) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_CACHED_BRANDS {
            entries.clear();
        }
        entries.insert(brand_id, (Instant::now(), body));
    }

    pub fn invalidate(&self, brand_id: i64) {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).remove(&brand_id);
    }
}
