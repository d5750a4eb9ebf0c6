//! Retention (issue 36): the job leases that let one node at a time run a periodic job, and
//! the batched deletes of rows past their window. Each delete takes at most `limit` rows by
//! their key in one short statement, so the write lock (SQLite's one writer) or the row
//! locks (PostgreSQL) are held for one batch only; the job pauses between batches.

use super::{on_pool, PgStore, Store, StoreError, Ts};

/// What one batched delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    pub rows: u64,
    /// The latest instant among the rows deleted: where the next batch starts.
    pub last: Option<Ts>,
}

impl Store {
    /// Takes the lease of the periodic job `name` until `lease_until` if it is due at `now`
    /// (its `next_run_at` passed, first time included) and no other node holds a live lease.
    /// Answers whether `owner` now holds it.
    pub async fn claim_job(&self, name: &str, owner: &str, now: Ts, lease_until: Ts) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let claimed: Option<String> = sqlx::query_scalar(
                "INSERT INTO job_leases (name, lease_owner, leased_until, next_run_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (name) DO UPDATE SET lease_owner = excluded.lease_owner,
                     leased_until = excluded.leased_until
                 WHERE job_leases.next_run_at <= $4
                     AND (job_leases.leased_until IS NULL OR job_leases.leased_until <= $4)
                 RETURNING name",
            )
            .bind(name)
            .bind(owner)
            .bind(lease_until)
            .bind(now)
            .fetch_optional(pool)
            .await?;
            Ok(claimed.is_some())
        })
    }

    /// Moves `owner`'s lease of `name` on to `lease_until`; false when it is no longer
    /// `owner`'s (it ran out and another node took it).
    pub async fn extend_job(&self, name: &str, owner: &str, lease_until: Ts) -> Result<bool, StoreError> {
        on_pool!(self, write, |pool| {
            let done = sqlx::query("UPDATE job_leases SET leased_until = $3 WHERE name = $1 AND lease_owner = $2")
                .bind(name)
                .bind(owner)
                .bind(lease_until)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Releases `owner`'s lease of `name`, the job next due at `next_run_at`.
    pub async fn finish_job(&self, name: &str, owner: &str, next_run_at: Ts) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(
                "UPDATE job_leases SET leased_until = NULL, next_run_at = $3 WHERE name = $1 AND lease_owner = $2",
            )
            .bind(name)
            .bind(owner)
            .bind(next_run_at)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Deletes up to `limit` sign-in failures made before `before`, the oldest first, from
    /// `from` on (the previous batch's [`Batch::last`]: the index is read from there, not
    /// across the entries of rows already deleted, which PostgreSQL keeps until a vacuum).
    pub async fn prune_sign_in_failures(&self, from: Option<Ts>, before: Ts, limit: i64) -> Result<Batch, StoreError> {
        self.prune_oldest(
            "DELETE FROM sign_in_failures WHERE id IN (
                 SELECT id FROM sign_in_failures WHERE at >= $1 AND at < $2 ORDER BY at LIMIT $3)
             RETURNING at",
            from,
            before,
            limit,
        )
        .await
    }

    /// Deletes up to `limit` idempotency keys expired at or before `now`, the first expired
    /// first, from `from` on (as [`Store::prune_sign_in_failures`]).
    pub async fn prune_idempotency(&self, from: Option<Ts>, now: Ts, limit: i64) -> Result<Batch, StoreError> {
        self.prune_oldest(
            "DELETE FROM idempotency_keys WHERE (key_id, idem_key) IN (
                 SELECT key_id, idem_key FROM idempotency_keys WHERE expires_at >= $1 AND expires_at <= $2
                 ORDER BY expires_at LIMIT $3)
             RETURNING expires_at",
            from,
            now,
            limit,
        )
        .await
    }

    /// Runs a batched delete of the oldest rows by an indexed instant, `$1` the instant to
    /// start from, `$2` the cutoff, `$3` the limit; it returns each deleted row's instant.
    async fn prune_oldest(
        &self,
        sql: &'static str,
        from: Option<Ts>,
        upto: Ts,
        limit: i64,
    ) -> Result<Batch, StoreError> {
        let from = from.or_else(|| Ts::from_micros(0)).unwrap_or(upto);
        on_pool!(self, write, |pool| {
            let gone: Vec<Ts> = sqlx::query_scalar(sql).bind(from).bind(upto).bind(limit).fetch_all(pool).await?;
            Ok(Batch { rows: gone.len() as u64, last: gone.into_iter().max() })
        })
    }

    /// Deletes up to `limit` sessions ended before `ended_before` or last seen before
    /// `seen_before`; answers how many.
    pub async fn prune_sessions(&self, ended_before: Ts, seen_before: Ts, limit: i64) -> Result<u64, StoreError> {
        self.prune(
            "DELETE FROM sessions WHERE id IN (
                 SELECT id FROM sessions WHERE ended_at < $1 OR last_seen_at < $2 LIMIT $3)",
            &[ended_before, seen_before],
            limit,
        )
        .await
    }

    /// Deletes up to `limit` invitations used or expired before `before`; answers how many.
    pub async fn prune_invitations(&self, before: Ts, limit: i64) -> Result<u64, StoreError> {
        self.prune(
            "DELETE FROM invitations WHERE id IN (
                 SELECT id FROM invitations WHERE used_at < $1 OR expires_at < $1 LIMIT $2)",
            &[before],
            limit,
        )
        .await
    }

    /// Deletes up to `limit` mails sent or given up before `before` (never one waiting);
    /// answers how many.
    pub async fn prune_mail(&self, before: Ts, limit: i64) -> Result<u64, StoreError> {
        self.prune(
            "DELETE FROM mail_outbox WHERE id IN (
                 SELECT id FROM mail_outbox WHERE sent_at < $1 OR failed_at < $1 LIMIT $2)",
            &[before],
            limit,
        )
        .await
    }

    /// Runs one batched delete whose instants are bound first and `limit` last.
    async fn prune(&self, sql: &'static str, instants: &[Ts], limit: i64) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            let mut query = sqlx::query(sql);
            for at in instants {
                query = query.bind(*at);
            }
            Ok(query.bind(limit).execute(pool).await?.rows_affected())
        })
    }
}

impl PgStore {
    /// Deletes up to `limit` rate limit slots below `before_slot` (buckets left idle: a
    /// bucket's own slots also go as it counts); answers how many.
    pub async fn prune_rate_slots(&self, before_slot: i64, limit: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM rate_limit_slots WHERE ctid = ANY(ARRAY(
                 SELECT ctid FROM rate_limit_slots WHERE slot < $1 LIMIT $2))",
        )
        .bind(before_slot)
        .bind(limit)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}
