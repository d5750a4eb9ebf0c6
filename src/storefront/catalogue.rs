//! The catalogue (`/marketplace`) and the brands' pages (`/marketplace/brands/{brand_id}`).

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::{cached, not_found_page, stylesheet_path, unavailable, Head, BASE};
use crate::domain::listing::{Channel, Condition};
use crate::domain::storefront::{
    channel_words, price_param, Accent, CatalogueParams, CatalogueQuery, Count, Sort, MAX_PAGE,
};
use crate::domain::taxonomy::CATEGORIES;
use crate::domain::view::MarketCard;
use crate::state::AppState;
use crate::usecases::storefront::{self, Catalogue, Facets};

/// A listing's card in a grid.
pub struct CardView {
    pub href: String,
    pub title: String,
    pub brand: String,
    pub price: String,
    pub was: Option<String>,
    pub channel: &'static str,
    pub condition: &'static str,
    pub image: Option<String>,
}

impl CardView {
    fn of(card: &MarketCard, media: &str) -> Self {
        let (price, was) = match card.sale_price {
            Some(sale) => (sale.pounds(), Some(card.regular_price.pounds())),
            None => (card.regular_price.pounds(), None),
        };
        Self {
            href: format!("{BASE}/listings/{}", card.id),
            title: card.title.clone(),
            brand: card.brand_name.clone(),
            price,
            was,
            channel: channel_words(card.channel),
            condition: card.condition.words(),
            image: card.cover.as_ref().map(|name| format!("{media}/{name}")),
        }
    }
}

/// Previous and next links of a paged list.
pub struct Pager {
    pub page: u32,
    pub pages: u32,
    pub pages_words: String,
    pub prev: Option<String>,
    pub next: Option<String>,
}

impl Pager {
    fn of(query: &CatalogueQuery, count: Count, href: impl Fn(u32) -> String) -> Self {
        let pages = count.pages();
        let page = query.page;
        let pages_words = match count {
            Count::Exact(_) => pages.to_string(),
            Count::AtLeast(_) => format!("{pages} or more"),
        };
        Self {
            page,
            pages,
            pages_words,
            prev: (page > 1).then(|| href(page - 1)),
            next: (page < pages).then(|| href(page + 1)),
        }
    }
}

/// One choice of a filter's list.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// A filter in use, as a link that removes it.
pub struct Chip {
    pub label: String,
    pub href: String,
}

#[derive(Template)]
#[template(path = "storefront/catalogue.html")]
struct CataloguePage {
    head: Head,
    stylesheet: &'static str,
    heading: String,
    refusal: Option<&'static str>,
    q: String,
    brand_slug: Option<String>,
    categories: Vec<Choice>,
    conditions: Vec<Choice>,
    channels: Vec<Choice>,
    sorts: Vec<Choice>,
    min_price: String,
    max_price: String,
    count: String,
    chips: Vec<Chip>,
    cards: Vec<CardView>,
    pager: Pager,
    empty_title: String,
    empty_text: String,
}

/// `GET /marketplace`.
pub async fn catalogue(State(state): State<AppState>, RawQuery(raw): RawQuery, headers: HeaderMap) -> Response {
    let params = params(raw.as_deref());
    let (query, refusal) = match params.parse() {
        Ok(query) => (query, None),
        Err(refusal) => (CatalogueQuery::default(), Some(refusal.sentence())),
    };
    let catalogue = match storefront::catalogue(&state.core, query).await {
        Ok(catalogue) => catalogue,
        Err(e) => return unavailable(&e),
    };
    let status = if refusal.is_some() || catalogue.unknown_brand { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let refusal = refusal.or(catalogue.unknown_brand.then_some("That brand is not on the marketplace."));
    let page = catalogue_page(&state, &catalogue, refusal);
    cached(&headers, status, &page, &page.head)
}

/// The query string as the catalogue's parameters (the last of a repeated name wins).
fn params(raw: Option<&str>) -> CatalogueParams {
    let mut params = CatalogueParams::default();
    for (name, value) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let slot = match name.as_ref() {
            "q" => &mut params.q,
            "category" => &mut params.category,
            "condition" => &mut params.condition,
            "channel" => &mut params.channel,
            "brand" => &mut params.brand,
            "min_price" => &mut params.min_price,
            "max_price" => &mut params.max_price,
            "sort" => &mut params.sort,
            "page" => &mut params.page,
            _ => continue,
        };
        *slot = Some(value.into_owned());
    }
    params
}

