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

use std::{collections::HashMap, time::Duration};

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Utc};
use fedsearch_adapter_kit::AdapterError;
use futures::TryStreamExt;
use sqlx::{
    Arguments, Column, Connection, Encode, IntoArguments, Row, Type, TypeInfo, ValueRef,
    mysql::{MySql, MySqlPool, MySqlPoolOptions, MySqlRow},
    postgres::{PgPool, PgPoolOptions, PgRow, PgTypeKind},
    sqlite::{SqlitePool, SqlitePoolOptions, SqliteRow},
};
use tokio::sync::OnceCell;

use crate::{
    config::{DatabaseConfig, ParamType},
    sql::Engine,
    template::Value,
    timefmt::TimeSettings,
};

/// One decoded column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// NUMERIC/DECIMAL as its exact decimal text, with the column's scale (`899.00`).
    Decimal(String),
    /// A date, time of day or timestamp: how it is shown, and its instant when it has one (a
    /// zone-less value read in the database's zone; a date at midnight there).
    Time {
        shown: String,
        at: Option<DateTime<Utc>>,
    },
}

impl Cell {
    /// The value as plain text (`None` for NULL).
    pub fn as_text(&self) -> Option<String> {
        match self {
            Self::Null => None,
            Self::Text(s) | Self::Decimal(s) => Some(s.clone()),
            Self::Int(n) => Some(n.to_string()),
            Self::Float(x) => Some(x.to_string()),
            Self::Bool(b) => Some(b.to_string()),
            Self::Time { shown, .. } => Some(shown.clone()),
        }
    }
}

/// A row as (column name, value) pairs in select order.
pub type Record = Vec<(String, Cell)>;

/// What a result column holds, decided from its type (and, on SQLite, its declared type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Text,
    Int,
    UInt,
    Float,
    /// NUMERIC/DECIMAL, with the declared scale when known (SQLite formats its numbers with it).
    Decimal(Option<u32>),
    Bool,
    Date,
    Time,
    /// A timestamp without zone (`TIMESTAMP`, `DATETIME`): read in the database's zone.
    WallTime,
    /// A timestamp with zone (`timestamptz`).
    Instant,
    Json,
    Uuid,
    /// BLOB, bytea, BINARY: refused, naming the column.
    Binary,
    /// A type the adapter does not read (the name is reported).
    Other,
}

impl Kind {
    pub fn readable(self) -> bool {
        !matches!(self, Kind::Binary | Kind::Other)
    }
}

/// The kind of a PostgreSQL column.
pub fn pg_kind(ty: &sqlx::postgres::PgTypeInfo) -> Kind {
    match ty.kind() {
        PgTypeKind::Enum(_) => return Kind::Text,
        PgTypeKind::Domain(base) => return pg_kind(base),
        _ => {}
    }
    match ty.name().to_ascii_uppercase().as_str() {
        "TEXT" | "VARCHAR" | "BPCHAR" | "CHAR" | "NAME" | "CITEXT" | "\"CHAR\"" | "UNKNOWN" => Kind::Text,
        "INT2" | "INT4" | "INT8" | "SMALLINT" | "INTEGER" | "BIGINT" | "OID" => Kind::Int,
        "FLOAT4" | "FLOAT8" | "REAL" | "DOUBLE PRECISION" => Kind::Float,
        "NUMERIC" | "DECIMAL" => Kind::Decimal(None),
        "BOOL" | "BOOLEAN" => Kind::Bool,
        "DATE" => Kind::Date,
        "TIME" => Kind::Time,
        "TIMESTAMP" => Kind::WallTime,
        "TIMESTAMPTZ" => Kind::Instant,
        "JSON" | "JSONB" => Kind::Json,
        "UUID" => Kind::Uuid,
        "BYTEA" => Kind::Binary,
        "VOID" => Kind::Null,
        _ => Kind::Other,
    }
}

/// The kind of a MySQL/MariaDB column. A `_bin` collation marks a text column binary in the
/// protocol's flags (MariaDB's JSON is `LONGTEXT` in `utf8mb4_bin`): only the `binary`
/// collation is binary data.
pub fn mysql_column_kind(ty: &sqlx::mysql::MySqlTypeInfo) -> Kind {
    match mysql_kind(ty.name()) {
        Kind::Binary if <String as Type<MySql>>::compatible(ty) => Kind::Text,
        kind => kind,
    }
}

