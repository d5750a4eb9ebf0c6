//! Integration tests: the real server over real HTTP, one temporary database per test.

#[allow(dead_code)]
mod helpers;

mod auth;
mod cli;
mod errors;
mod limits;
mod options;
