//! Polling redemptions (decisions 6.6): the alternative to `redemption.created` webhooks.

use chrono::DateTime;

use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use rehome_domain::money::Pence;
use rehome_domain::redemption::{Redemption, Spent, CURRENCY};
use rehome_domain::time::Ts;
use rehome_domain::user::Actor;
use rehome_domain::view::{RedemptionFilter, RedemptionRecord};
use rehome_domain::FieldError;
use rehome_store::{RedemptionCursor, Store, StoreError};

/// One page of redemptions, and where the next one starts.
#[derive(Debug)]
pub struct RedemptionPage {
    /// Ascending by (creation time, id).
    pub redemptions: Vec<Redemption>,
    pub has_more: bool,
    /// The position of the last redemption; when the page is empty, the position given.
    pub next_since: Option<Ts>,
    pub next_after: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ListRedemptionsError {
    /// `since_invalid` and/or `after_invalid`.
    #[error("invalid position")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ListRedemptionsError> for Refusal {
    fn from(e: ListRedemptionsError) -> Self {
        match e {
            ListRedemptionsError::Invalid(reasons) => reasons.into(),
            ListRedemptionsError::Store(e) => e.into(),
        }
    }
}

/// Up to `limit` of the brand's redemptions from the position given: at or after `since`
/// (RFC 3339), or strictly after the redemption `after` (an id of the brand). Walking pages
/// by passing the next position back visits every redemption exactly once, even when many
/// share one timestamp.
pub async fn page(
    core: &Core,
    actor: &Actor,
    since: Option<&str>,
    after: Option<&str>,
    limit: u32,
) -> Result<RedemptionPage, ListRedemptionsError> {
    let mut errors = Vec::new();
    let too_long = |s: &str| s.len() > rehome_domain::text::MAX_INSTANT_LEN;
    let since = match since.map(|s| {
        if too_long(s) {
            DateTime::parse_from_rfc3339("")
        } else {
            DateTime::parse_from_rfc3339(s.trim())
        }
    }) {
        None => None,
        Some(Ok(t)) => Some(Ts::from(t.to_utc())),
        Some(Err(_)) => {
            errors.push(FieldError::of("since", "invalid"));
            None
        }
    };
    let cursor = match after {
        None => RedemptionCursor { since, after: None },
        Some(after) => match core.store.redemption_created_at(actor.brand_id, after).await? {
            Some(created_at) => RedemptionCursor { since: Some(created_at), after: Some(after.to_owned()) },
            None => {
                errors.push(FieldError::of("after", "invalid"));
                RedemptionCursor::default()
            }
        },
    };
    if !errors.is_empty() {
        return Err(ListRedemptionsError::Invalid(errors));
    }
    let mut rows = core.store.redemptions_page(actor.brand_id, &cursor, i64::from(limit) + 1).await?;
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let (next_since, next_after) = match rows.last() {
        Some(last) => (Some(last.created_at), Some(last.id.clone())),
        None => (cursor.since, cursor.after),
    };
    let redemptions = rows.into_iter().map(|r| redemption_of(&core.store, r)).collect();
    Ok(RedemptionPage { redemptions, has_more, next_since, next_after })
}

/// A page of the brand's redemptions that `filter` keeps, newest first (the dashboard's
/// list), and how many it keeps.
pub async fn listed(
    core: &Core,
    actor: &Actor,
    filter: &RedemptionFilter,
    limit: i64,
    offset: i64,
) -> Result<(Vec<Redemption>, i64), StoreError> {
    let (rows, total) = core.store.brand_redemptions(actor.brand_id, filter, Ts::now(), limit, offset).await?;
    Ok((rows.into_iter().map(|r| redemption_of(&core.store, r)).collect(), total))
}

/// A stored redemption as the API and the dashboard show it.
pub fn view(core: &Core, record: RedemptionRecord) -> Redemption {
    redemption_of(&core.store, record)
}

/// The redemption as stored, its code opened with the data key; redemptions recorded
/// before codes were sealed show the stored hint.
fn redemption_of(store: &Store, r: RedemptionRecord) -> Redemption {
    let code = store.open_code(&r).or(r.code_hint);
    Redemption {
        id: r.id,
        brand_id: r.brand_slug,
        customer_id: r.customer_id,
        customer_choice: r.customer_choice.as_str().to_owned(),
        credit_destination: r.credit_destination.map(|d| d.as_str().to_owned()),
        value_pence: r.value_pence,
        value: Pence::new(r.value_pence).gbp(),
        currency: CURRENCY,
        code,
        expires_at: r.expires_at.map(|t| t.to_string()),
        original_order_id: r.original_order_id,
        related_listing_id: r.related_listing_id,
        sale_completed_at: r.sale_completed_at.to_string(),
        spent: r.redeemed_at.map(|at| Spent {
            at: at.to_string(),
            by: r.redeemed_by,
            order_reference: r.redeemed_order_reference,
        }),
    }
}
