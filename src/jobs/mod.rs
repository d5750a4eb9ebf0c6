//! Background work: the webhook outbox and its delivery worker.
//!
//! Emitting an event is one row written in the caller's transaction (the transactional
//! outbox): build an [`Event`], pass it to [`crate::store::insert_event`] with `&mut *tx`
//! before `tx.commit()`, then call [`Outbox::wake`] (the `outbox` of the app state) so the
//! worker sends it at once. A change that rolls back takes its events with it.

pub mod event;
pub mod retry;
pub mod signature;
pub mod webhooks;

pub use event::{Event, EventType};
pub use webhooks::{Deliverer, Outbox, WorkerSettings};
