//! Redemptions (a customer's payout choice) and the spending of credit codes.
//!
//! A redemption and its `redemption.created` event are written in one transaction. A code is
//! spent by one conditional `UPDATE` (unspent and unexpired), so of many concurrent redeems
//! exactly one succeeds.

use super::audit::commit_audited;
use super::wallet::{insert_entry, NewLedgerEntry};
use super::{on_pool, Store, StoreError, Ts};
use rehome_domain::audit::AuditEntry;
use rehome_domain::event::Event;
use rehome_domain::payout::{CreditDestination, CustomerChoice};
use rehome_domain::view::{RedemptionFilter, RedemptionRecord, RedemptionState};

/// A redemption to record. `code_hash` and `code_hint` are set for credit to a code.
#[derive(Debug, Clone)]
pub struct NewRedemption {
    pub id: String,
    pub brand_id: i64,
    pub order_id: i64,
    pub customer_id: String,
    pub customer_choice: CustomerChoice,
    pub credit_destination: Option<CreditDestination>,
    pub value_pence: i64,
    pub code_hash: Option<Vec<u8>>,
    pub code_hint: Option<String>,
    /// The code itself, stored only sealed with the data key.
    pub code: Option<String>,
    pub expires_at: Option<Ts>,
    pub original_order_id: Option<String>,
    pub related_listing_id: i64,
    pub sale_completed_at: Ts,
    pub created_at: Ts,
    /// What the brand owes for a credit choice, written with it.
    pub ledger_entry: Option<NewLedgerEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedemptionInsert {
    Recorded,
    /// The order already has a redemption (its unique index).
    ChoiceExists,
}

/// What spending a credit code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeSpend {
    Spent(Box<RedemptionRecord>),
    /// No code of the brand has this hash.
    NotFound,
    AlreadyRedeemed,
    Expired,
}

/// Where a page of redemptions starts: at or after `since`, or strictly after the
/// position (`since`, `after`) of a redemption.
#[derive(Debug, Clone, Default)]
pub struct RedemptionCursor {
    pub since: Option<Ts>,
    pub after: Option<String>,
}

const COLUMNS: &str = "r.id, b.slug AS brand_slug, r.customer_id, r.customer_choice, r.credit_destination,
    r.value_pence, r.code_hint, r.code_sealed, r.expires_at, r.original_order_id, r.related_listing_id, r.sale_completed_at,
    r.created_at, r.redeemed_at, r.redeemed_order_reference, r.redeemed_by";