/// The kind of a MySQL/MariaDB column by sqlx's type name.
pub fn mysql_kind(name: &str) -> Kind {
    match name {
        "BOOLEAN" => Kind::Bool,
        "TINYINT" | "SMALLINT" | "MEDIUMINT" | "INT" | "BIGINT" | "TINYINT UNSIGNED" | "SMALLINT UNSIGNED"
        | "MEDIUMINT UNSIGNED" | "INT UNSIGNED" | "YEAR" => Kind::Int,
        "BIGINT UNSIGNED" => Kind::UInt,
        "FLOAT" | "DOUBLE" => Kind::Float,
        "DECIMAL" => Kind::Decimal(None),
        "DATE" => Kind::Date,
        "TIME" => Kind::Time,
        "DATETIME" => Kind::WallTime,
        // stored as an instant, shown in the session's `time_zone`
        "TIMESTAMP" => Kind::Instant,
        "JSON" => Kind::Json,
        "CHAR" | "VARCHAR" | "TINYTEXT" | "TEXT" | "MEDIUMTEXT" | "LONGTEXT" | "ENUM" | "SET" => Kind::Text,
        "BINARY" | "VARBINARY" | "TINYBLOB" | "BLOB" | "MEDIUMBLOB" | "LONGBLOB" => Kind::Binary,
        "NULL" => Kind::Null,
        _ => Kind::Other,
    }
}

/// The kind a SQLite declared type gives its values (the storage class decides the rest):
/// the type names of the other engines, then SQLite's affinity rules.
pub fn sqlite_kind(declared: &str) -> Kind {
    let d = declared.trim().to_ascii_lowercase();
    let base = d.split('(').next().unwrap_or("").trim();
    let scale = d
        .split_once('(')
        .and_then(|(_, rest)| rest.trim_end_matches(')').split(',').nth(1))
        .and_then(|s| s.trim().parse::<u32>().ok());
    match base {
        "" => Kind::Other,
        "bool" | "boolean" => Kind::Bool,
        "date" => Kind::Date,
        "time" => Kind::Time,
        "datetime" | "timestamp" | "timestamp without time zone" => Kind::WallTime,
        "timestamptz" | "timestamp with time zone" => Kind::Instant,
        "json" | "jsonb" => Kind::Json,
        "uuid" => Kind::Uuid,
        "numeric" | "decimal" | "money" => Kind::Decimal(scale),
        _ if base.contains("int") => Kind::Int,
        _ if base.contains("char") || base.contains("clob") || base.contains("text") => Kind::Text,
        _ if base.contains("blob") || base == "bytea" || base.contains("binary") => Kind::Binary,
        _ if base.contains("real") || base.contains("floa") || base.contains("doub") => Kind::Float,
        _ => Kind::Decimal(None),
    }
}

/// Why a row cannot be read: the message names the field, never a value.
fn unreadable(column: &str, kind: Kind, type_name: &str) -> AdapterError {
    let what = if kind == Kind::Binary { "binary data" } else { "a type the adapter does not read" };
    AdapterError::FailedPrecondition(format!(
        "the template returns {what} ({}) in `{}`: leave it out of the SELECT{}",
        type_name.to_ascii_uppercase(),
        shown_name(column),
        if kind == Kind::Binary { "" } else { " or convert it to text there" }
    ))
}

fn shown_name(column: &str) -> String {
    column.chars().filter(|c| c.is_alphanumeric() || *c == '_').take(64).collect()
}

/// A PostgreSQL NUMERIC in its binary form as decimal text with its display scale.
pub fn pg_numeric_text(b: &[u8]) -> Option<String> {
    let word = |i: usize| b.get(i..i + 2).map(|w| u16::from_be_bytes([w[0], w[1]]));
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    let dscale = word(6)? as usize;
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => return None,
    }
    let digits: Vec<u16> = (0..ndigits).map(|k| word(8 + 2 * k)).collect::<Option<_>>()?;
    // Digit k (base 10000) has weight `weight - k`.
    let at = |w: i32| -> u16 {
        let k = weight - w;
        if k >= 0 && (k as usize) < digits.len() { digits[k as usize] } else { 0 }
    };
    let mut out = String::new();
    if weight >= 0 {
        out.push_str(&at(weight).to_string());
        for w in (0..weight).rev() {
            out.push_str(&format!("{:04}", at(w)));
        }
    } else {
        out.push('0');
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut w = -1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", at(w)));
            w -= 1;
        }
        frac.truncate(dscale);
        out.push('.');
        out.push_str(&frac);
    }
    if sign == 0x4000 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    Some(out)
}

/// A number stored in a SQLite NUMERIC/DECIMAL column, shown with the declared scale.
fn sqlite_decimal(x: f64, scale: Option<u32>) -> String {
    match scale {
        Some(s) => format!("{x:.*}", s as usize),
        None => x.to_string(),
    }
}

fn time_cell(shown: String, at: Option<DateTime<Utc>>) -> Cell {
    Cell::Time { shown, at }
}

