//! The database side: a lazily connecting pool over sqlx's `Any` driver, one statement per
//! call under a statement timeout and a row limit, and the mapping of database failures to
//! safe [`AdapterError`]s.
//!
//! Per engine: PostgreSQL runs each statement in a `READ ONLY` transaction with
//! `set_config('statement_timeout', $1, true)` (a `SET LOCAL`); MySQL/MariaDB set the session's
//! `max_execution_time` / `max_statement_time` (bound, not spliced) and use a read-only
//! transaction; SQLite is opened `mode=ro` and bounded by the deadline alone. Whatever the
//! engine, the caller's deadline drops the future, which abandons the query. Database error
//! text is never shown to callers: only the SQLSTATE/number is logged.

use std::time::Duration;

use fedsearch_adapter_kit::AdapterError;
use futures::TryStreamExt;
use sqlx::{
    Any, AnyPool, Arguments, Column, Connection, Row,
    any::{AnyArguments, AnyPoolOptions, AnyRow},
    pool::PoolConnection,
};
use tokio::sync::OnceCell;

use crate::{config::DatabaseConfig, sql::Engine, template::Value};

/// One decoded column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Blob(usize),
}

impl Cell {
    /// The value as plain text (`None` for NULL).
    pub fn as_text(&self) -> Option<String> {
        match self {
            Self::Null => None,
            Self::Text(s) => Some(s.clone()),
            Self::Int(n) => Some(n.to_string()),
            Self::Float(x) => Some(x.to_string()),
            Self::Bool(b) => Some(b.to_string()),
            Self::Blob(n) => Some(format!("<{n} bytes>")),
        }
    }
}

/// A row as (column name, value) pairs in select order.
pub type Record = Vec<(String, Cell)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MysqlFlavour {
    Mysql,
    Mariadb,
}

/// The pool and how to run one statement on this engine.
#[derive(Debug)]
pub struct Database {
    pool: AnyPool,
    engine: Engine,
    statement_timeout: Duration,
    flavour: OnceCell<MysqlFlavour>,
}

