//! A listing's page, `/marketplace/listings/{id}`: exactly the listing's `url`.

use askama::Template;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use chrono::Utc;

use super::{cached, message, not_found_page, seo, stylesheet_path, unavailable, Head, BASE};
use crate::domain::listing::ListingFields;
use crate::domain::money::Pence;
use crate::domain::storefront::{channel_words, exposure_labels, CatalogueQuery, PageState};
use crate::domain::taxonomy::{CONDITIONS, FAULTS, NONE_VALUE};
use crate::state::AppState;
use crate::store::{MarketListing, MarketPhoto};
use crate::usecases::storefront::{self, BrandFace, ListingPage};

/// A photo of the gallery: its sizes for `srcset`, the largest for the link.
pub struct PhotoView {
    pub src: String,
    pub srcset: String,
    pub full: String,
    pub width: i64,
    pub height: i64,
    pub alt: String,
}

/// The width of a `width`×`height` picture made to fit a `side`×`side` box (never enlarged).
fn fitted_width(width: i64, height: i64, side: i64) -> i64 {
    let longest = width.max(height).max(1);
    if longest <= side {
        width
    } else {
        (width * side + longest / 2) / longest
    }
}

impl PhotoView {
    fn of(photo: &MarketPhoto, media: &str, title: &str, n: usize, of: usize) -> Self {
        let url = |name: &str| format!("{media}/{name}");
        let mut srcset = Vec::new();
        if let Some(medium) = &photo.medium {
            srcset.push(format!("{} {}w", url(medium), fitted_width(photo.width, photo.height, 300)));
        }
        if let Some(large) = &photo.large {
            srcset.push(format!("{} {}w", url(large), fitted_width(photo.width, photo.height, 1024)));
        }
        srcset.push(format!("{} {}w", url(&photo.name), photo.width));
        // The page shows the large size where it exists: it is what the gallery's width needs.
        let src = photo.large.as_deref().or(photo.medium.as_deref()).map_or_else(|| url(&photo.name), url);
        let alt = if of > 1 { format!("{title}, photo {n} of {of}") } else { title.to_owned() };
        Self { src, srcset: srcset.join(", "), full: url(&photo.name), width: photo.width, height: photo.height, alt }
    }
}

