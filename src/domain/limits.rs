//! The numeric limits of the API's fields, declared once in a leaf module: the rules that
//! check them (`payout`, `webhook`, `key_request`, `listing`) and the sentences that state
//! them (`messages`) both read them here, so a changed limit changes its message too.

use std::ops::RangeInclusive;

/// `credit_boost_percent`: credit is worth this percentage of the base.
pub const BOOST_PERCENT: RangeInclusive<i64> = 100..=200;
/// `code_validity_days`: how long a credit code can be spent.
pub const CODE_VALIDITY_DAYS: RangeInclusive<i64> = 1..=1095;
/// The longest overlap a rotation may give the previous secret, in hours.
pub const MAX_OVERLAP_HOURS: i64 = 72;
/// How long a rolled key keeps working, at most (a week), and by default.
pub const MAX_ROLL_HOURS: i64 = 168;
/// Most units one clearance listing may hold.
pub const MAX_CLEARANCE_QUANTITY: i64 = 10_000;
/// Invitation links one person may be sent in 24 hours (the first and each resend): enough
/// to recover from a lost mail, too few to spam an address from the dashboard.
pub const INVITATION_LINKS_PER_DAY: i64 = 5;
