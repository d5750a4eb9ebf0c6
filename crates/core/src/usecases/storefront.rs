//! The storefront's reads (decisions 14): the catalogue with its facet counts, a listing's
//! page by its state, a brand's public page, the sitemap, and the page views counted once
//! per visitor a day. Buyers act for nobody: these take no actor.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::Core;
use rehome_domain::listing::{Channel, Condition};
use rehome_domain::settings::BrandProfile;
use rehome_domain::storefront::{is_bot, view_day, CatalogueQuery, Count, PageState, SITEMAP_URLS};
use rehome_domain::taxonomy::CATEGORIES;
use rehome_domain::view::{FacetCount, MarketCard, MarketListing, SitemapEntry};
use rehome_store::StoreError;

/// A brand as buyers see it.
#[derive(Debug, Clone)]
pub struct BrandFace {
    pub id: i64,
    pub slug: String,
    /// The profile's display name, else the brand's name.
    pub name: String,
    pub profile: BrandProfile,
}

/// One choice of a facet and how many listings it would show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facet<T> {
    pub value: T,
    pub count: i64,
}

/// The counts beside each filter's choices, each counted with the other filters applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facets {
    pub categories: Vec<Facet<&'static str>>,
    pub conditions: Vec<Facet<Condition>>,
    pub channels: Vec<Facet<Channel>>,
}

/// A catalogue page: its cards, how many match, and the facet counts when they are exact.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub query: CatalogueQuery,
    pub cards: Vec<MarketCard>,
    pub count: Count,
    /// `None` under a search or a price range: counting each choice there would read every
    /// match (the choices are still offered, without counts).
    pub facets: Option<Facets>,
    /// The brand the query names, when it exists.
    pub brand: Option<BrandFace>,
    /// The query names a brand that does not exist.
    pub unknown_brand: bool,
}

/// The catalogue page a query asks for.
pub async fn catalogue(core: &Core, query: CatalogueQuery) -> Result<Catalogue, StoreError> {
    let brand = match &query.brand {
        Some(slug) => match brand_face(core, slug).await? {
            Some(face) => Some(face),
            None => {
                let count = Count::Exact(0);
                return Ok(Catalogue {
                    query,
                    cards: Vec::new(),
                    count,
                    facets: None,
                    brand: None,
                    unknown_brand: true,
                });
            }
        },
        None => None,
    };
    let brand_id = brand.as_ref().map(|face| face.id);
    let (count, facets, found) = if query.counted_exactly() {
        let kept = core.store.market_counts(brand_id).await?;
        let (total, facets) = facets(&kept, &query);
        (Count::Exact(total), Some(facets), None)
    } else if let Some((count, found)) = core.store.market_search(&query, brand_id).await? {
        // A search's matches read once: its count, and its page unless they are many.
        (Count::capped(count), None, found)
    } else {
        (Count::capped(core.store.market_count_capped(&query, brand_id).await?), None, None)
    };
    let dense = matches!(count, Count::AtLeast(_));
    let cards = match found {
        Some(cards) => cards,
        None if count == Count::Exact(0) => Vec::new(),
        None => core.store.market_page(&query, brand_id, dense).await?,
    };
    Ok(Catalogue { query, cards, count, facets, brand, unknown_brand: false })
}

/// The total of the kept counts under the query's category, condition and channel, and each
/// facet's choices counted under the other two.
fn facets(kept: &[FacetCount], query: &CatalogueQuery) -> (i64, Facets) {
    let category_ok = |row: &FacetCount| query.category.is_none_or(|c| row.category == c);
    let condition_ok = |row: &FacetCount| query.condition.is_none_or(|c| row.condition == c.as_str());
    let channel_ok = |row: &FacetCount| query.channel.is_none_or(|c| row.channel == c.as_str());
    let sum = |keep: &dyn Fn(&FacetCount) -> bool| kept.iter().filter(|row| keep(row)).map(|row| row.live).sum::<i64>();
    let total = sum(&|row| category_ok(row) && condition_ok(row) && channel_ok(row));
    let categories = CATEGORIES
        .iter()
        .map(|&value| Facet { value, count: sum(&|row| row.category == value && condition_ok(row) && channel_ok(row)) })
        .collect();
    let conditions = Condition::ALL
        .iter()
        .map(|&value| Facet {
            value,
            count: sum(&|row| row.condition == value.as_str() && category_ok(row) && channel_ok(row)),
        })
        .collect();
    let channels = [Channel::Exchange, Channel::Clearance]
        .into_iter()
        .map(|value| Facet {
            value,
            count: sum(&|row| row.channel == value.as_str() && category_ok(row) && condition_ok(row)),
        })
        .collect();
    (total, Facets { categories, conditions, channels })
}

