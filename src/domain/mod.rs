//! Types and rules of the marketplace, free of HTTP and SQL.

pub mod apikey;
pub mod listing;
pub mod money;
pub mod settings;
pub mod taxonomy;
pub mod user;
