//! A brand's listings found by words (`q`, decisions 11.2) at a cost that follows what the
//! words find, not how large the brand is.
//!
//! Each statement names the way it reads, so that no plan depends on the statistics a
//! database has or lacks (a new database has none; a brand that grew after `ANALYZE` has
//! wrong ones):
//!
//! - **Candidates**: the text index hands back the brand's listings that hold the trigrams of
//!   every word of three characters or more, and the rule is checked on them alone. SQLite:
//!   the FTS5 index of migrations/sqlite/0044 asked for the words *and* the brand's token,
//!   joined first (`CROSS JOIN`). PostgreSQL: the GIN index `listings_words`
//!   (migrations/postgres/0036) on the brand and the words, the brand written
//!   `(brand_id + 0)` as the index writes it so that no b-tree index on the brand can serve
//!   the statement, and the transaction's planner allowed bitmap scans only.
//! - **Walk**: the brand's own index in list order, each row tested by the rule, stopping at
//!   the page's end. SQLite: `INDEXED BY`; PostgreSQL: plain index scans only.
//!
//! A search first reads its matches through the candidates once, stopping at one more than
//! [`SEARCH_EXACT_TOTAL`] (a materialised `WITH`), and that one read answers both their
//! count and the page among them. Up to the cap, the total is exact and the page is the
//! candidates sorted: the cost is the matches'. Past it, the matches are many, so a walk meets a page of
//! them soon: the page is walked, and the total estimated from the walk — the share of the
//! rows walked that matched, times the rows the filter's status and channel keep (the
//! brand's kept counts) — and marked `total_is_estimate`. A walk that reaches the brand's
//! end has seen every match: its total is exact again.
//!
//! Words under three characters have no trigrams. Beside a longer word they are checked on
//! its candidates; alone they are a walk from the start: the count reads the brand's rows
//! until it has seen one more than the cap or the brand's end, so a short word that few
//! listings have costs a read of the brand (about 50 ms at 200,000 listings).

use super::{fts_phrase, keyed_page_sql, summaries, FilterSql};

use crate::{on_pool, Store, StoreError};
use rehome_domain::listing::{ListingQuery, SEARCH_EXACT_TOTAL};
use rehome_domain::view::ListingPage;

/// The key order of a list page.
const NEWEST_FIRST: &str = "k.created_at DESC, k.id DESC";

/// How a statement reads the brand's listings (see the module's notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    Candidates,
    Walk,
}

/// A search's statements, `$1` the brand and the rule's values from `$2`.
struct Search {
    postgres: bool,
    /// The status, channel and words, `$2` on: the status and channel first.
    rule: FilterSql,
    /// The status and channel alone, numbered as in `rule`: what a walk's rows are
    /// counted in, and what the brand's kept counts count.
    scope: FilterSql,
    /// The words' part of the rule's conditions (what follows the scope's).
    words: String,
    /// SQLite's FTS5 query of the long words and the brand: bound after the rule's values.
    fts: Option<String>,
    /// Some word has three characters or more: the candidates can be read.
    trigrams: bool,
    /// The brand index a walk reads on SQLite.
    walk_index: &'static str,
}

impl Search {
    fn new(brand_id: i64, filter: &ListingQuery, postgres: bool) -> Self {
        let rule = FilterSql::new(filter, 2, "k", postgres, false);
        let scope = ListingQuery { status: filter.status, channel: filter.channel, ..ListingQuery::default() };
        let scope = FilterSql::new(&scope, 2, "k", postgres, false);
        let words = rule.predicate[scope.predicate.len()..].to_owned();
        let long: Vec<&String> = filter.words.iter().filter(|w| w.chars().count() >= 3).collect();
        let trigrams = !long.is_empty();
        let fts = (!postgres && trigrams).then(|| {
            let mut query: Vec<String> = long.iter().map(|w| fts_phrase(w)).collect();
            query.push(format!("search_brand : \"b{brand_id}b\""));
            query.join(" AND ")
        });
        // The index whose leading columns the filter fixes: with a status, the brand's
        // listings of that status in list order; else all of the brand's.
        let walk_index = if filter.status.is_some() { "listings_brand_status_recent" } else { "listings_brand_recent" };
        Self { postgres, rule, scope, words, fts, trigrams, walk_index }
    }

