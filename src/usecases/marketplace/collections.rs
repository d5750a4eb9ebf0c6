//! Collections of sold clearance items (decisions 6.8): the list of orders awaiting
//! collection, and confirming a date inside the buyer's window, which emits
//! `collection.scheduled`.

use super::no_randomness;
use crate::domain::apikey::random_base62;
use crate::domain::audit::{AuditAction, AuditEntry};
use crate::domain::collection::{Collection, CollectionQuery, CollectionRequest, CollectionStatus};
use crate::domain::event::{Event, EventType};
use crate::domain::order::{order_reference, BuyerWindow};
use crate::domain::outcome::Outcome;
use crate::domain::user::Actor;
use crate::domain::FieldError;
use crate::store::{CollectionInsert, CollectionRow, NewCollection, StoreError, Ts};
use crate::usecases::Core;

/// A sold clearance item and its collection, if scheduled.
#[derive(Debug)]
pub struct ClearanceOrder {
    pub order_id: i64,
    pub listing_id: i64,
    /// The title sold; empty when neither the order nor its listing has one any more.
    pub title: String,
    /// The listing's warehouse, where its collection goes unless another is chosen.
    pub listing_warehouse_id: Option<String>,
    pub quantity: i64,
    pub window: BuyerWindow,
    pub collection: Option<Collection>,
}

impl ClearanceOrder {
    pub fn status(&self) -> CollectionStatus {
        match self.collection {
            Some(_) => CollectionStatus::Scheduled,
            None => CollectionStatus::Unscheduled,
        }
    }
}

/// A page of the brand's sold clearance items in buyer-window order, and how many match.
pub async fn list(
    core: &Core,
    actor: &Actor,
    filter: CollectionQuery,
    limit: i64,
    offset: i64,
) -> Result<(Vec<ClearanceOrder>, i64), StoreError> {
    let (rows, total) = core.store.collections(actor.brand_id, filter, limit, offset).await?;
    let orders = rows
        .into_iter()
        .map(|row| ClearanceOrder {
            order_id: row.order_id,
            listing_id: row.listing_id,
            title: row.title.clone().unwrap_or_default(),
            listing_warehouse_id: row.listing_warehouse_id.clone(),
            quantity: row.quantity,
            window: BuyerWindow { start: row.buyer_window_start, end: row.buyer_window_end },
            collection: collection_of(&row),
        })
        .collect();
    Ok((orders, total))
}

fn collection_of(row: &CollectionRow) -> Option<Collection> {
    Some(Collection {
        id: row.id.clone()?,
        brand_id: row.brand_slug.clone(),
        order_id: row.order_id,
        order_reference: order_reference(row.order_id),
        product_id: row.listing_id,
        scheduled_for: row.scheduled_for?.to_string(),
        scheduled_at: row.scheduled_at?.to_string(),
        warehouse_id: row.warehouse_id.clone(),
        warehouse_label: row.warehouse_label.clone().unwrap_or_default(),
        buyer_window_start: row.buyer_window_start.to_string(),
        buyer_window_end: row.buyer_window_end.to_string(),
    })
}

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// No such clearance order of the brand.
    #[error("no such clearance order")]
    OrderNotFound,
    /// The date is outside the order's buyer window (this one).
    #[error("outside the buyer window")]
    OutsideWindow(BuyerWindow),
    /// The brand has no such warehouse.
    #[error("no such warehouse")]
    UnknownWarehouse,
    #[error("the order's collection is already scheduled")]
    AlreadyScheduled,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ScheduleError {
    /// The refusal in the catalogue, for refusals of the request as a whole; `None` for a
    /// field's reason ([`ScheduleError::field_error`]) or a failure of the service.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Self::OrderNotFound => Some(Outcome::OrderNotFound),
            Self::AlreadyScheduled => Some(Outcome::CollectionExists),
            Self::OutsideWindow(_) | Self::UnknownWarehouse | Self::Store(_) | Self::Internal(_) => None,
        }
    }

    /// The reason on one field of the request: the date outside the window (its sentence
    /// names the window), a warehouse not of the brand.
    pub fn field_error(&self) -> Option<FieldError> {
        match self {
            Self::OutsideWindow(window) => Some(window.refusal("scheduled_for")),
            Self::UnknownWarehouse => Some(FieldError::of("warehouse_id", "invalid")),
            _ => None,
        }
    }
}

