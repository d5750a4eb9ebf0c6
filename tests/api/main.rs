//! Integration tests: the real server over real HTTP, one temporary database per test.

#[allow(dead_code)]
mod helpers;
mod keep_alive;

mod audit_trail;
mod auth;
mod backup;
mod bulk;
mod bulk_files;
mod bulk_upsert;
mod cli;
mod connections;
mod copy;
mod documented_bodies;
mod durability;
mod errors;
mod generated_clients;
mod idempotency;
mod limits;
mod limits_shared;
mod listings;
mod listings_changes;
mod listings_pages;
mod listings_search;
mod listings_sync;
mod listings_validation;
mod logging;
mod mail;
mod marketplace;
mod metrics;
mod multipart;
mod nodes;
mod options;
mod people;
mod photos;
mod pool_stale;
mod preconditions;
mod retention;
mod schema_parity;
mod settings;
mod storefront;
mod wallet;
mod warehouses;
mod web;
mod webhook_example;
mod webhooks;
