//! Background work: the webhook outbox and its delivery worker; photo thumbnails and image
//! imports (woken through [`PhotoJobs`]) and the mail outbox with its SMTP sender (woken
//! through [`MailJobs`]), leased queues; the monthly remittance run, the retention job
//! (which deletes what is past its window) and the upkeep of counts and shared limits, on a
//! clock. Queues and clocks run on one runner ([`queue`]), which records every failure one
//! way. Every queue retries on a schedule of its own, written as data ([`retry`]), with
//! jitter.
//!
//! Emitting an event is one row written in the caller's transaction (the transactional
//! outbox): build a [`rehome_domain::event::Event`], pass it to [`rehome_store::Store::insert_event`] with `&mut *tx`
//! before `tx.commit()`, then call [`Outbox::wake`] (the `outbox` of the app state) so the
//! worker sends it at once. A change that rolls back takes its events with it.
//!
//! Mail works the same way: [`rehome_store::enqueue_mail`] on the caller's transaction,
//! then, after the commit, [`MailJobs::wake`] (`core.mail`).

pub mod imports;
pub mod mail;
pub mod photo_queue;
pub mod queue;
pub mod remittances;
pub mod retention;
pub mod retry;
pub mod signature;
pub mod thumbnails;
pub mod upkeep;
pub mod webhooks;

pub use imports::{ImportSettings, ImportWorker};
pub use mail::{MailJobs, MailSettings, MailWorker};
pub use photo_queue::PhotoJobs;
pub use queue::Queues;
pub use thumbnails::ThumbnailWorker;
pub use webhooks::{Deliverer, Outbox, WorkerSettings};
