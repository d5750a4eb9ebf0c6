//! Spending credit codes at checkout (decisions 6.7).

use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::credit_code::{PresentedCode, RedeemRequest};
use rehome_domain::outcome::Outcome;
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::RedemptionRecord;
use rehome_store::{CodeSpend, StoreError};

/// A code checked (dry run) or spent.
#[derive(Debug)]
pub struct CheckedCode {
    /// The code in its display form.
    pub code: String,
    /// The redemption it was issued for; spent or not.
    pub redemption: RedemptionRecord,
    /// False on a dry run.
    pub spent: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    /// No code of the brand matches (another brand's codes included).
    #[error("no such credit code")]
    NotFound,
    #[error("the credit code has already been spent")]
    AlreadyRedeemed,
    #[error("the credit code has expired")]
    Expired,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<RedeemError> for Refusal {
    fn from(e: RedeemError) -> Self {
        match e {
            RedeemError::NotFound => Outcome::CreditCodeNotFound.into(),
            RedeemError::AlreadyRedeemed => Outcome::CreditCodeAlreadyRedeemed.into(),
            RedeemError::Expired => Outcome::CreditCodeExpired.into(),
            RedeemError::Store(e) => e.into(),
        }
    }
}

/// Checks a code and, unless `dry_run`, spends it. Spending is one conditional update: of
/// many concurrent redeems of one code exactly one succeeds; the others are
/// `AlreadyRedeemed`. A dry run answers the same errors and spends nothing.
pub async fn redeem(core: &Core, actor: &Admin, request: &RedeemRequest) -> Result<CheckedCode, RedeemError> {
    if !request.code.well_formed() {
        return Err(RedeemError::NotFound);
    }
    let hash = request.code.lookup_hash();
    let code = request.code.display();
    let now = Ts::now();
    if request.dry_run {
        let redemption = core.store.credit_code(actor.brand_id, &hash).await?.ok_or(RedeemError::NotFound)?;
        if redemption.redeemed_at.is_some() {
            return Err(RedeemError::AlreadyRedeemed);
        }
        if redemption.expires_at.is_none_or(|e| e <= now) {
            return Err(RedeemError::Expired);
        }
        return Ok(CheckedCode { code, redemption, spent: false });
    }
    let audit = AuditEntry::by(actor, AuditAction::CreditCodeRedeemed, None);
    let reference = request.order_reference.as_deref();
    match core.store.redeem_credit_code(actor.brand_id, &hash, reference, now, &audit).await? {
        CodeSpend::Spent(redemption) => Ok(CheckedCode { code, redemption: *redemption, spent: true }),
        CodeSpend::NotFound => Err(RedeemError::NotFound),
        CodeSpend::AlreadyRedeemed => Err(RedeemError::AlreadyRedeemed),
        CodeSpend::Expired => Err(RedeemError::Expired),
    }
}

/// Where a code stands, whatever it is: its redemption (value, expiry, spent or not, when,
/// by whom and on which order), for a person to look at before spending it (decisions 15.5).
/// Nothing is written. `NotFound` for a code no redemption of the brand has.
pub async fn look_up(core: &Core, actor: &Actor, code: &PresentedCode) -> Result<CheckedCode, RedeemError> {
    if !code.well_formed() {
        return Err(RedeemError::NotFound);
    }
    let redemption = core.store.credit_code(actor.brand_id, &code.lookup_hash()).await?.ok_or(RedeemError::NotFound)?;
    Ok(CheckedCode { code: code.display(), spent: redemption.redeemed_at.is_some(), redemption })
}