fn wall_cell(wall: NaiveDateTime, time: &TimeSettings) -> Cell {
    time_cell(wall.format("%Y-%m-%d %H:%M:%S").to_string(), time.instant_of_wall_time(wall))
}

fn date_cell(d: NaiveDate, time: &TimeSettings) -> Cell {
    time_cell(d.format("%Y-%m-%d").to_string(), time.instant_of_date(d))
}

/// The `time_zone` a MySQL/MariaDB session runs in: the configured zone by name (the server has
/// its time zone tables), else that zone's offset when the statement started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionZone {
    Named,
    Fixed(FixedOffset),
}

/// A MySQL `TIMESTAMP` as the session shows it: its instant, shown as wall time in the zone.
fn session_cell(wall: NaiveDateTime, time: &TimeSettings, zone: SessionZone) -> Cell {
    let at = match zone {
        SessionZone::Named => time.instant_of_wall_time(wall),
        SessionZone::Fixed(offset) => offset.from_local_datetime(&wall).single().map(|t| t.with_timezone(&Utc)),
    };
    match at {
        Some(t) => time_cell(time.wall_time(t).format("%Y-%m-%d %H:%M:%S").to_string(), Some(t)),
        None => wall_cell(wall, time),
    }
}

fn decode_pg(row: &PgRow, time: &TimeSettings) -> Result<Record, ReadFailure> {
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let name = column.name();
        let kind = pg_kind(column.type_info());
        let null = row.try_get_raw(i)?.is_null();
        let cell = if null {
            Cell::Null
        } else {
            match kind {
                Kind::Null => Cell::Null,
                Kind::Text => Cell::Text(row.try_get_unchecked::<String, _>(i)?),
                Kind::Int | Kind::UInt => match column.type_info().name() {
                    "INT2" => Cell::Int(row.try_get::<i16, _>(i)?.into()),
                    "INT4" => Cell::Int(row.try_get::<i32, _>(i)?.into()),
                    "OID" => Cell::Int(row.try_get::<sqlx::postgres::types::Oid, _>(i)?.0.into()),
                    _ => Cell::Int(row.try_get::<i64, _>(i)?),
                },
                Kind::Float => match column.type_info().name() {
                    "FLOAT4" => Cell::Float(row.try_get::<f32, _>(i)?.into()),
                    _ => Cell::Float(row.try_get::<f64, _>(i)?),
                },
                Kind::Decimal(_) => {
                    let raw = row.try_get_raw(i)?;
                    let text = match raw.format() {
                        sqlx::postgres::PgValueFormat::Binary => pg_numeric_text(raw.as_bytes()?),
                        sqlx::postgres::PgValueFormat::Text => Some(raw.as_str()?.to_string()),
                    };
                    Cell::Decimal(text.ok_or(ReadFailure::Unreadable(i, Kind::Other))?)
                }
                Kind::Bool => Cell::Bool(row.try_get::<bool, _>(i)?),
                Kind::Date => date_cell(row.try_get::<NaiveDate, _>(i)?, time),
                Kind::Time => time_cell(row.try_get::<NaiveTime, _>(i)?.format("%H:%M:%S").to_string(), None),
                Kind::WallTime => wall_cell(row.try_get::<NaiveDateTime, _>(i)?, time),
                Kind::Instant => {
                    let t = row.try_get::<DateTime<Utc>, _>(i)?;
                    time_cell(time.show(t), Some(t))
                }
                Kind::Json => Cell::Text(row.try_get::<serde_json::Value, _>(i)?.to_string()),
                Kind::Uuid => Cell::Text(row.try_get::<uuid::Uuid, _>(i)?.to_string()),
                Kind::Binary | Kind::Other => return Err(ReadFailure::Unreadable(i, kind)),
            }
        };
        out.push((name.to_string(), cell));
    }
    Ok(out)
}