/// A brand's public face, `None` for an unknown slug.
pub async fn brand_face(core: &Core, slug: &str) -> Result<Option<BrandFace>, StoreError> {
    let Some(brand) = core.store.brand_by_slug(slug).await? else {
        return Ok(None);
    };
    let profile = core.store.brand_profile(brand.id).await?.unwrap_or_default();
    let name = if profile.display_name.is_empty() { brand.name } else { profile.display_name.clone() };
    Ok(Some(BrandFace { id: brand.id, slug: brand.slug, name, profile }))
}

/// A listing's page: what its state lets a buyer see (decisions 14.1).
#[derive(Debug, Clone)]
pub enum ListingPage {
    /// On sale, or sold (the listing says which: [`PageState::OnSale`] or [`PageState::Sold`]).
    Shown { state: PageState, listing: Box<MarketListing>, brand: Option<Box<BrandFace>> },
    /// Trashed: gone for good (410).
    Removed,
    /// A draft, or no such listing (404).
    NotFound,
}

pub async fn listing_page(core: &Core, id: i64) -> Result<ListingPage, StoreError> {
    let Some(listing) = core.store.market_listing(id).await? else {
        return Ok(ListingPage::NotFound);
    };
    let fields = &listing.record.fields;
    match PageState::of(fields.status, fields.quantity, listing.trashed) {
        PageState::Removed => Ok(ListingPage::Removed),
        PageState::Hidden => Ok(ListingPage::NotFound),
        state => {
            let brand = brand_face(core, &listing.brand_slug).await?.map(Box::new);
            Ok(ListingPage::Shown { state, listing: Box::new(listing), brand })
        }
    }
}

/// The sitemap: one file of every listing's URL, or an index of files each covering
/// [`SITEMAP_URLS`] ids when there are more listings than one file holds.
#[derive(Debug, Clone)]
pub enum Sitemap {
    Urls(Vec<SitemapEntry>),
    /// The number of files (`1..=files`).
    Index {
        files: i64,
    },
}

pub async fn sitemap(core: &Core) -> Result<Sitemap, StoreError> {
    let listed: i64 = core.store.market_counts(None).await?.iter().map(|row| row.live).sum();
    let last = core.store.max_listing_id().await?;
    match sitemap_files(listed, last) {
        None => Ok(Sitemap::Urls(core.store.sitemap_entries(1, last).await?)),
        Some(files) => Ok(Sitemap::Index { files }),
    }
}

/// How many files the sitemap needs: `None` for one file of every URL, when the `listed`
/// listings fit in it and reading ids 1 to `last` reads at most 20 files' worth of rows; else
/// one file for each range of [`SITEMAP_URLS`] ids (so no file can hold more than that).
fn sitemap_files(listed: i64, last: i64) -> Option<i64> {
    if listed <= SITEMAP_URLS && last <= SITEMAP_URLS * 20 {
        return None;
    }
    Some((last + SITEMAP_URLS - 1) / SITEMAP_URLS)
}

/// File `n` (from 1) of a sitemap index: the listings with ids in its range; `None` past
/// the last file.
pub async fn sitemap_file(core: &Core, n: i64) -> Result<Option<Vec<SitemapEntry>>, StoreError> {
    let last = core.store.max_listing_id().await?;
    if n < 1 || (n - 1) * SITEMAP_URLS >= last.max(1) {
        return Ok(None);
    }
    let first = (n - 1) * SITEMAP_URLS + 1;
    Ok(Some(core.store.sitemap_entries(first, first + SITEMAP_URLS - 1).await?))
}

/// A visitor seen today was counted already; most repeat views are known here without a
/// write (the database still decides, across nodes).
const MAX_REMEMBERED: usize = 100_000;

/// This node's memory for the storefront: today's salt and the visitors counted today, and
/// the anti-forgery secret once read.
#[derive(Debug, Default)]
pub struct Memory {
    today: Mutex<Today>,
    csrf_secret: tokio::sync::OnceCell<String>,
}

impl Memory {
    /// The storefront's anti-forgery secret, made by the first node that needs it.
    pub async fn csrf_secret(&self, store: &rehome_store::Store) -> Result<String, StoreError> {
        self.csrf_secret
            .get_or_try_init(|| async { store.site_secret("checkout-csrf", &fresh_salt()).await })
            .await
            .cloned()
    }
}

#[derive(Debug, Default)]
struct Today {
    day: String,
    salt: Option<String>,
    counted: HashSet<[u8; 16]>,
}

