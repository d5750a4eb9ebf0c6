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
/// Data rows per bulk file (the spec's `max_rows`).
pub const MAX_ROWS: usize = 200;
/// Most units one clearance listing may hold.
pub const MAX_CLEARANCE_QUANTITY: i64 = 10_000;

/// Most pixels a photo may have: 40 megapixels (a 7,744×5,164 camera frame). Judged from
/// the header, before any pixel is decoded: a 261 KB PNG may declare 16,384×16,384.
pub const MAX_PIXELS: u64 = 40_000_000;

// The listing body's fields.
pub const TITLE_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 20_000;
/// Longer input is refused before sanitising, which bounds the work one request can cause.
pub const DESCRIPTION_INPUT_MAX: usize = 200_000;
pub const BRAND_MAX: usize = 80;
pub const SKU_MAX: usize = 64;
pub const WAREHOUSE_LOCATION_MAX: usize = 64;
/// Most entries of `measurements`, `images` and `attachment_ids`.
pub const MAX_ITEMS: usize = 20;
pub const IMAGE_URL_MAX: usize = 2048;
/// Largest dimension of a piece, in centimetres.
pub const MAX_DIMENSION_CM: f64 = 1000.0;
/// Longest taxonomy value a matched field may hold (no value or spelling is near it).
pub const MATCHED_MAX: usize = 100;
/// Invitation links one person may be sent in 24 hours (the first and each resend): enough
/// to recover from a lost mail, too few to spam an address from the dashboard.
pub const INVITATION_LINKS_PER_DAY: i64 = 5;
/// API keys a brand may create in an hour (the keys rolls made in it count too): each key has
/// rate limits of its own, so minting keys must not multiply them.
pub const KEYS_PER_HOUR: i64 = 20;

/// The most a filtered count of a brand's rows counts (the dashboard's lists say "more than"
/// past it): a count walks what it counts, and a list's first page should not walk them all.
pub const LIST_COUNT_CAP: i64 = 10_000;

/// `Retry-After` of a 507 or 503 answered for a database outage (by the API and the dashboard).
pub const OUTAGE_RETRY_AFTER_SECS: u64 = 5;

/// The largest photo accepted: 10 MiB (decisions 4.1); this size or more is refused.
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