impl Database {
    /// Builds the pool without connecting: the adapter starts (and reports UNAVAILABLE) while
    /// the database is down, and connects once it is up.
    pub fn connect_lazy(config: &DatabaseConfig) -> Result<Self, String> {
        sqlx::any::install_default_drivers();
        let url = config.resolve_url()?;
        let engine = config.engine()?;
        let pool = AnyPoolOptions::new()
            .max_connections(config.max_connections)
            .min_connections(config.min_connections)
            .acquire_timeout(config.acquire_timeout)
            .idle_timeout(config.idle_timeout)
            .test_before_acquire(true)
            .connect_lazy(&url)
            .map_err(|_| "`database`: the DSN cannot be parsed".to_string())?;
        Ok(Self { pool, engine, statement_timeout: config.statement_timeout, flavour: OnceCell::new() })
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Runs one statement with `binds` and returns at most `max_rows` rows. `budget` is the
    /// time left for this sub-query; the statement timeout is the smaller of it and the
    /// configured one.
    #[tracing::instrument(name = "sql.query", skip_all, fields(otel.kind = "client", max_rows))]
    pub async fn query(
        &self,
        sql: String,
        binds: Vec<Value>,
        max_rows: usize,
        budget: Duration,
    ) -> Result<Vec<Record>, AdapterError> {
        let timeout = budget.min(self.statement_timeout).max(Duration::from_millis(1));
        let work = async {
            match self.engine {
                Engine::Postgres => {
                    let mut tx = self.pool.begin_with("BEGIN READ ONLY").await?;
                    sqlx::query("SELECT set_config('statement_timeout', $1, true)")
                        .bind(format!("{}", timeout.as_millis()))
                        .execute(&mut *tx)
                        .await?;
                    let rows = fetch(&mut tx, sql, binds, max_rows).await?;
                    tx.rollback().await?;
                    Ok(rows)
                }
                Engine::Mysql => {
                    let mut conn = self.pool.acquire().await?;
                    match self.flavour(&mut conn).await? {
                        MysqlFlavour::Mariadb => {
                            sqlx::query("SET SESSION max_statement_time = ?")
                                .bind(timeout.as_secs_f64())
                                .execute(&mut *conn)
                                .await?
                        }
                        MysqlFlavour::Mysql => {
                            sqlx::query("SET SESSION max_execution_time = ?")
                                .bind(timeout.as_millis() as i64)
                                .execute(&mut *conn)
                                .await?
                        }
                    };
                    let mut tx = conn.begin_with("START TRANSACTION READ ONLY").await?;
                    let rows = fetch(&mut tx, sql, binds, max_rows).await?;
                    tx.rollback().await?;
                    Ok(rows)
                }
                Engine::Sqlite => {
                    let mut conn = self.pool.acquire().await?;
                    fetch(&mut conn, sql, binds, max_rows).await
                }
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(map_error(&e, self.engine)),
            Err(_) => Err(AdapterError::DeadlineExceeded),
        }
    }

    async fn flavour(&self, conn: &mut PoolConnection<Any>) -> Result<MysqlFlavour, sqlx::Error> {
        if let Some(f) = self.flavour.get() {
            return Ok(*f);
        }
        let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(&mut **conn).await?;
        let f =
            if version.to_ascii_lowercase().contains("mariadb") { MysqlFlavour::Mariadb } else { MysqlFlavour::Mysql };
        let _ = self.flavour.set(f);
        Ok(f)
    }
}

async fn fetch(
    conn: &mut <Any as sqlx::Database>::Connection,
    sql: String,
    binds: Vec<Value>,
    max_rows: usize,
) -> Result<Vec<Record>, sqlx::Error> {
    let mut args = AnyArguments::default();
    for value in binds {
        let added = match value {
            Value::Null | Value::List(_) => args.add(None::<String>),
            Value::Text(s) => args.add(s),
            Value::Int(n) => args.add(n),
            Value::Float(x) => args.add(x),
        };
        added.map_err(sqlx::Error::Encode)?;
    }
    let mut rows = Vec::new();
    let mut stream = sqlx::query_with(sqlx::AssertSqlSafe(sql), args).fetch(conn);
    while let Some(row) = stream.try_next().await? {
        rows.push(decode(&row)?);
        if rows.len() >= max_rows {
            break;
        }
    }
    Ok(rows)
}

fn decode(row: &AnyRow) -> Result<Record, sqlx::Error> {
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let cell = if let Ok(v) = row.try_get::<Option<String>, _>(i) {
            v.map_or(Cell::Null, Cell::Text)
        } else if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
            v.map_or(Cell::Null, Cell::Int)
        } else if let Ok(v) = row.try_get::<Option<f64>, _>(i) {
            v.map_or(Cell::Null, Cell::Float)
        } else if let Ok(v) = row.try_get::<Option<bool>, _>(i) {
            v.map_or(Cell::Null, Cell::Bool)
        } else {
            let v = row.try_get::<Option<Vec<u8>>, _>(i)?;
            v.map_or(Cell::Null, |b| Cell::Blob(b.len()))
        };
        out.push((column.name().to_string(), cell));
    }
    Ok(out)
}

/// How a failed database call looks to the caller. Never includes database error text.
pub fn map_error(e: &sqlx::Error, engine: Engine) -> AdapterError {
    use sqlx::Error as E;
    let unavailable = || AdapterError::Unavailable("the database is unavailable".into());
    match e {
        E::Io(_) | E::Tls(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed | E::Protocol(_) => {
            tracing::warn!(engine = %engine, kind = error_kind(e), "database unavailable");
            unavailable()
        }
        E::Database(db) => {
            let code = db.code().map(|c| c.to_string()).unwrap_or_default();
            let number = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|m| m.number());
            tracing::warn!(engine = %engine, code = %code, number = ?number, "database refused the statement");
            match classify(engine, &code, number) {
                DbFailure::Timeout => AdapterError::DeadlineExceeded,
                DbFailure::ReadOnly => AdapterError::FailedPrecondition(
                    "the database refused the statement: the adapter's connection is read-only".into(),
                ),
                DbFailure::Down => unavailable(),
                DbFailure::Other => AdapterError::Internal("the query failed at the database".into()),
            }
        }
        E::ColumnDecode { .. }
        | E::ColumnNotFound(_)
        | E::Decode(_)
        | E::TypeNotFound { .. }
        | E::AnyDriverError(_) => {
            tracing::warn!(engine = %engine, kind = error_kind(e), "template result cannot be read");
            AdapterError::FailedPrecondition("the template returns a column type the adapter cannot read".into())
        }
        _ => {
            tracing::warn!(engine = %engine, kind = error_kind(e), "database call failed");
            AdapterError::Internal("the query failed at the database".into())
        }
    }
}

