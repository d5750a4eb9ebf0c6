//! Listings and their images. Every query is scoped to one brand in its `WHERE` clause and
//! skips trashed rows, so a brand can never read or change another brand's listing; changes
//! are further scoped to the seller.

mod clock;
mod counts;
pub(crate) mod events;
mod market;
mod rows;
mod search;
mod write;

use std::fmt::Write;
use std::sync::LazyLock;

use super::{on_pool, Dialect, Store, StoreError, Ts};
pub(crate) use clock::{stamp as stamp_listing_change, tick as tick_listing_clock, touch as touch_listings};

use rehome_domain::listing::{ListingFields, ListingQuery, SyncPosition};
use rehome_domain::view::{ListingImage, ListingPage, ListingRecord, ListingSummaryRecord, SavedListing, SyncPage};
use rows::{DetailRow, SummaryRow};
pub(crate) use write::save_import_in;

/// Where a listing image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// A URL the service fetches in the background (decisions 3.10).
    Import(String),
    /// A photo uploaded with `upload-photo`.
    Attachment(i64),
}

/// One entry of an edited listing's new image list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSlot {
    /// An image the listing does not have yet.
    New(ImageSource),
    /// One of the listing's images as read (with the version the edit is checked against),
    /// kept as it is at its new place: an import keeps its state and is not fetched again.
    Kept(ListingImage),
}

/// A listing to create.
#[derive(Debug, Clone, Copy)]
pub struct NewListing<'a> {
    pub brand_id: i64,
    pub user_id: i64,
    pub seller_name: &'a str,
    pub fields: &'a ListingFields,
    pub images: &'a [ImageSource],
}

/// A change to write over a listing as it was read.
#[derive(Debug, Clone, Copy)]
pub struct ListingEdit<'a> {
    pub existing: &'a ListingRecord,
    pub fields: &'a ListingFields,
    /// The new images, when they change.
    pub images: Option<&'a [ImageSlot]>,
}

/// The outcome of an update.
#[derive(Debug, Clone)]
pub enum ListingUpdate {
    Saved(Box<SavedListing>),
    /// The listing changed (or went) since it was read: read it again and retry.
    Stale,
}

/// A listing's values in the order of [`DetailRow`]. The seller's name by a lookup of its
/// own rather than a join: for the join PostgreSQL hashed the whole (small) users table on
/// every read (pgbench: 10% more reads a second this way).
const DETAIL_VALUES: &str = "l.id, l.brand_id, l.user_id, (SELECT u.name FROM users u WHERE u.id = l.user_id),
    l.status, l.channel, l.title, l.description, l.category, l.condition, l.regular_price_pence, l.sale_price_pence,
    l.rrp_pence, l.delivery_contribution_gbp, l.manufacturer_brand, l.colour, l.fabric, l.age_years,
    l.available_from, l.quantity, l.measurements, l.exposed_to, l.faults, l.sku, l.warehouse_location,
    l.warehouse_id, l.view_count, l.version, l.created_at, l.updated_at";

/// The listing's images as one JSON array, in order. A ready image's `url` is the one
/// recorded, else its photo's path under the service (`/media/<name>`, made absolute when
/// rendered).
///
/// On SQLite the order is the ordered subquery's, which the `(listing_id, position)` index
/// gives as it is read: an aggregate's own `ORDER BY` builds a temporary b-tree for every
/// listing read, images or none (two fresh pages zeroed, a tenth of a detail read's
/// instructions; issue 19). SQLite aggregates a subquery that has an `ORDER BY` in that
/// order: it does not flatten such a subquery into an aggregate query, nor drop its
/// `ORDER BY` when the outer query has an aggregate other than `count`, `min` or `max`
/// (the rules in its `select.c`). The API test
/// `images_come_back_in_position_order_whatever_order_they_were_stored_in` holds it to that.
const IMAGES_JSON: Dialect = Dialect {
    sqlite: "(SELECT json_group_array(json_object('position', o.position, 'source_url', o.source_url,
        'attachment_id', o.attachment_id, 'status', o.status, 'url', o.url, 'error', o.error))
     FROM (SELECT i.position, i.source_url, i.attachment_id, i.status,
             CASE WHEN i.status = 'done' THEN COALESCE(i.url, '/media/' || p.name) END AS url, i.error
           FROM listing_images i LEFT JOIN photos p ON p.id = i.attachment_id WHERE i.listing_id = l.id
           ORDER BY i.position) o)",
    postgres: "(SELECT COALESCE(json_agg(json_build_object('position', i.position, 'source_url', i.source_url,
        'attachment_id', i.attachment_id, 'status', i.status,
        'url', CASE WHEN i.status = 'done' THEN COALESCE(i.url, '/media/' || p.name) END, 'error', i.error)
        ORDER BY i.position), '[]'::json)
     FROM listing_images i LEFT JOIN photos p ON p.id = i.attachment_id WHERE i.listing_id = l.id)",
};

