//! The storefront's rules (decisions 14): what a buyer may ask the catalogue for, what a
//! listing page shows in which state, who counts as a visitor, and which accent colours
//! can be read. No HTTP, no SQL.

use super::listing::{Channel, Condition, ListingQuery, ListingStatus};
use super::money::Pence;
use super::taxonomy::CATEGORIES;
use super::wire::wire_names;

/// Listings on one catalogue or brand page.
pub const PAGE_SIZE: u32 = 24;
/// The deepest catalogue page: past it a buyer is asked to narrow the search (a page that
/// deep skips thousands of index entries, and nobody reads that far).
pub const MAX_PAGE: u32 = 100;
/// Counts under a search or a price range are exact up to this, then shown as "1,000+":
/// counting further would read every match.
pub const COUNT_CAP: i64 = 1_000;
/// Listing URLs in one sitemap file (the protocol's limit); more go into a sitemap index.
pub const SITEMAP_URLS: i64 = 50_000;

/// The catalogue's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    #[default]
    Newest,
    PriceAsc,
    PriceDesc,
}

wire_names!(Sort { Newest => "newest", PriceAsc => "price_asc", PriceDesc => "price_desc" });

impl Sort {
    pub fn words(self) -> &'static str {
        match self {
            Self::Newest => "Newest",
            Self::PriceAsc => "Lowest price",
            Self::PriceDesc => "Highest price",
        }
    }
}

/// The channel as a buyer reads it.
pub fn channel_words(channel: Channel) -> &'static str {
    match channel {
        Channel::Exchange => "Pre-loved",
        Channel::Clearance => "Clearance",
    }
}

/// What a buyer asked the catalogue for, every value checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogueQuery {
    /// The words of `q` (decisions 11.2): each must appear in the title or the SKU.
    pub words: Vec<String>,
    /// A taxonomy category, in its spelling.
    pub category: Option<&'static str>,
    pub condition: Option<Condition>,
    pub channel: Option<Channel>,
    /// A brand's slug (the API's `brand_id`).
    pub brand: Option<String>,
    pub min_price: Option<Pence>,
    pub max_price: Option<Pence>,
    pub sort: Sort,
    /// From 1.
    pub page: u32,
}

/// A catalogue parameter a buyer cannot have meant; the page says which, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogueRefusal {
    Search,
    Category,
    Condition,
    Channel,
    Price,
    PriceRange,
    Sort,
    Page,
}

impl CatalogueRefusal {
    /// The sentence the page shows.
    pub fn sentence(self) -> &'static str {
        match self {
            Self::Search => "Search with up to 10 words and 200 characters.",
            Self::Category => "That category does not exist: choose one from the list.",
            Self::Condition => "That condition does not exist: choose one from the list.",
            Self::Channel => "Choose pre-loved or clearance.",
            Self::Price => "Give prices in pounds, such as 250 or 99.50.",
            Self::PriceRange => "The lowest price must not be above the highest.",
            Self::Sort => "Sort by newest or by price.",
            Self::Page => "That page does not exist: narrow your search to see more.",
        }
    }
}

