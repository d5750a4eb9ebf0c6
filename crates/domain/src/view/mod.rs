//! Read models: what the use cases answer and the edges (API, dashboard, storefront) show.
//! The store reads its rows into these (with the `sqlx` feature, which only the store turns
//! on, a view maps a row by its field names); no store type reaches an edge.

mod listing;
mod money;
mod orders;
mod people;
#[cfg(feature = "sqlx")]
mod stored;
mod storefront;
mod webhooks;

pub use listing::*;
pub use money::*;
pub use orders::*;
pub use people::*;
pub use storefront::*;
pub use webhooks::*;