fn decode_mysql(row: &MySqlRow, time: &TimeSettings, zone: SessionZone) -> Result<Record, ReadFailure> {
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let kind = mysql_column_kind(column.type_info());
        let cell = if row.try_get_raw(i)?.is_null() {
            Cell::Null
        } else {
            match kind {
                Kind::Null => Cell::Null,
                Kind::Text | Kind::Json | Kind::Uuid => Cell::Text(row.try_get_unchecked::<String, _>(i)?),
                Kind::Int => match row.try_get::<i64, _>(i) {
                    Ok(n) => Cell::Int(n),
                    Err(_) => Cell::Int(
                        row.try_get_unchecked::<u32, _>(i)
                            .map(i64::from)
                            .or_else(|_| row.try_get_unchecked::<u16, _>(i).map(i64::from))?,
                    ),
                },
                Kind::UInt => {
                    let n = row.try_get::<u64, _>(i)?;
                    i64::try_from(n).map_or_else(|_| Cell::Decimal(n.to_string()), Cell::Int)
                }
                Kind::Float => match column.type_info().name() {
                    "FLOAT" => Cell::Float(row.try_get::<f32, _>(i)?.into()),
                    _ => Cell::Float(row.try_get::<f64, _>(i)?),
                },
                Kind::Decimal(_) => Cell::Decimal(row.try_get_unchecked::<String, _>(i)?),
                Kind::Bool => Cell::Bool(row.try_get::<bool, _>(i)?),
                Kind::Date => date_cell(row.try_get::<NaiveDate, _>(i)?, time),
                Kind::Time => time_cell(row.try_get::<sqlx::mysql::types::MySqlTime, _>(i)?.to_string(), None),
                Kind::WallTime => wall_cell(row.try_get_unchecked::<NaiveDateTime, _>(i)?, time),
                Kind::Instant => session_cell(row.try_get_unchecked::<NaiveDateTime, _>(i)?, time, zone),
                Kind::Binary | Kind::Other => return Err(ReadFailure::Unreadable(i, kind)),
            }
        };
        out.push((column.name().to_string(), cell));
    }
    Ok(out)
}

/// SQLite's declared column types, by (table, column), lower-cased.
pub type Declared = HashMap<(String, String), String>;

fn decode_sqlite(row: &SqliteRow, time: &TimeSettings, declared: &Declared) -> Result<Record, ReadFailure> {
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let kind = sqlite_column_kind(column, declared);
        let raw = row.try_get_raw(i)?;
        let storage = raw.type_info().name().to_string();
        let cell = match storage.as_str() {
            _ if raw.is_null() => Cell::Null,
            "NULL" => Cell::Null,
            "BLOB" => return Err(ReadFailure::Unreadable(i, Kind::Binary)),
            "INTEGER" | "BOOLEAN" | "INT4" => {
                let n = row.try_get_unchecked::<i64, _>(i)?;
                match kind {
                    Some(Kind::Bool) => Cell::Bool(n != 0),
                    Some(Kind::Decimal(scale)) => Cell::Decimal(sqlite_decimal(n as f64, scale)),
                    Some(Kind::WallTime | Kind::Instant | Kind::Date) => {
                        let at = DateTime::from_timestamp(n, 0);
                        time_cell(at.map(|t| time.show(t)).unwrap_or_else(|| n.to_string()), at)
                    }
                    _ => Cell::Int(n),
                }
            }
            "REAL" => {
                let x = row.try_get_unchecked::<f64, _>(i)?;
                match kind {
                    Some(Kind::Decimal(scale)) => Cell::Decimal(sqlite_decimal(x, scale)),
                    _ => Cell::Float(x),
                }
            }
            _ => {
                let s = row.try_get_unchecked::<String, _>(i)?;
                match kind {
                    Some(Kind::Date | Kind::WallTime | Kind::Instant) => {
                        let at = time.parse_text(&s);
                        time_cell(s, at)
                    }
                    _ => Cell::Text(s),
                }
            }
        };
        out.push((column.name().to_string(), cell));
    }
    Ok(out)
}

/// The declared kind of a SQLite result column that comes straight from a table column.
pub fn sqlite_column_kind(column: &sqlx::sqlite::SqliteColumn, declared: &Declared) -> Option<Kind> {
    let origin = column.origin();
    let t = origin.table_column()?;
    let key = (t.table.to_lowercase(), t.name.to_lowercase());
    declared.get(&key).map(|d| sqlite_kind(d))
}

/// A row that could not be read: a driver error, or a column of a kind the adapter refuses.
#[derive(Debug)]
enum ReadFailure {
    Sql(sqlx::Error),
    Unreadable(usize, Kind),
}

impl From<sqlx::error::BoxDynError> for ReadFailure {
    fn from(e: sqlx::error::BoxDynError) -> Self {
        ReadFailure::Sql(sqlx::Error::Decode(e))
    }
}

impl From<sqlx::Error> for ReadFailure {
    fn from(e: sqlx::Error) -> Self {
        ReadFailure::Sql(e)
    }
}

