//! One search across the brand's records (the dashboard's search): what a query can name,
//! looked up where it can be. Words find listings by their title or SKU (the listings'
//! search) and people and API keys by name, email or label; a number or `#123` finds an
//! order; a credit code, or its last four characters, finds its redemption; a customer's id finds their redemptions;
//! `evt_…` and `col_…` find a webhook event and a scheduled collection. Each lookup is one
//! indexed read (the listings' search costs what that search costs); nothing walks a table.

use crate::usecases::Core;
use rehome_domain::credit_code::{hint_of_tail, PresentedCode};
use rehome_domain::listing::{Channel, ListingQuery, ListingStatus};
use rehome_domain::order::OrderStatus;
use rehome_domain::time::Ts;
use rehome_domain::user::Actor;
use rehome_domain::view::RedemptionFilter;
use rehome_store::StoreError;

/// The most listings a search shows (the total says how many there are).
pub const LISTINGS_SHOWN: i64 = 5;
/// The most credit codes a search by a code's last four characters shows.
pub const CODES_SHOWN: i64 = 10;
/// A query longer than this finds nothing (nothing the search looks for is longer).
pub const MAX_QUERY_LEN: usize = 200;

/// One record a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    Listing {
        id: i64,
        title: String,
        status: ListingStatus,
        channel: Channel,
    },
    Order {
        id: i64,
        listing_id: i64,
        title: String,
        status: OrderStatus,
        channel: Channel,
    },
    /// A credit code: its redemption's value, customer and where it stands.
    CreditCode {
        code: String,
        value_pence: i64,
        customer: String,
        spent: bool,
        expired: bool,
    },
    /// A customer with redemptions.
    Customer {
        id: String,
        redemptions: i64,
    },
    Event {
        id: String,
        event_type: String,
    },
    Collection {
        id: String,
        order_id: i64,
        scheduled_for: String,
    },
    Member {
        id: i64,
        name: String,
        email: String,
    },
    Key {
        id: i64,
        label: String,
    },
}

/// What a search found: the hits, and how many listings matched in all.
#[derive(Debug, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub listings_total: i64,
    /// `listings_total` is an estimate (a search matching more than
    /// [`rehome_domain::listing::SEARCH_EXACT_TOTAL`] listings).
    pub listings_total_is_estimate: bool,
}

/// Everything `q` names among the brand's records that `actor` may see: people and keys
/// only for an admin.
pub async fn search(core: &Core, actor: &Actor, q: &str, admin: bool) -> Result<Found, StoreError> {
    let q = q.trim();
    let mut found = Found::default();
    if q.is_empty() || q.len() > MAX_QUERY_LEN {
        return Ok(found);
    }
    if let Some(id) = q.strip_prefix('#').unwrap_or(q).parse::<i64>().ok().filter(|id| *id > 0) {
        if let Some(order) = core.store.order(id, Some(actor.brand_id)).await? {
            found.hits.push(Hit::Order {
                id: order.id,
                listing_id: order.listing_id,
                title: order.title.clone(),
                status: order.status,
                channel: order.channel,
            });
        }
    }
    if q.starts_with("evt_") {
        if let Some(delivery) = core.store.webhook_delivery(actor.brand_id, q).await? {
            found.hits.push(Hit::Event { id: delivery.0.event_id, event_type: delivery.0.event_type });
        }
    }
    if q.starts_with("col_") {
        if let Some(row) = core.store.scheduled_collection(actor.brand_id, q).await? {
            let scheduled_for = row.scheduled_for.map(|d| d.to_string()).unwrap_or_default();
            found.hits.push(Hit::Collection { id: q.to_owned(), order_id: row.order_id, scheduled_for });
        }
    }
    let code = PresentedCode::parse(q);
    if code.well_formed() {
        if let Some(r) = core.store.credit_code(actor.brand_id, &code.lookup_hash()).await? {
            let expired = r.redeemed_at.is_none() && r.expires_at.is_some_and(|at| at <= Ts::now());
            found.hits.push(Hit::CreditCode {
                code: code.display(),
                value_pence: r.value_pence,
                customer: r.customer_id,
                spent: r.redeemed_at.is_some(),
                expired,
            });
        }
    }
    if let Some(hint) = hint_of_tail(q) {
        for r in core.store.redemptions_by_hint(actor.brand_id, &hint, CODES_SHOWN).await? {
            let expired = r.redeemed_at.is_none() && r.expires_at.is_some_and(|at| at <= Ts::now());
            found.hits.push(Hit::CreditCode {
                code: hint.clone(),
                value_pence: r.value_pence,
                customer: r.customer_id,
                spent: r.redeemed_at.is_some(),
                expired,
            });
        }
    }
    let customer = RedemptionFilter { state: None, customer: Some(q.to_owned()) };
    let (_, redemptions) = core.store.brand_redemptions(actor.brand_id, &customer, Ts::now(), 1, 0).await?;
    if redemptions > 0 {
        found.hits.push(Hit::Customer { id: q.to_owned(), redemptions });
    }
    if let Some(words) = ListingQuery::search_words(q) {
        let query = ListingQuery { status: None, channel: None, sku: None, words };
        let page = core.store.list_listings(actor.brand_id, query, LISTINGS_SHOWN, 0).await?;
        found.listings_total = page.total;
        found.listings_total_is_estimate = page.total_is_estimate;
        found.hits.extend(page.listings.into_iter().map(|l| Hit::Listing {
            id: l.id,
            title: l.title,
            status: l.status,
            channel: l.channel,
        }));
    }
    if admin {
        let needle = q.to_lowercase();
        let has = |text: &str| text.to_lowercase().contains(&needle);
        for m in core.store.members(actor.brand_id, false).await? {
            if has(&m.name) || has(&m.email) {
                found.hits.push(Hit::Member { id: m.id, name: m.name, email: m.email });
            }
        }
        for k in core.store.brand_keys(actor.brand_id).await? {
            if has(&k.label) {
                found.hits.push(Hit::Key { id: k.id, label: k.label });
            }
        }
    }
    Ok(found)
}
