//! Each brand's payout options: one row, created on the first change; absent means the
//! defaults.

use sqlx::FromRow;

use super::{now, on_pool, record_audit, Store, StoreError};
use crate::BRAND_LOCK;
use rehome_domain::audit::AuditEntry;
use rehome_domain::payout::{PayoutOptions, PayoutOptionsPatch};
use rehome_domain::precondition::Precondition;

#[derive(FromRow)]
struct OptionsRow {
    credit_enabled: bool,
    cash_enabled: bool,
    credit_boost_percent: i64,
    code_validity_days: i64,
}

impl From<OptionsRow> for PayoutOptions {
    fn from(r: OptionsRow) -> Self {
        let defaults = PayoutOptions::default();
        Self {
            credit_enabled: r.credit_enabled,
            cash_enabled: r.cash_enabled,
            credit_boost_percent: u16::try_from(r.credit_boost_percent).unwrap_or(defaults.credit_boost_percent),
            code_validity_days: u16::try_from(r.code_validity_days).unwrap_or(defaults.code_validity_days),
        }
    }
}

impl Store {
    pub async fn payout_options(&self, brand_id: i64) -> Result<PayoutOptions, StoreError> {
        on_pool!(self, read, |pool| {
            let row: Option<OptionsRow> = sqlx::query_as(
                "SELECT credit_enabled, cash_enabled, credit_boost_percent, code_validity_days
                 FROM payout_options WHERE brand_id = $1",
            )
            .bind(brand_id)
            .fetch_optional(pool)
            .await?;
            Ok(row.map(Into::into).unwrap_or_default())
        })
    }

    /// Writes only the fields the patch names (over the stored values, or the defaults on
    /// the first change), in one upsert. With a `guard`, the options as they stand are read
    /// in the same transaction (under the brand's row lock) and nothing is written unless
    /// it accepts them: then `None`. Options that would offer customers no choice (neither
    /// credit nor cash) are not written either: `Some(Err(them))`.
    pub async fn save_payout_options(
        &self,
        brand_id: i64,
        patch: &PayoutOptionsPatch,
        guard: Option<Precondition<'_, PayoutOptions>>,
        audit: &AuditEntry,
    ) -> Result<Option<Result<PayoutOptions, PayoutOptions>>, StoreError> {
        let d = PayoutOptions::default();
        let lock = BRAND_LOCK.of(self);
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            if let Some(guard) = guard {
                sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
                let current: Option<OptionsRow> = sqlx::query_as(
                    "SELECT credit_enabled, cash_enabled, credit_boost_percent, code_validity_days
                     FROM payout_options WHERE brand_id = $1",
                )
                .bind(brand_id)
                .fetch_optional(&mut *tx)
                .await?;
                if !guard(&current.map(Into::into).unwrap_or_default()) {
                    return Ok(None);
                }
            }
            let row: OptionsRow = sqlx::query_as(
                "INSERT INTO payout_options (brand_id, credit_enabled, cash_enabled, credit_boost_percent,
                                             code_validity_days, updated_at)
                 VALUES ($1, COALESCE($2, $6), COALESCE($3, $7), COALESCE($4, $8), COALESCE($5, $9), $10)
                 ON CONFLICT (brand_id) DO UPDATE SET
                     credit_enabled = COALESCE($2, payout_options.credit_enabled),
                     cash_enabled = COALESCE($3, payout_options.cash_enabled),
                     credit_boost_percent = COALESCE($4, payout_options.credit_boost_percent),
                     code_validity_days = COALESCE($5, payout_options.code_validity_days),
                     updated_at = $10
                 RETURNING credit_enabled, cash_enabled, credit_boost_percent, code_validity_days",
            )
            .bind(brand_id)
            .bind(patch.credit_enabled)
            .bind(patch.cash_enabled)
            .bind(patch.credit_boost_percent.map(i64::from))
            .bind(patch.code_validity_days.map(i64::from))
            .bind(d.credit_enabled)
            .bind(d.cash_enabled)
            .bind(i64::from(d.credit_boost_percent))
            .bind(i64::from(d.code_validity_days))
            .bind(now())
            .fetch_one(&mut *tx)
            .await?;
            let saved: PayoutOptions = row.into();
            if !saved.offers_a_choice() {
                // Left as it was (the transaction rolls back): customers could choose nothing.
                return Ok(Some(Err(saved)));
            }
            record_audit((&mut *tx).into(), audit).await?;
            tx.commit().await?;
            Ok(Some(Ok(saved)))
        })
    }
}
