//! Retention (issue 36): the job leases that let one node at a time run a periodic job, and
//! the batched deletes of rows past their window. Each delete takes at most `limit` rows by
//! their key in one short statement, so the write lock (SQLite's one writer) or the row
//! locks (PostgreSQL) are held for one batch only; the job pauses between batches.

use super::queue::NamedLease;
use super::{on_pool, Dialect, PgStore, Store, StoreError, Ts};

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
        const JOB_LEASE: NamedLease = NamedLease {
            table: "job_leases",
            key: "name",
            also_insert: (", next_run_at", ", $4"),
            free: "job_leases.next_run_at <= $4 AND (job_leases.leased_until IS NULL OR job_leases.leased_until <= $4)",
        };
        self.take_lease(&JOB_LEASE, name.to_owned(), owner, now, lease_until).await
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
        let pick = Pick { table: "sign_in_failures", key: ROW_ID, filter: "at >= $1 AND at < $2", order: "at, id" };
        self.prune_oldest(&pick.delete_returning("at", self), from, before, limit).await
    }

    /// Deletes up to `limit` idempotency keys expired at or before `now`, the first expired
    /// first, from `from` on (as [`Store::prune_sign_in_failures`]).
    pub async fn prune_idempotency(&self, from: Option<Ts>, now: Ts, limit: i64) -> Result<Batch, StoreError> {
        // The key is two columns: the physical row id selects the rows on either backend.
        let key = Dialect { sqlite: "rowid", postgres: "ctid" };
        let filter = "expires_at >= $1 AND expires_at <= $2";
        let pick = Pick { table: "idempotency_keys", key, filter, order: "expires_at, key_id, idem_key" };
        self.prune_oldest(&pick.delete_returning("expires_at", self), from, now, limit).await
    }

    /// The API keys used since `used_since` that hold more than `cap` idempotency keys, each
    /// with how many more. (Only a key used within the keys' lifetime can hold any.)
    pub async fn idempotency_over_cap(&self, used_since: Ts, cap: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        on_pool!(self, read, |pool| {
            let counts: Vec<(i64, i64)> = sqlx::query_as(
                "SELECT k.id, (SELECT COUNT(*) FROM idempotency_keys i WHERE i.key_id = k.id)
                 FROM api_keys k WHERE k.last_used_at >= $1 ORDER BY k.id",
            )
            .bind(used_since)
            .fetch_all(pool)
            .await?;
            Ok(counts.into_iter().filter(|&(_, n)| n > cap).map(|(id, n)| (id, n - cap)).collect())
        })
    }

    /// Deletes up to `limit` of the oldest finished idempotency keys of the API key `key_id`
    /// (a running one is left to finish); answers how many.
    pub async fn trim_idempotency(&self, key_id: i64, limit: i64) -> Result<u64, StoreError> {
        let key = Dialect { sqlite: "rowid", postgres: "ctid" }.of(self);
        let choice = format!(
            "SELECT {key} FROM idempotency_keys WHERE key_id = $1 AND state = 'done'
             ORDER BY created_at, idem_key LIMIT $2"
        );
        let delete = if self.is_postgres() {
            format!("DELETE FROM idempotency_keys WHERE {key} = ANY(ARRAY({choice}))")
        } else {
            format!("DELETE FROM idempotency_keys WHERE {key} IN ({choice})")
        };
        on_pool!(self, write, |pool| {
            Ok(sqlx::query(&delete).bind(key_id).bind(limit).execute(pool).await?.rows_affected())
        })
    }

    /// Runs a batched delete of the oldest rows by an indexed instant, `$1` the instant to
    /// start from, `$2` the cutoff, `$3` the limit; it returns each deleted row's instant.
    async fn prune_oldest(&self, sql: &str, from: Option<Ts>, upto: Ts, limit: i64) -> Result<Batch, StoreError> {
        let from = from.or_else(|| Ts::from_micros(0)).unwrap_or(upto);
        on_pool!(self, write, |pool| {
            let gone: Vec<Ts> = sqlx::query_scalar(sql).bind(from).bind(upto).bind(limit).fetch_all(pool).await?;
            Ok(Batch { rows: gone.len() as u64, last: gone.into_iter().max() })
        })
    }

    /// Deletes up to `limit` sessions ended before `ended_before` or last seen before
    /// `seen_before`; answers how many.
    pub async fn prune_sessions(&self, ended_before: Ts, seen_before: Ts, limit: i64) -> Result<u64, StoreError> {
        let pick = Pick { table: "sessions", key: ROW_ID, filter: "ended_at < $1 OR last_seen_at < $2", order: "id" };
        self.prune(&pick.delete("$3", self), &[ended_before, seen_before], limit).await
    }

    /// Deletes up to `limit` invitations used or expired before `before`; answers how many.
    pub async fn prune_invitations(&self, before: Ts, limit: i64) -> Result<u64, StoreError> {
        let pick = Pick { table: "invitations", key: ROW_ID, filter: "used_at < $1 OR expires_at < $1", order: "id" };
        self.prune(&pick.delete("$2", self), &[before], limit).await
    }

    /// Deletes up to `limit` storefront buyers' details of orders placed before `before`;
    /// answers how many. The orders stay (the brands' books); their pages then show nothing.
    pub async fn prune_buyers(&self, before: Ts, limit: i64) -> Result<u64, StoreError> {
        const ORDER_ID: Dialect = Dialect { sqlite: "order_id", postgres: "order_id" };
        let pick = Pick { table: "order_buyers", key: ORDER_ID, filter: "created_at < $1", order: "order_id" };
        self.prune(&pick.delete("$2", self), &[before], limit).await
    }

    /// Deletes up to `limit` mails sent or given up before `before` (never one waiting);
    /// answers how many.
    pub async fn prune_mail(&self, before: Ts, limit: i64) -> Result<u64, StoreError> {
        let pick = Pick { table: "mail_outbox", key: ROW_ID, filter: "sent_at < $1 OR failed_at < $1", order: "id" };
        self.prune(&pick.delete("$2", self), &[before], limit).await
    }

    /// Deletes up to `limit` webhook events delivered before `before`, the first delivered
    /// first, with their attempts; answers how many events. Never a pending or dead event:
    /// the events are chosen and locked (PostgreSQL: `FOR UPDATE`, so a replay in between
    /// waits, and a replayed event is no longer chosen; SQLite: the one writer) before their
    /// attempts go.
    pub async fn prune_webhook_events(&self, before: Ts, limit: i64) -> Result<u64, StoreError> {
        let choose = *Dialect {
            sqlite: "SELECT seq FROM webhook_events WHERE status = 'delivered' AND delivered_at < $1
                     ORDER BY delivered_at, seq LIMIT $2",
            postgres: "SELECT seq FROM webhook_events WHERE status = 'delivered' AND delivered_at < $1
                       ORDER BY delivered_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED",
        }
        .pick(self);
        // The chosen keys as one JSON array: one statement shape whatever the batch.
        let chosen = *Dialect {
            sqlite: "SELECT value FROM json_each($1)",
            postgres: "SELECT value::bigint FROM json_array_elements_text($1::json)",
        }
        .pick(self);
        let attempts = format!("DELETE FROM webhook_attempts WHERE event_seq IN ({chosen})");
        let events = format!("DELETE FROM webhook_events WHERE seq IN ({chosen}) AND status = 'delivered'");
        on_pool!(self, write, |pool| {
            let mut tx = pool.begin().await?;
            let seqs: Vec<i64> = sqlx::query_scalar(choose).bind(before).bind(limit).fetch_all(&mut *tx).await?;
            if seqs.is_empty() {
                return Ok(0);
            }
            let keys = format!("[{}]", seqs.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
            sqlx::query(&attempts).bind(&keys).execute(&mut *tx).await?;
            let gone = sqlx::query(&events).bind(&keys).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok(gone)
        })
    }

    /// Runs one batched delete whose instants are bound first and `limit` last.
    async fn prune(&self, sql: &str, instants: &[Ts], limit: i64) -> Result<u64, StoreError> {
        on_pool!(self, write, |pool| {
            let mut query = sqlx::query(sql);
            for at in instants {
                query = query.bind(*at);
            }
            Ok(query.bind(limit).execute(pool).await?.rows_affected())
        })
    }
}