    /// The number of the first parameter after the rule's and the FTS5 query's.
    fn next(&self, reach: Reach) -> usize {
        self.rule.next + usize::from(reach == Reach::Candidates && self.fts.is_some())
    }

    /// `FROM … WHERE …` of the rows matching, read the way `reach` says.
    fn from(&self, reach: Reach) -> String {
        let rule = &self.rule.predicate;
        match (reach, self.postgres) {
            (Reach::Candidates, false) => format!(
                "FROM listings_search s CROSS JOIN listings k
                 WHERE s.listings_search MATCH ${} AND k.id = s.rowid AND k.brand_id = $1 AND k.deleted_at IS NULL{rule}",
                self.rule.next
            ),
            // The words' candidates first, in a subquery the planner may neither flatten nor
            // push the other conditions into (`OFFSET 0`): its conditions are the brand and
            // the words alone, which only `listings_words` serves (a partial index of live
            // rows, or one holding the status, would otherwise be a way in).
            (Reach::Candidates, true) => format!(
                "FROM (SELECT k.id, k.created_at, k.status, k.channel, k.deleted_at FROM listings k
                       WHERE (k.brand_id + 0) = $1{} OFFSET 0) k
                 WHERE k.deleted_at IS NULL{}",
                self.words, self.scope.predicate
            ),
            (Reach::Walk, false) => format!(
                "FROM listings k INDEXED BY {} WHERE k.brand_id = $1 AND k.deleted_at IS NULL{rule}",
                self.walk_index
            ),
            (Reach::Walk, true) => format!("FROM listings k WHERE k.brand_id = $1 AND k.deleted_at IS NULL{rule}"),
        }
    }

    /// How the count reads: through the candidates when the words have trigrams.
    fn counted(&self) -> Reach {
        if self.trigrams {
            Reach::Candidates
        } else {
            Reach::Walk
        }
    }

    /// The search's first statement: its matches read once, up to one more than
    /// [`SEARCH_EXACT_TOTAL`], answering their count and, when the count is within the cap,
    /// the page of `limit` after `$offset` among them (past the cap a walk reads the page, so
    /// the matches read are not sorted: a `CASE` runs its subquery only when it is chosen).
    fn first_sql(&self, store: &Store, limit: i64) -> String {
        let counted = self.counted();
        let keys = format!(
            "SELECT f.id FROM found f ORDER BY f.created_at DESC, f.id DESC LIMIT {limit} OFFSET ${}",
            self.next(counted)
        );
        format!(
            "WITH found AS MATERIALIZED (SELECT k.id, k.created_at {} LIMIT {})
             SELECT c.n, CASE WHEN c.n <= {} THEN ({}) END FROM (SELECT COUNT(*) AS n FROM found) c",
            self.from(counted),
            SEARCH_EXACT_TOTAL + 1,
            SEARCH_EXACT_TOTAL,
            keyed_page_sql(store, &keys)
        )
    }

    /// Every match counted: only after a walk went past the last match.
    fn full_count_sql(&self) -> String {
        format!("SELECT COUNT(*) {}", self.from(Reach::Walk))
    }

    /// A page of `limit` after `$offset` walked in list order.
    fn walk_page_sql(&self, store: &Store, limit: i64) -> String {
        let keys = format!(
            "SELECT k.id {} ORDER BY {NEWEST_FIRST} LIMIT {limit} OFFSET ${}",
            self.from(Reach::Walk),
            self.next(Reach::Walk)
        );
        keyed_page_sql(store, &keys)
    }

    /// The rows the filter's status and channel keep in all (the brand's kept counts), and
    /// how many of them come at or before the listing at (`$n`, `$n+1`) in list order, `n`
    /// the first parameter after the scope's (status and channel from `$2`).
    fn walked_sql(&self) -> String {
        let scope = &self.scope;
        let n = scope.next;
        let hint = if self.postgres { String::new() } else { format!(" INDEXED BY {}", self.walk_index) };
        let kept = scope.predicate.replace(" AND k.", " AND c.");
        format!(
            "SELECT (SELECT CAST(COALESCE(SUM(c.live), 0) AS BIGINT) FROM listing_counts c WHERE c.brand_id = $1{kept}),
                    (SELECT COUNT(*) FROM listings k{hint} WHERE k.brand_id = $1 AND k.deleted_at IS NULL{}
                     AND (k.created_at, k.id) >= (${n}, ${}))",
            scope.predicate,
            n + 1
        )
    }
}

