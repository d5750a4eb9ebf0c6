//! The wallet (decisions 10): the ledger of what each brand earns, the statements
//! (remittances) that pay it, and the leases of the monthly runs.
//!
//! An entry is written in the transaction of what earns it (an order's completion, a
//! customer's credit choice); `order_id` is unique, so an order never earns twice. Its
//! status is derived from the time and from `remittance_id`, so no job flips rows.
//! Issuing a statement is one transaction (of one brand, or of a few on SQLite) under the
//! brand's lock: the next number, the statement, its entries marked paid and its mail all
//! commit together or not at all, and a second run finds nothing left to pay.

use std::sync::LazyLock;

use futures_util::TryStreamExt;
use sqlx::FromRow;

use super::queue::NamedLease;
use super::{
    enqueue_mail, on_conn, on_pool, record_audit, Conn, Dialect, NewMail, Store, StoreError, Ts, READ_SNAPSHOT,
};
use rehome_domain::audit::{AuditAction, AuditActor, AuditEntry};
use rehome_domain::view::{EntryFilter, EntryRecord, RemittanceRecord};
use rehome_domain::wallet::{EntryStatus, EntryType, LineMoney};

/// An entry to write with what earned it.
#[derive(Debug, Clone)]
pub struct NewLedgerEntry {
    pub brand_id: i64,
    pub kind: EntryType,
    pub order_id: i64,
    pub listing_id: i64,
    pub title: String,
    pub quantity: i64,
    pub money: LineMoney,
    pub delivered_at: Ts,
    pub available_at: Ts,
}

/// A brand's balances in pence at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromRow)]
pub struct Balances {
    pub available: i64,
    pub pending: i64,
    pub paid: i64,
}

/// Makes something of a statement (its mail, a download) from its lines, fed one at a
/// time, oldest first, as they are read: a statement of a hundred thousand lines is never
/// held whole (issue 34).
pub trait StatementRender {
    type Output;
    fn line(&mut self, entry: &EntryRecord);
    fn finish(self) -> Self::Output;
}

/// The mail of an issued statement, queued in the statement's transaction.
#[derive(Debug, Clone)]
pub struct StatementMail {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub file_name: String,
    pub pdf: Vec<u8>,
}

const ENTRY_COLUMNS: &str = "id, type, order_id, listing_id, title, quantity, gross_pence, commission_pence, vat_pence,
    delivery_pence, amount_pence, delivered_at, available_at, remittance_id";

const REMITTANCE_COLUMNS: &str = "r.id, b.slug AS brand_slug, b.name AS brand_name, b.time_zone AS brand_time_zone, r.number, r.period_end, r.issued_at, r.billing,
    r.line_count, r.gross_pence, r.commission_pence, r.vat_pence, r.delivery_pence, r.amount_pence,
    (SELECT p.period_end FROM remittances p WHERE p.brand_id = r.brand_id AND p.number = r.number - 1) AS period_start";

/// A statement of a brand: `$1` its id, `$2` the brand.
static REMITTANCE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {REMITTANCE_COLUMNS} FROM remittances r JOIN brands b ON b.id = r.brand_id
         WHERE r.id = $1 AND r.brand_id = $2"
    )
});

/// A statement's lines, oldest entry first: `$1` its id.
static LINES_SQL: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE remittance_id = $1 ORDER BY id"));

