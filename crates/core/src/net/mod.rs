//! Outbound HTTP that cannot be turned against the service's own network (SSRF).
//!
//! A request may go only to an `http`/`https` URL whose every address is public (see
//! [`rehome_domain::address::is_public`]). Host names are resolved by [`GuardedResolver`], which checks
//! every address before the connection is made and hands only those checked addresses to
//! the connector, so a second DNS answer (rebinding) cannot slip in between the check and
//! the connection. IP-literal hosts never reach a resolver, so [`Outbound::request`]
//! checks them first. Proxies from the environment are ignored: a proxy would connect on
//! our behalf to an address we never checked.
//!
//! `allow_private_network` (`REHOME_ALLOW_PRIVATE_NETWORK`, local testing only) also lets
//! requests reach loopback and private addresses ([`rehome_domain::address::is_private`]); link-local
//! (cloud metadata), unspecified, multicast and reserved addresses, and the scheme rule, stay.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;
use reqwest::{Method, RequestBuilder, Url};

pub use rehome_domain::address::{is_private, is_public};

/// Why an outbound request was refused before any connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("only http and https URLs may be fetched")]
    Scheme,
    #[error("the URL has no host")]
    NoHost,
    #[error("{0} is not a public address")]
    Address(IpAddr),
    #[error("the host name resolved to no address")]
    NoAddress,
}

/// Checks a URL before a request: the scheme, and the address when the host is an IP literal.
pub fn check_url(url: &Url, allow_private_network: bool) -> Result<(), Refused> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused::Scheme);
    }
    let host = url.host_str().ok_or(Refused::NoHost)?;
    // The URL parser has already normalised IPv4 spellings (`0x7f.1`, `2130706433`) to
    // dotted quads and put IPv6 literals in brackets.
    let literal = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    match literal.parse::<IpAddr>() {
        Ok(ip) => check_addr(ip, allow_private_network),
        Err(_) => Ok(()),
    }
}

fn check_addr(ip: IpAddr, allow_private_network: bool) -> Result<(), Refused> {
    if is_public(ip) || (allow_private_network && is_private(ip)) {
        Ok(())
    } else {
        Err(Refused::Address(ip))
    }
}

/// Resolves `host` and checks every address: all must be public, or the host is refused
/// (a name that answers with one private address among public ones is not trusted).
pub async fn resolve_checked(host: &str, allow_private_network: bool) -> Result<Vec<SocketAddr>, ResolveError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await.map_err(ResolveError::Lookup)?.collect();
    if addrs.is_empty() {
        return Err(ResolveError::Refused(Refused::NoAddress));
    }
    for addr in &addrs {
        check_addr(addr.ip(), allow_private_network).map_err(ResolveError::Refused)?;
    }
    Ok(addrs)
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("DNS lookup failed: {0}")]
    Lookup(std::io::Error),
    #[error(transparent)]
    Refused(Refused),
}

/// The DNS resolver of every outbound client: tokio's system lookup, then the address check.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_private_network: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow_private_network;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolve_checked(&host, allow).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// How redirects are treated.
#[derive(Debug, Clone, Copy)]
pub enum Redirects {
    /// A 3xx is returned as the answer (webhooks).
    None,
    /// Follow up to this many, each target checked like the first URL (image imports).
    Follow(usize),
}

/// Settings of an outbound client.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub user_agent: String,
    pub connect_timeout: Duration,
    /// Whole request: connect, send, and the answer up to its last body byte.
    pub timeout: Duration,
    pub redirects: Redirects,
    pub allow_private_network: bool,
}

/// A reqwest client behind the guard. The only way to start a request checks the URL.
#[derive(Debug, Clone)]
pub struct Outbound {
    client: reqwest::Client,
    allow_private_network: bool,
}

impl Outbound {
    pub fn new(settings: ClientSettings) -> Result<Self, reqwest::Error> {
        let allow = settings.allow_private_network;
        let redirect = match settings.redirects {
            Redirects::None => redirect::Policy::none(),
            Redirects::Follow(max) => redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > max {
                    attempt.error("too many redirects")
                } else if let Err(refused) = check_url(attempt.url(), allow) {
                    attempt.error(refused)
                } else {
                    attempt.follow()
                }
            }),
        };
        let client = reqwest::Client::builder()
            .user_agent(settings.user_agent)
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .redirect(redirect)
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver { allow_private_network: allow }))
            .pool_idle_timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self { client, allow_private_network: allow })
    }

    /// A request to `url`, refused when the scheme or an IP-literal host is not allowed.
    pub fn request(&self, method: Method, url: &Url) -> Result<RequestBuilder, Refused> {
        check_url(url, self.allow_private_network)?;
        Ok(self.client.request(method, url.clone()))
    }
}

/// The [`Refused`] somewhere in an error's source chain, if the guard caused it.
pub fn refusal<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Some(refused);
        }
        if let Some(ResolveError::Refused(refused)) = e.downcast_ref::<ResolveError>() {
            return Some(refused);
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn only_http_and_https_urls_pass() {
        assert_eq!(check_url(&url("ftp://example.com/x"), true), Err(Refused::Scheme));
        assert_eq!(check_url(&url("file:///etc/passwd"), true), Err(Refused::Scheme));
        assert_eq!(check_url(&url("https://example.com/hook"), false), Ok(()));
        assert_eq!(check_url(&url("http://example.com/hook"), false), Ok(()));
    }

    #[test]
    fn ip_literal_hosts_are_checked_in_every_spelling() {
        for text in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]:8080/",
            "http://[fd00::1]/",
        ] {
            assert!(matches!(check_url(&url(text), false), Err(Refused::Address(_))), "{text} must be refused");
            assert_eq!(check_url(&url(text), true), Ok(()), "{text} is allowed on a private network");
        }
        for text in ["https://169.254.169.254/latest/meta-data", "http://0.0.0.0:80/", "http://[fe80::1]/"] {
            assert!(matches!(check_url(&url(text), true), Err(Refused::Address(_))), "{text} is never allowed");
        }
        assert_eq!(check_url(&url("https://8.8.8.8/"), false), Ok(()));
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_unless_private_networks_are_allowed() {
        match resolve_checked("localhost", false).await {
            Err(ResolveError::Refused(Refused::Address(ip))) => assert!(ip.is_loopback()),
            other => panic!("localhost must be refused, got {other:?}"),
        }
        assert!(resolve_checked("localhost", true).await.is_ok());
    }

    #[tokio::test]
    async fn the_client_refuses_before_connecting_and_the_refusal_is_recognisable() {
        let settings = ClientSettings {
            user_agent: "test".into(),
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            redirects: Redirects::None,
            allow_private_network: false,
        };
        let outbound = Outbound::new(settings).unwrap();
        assert!(matches!(outbound.request(Method::GET, &url("http://127.0.0.1:9/")), Err(Refused::Address(_))));
        let error = outbound.request(Method::GET, &url("http://localhost:9/")).unwrap().send().await.unwrap_err();
        assert!(matches!(refusal(&error), Some(Refused::Address(_))), "{error:?}");
    }
}
