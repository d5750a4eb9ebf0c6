//! `rehome copy-to-postgres`: copies a SQLite database into an empty PostgreSQL one.
//!
//! Tables are copied in foreign-key order, column by column by name, each value converted
//! to the type of its PostgreSQL column (RFC 3339 text to `TIMESTAMPTZ`, `YYYY-MM-DD` to
//! `DATE`, 0/1 to `BOOLEAN`), all in one PostgreSQL transaction: a failure leaves the target
//! as empty as it was. Ids are kept, and every identity sequence then moves past them.
//! Sealed values (event bodies, credit codes) move as bytes: they open only under the
//! SQLite server's data key, which the PostgreSQL nodes must therefore be given.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context};
use chrono::NaiveDate;
use sqlx::postgres::Postgres;
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{PgConnection, QueryBuilder, Row};

use super::{PostgresStore, SqliteStore, Ts};

/// Tables that are not data: sqlx's migration log (each backend has its own), the shared
/// rate-limit counts (PostgreSQL only, and short-lived), the brands' listing counts and the
/// storefront's facet counts (the target's triggers count the listings as they are copied),
/// and the periodic jobs' leases.
const NOT_COPIED: [&str; 5] = ["_sqlx_migrations", "rate_limit_slots", "listing_counts", "market_counts", "job_leases"];

/// Opening a store seeds the built-in manufacturer brands (rows whose `brand_id` is NULL),
/// so a fresh target holds them: they are replaced by the source's own, ids included.
const SEEDED_TABLE: &str = "manufacturer_brands";

/// Rows read and inserted per round trip (fewer for wide tables: at most 65,535 binds).
const BATCH_ROWS: usize = 500;
const MAX_BINDS: usize = 65_535;

/// How many rows of one table were copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedTable {
    pub table: String,
    pub rows: u64,
}

/// Copies every table of the SQLite `source` into the PostgreSQL `target`, whose tables
/// must hold no rows (beyond the seeded catalogue). Both stores are opened, so migrations
/// are current on both sides and clear event bodies of the source are sealed already.
/// No server may be writing to either database meanwhile.
pub async fn copy_sqlite_to_postgres(source: &SqliteStore, target: &PostgresStore) -> anyhow::Result<Vec<CopiedTable>> {
    // One read transaction: every table is read from the same snapshot.
    let mut from = source.reader().begin().await.context("cannot read the SQLite database")?;
    let mut to = target.pool().begin().await.context("cannot start a PostgreSQL transaction")?;

    let schema = target_schema(&mut to).await.context("reading the PostgreSQL schema")?;
    let source_tables = source_tables(&mut from).await.context("reading the SQLite schema")?;
    for table in source_tables.keys() {
        if !schema.columns.contains_key(table) {
            bail!("the PostgreSQL schema has no table {table}: its rows would be lost");
        }
    }
    ensure_empty(&mut to, &schema).await?;

    let mut copied = Vec::new();
    for table in &schema.order {
        let Some(source_columns) = source_tables.get(table) else {
            bail!("the SQLite database has no table {table}: is it from another version of rehome?");
        };
        let columns = matched_columns(table, source_columns, &schema.columns[table])?;
        let rows =
            copy_table(&mut from, &mut to, table, &columns).await.with_context(|| format!("copying table {table}"))?;
        copied.push(CopiedTable { table: table.clone(), rows });
    }
    for (table, column) in &schema.identities {
        sqlx::query(&format!(
            "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX({c}) FROM {t}), 0) + 1, false)",
            t = quoted(table),
            c = quoted(column),
        ))
        .bind(table)
        .bind(column)
        .execute(&mut *to)
        .await
        .with_context(|| format!("moving the identity sequence of {table}.{column}"))?;
    }
    to.commit().await.context("committing the copy")?;
    from.rollback().await.context("ending the SQLite read")?;
    Ok(copied)
}

/// A PostgreSQL column and how its values are converted.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Bool,
    Text,
    Bytes,
    Timestamp,
    Date,
}

impl Kind {
    fn of(data_type: &str) -> Option<Self> {
        Some(match data_type {
            "bigint" | "integer" | "smallint" => Self::Int,
            "boolean" => Self::Bool,
            "text" | "character varying" => Self::Text,
            "bytea" => Self::Bytes,
            "timestamp with time zone" => Self::Timestamp,
            "date" => Self::Date,
            _ => return None,
        })
    }
}

/// The target's tables in foreign-key order (parents first), their columns, and their
/// identity columns.
struct Schema {
    order: Vec<String>,
    columns: BTreeMap<String, Vec<Column>>,
    identities: Vec<(String, String)>,
}