/// Why a statement could not be described.
#[derive(Debug)]
pub enum DescribeFailure {
    /// The database refused it (its SQLSTATE / error code).
    Refused(String),
    Other(AdapterError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MysqlFlavour {
    Mysql,
    Mariadb,
}

/// The engine's pool.
#[derive(Debug, Clone)]
pub enum Pool {
    Postgres(PgPool),
    Mysql(MySqlPool),
    Sqlite(SqlitePool),
}

/// The pool and how to run one statement on this engine.
#[derive(Debug)]
pub struct Database {
    pool: Pool,
    engine: Engine,
    statement_timeout: Duration,
    time: TimeSettings,
    flavour: OnceCell<MysqlFlavour>,
    /// MySQL/MariaDB: whether the server knows the configured zone by name.
    named_zone: OnceCell<bool>,
    declared: OnceCell<Declared>,
}

/// SQLite: every table's and view's declared column types.
const SQLITE_DECLARED: &str = "SELECT m.name AS t, p.name AS c, p.type AS ty FROM sqlite_master AS m \
     JOIN pragma_table_info(m.name) AS p WHERE m.type IN ('table', 'view')";

fn add<'a, T, A>(args: &mut A, v: T) -> Result<(), sqlx::Error>
where
    A: Arguments,
    T: Encode<'a, A::Database> + Type<A::Database>,
{
    args.add(v).map_err(sqlx::Error::Encode)
}

/// Binds every value, in placeholder order.
fn arguments<DB: sqlx::Database>(binds: Vec<Value>) -> Result<DB::Arguments, sqlx::Error>
where
    for<'a> String: Encode<'a, DB> + Type<DB>,
    for<'a> Option<String>: Encode<'a, DB> + Type<DB>,
    for<'a> Option<i64>: Encode<'a, DB> + Type<DB>,
    for<'a> Option<f64>: Encode<'a, DB> + Type<DB>,
    for<'a> Option<DateTime<Utc>>: Encode<'a, DB> + Type<DB>,
    for<'a> Option<NaiveDate>: Encode<'a, DB> + Type<DB>,
    for<'a> i64: Encode<'a, DB> + Type<DB>,
    for<'a> f64: Encode<'a, DB> + Type<DB>,
    for<'a> DateTime<Utc>: Encode<'a, DB> + Type<DB>,
    for<'a> NaiveDateTime: Encode<'a, DB> + Type<DB>,
    for<'a> NaiveDate: Encode<'a, DB> + Type<DB>,
{
    let mut args = DB::Arguments::default();
    for value in binds {
        match value {
            Value::Null | Value::List(_) | Value::NullOf(ParamType::String) => add(&mut args, None::<String>)?,
            Value::NullOf(ParamType::Int) => add(&mut args, None::<i64>)?,
            Value::NullOf(ParamType::Float) => add(&mut args, None::<f64>)?,
            Value::NullOf(ParamType::Timestamp) => add(&mut args, None::<DateTime<Utc>>)?,
            // A date and a DATETIME wall time bind the same way on MySQL (see `for_database`).
            Value::NullOf(ParamType::Date) => add(&mut args, None::<NaiveDate>)?,
            Value::Text(s) => add(&mut args, s)?,
            Value::Int(n) => add(&mut args, n)?,
            Value::Float(x) => add(&mut args, x)?,
            Value::Instant(t) => add(&mut args, t)?,
            Value::Wall(t) => add(&mut args, t)?,
            Value::Day(d) => add(&mut args, d)?,
        }
    }
    Ok(args)
}

/// Runs one statement and returns at most `max_rows` rows.
async fn rows<'c, DB, E>(
    exec: E,
    sql: String,
    args: DB::Arguments,
    max_rows: usize,
) -> Result<Vec<DB::Row>, sqlx::Error>
where
    DB: sqlx::Database,
    DB::Arguments: IntoArguments<DB>,
    E: sqlx::Executor<'c, Database = DB>,
{
    let mut out = Vec::new();
    let mut stream = sqlx::query_with(sqlx::AssertSqlSafe(sql), args).fetch(exec);
    while let Some(row) = stream.try_next().await? {
        out.push(row);
        if out.len() >= max_rows {
            break;
        }
    }
    Ok(out)
}

fn decoded<R: Row>(
    rows: &[R],
    decode: impl Fn(&R) -> Result<Record, ReadFailure>,
) -> Result<Result<Vec<Record>, AdapterError>, sqlx::Error> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        match decode(row) {
            Ok(r) => out.push(r),
            Err(ReadFailure::Sql(e)) => return Err(e),
            Err(ReadFailure::Unreadable(i, kind)) => {
                let column = &row.columns()[i];
                let type_name = column.type_info().name().to_string();
                tracing::warn!(column = %shown_name(column.name()), type_name = %type_name, "template result has a column the adapter does not read");
                return Ok(Err(unreadable(column.name(), kind, &type_name)));
            }
        }
    }
    Ok(Ok(out))
}