fn error_kind(e: &sqlx::Error) -> &'static str {
    use sqlx::Error as E;
    match e {
        E::Io(_) => "io",
        E::Tls(_) => "tls",
        E::PoolTimedOut => "pool_timed_out",
        E::PoolClosed => "pool_closed",
        E::WorkerCrashed => "worker_crashed",
        E::Protocol(_) => "protocol",
        E::Configuration(_) => "configuration",
        E::Database(_) => "database",
        E::Encode(_) => "encode",
        E::AnyDriverError(_) => "any_driver",
        _ => "other",
    }
}

#[derive(Debug, PartialEq, Eq)]
enum DbFailure {
    Timeout,
    ReadOnly,
    Down,
    Other,
}

fn classify(engine: Engine, code: &str, mysql_number: Option<u16>) -> DbFailure {
    match engine {
        Engine::Postgres => match code {
            "57014" => DbFailure::Timeout,
            "42501" | "25006" => DbFailure::ReadOnly,
            c if c.starts_with("08") || c.starts_with("28") || c.starts_with("57P") || c == "53300" => DbFailure::Down,
            _ => DbFailure::Other,
        },
        Engine::Mysql => match mysql_number {
            Some(1969 | 3024) => DbFailure::Timeout,
            Some(1142 | 1044 | 1792 | 1290 | 1227) => DbFailure::ReadOnly,
            Some(1040 | 1045 | 1053 | 2002 | 2003 | 2006 | 2013) => DbFailure::Down,
            _ => DbFailure::Other,
        },
        Engine::Sqlite => match code.parse::<i32>().map(|c| c & 0xff) {
            Ok(8) => DbFailure::ReadOnly,
            Ok(9) => DbFailure::Timeout,
            Ok(5 | 6 | 10 | 14 | 26) => DbFailure::Down,
            _ => DbFailure::Other,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_codes_classify_per_engine() {
        assert_eq!(classify(Engine::Postgres, "57014", None), DbFailure::Timeout);
        assert_eq!(classify(Engine::Postgres, "42501", None), DbFailure::ReadOnly);
        assert_eq!(classify(Engine::Postgres, "57P01", None), DbFailure::Down);
        assert_eq!(classify(Engine::Postgres, "42601", None), DbFailure::Other);
        assert_eq!(classify(Engine::Mysql, "HY000", Some(1969)), DbFailure::Timeout);
        assert_eq!(classify(Engine::Mysql, "42000", Some(1142)), DbFailure::ReadOnly);
        assert_eq!(classify(Engine::Sqlite, "8", None), DbFailure::ReadOnly);
        assert_eq!(classify(Engine::Sqlite, "1032", None), DbFailure::ReadOnly);
        assert_eq!(classify(Engine::Sqlite, "1", None), DbFailure::Other);
    }

    #[test]
    fn connection_failures_are_unavailable_and_say_nothing_of_the_host() {
        let e = sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "127.0.0.1:55432 refused"));
        let mapped = map_error(&e, Engine::Postgres);
        assert!(matches!(mapped, AdapterError::Unavailable(_)));
        assert!(!mapped.to_string().contains("127.0.0.1"));
        assert!(matches!(map_error(&sqlx::Error::PoolTimedOut, Engine::Mysql), AdapterError::Unavailable(_)));
    }

    #[test]
    fn cells_render_as_text() {
        assert_eq!(Cell::Int(42).as_text().as_deref(), Some("42"));
        assert_eq!(Cell::Null.as_text(), None);
        assert_eq!(Cell::Text("张伟".into()).as_text().as_deref(), Some("张伟"));
    }
}