/// The raw query string of a catalogue page (every value as text; blank means unset).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct CatalogueParams {
    pub q: Option<String>,
    pub category: Option<String>,
    pub condition: Option<String>,
    pub channel: Option<String>,
    pub brand: Option<String>,
    pub min_price: Option<String>,
    pub max_price: Option<String>,
    pub sort: Option<String>,
    pub page: Option<String>,
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl CatalogueParams {
    /// The query these parameters ask for, or the first one that cannot be read.
    pub fn parse(&self) -> Result<CatalogueQuery, CatalogueRefusal> {
        let words = match given(&self.q) {
            Some(q) => ListingQuery::search_words(q).ok_or(CatalogueRefusal::Search)?,
            None => Vec::new(),
        };
        let category = match given(&self.category) {
            Some(c) => Some(category(c).ok_or(CatalogueRefusal::Category)?),
            None => None,
        };
        let condition = match given(&self.condition) {
            Some(c) => Some(c.parse().map_err(|_| CatalogueRefusal::Condition)?),
            None => None,
        };
        let channel = match given(&self.channel) {
            Some(c) => Some(c.parse().map_err(|_| CatalogueRefusal::Channel)?),
            None => None,
        };
        let price = |text: Option<&str>| -> Result<Option<Pence>, CatalogueRefusal> {
            match text {
                Some(t) => {
                    Pence::from_gbp_text(t.trim_start_matches('£')).map(Some).map_err(|_| CatalogueRefusal::Price)
                }
                None => Ok(None),
            }
        };
        let (min_price, max_price) = (price(given(&self.min_price))?, price(given(&self.max_price))?);
        if let (Some(min), Some(max)) = (min_price, max_price) {
            if min > max {
                return Err(CatalogueRefusal::PriceRange);
            }
        }
        let sort = match given(&self.sort) {
            Some(s) => s.parse().map_err(|_| CatalogueRefusal::Sort)?,
            None => Sort::Newest,
        };
        let page = match given(&self.page) {
            Some(p) => p.parse::<u32>().ok().filter(|p| (1..=MAX_PAGE).contains(p)).ok_or(CatalogueRefusal::Page)?,
            None => 1,
        };
        let brand = given(&self.brand).map(str::to_owned);
        Ok(CatalogueQuery { words, category, condition, channel, brand, min_price, max_price, sort, page })
    }
}

/// The taxonomy's spelling of a category named in any case.
pub fn category(name: &str) -> Option<&'static str> {
    CATEGORIES.iter().copied().find(|c| c.eq_ignore_ascii_case(name))
}

impl CatalogueQuery {
    /// The query string of this query with `change` applied, for links that keep the other
    /// filters (a facet, a page, a sort). Pages start again at 1 unless `change` sets one.
    pub fn href(&self, change: impl FnOnce(&mut CatalogueQuery)) -> String {
        let mut next = CatalogueQuery { page: 1, ..self.clone() };
        change(&mut next);
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if !next.words.is_empty() {
            pairs.push(("q", next.words.join(" ")));
        }
        if let Some(c) = next.category {
            pairs.push(("category", c.to_owned()));
        }
        if let Some(c) = next.condition {
            pairs.push(("condition", c.as_str().to_owned()));
        }
        if let Some(c) = next.channel {
            pairs.push(("channel", c.as_str().to_owned()));
        }
        if let Some(b) = &next.brand {
            pairs.push(("brand", b.clone()));
        }
        if let Some(p) = next.min_price {
            pairs.push(("min_price", price_param(p)));
        }
        if let Some(p) = next.max_price {
            pairs.push(("max_price", price_param(p)));
        }
        if next.sort != Sort::Newest {
            pairs.push(("sort", next.sort.as_str().to_owned()));
        }
        if next.page > 1 {
            pairs.push(("page", next.page.to_string()));
        }
        if pairs.is_empty() {
            return "/marketplace".to_owned();
        }
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in &pairs {
            query.append_pair(name, value);
        }
        format!("/marketplace?{}", query.finish())
    }

    /// True when the counts can come from the kept counts (exact, no listing read): no words
    /// and no price range.
    pub fn counted_exactly(&self) -> bool {
        self.words.is_empty() && self.min_price.is_none() && self.max_price.is_none()
    }

    /// True when nothing narrows the catalogue.
    pub fn is_everything(&self) -> bool {
        self.counted_exactly()
            && self.category.is_none()
            && self.condition.is_none()
            && self.channel.is_none()
            && self.brand.is_none()
    }
}

/// A price as a buyer types it and as a query parameter: whole pounds without decimals
/// (`500`), else `99.50`.
pub fn price_param(p: Pence) -> String {
    if p.get() % 100 == 0 {
        (p.get() / 100).to_string()
    } else {
        p.to_string()
    }
}