impl Database {
    /// Builds the pool without connecting: the adapter starts (and reports UNAVAILABLE) while
    /// the database is down, and connects once it is up.
    pub fn connect_lazy(config: &DatabaseConfig) -> Result<Self, String> {
        let url = config.resolve_url()?;
        let engine = config.engine()?;
        let time = config.time_settings()?;
        let bad = |_| "`database`: the DSN cannot be parsed".to_string();
        macro_rules! options {
            ($o:expr) => {
                $o.max_connections(config.max_connections)
                    .min_connections(config.min_connections)
                    .acquire_timeout(config.acquire_timeout)
                    .idle_timeout(config.idle_timeout)
                    .test_before_acquire(true)
            };
        }
        let pool = match engine {
            Engine::Postgres => Pool::Postgres(options!(PgPoolOptions::new()).connect_lazy(&url).map_err(bad)?),
            Engine::Mysql => Pool::Mysql(options!(MySqlPoolOptions::new()).connect_lazy(&url).map_err(bad)?),
            Engine::Sqlite => Pool::Sqlite(options!(SqlitePoolOptions::new()).connect_lazy(&url).map_err(bad)?),
        };
        Ok(Self {
            pool,
            engine,
            statement_timeout: config.statement_timeout,
            time,
            flavour: OnceCell::new(),
            named_zone: OnceCell::new(),
            declared: OnceCell::new(),
        })
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn time(&self) -> &TimeSettings {
        &self.time
    }

    /// SQLite's declared column types (loaded once; an empty map when they cannot be read).
    pub async fn sqlite_declared(&self, conn: &mut sqlx::SqliteConnection) -> &Declared {
        self.declared
            .get_or_init(|| async {
                let rows: Result<Vec<(String, String, String)>, _> =
                    sqlx::query_as(SQLITE_DECLARED).fetch_all(&mut *conn).await;
                match rows {
                    Ok(rows) => rows.into_iter().map(|(t, c, ty)| ((t.to_lowercase(), c.to_lowercase()), ty)).collect(),
                    Err(e) => {
                        tracing::warn!(kind = error_kind(&e), "sqlite declared column types cannot be read");
                        Declared::new()
                    }
                }
            })
            .await
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
        let time = &self.time;
        let work = async {
            match &self.pool {
                Pool::Postgres(pool) => {
                    let mut tx = pool.begin_with("BEGIN READ ONLY").await?;
                    sqlx::query("SELECT set_config('statement_timeout', $1, true), set_config('TimeZone', $2, true)")
                        .bind(format!("{}", timeout.as_millis()))
                        .bind(time.tz().name())
                        .execute(&mut *tx)
                        .await?;
                    let found =
                        rows::<sqlx::Postgres, _>(&mut *tx, sql, arguments::<sqlx::Postgres>(binds)?, max_rows).await?;
                    tx.rollback().await?;
                    decoded(&found, |r| decode_pg(r, time))
                }
                Pool::Mysql(pool) => {
                    let mut conn = pool.acquire().await?;
                    let zone = self.mysql_session(&mut conn, timeout).await?;
                    let mut tx = conn.begin_with("START TRANSACTION READ ONLY").await?;
                    let found = rows::<MySql, _>(&mut *tx, sql, arguments::<MySql>(binds)?, max_rows).await?;
                    tx.rollback().await?;
                    decoded(&found, |r| decode_mysql(r, time, zone))
                }
                Pool::Sqlite(pool) => {
                    let mut conn = pool.acquire().await?;
                    let declared = self.sqlite_declared(&mut conn).await;
                    let found =
                        rows::<sqlx::Sqlite, _>(&mut *conn, sql, arguments::<sqlx::Sqlite>(binds)?, max_rows).await?;
                    decoded(&found, |r| decode_sqlite(r, time, declared))
                }
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok(Ok(rows))) => Ok(rows),
            Ok(Ok(Err(unreadable))) => Err(unreadable),
            Ok(Err(e)) => Err(map_error(&e, self.engine)),
            Err(_) => Err(AdapterError::DeadlineExceeded),
        }
    }

    /// The result columns of a statement as the database describes it (without running it):
    /// (name, kind, type name). On SQLite the kind comes from the declared type of the column it
    /// is read from (`None` for an expression: its values decide).
    /// `binds` give PostgreSQL the parameters' types (as they would be bound).
    pub async fn describe_columns(
        &self,
        sql: &str,
        binds: &[Value],
        budget: Duration,
    ) -> Result<Vec<(String, Option<Kind>, String)>, DescribeFailure> {
        use sqlx::SqlSafeStr;
        use sqlx::{Executor, Statement, postgres::PgTypeInfo};
        let sql = sqlx::AssertSqlSafe(sql.to_string()).into_sql_str();
        let work = async {
            Ok::<_, sqlx::Error>(match &self.pool {
                Pool::Postgres(pool) => {
                    let types: Vec<PgTypeInfo> = binds
                        .iter()
                        .map(|v| match v {
                            Value::Int(_) | Value::NullOf(ParamType::Int) => <i64 as Type<sqlx::Postgres>>::type_info(),
                            Value::Float(_) | Value::NullOf(ParamType::Float) => {
                                <f64 as Type<sqlx::Postgres>>::type_info()
                            }
                            Value::Instant(_) | Value::NullOf(ParamType::Timestamp) => {
                                <DateTime<Utc> as Type<sqlx::Postgres>>::type_info()
                            }
                            Value::Wall(_) => <NaiveDateTime as Type<sqlx::Postgres>>::type_info(),
                            Value::Day(_) | Value::NullOf(ParamType::Date) => {
                                <NaiveDate as Type<sqlx::Postgres>>::type_info()
                            }
                            _ => <String as Type<sqlx::Postgres>>::type_info(),
                        })
                        .collect();
                    let mut conn = pool.acquire().await?;
                    let st = (&mut *conn).prepare_with(sql, &types).await?;
                    st.columns()
                        .iter()
                        .map(|c| (c.name().to_string(), Some(pg_kind(c.type_info())), c.type_info().name().to_string()))
                        .collect()
                }
                Pool::Mysql(pool) => {
                    let mut conn = pool.acquire().await?;
                    let d = (&mut *conn).describe(sql).await?;
                    d.columns()
                        .iter()
                        .map(|c| {
                            (
                                c.name().to_string(),
                                Some(mysql_column_kind(c.type_info())),
                                c.type_info().name().to_string(),
                            )
                        })
                        .collect()
                }
                Pool::Sqlite(pool) => {
                    let mut conn = pool.acquire().await?;
                    let declared = self.sqlite_declared(&mut conn).await.clone();
                    let d = (&mut *conn).describe(sql).await?;
                    d.columns()
                        .iter()
                        .map(|c| {
                            let kind = sqlite_column_kind(c, &declared);
                            let origin = c.origin();
                            let ty = origin
                                .table_column()
                                .and_then(|t| declared.get(&(t.table.to_lowercase(), t.name.to_lowercase())).cloned())
                                .unwrap_or_else(|| "expression".into());
                            (c.name().to_string(), kind, ty)
                        })
                        .collect()
                }
            })
        };
        match tokio::time::timeout(budget, work).await {
            Ok(Ok(columns)) => Ok(columns),
            Ok(Err(sqlx::Error::Database(db))) => {
                Err(DescribeFailure::Refused(db.code().map(|c| c.to_string()).unwrap_or_default()))
            }
            Ok(Err(e)) => Err(DescribeFailure::Other(map_error(&e, self.engine))),
            Err(_) => Err(DescribeFailure::Other(AdapterError::DeadlineExceeded)),
        }
    }

    /// Sets the statement timeout and the session `time_zone`: the zone's name when the server
    /// knows it (asked once; MySQL's time zone tables), so `TIMESTAMP` columns, `NOW()`,
    /// `FROM_UNIXTIME` and bound wall times convert with the zone's own DST rules; else the
    /// zone's offset now (then `TIMESTAMP` values are still read exactly, but a bound wall time
    /// compared with a `TIMESTAMP` column across a DST change is an hour off — `doctor` says so).
    async fn mysql_session(
        &self,
        conn: &mut sqlx::MySqlConnection,
        timeout: Duration,
    ) -> Result<SessionZone, sqlx::Error> {
        let flavour = self.flavour(&mut *conn).await?;
        if self.named_zone.get() != Some(&false) {
            match set_mysql_session(&mut *conn, flavour, timeout, self.time.tz().name()).await {
                Ok(()) => {
                    let _ = self.named_zone.set(true);
                    return Ok(SessionZone::Named);
                }
                Err(e) if mysql_error_number(&e) == Some(UNKNOWN_TIME_ZONE) => {
                    tracing::info!(
                        zone = self.time.tz().name(),
                        "the server has no time zone tables: a fixed offset is used"
                    );
                    let _ = self.named_zone.set(false);
                }
                Err(e) => return Err(e),
            }
        }
        let now = Utc::now();
        let offset = self.time.tz().offset_from_utc_datetime(&now.naive_utc()).fix();
        set_mysql_session(&mut *conn, flavour, timeout, &self.time.offset_at(now)).await?;
        Ok(SessionZone::Fixed(offset))
    }

    /// MySQL/MariaDB: `Some(false)` when the server does not know the configured zone by name
    /// (no time zone tables), `None` for other engines.
    pub async fn mysql_knows_zone(&self, timeout: Duration) -> Result<Option<bool>, AdapterError> {
        let Pool::Mysql(pool) = &self.pool else { return Ok(None) };
        let mut conn = pool.acquire().await.map_err(|e| map_error(&e, self.engine))?;
        let zone = self.mysql_session(&mut conn, timeout).await.map_err(|e| map_error(&e, self.engine))?;
        Ok(Some(zone == SessionZone::Named))
    }

    async fn flavour(&self, conn: &mut sqlx::MySqlConnection) -> Result<MysqlFlavour, sqlx::Error> {
        if let Some(f) = self.flavour.get() {
            return Ok(*f);
        }
        let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(&mut *conn).await?;
        let f =
            if version.to_ascii_lowercase().contains("mariadb") { MysqlFlavour::Mariadb } else { MysqlFlavour::Mysql };
        let _ = self.flavour.set(f);
        Ok(f)
    }
}

/// MySQL/MariaDB `ER_UNKNOWN_TIME_ZONE`.
const UNKNOWN_TIME_ZONE: u16 = 1298;

fn mysql_error_number(e: &sqlx::Error) -> Option<u16> {
    match e {
        sqlx::Error::Database(db) => db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|m| m.number()),
        _ => None,
    }
}