fn catalogue_page(state: &AppState, catalogue: &Catalogue, refusal: Option<&'static str>) -> CataloguePage {
    let query = &catalogue.query;
    let brand = catalogue.brand.as_ref();
    let q = query.words.join(" ");
    let mut what = match query.category {
        Some(category) => category.to_owned(),
        None => "Furniture".to_owned(),
    };
    if let Some(channel) = query.channel {
        what = format!("{} {}", channel_words(channel), what.to_lowercase());
    }
    let heading = match (brand, q.is_empty()) {
        (Some(brand), true) => format!("{what} from {}", brand.name),
        (Some(brand), false) => format!("“{q}” from {}", brand.name),
        (None, false) => format!("Results for “{q}”"),
        (None, true) => what.clone(),
    };
    let base = state.config.marketplace_url();
    let canonical = if query.is_everything() && query.page == 1 { Some(base.to_owned()) } else { None };
    let description = if query.is_everything() {
        "Pre-loved and clearance sofas, armchairs and footstools from the brands that made them, checked and described honestly.".to_owned()
    } else {
        format!("{heading}: {} on the rehome marketplace.", catalogue.count.words())
    };
    let head = Head {
        title: if query.page > 1 {
            format!("{heading} (page {}) · rehome marketplace", query.page)
        } else {
            format!("{heading} · rehome marketplace")
        },
        description,
        canonical,
        og_type: "website",
        image: None,
        // Filtered and paged views are for people; the unfiltered catalogue, the brands'
        // pages and the listings are what a search engine should index.
        noindex: !query.is_everything() || query.page > 1,
        search: q.clone(),
        ..Head::default()
    };
    let facets = catalogue.facets.as_ref();
    let media = super::media_prefix(&state.config);
    let cards: Vec<CardView> = catalogue.cards.iter().map(|c| CardView::of(c, &media)).collect();
    let (empty_title, empty_text) = empty_state(catalogue);
    CataloguePage {
        head,
        stylesheet: stylesheet_path(),
        heading,
        refusal,
        q,
        brand_slug: query.brand.clone(),
        categories: category_choices(query, facets),
        conditions: condition_choices(query, facets),
        channels: channel_choices(query, facets),
        sorts: Sort::ALL
            .iter()
            .map(|s| Choice { value: s.as_str().to_owned(), label: s.words().to_owned(), selected: *s == query.sort })
            .collect(),
        min_price: query.min_price.map(price_param).unwrap_or_default(),
        max_price: query.max_price.map(price_param).unwrap_or_default(),
        count: catalogue.count.words(),
        chips: chips(catalogue),
        pager: Pager::of(query, catalogue.count, |page| query.href(|q| q.page = page)),
        cards,
        empty_title,
        empty_text,
    }
}

/// What an empty result says, and what to try.
fn empty_state(catalogue: &Catalogue) -> (String, String) {
    let query = &catalogue.query;
    if catalogue.unknown_brand {
        return ("No such brand".into(), "The brand in this link is not on the marketplace.".into());
    }
    if query.is_everything() {
        return ("Nothing for sale yet".into(), "New pieces arrive every week: look again soon.".into());
    }
    if !query.words.is_empty() {
        return (
            format!("Nothing matches “{}”", query.words.join(" ")),
            "Check the spelling, use fewer words, or remove a filter below.".into(),
        );
    }
    ("Nothing matches these filters".into(), "Remove a filter to see more.".into())
}

/// A choice's label with its count, when counts are known.
fn counted(label: &str, count: Option<i64>) -> String {
    match count {
        Some(n) => format!("{label} ({n})"),
        None => label.to_owned(),
    }
}

fn category_choices(query: &CatalogueQuery, facets: Option<&Facets>) -> Vec<Choice> {
    CATEGORIES
        .iter()
        .filter_map(|&category| {
            let count = facets.map(|f| f.categories.iter().find(|c| c.value == category).map_or(0, |c| c.count));
            let selected = query.category == Some(category);
            // An empty category is not offered (unless chosen): it would only lead nowhere.
            (selected || count != Some(0)).then(|| Choice {
                value: category.to_owned(),
                label: counted(category, count),
                selected,
            })
        })
        .collect()
}

fn condition_choices(query: &CatalogueQuery, facets: Option<&Facets>) -> Vec<Choice> {
    Condition::ALL
        .iter()
        .map(|&condition| {
            let count = facets.map(|f| f.conditions.iter().find(|c| c.value == condition).map_or(0, |c| c.count));
            Choice {
                value: condition.as_str().to_owned(),
                label: counted(condition.words(), count),
                selected: query.condition == Some(condition),
            }
        })
        .collect()
}

fn channel_choices(query: &CatalogueQuery, facets: Option<&Facets>) -> Vec<Choice> {
    [Channel::Exchange, Channel::Clearance]
        .into_iter()
        .map(|channel| {
            let count = facets.map(|f| f.channels.iter().find(|c| c.value == channel).map_or(0, |c| c.count));
            Choice {
                value: channel.as_str().to_owned(),
                label: counted(channel_words(channel), count),
                selected: query.channel == Some(channel),
            }
        })
        .collect()
}