/// Confirms the collection date of a sold clearance item and emits `collection.scheduled`
/// in the same transaction, then wakes the webhook worker. The warehouse is the one given,
/// else the listing's, else the brand's default, else none with an empty label.
pub async fn schedule(core: &Core, actor: &Actor, request: &CollectionRequest) -> Result<Collection, ScheduleError> {
    let order = core
        .store
        .order(request.order_id, Some(actor.brand_id))
        .await?
        .filter(|o| !o.is_exchange())
        .ok_or(ScheduleError::OrderNotFound)?;
    if !order.window().contains(request.scheduled_for) {
        return Err(ScheduleError::OutsideWindow(order.window()));
    }
    if let Some(given) = &request.warehouse_id {
        if !core.store.warehouse_in_brand(actor.brand_id, given).await? {
            return Err(ScheduleError::UnknownWarehouse);
        }
    }
    let warehouse =
        core.store.collection_warehouse(actor.brand_id, request.warehouse_id.as_deref(), order.listing_id).await?;
    let (warehouse_id, warehouse_label) = match warehouse {
        Some((id, label)) => (Some(id), label),
        None => (None, String::new()),
    };
    let scheduled_at = Ts::now();
    let id = format!("col_{}", random_base62(24).map_err(no_randomness)?);
    let collection = Collection {
        id: id.clone(),
        brand_id: actor.brand_slug.clone(),
        order_id: order.id,
        order_reference: order_reference(order.id),
        product_id: order.listing_id,
        scheduled_for: request.scheduled_for.to_string(),
        scheduled_at: scheduled_at.to_string(),
        warehouse_id: warehouse_id.clone(),
        warehouse_label: warehouse_label.clone(),
        buyer_window_start: order.buyer_window_start.to_string(),
        buyer_window_end: order.buyer_window_end.to_string(),
    };
    let data = serde_json::to_value(&collection).map_err(anyhow::Error::from)?;
    let event = Event::new(actor.brand_id, EventType::CollectionScheduled, data).map_err(no_randomness)?;
    let audit = AuditEntry::by(actor, AuditAction::CollectionScheduled, Some(format!("collection:{id}")));
    let new = NewCollection {
        id,
        brand_id: actor.brand_id,
        order_id: order.id,
        scheduled_for: request.scheduled_for,
        scheduled_at,
        warehouse_id,
        warehouse_label,
    };
    // A buyer of the storefront is told the day (decisions 14.5).
    let day = request.scheduled_for.format("%A %-d %B %Y").to_string();
    let (reference, title, window) = (order_reference(order.id), order.title.clone(), order.window().words());
    let brand = actor.brand_slug.clone();
    let brand = match core.store.brand_profile(actor.brand_id).await? {
        Some(profile) if !profile.display_name.is_empty() => profile.display_name,
        _ => brand,
    };
    let notify = move |name: &str| {
        super::buyer_mail::BuyerMail {
            subject: format!("Collection booked: order {reference}"),
            heading: format!("Your piece leaves the warehouse on {day}"),
            greeting: format!("Hello {name},"),
            opening: format!(
                "{brand} has booked the collection of your order {reference} ({title}) for {day}. \
                 It is then delivered to you within your window, {window}."
            ),
            details: vec![("Order", reference.clone()), ("Item", title.clone()), ("Collected", day.clone())],
            closing: vec!["Your order's page (the link in your confirmation email) shows where it stands.".to_owned()],
            link: None,
        }
        .body()
    };
    let notify: Option<&(dyn Fn(&str) -> crate::store::MailBody + Sync)> =
        core.config.mail_enabled().then_some(&notify);
    match core.store.record_collection(&new, &event, &audit, notify).await? {
        CollectionInsert::Recorded => {}
        CollectionInsert::Exists => return Err(ScheduleError::AlreadyScheduled),
    }
    core.outbox.wake();
    core.mail.wake();
    Ok(collection)
}