/// Sets a new statement's totals from the entries it pays and answers it as
/// [`REMITTANCE_SQL`] does (the brand's names by subquery: SQLite's `RETURNING` names only
/// the table written): `$1` its id, `$2` the brand.
///
/// The brand too, though the statement alone decides the rows: it keeps SQLite on an index
/// led by both whatever its statistics say. Statistics gathered while every entry was
/// unpaid (one NULL value) made it scan the whole ledger for each brand's statement: 31 ms
/// a brand, 44 s for 1,000 brands (issue 34).
const TOTALS_SQL: &str =
    "UPDATE remittances SET (line_count, gross_pence, commission_pence, vat_pence, delivery_pence, amount_pence) =
       (SELECT COUNT(*), CAST(SUM(gross_pence) AS BIGINT), CAST(SUM(commission_pence) AS BIGINT),
               CAST(SUM(vat_pence) AS BIGINT), CAST(SUM(delivery_pence) AS BIGINT),
               CAST(SUM(amount_pence) AS BIGINT)
        FROM ledger_entries WHERE brand_id = $2 AND remittance_id = $1)
     WHERE id = $1
     RETURNING id, (SELECT slug FROM brands WHERE id = $2) AS brand_slug,
               (SELECT name FROM brands WHERE id = $2) AS brand_name,
               (SELECT time_zone FROM brands WHERE id = $2) AS brand_time_zone,
               number, period_end, issued_at, billing, line_count, gross_pence, commission_pence, vat_pence,
               delivery_pence, amount_pence,
               (SELECT p.period_end FROM remittances p WHERE p.brand_id = $2 AND p.number = remittances.number - 1)
                   AS period_start";

/// Serialises the statements of one brand: two runs (two nodes) take turns, and the second
/// finds the entries paid. `NO KEY UPDATE` leaves rows that merely reference the brand (a
/// new entry, a new listing) free to be written meanwhile.
const STATEMENT_LOCK: Dialect =
    Dialect { sqlite: "SELECT $1", postgres: "SELECT id FROM brands WHERE id = $1 FOR NO KEY UPDATE" };

/// Writes `entry` on `conn`, the transaction of what earned it.
pub(super) async fn insert_entry(conn: Conn<'_>, entry: &NewLedgerEntry) -> Result<(), StoreError> {
    on_conn!(conn, |c| {
        sqlx::query(
            "INSERT INTO ledger_entries (brand_id, type, order_id, listing_id, title, quantity, gross_pence,
                 commission_pence, vat_pence, delivery_pence, amount_pence, delivered_at, available_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(entry.brand_id)
        .bind(entry.kind.as_str())
        .bind(entry.order_id)
        .bind(entry.listing_id)
        .bind(&entry.title)
        .bind(entry.quantity)
        .bind(entry.money.gross)
        .bind(entry.money.commission)
        .bind(entry.money.vat)
        .bind(entry.money.delivery)
        .bind(entry.money.amount)
        .bind(entry.delivered_at)
        .bind(entry.available_at)
        .bind(Ts::now())
        .execute(&mut *c)
        .await?;
        Ok(())
    })
}

/// A month's sales in the ledger: its entries and their gross.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct MonthSales {
    /// `YYYY-MM` (UTC).
    pub month: String,
    pub entries: i64,
    pub gross_pence: i64,
}

/// The month of `delivered_at`, `YYYY-MM`.
const DELIVERED_MONTH: Dialect =
    Dialect { sqlite: "substr(delivered_at, 1, 7)", postgres: "to_char(delivered_at AT TIME ZONE 'UTC', 'YYYY-MM')" };

impl Store {
    /// The brand's sales (every ledger entry) delivered since `since`, by month, oldest first.
    pub async fn sales_by_month(&self, brand_id: i64, since: Ts) -> Result<Vec<MonthSales>, StoreError> {
        let month = DELIVERED_MONTH.pick(self);
        let sql = format!(
            "SELECT {month} AS month, CAST(COUNT(*) AS BIGINT) AS entries, CAST(SUM(gross_pence) AS BIGINT) AS gross_pence
             FROM ledger_entries WHERE brand_id = $1 AND delivered_at >= $2 GROUP BY {month} ORDER BY 1"
        );
        on_pool!(self, read, |pool| Ok(sqlx::query_as(&sql).bind(brand_id).bind(since).fetch_all(pool).await?))
    }

