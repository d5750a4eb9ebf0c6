//! Orders: a sale takes stock with one conditional `UPDATE`, so concurrent buyers can never
//! take more than there is; the order row is written in the same transaction.

use chrono::NaiveDate;
use sqlx::FromRow;

use super::listings::stamp_listing_change;
use super::mail::{enqueue_mail, MailBody, NewMail};
use super::wallet::{insert_entry, NewLedgerEntry};
use super::{now, on_conn, on_pool, Conn, Store, StoreError, Ts};
use rehome_domain::listing::ListingStatus;
use rehome_domain::order::{OrderRequest, OrderStatus};
use rehome_domain::view::OrderRecord;

/// Orders placed before the title and delivery contribution were kept read the listing's.
pub(super) const ORDER_COLUMNS: &str = "o.id, o.brand_id, b.slug AS brand_slug, o.listing_id, o.channel, o.quantity,
    o.unit_price_pence, o.buyer_window_start, o.buyer_window_end, o.status, o.completed_at, o.created_at,
    COALESCE(o.title, l.title) AS title,
    COALESCE(o.delivery_contribution_gbp, l.delivery_contribution_gbp) AS delivery_contribution_gbp";

/// What placing an order did.
#[derive(Debug)]
pub enum OrderPlacement {
    Placed(OrderRecord),
    /// No such listing, or it is trashed.
    ListingNotFound,
    /// A draft or closed listing.
    ListingNotActive,
    InsufficientStock,
}

/// What completing an order did.
#[derive(Debug)]
pub enum OrderCompletion {
    Completed(OrderRecord),
    NotFound,
    AlreadyCompleted,
}

/// What a sale took: the listing as it was sold (an order keeps its price and title).
#[derive(Debug, Clone, FromRow)]
pub(super) struct Sold {
    pub brand_id: i64,
    pub brand_slug: String,
    pub channel: String,
    pub unit_price_pence: i64,
    pub title: String,
    pub delivery_contribution_gbp: i64,
    /// The event types the brand's endpoint asks for, read with the stock (no endpoint:
    /// `None`): a sale writes listing events only when they name one.
    pub event_types: Option<String>,
}

impl Sold {
    /// The brand's endpoint asks for listing events.
    pub(super) fn wants_listing_events(&self) -> bool {
        self.event_types.as_deref().is_some_and(|types| types.contains("listing."))
    }
}

/// Why no stock was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StockRefusal {
    /// No such listing, or it is trashed.
    ListingNotFound,
    /// A draft or closed listing.
    ListingNotActive,
    InsufficientStock,
}

impl From<StockRefusal> for OrderPlacement {
    fn from(refusal: StockRefusal) -> Self {
        match refusal {
            StockRefusal::ListingNotFound => Self::ListingNotFound,
            StockRefusal::ListingNotActive => Self::ListingNotActive,
            StockRefusal::InsufficientStock => Self::InsufficientStock,
        }
    }
}

#[derive(FromRow)]
struct Stock {
    status: String,
    quantity: i64,
}

/// A row the statement just wrote or read back is missing: the database broke its word.
fn vanished() -> StoreError {
    StoreError::Database(sqlx::Error::RowNotFound)
}

/// The buyer of an order placed from a listing's page (decisions 14.3), written with the
/// order, and the confirmation mail to queue in the same transaction.
pub struct BuyerInsert<'a> {
    /// SHA-256 (hex) of the order page's token; the token itself is never stored.
    pub token_sha256: &'a str,
    pub name: &'a str,
    pub email: &'a str,
    pub phone: Option<&'a str>,
    pub postcode: &'a str,
    /// The mail confirming the order, composed from the order as placed (`None`: no mail).
    pub confirmation: &'a (dyn Fn(&OrderRecord) -> Option<OwnedMail> + Sync),
}

/// A mail composed by a caller from what a write produced.
#[derive(Debug, Clone)]
pub struct OwnedMail {
    pub brand_id: Option<i64>,
    pub to: String,
    pub subject: String,
    pub body: MailBody,
}

impl OwnedMail {
    /// The mail as the outbox queues it.
    pub fn as_new(&self) -> NewMail<'_> {
        NewMail {
            brand_id: self.brand_id,
            to: &self.to,
            subject: &self.subject,
            text: &self.body.text,
            html: self.body.html.as_deref(),
            attachment: None,
        }
    }
}

/// What the order page shows: the order, who bought it, and the collection date once the
/// brand has confirmed it.
#[derive(Debug, Clone)]
pub struct BuyerOrder {
    pub order: OrderRecord,
    pub name: String,
    pub postcode: String,
    pub collection: Option<NaiveDate>,
    /// The buyer paid through the payment gateway (decisions 14.4).
    pub paid: bool,
}

impl Store {
    /// Sells `request.quantity` units of a listing. The stock is taken by one conditional
    /// `UPDATE` (active, not trashed, enough units), which also closes the listing when it
    /// reaches zero.
    pub async fn place_order(&self, request: &OrderRequest) -> Result<OrderPlacement, StoreError> {
        self.place_order_for(request, None).await
    }