/// How many listings match: exact, or at least [`COUNT_CAP`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Exact(i64),
    AtLeast(i64),
}

impl Count {
    /// From a count that stopped at `COUNT_CAP + 1`.
    pub fn capped(n: i64) -> Self {
        if n > COUNT_CAP {
            Self::AtLeast(COUNT_CAP)
        } else {
            Self::Exact(n)
        }
    }

    /// "1 piece", "1,250 pieces", "1,000+ pieces".
    pub fn words(self) -> String {
        match self {
            Self::Exact(1) => "1 piece".to_owned(),
            Self::Exact(n) => format!("{} pieces", super::money::thousands(&n.to_string())),
            Self::AtLeast(n) => format!("{}+ pieces", super::money::thousands(&n.to_string())),
        }
    }

    /// The pages these results fill (an estimate's pages reach at most [`MAX_PAGE`]).
    pub fn pages(self) -> u32 {
        let n = match self {
            Self::Exact(n) => n,
            Self::AtLeast(_) => i64::from(MAX_PAGE) * i64::from(PAGE_SIZE),
        };
        let pages = (n + i64::from(PAGE_SIZE) - 1) / i64::from(PAGE_SIZE);
        u32::try_from(pages).unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE)
    }
}

/// What a listing's page is, by the listing's state (decisions 14.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    /// On sale: 200 with a way to buy.
    OnSale,
    /// Closed or sold out: 200, marked sold, no way to buy.
    Sold,
    /// Trashed: 410.
    Removed,
    /// Draft (or unknown): 404.
    Hidden,
}

impl PageState {
    pub fn of(status: ListingStatus, quantity: i64, trashed: bool) -> Self {
        if trashed {
            return Self::Removed;
        }
        match status {
            ListingStatus::Draft => Self::Hidden,
            ListingStatus::Closed => Self::Sold,
            ListingStatus::Active if quantity <= 0 => Self::Sold,
            ListingStatus::Active => Self::OnSale,
        }
    }
}

/// The buyer-facing labels of `exposed_to` (decisions 14.1): "Pet free" unless dogs or cats
/// are named, "Smoke free" unless smoke is; `None` (or nothing) means both.
pub fn exposure_labels(exposed_to: &[String]) -> Vec<&'static str> {
    let named = |v: &str| exposed_to.iter().any(|e| e.eq_ignore_ascii_case(v));
    let mut labels = Vec::new();
    if !named("Dogs") && !named("Cats") {
        labels.push("Pet free");
    }
    if !named("Smoke") {
        labels.push("Smoke free");
    }
    labels
}

/// A user agent that says it is a robot (crawlers, link previews, page auditors): its page
/// views are not counted (decisions 14.2).
pub fn is_bot(user_agent: &str) -> bool {
    const MARKS: [&str; 8] =
        ["bot", "crawl", "spider", "slurp", "facebookexternalhit", "preview", "lighthouse", "archiver"];
    let agent = user_agent.to_ascii_lowercase();
    MARKS.iter().any(|mark| agent.contains(mark))
}

/// A `#RRGGBB` colour's channels.
fn rgb(hex: &str) -> Option<[u8; 3]> {
    let hex = hex.strip_prefix('#')?;
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some([channel(0)?, channel(2)?, channel(4)?])
}

/// WCAG 2 relative luminance.
fn luminance([r, g, b]: [u8; 3]) -> f64 {
    let linear = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
}

/// WCAG 2 contrast ratio of two colours (1 to 21).
pub fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    let (light, dark) = if la > lb { (la, lb) } else { (lb, la) };
    (light + 0.05) / (dark + 0.05)
}

