//! Collections of sold clearance items (decisions 6.8): the list of orders awaiting
//! collection, and confirming a date inside the buyer's window, which emits
//! `collection.scheduled`; moving a confirmed collection to another day of the window (the
//! event sent again, with the new day) or cancelling it (`collection.cancelled`, the order
//! waits for a date again), until its day has passed.

use super::no_randomness;
use crate::usecases::refusal::Refusal;
use crate::usecases::Core;
use chrono::NaiveDate;
use rehome_domain::apikey::random_base62;
use rehome_domain::audit::{AuditAction, AuditEntry};
use rehome_domain::collection::{Collection, CollectionMove, CollectionQuery, CollectionRequest, CollectionStatus};
use rehome_domain::event::{Event, EventType};
use rehome_domain::order::{order_reference, BuyerWindow};
use rehome_domain::outcome::Outcome;
use rehome_domain::time::Ts;
use rehome_domain::user::{Actor, Admin};
use rehome_domain::view::CollectionRow;
use rehome_store::{
    BuyerNotice, CollectionChange, CollectionInsert, CollectionNews, MailBody, NewCollection, StoreError,
};

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
    Ok((rows.iter().map(order_of).collect(), total))
}

/// The brand's scheduled collection `id` with its order, if there is one.
pub async fn scheduled(core: &Core, actor: &Actor, id: &str) -> Result<Option<ClearanceOrder>, StoreError> {
    Ok(core.store.scheduled_collection(actor.brand_id, id).await?.as_ref().map(order_of))
}

fn order_of(row: &CollectionRow) -> ClearanceOrder {
    ClearanceOrder {
        order_id: row.order_id,
        listing_id: row.listing_id,
        title: row.title.clone().unwrap_or_default(),
        listing_warehouse_id: row.listing_warehouse_id.clone(),
        quantity: row.quantity,
        window: BuyerWindow { start: row.buyer_window_start, end: row.buyer_window_end },
        collection: collection_of(row),
    }
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

/// The date outside the window is a reason on `scheduled_for` (its sentence names the
/// window), a warehouse not of the brand one on `warehouse_id`.
impl From<ScheduleError> for Refusal {
    fn from(e: ScheduleError) -> Self {
        match e {
            ScheduleError::OrderNotFound => Outcome::OrderNotFound.into(),
            ScheduleError::AlreadyScheduled => Outcome::CollectionExists.into(),
            ScheduleError::OutsideWindow(window) => vec![window.refusal("scheduled_for")].into(),
            ScheduleError::UnknownWarehouse => Refusal::field("warehouse_id", "warehouse_id_invalid"),
            ScheduleError::Store(e) => e.into(),
            ScheduleError::Internal(e) => e.into(),
        }
    }
}

/// Confirms the collection date of a sold clearance item and emits `collection.scheduled`
/// in the same transaction, then wakes the webhook worker. The warehouse is the one given,
/// else the listing's, else the brand's default, else none with an empty label.
pub async fn schedule(core: &Core, actor: &Admin, request: &CollectionRequest) -> Result<Collection, ScheduleError> {
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
    let mail = BuyerMail::of(core, actor, &order_reference(order.id), &order.title, order.window()).await?;
    let day = day_words(request.scheduled_for);
    let subject = format!("Collection booked: order {}", mail.reference);
    let body = |name: &str| {
        mail.compose(
            name,
            format!("Your piece leaves the warehouse on {day}"),
            format!(
                "{} has booked the collection of your order {} ({}) for {day}. It is then delivered to you within \
                 your window, {}.",
                mail.brand, mail.reference, mail.title, mail.window
            ),
            &day,
        )
    };
    let news = CollectionNews {
        order_id: order.id,
        event: &event,
        audit: &audit,
        notice: core.config.mail_enabled().then_some(BuyerNotice { subject: &subject, body: &body }),
    };
    match core.store.record_collection(&new, news).await? {
        CollectionInsert::Recorded => {}
        CollectionInsert::Exists => return Err(ScheduleError::AlreadyScheduled),
    }
    core.outbox.wake();
    core.mail.wake();
    Ok(collection)
}

/// What the mails to a storefront buyer about their order's collection say in common.
struct BuyerMail {
    /// The brand's display name, else its slug.
    brand: String,
    reference: String,
    title: String,
    /// The buyer window in words.
    window: String,
}

impl BuyerMail {
    async fn of(
        core: &Core,
        actor: &Actor,
        reference: &str,
        title: &str,
        window: BuyerWindow,
    ) -> Result<Self, StoreError> {
        let brand = match core.store.brand_profile(actor.brand_id).await? {
            Some(profile) if !profile.display_name.is_empty() => profile.display_name,
            _ => actor.brand_slug.clone(),
        };
        Ok(Self { brand, reference: reference.to_owned(), title: title.to_owned(), window: window.words() })
    }

    /// The mail to the buyer `name`: its heading, its opening and the day it names ("" for none).
    fn compose(&self, name: &str, heading: String, opening: String, day: &str) -> MailBody {
        let mut details = vec![("Order", self.reference.clone()), ("Item", self.title.clone())];
        if !day.is_empty() {
            details.push(("Collected", day.to_owned()));
        }
        super::buyer_mail::BuyerMail {
            subject: String::new(),
            heading,
            greeting: format!("Hello {name},"),
            opening,
            details,
            closing: vec!["Your order's page (the link in your confirmation email) shows where it stands.".to_owned()],
            link: None,
        }
        .body()
    }
}

/// A day as the buyer's mail and the dashboard say it: `Thursday 10 December 2026`.
pub fn day_words(day: chrono::NaiveDate) -> String {
    day.format("%A %-d %B %Y").to_string()
}

/// Why a scheduled collection cannot be moved or cancelled.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// No scheduled collection with that id in the brand.
    #[error("no such scheduled collection")]
    NotFound,
    /// The collection's day is before today.
    #[error("the collection's day has passed")]
    Passed,
    /// The new day is outside the buyer's window, or before today (this window, and today).
    #[error("outside the buyer window or past")]
    OutsideWindow(BuyerWindow),
    /// The brand has no such warehouse.
    #[error("no such warehouse")]
    UnknownWarehouse,
    /// Other changes to the collection came first every time it was read again.
    #[error("the collection kept changing")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// The new day outside the window is a reason on `scheduled_for` (its sentence names the
/// window), a warehouse not of the brand one on `warehouse_id`.
impl From<ChangeError> for Refusal {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::NotFound => Outcome::CollectionNotFound.into(),
            ChangeError::Passed => Outcome::CollectionPassed.into(),
            ChangeError::Contended => Outcome::CollectionContended.into(),
            ChangeError::OutsideWindow(window) => vec![window.refusal("scheduled_for")].into(),
            ChangeError::UnknownWarehouse => Refusal::field("warehouse_id", "warehouse_id_invalid"),
            ChangeError::Store(e) => e.into(),
            ChangeError::Internal(e) => e.into(),
        }
    }
}

