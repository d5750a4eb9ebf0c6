//! Purchases waiting for their payment (decisions 14.4): the stock is taken when the buyer
//! is sent to pay, by the same conditional update as an order ([`take_stock`]), and kept in a
//! hold; the payment's confirmation writes the order from the hold, its expiry gives the stock
//! back. Each is one conditional change of the hold's status, so a confirmation that arrives
//! twice, or beside the job that lets a lapsed hold go, settles the hold once.

use chrono::{DateTime, Utc};

use super::listings::stamp_listing_change;
use super::orders::{take_stock, Sold, StockRefusal};
use super::queue::{LeasedQueue, Outcomes};
use super::{now, on_pool, BuyerInsert, Store, StoreError, Ts};
use rehome_domain::checkout::HoldStatus;
use rehome_domain::listing::ListingStatus;
use rehome_domain::order::OrderRequest;
use rehome_domain::view::HoldRecord;
use rehome_domain::view::OrderRecord;

const HOLD_COLUMNS: &str = "id, brand_id, listing_id, channel, quantity, unit_price_pence, title, brand_name, \
    delivery_contribution_gbp, buyer_window_start, buyer_window_end, token_sealed, token_sha256, name, email, phone, postcode, \
    provider, session_id, session_url, status, order_id, held_until, attempts, created_at";

/// A hold to write: who buys, and until when the stock is theirs.
pub struct HoldInsert<'a> {
    /// The order page's token: stored sealed, and as its SHA-256 (hex) for lookup.
    pub token: &'a str,
    pub token_sha256: &'a str,
    pub brand_name: &'a str,
    pub name: &'a str,
    pub email: &'a str,
    pub phone: Option<&'a str>,
    pub postcode: &'a str,
    /// The payment service (`stripe`).
    pub provider: &'a str,
    pub held_until: DateTime<Utc>,
}

/// What a confirmed payment did to its hold.
#[derive(Debug)]
pub enum HoldSettlement {
    /// The order was written.
    Paid(OrderRecord),
    /// An earlier confirmation wrote it (its id).
    AlreadyPaid(Option<i64>),
    /// The hold had been let go: its stock is no longer the buyer's.
    AlreadyReleased,
    NotFound,
}

/// Pending holds, due when they lapse (and at each retry while the payment service cannot
/// be asked how the payment stands).
const HOLD_QUEUE: LeasedQueue = LeasedQueue {
    table: "payment_holds",
    from: "payment_holds q",
    pending: "q.status = 'pending'",
    always_scheduled: true,
    lease: "leased_until",
    touched: true,
    order: "q.next_attempt_at, q.id",
    returning: HOLD_COLUMNS,
};

const HOLD_OUTCOMES: Outcomes = Outcomes { status: "status", error: "last_error", gave_up: "'gave up'" };

/// What a sealed token is bound to: its own hash (a sealed value copied to another hold
/// does not open).
fn token_aad(token_sha256: &str) -> Vec<u8> {
    format!("payment_hold:{token_sha256}").into_bytes()
}

impl Store {
    /// The page token of a pending hold, `None` once settled (or sealed with another key).
    pub fn hold_token(&self, hold: &HoldRecord) -> Option<String> {
        let sealed = hold.token_sealed.as_deref()?;
        let opened = self.sealer().ok()?.open(&token_aad(&hold.token_sha256), sealed).ok()?;
        String::from_utf8(opened).ok()
    }