/// The filters in use, each a link to the same page without it.
fn chips(catalogue: &Catalogue) -> Vec<Chip> {
    let query = &catalogue.query;
    let mut chips = Vec::new();
    if !query.words.is_empty() {
        chips.push(Chip { label: format!("“{}”", query.words.join(" ")), href: query.href(|q| q.words.clear()) });
    }
    if let Some(category) = query.category {
        chips.push(Chip { label: category.to_owned(), href: query.href(|q| q.category = None) });
    }
    if let Some(condition) = query.condition {
        chips.push(Chip { label: condition.words().to_owned(), href: query.href(|q| q.condition = None) });
    }
    if let Some(channel) = query.channel {
        chips.push(Chip { label: channel_words(channel).to_owned(), href: query.href(|q| q.channel = None) });
    }
    if query.brand.is_some() {
        let name = catalogue.brand.as_ref().map_or("This brand".to_owned(), |b| b.name.clone());
        chips.push(Chip { label: name, href: query.href(|q| q.brand = None) });
    }
    match (query.min_price, query.max_price) {
        (Some(min), Some(max)) => chips.push(Chip {
            label: format!("{} to {}", min.pounds(), max.pounds()),
            href: query.href(|q| (q.min_price, q.max_price) = (None, None)),
        }),
        (Some(min), None) => {
            chips.push(Chip { label: format!("From {}", min.pounds()), href: query.href(|q| q.min_price = None) })
        }
        (None, Some(max)) => {
            chips.push(Chip { label: format!("Up to {}", max.pounds()), href: query.href(|q| q.max_price = None) })
        }
        (None, None) => {}
    }
    chips
}

#[derive(Template)]
#[template(path = "storefront/brand.html")]
struct BrandPage {
    head: Head,
    stylesheet: &'static str,
    name: String,
    tagline: String,
    description: String,
    support_email: String,
    support_phone: String,
    support_phone_link: String,
    /// The brand's logo (a public `https` URL of its own).
    logo_url: String,
    accented: bool,
    count: String,
    cards: Vec<CardView>,
    pager: Pager,
    all_href: String,
}

/// `GET /marketplace/brands/{brand_id}`: the brand's public profile and its listings.
pub async fn brand(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let page = params(raw.as_deref()).page.and_then(|p| p.trim().parse::<u32>().ok()).unwrap_or(1);
    let query =
        CatalogueQuery { brand: Some(slug.clone()), page: page.clamp(1, MAX_PAGE), ..CatalogueQuery::default() };
    let catalogue = match storefront::catalogue(&state.core, query).await {
        Ok(catalogue) => catalogue,
        Err(e) => return unavailable(&e),
    };
    let Some(brand) = catalogue.brand.as_ref() else {
        return not_found_page();
    };
    let profile = &brand.profile;
    let accent = Accent::of(&profile.accent_color);
    let style =
        accent.as_ref().map(|a| format!(".brand-head.accented{{background:{};color:{}}}", a.background, a.text));
    let url = format!("{}/brands/{}", state.config.marketplace_url(), brand.slug);
    let description = if profile.tagline.is_empty() {
        format!("Pre-loved and clearance furniture from {}, sold on the rehome marketplace.", brand.name)
    } else {
        format!("{} — {}", brand.name, profile.tagline)
    };
    let head = Head {
        title: format!("{} · rehome marketplace", brand.name),
        description,
        canonical: Some(if catalogue.query.page > 1 { format!("{url}?page={}", catalogue.query.page) } else { url }),
        og_type: "website",
        style,
        image: (!profile.logo_url.is_empty()).then(|| profile.logo_url.clone()),
        image_origin: url::Url::parse(&profile.logo_url).ok().map(|u| u.origin().ascii_serialization()),
        ..Head::default()
    };
    let base = format!("{BASE}/brands/{}", brand.slug);
    let media = super::media_prefix(&state.config);
    let pager =
        Pager::of(&catalogue.query, catalogue.count, |p| if p > 1 { format!("{base}?page={p}") } else { base.clone() });
    let page = BrandPage {
        head,
        stylesheet: stylesheet_path(),
        name: brand.name.clone(),
        tagline: profile.tagline.clone(),
        description: profile.description.clone(),
        support_email: profile.support_email.clone(),
        support_phone: profile.support_phone.clone(),
        support_phone_link: profile.support_phone.chars().filter(|c| c.is_ascii_digit() || *c == '+').collect(),
        logo_url: profile.logo_url.clone(),
        accented: accent.is_some(),
        count: catalogue.count.words(),
        cards: catalogue.cards.iter().map(|c| CardView::of(c, &media)).collect(),
        pager,
        all_href: catalogue.query.href(|q| q.page = 1),
    };
    cached(&headers, StatusCode::OK, &page, &page.head)
}
