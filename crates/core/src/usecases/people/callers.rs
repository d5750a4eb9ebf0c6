//! Who calls the API: a presented key verified against the stored ones, each verdict cached
//! for a short time (1 s by default) so that the hot path costs no database round trip;
//! revocation therefore takes effect within that time. Expiry is checked on every request
//! against the cached expiry, so it is exact.

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use rehome_domain::apikey::PresentedKey;
use rehome_domain::clock::Clock;
use rehome_domain::user::{Actor, Scopes, Via};
use rehome_domain::view::KeyOwner;
use rehome_store::{Store, StoreError};

/// The user behind a verified API key.
#[derive(Debug)]
pub struct CallerInfo {
    pub key_id: i64,
    /// The key's user and brand: the context the use cases act in.
    pub actor: Actor,
    pub scopes: Scopes,
    pub rate_limit: Option<u32>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// What the gate learned about a request's credentials (the API leaves it in the request's
/// extensions).
#[derive(Debug, Clone)]
pub enum Identity {
    /// No `Authorization: Bearer` header.
    Anonymous,
    /// A bearer token that is malformed, unknown, revoked or expired.
    Invalid,
    Key(Arc<CallerInfo>),
    /// The key store could not be read.
    Unavailable,
}

impl Deref for CallerInfo {
    type Target = Actor;
    fn deref(&self) -> &Actor {
        &self.actor
    }
}

const MAX_CACHED_KEYS: usize = 10_000;
/// How stale a key's stored last-used time may get before a request refreshes it.
const TOUCH_EVERY: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

struct Cached {
    /// `None`: no live key has this secret (cached too, so floods of bad keys stay cheap).
    caller: Option<Arc<CallerInfo>>,
    fetched: Instant,
}

/// Verifies bearer keys against the store, caching each verdict for `ttl`.
pub struct KeyCache {
    store: Store,
    ttl: Duration,
    /// What an expiry is compared with.
    clock: Clock,
    entries: Mutex<HashMap<[u8; 32], Cached>>,
}

impl KeyCache {
    pub fn new(store: Store, ttl: Duration, clock: Clock) -> Self {
        Self { store, ttl, clock, entries: Mutex::new(HashMap::new()) }
    }

    /// Who presents `token` (a request's bearer token, `None` when unusable) from `client`.
    pub async fn identify(&self, token: Option<&str>, client: IpAddr) -> Identity {
        let Some(key) = token.and_then(PresentedKey::parse) else {
            return Identity::Invalid;
        };
        let cached = self.cached(&key.hash);
        let caller = match cached {
            Some(caller) => caller,
            None => match self.load(&key, client).await {
                Ok(caller) => caller,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read API keys");
                    return Identity::Unavailable;
                }
            },
        };
        match caller {
            Some(c) if c.expires_at.is_none_or(|at| at > self.clock.now()) => Identity::Key(c),
            _ => Identity::Invalid,
        }
    }

    fn cached(&self, hash: &[u8; 32]) -> Option<Option<Arc<CallerInfo>>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(hash).filter(|e| e.fetched.elapsed() < self.ttl).map(|e| e.caller.clone())
    }

    async fn load(&self, key: &PresentedKey, client: IpAddr) -> Result<Option<Arc<CallerInfo>>, StoreError> {
        let rows = self.store.keys_by_lookup(key.lookup()).await?;
        let row = rows.into_iter().find(|row| key.matches(&row.secret_hash));
        let caller = row.filter(|row| row.revoked_at.is_none()).and_then(|row| {
            self.touch(&row, client);
            caller_info(row)
        });
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_CACHED_KEYS {
            entries.retain(|_, e| e.fetched.elapsed() < self.ttl);
            if entries.len() >= MAX_CACHED_KEYS {
                entries.clear();
            }
        }
        entries.insert(key.hash, Cached { caller: caller.clone(), fetched: Instant::now() });
        Ok(caller)
    }

    /// Records last use in the background, at most about once a minute per key.
    fn touch(&self, row: &KeyOwner, client: IpAddr) {
        let now = Utc::now();
        if row.last_used_at.is_some_and(|at| now - at < TOUCH_EVERY) {
            return;
        }
        let store = self.store.clone();
        let key_id = row.key_id;
        tokio::spawn(async move {
            if let Err(e) = store.touch_key(key_id, now, &client.to_string()).await {
                tracing::warn!(error = %e, key_id, "cannot record key use");
            }
        });
    }
}

fn caller_info(row: KeyOwner) -> Option<Arc<CallerInfo>> {
    let role = row.role.parse().ok()?;
    let scopes = row.scopes.parse().ok()?;
    Some(Arc::new(CallerInfo {
        key_id: row.key_id,
        actor: Actor::authenticated(
            row.brand_id,
            row.brand_slug,
            row.user_id,
            row.user_name,
            role,
            Via::Key(row.key_id),
            None,
        ),
        scopes,
        rate_limit: row.rate_limit.and_then(|n| u32::try_from(n).ok()),
        expires_at: row.expires_at,
    }))
}