/// A change to a collection that was read: what it becomes.
enum Wanted<'a> {
    Move(&'a CollectionMove),
    Cancel,
}

/// What a change does: the row's change, the collection it answers (the event's data), the
/// event and the audit action.
struct Step {
    change: CollectionChange,
    collection: Collection,
    event: EventType,
    action: AuditAction,
}

/// How many times a change reads the collection again when another change got there first:
/// each retry follows a change that succeeded, so a burst of simultaneous changes of one
/// collection (a cancel among them ends it) settles well within this; past it the change
/// is refused as contended (409), never a failure of the service.
const CHANGE_ATTEMPTS: usize = 64;

/// Moves the brand's scheduled collection `id` to another day of its buyer window (today or
/// later), and sends `collection.scheduled` again with the new day and the same collection
/// id; the buyer is mailed the new day. A move to the day it already has changes nothing and
/// sends nothing. Refused once the collection's day has passed.
pub async fn move_to(
    core: &Core,
    actor: &Admin,
    id: &str,
    request: &CollectionMove,
) -> Result<Collection, ChangeError> {
    change(core, actor, id, Wanted::Move(request)).await
}

/// Cancels the brand's scheduled collection `id`: the order waits for a date again (it can
/// be scheduled anew), `collection.cancelled` carries the collection as it was, and the buyer
/// is told a new day will follow. Refused once the collection's day has passed. Answers the
/// collection as it was.
pub async fn cancel(core: &Core, actor: &Admin, id: &str) -> Result<Collection, ChangeError> {
    change(core, actor, id, Wanted::Cancel).await
}

/// What moving the brand's collection `id` as `request` asks would do, without doing it
/// (the dashboard's confirmation step): the collection as it is and as it would be, or the
/// refusal the move would meet now.
pub async fn preview_move(
    core: &Core,
    actor: &Admin,
    id: &str,
    request: &CollectionMove,
) -> Result<(Collection, Collection), ChangeError> {
    let plan = plan(core, actor, id, &Wanted::Move(request)).await?;
    let after = plan.step.map_or_else(|| plan.current.clone(), |step| step.collection);
    Ok((plan.current, after))
}

/// The brand's collection `id` as cancelling it would withdraw it, without doing it (the
/// dashboard's confirmation step), or the refusal a cancel would meet now.
pub async fn preview_cancel(core: &Core, actor: &Admin, id: &str) -> Result<Collection, ChangeError> {
    Ok(plan(core, actor, id, &Wanted::Cancel).await?.current)
}

/// A change checked against the collection as read: the collection, its day, its order's
/// title and window (for the buyer's mail), and the step (`None`: a move to what it already
/// has).
struct Plan {
    current: Collection,
    was: NaiveDate,
    title: String,
    window: BuyerWindow,
    step: Option<Step>,
}

