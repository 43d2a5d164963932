//! The sql-adapter config file: `server:`, `telemetry:`, `database:`, `source:` and the
//! whitelisted query templates (search templates and one fetch template per entity).
//!
//! Every struct uses `deny_unknown_fields`; [`SqlAdapterConfig::validate`] compiles every
//! template for the configured engine, so a template without a permission predicate (and not
//! marked `public: true`), an undeclared parameter or a bad regex is a start-up error naming
//! the key.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use fedsearch_adapter_kit::ServerConfig;
use fedsearch_core::config::{TelemetryConfig, Validate};
pub use fedsearch_core::secret::{ConfigValue, Secret};
use serde::Deserialize;

use crate::{sql::Engine, template::Catalog};

/// The whole config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlAdapterConfig {
    pub server: ServerConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`); off when unset.
    #[serde(default)]
    pub admin: fedsearch_core::admin::AdminConfig,
    pub database: DatabaseConfig,
    pub source: SourceConfig,
    /// User attributes that hold comma-separated lists (`business_lines: retail,wholesale`);
    /// `:user.<name>` then expands to one placeholder per element. `groups` is always a list.
    #[serde(default)]
    pub list_attributes: Vec<String>,
    /// Reusable SQL snippets, `{name}` in template SQL, optionally per engine (e.g. how to read
    /// a NUMERIC column as text). Config text only; never user input.
    #[serde(default)]
    pub fragments: BTreeMap<String, EngineText>,
    pub templates: Vec<TemplateConfig>,
    /// One fetch template per entity (`full_text_ref` = `<entity>:<id>`); binds `:id`.
    #[serde(default)]
    pub fetch: Vec<TemplateConfig>,
    /// Entity linking: names in a question fill a template parameter (see [`crate::lookup`]).
    #[serde(default)]
    pub lookups: Vec<LookupConfig>,
    /// What `Describe` reads for the router: the lookups' names (see [`crate::describe`]).
    #[serde(default)]
    pub describe: fedsearch_adapter_kit::vocabulary::DescribeConfig,
    /// Bounds of templates' `follow_ups`.
    #[serde(default)]
    pub follow_up_limits: FollowUpLimits,
}

/// A read-only query listing one parameter's values and the names they go by.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookupConfig {
    pub name: String,
    /// Must return the columns `value` and `label`; config text only, run by the read-only role.
    pub sql: String,
    /// The template parameter a linked value fills.
    pub param: String,
    /// Reload the names when they are older than this.
    #[serde(default = "default_refresh", with = "fedsearch_core::config::duration")]
    pub refresh: Duration,
    /// At most this many rows are read.
    #[serde(default = "default_lookup_rows")]
    pub max_rows: usize,
    /// The most values one question links (1–16, default 8): a question naming several ("the
    /// invoices of Estate A and Estate B") gives a parameter declared `multi: true` all of them,
    /// in the order named, one bound placeholder each; a single-valued parameter gets the first.
    /// Names past the cap are dropped and the caller is told.
    #[serde(default = "default_lookup_values")]
    pub max_values: usize,
}

fn default_refresh() -> Duration {
    Duration::from_secs(300)
}
fn default_lookup_rows() -> usize {
    50_000
}
fn default_lookup_values() -> usize {
    crate::lookup::DEFAULT_MAX_VALUES
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// Name of an environment variable holding the DSN (preferred: keeps secrets out of files).
    #[serde(default)]
    pub url_env: Option<String>,
    /// A file whose first line is the DSN.
    #[serde(default)]
    pub url_file: Option<PathBuf>,
    /// The DSN: `{ env: NAME }`, `{ file: PATH }` (core's secret shape), or inline for
    /// demo-only values (e.g. a local SQLite file). Never shown in Debug output.
    #[serde(default)]
    pub url: Option<ConfigValue>,
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    #[serde(default)]
    pub min_connections: u32,
    /// How long a query waits for a pooled connection (or a new one) before UNAVAILABLE.
    #[serde(default = "default_acquire_timeout", with = "fedsearch_core::config::duration")]
    pub acquire_timeout: Duration,
    #[serde(default = "default_idle_timeout", with = "fedsearch_core::config::duration")]
    pub idle_timeout: Duration,
    /// Upper bound for one statement; the sub-query deadline lowers it further.
    #[serde(default = "default_statement_timeout", with = "fedsearch_core::config::duration")]
    pub statement_timeout: Duration,
    /// The zone the database's zone-less times are in (IANA name, e.g. `Asia/Shanghai`); time
    /// parameters are bound and zone-less values read in it. Unset: UTC.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// How the database writes timestamps: a strftime pattern for text columns (bound and read
    /// with it, in `time_zone`), or `native` for typed columns. Default `%Y-%m-%dT%H:%M:%SZ`.
    #[serde(default)]
    pub timestamp_format: Option<String>,
}

fn default_max_connections() -> u32 {
    8
}
fn default_acquire_timeout() -> Duration {
    Duration::from_secs(2)
}
fn default_idle_timeout() -> Duration {
    Duration::from_secs(300)
}
fn default_statement_timeout() -> Duration {
    Duration::from_secs(5)
}

impl DatabaseConfig {
    /// The DSN: `url_env` (when that variable is set), else `url_file`, else `url`.
    pub fn resolve_url(&self) -> Result<String, String> {
        if let Some(var) = &self.url_env
            && let Ok(v) = std::env::var(var)
            && !v.trim().is_empty()
        {
            return Ok(v.trim().to_string());
        }
        if let Some(path) = &self.url_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("`database.url_file` {} cannot be read: {e}", path.display()))?;
            return text
                .lines()
                .next()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .ok_or_else(|| format!("`database.url_file` {} is empty", path.display()));
        }
        if let Some(url) = &self.url {
            return Ok(url.resolve("database.url")?.expose().trim().to_string());
        }
        match &self.url_env {
            Some(var) => Err(format!("`database.url_env`: environment variable {var} is not set")),
            None => Err("`database` needs one of `url_env`, `url_file` or `url`".into()),
        }
    }

    /// The time zone and timestamp format ([`crate::timefmt`]).
    pub fn time_settings(&self) -> Result<crate::timefmt::TimeSettings, String> {
        crate::timefmt::TimeSettings::new(self.time_zone.as_deref(), self.timestamp_format.as_deref())
    }

    /// The engine of the resolved DSN.
    pub fn engine(&self) -> Result<Engine, String> {
        let url = self.resolve_url()?;
        Engine::from_url(&url)
            .ok_or_else(|| "`database.url` must start with postgres://, mysql://, mariadb:// or sqlite:".to_string())
    }
}

/// The logical source this adapter serves.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub when_to_use: String,
}

/// SQL text: one portable string, or per engine (`default` for the rest).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum EngineText {
    One(String),
    PerEngine(PerEngineText),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerEngineText {
    #[serde(default)]
    pub default: Option<String>,
    #[serde(default)]
    pub postgres: Option<String>,
    #[serde(default)]
    pub mysql: Option<String>,
    #[serde(default)]
    pub sqlite: Option<String>,
}

impl EngineText {
    pub fn for_engine(&self, engine: Engine) -> Option<&str> {
        match self {
            Self::One(s) => Some(s),
            Self::PerEngine(p) => match engine {
                Engine::Postgres => p.postgres.as_deref(),
                Engine::Mysql => p.mysql.as_deref(),
                Engine::Sqlite => p.sqlite.as_deref(),
            }
            .or(p.default.as_deref()),
        }
    }
}

/// One whitelisted query.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateConfig {
    /// Template name (for fetch templates: the entity name used in `full_text_ref`).
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub when_to_use: String,
    /// The SQL; `{permission}` marks where the permission predicate goes, `{fragment}` inserts a
    /// configured fragment, `:param` binds a parameter, `:user.x` binds from the user context,
    /// `:limit` binds the row limit.
    pub sql: EngineText,
    /// The permission predicate, bound from the user context, e.g.
    /// `o.business_line IN (:user.business_lines)`. Required unless `public: true`.
    #[serde(default)]
    pub permission: Option<EngineText>,
    /// Explicitly allows a template without a permission predicate.
    #[serde(default)]
    pub public: bool,
    #[serde(default)]
    pub params: BTreeMap<String, ParamSpec>,
    #[serde(default = "default_max_rows")]
    pub max_rows: u32,
    /// How a sub-query without an explicit template selects this one.
    #[serde(default, rename = "match")]
    pub matching: MatchConfig,
    /// How a row becomes a hit (or a fetched record).
    pub hit: HitConfig,
    /// The fetch entity the row ids belong to (`full_text_ref` = `<fetch>:<id>`).
    #[serde(default)]
    pub fetch: Option<String>,
    /// The parameters a `time_range` filter fills (default `from` / `to`), e.g.
    /// `{from: since, to: until}`.
    #[serde(default)]
    pub time_range: Option<TimeRangeParams>,
    /// Templates to run next with parameters taken from this template's rows (see
    /// [`crate::followup`]).
    #[serde(default)]
    pub follow_ups: Vec<FollowUpConfig>,
}

/// One follow-up: `template` runs once per row (of the first `follow_up_limits.max_fan_out`),
/// its parameters taken from the row's columns.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowUpConfig {
    pub template: String,
    /// Target parameter → column of this template's row.
    pub params: BTreeMap<String, String>,
}

/// Bounds of follow-up lookups.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowUpLimits {
    /// Steps after the first lookup (1: the first lookup's follow-ups only).
    #[serde(default = "default_depth")]
    pub max_depth: u32,
    /// Rows of one lookup that each start its follow-ups.
    #[serde(default = "default_fan_out")]
    pub max_fan_out: u32,
    /// Follow-up statements per sub-query, all steps together.
    #[serde(default = "default_follow_up_runs")]
    pub max_runs: u32,
}

impl Default for FollowUpLimits {
    fn default() -> Self {
        Self { max_depth: default_depth(), max_fan_out: default_fan_out(), max_runs: default_follow_up_runs() }
    }
}

fn default_depth() -> u32 {
    2
}
fn default_fan_out() -> u32 {
    5
}
fn default_follow_up_runs() -> u32 {
    20
}

/// Which template parameters the bounds of a `time_range` filter fill.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRangeParams {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
}

fn default_max_rows() -> u32 {
    50
}

/// Parameter types.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    String,
    Int,
    Float,
    /// `YYYY-MM-DD`, bound as that text.
    Date,
    /// RFC 3339 or `YYYY-MM-DD`, bound as ISO-8601 UTC text `YYYY-MM-DDTHH:MM:SSZ`.
    Timestamp,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    #[serde(rename = "type")]
    pub kind: ParamType,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    /// Maximum length in characters (strings).
    #[serde(default)]
    pub max_len: Option<usize>,
    /// A regex the whole value must match (strings).
    #[serde(default)]
    pub pattern: Option<String>,
    /// Used when no value is given. Timestamps also accept `now`, `now-7d`, `now-12h`.
    #[serde(default)]
    pub default: Option<String>,
    #[serde(default)]
    pub description: String,
    /// A value map (strings): words a question or caller uses → the code the column holds,
    /// e.g. `{已发货: SHIPPED, shipped: SHIPPED}` (case-insensitive). A given or captured value
    /// that is a word becomes its code; when no value is given, a word found in the question
    /// (CJK anywhere, Latin on word boundaries, the longest first) fills the parameter.
    #[serde(default)]
    pub values: BTreeMap<String, String>,
    /// A LIKE pattern built from the value (strings): `contains`, `prefix` or `suffix`. `%`, `_`
    /// and `!` in the value match literally; the placeholder must follow `LIKE` and gets
    /// ` ESCAPE '!'`.
    #[serde(default)]
    pub like: Option<LikeMode>,
    /// Several values (strings): split on whitespace and commas, each checked and bound as its
    /// own placeholder (`IN (:p)`, or one repetition each of an `{any: ...}` / `{all: ...}` block).
    #[serde(default)]
    pub multi: bool,
    /// With `multi`: when no value is given, the sub-query's terms are the values.
    #[serde(default)]
    pub from_terms: bool,
}

/// How a `like` parameter's value becomes a pattern.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LikeMode {
    Contains,
    Prefix,
    Suffix,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MatchConfig {
    /// Regexes over the query text; named groups capture into parameters. One must match
    /// (when any are listed).
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Regexes whose named groups fill parameters when they match, without being required.
    #[serde(default)]
    pub captures: Vec<String>,
    /// Words of which one must occur in the query text (case-insensitive), when any are listed.
    #[serde(default)]
    pub keywords: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HitConfig {
    /// Column holding the row id (unique within the template).
    pub id: String,
    /// A column, or a pattern with `{column}` placeholders.
    pub title: String,
    /// A column, or a pattern with `{column}` placeholders; cut to 300 characters.
    #[serde(default)]
    pub snippet: Option<String>,
    /// URL with `{column}` placeholders (values are percent-encoded).
    #[serde(default)]
    pub url: Option<String>,
    /// The column holding the hit's date (`date_column` is the same key): a native date or
    /// timestamp, a unix-seconds integer, or text in RFC 3339 or `database.timestamp_format`.
    #[serde(default, alias = "date_column")]
    pub updated_at: Option<String>,
    pub doc_type: String,
    #[serde(default)]
    pub metadata: Vec<String>,
    /// Fetch only: columns that make up `content` (default: every column).
    #[serde(default)]
    pub content: Vec<String>,
}

impl Validate for SqlAdapterConfig {
    fn validate(&self) -> Result<(), String> {
        self.server.validate()?;
        for (i, l) in self.lookups.iter().enumerate() {
            if l.sql.trim().is_empty() || l.param.trim().is_empty() {
                return Err(format!("`lookups[{i}]` needs `sql` and `param`"));
            }
            if !self.templates.iter().any(|t| t.params.contains_key(&l.param)) {
                return Err(format!("`lookups[{i}].param` `{}` is no template's parameter", l.param));
            }
            if !(1..=crate::template::MAX_TERMS).contains(&l.max_values) {
                return Err(format!("`lookups[{i}].max_values` must be 1–{}", crate::template::MAX_TERMS));
            }
        }
        let db = &self.database;
        if db.max_connections == 0 {
            return Err("`database.max_connections` must be at least 1".into());
        }
        if db.min_connections > db.max_connections {
            return Err("`database.min_connections` must not exceed `database.max_connections`".into());
        }
        if db.acquire_timeout.is_zero() {
            return Err("`database.acquire_timeout` must be positive".into());
        }
        if db.statement_timeout.is_zero() {
            return Err("`database.statement_timeout` must be positive".into());
        }
        if self.source.name.trim().is_empty() {
            return Err("`source.name` must not be empty".into());
        }
        let f = &self.follow_up_limits;
        if f.max_depth > 5 || f.max_fan_out == 0 || f.max_fan_out > 50 || f.max_runs == 0 || f.max_runs > 200 {
            return Err("`follow_up_limits`: max_depth at most 5, max_fan_out 1–50, max_runs 1–200".into());
        }
        let engine = db.engine()?;
        Catalog::compile(self, engine).map(|_| ())
    }
}

fedsearch_adapter_kit::impl_adapter_config!(SqlAdapterConfig);

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/config/sql-adapter.yaml")).unwrap()
    }

    #[test]
    fn the_example_config_compiles_for_every_engine() {
        let mut cfg: SqlAdapterConfig = fedsearch_core::config::from_yaml_str(&example()).unwrap();
        for engine in [Engine::Postgres, Engine::Mysql, Engine::Sqlite] {
            let catalog = Catalog::compile(&cfg, engine).unwrap();
            assert_eq!(catalog.templates.len(), 6, "{engine}");
            assert!(catalog.fetch.contains_key("order") && catalog.fetch.contains_key("refund"));
        }
        cfg.database.url = Some(ConfigValue::Inline(Secret::new("oracle://x")));
        cfg.database.url_env = None;
        assert!(cfg.validate().unwrap_err().contains("database.url"));
    }

    #[test]
    fn a_wrong_config_names_the_key() {
        let typo = example().replace("max_rows: 5", "max_row: 5");
        let err = fedsearch_core::config::from_yaml_str::<SqlAdapterConfig>(&typo).unwrap_err();
        assert!(err.contains("max_row"), "{err}");
        let zero = example().replace("max_connections: 8", "max_connections: 0");
        let err = fedsearch_core::config::from_yaml_str::<SqlAdapterConfig>(&zero).unwrap_err();
        assert!(err.contains("database.max_connections"), "{err}");
        for (n, ok) in [(0, false), (1, true), (16, true), (17, false)] {
            let cap = example()
                .replace("    param: customer_id\n", &format!("    param: customer_id\n    max_values: {n}\n"));
            let result = fedsearch_core::config::from_yaml_str::<SqlAdapterConfig>(&cap);
            assert_eq!(result.is_ok(), ok, "max_values {n}");
            if let Err(err) = result {
                assert!(err.contains("lookups[0].max_values"), "{err}");
            }
        }
    }

    #[test]
    fn the_dsn_never_shows_in_debug_output() {
        let cfg: SqlAdapterConfig = fedsearch_core::config::from_yaml_str(
            &example().replace("sqlite://.run/shop.sqlite?mode=ro", "postgres://fedsearch_ro:hunter2@db/shop"),
        )
        .unwrap();
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
