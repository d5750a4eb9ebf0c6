//! The storefront over real HTTP (decisions 14.1, 14.2, 14.7): the catalogue and its
//! filters, a listing's page in every state, brands' pages, the sitemap, views, caching and
//! the per-address limit; on whichever backend the suite runs.

mod catalogue;
pub mod checkout;
mod pages;
mod payments;
mod payouts;
mod views;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::helpers::{json, Partner, TestApp};

/// An answer's status, headers and text.
pub struct Page {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// The ids of the listing cards (and other listing links) on the page, in order.
    pub fn listing_ids(&self) -> Vec<i64> {
        let link = regex::Regex::new(r#"<li class="card">\s*<a href="/marketplace/listings/(\d+)""#).unwrap();
        link.captures_iter(&self.body).map(|c| c[1].parse().unwrap()).collect()
    }

    /// The page's one JSON-LD block, parsed.
    pub fn json_ld(&self) -> Value {
        let block = regex::Regex::new(r#"<script type="application/ld\+json">(.*?)</script>"#).unwrap();
        let found: Vec<_> = block.captures_iter(&self.body).collect();
        assert_eq!(found.len(), 1, "one JSON-LD block");
        serde_json::from_str(&found[0][1]).expect("JSON-LD parses")
    }
}

/// GETs `path` as a browser of `agent` would.
pub async fn get_as(app: &TestApp, path: &str, agent: &str) -> Page {
    let response = app.client.get(app.url(path)).header("user-agent", agent).send().await.expect("storefront request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Page { status, headers, body: response.text().await.expect("page text") }
}

pub const BROWSER: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1";

pub async fn page(app: &TestApp, path: &str) -> Page {
    get_as(app, path, BROWSER).await
}

/// The listing's detail through the partner API.
pub async fn detail(app: &TestApp, partner: &Partner, id: i64) -> Value {
    json(app.get(&format!("/v1/listings/{id}"), &partner.key).await).await
}

/// The path of a listing's `url` (the storefront's own address, with the default setting).
pub async fn url_path(app: &TestApp, partner: &Partner, id: i64) -> String {
    let url = detail(app, partner, id).await["url"].as_str().unwrap().to_owned();
    let path = url.strip_prefix(&app.base).unwrap_or_else(|| panic!("{url} is under {}", app.base)).to_owned();
    assert_eq!(path, format!("/marketplace/listings/{id}"), "the listing's url is its page");
    path
}
