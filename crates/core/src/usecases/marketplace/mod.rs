//! The marketplace: orders and deliveries (the operator side), customers' payout choices
//! and the redemptions they record, credit codes, and the collection of sold clearance
//! items. Operator use cases act for the marketplace itself and take no actor; partner use
//! cases act for an [`Actor`](rehome_domain::user::Actor)'s brand.

pub mod buyer_mail;
pub mod checkout;
pub mod collections;
pub mod credits;
pub mod orders;
pub mod payments;
pub mod payout_links;
pub mod payouts;
pub mod redemptions;

/// 32 random letters and digits (about 190 bits): a page token nobody can guess.
fn random_token() -> anyhow::Result<String> {
    rehome_domain::apikey::random_base62(32).map_err(no_randomness)
}

/// The OS random source failed: nothing can be issued without ids.
fn no_randomness(e: getrandom::Error) -> anyhow::Error {
    anyhow::anyhow!("no randomness: {e}")
}