async fn target_schema(pg: &mut PgConnection) -> anyhow::Result<Schema> {
    let rows: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text, c.is_identity::text
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
         WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
         ORDER BY c.table_name, c.ordinal_position",
    )
    .fetch_all(&mut *pg)
    .await?;
    let mut columns: BTreeMap<String, Vec<Column>> = BTreeMap::new();
    let mut identities = Vec::new();
    for (table, name, data_type, is_identity) in rows {
        // The search index of titles (migration 0050) and its shadow tables: PostgreSQL's
        // own index is built as the listings are copied.
        if NOT_COPIED.contains(&table.as_str()) || table.starts_with("listings_search") {
            continue;
        }
        let Some(kind) = Kind::of(&data_type) else {
            bail!("{table}.{name} has type {data_type}, which the copy does not convert to");
        };
        if is_identity == "YES" {
            identities.push((table.clone(), name.clone()));
        }
        columns.entry(table).or_default().push(Column { name, kind });
    }
    let edges: Vec<(String, String)> = sqlx::query_as(
        "SELECT child.relname::text, parent.relname::text
         FROM pg_constraint k
         JOIN pg_class child ON child.oid = k.conrelid
         JOIN pg_class parent ON parent.oid = k.confrelid
         WHERE k.contype = 'f' AND k.connamespace = current_schema()::regnamespace",
    )
    .fetch_all(&mut *pg)
    .await?;
    let order = parents_first(columns.keys().cloned().collect(), &edges)?;
    Ok(Schema { order, columns, identities })
}

/// Orders `tables` so that each comes after the tables its foreign keys name (`edges` are
/// `(child, parent)`); among tables free to go, by name, so the order is stable.
fn parents_first(tables: BTreeSet<String>, edges: &[(String, String)]) -> anyhow::Result<Vec<String>> {
    let mut waiting_on: BTreeMap<&str, BTreeSet<&str>> = tables.iter().map(|t| (t.as_str(), BTreeSet::new())).collect();
    for (child, parent) in edges {
        if child != parent && tables.contains(parent) {
            if let Some(parents) = waiting_on.get_mut(child.as_str()) {
                parents.insert(parent.as_str());
            }
        }
    }
    let mut order = Vec::with_capacity(tables.len());
    while !waiting_on.is_empty() {
        let Some(next) = waiting_on.iter().find(|(_, parents)| parents.is_empty()).map(|(t, _)| *t) else {
            bail!("the foreign keys of {:?} form a cycle", waiting_on.keys().collect::<Vec<_>>());
        };
        waiting_on.remove(next);
        for parents in waiting_on.values_mut() {
            parents.remove(next);
        }
        order.push(next.to_owned());
    }
    Ok(order)
}

/// The source's tables and their columns.
async fn source_tables(sqlite: &mut SqliteConnection) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )
    .fetch_all(&mut *sqlite)
    .await?;
    let mut out = BTreeMap::new();
    for table in tables {
        // The search index of titles (migration 0050) and its shadow tables: PostgreSQL's
        // own index is built as the listings are copied.
        if NOT_COPIED.contains(&table.as_str()) || table.starts_with("listings_search") {
            continue;
        }
        let columns: Vec<String> =
            sqlx::query_scalar("SELECT name FROM pragma_table_info($1)").bind(&table).fetch_all(&mut *sqlite).await?;
        out.insert(table, columns);
    }
    Ok(out)
}

/// The target columns to fill: every column of the source must have one (else its values
/// would be lost); a target column the source lacks keeps its default.
fn matched_columns(table: &str, source: &[String], target: &[Column]) -> anyhow::Result<Vec<Column>> {
    if let Some(lost) = source.iter().find(|name| !target.iter().any(|c| &c.name == *name)) {
        bail!("the PostgreSQL table {table} has no column {lost}: its values would be lost");
    }
    Ok(target.iter().filter(|c| source.contains(&c.name)).cloned().collect())
}

/// Refuses a target that holds data: the copy is for a new, empty database.
async fn ensure_empty(pg: &mut PgConnection, schema: &Schema) -> anyhow::Result<()> {
    let mut filled = Vec::new();
    for table in &schema.order {
        let only_data = if table == SEEDED_TABLE { " WHERE brand_id IS NOT NULL" } else { "" };
        let has_rows: bool = sqlx::query_scalar(&format!("SELECT EXISTS (SELECT 1 FROM {}{only_data})", quoted(table)))
            .fetch_one(&mut *pg)
            .await
            .with_context(|| format!("counting the rows of {table}"))?;
        if has_rows {
            filled.push(table.as_str());
        }
    }
    if !filled.is_empty() {
        bail!("the PostgreSQL database is not empty (rows in {}): copy into a new database", filled.join(", "));
    }
    sqlx::query(&format!("DELETE FROM {}", quoted(SEEDED_TABLE))).execute(&mut *pg).await?;
    Ok(())
}

