//! Collections of sold clearance items. A collection and its `collection.scheduled` event
//! are written in one transaction; an order has at most one collection (unique index).

use chrono::NaiveDate;

use super::mail::{enqueue_mail, MailBody, NewMail};
use super::{on_conn, on_pool, record_audit, Conn, Store, StoreError, Ts, READ_SNAPSHOT};
use rehome_domain::audit::AuditEntry;
use rehome_domain::collection::{CollectionQuery, CollectionStatus};
use rehome_domain::event::Event;
use rehome_domain::listing::Channel;
use rehome_domain::view::CollectionRow;

/// What recording a collection did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectionInsert {
    Recorded,
    /// The order's collection is already scheduled (its unique index).
    Exists,
}

/// What to tell the order's buyer, if it was bought on the storefront: the subject and the
/// body composed from the buyer's name (decisions 14.5).
pub struct BuyerNotice<'a> {
    pub subject: &'a str,
    pub body: &'a (dyn Fn(&str) -> MailBody + Sync),
}

/// What a change to collections records with it in its transaction: its event, its audit
/// entry and the buyer's mail.
pub struct CollectionNews<'a> {
    /// The order the news is about.
    pub order_id: i64,
    pub event: &'a Event,
    pub audit: &'a AuditEntry,
    pub notice: Option<BuyerNotice<'a>>,
}

/// A change to a scheduled collection.
#[derive(Debug, Clone)]
pub enum CollectionChange {
    /// Another day (and warehouse), confirmed at `scheduled_at`.
    Move { scheduled_for: NaiveDate, scheduled_at: Ts, warehouse_id: Option<String>, warehouse_label: String },
    /// Withdrawn: the order waits for a date again.
    Cancel,
}

#[derive(Debug, Clone)]
pub struct NewCollection {
    pub id: String,
    pub brand_id: i64,
    pub order_id: i64,
    pub scheduled_for: NaiveDate,
    pub scheduled_at: Ts,
    pub warehouse_id: Option<String>,
    pub warehouse_label: String,
}

/// The columns of a [`CollectionRow`] over `orders o`, `brands b`, `listings l` and
/// `collections c`.
const COLLECTION_COLUMNS: &str =
    "o.id AS order_id, b.slug AS brand_slug, o.listing_id, o.quantity, o.buyer_window_start,
    o.buyer_window_end, o.status AS order_status, c.id, c.scheduled_for, c.scheduled_at, c.warehouse_id,
    c.warehouse_label, COALESCE(o.title, l.title) AS title, l.warehouse_id AS listing_warehouse_id";

impl Store {
    /// A page of the brand's clearance orders in buyer-window order, and how many match.
    pub async fn collections(
        &self,
        brand_id: i64,
        filter: CollectionQuery,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<CollectionRow>, i64), StoreError> {
        let condition = match filter {
            CollectionQuery::Only(CollectionStatus::Unscheduled) => "AND c.id IS NULL",
            CollectionQuery::Only(CollectionStatus::Scheduled) => "AND c.id IS NOT NULL",
            CollectionQuery::Any => "",
        };
        let from = format!(
            "FROM orders o JOIN brands b ON b.id = o.brand_id LEFT JOIN collections c ON c.order_id = o.id
             WHERE o.brand_id = $1 AND o.channel = $2 {condition}"
        );
        // The listing only adds columns (at most one row: its id), so the count goes without it.
        let from_listings = from.replacen(
            "LEFT JOIN collections",
            "LEFT JOIN listings l ON l.id = o.listing_id AND l.brand_id = o.brand_id LEFT JOIN collections",
            1,
        );
        let page = format!(
            "SELECT {COLLECTION_COLUMNS} {from_listings} ORDER BY o.buyer_window_start, o.id LIMIT $3 OFFSET $4"
        );
        let count = format!("SELECT COUNT(*) {from}");
        let snapshot = READ_SNAPSHOT.of(self);
        on_pool!(self, read, |pool| {
            let clearance = Channel::Clearance.as_str();
            let mut tx = pool.begin().await?;
            sqlx::query(snapshot).execute(&mut *tx).await?;
            let rows = sqlx::query_as(&page)
                .bind(brand_id)
                .bind(clearance)
                .bind(limit)
                .bind(offset)
                .fetch_all(&mut *tx)
                .await?;
            let total: i64 = sqlx::query_scalar(&count).bind(brand_id).bind(clearance).fetch_one(&mut *tx).await?;
            tx.commit().await?;
            Ok((rows, total))
        })
    }