/// On PostgreSQL, the access paths a statement of the search may use, for the rest of its
/// transaction (`set_config(…, true)` is `SET LOCAL`): planned from then on with no other
/// choice, whatever the statistics say.
fn planner(reach: Reach) -> &'static str {
    match reach {
        Reach::Candidates => {
            "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true),
                    set_config('enable_indexonlyscan', 'off', true), set_config('enable_bitmapscan', 'on', true)"
        }
        Reach::Walk => {
            "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
                    set_config('enable_indexscan', 'on', true), set_config('enable_indexonlyscan', 'on', true)"
        }
    }
}

/// The estimated total of a walked page: `walked` rows of `kept` read to meet `seen` matches.
/// At least one more than the cap (the count saw that many), at most what the scope keeps.
fn estimate(seen: i64, walked: i64, kept: i64) -> i64 {
    let floor = SEARCH_EXACT_TOTAL + 1;
    if walked <= 0 {
        return floor.max(seen);
    }
    let scaled = (i128::from(seen) * i128::from(kept) + i128::from(walked) / 2) / i128::from(walked);
    i64::try_from(scaled).unwrap_or(i64::MAX).clamp(floor, kept.max(floor))
}

/// A statement of `search` with `$1` (the brand), the rule's values and, reading
/// candidates on SQLite, the FTS5 query bound; planned afresh on PostgreSQL, whose generic
/// plan would not know the words.
macro_rules! bound {
    ($query:expr, $search:expr, $brand_id:expr, $reach:expr) => {{
        let mut query = $query.persistent(!$search.postgres).bind($brand_id);
        for value in &$search.rule.values {
            query = query.bind(value.as_str());
        }
        if let (Reach::Candidates, Some(fts)) = ($reach, &$search.fts) {
            query = query.bind(fts.as_str());
        }
        query
    }};
}

impl Store {
    /// A page of a brand's listings matching `filter`'s words (and its status and channel),
    /// newest first, with the total: exact up to [`SEARCH_EXACT_TOTAL`], else estimated.
    pub(super) async fn search_listings(
        &self,
        brand_id: i64,
        filter: &ListingQuery,
        limit: i64,
        offset: i64,
    ) -> Result<ListingPage, StoreError> {
        let postgres = self.is_postgres();
        let search = Search::new(brand_id, filter, postgres);
        on_pool!(self, read, |pool| {
            let mut tx = pool.begin().await?;
            if postgres {
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").execute(&mut *tx).await?;
            }
            let counted = search.counted();
            if postgres {
                sqlx::query(planner(counted)).execute(&mut *tx).await?;
            }
            let sql = search.first_sql(self, limit);
            let (count, page) = bound!(sqlx::query_as::<_, (i64, Option<String>)>(&sql), search, brand_id, counted)
                .bind(offset)
                .fetch_one(&mut *tx)
                .await?;
            if let Some(page) = page.filter(|_| count <= SEARCH_EXACT_TOTAL) {
                tx.commit().await?;
                return Ok(ListingPage { listings: summaries(&page)?, total: count, total_is_estimate: false });
            }
            // Many matches: a walk in list order meets a page of them soon.
            if postgres && counted != Reach::Walk {
                sqlx::query(planner(Reach::Walk)).execute(&mut *tx).await?;
            }
            let sql = search.walk_page_sql(self, limit);
            let page = bound!(sqlx::query_scalar::<_, String>(&sql), search, brand_id, Reach::Walk)
                .bind(offset)
                .fetch_one(&mut *tx)
                .await?;
            let listings = summaries(&page)?;
            let seen = offset + listings.len() as i64;
            let (total, total_is_estimate) = match listings.last() {
                // The walk reached the brand's end: every match was met.
                Some(_) if (listings.len() as i64) < limit => (seen, false),
                Some(last) => {
                    let sql = search.walked_sql();
                    let mut query = sqlx::query_as::<_, (i64, i64)>(&sql).persistent(!postgres).bind(brand_id);
                    for value in &search.scope.values {
                        query = query.bind(value.as_str());
                    }
                    let (kept, walked) = query.bind(last.created_at).bind(last.id).fetch_one(&mut *tx).await?;
                    (estimate(seen, walked, kept), true)
                }
                // A page past the last match: the walk read the brand to its end, and the
                // matches are counted exactly for what that cost.
                None => {
                    let sql = search.full_count_sql();
                    let full = bound!(sqlx::query_scalar::<_, i64>(&sql), search, brand_id, Reach::Walk)
                        .fetch_one(&mut *tx)
                        .await?;
                    (full, false)
                }
            };
            tx.commit().await?;
            Ok(ListingPage { listings, total, total_is_estimate })
        })
    }
}