    /// [`Store::place_order`], writing the `buyer` and queueing its confirmation in the same
    /// transaction: the one rule that takes stock, whoever buys.
    pub async fn place_order_for(
        &self,
        request: &OrderRequest,
        buyer: Option<&BuyerInsert<'_>>,
    ) -> Result<OrderPlacement, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let sold = match take_stock((&mut *tx).into(), request.listing_id, request.quantity, now).await? {
                Ok(sold) => sold,
                Err(refusal) => return Ok(refusal.into()),
            };
            let order = self.write_order((&mut *tx).into(), &sold, request, now, buyer).await?;
            // The listing's new stock and status are a change a sync walk must see; last, so
            // that the brand's clock is held only for the commit.
            // The sale's listing event, if asked for: known from the stock's own statement, so a
            // sale whose brand asks for none makes no extra round trip under the row lock.
            if sold.wants_listing_events() {
                self.listing_events((&mut *tx).into(), sold.brand_id, &[request.listing_id], now).await?;
            }
            stamp_listing_change((&mut *tx).into(), sold.brand_id, now, &[request.listing_id]).await?;
            tx.commit().await?;
            Ok(OrderPlacement::Placed(order))
        })
    }

    /// Writes the order of stock already taken (`sold`), with its buyer and the buyer's
    /// confirmation, on `conn` (the caller's transaction, which took the stock).
    pub(super) async fn write_order(
        &self,
        mut conn: Conn<'_>,
        sold: &Sold,
        request: &OrderRequest,
        now: Ts,
        buyer: Option<&BuyerInsert<'_>>,
    ) -> Result<OrderRecord, StoreError> {
        let id: i64 = on_conn!(&mut conn, |c| {
            sqlx::query_scalar(
                "INSERT INTO orders (brand_id, listing_id, channel, quantity, unit_price_pence, buyer_window_start,
                                     buyer_window_end, status, created_at, title, delivery_contribution_gbp)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                 RETURNING id",
            )
            .bind(sold.brand_id)
            .bind(request.listing_id)
            .bind(&sold.channel)
            .bind(request.quantity)
            .bind(sold.unit_price_pence)
            .bind(request.window.start)
            .bind(request.window.end)
            .bind(OrderStatus::Placed.as_str())
            .bind(now)
            .bind(&sold.title)
            .bind(sold.delivery_contribution_gbp)
            .fetch_one(&mut **c)
            .await?
        });
        // The order as written, without reading it back (one round trip less while the
        // listing's row is locked).
        let order = OrderRecord {
            id,
            brand_id: sold.brand_id,
            brand_slug: sold.brand_slug.clone(),
            listing_id: request.listing_id,
            channel: sold.channel.parse().map_err(|e| StoreError::Database(sqlx::Error::Decode(Box::new(e))))?,
            quantity: request.quantity,
            unit_price_pence: sold.unit_price_pence,
            buyer_window_start: request.window.start,
            buyer_window_end: request.window.end,
            status: OrderStatus::Placed,
            completed_at: None,
            created_at: now,
            title: sold.title.clone(),
            delivery_contribution_gbp: sold.delivery_contribution_gbp,
        };
        if let Some(buyer) = buyer {
            on_conn!(&mut conn, |c| {
                sqlx::query(
                    "INSERT INTO order_buyers (order_id, token_sha256, name, email, phone, postcode, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(id)
                .bind(buyer.token_sha256)
                .bind(buyer.name)
                .bind(buyer.email)
                .bind(buyer.phone)
                .bind(buyer.postcode)
                .bind(now)
                .execute(&mut **c)
                .await?;
            });
            if let Some(mail) = (buyer.confirmation)(&order) {
                enqueue_mail(conn.reborrow(), self.sealer()?, &mail.as_new()).await?;
            }
        }
        Ok(order)
    }

    /// The order whose page token hashes to `token_sha256`, with its buyer and collection.
    pub async fn buyer_order(&self, token_sha256: &str) -> Result<Option<BuyerOrder>, StoreError> {
        on_pool!(self, read, |pool| {
            let mut conn = pool.acquire().await?;
            let buyer: Option<(i64, String, String)> =
                sqlx::query_as("SELECT order_id, name, postcode FROM order_buyers WHERE token_sha256 = $1")
                    .bind(token_sha256)
                    .fetch_optional(&mut *conn)
                    .await?;
            let Some((order_id, name, postcode)) = buyer else {
                return Ok(None);
            };
            let order = fetch_order((&mut *conn).into(), order_id, None).await?.ok_or_else(vanished)?;
            let collection: Option<NaiveDate> =
                sqlx::query_scalar("SELECT scheduled_for FROM collections WHERE order_id = $1")
                    .bind(order_id)
                    .fetch_optional(&mut *conn)
                    .await?;
            let paid: Option<i64> = sqlx::query_scalar("SELECT id FROM payment_holds WHERE order_id = $1")
                .bind(order_id)
                .fetch_optional(&mut *conn)
                .await?;
            Ok(Some(BuyerOrder { order, name, postcode, collection, paid: paid.is_some() }))
        })
    }

    /// An order; with `brand_id`, only if it belongs to that brand.
    pub async fn order(&self, id: i64, brand_id: Option<i64>) -> Result<Option<OrderRecord>, StoreError> {
        on_pool!(self, read, |pool| {
            let mut conn = pool.acquire().await?;
            fetch_order((&mut *conn).into(), id, brand_id).await
        })
    }

    /// Marks a placed order delivered, writing in the same transaction the ledger `entry`
    /// the delivery earns (a clearance sale's).
    pub async fn complete_order(
        &self,
        id: i64,
        completed_at: Ts,
        entry: Option<&NewLedgerEntry>,
    ) -> Result<OrderCompletion, StoreError> {
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let done = sqlx::query("UPDATE orders SET status = $1, completed_at = $2 WHERE id = $3 AND status = $4")
                .bind(OrderStatus::Completed.as_str())
                .bind(completed_at)
                .bind(id)
                .bind(OrderStatus::Placed.as_str())
                .execute(&mut *tx)
                .await?
                .rows_affected();
            let Some(order) = fetch_order((&mut *tx).into(), id, None).await? else {
                return Ok(OrderCompletion::NotFound);
            };
            if done == 0 {
                return Ok(OrderCompletion::AlreadyCompleted);
            }
            if let Some(entry) = entry {
                insert_entry((&mut *tx).into(), entry).await?;
            }
            tx.commit().await?;
            Ok(OrderCompletion::Completed(order))
        })
    }

    /// Counts one view of a listing that is not trashed; answers the new count, or `None`
    /// when there is no such listing.
    pub async fn count_view(&self, listing_id: i64) -> Result<Option<i64>, StoreError> {
        on_pool!(self, write, |pool| {
            Ok(sqlx::query_scalar(
                "UPDATE listings SET view_count = view_count + 1 WHERE id = $1 AND deleted_at IS NULL RETURNING view_count",
            )
            .bind(listing_id)
            .fetch_optional(pool)
            .await?)
        })
    }
}

