//! Types and rules of the marketplace, free of HTTP and SQL.

pub mod apikey;
pub mod credit_code;
pub mod listing;
pub mod money;
pub mod order;
pub mod payout;
pub mod reader;
pub mod settings;
pub mod taxonomy;
pub mod user;