#[cfg(test)]
impl Store {
    /// The plan of each statement a search of `filter` can run, by the way it reads: the
    /// first (the matches counted, and their page), the walked page and the walk's boundary
    /// count.
    async fn search_plans(&self, brand_id: i64, filter: &ListingQuery) -> Vec<(&'static str, Reach, String)> {
        let postgres = self.is_postgres();
        let search = Search::new(brand_id, filter, postgres);
        let statements = vec![
            ("first", search.counted(), search.first_sql(self, 20)),
            ("page", Reach::Walk, search.walk_page_sql(self, 20)),
            ("walked", Reach::Walk, search.walked_sql()),
        ];
        let explain = if postgres { "EXPLAIN " } else { "EXPLAIN QUERY PLAN " };
        let column = if postgres { 0 } else { 3 };
        let mut plans = Vec::new();
        on_pool!(self, read, |pool| {
            for (what, reach, sql) in &statements {
                let mut tx = pool.begin().await.unwrap();
                if postgres {
                    sqlx::query(planner(*reach)).execute(&mut *tx).await.unwrap();
                }
                let sql = format!("{explain}{sql}");
                let query = if *what == "walked" {
                    // The scope's values, then a listing's place in the list.
                    let mut query = sqlx::query(&sql).bind(brand_id);
                    for value in &search.scope.values {
                        query = query.bind(value.as_str());
                    }
                    query.bind(crate::now()).bind(1_i64)
                } else {
                    bound!(sqlx::query(&sql), search, brand_id, *reach).bind(0_i64)
                };
                let rows = query.fetch_all(&mut *tx).await.unwrap();
                let lines: Vec<String> = rows.iter().map(|row| sqlx::Row::get::<String, _>(row, column)).collect();
                plans.push((*what, *reach, lines.join("\n")));
                tx.rollback().await.unwrap();
            }
        });
        plans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_scales_the_share_met_and_stays_within_what_is_known() {
        let cap = SEARCH_EXACT_TOTAL;
        // 20 matches in 400 rows walked of 200,000: a twentieth.
        assert_eq!(estimate(20, 400, 200_000), 10_000);
        // Never below what the count saw, never above what the scope keeps.
        assert_eq!(estimate(20, 200_000, 200_000), cap + 1);
        assert_eq!(estimate(20, 20, 5_000), 5_000);
        assert_eq!(estimate(20, 0, 5_000), cap + 1);
        assert_eq!(estimate(i64::MAX / 2, 1, i64::MAX), i64::MAX);
    }

    use crate::brands::BrandInsert;
    use crate::users::UserInsert;
    use rehome_domain::user::Role;

    /// A brand with `n` active listings titled `title` and a number.
    async fn brand_with(store: &Store, slug: &str, n: i64, title: &str) -> i64 {
        let BrandInsert::Created(brand) = store.create_brand(slug, slug).await.unwrap() else { panic!("slug taken") };
        let UserInsert::Created(user) =
            store.create_user(brand.id, "Seller", &format!("{slug}@example.com"), Role::Admin).await.unwrap()
        else {
            panic!("email taken")
        };
        on_pool!(store, write, |pool| {
            let mut tx = pool.begin().await.unwrap();
            for i in 0..n {
                sqlx::query(
                    "INSERT INTO listings (brand_id, user_id, status, channel, title, category, condition,
                       regular_price_pence, delivery_contribution_gbp, quantity, created_at, updated_at)
                     VALUES ($1, $2, 'active', 'exchange', $3, 'Armchairs', 'good', 10000, 0, 1, $4, $4)",
                )
                .bind(brand.id)
                .bind(user.id)
                .bind(format!("{title} {i}"))
                .bind(crate::now())
                .execute(&mut *tx)
                .await
                .unwrap();
            }
            tx.commit().await.unwrap();
        });
        brand.id
    }

