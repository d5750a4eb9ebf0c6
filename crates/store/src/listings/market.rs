//! The storefront's reads across every brand (decisions 14): the catalogue, a listing's page
//! whatever its state, the kept facet counts, the sitemap, and the views counted once per
//! visitor a day. A listing is in the catalogue while it is live, active and in stock: the
//! predicate of the partial indexes of migrations sqlite/0033 and postgres/0025, written
//! here exactly as there so that both engines use them.

use std::fmt::Write;

use super::rows::DetailRow;
use super::{FilterSql, DETAIL_JSON};
use crate::{on_pool, Store, StoreError, Ts};
use rehome_domain::listing::ListingQuery;
use rehome_domain::money::Pence;
use rehome_domain::storefront::{CatalogueQuery, Sort, COUNT_CAP, PAGE_SIZE};
use rehome_domain::view::{FacetCount, MarketCard, MarketListing, MarketPhoto, SitemapEntry};

/// In the catalogue: the partial indexes' predicate, on alias `k`.
const VISIBLE: &str = "k.deleted_at IS NULL AND k.status = 'active' AND k.quantity > 0";

/// What a buyer pays, the price sorts' and range's key (the `listings_market_price` index).
const PRICE: &str = "COALESCE(k.sale_price_pence, k.regular_price_pence)";

/// A value bound to a catalogue statement.
enum Bind {
    Text(String),
    Int(i64),
}

/// The catalogue's conditions after [`VISIBLE`], on alias `k`, numbering parameters from 1.
struct MarketFilter {
    predicate: String,
    values: Vec<Bind>,
}

impl MarketFilter {
    /// The query's conditions; with `fts_candidates` (SQLite), each search word of three
    /// characters or more also narrows the rows to its trigram index's candidates, else the
    /// words are checked by the rule alone.
    fn new(query: &CatalogueQuery, brand_id: Option<i64>, postgres: bool, fts_candidates: bool) -> Self {
        let mut predicate = String::new();
        let mut values = Vec::new();
        let mut add = |condition: &str, value: Bind| {
            let _ = write!(predicate, " AND {condition}${}", values.len() + 1);
            values.push(value);
        };
        if let Some(brand_id) = brand_id {
            add("k.brand_id = ", Bind::Int(brand_id));
        }
        if let Some(category) = query.category {
            add("k.category = ", Bind::Text(category.to_owned()));
        }
        if let Some(condition) = query.condition {
            add("k.condition = ", Bind::Text(condition.as_str().to_owned()));
        }
        if let Some(channel) = query.channel {
            add("k.channel = ", Bind::Text(channel.as_str().to_owned()));
        }
        if let Some(min) = query.min_price {
            add(&format!("{PRICE} >= "), Bind::Int(min.get()));
        }
        if let Some(max) = query.max_price {
            add(&format!("{PRICE} <= "), Bind::Int(max.get()));
        }
        if !query.words.is_empty() {
            // The one search rule of the partner API (decisions 11.2), and its candidates.
            let words = ListingQuery { words: query.words.clone(), ..ListingQuery::default() };
            let filtered = FilterSql::new(&words, values.len() + 1, "k", postgres, fts_candidates);
            predicate.push_str(&filtered.predicate);
            values.extend(filtered.values.into_iter().map(Bind::Text));
        }
        Self { predicate, values }
    }
}

/// The longest search word that has trigrams (three characters or more), as an FTS5 phrase:
/// what drives a search through SQLite's trigram index.
fn fts_driver(words: &[String]) -> Option<String> {
    words.iter().filter(|w| w.chars().count() >= 3).max_by_key(|w| w.chars().count()).map(|w| super::fts_phrase(w))
}

/// How SQLite reads a catalogue page's keys. The plan must not depend on statistics: a
/// database the server made has none, and with them SQLite chose to skip-scan every brand
/// and sort the whole catalogue (0.6 s at 1M listings), so the access is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Walk this partial index in the page's order, testing each row.
    Index(&'static str),
    /// Read the search's candidates by rowid and sort them (few matches).
    Candidates,
}

