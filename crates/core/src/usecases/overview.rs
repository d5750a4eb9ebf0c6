//! What needs doing, for the dashboard's home (issue 31 item 3): collections to schedule
//! with their deadlines, orders from storefront buyers to deliver, dead deliveries, pending invitations, keys expiring soon or unused
//! for 90 days, the wallet's balances and next statement, listings by status, and sales of
//! the last 12 months. Every figure comes from the use case or query its own page uses, so
//! the home and the page never disagree.

use chrono::{DateTime, Datelike, Months, NaiveDate, TimeDelta, Utc};

use super::marketplace::collections;
use super::people::{keys, team};
use super::{listings, wallet, webhooks, Core};
use rehome_domain::collection::{CollectionQuery, CollectionStatus};
use rehome_domain::listing::{ListingQuery, ListingStatus};
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::webhook::DeliveryStatus;
use rehome_store::{Balances, StoreError};

/// Collections listed on the home (the rest are on Collections).
const COLLECTIONS_SHOWN: i64 = 5;
/// A key expiring within this many days needs a successor.
pub const KEY_EXPIRY_WARNING_DAYS: i64 = 14;
/// A key not used for this many days may no longer be needed.
pub const KEY_UNUSED_DAYS: i64 = 90;

/// An order whose collection is still to schedule, by the last day of its buyer window.
#[derive(Debug, Clone)]
pub struct ToSchedule {
    pub order_id: i64,
    pub listing_id: i64,
    /// The listing's title when it sold.
    pub title: String,
    pub window_start: NaiveDate,
    /// The last day a collection may be scheduled for.
    pub deadline: NaiveDate,
}

/// Why a key is worth a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyConcern {
    /// It stops working within [`KEY_EXPIRY_WARNING_DAYS`].
    Expiring(DateTime<Utc>),
    /// Not used for [`KEY_UNUSED_DAYS`] (or never, and made that long ago).
    Unused,
}

#[derive(Debug, Clone)]
pub struct KeyNote {
    pub id: i64,
    pub label: String,
    pub lookup: String,
    pub concern: KeyConcern,
}

/// A month of sales, oldest first; months without sales are there with zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonthTotal {
    /// The first day of the month.
    pub month: NaiveDate,
    pub entries: i64,
    pub gross_pence: i64,
}

#[derive(Debug, Clone)]
pub struct Overview {
    pub to_schedule: Vec<ToSchedule>,
    pub to_schedule_total: i64,
    /// Orders from storefront buyers not yet delivered.
    pub buyer_orders_waiting: i64,
    pub dead_deliveries: i64,
    /// Admins only (the team and keys are theirs): `(name, email)`.
    pub pending_invitations: Vec<(String, String)>,
    pub keys: Vec<KeyNote>,
    pub balances: Balances,
    pub next_statement: NaiveDate,
    /// Every status with its count, in the order of [`ListingStatus::ALL`].
    pub listings: Vec<(ListingStatus, i64)>,
    /// The last 12 months, this one included.
    pub sales: Vec<MonthTotal>,
}