/// A listing and its images as one JSON array, [`DETAIL_VALUES`] then the images: one value
/// crosses from the database rather than 31 columns (each a value the driver allocates on
/// SQLite's thread, and a decode; issue 19).
static DETAIL_JSON: LazyLock<Dialect<String>> = LazyLock::new(|| Dialect {
    sqlite: format!("json_array({DETAIL_VALUES}, {})", IMAGES_JSON.sqlite),
    postgres: format!("json_build_array({DETAIL_VALUES}, {})::text", IMAGES_JSON.postgres),
});

/// The statement of [`Store::listing`], written once.
static DETAIL_SQL: LazyLock<Dialect<String>> = LazyLock::new(|| {
    DETAIL_JSON.map(|detail| {
        format!("SELECT {detail} FROM listings l WHERE l.id = $1 AND l.brand_id = $2 AND l.deleted_at IS NULL")
    })
});

/// The columns of a summary, selected by the page subquery `p`...
const SUMMARY_COLUMNS: &str = "l.id, l.title, l.status, l.channel, l.category, l.regular_price_pence,
    l.sale_price_pence, l.delivery_contribution_gbp, l.view_count, l.created_at, l.updated_at, l.deleted_at,
    (SELECT COALESCE(i.url, '/media/' || p.name) FROM listing_images i LEFT JOIN photos p ON p.id = i.attachment_id
     WHERE i.listing_id = l.id AND i.status = 'done' ORDER BY i.position LIMIT 1) AS cover_url";

/// ...and folded into one JSON array of positional arrays, in list order (see
/// [`SummaryRow`]). The arrays are built here, outside the subquery, because SQLite forgets
/// that a value is JSON when it passes through a subquery column. On SQLite the order is
/// the page subquery's own, as for a listing's images (see [`IMAGES_JSON`]): no temporary
/// b-tree to sort a page that comes out of its index in order.
const PAGE_JSON: Dialect = Dialect {
    sqlite: "json_group_array(json_array(p.id, p.title, p.status, p.channel, p.category, p.regular_price_pence,
        p.sale_price_pence, p.delivery_contribution_gbp, p.view_count, p.created_at, p.updated_at, p.deleted_at,
        p.cover_url))",
    postgres: "COALESCE(json_agg(json_build_array(p.id, p.title, p.status, p.channel, p.category,
        p.regular_price_pence, p.sale_price_pence, p.delivery_contribution_gbp, p.view_count, p.created_at,
        p.updated_at, p.deleted_at, p.cover_url) ORDER BY {order}), '[]')::text",
};

/// List pages: newest first.
const NEWEST_FIRST: &str = "p.created_at DESC, p.id DESC";
/// Sync pages: in the order of the walk.
const WALK_ORDER: &str = "p.updated_at, p.id";

