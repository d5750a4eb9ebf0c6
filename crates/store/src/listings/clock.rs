//! Each brand's listing clock (migration 0015): the instant a change to the brand's listings
//! writes as their `updated_at`.
//!
//! A sync walk (decisions 11.2) reads listings in (`updated_at`, `id`) order and moves past
//! what it has read. Were two changes to stamp their own clocks, the one stamped earlier
//! could commit later, behind a walk that had already passed its instant, and be missed.
//! Taking the instant from the brand's clock row closes that gap: the row stays locked until
//! the change commits, so the brand's changes commit in the order of their instants, and
//! the next instant is never earlier than the last (clocks of nodes may disagree, or step
//! back). Changes take it last ([`stamp`]), so those of one brand queue on the row only
//! for their commit; other brands' do not.

use super::super::{on_conn, Conn, Ts};

/// The next instant of the brand's listing clock: `now`, or one microsecond after the last
/// instant handed out if that is not earlier. Run inside the change's transaction; the row
/// stays locked until it ends.
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

/// Ends a change to the listings `ids` of a brand, written with `updated_at` (and, for those
/// it trashed, `deleted_at`) set to `provisional`: takes the brand's next instant, and moves
/// the listings to it in the rare case it is not `provisional` (two changes in one
/// microsecond, or a node whose clock is behind). Run as the last statement before the
/// commit, so that the clock row is held only for the commit: changes of one brand queue
/// on it for that long, not for their whole transaction.
pub(crate) async fn stamp(conn: Conn<'_>, brand_id: i64, provisional: Ts, ids: &[i64]) -> Result<Ts, sqlx::Error> {
    on_conn!(conn, |c| {
        let at = tick((&mut *c).into(), brand_id, provisional).await?;
        if at != provisional && !ids.is_empty() {
            let list: Vec<String> = (0..ids.len()).map(|n| format!("${}", n + 4)).collect();
            let sql = format!(
                "UPDATE listings SET updated_at = $1, deleted_at = CASE WHEN deleted_at = $2 THEN $1 ELSE deleted_at END
                 WHERE brand_id = $3 AND updated_at = $2 AND id IN ({})",
                list.join(", ")
            );
            let mut query = sqlx::query(&sql).bind(at).bind(provisional).bind(brand_id);
            for id in ids {
                query = query.bind(*id);
            }
            query.execute(&mut *c).await?;
        }
        Ok(at)
    })
}

/// Marks listings as changed by something other than their own fields (an image import
/// that finished or failed for good): takes the brand's next instant and writes it as
/// their `updated_at`, so a sync walk shows them again. Inside the caller's transaction.
pub(crate) async fn touch(conn: Conn<'_>, brand_id: i64, listing_ids: &[i64], now: Ts) -> Result<(), sqlx::Error> {
    if listing_ids.is_empty() {
        return Ok(());
    }
    on_conn!(conn, |c| {
        let at = tick((&mut *c).into(), brand_id, now).await?;
        let list: Vec<String> = (0..listing_ids.len()).map(|n| format!("${}", n + 3)).collect();
        let sql = format!("UPDATE listings SET updated_at = $1 WHERE brand_id = $2 AND id IN ({})", list.join(", "));
        let mut query = sqlx::query(&sql).bind(at).bind(brand_id);
        for id in listing_ids {
            query = query.bind(*id);
        }
        query.execute(&mut *c).await?;
        Ok(())
    })
}