/// The brand's overview at `now`, as `actor` may see it: with the pending invitations and
/// the keys' concerns when the caller's check made them an `admin` too.
pub async fn overview(
    core: &Core,
    actor: &Actor,
    admin: Option<&Admin>,
    now: DateTime<Utc>,
) -> Result<Overview, StoreError> {
    let unscheduled = CollectionQuery::Only(CollectionStatus::Unscheduled);
    let (orders, to_schedule_total) = collections::list(core, actor, unscheduled, COLLECTIONS_SHOWN, 0).await?;
    let to_schedule = orders
        .into_iter()
        .map(|o| ToSchedule {
            order_id: o.order_id,
            listing_id: o.listing_id,
            title: o.title,
            window_start: o.window.start,
            deadline: o.window.end,
        })
        .collect();
    let dead_deliveries = webhooks::count(core, actor, DeliveryStatus::Dead).await?;
    let buyer_orders_waiting = core.store.buyer_orders_waiting(actor.brand_id).await?;
    let (pending_invitations, keys) = if let Some(admin) = admin {
        let members = team::members(core, admin).await?;
        let invited = members.into_iter().filter(|m| m.status == "invited").map(|m| (m.name, m.email)).collect();
        let notes = keys::keys(core, admin).await?.into_iter().filter_map(|k| key_note(k, now)).collect();
        (invited, notes)
    } else {
        (Vec::new(), Vec::new())
    };
    let wallet = wallet::wallet(core, actor).await?;
    let mut listings = Vec::with_capacity(ListingStatus::ALL.len());
    for status in ListingStatus::ALL {
        let filter = ListingQuery { status: Some(*status), ..ListingQuery::default() };
        listings.push((*status, listings::list(core, actor, filter, 0, 0).await?.total));
    }
    let first = first_of_month(now.date_naive()) - Months::new(11);
    let since = Ts::from(first.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    let sold = core.store.sales_by_month(actor.brand_id, since).await?;
    let sales = (0..12)
        .map(|i| {
            let month = first + Months::new(i);
            let key = month.format("%Y-%m").to_string();
            let found = sold.iter().find(|m| m.month == key);
            MonthTotal {
                month,
                entries: found.map_or(0, |m| m.entries),
                gross_pence: found.map_or(0, |m| m.gross_pence),
            }
        })
        .collect();
    Ok(Overview {
        to_schedule,
        to_schedule_total,
        buyer_orders_waiting,
        dead_deliveries,
        pending_invitations,
        keys,
        balances: wallet.balances,
        next_statement: wallet.next_payout_date,
        listings,
        sales,
    })
}

fn first_of_month(day: NaiveDate) -> NaiveDate {
    day.with_day(1).unwrap_or(day)
}

/// What is worth saying of an active key at `now`, if anything.
fn key_note(key: rehome_domain::view::KeyRecord, now: DateTime<Utc>) -> Option<KeyNote> {
    let active = key.revoked_at.is_none() && key.expires_at.is_none_or(|at| at.get() > now);
    if !active {
        return None;
    }
    let concern = match key.expires_at {
        Some(at) if at.get() - now <= TimeDelta::days(KEY_EXPIRY_WARNING_DAYS) => KeyConcern::Expiring(at.get()),
        _ => {
            let seen = key.last_used_at.unwrap_or(key.created_at).get();
            if now - seen < TimeDelta::days(KEY_UNUSED_DAYS) {
                return None;
            }
            KeyConcern::Unused
        }
    };
    Some(KeyNote { id: key.id, label: key.label, lookup: key.lookup, concern })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rehome_domain::view::KeyRecord;

    fn key(created_days_ago: i64, used_days_ago: Option<i64>, expires_in_days: Option<i64>) -> KeyRecord {
        let now = Utc::now();
        KeyRecord {
            id: 1,
            label: "k".into(),
            lookup: "rhk_abc".into(),
            scopes: "read,write".into(),
            user_id: 1,
            created_at: Ts::from(now - TimeDelta::days(created_days_ago)),
            expires_at: expires_in_days.map(|d| Ts::from(now + TimeDelta::days(d))),
            last_used_at: used_days_ago.map(|d| Ts::from(now - TimeDelta::days(d))),
            last_used_ip: None,
            revoked_at: None,
            rate_limit: None,
        }
    }

    #[test]
    fn keys_expiring_soon_or_unused_for_90_days_are_noted() {
        let now = Utc::now();
        assert_eq!(key_note(key(10, Some(1), None), now).map(|n| n.concern), None);
        assert_eq!(key_note(key(100, Some(89), None), now).map(|n| n.concern), None);
        assert_eq!(key_note(key(100, Some(91), None), now).map(|n| n.concern), Some(KeyConcern::Unused));
        assert_eq!(key_note(key(100, None, None), now).map(|n| n.concern), Some(KeyConcern::Unused));
        assert!(matches!(key_note(key(1, Some(1), Some(3)), now).map(|n| n.concern), Some(KeyConcern::Expiring(_))));
        assert_eq!(key_note(key(1, Some(1), Some(30)), now).map(|n| n.concern), None);
        assert_eq!(key_note(key(1, Some(1), Some(-1)), now).map(|n| n.concern), None, "expired: not active");
    }
}
