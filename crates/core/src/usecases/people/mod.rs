//! People and access (decisions section 8): sign-in with passwords and two-step codes,
//! dashboard sessions, invitations, the team, API keys and the audit log.

pub mod accept;
mod attempts;
pub mod audit;
pub mod callers;
pub mod enrolment;
pub mod invitations;
pub mod keys;
pub mod password_pool;
pub mod passwords;
pub mod resets;
pub mod sealed;
pub mod sessions;
pub mod sign_in;
pub mod team;
