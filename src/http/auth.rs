//! Bearer keys: who is calling, with which scopes, and the extractor handlers use.
//!
//! A verified key is cached for a short time (1 s by default) so that the hot path costs
//! no database round trip; revocation therefore takes effect within that time. Expiry is
//! checked on every request against the cached expiry, so it is exact.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method};
use chrono::{DateTime, Utc};

use crate::domain::apikey::PresentedKey;
use crate::domain::clock::Clock;
use crate::domain::user::{Actor, Admin, NotAdmin, Scopes, Via};
use crate::error::ApiError;
use crate::store::{KeyOwner, Store};

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

/// What the gate learned about a request's credentials, left in its extensions.
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

/// An authenticated partner admin whose key has the scope the request's method needs.
/// Extracting it answers 401/403 in the spec's codes otherwise.
#[derive(Debug, Clone)]
pub struct Caller {
    info: Arc<CallerInfo>,
    /// The key's user with this request's client address, as the admin the use cases act
    /// for: the API's authorisation check ([`authorize`]) is the only place that makes it.
    pub admin: Admin,
}

impl Deref for Caller {
    type Target = CallerInfo;
    fn deref(&self) -> &CallerInfo {
        &self.info
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<Identity>() {
            Some(Identity::Key(info)) => {
                let mut actor = info.actor.clone();
                actor.ip = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip());
                let admin = authorize(actor, info.scopes, &parts.method)?;
                Ok(Caller { info: info.clone(), admin })
            }
            Some(Identity::Anonymous) => Err(ApiError::missing_bearer_token()),
            Some(Identity::Invalid) => Err(ApiError::invalid_token()),
            // The key could not be checked: the database is unavailable (logged where read).
            Some(Identity::Unavailable) => Err(ApiError::Outage {
                kind: crate::store::Outage::Unavailable,
                cause: "the API keys could not be read".into(),
            }),
            None => Err(ApiError::Internal(anyhow::anyhow!("authentication gate not installed on this route"))),
        }
    }
}

/// The API's authorisation check: partner admins only; `read` for safe methods, `write`
/// for the rest.
fn authorize(actor: Actor, scopes: Scopes, method: &Method) -> Result<Admin, ApiError> {
    let admin = Admin::check(actor).map_err(|NotAdmin| ApiError::forbidden("Only partner admins may use the API."))?;
    let reading = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if reading && !scopes.read {
        return Err(ApiError::forbidden("This API key does not have the read scope."));
    }
    if !reading && !scopes.write {
        return Err(ApiError::forbidden("This API key does not have the write scope."));
    }
    Ok(admin)
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

    pub async fn identify(&self, headers: &HeaderMap, client: IpAddr) -> Identity {
        let Some(token) = bearer_token(headers) else {
            return Identity::Anonymous;
        };
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

    async fn load(
        &self,
        key: &PresentedKey,
        client: IpAddr,
    ) -> Result<Option<Arc<CallerInfo>>, crate::store::StoreError> {
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
        actor: Actor {
            brand_id: row.brand_id,
            brand_slug: row.brand_slug,
            user_id: row.user_id,
            user_name: row.user_name,
            role,
            via: Via::Key(row.key_id),
            ip: None,
        },
        scopes,
        rate_limit: row.rate_limit.and_then(|n| u32::try_from(n).ok()),
        expires_at: row.expires_at,
    }))
}

/// `None`: no bearer credentials at all. `Some(None)`: a bearer header whose token is unusable.
fn bearer_token(headers: &HeaderMap) -> Option<Option<&str>> {
    let value = headers.get(header::AUTHORIZATION)?;
    let Ok(value) = value.to_str() else {
        return Some(None);
    };
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    Some((!token.is_empty()).then_some(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Some(Some("abc")));
        assert_eq!(bearer_token(&headers("bearer  abc ")), Some(Some("abc")));
    }

    #[test]
    fn other_schemes_count_as_no_bearer_token() {
        assert_eq!(bearer_token(&headers("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn an_empty_bearer_token_is_unusable() {
        assert_eq!(bearer_token(&headers("Bearer")), Some(None));
        assert_eq!(bearer_token(&headers("Bearer   ")), Some(None));
    }
}
