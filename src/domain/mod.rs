//! Types and rules of the marketplace, free of HTTP and SQL.

pub mod apikey;
pub mod audit;
pub mod body;
pub mod collection;
pub mod credit_code;
pub mod event;
pub mod idempotency;
pub mod key_request;
pub mod limits;
pub mod listing;
pub mod lockout;
pub mod messages;
pub mod money;
pub mod order;
pub mod outcome;
pub mod password;
pub mod payout;
pub mod precondition;
pub mod reader;
pub mod recovery;
pub mod redemption;
pub mod retention;
pub mod session;
pub mod settings;
pub mod taxonomy;
pub mod team;
pub mod totp;
pub mod user;
pub mod wallet;
pub mod webhook;
pub mod wire;

pub use body::FieldError;