impl Store {
    /// The titles of the brand's listings among `ids`, trashed ones too (an audit log names
    /// what it changed by its title).
    pub async fn listing_titles(&self, brand_id: i64, ids: &[i64]) -> Result<Vec<(i64, String)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = (0..ids.len()).map(|n| format!("${}", n + 2)).collect();
        let sql = format!("SELECT id, title FROM listings WHERE brand_id = $1 AND id IN ({})", list.join(", "));
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_as(&sql).bind(brand_id);
            for id in ids {
                query = query.bind(*id);
            }
            Ok(query.fetch_all(pool).await?)
        })
    }

    /// A brand's listing, unless trashed: one statement, its images included.
    pub async fn listing(&self, brand_id: i64, id: i64) -> Result<Option<ListingRecord>, StoreError> {
        let sql = DETAIL_SQL.pick(self);
        on_pool!(self, read, |pool| {
            let Some(json) = sqlx::query_scalar::<_, String>(sql).bind(id).bind(brand_id).fetch_optional(pool).await?
            else {
                return Ok(None);
            };
            Ok(Some(DetailRow::parse(&json)?.into_record()?))
        })
    }

    /// The brand's live listings whose SKU is one of `skus` (bulk upsert): one statement,
    /// served by the `listings_brand_sku` index.
    pub async fn listings_by_sku(&self, brand_id: i64, skus: &[String]) -> Result<Vec<ListingRecord>, StoreError> {
        if skus.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = (0..skus.len()).map(|n| format!("${}", n + 2)).collect();
        let sql = format!(
            "SELECT {} FROM listings l WHERE l.brand_id = $1 AND l.deleted_at IS NULL AND l.sku IN ({}) ORDER BY l.id",
            DETAIL_JSON.pick(self),
            list.join(", ")
        );
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_scalar::<_, String>(&sql).bind(brand_id);
            for sku in skus {
                query = query.bind(sku.as_str());
            }
            query.fetch_all(pool).await?.iter().map(|json| DetailRow::parse(json)?.into_record()).collect()
        })
    }

    /// A page of a brand's listings, newest first, and the number matching in all.
    ///
    /// The page's keys are chosen first, from the index alone, and only its rows are read
    /// (issue 34): a deep page skips index entries, not rows (PostgreSQL computed every
    /// skipped row's columns, its cover included). The first page is one statement, its
    /// count and rows together. A later page reads the count first, in the same snapshot,
    /// and skips from whichever end of the list is nearer: the last page of a brand of
    /// 500,000 skips nothing, the middle one half the brand's index entries.
    pub async fn list_listings(
        &self,
        brand_id: i64,
        filter: ListingQuery,
        limit: i64,
        offset: i64,
    ) -> Result<ListingPage, StoreError> {
        if !filter.words.is_empty() && filter.sku.is_none() {
            return self.search_listings(brand_id, &filter, limit, offset).await;
        }
        let filtered = FilterSql::new(&filter, 2, "k", self.is_postgres(), false);
        let total = total_sql(&filter, &filtered.predicate);
        // A search is planned for its own words each time: PostgreSQL's generic plan of a
        // cached statement, chosen after five executions, does not know the pattern and
        // crossed the brand's whole index with the trigram matches (180 ms against 15 ms at
        // 1,000,000 listings, issue 34). An unnamed statement is planned afresh.
        let cached = !self.is_postgres() || filter.words.is_empty();
        on_pool!(self, read, |pool| {
            if offset == 0 {
                // One statement and one row whatever the page size: the count, and the page
                // as a JSON array in list order. Rows cross from the database thread one by
                // one, so folding the page into one value keeps a 100-row page cheap.
                let sql = format!(
                    "SELECT ({total}) AS total, ({}) AS page",
                    page_sql(self, &filtered, limit, Direction::NewestFirst, false)
                );
                let mut query = sqlx::query_as::<_, (i64, String)>(&sql).persistent(cached).bind(brand_id);
                for value in &filtered.values {
                    query = query.bind(value.as_str());
                }
                let (total, page) = query.fetch_one(pool).await?;
                return Ok(ListingPage { listings: summaries(&page)?, total, total_is_estimate: false });
            }
            let mut tx = pool.begin().await?;
            if self.is_postgres() {
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").execute(&mut *tx).await?;
            }
            let mut query = sqlx::query_scalar::<_, i64>(&total).persistent(cached).bind(brand_id);
            for value in &filtered.values {
                query = query.bind(value.as_str());
            }
            let total = query.fetch_one(&mut *tx).await?;
            let Some(Window { order, take, skip }) = window(total, offset, limit) else {
                tx.commit().await?;
                return Ok(ListingPage { listings: Vec::new(), total, total_is_estimate: false });
            };
            let sql = page_sql(self, &filtered, take, order, skip > 0);
            let mut query = sqlx::query_scalar::<_, String>(&sql).persistent(cached).bind(brand_id);
            for value in &filtered.values {
                query = query.bind(value.as_str());
            }
            if skip > 0 {
                query = query.bind(skip);
            }
            let page = query.fetch_one(&mut *tx).await?;
            tx.commit().await?;
            Ok(ListingPage { listings: summaries(&page)?, total, total_is_estimate: false })
        })
    }

    /// Up to `limit` of a brand's listings after `after` in (`updated_at`, `id`) order,
    /// trashed ones included (decisions 11.2): one statement, served by the `listings_sync`
    /// index of migration 0015. No count: a walk needs only to know whether more follow.
    pub async fn sync_listings(
        &self,
        brand_id: i64,
        filter: ListingQuery,
        after: SyncPosition,
        limit: i64,
    ) -> Result<SyncPage, StoreError> {
        let after_at = Ts::from_micros(after.updated_micros).ok_or_else(|| {
            StoreError::Database(sqlx::Error::Protocol("a sync position outside the calendar".into()))
        })?;
        let postgres = self.is_postgres();
        let filtered = FilterSql::new(&filter, 4, "l", postgres, !postgres);
        let (predicate, next) = (&filtered.predicate, filtered.next);
        let page_json = PAGE_JSON.of(self).replace("{order}", WALK_ORDER);
        let sql = format!(
            "SELECT {page_json} FROM
               (SELECT {SUMMARY_COLUMNS} FROM listings l WHERE l.brand_id = $1 AND (l.updated_at, l.id) > ($2, $3){predicate}
                ORDER BY l.updated_at, l.id {}) p",
            // One more than asked: whether it exists says if more follow.
            page_bounds(limit + 1, 0, next)
        );
        on_pool!(self, read, |pool| {
            let mut query = sqlx::query_scalar::<_, String>(&sql).bind(brand_id).bind(after_at).bind(after.id);
            for value in &filtered.values {
                query = query.bind(value.as_str());
            }
            let page = query.fetch_one(pool).await?;
            let mut listings = summaries(&page)?;
            let has_more = listings.len() as i64 > limit;
            listings.truncate(usize::try_from(limit).unwrap_or(0));
            Ok(SyncPage { listings, has_more })
        })
    }
}