/// Counts a page view of listing `id` by the visitor at `ip` with `user_agent`, once a day
/// (decisions 14.2): robots are not counted, and the visitor is kept only as a hash with the
/// day's salt. Answers whether this view was counted.
pub async fn count_view(
    core: &Core,
    id: i64,
    ip: IpAddr,
    user_agent: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    if is_bot(user_agent) {
        return Ok(false);
    }
    let day = view_day(now);
    let salt = {
        let today = lock(&core.storefront);
        (today.day == day).then(|| today.salt.clone()).flatten()
    };
    let salt = match salt {
        Some(salt) => salt,
        None => {
            let salt = core.store.view_salt(&day, &fresh_salt()).await?;
            let mut today = lock(&core.storefront);
            if today.day != day {
                *today = Today { day: day.clone(), salt: Some(salt.clone()), counted: HashSet::new() };
            }
            salt
        }
    };
    let visitor = visitor(&salt, ip, user_agent, id);
    if lock(&core.storefront).counted.contains(&visitor) {
        return Ok(false);
    }
    let counted = core.store.record_view(&day, &hex::encode(visitor), id).await?;
    let mut today = lock(&core.storefront);
    if today.day == day {
        if today.counted.len() >= MAX_REMEMBERED {
            today.counted.clear();
        }
        today.counted.insert(visitor);
    }
    Ok(counted)
}

fn lock(memory: &Memory) -> std::sync::MutexGuard<'_, Today> {
    memory.today.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A visitor of one listing on one day: the first 16 bytes of SHA-256 over the day's salt,
/// the address, the user agent and the listing.
fn visitor(salt: &str, ip: IpAddr, user_agent: &str, id: i64) -> [u8; 16] {
    let mut hash = Sha256::new();
    for part in [salt, &ip.to_string(), user_agent, &id.to_string()] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// 32 random hex digits; a fixed-looking fallback is never used: without randomness the
/// salt is the time, still unknown to anyone reading the hashes later.
fn fresh_salt() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
        bytes[..8].copy_from_slice(&nanos.to_be_bytes());
    }
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(category: &str, condition: &str, channel: &str, live: i64) -> FacetCount {
        FacetCount { category: category.into(), condition: condition.into(), channel: channel.into(), live }
    }

    #[test]
    fn each_facet_is_counted_under_the_other_filters() {
        let rows = [
            kept("Armchairs", "excellent", "exchange", 3),
            kept("Armchairs", "fair", "clearance", 2),
            kept("Footstools", "excellent", "clearance", 5),
        ];
        let (total, all) = facets(&rows, &CatalogueQuery::default());
        assert_eq!(total, 10);
        let count = |facets: &Facets, c: &str| facets.categories.iter().find(|f| f.value == c).map(|f| f.count);
        assert_eq!(
            (count(&all, "Armchairs"), count(&all, "Footstools"), count(&all, "Sofa Beds")),
            (Some(5), Some(5), Some(0))
        );
        let query = CatalogueQuery { condition: Some(Condition::Excellent), ..CatalogueQuery::default() };
        let (total, under) = facets(&rows, &query);
        assert_eq!(total, 8);
        assert_eq!(count(&under, "Armchairs"), Some(3), "categories counted under the condition");
        let fair = under.conditions.iter().find(|f| f.value == Condition::Fair).unwrap();
        assert_eq!(fair.count, 2, "conditions are not counted under their own filter");
        let exchange = under.channels.iter().find(|f| f.value == Channel::Exchange).unwrap();
        assert_eq!(exchange.count, 3);
    }

    #[test]
    fn a_sitemap_past_50000_listings_is_an_index_of_files_of_at_most_50000() {
        assert_eq!(sitemap_files(0, 0), None);
        assert_eq!(sitemap_files(50_000, 60_000), None);
        assert_eq!(sitemap_files(50_001, 60_000), Some(2));
        assert_eq!(sitemap_files(10_000_000, 10_000_000), Some(200));
        assert_eq!(sitemap_files(10, 1_000_001), Some(21), "many ids, few listed: still bounded files");
    }

    #[test]
    fn a_visitor_is_the_same_all_day_and_another_for_another_listing_agent_or_salt() {
        let ip: IpAddr = "203.0.113.9".parse().unwrap();
        let a = visitor("salt", ip, "Firefox", 1);
        assert_eq!(a, visitor("salt", ip, "Firefox", 1));
        assert_ne!(a, visitor("salt", ip, "Firefox", 2));
        assert_ne!(a, visitor("salt", ip, "Chrome", 1));
        assert_ne!(a, visitor("pepper", ip, "Firefox", 1));
        assert_ne!(a, visitor("salt", "203.0.113.10".parse().unwrap(), "Firefox", 1));
        assert_ne!(fresh_salt(), fresh_salt());
    }
}
