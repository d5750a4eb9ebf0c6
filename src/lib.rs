//! rehome: the partner resale marketplace API.

/// The composition root: the API and the dashboard in one router, the background work,
/// the server's lifecycle and shutdown.
pub mod app;
/// The command line.
pub mod cli;
/// Settings from flags and `REHOME_*` environment variables.
pub mod config;
/// Marketplace types and rules, free of HTTP and SQL: the `rehome-domain` crate.
pub use rehome_domain as domain;
pub use rehome_domain::{documented_body, documented_patch_body, wire_names};
/// The API error type and its JSON rendering.
pub mod error;
/// Router, middleware and one module per resource.
pub mod http;
/// Bulk import files: XLSX and CSV reading, bounded before parsing, and the XLSX template.
pub mod import;
/// Background work: the webhook outbox and its delivery worker.
pub mod jobs;
/// Rate limiting: the sliding window, the in-process and the PostgreSQL-shared limiter.
pub mod limit;
/// The log's writer, which never blocks the server.
pub mod logging;
/// Photo files: the media store behind a small trait, type sniffing, base64, thumbnails.
pub mod media;
/// The operating metrics: the Prometheus families, read on the metrics listener.
pub mod metrics;
/// Outbound HTTP behind an SSRF guard (webhooks, image imports).
pub mod net;
/// Taking buyers' payments: the gateway port and its Stripe adapter.
pub mod payments;
/// Giving back the executable's pages the start touched, so an idle node holds only what it uses.
pub mod residency;
/// What every handler reaches: the use cases' core and the HTTP edge's own parts.
pub mod state;
/// The storage boundary, SQLite and PostgreSQL behind one `Store`: the `rehome-store` crate.
pub use rehome_store as store;
/// The marketplace's public pages under `/marketplace`: catalogue, listings, brands, sitemap.
pub mod storefront;
/// The operations every edge (API, dashboard, bulk import, CLI) calls, one module per capability.
pub mod usecases;
/// The partner dashboard: pages under `/dashboard`, sessions, CSRF, templates.
pub mod web;