/// The `id` column of the tables keyed by one.
const ROW_ID: Dialect = Dialect { sqlite: "id", postgres: "id" };

/// The rows one batch deletes: the first `limit` of `table` by `order` (unique, so the
/// same rows however often the database reads the choice) that match `filter`.
struct Pick {
    table: &'static str,
    key: Dialect,
    filter: &'static str,
    order: &'static str,
}

impl Pick {
    /// The delete, with its `limit` placeholder. On PostgreSQL the keys are chosen once, as
    /// an array (an `IN (subquery)` may be planned as a join that reads the subquery again
    /// for every row: seconds per batch on a million rows); SQLite reads an `IN` list once.
    fn delete(&self, limit: &str, store: &Store) -> String {
        let Self { table, filter, order, .. } = self;
        let key = self.key.of(store);
        let choice = format!("SELECT {key} FROM {table} WHERE {filter} ORDER BY {order} LIMIT {limit}");
        if store.is_postgres() {
            format!("DELETE FROM {table} WHERE {key} = ANY(ARRAY({choice}))")
        } else {
            format!("DELETE FROM {table} WHERE {key} IN ({choice})")
        }
    }

    /// The delete of the first `$3` rows, answering `column` of each.
    fn delete_returning(&self, column: &str, store: &Store) -> String {
        format!("{} RETURNING {column}", self.delete("$3", store))
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