    /// Every statement reads the way its search chose, on a database without statistics and
    /// on one whose statistics say a word is everywhere (one brand holds nearly every
    /// listing, and every one of its titles has the word).
    async fn every_plan_reads_as_chosen_whatever_the_statistics(store: &Store) {
        let big = brand_with(store, "big", 600, "Oak chair").await;
        let small = brand_with(store, "small", 5, "Pine desk").await;
        let postgres = store.is_postgres();
        for analysed in [false, true] {
            if analysed {
                on_pool!(store, write, |pool| {
                    sqlx::query("ANALYZE").execute(pool).await.unwrap();
                });
            }
            for brand_id in [big, small] {
                for (status, words) in [
                    (Some(rehome_domain::listing::ListingStatus::Active), vec!["oak"]),
                    (None, vec!["oak", "ch"]),
                    (Some(rehome_domain::listing::ListingStatus::Active), vec!["ch"]),
                ] {
                    let filter = ListingQuery {
                        status,
                        words: words.iter().map(|w| (*w).to_owned()).collect(),
                        ..ListingQuery::default()
                    };
                    let walk_index = Search::new(brand_id, &filter, postgres).walk_index;
                    for (statement, reach, plan) in store.search_plans(brand_id, &filter).await {
                        let what =
                            format!("{filter:?} brand {brand_id} analysed {analysed} {statement} {reach:?}:\n{plan}");
                        // A page walks the brand in list order (on PostgreSQL either of the
                        // brand's indexes in that order); a count, any index of the brand's.
                        let index = match (statement, postgres) {
                            ("page", false) => walk_index,
                            ("page", true) => "listings_brand_",
                            _ => "listings_",
                        };
                        match (reach, postgres) {
                            (Reach::Candidates, false) => {
                                assert!(plan.contains("SCAN s VIRTUAL TABLE"), "{what}");
                                assert!(plan.contains("SEARCH k USING INTEGER PRIMARY KEY"), "{what}");
                            }
                            (Reach::Walk, false) => {
                                assert!(plan.contains(&format!("SEARCH k USING INDEX {index}")), "{what}");
                                assert!(plan.contains("(brand_id=?"), "{what}");
                                assert!(!plan.contains("VIRTUAL TABLE"), "{what}");
                            }
                            (Reach::Candidates, true) => {
                                assert!(plan.contains("Bitmap Index Scan on listings_words"), "{what}");
                                assert!(!plan.contains("Index Scan using listings_brand"), "{what}");
                            }
                            (Reach::Walk, true) => {
                                assert!(plan.contains(&format!("Scan using {index}")), "{what}");
                                assert!(!plan.contains("Bitmap"), "{what}");
                            }
                        }
                        assert!(
                            !plan.contains("Seq Scan on listings ")
                                && !plan.contains("SCAN k")
                                && !plan.contains("SCAN l"),
                            "{what}"
                        );
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn on_sqlite_every_plan_reads_as_chosen_whatever_the_statistics() {
        let (store, _dir) = crate::testing::sqlite_store().await;
        every_plan_reads_as_chosen_whatever_the_statistics(&store).await;
    }

    #[tokio::test]
    async fn on_postgres_every_plan_reads_as_chosen_whatever_the_statistics() {
        let Some(pg) = crate::testing::PostgresStore::new("search_plans").await else { return };
        every_plan_reads_as_chosen_whatever_the_statistics(&pg.store).await;
        pg.finish().await;
    }
}