/// The access of a page: `dense` when the capped count reached its cap, so that matches are
/// many and a walk in the page's order meets 24 of them soon.
fn access(query: &CatalogueQuery, brand: bool, dense: bool) -> Access {
    if !query.words.is_empty() && !dense && fts_driver(&query.words).is_some() {
        return Access::Candidates;
    }
    let priced = query.min_price.is_some() || query.max_price.is_some();
    if priced && query.words.is_empty() && !dense && !brand {
        // A narrow price range: its rows from the price index, then sorted.
        return Access::Index("listings_market_price");
    }
    // A brand's rows in its own index (sorted by price when asked): never a walk of every
    // brand's listings for one brand's.
    Access::Index(match (brand, query.sort, query.category) {
        (true, _, _) => "listings_market_brand",
        (false, Sort::Newest, Some(_)) => "listings_market_category",
        (false, Sort::Newest, None) => "listings_market_recent",
        (false, Sort::PriceAsc | Sort::PriceDesc, _) => "listings_market_price",
    })
}

/// Binds a filter's values to a query, in order.
macro_rules! bind_all {
    ($query:expr, $values:expr) => {{
        let mut query = $query;
        for value in $values {
            query = match value {
                Bind::Text(text) => query.bind(text.as_str()),
                Bind::Int(n) => query.bind(*n),
            };
        }
        query
    }};
}

/// The key order of a sort, on alias `a`.
fn order(sort: Sort, a: &str) -> String {
    match sort {
        Sort::Newest => format!("{a}.created_at DESC, {a}.id DESC"),
        Sort::PriceAsc => format!("COALESCE({a}.sale_price_pence, {a}.regular_price_pence), {a}.id"),
        Sort::PriceDesc => format!("COALESCE({a}.sale_price_pence, {a}.regular_price_pence) DESC, {a}.id DESC"),
    }
}

/// A card's columns, on the page's listings `l`, their brand `b` and its profile `bp`.
const CARD_COLUMNS: &str = "l.id, l.title, b.slug, COALESCE(NULLIF(bp.display_name, ''), b.name), l.channel,
    l.condition, l.category, l.regular_price_pence, l.sale_price_pence,
    (SELECT COALESCE(p.medium_name, p.name) FROM listing_images i JOIN photos p ON p.id = i.attachment_id
     WHERE i.listing_id = l.id AND i.status = 'done' ORDER BY i.position LIMIT 1)";

/// A photo's row: name, medium and large names, width, height.
type PhotoRow = (String, Option<String>, Option<String>, i64, i64);

type CardRow = (i64, String, String, String, String, String, String, i64, Option<i64>, Option<String>);

fn card(
    (id, title, brand_slug, brand_name, channel, condition, category, regular, sale, cover): CardRow,
) -> Result<MarketCard, StoreError> {
    let corrupt =
        |what: &str| StoreError::Database(sqlx::Error::Decode(format!("stored listing has an invalid {what}").into()));
    Ok(MarketCard {
        id,
        title,
        brand_slug,
        brand_name,
        channel: channel.parse().map_err(|_| corrupt("channel"))?,
        condition: condition.parse().map_err(|_| corrupt("condition"))?,
        category,
        regular_price: Pence::new(regular),
        sale_price: sale.map(Pence::new),
        cover,
    })
}

