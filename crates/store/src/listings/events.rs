//! Listing events (decisions 15.3): `listing.created`, `listing.updated` and
//! `listing.deleted`, written in the transaction of the change (the outbox, as every event),
//! and only for a brand whose endpoint asks for them, so receivers written for the spec's
//! two types see nothing new. Whether a brand asks costs one indexed read per change (a sale
//! reads it with its stock, in the same statement); the
//! events themselves, a read of the changed listings' summaries and a row each.
//!
//! The event's `data` is the listing as `GET /v1/listings` lists it. That shape is the API's,
//! so the server hands the store the function that writes it ([`Store::set_listing_view`]):
//! the store knows the rows, not the wire.

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::super::webhooks::insert_event;
use super::super::{on_conn, Conn, Store, StoreError, Ts};
use super::{summaries, NEWEST_FIRST, PAGE_JSON, SUMMARY_COLUMNS};
use rehome_domain::event::{Event, EventType};
use rehome_domain::view::ListingView;

/// Where the store keeps the [`ListingView`] it was handed (shared by its clones).
#[derive(Clone, Default)]
pub struct ViewSlot(Arc<OnceLock<ListingView>>);

impl fmt::Debug for ViewSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() { "ViewSlot(set)" } else { "ViewSlot(unset)" })
    }
}

impl Store {
    /// Hands the store the shape of a listing in a listing event; the first call wins.
    pub fn set_listing_view(&self, view: ListingView) {
        let _ = self.listing_view.0.set(view);
    }

    /// The events of a change to the brand's listings `ids`, made at `now`, on `conn` (the
    /// change's transaction): `listing.created` for those created at `now`,
    /// `listing.deleted` for the trashed, `listing.updated` for the others; each only if the
    /// brand's endpoint asks for its type.
    pub(crate) async fn listing_events(
        &self,
        mut conn: Conn<'_>,
        brand_id: i64,
        ids: &[i64],
        now: Ts,
    ) -> Result<(), StoreError> {
        let Some(view) = self.listing_view.0.get() else { return Ok(()) };
        if ids.is_empty() {
            return Ok(());
        }
        let asked: Option<(String, String)> = on_conn!(&mut conn, |c| {
            sqlx::query_as(
                "SELECT e.event_types, b.slug FROM webhook_endpoints e JOIN brands b ON b.id = e.brand_id
                 WHERE e.brand_id = $1",
            )
            .bind(brand_id)
            .fetch_optional(&mut **c)
            .await?
        });
        let Some((types, slug)) = asked.filter(|(types, _)| types.contains("listing.")) else {
            return Ok(());
        };
        let list: Vec<String> = (0..ids.len()).map(|n| format!("${}", n + 2)).collect();
        let sql = format!(
            "SELECT {page_json} FROM (SELECT {SUMMARY_COLUMNS} FROM listings l
                 WHERE l.brand_id = $1 AND l.id IN ({list}) ORDER BY l.created_at DESC, l.id DESC) p",
            page_json = PAGE_JSON.of(self).replace("{order}", NEWEST_FIRST),
            list = list.join(", "),
        );
        let page: String = on_conn!(&mut conn, |c| {
            let mut query = sqlx::query_scalar::<_, String>(&sql).bind(brand_id);
            for id in ids {
                query = query.bind(*id);
            }
            query.fetch_one(&mut **c).await?
        });
        let sealer = self.sealer()?;
        for record in summaries(&page)? {
            let kind = if record.deleted_at.is_some() {
                EventType::ListingDeleted
            } else if record.created_at == now {
                EventType::ListingCreated
            } else {
                EventType::ListingUpdated
            };
            if !types.split(',').any(|t| t == kind.as_str()) {
                continue;
            }
            let event = Event::new(brand_id, kind, view(&record, &slug))
                .map_err(|e| StoreError::Sealing(format!("no randomness for an event id: {e}")))?;
            insert_event(conn.reborrow(), sealer, &event).await?;
        }
        Ok(())
    }
}
