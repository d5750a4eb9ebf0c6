//! Each brand's listing clock (migration 0015): the instant a change to the brand's listings
//! writes as their `updated_at`.
//!
//! A sync walk (decisions 11.2) reads listings in (`updated_at`, `id`) order and moves past
//! what it has read. Were two changes to stamp their own clocks, the one stamped earlier
//! could commit later, behind a walk that had already passed its instant, and be missed.
//! Taking the instant from the brand's clock row closes that gap: the row stays locked until
//! the change commits, so the brand's changes commit in the order of their instants, and
//! the next instant is never earlier than the last (clocks of nodes may disagree, or step
//! back). Changes of one brand's listings therefore queue on this row for the rest of their
//! transaction; other brands' do not.

use super::super::{on_conn, Conn, Ts};

/// The next instant of the brand's listing clock: `now`, or one microsecond after the last
/// instant handed out if that is not earlier. Run inside the change's transaction, before
/// the listings are written.
pub(crate) async fn tick(conn: Conn<'_>, brand_id: i64, now: Ts) -> Result<Ts, sqlx::Error> {
    let later = match conn {
        Conn::Sqlite(_) => "max(listing_clocks.micros + 1, excluded.micros)",
        Conn::Postgres(_) => "GREATEST(listing_clocks.micros + 1, excluded.micros)",
    };
    let sql = format!(
        "INSERT INTO listing_clocks (brand_id, micros) VALUES ($1, $2)
         ON CONFLICT (brand_id) DO UPDATE SET micros = {later} RETURNING micros"
    );
    let micros: i64 =
        on_conn!(conn, |c| { sqlx::query_scalar(&sql).bind(brand_id).bind(now.micros()).fetch_one(&mut *c).await? });
    Ts::from_micros(micros)
        .ok_or_else(|| sqlx::Error::Decode(format!("listing clock of brand {brand_id} is out of range").into()))
}