impl Store {
    /// A page of the catalogue (or of one brand's listings, `brand_id`) in the query's
    /// order: the page's keys are chosen from the partial indexes, then only its rows read.
    /// `dense`: the capped count reached its cap (see [`Access`]).
    pub async fn market_page(
        &self,
        query: &CatalogueQuery,
        brand_id: Option<i64>,
        dense: bool,
    ) -> Result<Vec<MarketCard>, StoreError> {
        let postgres = self.is_postgres();
        let access = access(query, brand_id.is_some(), dense);
        let filter = MarketFilter::new(query, brand_id, postgres, !postgres && access == Access::Candidates);
        let offset = i64::from(query.page.saturating_sub(1)) * i64::from(PAGE_SIZE);
        let hint = match (postgres, access) {
            (true, _) => String::new(),
            (false, Access::Index(index)) => format!(" INDEXED BY {index}"),
            // The candidates by rowid only: no index walk, whatever the statistics say.
            (false, Access::Candidates) => " NOT INDEXED".to_owned(),
        };
        let sql = format!(
            "SELECT {CARD_COLUMNS} FROM listings l JOIN brands b ON b.id = l.brand_id
               LEFT JOIN brand_profiles bp ON bp.brand_id = l.brand_id
             WHERE l.id IN (SELECT k.id FROM listings k{hint} WHERE {VISIBLE}{} ORDER BY {} LIMIT {PAGE_SIZE} OFFSET {offset})
             ORDER BY {}",
            filter.predicate,
            order(query.sort, "k"),
            order(query.sort, "l"),
        );
        // A search is planned for its words each time (see `list_listings`).
        let cached = !postgres || query.words.is_empty();
        on_pool!(self, read, |pool| {
            let rows: Vec<CardRow> =
                bind_all!(sqlx::query_as(&sql).persistent(cached), &filter.values).fetch_all(pool).await?;
            rows.into_iter().map(card).collect()
        })
    }

