//! The listing options of a brand: the fixed taxonomy and its manufacturer brands, kept
//! per brand for a short while (each edge renders them its own way).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Core;
use rehome_domain::taxonomy::Options;
use rehome_domain::user::Actor;
use rehome_store::StoreError;

/// The brand's options, from the cache when fresh.
pub async fn options(core: &Core, actor: &Actor) -> Result<Arc<Options>, StoreError> {
    if let Some(options) = core.options.get(actor.brand_id) {
        return Ok(options);
    }
    let names = core.store.manufacturer_brand_names(actor.brand_id).await?;
    let options = Arc::new(Options::with_brands(names));
    core.options.put(actor.brand_id, options.clone());
    Ok(options)
}

/// Each brand's options, kept briefly: the taxonomy is fixed and manufacturer
/// brands change rarely. Writers that add a brand call [`OptionsCache::invalidate`];
/// other nodes see it within the time to live.
pub struct OptionsCache {
    ttl: Duration,
    entries: Mutex<HashMap<i64, (Instant, Arc<Options>)>>,
}

const MAX_CACHED_BRANDS: usize = 10_000;

impl OptionsCache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    fn get(&self, brand_id: i64) -> Option<Arc<Options>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(&brand_id).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, body)| body.clone())
    }

    fn put(&self, brand_id: i64, options: Arc<Options>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_CACHED_BRANDS {
            entries.clear();
        }
        entries.insert(brand_id, (Instant::now(), options));
    }

    pub fn invalidate(&self, brand_id: i64) {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).remove(&brand_id);
    }
}