    /// Takes the stock of `request` for a buyer who is about to pay, and writes the hold; or
    /// says why no stock was taken.
    pub async fn hold_stock(
        &self,
        request: &OrderRequest,
        hold: &HoldInsert<'_>,
    ) -> Result<Result<HoldRecord, StockRefusal>, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let sold = match take_stock((&mut *tx).into(), request.listing_id, request.quantity, now).await? {
                Ok(sold) => sold,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let held_until = Ts::from(hold.held_until);
            let sealed = self
                .sealer()?
                .seal(&token_aad(hold.token_sha256), hold.token.as_bytes())
                .map_err(|e| StoreError::Sealing(e.to_string()))?;
            let sql = format!(
                "INSERT INTO payment_holds (brand_id, listing_id, channel, quantity, unit_price_pence, title,
                     delivery_contribution_gbp, buyer_window_start, buyer_window_end, token_sha256, name, email, phone,
                     postcode, provider, status, held_until, next_attempt_at, created_at, updated_at, brand_name,
                     token_sealed)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17, $18, $18, $19,
                         $20)
                 RETURNING {HOLD_COLUMNS}"
            );
            let record: HoldRecord = sqlx::query_as(&sql)
                .bind(sold.brand_id)
                .bind(request.listing_id)
                .bind(&sold.channel)
                .bind(request.quantity)
                .bind(sold.unit_price_pence)
                .bind(&sold.title)
                .bind(sold.delivery_contribution_gbp)
                .bind(request.window.start)
                .bind(request.window.end)
                .bind(hold.token_sha256)
                .bind(hold.name)
                .bind(hold.email)
                .bind(hold.phone)
                .bind(hold.postcode)
                .bind(hold.provider)
                .bind(HoldStatus::Pending.as_str())
                .bind(held_until)
                .bind(now)
                .bind(hold.brand_name)
                .bind(sealed)
                .fetch_one(&mut *tx)
                .await?;
            if sold.wants_listing_events() {
                self.listing_events((&mut *tx).into(), sold.brand_id, &[request.listing_id], now).await?;
            }
            stamp_listing_change((&mut *tx).into(), sold.brand_id, now, &[request.listing_id]).await?;
            tx.commit().await?;
            Ok(Ok(record))
        })
    }

    /// Records the payment service's session of a pending hold.
    pub async fn attach_payment_session(&self, id: i64, session_id: &str, url: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query("UPDATE payment_holds SET session_id = $1, session_url = $2, updated_at = $3 WHERE id = $4")
                .bind(session_id)
                .bind(url)
                .bind(now())
                .bind(id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// The hold whose page token hashes to `token_sha256`.
    pub async fn hold_by_token(&self, token_sha256: &str) -> Result<Option<HoldRecord>, StoreError> {
        self.hold_where("token_sha256", token_sha256).await
    }

    /// The hold of a payment session.
    pub async fn hold_by_session(&self, session_id: &str) -> Result<Option<HoldRecord>, StoreError> {
        self.hold_where("session_id", session_id).await
    }

    pub async fn hold_by_id(&self, id: i64) -> Result<Option<HoldRecord>, StoreError> {
        let sql = format!("SELECT {HOLD_COLUMNS} FROM payment_holds WHERE id = $1");
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(id).fetch_optional(pool).await?))
    }

    async fn hold_where(&self, column: &str, value: &str) -> Result<Option<HoldRecord>, StoreError> {
        let sql = format!("SELECT {HOLD_COLUMNS} FROM payment_holds WHERE {column} = $1");
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(value).fetch_optional(pool).await?))
    }

    /// The payment of hold `id` is confirmed: the order is written from the hold (its price,
    /// its window) with its buyer and the buyer's confirmation, in the transaction that marks
    /// the hold paid. Only a pending hold is paid, once.
    pub async fn pay_hold(&self, id: i64, buyer: &BuyerInsert<'_>) -> Result<HoldSettlement, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let sql = format!(
                "UPDATE payment_holds SET status = $1, lease_owner = NULL, leased_until = NULL, updated_at = $2
                 WHERE id = $3 AND status = $4 RETURNING {HOLD_COLUMNS}"
            );
            let hold: Option<HoldRecord> = sqlx::query_as(&sql)
                .bind(HoldStatus::Paid.as_str())
                .bind(now)
                .bind(id)
                .bind(HoldStatus::Pending.as_str())
                .fetch_optional(&mut *tx)
                .await?;
            let Some(hold) = hold else {
                let settled: Option<(String, Option<i64>)> =
                    sqlx::query_as("SELECT status, order_id FROM payment_holds WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&mut *tx)
                        .await?;
                return Ok(match settled {
                    None => HoldSettlement::NotFound,
                    Some((status, _)) if status == HoldStatus::Released.as_str() => HoldSettlement::AlreadyReleased,
                    Some((_, order_id)) => HoldSettlement::AlreadyPaid(order_id),
                });
            };
            let brand_slug: String = sqlx::query_scalar("SELECT slug FROM brands WHERE id = $1")
                .bind(hold.brand_id)
                .fetch_one(&mut *tx)
                .await?;
            let sold = Sold {
                brand_id: hold.brand_id,
                brand_slug,
                channel: hold.channel.clone(),
                unit_price_pence: hold.unit_price_pence,
                title: hold.title.clone(),
                delivery_contribution_gbp: hold.delivery_contribution_gbp,
                event_types: None,
            };
            let request = OrderRequest { listing_id: hold.listing_id, quantity: hold.quantity, window: hold.window() };
            let order = self.write_order((&mut *tx).into(), &sold, &request, now, Some(buyer)).await?;
            sqlx::query(
                "UPDATE payment_holds SET order_id = $1, token_sealed = NULL, name = NULL, email = NULL, phone = NULL, postcode = NULL
                 WHERE id = $2",
            )
            .bind(order.id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(HoldSettlement::Paid(order))
        })
    }

    /// Lets a pending hold go: its stock goes back to the listing (reopened if the hold had
    /// closed it), the buyer's details are cleared. Answers whether this call released it.
    pub async fn release_hold(&self, id: i64) -> Result<bool, StoreError> {
        let now = now();
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let released: Option<(i64, i64, i64)> = sqlx::query_as(
                "UPDATE payment_holds SET status = $1, token_sealed = NULL, name = NULL, email = NULL, phone = NULL, postcode = NULL,
                     lease_owner = NULL, leased_until = NULL, updated_at = $2
                 WHERE id = $3 AND status = $4 RETURNING brand_id, listing_id, quantity",
            )
            .bind(HoldStatus::Released.as_str())
            .bind(now)
            .bind(id)
            .bind(HoldStatus::Pending.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            let Some((brand_id, listing_id, quantity)) = released else {
                return Ok(false);
            };
            // A listing the hold emptied was closed by it: it is on sale again.
            sqlx::query(
                "UPDATE listings SET quantity = quantity + $1,
                     status = CASE WHEN status = $2 AND quantity = 0 AND deleted_at IS NULL THEN $3 ELSE status END,
                     updated_at = $4, version = version + 1
                 WHERE id = $5",
            )
            .bind(quantity)
            .bind(ListingStatus::Closed.as_str())
            .bind(ListingStatus::Active.as_str())
            .bind(now)
            .bind(listing_id)
            .execute(&mut *tx)
            .await?;
            self.listing_events((&mut *tx).into(), brand_id, &[listing_id], now).await?;
            stamp_listing_change((&mut *tx).into(), brand_id, now, &[listing_id]).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Takes the lease of up to `limit` pending holds that have lapsed (or whose retry is due)
    /// for `owner` until `lease_until`.
    pub async fn claim_lapsed_holds(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<HoldRecord>, StoreError> {
        Ok(on_pool!(self, write, |pool| {
            let mut conn = pool.acquire().await?;
            let rows = self.claim_leased((&mut *conn).into(), &HOLD_QUEUE, owner, now, lease_until, limit).await?;
            conn.settle();
            rows
        }))
    }

    /// The payment service could not say how hold `id`'s payment stands: ask again at
    /// `retry_at` (the stock stays held meanwhile).
    pub async fn retry_hold(
        &self,
        owner: &str,
        id: i64,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.fail_leased((&HOLD_QUEUE, &HOLD_OUTCOMES), owner, id, error, Some(retry_at)).await
    }

    /// Gives up the leases `owner` holds on holds (it is stopping).
    pub async fn release_hold_leases(&self, owner: &str) -> Result<u64, StoreError> {
        self.release_leases(HOLD_QUEUE.table, HOLD_QUEUE.lease, owner).await
    }
}
