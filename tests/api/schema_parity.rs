//! The SQLite and PostgreSQL migrations build the same tables with the same columns (types
//! may differ), so `copy-to-postgres` and every store query see one schema. Runs only with
//! `REHOME_TEST_POSTGRES`.

use std::collections::{BTreeMap, BTreeSet};

use crate::helpers::{on_postgres, open_store, RawPool, TestDb};

type Schema = BTreeMap<String, BTreeSet<String>>;

/// sqlx's own bookkeeping, which differs by backend and is not ours.
const IGNORED: &str = "_sqlx_migrations";

/// Tables that exist on one backend only by design, with the reason.
const POSTGRES_ONLY: &[(&str, &str)] = &[(
    "rate_limit_slots",
    "the rate limit quotas shared by several nodes (migrations/postgres/0001_schema.sql); \
     a single SQLite node counts in memory",
)];

/// Tables (by name prefix) that exist on SQLite only by design, with the reason.
const SQLITE_ONLY: &[(&str, &str)] = &[(
    "listings_search",
    "the FTS5 trigram index of titles and SKUs and its shadow tables (migrations/sqlite/0050); \
     PostgreSQL indexes the same words with pg_trgm indexes on `listings`",
)];

async fn schema(raw: &RawPool) -> Schema {
    let rows: Vec<(String, String)> = match raw {
        RawPool::Sqlite(pool) => sqlx::query_as(
            "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(pool)
        .await
        .expect("read the SQLite schema"),
        RawPool::Postgres(pool) => sqlx::query_as(
            "SELECT table_name::text, column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema()",
        )
        .fetch_all(pool)
        .await
        .expect("read the PostgreSQL schema"),
    };
    let mut schema = Schema::new();
    for (table, column) in rows.into_iter().filter(|(table, _)| table != IGNORED) {
        schema.entry(table).or_default().insert(column);
    }
    schema
}

/// Every difference, one per line: a table or a column present on one side only.
fn differences(sqlite: &Schema, postgres: &Schema) -> Vec<String> {
    let mut found = Vec::new();
    let tables: BTreeSet<&String> = sqlite.keys().chain(postgres.keys()).collect();
    for table in tables {
        match (sqlite.get(table), postgres.get(table)) {
            (Some(_), None) if SQLITE_ONLY.iter().any(|(prefix, _)| table.starts_with(prefix)) => {}
            (Some(_), None) => found.push(format!("table {table}: only on SQLite")),
            (None, Some(_)) if POSTGRES_ONLY.iter().any(|(name, _)| name == table) => {}
            (None, Some(_)) => found.push(format!("table {table}: only on PostgreSQL")),
            (Some(left), Some(right)) => {
                for column in left.difference(right) {
                    found.push(format!("column {table}.{column}: only on SQLite"));
                }
                for column in right.difference(left) {
                    found.push(format!("column {table}.{column}: only on PostgreSQL"));
                }
            }
            (None, None) => {}
        }
    }
    found
}

#[tokio::test]
async fn sqlite_and_postgres_migrations_build_the_same_tables_and_columns() {
    if !on_postgres() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = format!("sqlite://{}", dir.path().join("parity.db").display());
    let postgres = TestDb::create(dir.path()).await;
    for url in [sqlite_url.as_str(), postgres.url.as_str()] {
        open_store(url).await.close().await;
    }
    let (sqlite_raw, postgres_raw) = (RawPool::connect(&sqlite_url).await, postgres.raw().await);
    let (sqlite, postgres_schema) = (schema(&sqlite_raw).await, schema(&postgres_raw).await);
    sqlite_raw.close().await;
    postgres_raw.close().await;

    assert!(sqlite.len() > 5 && sqlite.contains_key("listings"), "SQLite tables: {:?}", sqlite.keys());
    let found = differences(&sqlite, &postgres_schema);
    assert!(found.is_empty(), "the two schemas differ:\n  {}", found.join("\n  "));
}

#[test]
fn differences_name_each_missing_table_and_column_and_its_side() {
    let schema = |tables: &[(&str, &[&str])]| -> Schema {
        tables.iter().map(|(t, cs)| (t.to_string(), cs.iter().map(|c| c.to_string()).collect())).collect()
    };
    let sqlite = schema(&[("a", &["id", "x"]), ("only_here", &["id"])]);
    let postgres = schema(&[("a", &["id", "y"]), ("only_there", &["id"]), ("rate_limit_slots", &["bucket"])]);
    assert_eq!(
        differences(&sqlite, &postgres),
        [
            "column a.x: only on SQLite",
            "column a.y: only on PostgreSQL",
            "table only_here: only on SQLite",
            "table only_there: only on PostgreSQL",
        ]
    );
}