/// How a brand's accent colour is used on its page: as the band behind its name with the
/// text colour that reads on it (at least 4.5:1, WCAG AA for body text), or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accent {
    /// `#RRGGBB`.
    pub background: String,
    /// `#FFFFFF` or `#1A1A1A`.
    pub text: &'static str,
}

pub const AA_CONTRAST: f64 = 4.5;

impl Accent {
    /// The accent, when white or near-black text reads on it; `None` for a colour no text
    /// reads on (mid greys) or no colour.
    pub fn of(colour: &str) -> Option<Self> {
        let colour = rgb(colour)?;
        let (white, ink) = (contrast(colour, [255, 255, 255]), contrast(colour, [0x1a, 0x1a, 0x1a]));
        let text = if white >= ink { "#FFFFFF" } else { "#1A1A1A" };
        (white.max(ink) >= AA_CONTRAST)
            .then(|| Self { background: format!("#{:02X}{:02X}{:02X}", colour[0], colour[1], colour[2]), text })
    }
}

/// The day (UTC) a view is counted in, `YYYY-MM-DD`.
pub fn view_day(now: chrono::DateTime<chrono::Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> CatalogueParams {
        let mut p = CatalogueParams::default();
        for (k, v) in pairs {
            let v = Some((*v).to_owned());
            match *k {
                "q" => p.q = v,
                "category" => p.category = v,
                "condition" => p.condition = v,
                "channel" => p.channel = v,
                "brand" => p.brand = v,
                "min_price" => p.min_price = v,
                "max_price" => p.max_price = v,
                "sort" => p.sort = v,
                "page" => p.page = v,
                _ => unreachable!(),
            }
        }
        p
    }

    #[test]
    fn a_catalogue_query_reads_every_filter_and_refuses_what_cannot_be_meant() {
        let q = params(&[
            ("q", " oak  sofa "),
            ("category", "corner sofas"),
            ("condition", "like-new"),
            ("channel", "exchange"),
            ("min_price", "£100"),
            ("max_price", "250.50"),
            ("sort", "price_desc"),
            ("page", "3"),
        ])
        .parse()
        .unwrap();
        assert_eq!(q.words, ["oak", "sofa"]);
        assert_eq!(q.category, Some("Corner Sofas"));
        assert_eq!(q.condition, Some(Condition::LikeNew));
        assert_eq!(q.channel, Some(Channel::Exchange));
        assert_eq!((q.min_price, q.max_price), (Some(Pence::new(10_000)), Some(Pence::new(25_050))));
        assert_eq!((q.sort, q.page), (Sort::PriceDesc, 3));
        assert_eq!(params(&[("category", "Beds")]).parse(), Err(CatalogueRefusal::Category));
        assert_eq!(params(&[("condition", "new")]).parse(), Err(CatalogueRefusal::Condition));
        assert_eq!(params(&[("min_price", "ten")]).parse(), Err(CatalogueRefusal::Price));
        assert_eq!(params(&[("min_price", "1.001")]).parse(), Err(CatalogueRefusal::Price));
        assert_eq!(params(&[("min_price", "300"), ("max_price", "200")]).parse(), Err(CatalogueRefusal::PriceRange));
        assert_eq!(params(&[("page", "0")]).parse(), Err(CatalogueRefusal::Page));
        assert_eq!(params(&[("page", "101")]).parse(), Err(CatalogueRefusal::Page));
        assert_eq!(params(&[("sort", "best")]).parse(), Err(CatalogueRefusal::Sort));
        assert_eq!(params(&[("q", &"w ".repeat(11))]).parse(), Err(CatalogueRefusal::Search));
        // Blank values are unset, as an empty form field sends them.
        let blank = params(&[("q", " "), ("category", ""), ("sort", ""), ("page", "")]).parse().unwrap();
        assert!(blank.is_everything());
    }

    #[test]
    fn links_keep_the_other_filters_and_start_again_at_page_one() {
        let q = params(&[("q", "oak & ash"), ("channel", "clearance"), ("page", "4"), ("max_price", "99.5")])
            .parse()
            .unwrap();
        assert_eq!(
            q.href(|q| q.category = Some("Armchairs")),
            "/marketplace?q=oak+%26+ash&category=Armchairs&channel=clearance&max_price=99.50"
        );
        assert_eq!(q.href(|q| q.page = 5), "/marketplace?q=oak+%26+ash&channel=clearance&max_price=99.50&page=5");
        assert_eq!(CatalogueQuery::default().href(|_| {}), "/marketplace");
    }

    #[test]
    fn counts_are_exact_up_to_the_cap() {
        assert_eq!(Count::capped(0).words(), "0 pieces");
        assert_eq!(Count::capped(1).words(), "1 piece");
        assert_eq!(Count::capped(1_000).words(), "1,000 pieces");
        assert_eq!(Count::capped(1_001).words(), "1,000+ pieces");
        assert_eq!(Count::Exact(2_500_000).words(), "2,500,000 pieces");
        assert_eq!(Count::Exact(0).pages(), 1);
        assert_eq!(Count::Exact(25).pages(), 2);
        assert_eq!(Count::Exact(1_000_000).pages(), MAX_PAGE);
    }

    #[test]
    fn a_page_state_follows_the_listing() {
        assert_eq!(PageState::of(ListingStatus::Active, 2, false), PageState::OnSale);
        assert_eq!(PageState::of(ListingStatus::Active, 0, false), PageState::Sold);
        assert_eq!(PageState::of(ListingStatus::Closed, 0, false), PageState::Sold);
        assert_eq!(PageState::of(ListingStatus::Draft, 1, false), PageState::Hidden);
        assert_eq!(PageState::of(ListingStatus::Active, 1, true), PageState::Removed);
        assert_eq!(PageState::of(ListingStatus::Draft, 1, true), PageState::Removed);
    }

    #[test]
    fn labels_follow_what_the_item_was_exposed_to() {
        let labels = |v: &[&str]| exposure_labels(&v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(labels(&["None"]), ["Pet free", "Smoke free"]);
        assert_eq!(labels(&[]), ["Pet free", "Smoke free"]);
        assert_eq!(labels(&["Dogs"]), ["Smoke free"]);
        assert_eq!(labels(&["Cats", "Smoke"]), Vec::<&str>::new());
        assert_eq!(labels(&["Smoke"]), ["Pet free"]);
    }

    #[test]
    fn robots_say_so_and_people_do_not() {
        for bot in [
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "facebookexternalhit/1.1",
            "Mozilla/5.0 (compatible; bingbot/2.0)",
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0)",
            "Mozilla/5.0 (Linux; Android 11; moto g power (2022)) Chrome-Lighthouse",
        ] {
            assert!(is_bot(bot), "{bot}");
        }
        for person in [
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
            "",
        ] {
            assert!(!is_bot(person), "{person}");
        }
    }

    #[test]
    fn an_accent_is_used_only_where_text_reads_on_it() {
        assert_eq!(Accent::of("#FF8800"), Some(Accent { background: "#FF8800".into(), text: "#1A1A1A" }));
        assert_eq!(Accent::of("#123456"), Some(Accent { background: "#123456".into(), text: "#FFFFFF" }));
        assert_eq!(Accent::of(""), None);
        assert_eq!(Accent::of("red"), None);
        // Every accent used has AA contrast with its text.
        for r in (0..=255).step_by(17) {
            for g in (0..=255).step_by(51) {
                for b in (0..=255).step_by(85) {
                    if let Some(accent) = Accent::of(&format!("#{r:02X}{g:02X}{b:02X}")) {
                        let text = rgb(accent.text).unwrap();
                        assert!(contrast([r, g, b], text) >= AA_CONTRAST);
                    }
                }
            }
        }
        assert!((contrast([0, 0, 0], [255, 255, 255]) - 21.0).abs() < 1e-9);
    }
}