    /// The brand's scheduled collection `id` with its order, if there is one.
    pub async fn scheduled_collection(&self, brand_id: i64, id: &str) -> Result<Option<CollectionRow>, StoreError> {
        let query = format!(
            "SELECT {COLLECTION_COLUMNS}
             FROM collections c JOIN orders o ON o.id = c.order_id AND o.brand_id = c.brand_id
             JOIN brands b ON b.id = o.brand_id
             LEFT JOIN listings l ON l.id = o.listing_id AND l.brand_id = o.brand_id
             WHERE c.id = $1 AND c.brand_id = $2"
        );
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&query).bind(id).bind(brand_id).fetch_optional(pool).await?))
    }

    /// Moves or cancels the brand's collection `id` if it is still scheduled for `was` (as
    /// the caller read it), with its event, its audit entry and the buyer's mail in the same
    /// transaction. `false` when it changed meanwhile (moved, cancelled): read it again.
    pub async fn change_collection(
        &self,
        brand_id: i64,
        id: &str,
        was: NaiveDate,
        change: &CollectionChange,
        news: CollectionNews<'_>,
    ) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let changed = match change {
                CollectionChange::Move { scheduled_for, scheduled_at, warehouse_id, warehouse_label } => {
                    sqlx::query(
                        "UPDATE collections SET scheduled_for = $1, scheduled_at = $2, warehouse_id = $3,
                                                warehouse_label = $4
                         WHERE id = $5 AND brand_id = $6 AND scheduled_for = $7",
                    )
                    .bind(scheduled_for)
                    .bind(scheduled_at)
                    .bind(warehouse_id.as_deref())
                    .bind(warehouse_label)
                    .bind(id)
                    .bind(brand_id)
                    .bind(was)
                    .execute(&mut *tx)
                    .await?
                }
                CollectionChange::Cancel => {
                    sqlx::query("DELETE FROM collections WHERE id = $1 AND brand_id = $2 AND scheduled_for = $3")
                        .bind(id)
                        .bind(brand_id)
                        .bind(was)
                        .execute(&mut *tx)
                        .await?
                }
            };
            if changed.rows_affected() != 1 {
                return Ok(false);
            }
            self.record_news((&mut *tx).into(), brand_id, news).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Records `news`: its event, its audit entry, and its notice to the buyer when the order
    /// was bought on the storefront.
    async fn record_news(&self, mut conn: Conn<'_>, brand_id: i64, news: CollectionNews<'_>) -> Result<(), StoreError> {
        self.insert_event(conn.reborrow(), news.event).await?;
        record_audit(conn.reborrow(), news.audit).await?;
        let Some(notice) = news.notice else { return Ok(()) };
        let buyer: Option<(String, String)> = on_conn!(conn.reborrow(), |c| {
            sqlx::query_as("SELECT name, email FROM order_buyers WHERE order_id = $1")
                .bind(news.order_id)
                .fetch_optional(&mut *c)
                .await?
        });
        if let Some((name, email)) = buyer {
            let body = (notice.body)(&name);
            let mail = NewMail {
                brand_id: Some(brand_id),
                to: &email,
                subject: notice.subject,
                text: &body.text,
                html: body.html.as_deref(),
                attachment: None,
            };
            enqueue_mail(conn, self.sealer()?, &mail).await?;
        }
        Ok(())
    }

    /// The collection warehouse of a listing's order: `given` (already checked to be the
    /// brand's), else the listing's warehouse while it is still in the brand's book, else
    /// the brand's default; `None` when the brand has no warehouse. Answers (id, label).
    pub async fn collection_warehouse(
        &self,
        brand_id: i64,
        given: Option<&str>,
        listing_id: i64,
    ) -> Result<Option<(String, String)>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT id, label FROM warehouses
                 WHERE brand_id = $1 AND id = COALESCE(
                     $2,
                     (SELECT w.id FROM listings l JOIN warehouses w ON w.id = l.warehouse_id AND w.brand_id = $1
                      WHERE l.id = $3),
                     (SELECT id FROM warehouses WHERE brand_id = $1 AND is_default))",
            )
            .bind(brand_id)
            .bind(given)
            .bind(listing_id)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Records the collection and its event together, unless the order already has one; when
    /// the order was bought on the storefront, queues in the same transaction the mail
    /// `notify` composes from the buyer's name (decisions 14.5).
    pub async fn record_collection(
        &self,
        new: &NewCollection,
        news: CollectionNews<'_>,
    ) -> Result<CollectionInsert, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO collections (id, brand_id, order_id, scheduled_for, scheduled_at, warehouse_id,
                                          warehouse_label)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&new.id)
            .bind(new.brand_id)
            .bind(new.order_id)
            .bind(new.scheduled_for)
            .bind(new.scheduled_at)
            .bind(new.warehouse_id.as_deref())
            .bind(&new.warehouse_label)
            .execute(&mut *tx)
            .await;
            match inserted {
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => return Ok(CollectionInsert::Exists),
                other => other?,
            };
            self.record_news((&mut *tx).into(), new.brand_id, news).await?;
            tx.commit().await?;
            Ok(CollectionInsert::Recorded)
        })
    }
}