/// A list filter as SQL: ` AND …` conditions on `l` numbering their parameters from
/// `first`, and the values to bind to them in order.
struct FilterSql {
    predicate: String,
    values: Vec<String>,
    /// The number of the first parameter after the filter's.
    next: usize,
}

impl FilterSql {
    /// The conditions on the listings of alias `a`, for PostgreSQL (`postgres`) or SQLite;
    /// with `fts_candidates` (SQLite), each word of three characters or more also narrows
    /// the rows to its trigram index's candidates.
    fn new(filter: &ListingQuery, first: usize, a: &str, postgres: bool, fts_candidates: bool) -> Self {
        let mut predicate = String::new();
        let mut values = Vec::new();
        let mut next = first;
        let exact = [
            ("status", filter.status.map(|s| s.as_str().to_owned())),
            ("channel", filter.channel.map(|c| c.as_str().to_owned())),
            ("sku", filter.sku.clone()),
        ];
        for (column, value) in exact {
            if let Some(value) = value {
                let _ = write!(predicate, " AND {a}.{column} = ${next}");
                values.push(value);
                next += 1;
            }
        }
        for word in &filter.words {
            // The rule (decisions 11.2), whatever finds the candidates. On PostgreSQL as one
            // text, the title and the SKU joined by a line break, which the trigram index of
            // `listings_words` holds: a word has no white space in it, so it is found in the
            // joined text exactly when it is found in the title or in the SKU.
            // A word under three characters has no trigrams: written so that no index can
            // be asked for it (a trigram index would read its every entry).
            if postgres && word.chars().count() >= 3 {
                let _ = write!(predicate, " AND {} LIKE lower(${next}) ESCAPE '\\'", words_text(a));
            } else {
                let _ = write!(
                    predicate,
                    " AND (lower({a}.title) LIKE lower(${next}) ESCAPE '\\' OR lower(COALESCE({a}.sku, '')) LIKE lower(${next}) ESCAPE '\\')"
                );
            }
            values.push(format!("%{}%", escape_like(word)));
            next += 1;
            // On SQLite the candidates come from the trigram index (migrations/sqlite/0044),
            // which answers a superset of the rule's matches (it folds case beyond ASCII) for
            // words of three characters or more.
            if fts_candidates && word.chars().count() >= 3 {
                let _ = write!(
                    predicate,
                    " AND {a}.id IN (SELECT rowid FROM listings_search WHERE listings_search MATCH ${next})"
                );
                values.push(fts_phrase(word));
                next += 1;
            }
        }
        Self { predicate, values, next }
    }
}

/// A listing's title and SKU as the one lower-case text PostgreSQL's `listings_words` index
/// holds (migrations/postgres/0036): the expression must be written as the index writes it.
fn words_text(a: &str) -> String {
    format!("(lower({a}.title) || E'\\n' || lower(COALESCE({a}.sku, '')))")
}

/// The number of the brand's live listings that `filter` matches, `$1` the brand and the
/// filter's values from `$2`. Filtered by status and channel alone (the default: status
/// `active`) or not at all, it is the brand's count kept by triggers (migrations
/// sqlite/0017 and 0050, postgres/0009 and 0050); otherwise the matches are counted.
fn total_sql(filter: &ListingQuery, predicate: &str) -> String {
    if filter.sku.is_some() || !filter.words.is_empty() {
        return format!("SELECT COUNT(*) FROM listings k WHERE k.brand_id = $1 AND k.deleted_at IS NULL{predicate}");
    }
    // The status and the channel are the filter's first parameters, in that order.
    let mut kept = String::new();
    let mut n = 2;
    for (column, given) in [("status", filter.status.is_some()), ("channel", filter.channel.is_some())] {
        if given {
            let _ = write!(kept, " AND c.{column} = ${n}");
            n += 1;
        }
    }
    format!("SELECT CAST(COALESCE(SUM(c.live), 0) AS BIGINT) FROM listing_counts c WHERE c.brand_id = $1{kept}")
}

