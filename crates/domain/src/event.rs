//! Events and their envelope `{id, type, created_at, data}`, the exact bytes a partner receives.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::apikey::random_base62;
use crate::wire::wire_names;

/// The event types of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// A trade-in sold and the customer chose how to be paid.
    RedemptionCreated,
    /// The collection date of a sold clearance item was confirmed, or moved to another day.
    CollectionScheduled,
    /// A confirmed collection was withdrawn: the order waits for a date again. Only for
    /// endpoints that ask for it.
    CollectionCancelled,
    /// A test event a partner sent to check their receiver (`data: {brand_id}`).
    Ping,
    /// A listing was created (`data`: its summary). Only for endpoints that ask for it.
    ListingCreated,
    /// A listing changed: its fields, its stock (a sale), its photos (`data`: its summary).
    ListingUpdated,
    /// A listing was trashed (`data`: its summary, `deleted_at` set).
    ListingDeleted,
}

wire_names!(EventType {
    RedemptionCreated => "redemption.created",
    CollectionScheduled => "collection.scheduled",
    CollectionCancelled => "collection.cancelled",
    Ping => "ping",
    ListingCreated => "listing.created",
    ListingUpdated => "listing.updated",
    ListingDeleted => "listing.deleted",
});

/// The types an endpoint receives unless it asks otherwise (decisions 15.3): the spec's two.
pub const DEFAULT_SUBSCRIPTION: &[EventType] = &[EventType::RedemptionCreated, EventType::CollectionScheduled];
/// The type names an endpoint may ask for (`event_types`); `ping` is always sent.
pub const SUBSCRIBABLE: &[&str] = &[
    "redemption.created",
    "collection.scheduled",
    "collection.cancelled",
    "listing.created",
    "listing.updated",
    "listing.deleted",
];

impl EventType {
    /// The type as people read it (the dashboard's pages).
    pub fn words(self) -> &'static str {
        match self {
            Self::RedemptionCreated => "Trade-in sold (redemption)",
            Self::CollectionScheduled => "Collection scheduled",
            Self::CollectionCancelled => "Collection cancelled",
            Self::Ping => "Test event",
            Self::ListingCreated => "Listing created",
            Self::ListingUpdated => "Listing updated",
            Self::ListingDeleted => "Listing deleted",
        }
    }

    /// The words of a stored type, or the name as it is if no code wrote it.
    pub fn words_of(name: &str) -> &str {
        name.parse::<Self>().map_or(name, |t| t.words())
    }
}

/// One event for one brand. Its `id` is unique and stays the same across every retry and
/// replay, so a receiver deduplicates on it.
#[derive(Debug, Clone)]
pub struct Event {
    /// `evt_` + 24 random base62 characters (about 143 bits).
    pub id: String,
    pub event_type: EventType,
    /// The brand the event is delivered to (its numeric id; `data.brand_id` carries the slug).
    pub brand_id: i64,
    pub created_at: DateTime<Utc>,
    pub data: Value,
}

#[derive(Serialize)]
struct Envelope<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    event_type: &'static str,
    created_at: String,
    data: &'a Value,
}

impl Event {
    /// A new event created now. `data` is the event's data object as the spec shapes it.
    pub fn new(brand_id: i64, event_type: EventType, data: Value) -> Result<Self, getrandom::Error> {
        Ok(Self { id: format!("evt_{}", random_base62(24)?), event_type, brand_id, created_at: Utc::now(), data })
    }

    /// The envelope as sent: `{"id", "type", "created_at", "data"}` in that order, compact,
    /// `created_at` in RFC 3339 UTC with milliseconds. Computed once, at emission, and stored.
    pub fn envelope(&self) -> String {
        let envelope = Envelope {
            id: &self.id,
            event_type: self.event_type.as_str(),
            created_at: self.created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            data: &self.data,
        };
        // Serialising a struct of strings and a `Value` cannot fail.
        serde_json::to_string(&envelope).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_envelope_has_id_type_created_at_and_data_in_that_order() {
        let mut event =
            Event::new(7, EventType::RedemptionCreated, json!({"id": "red_1", "value_pence": 1250})).unwrap();
        event.created_at = "2026-11-21T09:30:00.120Z".parse().unwrap();
        event.id = "evt_test".into();
        assert_eq!(
            event.envelope(),
            r#"{"id":"evt_test","type":"redemption.created","created_at":"2026-11-21T09:30:00.120Z","data":{"id":"red_1","value_pence":1250}}"#
        );
    }

    #[test]
    fn event_ids_are_prefixed_and_unique() {
        let a = Event::new(1, EventType::CollectionScheduled, json!({})).unwrap();
        let b = Event::new(1, EventType::CollectionScheduled, json!({})).unwrap();
        assert!(a.id.starts_with("evt_") && a.id.len() == 28);
        assert_ne!(a.id, b.id);
    }
}