async fn set_mysql_session(
    conn: &mut sqlx::MySqlConnection,
    flavour: MysqlFlavour,
    timeout: Duration,
    zone: &str,
) -> Result<(), sqlx::Error> {
    match flavour {
        MysqlFlavour::Mariadb => {
            sqlx::query("SET SESSION max_statement_time = ?, time_zone = ?")
                .bind(timeout.as_secs_f64())
                .bind(zone)
                .execute(conn)
                .await?
        }
        MysqlFlavour::Mysql => {
            sqlx::query("SET SESSION max_execution_time = ?, time_zone = ?")
                .bind(timeout.as_millis() as i64)
                .bind(zone)
                .execute(conn)
                .await?
        }
    };
    Ok(())
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
    fn postgres_numeric_binary_reads_as_exact_text() {
        // 899.00: ndigits 1, weight 0, +, dscale 2, [899]
        let b = |w: &[u16]| w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
        assert_eq!(pg_numeric_text(&b(&[1, 0, 0, 2, 899])).as_deref(), Some("899.00"));
        // -12345.678: [1, 2345, 6780], weight 1, dscale 3
        assert_eq!(pg_numeric_text(&b(&[3, 1, 0x4000, 3, 1, 2345, 6780])).as_deref(), Some("-12345.678"));
        // 0.05: [500], weight -1, dscale 2
        assert_eq!(pg_numeric_text(&b(&[1, 0xFFFF, 0, 2, 500])).as_deref(), Some("0.05"));
        // 10000: [1], weight 1, dscale 0
        assert_eq!(pg_numeric_text(&b(&[1, 1, 0, 0, 1])).as_deref(), Some("10000"));
        assert_eq!(pg_numeric_text(&b(&[0, 0, 0, 2])).as_deref(), Some("0.00"));
        assert_eq!(pg_numeric_text(&b(&[0, 0, 0xC000, 0])).as_deref(), Some("NaN"));
        assert_eq!(pg_numeric_text(&[0, 1]), None);
    }

    #[test]
    fn sqlite_declared_types_give_kinds() {
        assert_eq!(sqlite_kind("NUMERIC(12, 2)"), Kind::Decimal(Some(2)));
        assert_eq!(sqlite_kind("decimal(10,3)"), Kind::Decimal(Some(3)));
        assert_eq!(sqlite_kind("VARCHAR(20)"), Kind::Text);
        assert_eq!(sqlite_kind("BIGINT"), Kind::Int);
        assert_eq!(sqlite_kind("BOOLEAN"), Kind::Bool);
        assert_eq!(sqlite_kind("TIMESTAMP"), Kind::WallTime);
        assert_eq!(sqlite_kind("DATE"), Kind::Date);
        assert_eq!(sqlite_kind("JSON"), Kind::Json);
        assert_eq!(sqlite_kind("BLOB"), Kind::Binary);
        assert_eq!(sqlite_kind("DOUBLE PRECISION"), Kind::Float);
        assert_eq!(sqlite_decimal(899.0, Some(2)), "899.00");
        assert_eq!(sqlite_decimal(308.5, Some(2)), "308.50");
        assert_eq!(mysql_kind("DECIMAL"), Kind::Decimal(None));
        assert_eq!(mysql_kind("LONGBLOB"), Kind::Binary);
    }

    #[test]
    fn a_refused_column_is_named_without_its_value() {
        let e = unreadable("photo", Kind::Binary, "bytea");
        assert!(
            matches!(&e, AdapterError::FailedPrecondition(m) if m.contains("`photo`") && m.contains("BYTEA")),
            "{e}"
        );
    }

    #[test]
    fn cells_render_as_text() {
        assert_eq!(Cell::Int(42).as_text().as_deref(), Some("42"));
        assert_eq!(Cell::Null.as_text(), None);
        assert_eq!(Cell::Text("张伟".into()).as_text().as_deref(), Some("张伟"));
    }
}
