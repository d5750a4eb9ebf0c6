//! rehome: the partner resale marketplace API.

/// Creating brands, users and API keys (CLI, demo seed, tests).
pub mod accounts;
/// Server state, lifecycle and shutdown.
pub mod app;
/// The command line.
pub mod cli;
/// Settings from flags and `REHOME_*` environment variables.
pub mod config;
/// Marketplace types and rules, free of HTTP and SQL.
pub mod domain;
/// The API error type and its JSON rendering.
pub mod error;
/// Router, middleware and one module per resource.
pub mod http;
/// The storage boundary.
pub mod store;
