//! `rehome-bench-baseline ADDR DATABASE_URL`: the least a server on rehome's stack can do.
//! `GET /fixed` answers fixed bytes; `GET /listings/{id}` reads ten columns of one row of
//! rehome's `listings` table by id and answers them as JSON (404 if none). Pools as rehome
//! opens them: SQLite read-only, two connections per core (`BASELINE_SQLITE_READERS=N` for
//! another count), WAL; PostgreSQL 10 connections, JIT off;
//! a connection pinged before use only after 30 s idle. `BASELINE_SQLX_DEFAULTS=1` pings
//! before every use instead (sqlx's default: a round trip, or a hand-off to SQLite's
//! thread, per request).

use std::str::FromStr;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

#[derive(Clone)]
enum Pool {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

type Row = (i64, i64, String, String, String, String, String, i64, i64, Option<String>);

const COLUMNS: &str = "id, brand_id, status, channel, title, category, condition, regular_price_pence, \
                       quantity, colour FROM listings WHERE id = ";

async fn listing(State(pool): State<Pool>, Path(id): Path<i64>) -> Response {
    let row: Result<Option<Row>, sqlx::Error> = match &pool {
        Pool::Sqlite(pool) => {
            sqlx::query_as(&format!("SELECT {COLUMNS}?")).bind(id).fetch_optional(pool).await
        }
        Pool::Postgres(pool) => {
            sqlx::query_as(&format!("SELECT {}", COLUMNS.replace("quantity,", "quantity::bigint,") + "$1"))
                .bind(id)
                .fetch_optional(pool)
                .await
        }
    };
    match row {
        Ok(Some(r)) => {
            let body = serde_json::json!({
                "id": r.0, "brand_id": r.1, "status": r.2, "channel": r.3, "title": r.4, "category": r.5,
                "condition": r.6, "price_pence": r.7, "quantity": r.8, "colour": r.9,
            });
            ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
        }
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A connection idle longer than this is pinged before use, as rehome does.
const CHECK_IDLE_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

fn pool_checks<DB: sqlx::Database>(options: sqlx::pool::PoolOptions<DB>) -> sqlx::pool::PoolOptions<DB> {
    if std::env::var_os("BASELINE_SQLX_DEFAULTS").is_some() {
        return options;
    }
    options.test_before_acquire(false).before_acquire(|conn, meta| {
        Box::pin(async move {
            if meta.idle_for > CHECK_IDLE_AFTER {
                sqlx::Connection::ping(conn).await?;
            }
            Ok(true)
        })
    })
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(url)) = (args.next(), args.next()) else {
        eprintln!("usage: rehome-bench-baseline ADDR DATABASE_URL");
        std::process::exit(2);
    };
    let pool = if url.starts_with("postgres") {
        let options = PgConnectOptions::from_str(&url).expect("PostgreSQL URL").options([("jit", "off")]);
        Pool::Postgres(pool_checks(PgPoolOptions::new()).max_connections(10).connect_with(options).await.expect("connect"))
    } else {
        let options = SqliteConnectOptions::from_str(&url)
            .expect("SQLite URL")
            .journal_mode(SqliteJournalMode::Wal)
            .read_only(true);
        let readers = std::env::var("BASELINE_SQLITE_READERS").ok().and_then(|n| n.parse().ok()).unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(4, |cores| cores.get() as u32 * 2).clamp(2, 32)
        });
        Pool::Sqlite(pool_checks(SqlitePoolOptions::new()).max_connections(readers).connect_with(options).await.expect("open"))
    };
    let app = Router::new()
        .route("/fixed", get(|| async { "ok\n" }))
        .route("/listings/{id}", get(listing))
        .with_state(pool);
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    // rehome sets TCP_NODELAY on every connection (streamed answers must not wait for
    // Nagle); the baseline does the same unless BASELINE_NAGLE=1.
    if std::env::var_os("BASELINE_NAGLE").is_some() {
        axum::serve(listener, app).await.expect("serve");
    } else {
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serve");
    }
}
