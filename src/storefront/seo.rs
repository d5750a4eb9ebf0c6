//! What search engines and link previews read: a listing's schema.org `Product`, the
//! sitemap (an index of files past 50,000 listings) and `robots.txt`.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{cached_bytes, not_found_page, unavailable, BASE};
use crate::domain::listing::{Channel, Condition, ListingFields};
use crate::domain::view::SitemapEntry;
use crate::state::AppState;
use crate::usecases::storefront::{self, Sitemap};

/// What a listing's JSON-LD says.
pub struct Product<'a> {
    pub url: &'a str,
    pub fields: &'a ListingFields,
    pub brand: &'a str,
    /// Absolute URLs of the photos.
    pub images: &'a [String],
    /// The description as plain text.
    pub description: &'a str,
    pub sold: bool,
}

/// One schema.org `Product` with its `Offer` (decisions 14.1), as text safe inside a
/// `<script type="application/ld+json">` element: `<`, `>` and `&` are escaped in JSON's own
/// way, so no text of the listing can close the element.
pub fn product(p: &Product<'_>) -> String {
    let fields = p.fields;
    let availability = if p.sold { "https://schema.org/SoldOut" } else { "https://schema.org/InStock" };
    // Clearance is new stock; a like-new clearance piece is new, anything else has been used.
    let condition = match (fields.channel, fields.condition) {
        (Channel::Clearance, Condition::LikeNew) => "https://schema.org/NewCondition",
        _ => "https://schema.org/UsedCondition",
    };
    let mut product = json!({
        "@context": "https://schema.org",
        "@type": "Product",
        "name": fields.title,
        "url": p.url,
        "category": fields.category,
        "itemCondition": condition,
        "brand": {"@type": "Brand", "name": fields.brand.as_deref().unwrap_or(p.brand)},
        "offers": {
            "@type": "Offer",
            "url": p.url,
            "price": fields.price().to_string(),
            "priceCurrency": "GBP",
            "availability": availability,
            "itemCondition": condition,
            "seller": {"@type": "Organization", "name": p.brand},
        },
    });
    if let Value::Object(map) = &mut product {
        if !p.images.is_empty() {
            map.insert("image".into(), json!(p.images));
        }
        if !p.description.is_empty() {
            map.insert("description".into(), json!(clip(p.description, 5_000)));
        }
        if let Some(sku) = &fields.sku {
            map.insert("sku".into(), json!(sku));
        }
        if let Some(colour) = &fields.colour {
            map.insert("color".into(), json!(colour));
        }
        if let Some(fabric) = &fields.fabric {
            map.insert("material".into(), json!(fabric));
        }
    }
    script_safe(&product.to_string())
}

/// JSON text that cannot end a `<script>` element or start a comment in it.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

/// A description's text without its markup, whitespace collapsed.
pub fn plain_text(html: &str) -> String {
    let text = ammonia::Builder::empty().clean(html).to_string();
    let text = text
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, cut at a word with "…" when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end_matches([',', '.', ';', ':', ' ']))
}

/// `GET /marketplace/sitemap.xml`: every catalogue listing's `url`, or an index of files.
pub async fn sitemap(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let sitemap = match storefront::sitemap(&state.core).await {
        Ok(sitemap) => sitemap,
        Err(e) => return unavailable(&e),
    };
    let body = match sitemap {
        Sitemap::Urls(entries) => urlset(state.config.marketplace_url(), &entries),
        Sitemap::Index { files } => {
            let public = state.config.public_url.as_deref().unwrap_or_default();
            let mut xml = String::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
            );
            for n in 1..=files {
                xml.push_str(&format!(
                    "<sitemap><loc>{}</loc></sitemap>\n",
                    xml_text(&format!("{public}{BASE}/sitemaps/{n}.xml"))
                ));
            }
            xml.push_str("</sitemapindex>\n");
            xml
        }
    };
    cached_bytes(&headers, "application/xml; charset=utf-8", body.into_bytes())
}

/// `GET /marketplace/sitemaps/{n}.xml`: one file of a sitemap index.
pub async fn sitemap_file(State(state): State<AppState>, Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some(n) = file.strip_suffix(".xml").and_then(|n| n.parse::<i64>().ok()) else {
        return not_found_page();
    };
    match storefront::sitemap_file(&state.core, n).await {
        Ok(Some(entries)) => cached_bytes(
            &headers,
            "application/xml; charset=utf-8",
            urlset(state.config.marketplace_url(), &entries).into_bytes(),
        ),
        Ok(None) => not_found_page(),
        Err(e) => unavailable(&e),
    }
}

fn urlset(marketplace: &str, entries: &[SitemapEntry]) -> String {
    let mut xml = String::with_capacity(120 * entries.len() + 200);
    xml.push_str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for entry in entries {
        let loc = xml_text(&format!("{marketplace}/listings/{}", entry.id));
        let modified = entry.updated_at.get().format("%Y-%m-%d");
        xml.push_str(&format!("<url><loc>{loc}</loc><lastmod>{modified}</lastmod></url>\n"));
    }
    xml.push_str("</urlset>\n");
    xml
}

fn xml_text(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

/// `GET /robots.txt`: everything public may be crawled but the dashboard and the APIs; the
/// sitemap is named.
pub async fn robots(State(state): State<AppState>) -> Response {
    let public = state.config.public_url.as_deref().unwrap_or_default();
    let body = format!(
        "User-agent: *\nAllow: {BASE}\nDisallow: /dashboard\nDisallow: /v1/\nDisallow: /ops/\n\nSitemap: {public}{BASE}/sitemap.xml\n"
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=60")],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_ld_text_cannot_close_its_script_element() {
        let safe = script_safe(r#"{"name":"</script><script>alert(1)</script> & <!--"}"#);
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'));
        let back: Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["name"], "</script><script>alert(1)</script> & <!--");
    }

    #[test]
    fn descriptions_lose_their_markup_and_are_clipped_at_a_word() {
        assert_eq!(
            plain_text("<p>Solid <b>oak</b> &amp; ash</p>\n<ul><li>Seats 3</li></ul>"),
            "Solid oak & ash Seats 3"
        );
        assert_eq!(clip("A short text", 50), "A short text");
        assert_eq!(clip("Solid oak frame, seats three comfortably", 20), "Solid oak frame…");
    }
}
