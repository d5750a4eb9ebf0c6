//! Bearer keys: who is calling (the core's [`KeyCache`] verifies the key), with which scopes,
//! and the extractor handlers use.

use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method};

use crate::domain::user::{Actor, Admin, NotAdmin, Scopes};
use crate::error::{ApiError, HttpRefusal};
pub use crate::usecases::people::callers::{CallerInfo, Identity, KeyCache};

/// What a request's `Authorization` header says about its caller (see [`KeyCache`]).
pub async fn identify(keys: &KeyCache, headers: &HeaderMap, client: IpAddr) -> Identity {
    match bearer_token(headers) {
        None => Identity::Anonymous,
        Some(token) => keys.identify(token, client).await,
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
            Some(Identity::Anonymous) => Err(HttpRefusal::MissingBearerToken.into()),
            Some(Identity::Invalid) => Err(HttpRefusal::InvalidToken.into()),
            // The key could not be checked: the database is unavailable (logged where read).
            Some(Identity::Unavailable) => Err(ApiError::unavailable("the API keys could not be read")),
            None => Err(ApiError::Internal(anyhow::anyhow!("authentication gate not installed on this route"))),
        }
    }
}

/// The API's authorisation check: partner admins only; `read` for safe methods, `write`
/// for the rest.
fn authorize(actor: Actor, scopes: Scopes, method: &Method) -> Result<Admin, ApiError> {
    let admin = Admin::check(actor).map_err(|NotAdmin| ApiError::from(HttpRefusal::NotAdmin))?;
    let reading = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if reading && !scopes.read {
        return Err(HttpRefusal::MissingScope("read").into());
    }
    if !reading && !scopes.write {
        return Err(HttpRefusal::MissingScope("write").into());
    }
    Ok(admin)
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
