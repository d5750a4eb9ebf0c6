//! rehome: the partner resale marketplace API.

/// The composition root: the API and the dashboard in one router, the background work,
/// the server's lifecycle and shutdown.
pub mod app;
/// The command line.
pub mod cli;
/// Marketplace types and rules, free of HTTP and SQL: the `rehome-domain` crate.
pub use rehome_domain as domain;
pub use rehome_domain::{documented_body, documented_patch_body, wire_names};
/// The API error type and its JSON rendering.
pub mod error;
/// Router, middleware and one module per resource.
pub mod http;
/// Giving back the executable's pages the start touched, so an idle node holds only what it uses.
pub mod residency;
/// What every handler reaches: the use cases' core and the HTTP edge's own parts.
pub mod state;
/// The use cases and the work behind them (the `rehome-core` crate): settings, bulk import
/// files, background jobs, rate limits, the log, media, metrics, outbound HTTP, payments.
pub use rehome_core::{config, idempotency, import, jobs, limit, logging, media, metrics, net, payments, usecases};
/// The storage boundary, SQLite and PostgreSQL behind one `Store`: the `rehome-store` crate.
pub use rehome_store as store;
/// The marketplace's public pages under `/marketplace`: catalogue, listings, brands, sitemap.
pub mod storefront;
/// The partner dashboard: pages under `/dashboard`, sessions, CSRF, templates.
pub mod web;
