//! Integration tests: the real server over real HTTP, one temporary database per test.

#[allow(dead_code)]
mod helpers;

mod auth;
mod cli;
mod errors;
mod limits;
mod listings;
mod listings_changes;
mod listings_validation;
mod options;
mod settings;
mod warehouses;
mod webhooks;