#[derive(Template)]
#[template(path = "storefront/listing.html")]
struct ListingPageView {
    head: Head,
    stylesheet: &'static str,
    title: String,
    category: String,
    category_lower: String,
    category_href: String,
    similar_href: String,
    brand_name: String,
    brand_href: String,
    brand_tagline: String,
    support: String,
    sold: bool,
    price: String,
    was: Option<String>,
    saving: String,
    rrp: Option<String>,
    stock: String,
    channel: &'static str,
    condition: &'static str,
    condition_help: &'static str,
    labels: Vec<&'static str>,
    details: Vec<(&'static str, String)>,
    measurements: Vec<(String, String, String, String)>,
    description: Option<String>,
    photos: Vec<PhotoView>,
}

/// `GET /marketplace/listings/{id}`: 200 on sale or sold, 410 trashed, 404 draft or unknown.
/// A view by a person counts in the listing's `view_count`, once a visitor a day.
pub async fn listing(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let Some(id) = id.parse::<i64>().ok().filter(|id| *id > 0) else {
        return not_found_page();
    };
    let page = match storefront::listing_page(&state.core, id).await {
        Ok(page) => page,
        Err(e) => return unavailable(&e),
    };
    let (state_of, listing, brand) = match page {
        ListingPage::Shown { state, listing, brand } => (state, listing, brand),
        ListingPage::Removed => {
            return message(
                StatusCode::GONE,
                "This item has been removed",
                "The seller has taken this item off the marketplace. Similar pieces may still be for sale.",
            )
        }
        ListingPage::NotFound => return not_found_page(),
    };
    if state_of == PageState::OnSale {
        let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
        if let Err(error) = storefront::count_view(&state.core, id, peer.ip(), agent, Utc::now()).await {
            // A view not counted never costs the buyer the page.
            tracing::warn!(%error, listing_id = id, "cannot count a listing view");
        }
    }
    let view = view(&state, &listing, brand.as_deref(), state_of == PageState::Sold);
    cached(&headers, StatusCode::OK, &view, &view.head)
}

fn view(state: &AppState, listing: &MarketListing, brand: Option<&BrandFace>, sold: bool) -> ListingPageView {
    let fields = &listing.record.fields;
    let id = listing.record.id;
    let url = format!("{}/listings/{id}", state.config.marketplace_url());
    let public = state.config.media_url();
    let price = fields.price();
    let (brand_name, brand_tagline) = match brand {
        Some(b) => (b.name.clone(), b.profile.tagline.clone()),
        None => (listing.brand_name.clone(), String::new()),
    };
    let support = brand.map(|b| support_words(&b.profile.support_email, &b.profile.support_phone)).unwrap_or_default();
    let image = listing.photos.first().map(|p| format!("{public}/{}", p.large.as_deref().unwrap_or(&p.name)));
    let images: Vec<String> = listing.photos.iter().map(|p| format!("{public}/{}", p.name)).collect();
    let plain = fields.description.as_deref().map(seo::plain_text).unwrap_or_default();
    let description = if plain.is_empty() {
        format!(
            "{} from {brand_name}: {}, {}, {}.",
            fields.title,
            channel_words(fields.channel).to_lowercase(),
            fields.condition.words().to_lowercase(),
            price.pounds()
        )
    } else {
        seo::clip(&plain, 155)
    };
    let json_ld = seo::product(&seo::Product {
        url: &url,
        fields,
        brand: &brand_name,
        images: &images,
        description: &plain,
        sold,
    });
    let head = Head {
        title: format!("{} · {} · rehome marketplace", fields.title, price.pounds()),
        description,
        canonical: Some(url),
        og_type: "product",
        image,
        extra: vec![("product:price:amount", price.to_string()), ("product:price:currency", "GBP".to_owned())],
        json_ld: Some(json_ld),
        ..Head::default()
    };
    let of = listing.photos.len();
    let media = super::media_prefix(&state.config);
    let photos =
        listing.photos.iter().enumerate().map(|(i, p)| PhotoView::of(p, &media, &fields.title, i + 1, of)).collect();
    let similar =
        CatalogueQuery { category: crate::domain::storefront::category(&fields.category), ..CatalogueQuery::default() };
    ListingPageView {
        head,
        stylesheet: stylesheet_path(),
        title: fields.title.clone(),
        category: fields.category.clone(),
        category_lower: fields.category.to_lowercase(),
        category_href: similar.href(|_| {}),
        similar_href: similar.href(|_| {}),
        brand_href: format!("{BASE}/brands/{}", listing.brand_slug),
        brand_name,
        brand_tagline,
        support,
        sold,
        price: price.pounds(),
        was: fields.sale_price.map(|_| fields.regular_price.pounds()),
        saving: fields
            .sale_price
            .map(|sale| Pence::new(fields.regular_price.get() - sale.get()).pounds())
            .unwrap_or_default(),
        rrp: fields.rrp.filter(|rrp| *rrp > price).map(|rrp| rrp.pounds()),
        stock: match fields.quantity {
            1 => "One available".to_owned(),
            n => format!("{n} available"),
        },
        channel: channel_words(fields.channel),
        condition: fields.condition.words(),
        condition_help: CONDITIONS
            .iter()
            .find(|c| c.value == fields.condition.as_str())
            .and_then(|c| c.help)
            .unwrap_or(""),
        labels: exposure_labels(&fields.exposed_to),
        details: details(fields),
        measurements: fields
            .measurements
            .iter()
            .map(|m| (m.item_type.clone(), m.w_cm.to_string(), m.d_cm.to_string(), m.h_cm.to_string()))
            .collect(),
        description: fields.description.as_deref().map(ammonia::clean).filter(|d| !d.trim().is_empty()),
        photos,
    }
}

/// "help@acme.example or +44 20 7946 0000", from what the brand gives.
fn support_words(email: &str, phone: &str) -> String {
    match (email.is_empty(), phone.is_empty()) {
        (false, false) => format!("{email} or {phone}"),
        (false, true) => email.to_owned(),
        (true, false) => phone.to_owned(),
        (true, true) => String::new(),
    }
}

/// The details a buyer compares, each only when given.
fn details(fields: &ListingFields) -> Vec<(&'static str, String)> {
    let mut details = vec![("Category", fields.category.clone())];
    let optional = [
        ("Made by", &fields.brand),
        ("Colour", &fields.colour),
        ("Material", &fields.fabric),
        ("Age", &fields.age_years),
    ];
    for (term, value) in optional {
        if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
            details.push((term, value.clone()));
        }
    }
    if let Some(from) = fields.available_from.as_ref().and_then(|d| crate::domain::text::parse_date(d)) {
        details.push(("Available from", from.format("%-d %B %Y").to_string()));
    }
    let faults: Vec<&str> = fields
        .faults
        .iter()
        .filter(|f| f.as_str() != NONE_VALUE)
        .map(|f| FAULTS.iter().find(|c| c.value == f.as_str()).map_or(f.as_str(), |c| c.label))
        .collect();
    details.push(("Known faults", if faults.is_empty() { "None".to_owned() } else { faults.join(", ") }));
    details
}

#[cfg(test)]
mod tests {
    use super::fitted_width;

    #[test]
    fn a_size_keeps_the_aspect_and_never_enlarges() {
        assert_eq!(fitted_width(640, 480, 300), 300);
        assert_eq!(fitted_width(480, 640, 300), 225);
        assert_eq!(fitted_width(200, 100, 300), 200);
        assert_eq!(fitted_width(4000, 3000, 1024), 1024);
    }
}