pub(super) async fn fetch_order(
    conn: Conn<'_>,
    id: i64,
    brand_id: Option<i64>,
) -> Result<Option<OrderRecord>, StoreError> {
    let sql = format!(
        "SELECT {ORDER_COLUMNS} FROM orders o JOIN brands b ON b.id = o.brand_id JOIN listings l ON l.id = o.listing_id
         WHERE o.id = $1 AND ($2 IS NULL OR o.brand_id = $2)"
    );
    on_conn!(conn, |c| Ok(sqlx::query_as(&sql).bind(id).bind(brand_id).fetch_optional(&mut *c).await?))
}

/// Takes `quantity` units of listing `listing_id` by one conditional `UPDATE` (active, not
/// trashed, enough units), which also closes the listing when it reaches zero; on `conn`, the
/// caller's transaction, which stamps the change for sync walks as its last statement
/// (`stamp_listing_change`). The one rule that takes stock, whoever buys and however they pay.
pub(super) async fn take_stock(
    mut conn: Conn<'_>,
    listing_id: i64,
    quantity: i64,
    now: Ts,
) -> Result<Result<Sold, StockRefusal>, StoreError> {
    let sold: Option<Sold> = on_conn!(&mut conn, |c| {
        sqlx::query_as(
            "UPDATE listings
             SET quantity = quantity - $1,
                 status = CASE WHEN quantity - $1 = 0 THEN $4 ELSE status END,
                 updated_at = $2, version = version + 1
             WHERE id = $3 AND deleted_at IS NULL AND status = $5 AND quantity >= $1
             RETURNING brand_id, (SELECT slug FROM brands WHERE brands.id = listings.brand_id) AS brand_slug, channel,
                       COALESCE(sale_price_pence, regular_price_pence) AS unit_price_pence, title,
                       delivery_contribution_gbp,
                       (SELECT event_types FROM webhook_endpoints WHERE brand_id = listings.brand_id) AS event_types",
        )
        .bind(quantity)
        .bind(now)
        .bind(listing_id)
        .bind(ListingStatus::Closed.as_str())
        .bind(ListingStatus::Active.as_str())
        .fetch_optional(&mut **c)
        .await?
    });
    let Some(sold) = sold else {
        let stock: Option<Stock> = on_conn!(&mut conn, |c| {
            sqlx::query_as("SELECT status, quantity FROM listings WHERE id = $1 AND deleted_at IS NULL")
                .bind(listing_id)
                .fetch_optional(&mut **c)
                .await?
        });
        return Ok(Err(match stock {
            None => StockRefusal::ListingNotFound,
            Some(s) if s.status != ListingStatus::Active.as_str() => StockRefusal::ListingNotActive,
            Some(s) if s.quantity < quantity => StockRefusal::InsufficientStock,
            Some(_) => StockRefusal::ListingNotActive,
        }));
    };
    Ok(Ok(sold))
}