impl Store {
    /// Records the redemption and its event together, unless the order already has one.
    pub async fn record_redemption(&self, new: &NewRedemption, event: &Event) -> Result<RedemptionInsert, StoreError> {
        let code_sealed = match &new.code {
            Some(code) => Some(
                self.sealer()?
                    .seal(new.id.as_bytes(), code.as_bytes())
                    .map_err(|e| StoreError::Sealing(e.to_string()))?,
            ),
            None => None,
        };
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO redemptions (id, brand_id, order_id, customer_id, customer_choice, credit_destination,
                     value_pence, code_hash, code_hint, expires_at, original_order_id, related_listing_id,
                     sale_completed_at, created_at, code_sealed)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            )
            .bind(&new.id)
            .bind(new.brand_id)
            .bind(new.order_id)
            .bind(&new.customer_id)
            .bind(new.customer_choice.as_str())
            .bind(new.credit_destination.map(CreditDestination::as_str))
            .bind(new.value_pence)
            .bind(new.code_hash.as_deref())
            .bind(new.code_hint.as_deref())
            .bind(new.expires_at)
            .bind(new.original_order_id.as_deref())
            .bind(new.related_listing_id)
            .bind(new.sale_completed_at)
            .bind(new.created_at)
            .bind(code_sealed.as_deref())
            .execute(&mut *tx)
            .await;
            match inserted {
                // The only unique column a fresh id and code can collide on is the order.
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                    return Ok(RedemptionInsert::ChoiceExists)
                }
                other => other?,
            };
            if let Some(entry) = &new.ledger_entry {
                insert_entry((&mut *tx).into(), entry).await?;
            }
            self.insert_event((&mut *tx).into(), event).await?;
            tx.commit().await?;
            Ok(RedemptionInsert::Recorded)
        })
    }

    /// The redemption's credit code, opened with the data key; `None` when it has none, was
    /// recorded before codes were sealed, or cannot be opened (logged).
    pub fn open_code(&self, record: &RedemptionRecord) -> Option<String> {
        let sealed = record.code_sealed.as_deref()?;
        let opened = self.sealer().ok()?.open(record.id.as_bytes(), sealed);
        match opened.ok().and_then(|bytes| String::from_utf8(bytes).ok()) {
            Some(code) => Some(code),
            None => {
                tracing::error!(redemption = %record.id, "credit code cannot be opened with the data key");
                None
            }
        }
    }

    /// True when the order already has a redemption (the unique index is what guarantees
    /// one; this lets a repeated choice answer as such before anything else is checked).
    pub async fn order_has_redemption(&self, order_id: i64) -> Result<bool, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar::<_, i64>("SELECT order_id FROM redemptions WHERE order_id = $1")
                .bind(order_id)
                .fetch_optional(pool)
                .await?
                .is_some())
        })
    }

    /// Up to `limit` redemptions of the brand from `cursor`, ascending by (created_at, id).
    pub async fn redemptions_page(
        &self,
        brand_id: i64,
        cursor: &RedemptionCursor,
        limit: i64,
    ) -> Result<Vec<RedemptionRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM redemptions r JOIN brands b ON b.id = r.brand_id
             WHERE r.brand_id = $1
               AND ($2 IS NULL OR r.created_at > $2 OR (r.created_at = $2 AND ($3 IS NULL OR r.id > $3)))
             ORDER BY r.created_at, r.id
             LIMIT $4"
        );
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&sql)
                .bind(brand_id)
                .bind(cursor.since)
                .bind(cursor.after.as_deref())
                .bind(limit)
                .fetch_all(pool)
                .await?)
        })
    }

    /// A page of the brand's redemptions that `filter` keeps, newest first, and how many it
    /// keeps up to [`super::LIST_COUNT_CAP`] (one more means more than that); `now` decides which codes
    /// have expired.
    pub async fn brand_redemptions(
        &self,
        brand_id: i64,
        filter: &RedemptionFilter,
        now: Ts,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<RedemptionRecord>, i64), StoreError> {
        let state = match filter.state {
            None => "",
            Some(RedemptionState::CodeNotSpent) => {
                "AND r.code_hash IS NOT NULL AND r.redeemed_at IS NULL AND r.expires_at > $2"
            }
            Some(RedemptionState::CodeSpent) => "AND r.redeemed_at IS NOT NULL",
            Some(RedemptionState::CodeExpired) => {
                "AND r.code_hash IS NOT NULL AND r.redeemed_at IS NULL AND r.expires_at <= $2"
            }
            Some(RedemptionState::CreditToOrder) => "AND r.credit_destination = 'existing_order'",
            Some(RedemptionState::Cash) => "AND r.customer_choice = 'cash'",
        };
        let customer = if filter.customer.is_some() { "AND r.customer_id = $3" } else { "AND $3 IS NULL" };
        let condition = format!("r.brand_id = $1 AND ($2 IS NOT NULL) {state} {customer}");
        let page = format!(
            "SELECT {COLUMNS} FROM redemptions r JOIN brands b ON b.id = r.brand_id WHERE {condition}
             ORDER BY r.created_at DESC, r.id DESC LIMIT $4 OFFSET $5"
        );
        // How many, up to [`super::LIST_COUNT_CAP`] and one more: a count past it says "more than".
        let count = format!("SELECT COUNT(*) FROM (SELECT 1 FROM redemptions r WHERE {condition} LIMIT $4) c");
        on_pool!(self, read, |pool| {
            let rows = sqlx::query_as(&page)
                .bind(brand_id)
                .bind(now)
                .bind(filter.customer.as_deref())
                .bind(limit)
                .bind(offset)
                .fetch_all(pool)
                .await?;
            let total: i64 = sqlx::query_scalar(&count)
                .bind(brand_id)
                .bind(now)
                .bind(filter.customer.as_deref())
                .bind(super::LIST_COUNT_CAP + 1)
                .fetch_one(pool)
                .await?;
            Ok((rows, total))
        })
    }

    /// Up to `limit` of the brand's redemptions whose code's hint is `hint`, newest first.
    pub async fn redemptions_by_hint(
        &self,
        brand_id: i64,
        hint: &str,
        limit: i64,
    ) -> Result<Vec<RedemptionRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM redemptions r JOIN brands b ON b.id = r.brand_id
             WHERE r.brand_id = $1 AND r.code_hint = $2 ORDER BY r.created_at DESC, r.id DESC LIMIT $3"
        );
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&sql).bind(brand_id).bind(hint).bind(limit).fetch_all(pool).await?)
        })
    }

    /// When the brand's redemption `id` was created, if it exists.
    pub async fn redemption_created_at(&self, brand_id: i64, id: &str) -> Result<Option<Ts>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar("SELECT created_at FROM redemptions WHERE brand_id = $1 AND id = $2")
                .bind(brand_id)
                .bind(id)
                .fetch_optional(pool)
                .await?)
        })
    }

    /// The brand's credit code with this hash, spent or not.
    pub async fn credit_code(&self, brand_id: i64, code_hash: &[u8]) -> Result<Option<RedemptionRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM redemptions r JOIN brands b ON b.id = r.brand_id
             WHERE r.brand_id = $1 AND r.code_hash = $2"
        );
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&sql).bind(brand_id).bind(code_hash).fetch_optional(pool).await?)
        })
    }

    /// Spends the brand's unspent, unexpired code at `now`, and appends `audit` in the same
    /// transaction (its actor is kept as who spent it).
    pub async fn redeem_credit_code(
        &self,
        brand_id: i64,
        code_hash: &[u8],
        order_reference: Option<&str>,
        now: Ts,
        audit: &AuditEntry,
    ) -> Result<CodeSpend, StoreError> {
        let spent: Option<String> = on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let spent: Option<String> = sqlx::query_scalar(
                "UPDATE redemptions SET redeemed_at = $1, redeemed_order_reference = $2, redeemed_by = $3
                 WHERE brand_id = $4 AND code_hash = $5 AND redeemed_at IS NULL AND expires_at > $1
                 RETURNING id",
            )
            .bind(now)
            .bind(order_reference)
            .bind(&audit.actor.display)
            .bind(brand_id)
            .bind(code_hash)
            .fetch_optional(&mut *tx)
            .await?;
            let audit = AuditEntry { target: spent.as_ref().map(|id| format!("redemption:{id}")), ..audit.clone() };
            commit_audited(tx, spent, &audit).await?
        });
        let record = on_pool!(self, write, |pool| {
            let sql = format!(
                "SELECT {COLUMNS} FROM redemptions r JOIN brands b ON b.id = r.brand_id
                 WHERE r.brand_id = $1 AND r.code_hash = $2"
            );
            sqlx::query_as::<_, RedemptionRecord>(&sql).bind(brand_id).bind(code_hash).fetch_optional(pool).await?
        });
        Ok(match (spent, record) {
            (Some(_), Some(record)) => CodeSpend::Spent(Box::new(record)),
            (_, None) => CodeSpend::NotFound,
            (None, Some(record)) if record.redeemed_at.is_some() => CodeSpend::AlreadyRedeemed,
            (None, Some(_)) => CodeSpend::Expired,
        })
    }
}