async fn change(core: &Core, actor: &Admin, id: &str, wanted: Wanted<'_>) -> Result<Collection, ChangeError> {
    for _ in 0..CHANGE_ATTEMPTS {
        let Plan { current, was, title, window, step } = plan(core, actor, id, &wanted).await?;
        let Some(step) = step else { return Ok(current) };
        let data = serde_json::to_value(&step.collection).map_err(anyhow::Error::from)?;
        let event = Event::new(actor.brand_id, step.event, data).map_err(no_randomness)?;
        let audit = AuditEntry::by(actor, step.action, Some(format!("collection:{id}")));
        // The buyer's mail is worded only when mail is sent.
        let letter = if core.config.mail_enabled() {
            let mail = BuyerMail::of(core, actor, &current.order_reference, &title, window).await?;
            let words = letter(&step.change, was, &mail);
            Some((mail, words))
        } else {
            None
        };
        let body = |name: &str| match &letter {
            Some((mail, (_, heading, opening, day))) => mail.compose(name, heading.clone(), opening.clone(), day),
            None => MailBody { text: String::new(), html: None },
        };
        let news = CollectionNews {
            order_id: current.order_id,
            event: &event,
            audit: &audit,
            notice: letter.as_ref().map(|(_, (subject, ..))| BuyerNotice { subject, body: &body }),
        };
        if core.store.change_collection(actor.brand_id, id, was, &step.change, news).await? {
            core.outbox.wake();
            core.mail.wake();
            return Ok(step.collection);
        }
    }
    Err(ChangeError::Contended)
}

async fn plan(core: &Core, actor: &Admin, id: &str, wanted: &Wanted<'_>) -> Result<Plan, ChangeError> {
    let row = core.store.scheduled_collection(actor.brand_id, id).await?.ok_or(ChangeError::NotFound)?;
    let current = collection_of(&row).ok_or(ChangeError::NotFound)?;
    let was = row.scheduled_for.ok_or(ChangeError::NotFound)?;
    let window = BuyerWindow { start: row.buyer_window_start, end: row.buyer_window_end };
    let today = chrono::Utc::now().date_naive();
    if was < today {
        return Err(ChangeError::Passed);
    }
    let title = row.title.clone().unwrap_or_default();
    let step = match wanted {
        Wanted::Move(request) => {
            let day = request.scheduled_for;
            // The days still to come of the window.
            let open = BuyerWindow { start: window.start.max(today), end: window.end };
            if !open.contains(day) {
                return Err(ChangeError::OutsideWindow(open));
            }
            let warehouse = match &request.warehouse_id {
                Some(given) => {
                    if !core.store.warehouse_in_brand(actor.brand_id, given).await? {
                        return Err(ChangeError::UnknownWarehouse);
                    }
                    core.store.collection_warehouse(actor.brand_id, Some(given), row.listing_id).await?
                }
                None => current.warehouse_id.clone().map(|w| (w, current.warehouse_label.clone())),
            };
            let (warehouse_id, warehouse_label) = warehouse.map_or((None, String::new()), |(i, l)| (Some(i), l));
            if day == was && warehouse_id == current.warehouse_id {
                return Ok(Plan { current, was, title, window, step: None });
            }
            let scheduled_at = Ts::now();
            let moved = Collection {
                scheduled_for: day.to_string(),
                scheduled_at: scheduled_at.to_string(),
                warehouse_id: warehouse_id.clone(),
                warehouse_label: warehouse_label.clone(),
                ..current.clone()
            };
            Step {
                change: CollectionChange::Move { scheduled_for: day, scheduled_at, warehouse_id, warehouse_label },
                collection: moved,
                event: EventType::CollectionScheduled,
                action: AuditAction::CollectionRescheduled,
            }
        }
        Wanted::Cancel => Step {
            change: CollectionChange::Cancel,
            collection: current.clone(),
            event: EventType::CollectionCancelled,
            action: AuditAction::CollectionCancelled,
        },
    };
    Ok(Plan { current, was, title, window, step: Some(step) })
}

/// The buyer's mail about `change` of a collection booked for `was`: its subject, heading,
/// opening and the day it names ("" for none).
fn letter(change: &CollectionChange, was: NaiveDate, mail: &BuyerMail) -> (String, String, String, String) {
    match change {
        CollectionChange::Move { scheduled_for, .. } => {
            let words = day_words(*scheduled_for);
            (
                format!("Collection moved: order {}", mail.reference),
                format!("Your piece now leaves the warehouse on {words}"),
                format!(
                    "{} has moved the collection of your order {} ({}) from {} to {words}. It is then delivered to \
                     you within your window, {}.",
                    mail.brand,
                    mail.reference,
                    mail.title,
                    day_words(was),
                    mail.window
                ),
                words,
            )
        }
        CollectionChange::Cancel => (
            format!("Collection date withdrawn: order {}", mail.reference),
            "Your collection day is being rearranged".to_owned(),
            format!(
                "{} has withdrawn the collection booked for {} of your order {} ({}). They will book another day, \
                 and you will be told it; delivery stays within your window, {}.",
                mail.brand,
                day_words(was),
                mail.reference,
                mail.title,
                mail.window
            ),
            String::new(),
        ),
    }
}
