//! One component per enumerated concept (a listing's condition, status and channel, a
//! member's role, an event type, a delivery's status), used alike by request bodies,
//! answers, query parameters and webhook payloads, so a generated client has one type for
//! each: a `condition` read from a listing can be sent back in an edit. The values are the
//! domain's wire names. Answers name them with `#[schema(value_type = …)]`; request bodies
//! (described by `BodySpec` tables) and query parameters get them from [`super::finish`],
//! which points every inline enum with the same values at its component.

use std::borrow::Cow;

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::domain::event::{EventType as Event, SUBSCRIBABLE};
use crate::domain::listing::{Channel as ListingChannel, Condition as ListingCondition, ListingStatus as Status};
use crate::domain::user::Role as UserRole;
use crate::domain::webhook::DeliveryStatus as Delivery;
use crate::import::Mode;

macro_rules! shared_enums {
    ($($name:ident: $values:expr, $doc:literal;)+) => {
        $(
            #[doc = $doc]
            pub struct $name;

            impl utoipa::PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some(Self::values()))
                        .description(Some($doc))
                        .into()
                }
            }

            impl $name {
                /// The values, in the domain's order.
                pub fn values() -> Vec<&'static str> {
                    $values
                }
            }

            impl utoipa::ToSchema for $name {
                fn name() -> Cow<'static, str> {
                    Cow::Borrowed(stringify!($name))
                }
            }
        )+

        /// Every shared enum: its component name and its values.
        pub fn shared() -> Vec<(&'static str, Vec<&'static str>)> {
            vec![$((stringify!($name), $name::values())),+]
        }

        /// Every shared enum as a component schema.
        pub fn components() -> Vec<(&'static str, RefOr<Schema>)> {
            vec![$((stringify!($name), <$name as utoipa::PartialSchema>::schema())),+]
        }
    };
}

shared_enums! {
    Condition: ListingCondition::ALL.iter().map(|c| c.as_str()).collect(),
        "A listing's condition: `like-new`, `excellent`, `gently-used` or `fair`.";
    Channel: ListingChannel::ALL.iter().map(|c| c.as_str()).collect(),
        "A listing's channel: `clearance` (overstock) or `exchange` (pre-loved trade-ins).";
    ListingStatus: Status::ALL.iter().map(|s| s.as_str()).collect(),
        "Where a listing stands: `active` (on sale), `draft` (hidden) or `closed` (sold out).";
    EditableStatus: Status::ALL.iter().filter(|s| **s != Status::Closed).map(|s| s.as_str()).collect(),
        "The statuses a create or an edit may set: `active` or `draft` (a listing is `closed` only by selling out).";
    Role: UserRole::ALL.iter().map(|r| r.as_str()).collect(),
        "A team member's role: `admin` (everything) or `member` (listings and collections).";
    EventType: Event::ALL.iter().map(|e| e.as_str()).collect(),
        "A webhook event's type.";
    SubscribableEventType: SUBSCRIBABLE.to_vec(),
        "An event type an endpoint may ask for in `event_types` (`ping` is always sent).";
    BulkMode: [Mode::Create, Mode::Upsert].iter().map(|m| m.as_str()).collect(),
        "What a bulk import does with a row whose `sku` names one of the brand's listings: `create` (another \
listing, the default) or `upsert` (update that listing).";
    DeliveryStatus: Delivery::ALL.iter().map(|s| s.as_str()).collect(),
        "Where an event stands: `pending` (waiting for its first or next attempt), `delivered` or `dead` (no \
further attempt will be made unless it is replayed).";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_shared_enums_have_the_same_values() {
        let all = shared();
        for (i, (a, values)) in all.iter().enumerate() {
            assert!(!values.is_empty(), "{a}");
            for (b, other) in &all[i + 1..] {
                let (mut x, mut y) = (values.clone(), other.clone());
                x.sort_unstable();
                y.sort_unstable();
                assert_ne!(x, y, "{a} and {b}");
            }
        }
    }
}
