//! Integration tests: the real server over real HTTP, one temporary database per test.

#[allow(dead_code)]
mod helpers;

mod auth;
mod bulk;
mod bulk_files;
mod cli;
mod errors;
mod limits;
mod listings;
mod listings_changes;
mod listings_validation;
mod marketplace;
mod options;
mod photos;
mod settings;
mod warehouses;
mod webhooks;
