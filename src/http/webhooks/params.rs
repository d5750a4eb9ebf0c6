//! Reading the PATCH body and the delivery-log query, and checking a webhook destination.

use std::time::Duration;

use reqwest::Url;
use serde_json::{Map, Value};

use crate::domain::FieldError;
use crate::error::ApiError;
use crate::http::query::{Page, QueryParams};
use crate::net::{self, ResolveError};

const MAX_URL_LEN: usize = 2048;
/// How long configuration waits for DNS before accepting a name it could not resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// A PATCH body, parsed: the URL (syntax and scheme checked) and the enabled flag.
#[derive(Debug)]
pub struct WebhookPatch {
    pub url: Option<Url>,
    pub enabled: Option<bool>,
}

impl WebhookPatch {
    pub fn parse(body: &Map<String, Value>, allow_http: bool) -> Result<Self, Vec<FieldError>> {
        let mut errors: Vec<FieldError> = body
            .keys()
            .filter(|k| !matches!(k.as_str(), "url" | "enabled"))
            .map(|k| FieldError::of(k, "unknown"))
            .collect();
        let url = match body.get("url") {
            None => None,
            Some(Value::String(s)) if s.trim().is_empty() => {
                errors.push(FieldError::of("url", "required"));
                None
            }
            Some(Value::String(s)) if s.trim().chars().count() > MAX_URL_LEN => {
                errors.push(FieldError::of("url", "too_long"));
                None
            }
            Some(Value::String(s)) => match parse_url(s.trim(), allow_http) {
                Some(url) => Some(url),
                None => {
                    errors.push(FieldError::of("url", "invalid"));
                    None
                }
            },
            Some(_) => {
                errors.push(FieldError::of("url", "invalid"));
                None
            }
        };
        let enabled = match body.get("enabled") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                errors.push(FieldError::of("enabled", "invalid"));
                None
            }
        };
        if errors.is_empty() {
            Ok(Self { url, enabled })
        } else {
            Err(errors)
        }
    }
}

/// An absolute `https` (or, when allowed, `http`) URL with a host and no credentials.
fn parse_url(text: &str, allow_http: bool) -> Option<Url> {
    let url = Url::parse(text).ok()?;
    let scheme_ok = url.scheme() == "https" || (allow_http && url.scheme() == "http");
    let host_ok = url.host_str().is_some_and(|h| !h.is_empty());
    (scheme_ok && host_ok && url.username().is_empty() && url.password().is_none()).then_some(url)
}

/// Refuses a URL whose host is, or resolves to, a non-public address. A name that does not
/// resolve now is accepted: DNS may be set up later, and every delivery checks again.
pub async fn check_destination(url: &Url, allow_private_network: bool) -> Result<(), ApiError> {
    let invalid = || ApiError::field("url", "url_invalid");
    net::check_url(url, allow_private_network).map_err(|_| invalid())?;
    if allow_private_network {
        return Ok(());
    }
    let Some(host) = url.host_str().filter(|h| !h.starts_with('[') && h.parse::<std::net::IpAddr>().is_err()) else {
        return Ok(());
    };
    match tokio::time::timeout(RESOLVE_TIMEOUT, net::resolve_checked(host, false)).await {
        Ok(Err(ResolveError::Refused(_))) => Err(invalid()),
        _ => Ok(()),
    }
}

/// The list query: `status` (pending|delivered|dead|any, default any), `page`, `per_page`.
pub struct DeliveryParams {
    pub status: Option<&'static str>,
    pub page: Page,
}

impl DeliveryParams {
    pub fn parse(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut query = QueryParams::new(pairs);
        let status = query.choice(
            "status",
            None,
            &[("any", None), ("pending", Some("pending")), ("delivered", Some("delivered")), ("dead", Some("dead"))],
        );
        let page = query.page();
        query.finish()?;
        Ok(Self { status, page })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(body: Value, allow_http: bool) -> Vec<String> {
        match WebhookPatch::parse(body.as_object().unwrap(), allow_http) {
            Ok(_) => vec![],
            Err(errors) => errors.into_iter().map(|e| e.code).collect(),
        }
    }

    #[test]
    fn a_webhook_url_must_be_absolute_https_without_credentials() {
        assert!(codes(json!({"url": "https://hooks.example.com/x", "enabled": true}), false).is_empty());
        assert_eq!(codes(json!({"url": "http://hooks.example.com/x"}), false), ["url_invalid"]);
        assert!(codes(json!({"url": "http://hooks.example.com/x"}), true).is_empty());
        assert_eq!(codes(json!({"url": "ftp://hooks.example.com/x"}), true), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "/relative"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "https://user:pw@hooks.example.com/"}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": 42}), false), ["url_invalid"]);
        assert_eq!(codes(json!({"url": "  "}), false), ["url_required"]);
        let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(codes(json!({ "url": long }), false), ["url_too_long"]);
    }

    #[test]
    fn enabled_must_be_a_boolean_and_unknown_fields_are_named() {
        assert_eq!(codes(json!({"enabled": "yes"}), false), ["enabled_invalid"]);
        assert_eq!(codes(json!({"enabled": false, "secret": "x"}), false), ["secret_unknown"]);
    }

    #[tokio::test]
    async fn private_destinations_are_refused_at_configuration() {
        for url in ["https://127.0.0.1/x", "https://[::1]/x", "https://10.1.2.3/x", "https://localhost/x"] {
            let url = Url::parse(url).unwrap();
            assert!(check_destination(&url, false).await.is_err(), "{url}");
            assert!(check_destination(&url, true).await.is_ok(), "{url}");
        }
    }
}
