//! rehome's core: the use cases every edge calls and the work behind them (jobs, media,
//! import, payments, limits, metrics), over the domain and the store. It names no edge: the
//! API, the dashboard and the storefront live in the `rehome` crate above it.

/// Settings from flags and `REHOME_*` environment variables.
pub mod config;
/// The idempotency writer: key claims, kept answers and releases of concurrent requests,
/// written a batch at a time.
pub mod idempotency;
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
/// The operations every edge (API, dashboard, bulk import, CLI) calls, one module per capability.
pub mod usecases;