/// One value on its way to PostgreSQL.
enum Value {
    Int(Option<i64>),
    Bool(Option<bool>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
    Timestamp(Option<Ts>),
    Date(Option<NaiveDate>),
}

/// Copies one table in batches, in rowid order; returns the number of rows.
async fn copy_table(
    from: &mut SqliteConnection,
    to: &mut PgConnection,
    table: &str,
    columns: &[Column],
) -> anyhow::Result<u64> {
    if columns.is_empty() {
        return Ok(0);
    }
    let names = columns.iter().map(|c| quoted(&c.name)).collect::<Vec<_>>().join(", ");
    let select = format!("SELECT rowid, {names} FROM {} WHERE rowid > $1 ORDER BY rowid LIMIT $2", quoted(table));
    let batch = BATCH_ROWS.min(MAX_BINDS / columns.len()).max(1);
    let mut after = i64::MIN;
    let mut copied = 0u64;
    loop {
        let rows: Vec<SqliteRow> = sqlx::query(&select).bind(after).bind(batch as i64).fetch_all(&mut *from).await?;
        let Some(last) = rows.last() else { break };
        after = last.try_get(0)?;
        let mut values = Vec::with_capacity(rows.len());
        for row in &rows {
            values.push(read_row(row, columns).with_context(|| {
                format!("reading the row of rowid {}", row.try_get::<i64, _>(0).unwrap_or_default())
            })?);
        }
        let mut insert = QueryBuilder::<Postgres>::new(format!("INSERT INTO {} ({names}) ", quoted(table)));
        insert.push_values(values, |mut tuple, row| {
            for value in row {
                match value {
                    Value::Int(v) => tuple.push_bind(v),
                    Value::Bool(v) => tuple.push_bind(v),
                    Value::Text(v) => tuple.push_bind(v),
                    Value::Bytes(v) => tuple.push_bind(v),
                    Value::Timestamp(v) => tuple.push_bind(v),
                    Value::Date(v) => tuple.push_bind(v),
                };
            }
        });
        copied += insert.build().execute(&mut *to).await?.rows_affected();
        if rows.len() < batch {
            break;
        }
    }
    Ok(copied)
}

/// The values of one SQLite row (column 0 is its rowid), converted for PostgreSQL.
fn read_row(row: &SqliteRow, columns: &[Column]) -> anyhow::Result<Vec<Value>> {
    columns
        .iter()
        .enumerate()
        .map(|(i, column)| read_value(row, i + 1, column.kind).with_context(|| format!("column {}", column.name)))
        .collect()
}

/// Decoding checks the stored value's class: text where a time or date belongs, or an
/// integer where a boolean does, converts; anything else is an error, not a guess.
fn read_value(row: &SqliteRow, at: usize, kind: Kind) -> Result<Value, sqlx::Error> {
    Ok(match kind {
        Kind::Int => Value::Int(row.try_get(at)?),
        Kind::Bool => Value::Bool(row.try_get(at)?),
        Kind::Text => Value::Text(row.try_get(at)?),
        Kind::Bytes => Value::Bytes(row.try_get(at)?),
        Kind::Timestamp => Value::Timestamp(row.try_get(at)?),
        Kind::Date => Value::Date(row.try_get(at)?),
    })
}

/// `"name"`, with any quote doubled.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tables: &[&str]) -> BTreeSet<String> {
        tables.iter().map(|t| (*t).to_owned()).collect()
    }

    fn edge(child: &str, parent: &str) -> (String, String) {
        (child.to_owned(), parent.to_owned())
    }

    #[test]
    fn parents_come_before_the_tables_that_reference_them() {
        let tables = names(&["api_keys", "brands", "orders", "users", "listings"]);
        let edges = [
            edge("users", "brands"),
            edge("api_keys", "users"),
            edge("listings", "users"),
            edge("listings", "brands"),
            edge("orders", "listings"),
            edge("orders", "brands"),
        ];
        let order = parents_first(tables, &edges).unwrap();
        assert_eq!(order, ["brands", "users", "api_keys", "listings", "orders"]);
    }

    #[test]
    fn a_self_reference_does_not_block_a_table() {
        assert_eq!(parents_first(names(&["a"]), &[edge("a", "a")]).unwrap(), ["a"]);
    }

    #[test]
    fn a_cycle_is_refused() {
        assert!(parents_first(names(&["a", "b"]), &[edge("a", "b"), edge("b", "a")]).is_err());
    }

    #[test]
    fn every_source_column_needs_a_target_column() {
        let target = [Column { name: "id".into(), kind: Kind::Int }, Column { name: "note".into(), kind: Kind::Text }];
        let kept = matched_columns("t", &["id".into()], &target).unwrap();
        assert_eq!(kept.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["id"]);
        assert!(matched_columns("t", &["id".into(), "gone".into()], &target).is_err());
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quoted("type"), "\"type\"");
        assert_eq!(quoted("a\"b"), "\"a\"\"b\"");
    }
}