    /// The brand's balances at `now`.
    pub async fn wallet_balances(&self, brand_id: i64, now: Ts) -> Result<Balances, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(
                "SELECT
                   CAST(COALESCE(SUM(CASE WHEN remittance_id IS NULL AND available_at <= $2 THEN amount_pence ELSE 0 END), 0) AS BIGINT) AS available,
                   CAST(COALESCE(SUM(CASE WHEN remittance_id IS NULL AND available_at > $2 THEN amount_pence ELSE 0 END), 0) AS BIGINT) AS pending,
                   CAST(COALESCE(SUM(CASE WHEN remittance_id IS NOT NULL THEN amount_pence ELSE 0 END), 0) AS BIGINT) AS paid
                 FROM ledger_entries WHERE brand_id = $1",
            )
            .bind(brand_id)
            .bind(now)
            .fetch_one(pool)
            .await?)
        })
    }

    /// Up to `limit` of the brand's entries after entry `after`, oldest first.
    pub async fn wallet_entries(&self, brand_id: i64, after: i64, limit: i64) -> Result<Vec<EntryRecord>, StoreError> {
        let sql =
            format!("SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE brand_id = $1 AND id > $2 ORDER BY id LIMIT $3");
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_as(&sql).bind(brand_id).bind(after).bind(limit).fetch_all(pool).await?)
        })
    }

    /// A page of the brand's entries that `filter` keeps, newest first, and how many it
    /// keeps up to [`super::LIST_COUNT_CAP`] (one more means more than that); `now`
    /// tells pending entries from available ones.
    pub async fn brand_entries(
        &self,
        brand_id: i64,
        filter: &EntryFilter,
        now: Ts,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<EntryRecord>, i64), StoreError> {
        let status = match filter.status {
            None => "AND ($2 IS NOT NULL)",
            Some(EntryStatus::Pending) => "AND remittance_id IS NULL AND available_at > $2",
            Some(EntryStatus::Available) => "AND remittance_id IS NULL AND available_at <= $2",
            Some(EntryStatus::Paid) => "AND remittance_id IS NOT NULL AND ($2 IS NOT NULL)",
        };
        let kind = if filter.kind.is_some() { "AND type = $3" } else { "AND $3 IS NULL" };
        let month = if filter.month.is_some() {
            "AND delivered_at >= $4 AND delivered_at < $5"
        } else {
            "AND $4 IS NULL AND $5 IS NULL"
        };
        let condition = format!("brand_id = $1 {status} {kind} {month}");
        let page =
            format!("SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE {condition} ORDER BY id DESC LIMIT $6 OFFSET $7");
        let count = format!("SELECT COUNT(*) FROM (SELECT 1 FROM ledger_entries WHERE {condition} LIMIT $6) c");
        let kind = filter.kind.map(EntryType::as_str);
        let (from, until) = filter.month.map_or((None, None), |(from, until)| (Some(from), Some(until)));
        on_pool!(self, read, |pool| {
            let rows = sqlx::query_as(&page)
                .bind(brand_id)
                .bind(now)
                .bind(kind)
                .bind(from)
                .bind(until)
                .bind(limit)
                .bind(offset)
                .fetch_all(pool)
                .await?;
            let total: i64 = sqlx::query_scalar(&count)
                .bind(brand_id)
                .bind(now)
                .bind(kind)
                .bind(from)
                .bind(until)
                .bind(super::LIST_COUNT_CAP + 1)
                .fetch_one(pool)
                .await?;
            Ok((rows, total))
        })
    }

    /// The brands with entries available at `as_of` and not yet paid.
    pub async fn brands_with_available_entries(&self, as_of: Ts) -> Result<Vec<i64>, StoreError> {
        on_pool!(self, read, |pool| {
            Ok(sqlx::query_scalar(
                "SELECT DISTINCT brand_id FROM ledger_entries
                 WHERE remittance_id IS NULL AND available_at <= $1 ORDER BY brand_id",
            )
            .bind(as_of)
            .fetch_all(pool)
            .await?)
        })
    }

    /// Issues, for each brand of `brands` (its id and its billing entity as JSON), its
    /// statement of every entry available at `as_of` and not yet paid, numbered next in the
    /// brand's sequence, all in one transaction (SQLite writes each page once however many
    /// statements changed it: see `wallet::run`). `mail` may queue a statement's mail in the
    /// same transaction: given the brand and the issued statement, it answers a
    /// [`StatementRender`], which is fed the statement's lines one by one as they are read
    /// (oldest first; never all of them at once) and then finished into the mail. A brand
    /// with nothing left to pay gets no statement (and no number is taken). Answers the
    /// statements issued, in the order of `brands`.
    pub async fn issue_remittances<F, R>(
        &self,
        brands: &[(i64, String)],
        as_of: Ts,
        mut mail: F,
    ) -> Result<Vec<RemittanceRecord>, StoreError>
    where
        F: FnMut(i64, &RemittanceRecord) -> Option<R>,
        R: StatementRender<Output = StatementMail>,
    {
        let lock = STATEMENT_LOCK.of(self);
        let (totals, lines) = (TOTALS_SQL, LINES_SQL.as_str());
        let mut issued = Vec::with_capacity(brands.len());
        on_pool!(self, write, |pool| {
            // On SQLite the write pool begins `IMMEDIATE`: the write lock is held from the
            // start, so another process's run cannot slip in between.
            let mut tx = pool.begin().await?;
            for (brand_id, billing) in brands {
                let brand_id = *brand_id;
                sqlx::query(lock).bind(brand_id).execute(&mut *tx).await?;
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO remittances (brand_id, number, period_end, issued_at, billing, line_count,
                                              gross_pence, commission_pence, vat_pence, delivery_pence, amount_pence)
                     VALUES ($1, (SELECT COALESCE(MAX(number), 0) + 1 FROM remittances WHERE brand_id = $1), $2, $3,
                             $4, 0, 0, 0, 0, 0, 0)
                     RETURNING id",
                )
                .bind(brand_id)
                .bind(as_of)
                .bind(Ts::now())
                .bind(billing)
                .fetch_one(&mut *tx)
                .await?;
                let paid = sqlx::query(
                    "UPDATE ledger_entries SET remittance_id = $1
                     WHERE brand_id = $2 AND remittance_id IS NULL AND available_at <= $3",
                )
                .bind(id)
                .bind(brand_id)
                .bind(as_of)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if paid == 0 {
                    // Paid meanwhile (another node's run): no statement, its number free again.
                    sqlx::query("DELETE FROM remittances WHERE id = $1").bind(id).execute(&mut *tx).await?;
                    continue;
                }
                // The totals, and the statement as it now stands (with its brand's names).
                let record: RemittanceRecord =
                    sqlx::query_as(totals).bind(id).bind(brand_id).fetch_one(&mut *tx).await?;
                if let Some(mut render) = mail(brand_id, &record) {
                    // The lines as the database sends them, row by row.
                    let mut rows = sqlx::query_as::<_, EntryRecord>(lines).bind(id).fetch(&mut *tx);
                    while let Some(entry) = rows.try_next().await? {
                        render.line(&entry);
                    }
                    drop(rows);
                    let m = render.finish();
                    let queued = NewMail {
                        brand_id: Some(brand_id),
                        to: &m.to,
                        subject: &m.subject,
                        text: &m.text,
                        html: None,
                        attachment: Some((&m.file_name, "application/pdf", &m.pdf)),
                    };
                    enqueue_mail((&mut *tx).into(), self.sealer()?, &queued).await?;
                }
                // Every run is the marketplace's (the schedule, the operator API, the CLI).
                let audit = AuditEntry {
                    brand_id,
                    actor: AuditActor::operator(),
                    action: AuditAction::RemittanceIssued,
                    target: Some(format!("remittance:{id}")),
                    ip: None,
                };
                record_audit((&mut *tx).into(), &audit).await?;
                issued.push(record);
            }
            tx.commit().await?;
            Ok(issued)
        })
    }

    /// One page of the brand's statements, newest first, and how many it has in all.
    pub async fn remittances(
        &self,
        brand_id: i64,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<RemittanceRecord>, i64), StoreError> {
        let sql = format!(
            "SELECT {REMITTANCE_COLUMNS} FROM remittances r JOIN brands b ON b.id = r.brand_id
             WHERE r.brand_id = $1 ORDER BY r.number DESC LIMIT $2 OFFSET $3"
        );
        let snapshot = READ_SNAPSHOT.of(self);
        on_pool!(self, read, |pool| {
            // One snapshot for the page and the count: a statement issued between the two
            // reads must not give a total without its row.
            let mut tx = pool.begin().await?;
            sqlx::query(snapshot).execute(&mut *tx).await?;
            let page = sqlx::query_as(&sql).bind(brand_id).bind(limit).bind(offset).fetch_all(&mut *tx).await?;
            let total = sqlx::query_scalar("SELECT COUNT(*) FROM remittances WHERE brand_id = $1")
                .bind(brand_id)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok((page, total))
        })
    }

    /// A statement of the brand with its lines (oldest entry first), or `None`.
    pub async fn remittance(
        &self,
        brand_id: i64,
        id: i64,
    ) -> Result<Option<(RemittanceRecord, Vec<EntryRecord>)>, StoreError> {
        let (detail, lines) = (REMITTANCE_SQL.as_str(), LINES_SQL.as_str());
        on_pool!(self, read, |pool| {
            let mut conn = pool.begin().await?;
            let Some(record) = sqlx::query_as(detail).bind(id).bind(brand_id).fetch_optional(&mut *conn).await? else {
                return Ok(None);
            };
            let entries = sqlx::query_as(lines).bind(id).fetch_all(&mut *conn).await?;
            Ok(Some((record, entries)))
        })
    }

    /// A statement of the brand made by `render` from its record and its lines (fed one by
    /// one, oldest entry first, as they are read), or `None`.
    pub async fn render_remittance<F, R>(
        &self,
        brand_id: i64,
        id: i64,
        render: F,
    ) -> Result<Option<R::Output>, StoreError>
    where
        F: FnOnce(&RemittanceRecord) -> R,
        R: StatementRender,
    {
        let (detail, lines) = (REMITTANCE_SQL.as_str(), LINES_SQL.as_str());
        on_pool!(self, read, |pool| {
            // In one transaction, as `remittance` reads them (an issued statement's lines
            // never change).
            let mut conn = pool.begin().await?;
            let Some(record) = sqlx::query_as(detail).bind(id).bind(brand_id).fetch_optional(&mut *conn).await? else {
                return Ok(None);
            };
            let mut render = render(&record);
            let mut rows = sqlx::query_as::<_, EntryRecord>(lines).bind(id).fetch(&mut *conn);
            while let Some(entry) = rows.try_next().await? {
                render.line(&entry);
            }
            Ok(Some(render.finish()))
        })
    }

    /// On the scheduler's very first start (no run recorded), records the run due at
    /// `period_end` as done: a new deployment pays from its first 1st of the month on, and
    /// does not issue on start a statement for a month it was not running.
    pub async fn start_remittance_schedule(&self, period_end: Ts) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(
                "INSERT INTO remittance_runs (period_end, lease_owner, finished_at)
                 SELECT $1, 'baseline', $2 WHERE NOT EXISTS (SELECT 1 FROM remittance_runs)
                 ON CONFLICT (period_end) DO NOTHING",
            )
            .bind(period_end)
            .bind(Ts::now())
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Takes the lease of the run for `period_end` until `lease_until`, unless it is done or
    /// another node holds a live lease. Answers whether `owner` now holds it.
    pub async fn claim_remittance_run(
        &self,
        period_end: Ts,
        owner: &str,
        now: Ts,
        lease_until: Ts,
    ) -> Result<bool, StoreError> {
        const RUN_LEASE: NamedLease = NamedLease {
            table: "remittance_runs",
            key: "period_end",
            also_insert: ("", ""),
            free: "remittance_runs.finished_at IS NULL AND remittance_runs.leased_until <= $4",
        };
        self.take_lease(&RUN_LEASE, period_end, owner, now, lease_until).await
    }

    /// Marks `owner`'s run of `period_end` done.
    pub async fn finish_remittance_run(&self, period_end: Ts, owner: &str) -> Result<(), StoreError> {
        on_pool!(self, write, |pool| {
            sqlx::query(
                "UPDATE remittance_runs SET finished_at = $3, leased_until = NULL
                 WHERE period_end = $1 AND lease_owner = $2",
            )
            .bind(period_end)
            .bind(owner)
            .bind(Ts::now())
            .execute(pool)
            .await?;
            Ok(())
        })
    }
}