    /// A search's count, at most [`COUNT_CAP`] + 1, and its page when the count is within the
    /// cap, from one read of its matches: on SQLite, through the trigram index of its longest
    /// word. `None` where that read does not apply (PostgreSQL, or no word of three
    /// characters or more): count with [`Store::market_count_capped`] and read the page apart.
    /// Past the cap the page is `None`: matches are many, and [`Store::market_page`] walks an
    /// index in the page's order (`dense`).
    pub async fn market_search(
        &self,
        query: &CatalogueQuery,
        brand_id: Option<i64>,
    ) -> Result<Option<(i64, Option<Vec<MarketCard>>)>, StoreError> {
        let Some(driver) = fts_driver(&query.words).filter(|_| !self.is_postgres()) else {
            return Ok(None);
        };
        let filter = MarketFilter::new(query, brand_id, false, false);
        let offset = i64::from(query.page.saturating_sub(1)) * i64::from(PAGE_SIZE);
        // The matches read once (a materialised `WITH`); the page sorted among them only when
        // the count is within the cap (a `CASE` runs its subquery only when it is chosen).
        let found = format!(
            "WITH found AS MATERIALIZED (
               SELECT k.id, k.created_at, k.sale_price_pence, k.regular_price_pence
               FROM listings_search s CROSS JOIN listings k
               WHERE s.listings_search MATCH ${} AND k.id = s.rowid AND {VISIBLE}{} LIMIT {})
             SELECT c.n, CASE WHEN c.n <= {COUNT_CAP} THEN
               (SELECT json_group_array(p.id) FROM
                  (SELECT f.id FROM found f ORDER BY {} LIMIT {PAGE_SIZE} OFFSET {offset}) p) END
             FROM (SELECT COUNT(*) AS n FROM found) c",
            filter.values.len() + 1,
            filter.predicate,
            COUNT_CAP + 1,
            order(query.sort, "f"),
        );
        let cards = format!(
            "SELECT {CARD_COLUMNS} FROM listings l JOIN brands b ON b.id = l.brand_id
               LEFT JOIN brand_profiles bp ON bp.brand_id = l.brand_id
             WHERE l.id IN (SELECT value FROM json_each($1)) ORDER BY {}",
            order(query.sort, "l")
        );
        on_pool!(self, read, |pool| {
            let mut tx = pool.begin().await?;
            let (count, ids): (i64, Option<String>) =
                bind_all!(sqlx::query_as(&found), &filter.values).bind(driver.as_str()).fetch_one(&mut *tx).await?;
            let Some(ids) = ids.filter(|_| count <= COUNT_CAP) else {
                return Ok(Some((count, None)));
            };
            let rows: Vec<CardRow> = sqlx::query_as(&cards).bind(ids).fetch_all(&mut *tx).await?;
            tx.commit().await?;
            Ok(Some((count, Some(rows.into_iter().map(card).collect::<Result<_, _>>()?))))
        })
    }

    /// How many listings match, counting at most [`COUNT_CAP`] + 1: for a search or a price
    /// range, where no kept count applies. On SQLite a search is driven by the trigram index
    /// of its longest word and a price range by the price index, so the count stops at the
    /// cap however many match; on PostgreSQL a price range is counted in the price index's
    /// order for the same reason.
    pub async fn market_count_capped(&self, query: &CatalogueQuery, brand_id: Option<i64>) -> Result<i64, StoreError> {
        let postgres = self.is_postgres();
        let filter = MarketFilter::new(query, brand_id, postgres, false);
        let cap = COUNT_CAP + 1;
        let priced = (query.min_price.is_some() || query.max_price.is_some()) && brand_id.is_none();
        let driver = fts_driver(&query.words).filter(|_| !postgres);
        let sql = match &driver {
            Some(_) => format!(
                "SELECT COUNT(*) FROM (SELECT 1 FROM listings_search s CROSS JOIN listings k
                 WHERE s.listings_search MATCH ${} AND k.id = s.rowid AND {VISIBLE}{} LIMIT {cap}) c",
                filter.values.len() + 1,
                filter.predicate
            ),
            None => {
                let (hint, ordered) = match (postgres, priced && query.words.is_empty()) {
                    (false, true) => (" INDEXED BY listings_market_price", ""),
                    (true, true) => ("", " ORDER BY COALESCE(k.sale_price_pence, k.regular_price_pence)"),
                    _ => ("", ""),
                };
                format!(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM listings k{hint} WHERE {VISIBLE}{}{ordered} LIMIT {cap}) c",
                    filter.predicate
                )
            }
        };
        let cached = !postgres || query.words.is_empty();
        on_pool!(self, read, |pool| {
            let mut counting = bind_all!(sqlx::query_scalar::<_, i64>(&sql).persistent(cached), &filter.values);
            if let Some(phrase) = &driver {
                counting = counting.bind(phrase.as_str());
            }
            Ok(counting.fetch_one(pool).await?)
        })
    }

    /// The kept counts of the catalogue's listings by category, condition and channel: every
    /// brand's (`None`) or one brand's. A few dozen rows whatever the catalogue's size.
    pub async fn market_counts(&self, brand_id: Option<i64>) -> Result<Vec<FacetCount>, StoreError> {
        on_pool!(self, read, |pool| {
            let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
                "SELECT category, condition, channel, CAST(SUM(live) AS BIGINT) FROM market_counts WHERE brand_id = $1
                 GROUP BY category, condition, channel",
            )
            .bind(brand_id.unwrap_or(0))
            .fetch_all(pool)
            .await?;
            Ok(rows
                .into_iter()
                .filter(|row| row.3 > 0)
                .map(|(category, condition, channel, live)| FacetCount { category, condition, channel, live })
                .collect())
        })
    }

    /// A listing's page: the listing whatever its state (trashed included), its brand and
    /// its ready photos in order; `None` when there is no such listing.
    pub async fn market_listing(&self, id: i64) -> Result<Option<MarketListing>, StoreError> {
        let sql = format!(
            "SELECT {}, CAST(CASE WHEN l.deleted_at IS NULL THEN 0 ELSE 1 END AS BIGINT), b.slug,
                    COALESCE(NULLIF(bp.display_name, ''), b.name)
             FROM listings l JOIN brands b ON b.id = l.brand_id LEFT JOIN brand_profiles bp ON bp.brand_id = l.brand_id
             WHERE l.id = $1",
            DETAIL_JSON.pick(self)
        );
        on_pool!(self, read, |pool| {
            let row: Option<(String, i64, String, String)> = sqlx::query_as(&sql).bind(id).fetch_optional(pool).await?;
            let Some((json, trashed, brand_slug, brand_name)) = row else {
                return Ok(None);
            };
            let record = DetailRow::parse(&json)?.into_record()?;
            let photos: Vec<PhotoRow> = sqlx::query_as(
                "SELECT p.name, p.medium_name, p.large_name, p.width, p.height
                 FROM listing_images i JOIN photos p ON p.id = i.attachment_id
                 WHERE i.listing_id = $1 AND i.status = 'done' ORDER BY i.position",
            )
            .bind(id)
            .fetch_all(pool)
            .await?;
            let photos = photos
                .into_iter()
                .map(|(name, medium, large, width, height)| MarketPhoto { name, medium, large, width, height })
                .collect();
            Ok(Some(MarketListing { record, trashed: trashed != 0, brand_slug, brand_name, photos }))
        })
    }

    /// The highest listing id there is (0 without listings): the sitemap's files each cover
    /// a range of ids.
    pub async fn max_listing_id(&self) -> Result<i64, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(id) FROM listings").fetch_one(pool).await?.unwrap_or(0))
        })
    }

    /// The catalogue's listings with ids from `first` to `last`, in id order.
    pub async fn sitemap_entries(&self, first: i64, last: i64) -> Result<Vec<SitemapEntry>, StoreError> {
        let sql = format!(
            "SELECT k.id, k.updated_at FROM listings k WHERE k.id BETWEEN $1 AND $2 AND {VISIBLE} ORDER BY k.id"
        );
        on_pool!(self, read, |pool| {
            let rows: Vec<(i64, Ts)> = sqlx::query_as(&sql).bind(first).bind(last).fetch_all(pool).await?;
            Ok(rows.into_iter().map(|(id, updated_at)| SitemapEntry { id, updated_at }).collect())
        })
    }

    /// The salt of `day`'s visitor hashes: the one stored, or `fresh` stored now. Storing a
    /// new day's salt deletes the earlier days' salts and views, so no hash outlives its day.
    pub async fn view_salt(&self, day: &str, fresh: &str) -> Result<String, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let added = sqlx::query("INSERT INTO view_salts (day, salt) VALUES ($1, $2) ON CONFLICT (day) DO NOTHING")
                .bind(day)
                .bind(fresh)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if added > 0 {
                sqlx::query("DELETE FROM view_salts WHERE day < $1").bind(day).execute(&mut *tx).await?;
                sqlx::query("DELETE FROM listing_views WHERE day < $1").bind(day).execute(&mut *tx).await?;
            }
            let salt: String =
                sqlx::query_scalar("SELECT salt FROM view_salts WHERE day = $1").bind(day).fetch_one(&mut *tx).await?;
            tx.commit().await?;
            Ok(salt)
        })
    }

    /// The secret called `name`: the one stored, or `fresh` stored now (every node shares it).
    pub async fn site_secret(&self, name: &str, fresh: &str) -> Result<String, StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("INSERT INTO site_secrets (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
                .bind(name)
                .bind(fresh)
                .execute(pool)
                .await?;
            Ok(sqlx::query_scalar("SELECT secret FROM site_secrets WHERE name = $1").bind(name).fetch_one(pool).await?)
        })
    }

    /// Counts a visitor's view of an active listing once a day: true when this view was
    /// counted (the visitor's first of the day, and the listing is on sale).
    pub async fn record_view(&self, day: &str, visitor: &str, listing_id: i64) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let first = sqlx::query("INSERT INTO listing_views (day, visitor) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(day)
                .bind(visitor)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                > 0;
            if !first {
                return Ok(false);
            }
            let counted = sqlx::query(
                "UPDATE listings SET view_count = view_count + 1
                 WHERE id = $1 AND deleted_at IS NULL AND status = 'active' AND quantity > 0",
            )
            .bind(listing_id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                > 0;
            tx.commit().await?;
            Ok(counted)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rehome_domain::listing::{Channel, Condition};

    /// Every access the catalogue can choose is one SQLite can run (an `INDEXED BY` it cannot
    /// use is an error, not a slow plan), on a database without statistics.
    #[tokio::test]
    async fn every_catalogue_access_runs_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}", dir.path().join("m.db").display()), None).await.unwrap();
        let words = [vec![], vec!["oak".to_owned()], vec!["an".to_owned()], vec!["oak".to_owned(), "so".to_owned()]];
        for words in &words {
            for sort in [Sort::Newest, Sort::PriceAsc, Sort::PriceDesc] {
                for (category, priced) in
                    [(None, false), (Some("Armchairs"), false), (None, true), (Some("Footstools"), true)]
                {
                    for brand in [None, Some(1)] {
                        for dense in [false, true] {
                            let query = CatalogueQuery {
                                words: words.clone(),
                                category,
                                condition: Some(Condition::Fair),
                                channel: Some(Channel::Exchange),
                                min_price: priced.then(|| Pence::new(100)),
                                max_price: priced.then(|| Pence::new(90_000)),
                                sort,
                                page: 2,
                                ..CatalogueQuery::default()
                            };
                            let what = format!("{query:?} brand {brand:?} dense {dense}");
                            assert!(store
                                .market_page(&query, brand, dense)
                                .await
                                .unwrap_or_else(|e| panic!("{what}: {e}"))
                                .is_empty());
                            assert_eq!(
                                store
                                    .market_count_capped(&query, brand)
                                    .await
                                    .unwrap_or_else(|e| panic!("{what}: {e}")),
                                0
                            );
                            let searched =
                                store.market_search(&query, brand).await.unwrap_or_else(|e| panic!("{what}: {e}"));
                            let expected = fts_driver(&query.words).map(|_| (0, Some(0)));
                            assert_eq!(searched.map(|(n, cards)| (n, cards.map(|c| c.len()))), expected, "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_page_walks_an_index_in_its_order_unless_a_search_or_a_range_finds_few() {
        let q = |words: &[&str], sort: Sort, category: Option<&'static str>, priced: bool| CatalogueQuery {
            words: words.iter().map(|w| (*w).to_owned()).collect(),
            sort,
            category,
            min_price: priced.then(|| Pence::new(100)),
            ..CatalogueQuery::default()
        };
        assert_eq!(access(&q(&[], Sort::Newest, None, false), false, false), Access::Index("listings_market_recent"));
        assert_eq!(
            access(&q(&[], Sort::Newest, Some("Armchairs"), false), false, false),
            Access::Index("listings_market_category")
        );
        assert_eq!(access(&q(&[], Sort::PriceDesc, None, false), false, false), Access::Index("listings_market_price"));
        assert_eq!(access(&q(&[], Sort::Newest, None, false), true, false), Access::Index("listings_market_brand"));
        assert_eq!(access(&q(&["sofa"], Sort::Newest, None, false), false, false), Access::Candidates);
        assert_eq!(
            access(&q(&["sofa"], Sort::Newest, None, false), false, true),
            Access::Index("listings_market_recent")
        );
        assert_eq!(
            access(&q(&["so"], Sort::Newest, None, false), false, false),
            Access::Index("listings_market_recent"),
            "no trigram"
        );
        assert_eq!(access(&q(&[], Sort::Newest, None, true), false, false), Access::Index("listings_market_price"));
        assert_eq!(access(&q(&[], Sort::Newest, None, true), false, true), Access::Index("listings_market_recent"));
        assert_eq!(
            fts_driver(&["so".into(), "walnut".into(), "oak".into()]).as_deref(),
            Some("{title sku} : \"walnut\"")
        );
    }
}