/// Which end of the newest-first list a page's keys are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    NewestFirst,
    OldestFirst,
}

/// The keys of a page: `take` rows after skipping `skip` from the end `order` reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    order: Direction,
    take: i64,
    skip: i64,
}

/// The rows `offset..offset + limit` of a newest-first list of `total`, read from the nearer
/// end; `None` past the end.
fn window(total: i64, offset: i64, limit: i64) -> Option<Window> {
    let take = limit.min(total - offset);
    if take <= 0 {
        return None;
    }
    let from_oldest = total - offset - take;
    Some(if from_oldest < offset {
        Window { order: Direction::OldestFirst, take, skip: from_oldest }
    } else {
        Window { order: Direction::NewestFirst, take, skip: offset }
    })
}

/// The page as one JSON array in newest-first order: its keys chosen from the index in
/// `order` (`LIMIT take`, and `OFFSET $next` when `skip`), then its rows read.
fn page_sql(store: &Store, filtered: &FilterSql, take: i64, order: Direction, skip: bool) -> String {
    let from = format!("FROM listings k WHERE k.brand_id = $1 AND k.deleted_at IS NULL{}", filtered.predicate);
    let keys_order = match order {
        Direction::NewestFirst => "k.created_at DESC, k.id DESC",
        Direction::OldestFirst => "k.created_at, k.id",
    };
    let bounds = page_bounds(take, i64::from(skip), filtered.next);
    keyed_page_sql(store, &format!("SELECT k.id {from} ORDER BY {keys_order} {bounds}"))
}

/// A page as one JSON array in newest-first order: the ids `keys` selects (a statement
/// choosing a page's keys in order, `LIMIT` and all), then only their rows read.
fn keyed_page_sql(store: &Store, keys: &str) -> String {
    let page_json = PAGE_JSON.of(store).replace("{order}", NEWEST_FIRST);
    format!(
        "SELECT {page_json} FROM
           (SELECT {SUMMARY_COLUMNS} FROM listings l WHERE l.id IN ({keys})
            ORDER BY l.created_at DESC, l.id DESC) p"
    )
}

/// `word` as an FTS5 phrase: its characters in a row, anywhere in a title or SKU (never in
/// the index's brand column).
pub(super) fn fts_phrase(word: &str) -> String {
    format!("{{title sku}} : \"{}\"", word.replace('"', "\"\""))
}

/// `LIMIT n [OFFSET $k]` of a page: the size written into the statement, the offset bound
/// as parameter `$next` when there is one. A size given as a parameter makes PostgreSQL's
/// generic plan assume a tenth of the table, so it kept planning every execution afresh (a
/// third of a page's cost, issue 19); with the size in the text the cached generic plan
/// wins after five executions. Sizes are at most a few hundred distinct values (a page's
/// bound), so the statements stay few.
fn page_bounds(limit: i64, offset: i64, next: usize) -> String {
    if offset > 0 {
        format!("LIMIT {limit} OFFSET ${next}")
    } else {
        format!("LIMIT {limit}")
    }
}

/// A page folded into one JSON array by `PAGE_JSON`, as records.
fn summaries(page: &str) -> Result<Vec<ListingSummaryRecord>, StoreError> {
    let rows: Vec<SummaryRow> = rows::parse_json(page, "listing page")?;
    rows.into_iter().map(SummaryRow::into_record).collect()
}

/// `text` as a LIKE pattern matching itself literally (escape character `\`).
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{window, Direction, Window};

    #[test]
    fn a_page_is_read_from_the_nearer_end_of_the_list() {
        let newest = |take, skip| Some(Window { order: Direction::NewestFirst, take, skip });
        let oldest = |take, skip| Some(Window { order: Direction::OldestFirst, take, skip });
        // 10 rows, pages of 3: rows 3..6 from the newest end, 6..9 skipping 1 from the oldest.
        assert_eq!(window(10, 3, 3), newest(3, 3));
        assert_eq!(window(10, 6, 3), oldest(3, 1));
        assert_eq!(window(10, 9, 3), oldest(1, 0), "the last page holds what is left");
        assert_eq!(window(10, 10, 3), None);
        assert_eq!(window(0, 3, 3), None);
        // The middle: as far from either end, read newest first.
        assert_eq!(window(9, 3, 3), newest(3, 3));
        assert_eq!(window(500_000, 499_900, 100), oldest(100, 0));
    }
}
