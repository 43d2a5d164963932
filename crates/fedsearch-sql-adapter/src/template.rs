//! Compiled query templates: the whitelist of SQL the adapter may run, their parameter
//! schemas, and how a request's values (parameters, user context, row limit) are checked and
//! bound.
//!
//! Compilation happens once at start-up ([`Catalog::compile`]); a template without a
//! permission predicate is refused unless it is marked `public: true`.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use fedsearch_adapter_kit::{AdapterError, UserContext};
use regex::Regex;

use crate::{
    config::{
        EngineText, FollowUpConfig, FollowUpLimits, HitConfig, LikeMode, ParamSpec, ParamType, SqlAdapterConfig,
        TemplateConfig,
    },
    sql::{self, Engine, ParsedSql},
    timefmt::TimeSettings,
};

/// The longest value any parameter may carry, whatever its schema says.
pub const MAX_VALUE_CHARS: usize = 1024;
/// The built-in parameter bound to the row limit.
pub const LIMIT_PARAM: &str = "limit";
/// The built-in parameter of fetch templates, bound to the id part of the reference.
pub const ID_PARAM: &str = "id";

/// A bound value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    /// A time parameter's instant; bound per `database.timestamp_format` ([`crate::timefmt`]):
    /// as text, or (native) a `timestamptz` on PostgreSQL.
    Instant(DateTime<Utc>),
    /// A wall time in the database's zone (native binding on MySQL/MariaDB).
    Wall(chrono::NaiveDateTime),
    /// A date parameter; bound as `YYYY-MM-DD` text, or a typed `DATE` with native binding.
    Day(NaiveDate),
    /// A NULL of a typed parameter (an absent int, float, date or timestamp), so PostgreSQL
    /// compares it with the column's type and not as text.
    NullOf(ParamType),
    /// Expanded to one placeholder per element (one NULL placeholder when empty, which
    /// matches nothing in `IN (...)`).
    List(Vec<String>),
}

/// One declared parameter.
#[derive(Debug, Clone)]
pub struct Param {
    pub spec: ParamSpec,
    pattern: Option<Regex>,
    /// The value map: (lower-cased word, code), longest words first.
    pub words: Vec<(String, String)>,
}

/// The longest list a `multi` parameter takes.
pub const MAX_TERMS: usize = 16;

/// A LIKE pattern matching `term` literally (`!` escapes `%`, `_` and itself; bound with
/// `ESCAPE '!'`, which reads the same on every engine).
pub fn like_pattern(term: &str, mode: LikeMode) -> String {
    let mut escaped = String::with_capacity(term.len() + 2);
    for c in term.chars() {
        if matches!(c, '!' | '%' | '_') {
            escaped.push('!');
        }
        escaped.push(c);
    }
    match mode {
        LikeMode::Contains => format!("%{escaped}%"),
        LikeMode::Prefix => format!("{escaped}%"),
        LikeMode::Suffix => format!("%{escaped}"),
    }
}

/// A compiled template.
#[derive(Debug, Clone)]
pub struct Template {
    pub name: String,
    pub description: String,
    pub when_to_use: String,
    pub public: bool,
    pub params: BTreeMap<String, Param>,
    pub sql: ParsedSql,
    pub max_rows: u32,
    pub patterns: Vec<Regex>,
    pub captures: Vec<Regex>,
    /// Lower-cased.
    pub keywords: Vec<String>,
    pub hit: HitConfig,
    pub fetch: Option<String>,
    /// The parameters a `time_range` filter fills: (from, to).
    pub time_range: (String, String),
    /// Templates to run next with values from this template's rows.
    pub follow_ups: Vec<FollowUpConfig>,
}

/// Every compiled template for one engine.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub engine: Engine,
    pub templates: Vec<Template>,
    pub fetch: BTreeMap<String, Template>,
    pub list_attributes: HashSet<String>,
    /// The database's time zone and timestamp format.
    pub time: TimeSettings,
    pub follow_up_limits: FollowUpLimits,
}

fn ident_ok(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Replaces `{name}` markers with the given snippets (config text only).
fn splice(sql: &str, snippets: &BTreeMap<&str, String>) -> String {
    let mut out = sql.to_string();
    for (name, text) in snippets {
        out = out.replace(&format!("{{{name}}}"), text);
    }
    out
}

impl Catalog {
    /// Compiles every template of `config` for `engine`; the error names the bad key.
    pub fn compile(config: &SqlAdapterConfig, engine: Engine) -> Result<Self, String> {
        let mut fragments = BTreeMap::new();
        for (name, text) in &config.fragments {
            if name == "permission" || !ident_ok(name) {
                return Err(format!("`fragments.{name}`: name must be an identifier other than `permission`"));
            }
            let text = text.for_engine(engine).ok_or_else(|| format!("`fragments.{name}` has no text for {engine}"))?;
            fragments.insert(name.as_str(), text.to_string());
        }
        let list_attributes: HashSet<String> = config.list_attributes.iter().cloned().collect();
        if config.templates.is_empty() {
            return Err("`templates` must list at least one template".into());
        }
        let mut templates = Vec::new();
        let mut seen = HashSet::new();
        for (i, t) in config.templates.iter().enumerate() {
            let key = format!("templates.{i}");
            if !seen.insert(t.name.clone()) {
                return Err(format!("`{key}.name`: duplicate template name `{}`", t.name));
            }
            templates.push(Template::compile(t, engine, &fragments, &key, false)?);
        }
        let mut fetch = BTreeMap::new();
        for (i, t) in config.fetch.iter().enumerate() {
            let key = format!("fetch.{i}");
            let compiled = Template::compile(t, engine, &fragments, &key, true)?;
            if fetch.insert(t.name.clone(), compiled).is_some() {
                return Err(format!("`{key}.name`: duplicate fetch entity `{}`", t.name));
            }
        }
        for (i, t) in templates.iter().enumerate() {
            for (j, f) in t.follow_ups.iter().enumerate() {
                let key = format!("templates.{i}.follow_ups.{j}");
                let target = templates
                    .iter()
                    .find(|x| x.name == f.template)
                    .ok_or_else(|| format!("`{key}.template`: no template `{}`", f.template))?;
                for p in f.params.keys() {
                    if !target.params.contains_key(p) {
                        return Err(format!("`{key}.params`: `{p}` is not a parameter of `{}`", target.name));
                    }
                }
                if f.params.is_empty() {
                    return Err(format!("`{key}.params` must take at least one parameter from the row"));
                }
            }
        }
        for (i, t) in templates.iter().enumerate() {
            if let Some(entity) = &t.fetch
                && !fetch.contains_key(entity)
            {
                return Err(format!("`templates.{i}.fetch`: no fetch template for entity `{entity}`"));
            }
        }
        let time = config.database.time_settings()?;
        Ok(Self { engine, templates, fetch, list_attributes, time, follow_up_limits: config.follow_up_limits.clone() })
    }

    pub fn template(&self, name: &str) -> Option<&Template> {
        self.templates.iter().find(|t| t.name == name)
    }
}

impl Template {
    fn compile(
        t: &TemplateConfig,
        engine: Engine,
        fragments: &BTreeMap<&str, String>,
        key: &str,
        is_fetch: bool,
    ) -> Result<Self, String> {
        if !ident_ok(&t.name) {
            return Err(format!("`{key}.name` must be an identifier ([A-Za-z_][A-Za-z0-9_-]*)"));
        }
        let raw = t.sql.for_engine(engine).ok_or_else(|| format!("`{key}.sql` has no SQL for {engine}"))?;
        let mut snippets = fragments.clone();
        let permission = match (&t.permission, t.public) {
            (None, false) => {
                return Err(format!(
                    "`{key}.permission`: template `{}` has no permission predicate; add one bound from the user (e.g. `business_line IN (:user.business_lines)`) or mark it `public: true`",
                    t.name
                ));
            }
            (None, true) => None,
            (Some(p), _) => Some(text_for(p, engine, &format!("{key}.permission"))?),
        };
        if let Some(p) = &permission {
            let parsed = sql::parse(&splice(p, fragments)).map_err(|e| format!("`{key}.permission`: {e}"))?;
            if !parsed.params().any(|n| n.starts_with("user.")) {
                return Err(format!("`{key}.permission` must bind at least one `:user.` value"));
            }
            if raw.matches("{permission}").count() != 1 {
                return Err(format!("`{key}.sql` must contain `{{permission}}` exactly once"));
            }
            snippets.insert("permission", format!("({})", splice(p, fragments)));
        } else if raw.contains("{permission}") {
            return Err(format!("`{key}.sql` uses `{{permission}}` but the template has no permission predicate"));
        }
        let sql = sql::parse(&splice(raw, &snippets)).map_err(|e| format!("`{key}.sql`: {e}"))?;
        let mut params = BTreeMap::new();
        for (name, spec) in &t.params {
            if !ident_ok(name) || name == LIMIT_PARAM || (is_fetch && name == ID_PARAM) {
                return Err(format!("`{key}.params.{name}`: not a usable parameter name"));
            }
            let pattern = spec
                .pattern
                .as_deref()
                .map(|p| Regex::new(&format!("^(?:{p})$")))
                .transpose()
                .map_err(|e| format!("`{key}.params.{name}.pattern`: {e}"))?;
            if (spec.like.is_some() || spec.multi || !spec.values.is_empty() || spec.from_terms)
                && spec.kind != ParamType::String
            {
                return Err(format!(
                    "`{key}.params.{name}`: `like`, `multi`, `from_terms` and `values` need `type: string`"
                ));
            }
            if spec.from_terms && !spec.multi {
                return Err(format!("`{key}.params.{name}.from_terms` needs `multi: true`"));
            }
            let mut words: Vec<(String, String)> =
                spec.values.iter().map(|(w, code)| (w.trim().to_lowercase(), code.clone())).collect();
            words.sort_by(|a, b| b.0.chars().count().cmp(&a.0.chars().count()).then_with(|| a.cmp(b)));
            if words.iter().any(|(w, _)| w.is_empty()) {
                return Err(format!("`{key}.params.{name}.values`: a word must not be empty"));
            }
            let param = Param { spec: spec.clone(), pattern, words };
            if let Some(d) = &spec.default {
                param.parse(name, d).map_err(|e| format!("`{key}.params.{name}.default`: {e}"))?;
            }
            params.insert(name.clone(), param);
        }
        for name in sql.params() {
            let known = name.starts_with("user.")
                || name == LIMIT_PARAM
                || (is_fetch && name == ID_PARAM)
                || params.contains_key(name);
            if !known {
                return Err(format!("`{key}.sql` uses `:{name}`, which `{key}.params` does not declare"));
            }
        }
        check_placement(&sql.segments, &params, key)?;
        if is_fetch && !sql.params().any(|n| n == ID_PARAM) {
            return Err(format!("`{key}.sql`: a fetch template must bind `:id`"));
        }
        let patterns = compile_regexes(&t.matching.patterns, &params, &format!("{key}.match.patterns"))?;
        let captures = compile_regexes(&t.matching.captures, &params, &format!("{key}.match.captures"))?;
        if t.max_rows == 0 {
            return Err(format!("`{key}.max_rows` must be at least 1"));
        }
        let time_range = match &t.time_range {
            None => ("from".to_string(), "to".to_string()),
            Some(r) => {
                for (bound, name) in [("from", &r.from), ("to", &r.to)] {
                    let Some(name) = name else { continue };
                    match params.get(name).map(|p| p.spec.kind) {
                        Some(ParamType::Date | ParamType::Timestamp) => {}
                        _ => {
                            return Err(format!(
                                "`{key}.time_range.{bound}`: `{name}` is not a date or timestamp parameter of the template"
                            ));
                        }
                    }
                }
                (r.from.clone().unwrap_or_default(), r.to.clone().unwrap_or_default())
            }
        };
        Ok(Self {
            name: t.name.clone(),
            description: t.description.clone(),
            when_to_use: t.when_to_use.clone(),
            public: t.public,
            params,
            sql,
            max_rows: t.max_rows,
            patterns,
            captures,
            keywords: t.matching.keywords.iter().map(|k| k.to_lowercase()).collect(),
            hit: t.hit.clone(),
            fetch: t.fetch.clone(),
            time_range,
            follow_ups: t.follow_ups.clone(),
        })
    }

    /// Renders the SQL for the catalog's engine and binds every value, in placeholder order.
    pub fn bind(
        &self,
        catalog: &Catalog,
        values: &BTreeMap<String, Value>,
        user: &UserContext,
    ) -> Result<(String, Vec<Value>), AdapterError> {
        let mut resolved: BTreeMap<&str, Value> = BTreeMap::new();
        for name in self.sql.params() {
            if resolved.contains_key(name) {
                continue;
            }
            let value = match name.strip_prefix("user.") {
                Some(attr) => user_value(attr, user, &catalog.list_attributes),
                None => values.get(name).cloned().unwrap_or_else(|| match self.params.get(name) {
                    Some(p) if p.spec.kind != ParamType::String => Value::NullOf(p.spec.kind),
                    _ => Value::Null,
                }),
            };
            resolved.insert(name, value);
        }
        let len = |n: &str| match resolved.get(n) {
            Some(Value::List(items)) => Some(items.len()),
            _ => None,
        };
        let (sql, order) = self.sql.render_bound(
            catalog.engine,
            |n| len(n).unwrap_or(1),
            // A block repeats once per element of the list it binds (0 when absent or empty).
            |inner| {
                inner
                    .iter()
                    .filter_map(|s| match s {
                        sql::Segment::Param(p) => len(p),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0)
            },
            |n, before| {
                if sql::follows_like(before) && self.params.get(n).is_some_and(|p| p.spec.like.is_some()) {
                    " ESCAPE '!'"
                } else {
                    ""
                }
            },
        );
        let mut binds = Vec::with_capacity(order.len());
        for (name, k) in &order {
            match resolved.get(name.as_str()) {
                Some(Value::List(items)) => binds.push(items.get(*k).cloned().map_or(Value::Null, Value::Text)),
                Some(v) => binds.push(for_database(v, catalog)),
                None => binds.push(Value::Null),
            }
        }
        Ok((sql, binds))
    }
}

/// A `like` parameter must follow `LIKE` somewhere (there it gets ` ESCAPE '!'`; `:p IS NULL`
/// elsewhere is fine), and a `multi` LIKE pattern only inside an `{any:}` / `{all:}` block,
/// which binds exactly one `multi` parameter. Outside a block a `multi` parameter sits right
/// after `IN (`: it is one placeholder per value, which only a list reads as several values
/// (`= :p` or `:p IS NULL` would be a syntax error once a question names two).
fn check_placement(segments: &[sql::Segment], params: &BTreeMap<String, Param>, key: &str) -> Result<(), String> {
    let is = |p: &str, f: fn(&ParamSpec) -> bool| params.get(p).is_some_and(|x| f(&x.spec));
    let mut after_like: HashSet<&str> = HashSet::new();
    let mut before = "";
    for s in segments {
        match s {
            sql::Segment::Text(t) => before = t,
            sql::Segment::Param(p) => {
                if sql::follows_like(before) {
                    if is(p, |s| s.like.is_some() && s.multi) {
                        return Err(format!(
                            "`{key}.sql`: `:{p}` has several terms; write its LIKE inside `{{any: ...}}` or `{{all: ...}}`"
                        ));
                    }
                    after_like.insert(p);
                } else if is(p, |s| s.multi) && !sql::follows_in(before) {
                    return Err(format!(
                        "`{key}.sql`: `:{p}` takes several values (`multi`); write `IN (:{p})` or use it inside `{{any: ...}}` / `{{all: ...}}`"
                    ));
                }
                before = "";
            }
            sql::Segment::Repeat { inner, .. } => {
                let lists = inner.iter().filter(|s| matches!(s, sql::Segment::Param(p) if is(p, |s| s.multi))).count();
                if lists != 1 {
                    return Err(format!(
                        "`{key}.sql`: an `{{any:}}` / `{{all:}}` block binds exactly one `multi` parameter"
                    ));
                }
                let mut b = "";
                for s in inner {
                    match s {
                        sql::Segment::Text(t) => b = t,
                        sql::Segment::Param(p) => {
                            if sql::follows_like(b) {
                                after_like.insert(p);
                            }
                            b = "";
                        }
                        sql::Segment::Repeat { .. } => {}
                    }
                }
                before = "";
            }
        }
    }
    for (name, p) in params {
        if p.spec.like.is_some() && !after_like.contains(name.as_str()) {
            return Err(format!("`{key}.sql`: `:{name}` is a LIKE pattern (`like`) and must follow `LIKE`"));
        }
    }
    Ok(())
}

/// A time value as this database takes it (see [`crate::timefmt`]); other values unchanged.
pub fn for_database(value: &Value, catalog: &Catalog) -> Value {
    let time = &catalog.time;
    match (value, time.is_native(), catalog.engine) {
        (Value::Instant(t), false, _) => Value::Text(time.text_of(*t)),
        (Value::Instant(t), true, Engine::Postgres) => Value::Instant(*t),
        (Value::Instant(t), true, Engine::Mysql) => Value::Wall(time.wall_time(*t)),
        (Value::Instant(t), true, Engine::Sqlite) => Value::Text(time.text_of(*t)),
        (Value::Day(d), true, Engine::Postgres | Engine::Mysql) => Value::Day(*d),
        (Value::Day(d), _, _) => Value::Text(d.format("%Y-%m-%d").to_string()),
        (Value::NullOf(ParamType::Timestamp | ParamType::Date), false, _)
        | (Value::NullOf(ParamType::Timestamp | ParamType::Date), true, Engine::Sqlite) => Value::Null,
        (Value::NullOf(ParamType::Timestamp), true, Engine::Mysql) => Value::NullOf(ParamType::Date),
        (v, _, _) => v.clone(),
    }
}

fn compile_regexes(list: &[String], params: &BTreeMap<String, Param>, key: &str) -> Result<Vec<Regex>, String> {
    let mut out = Vec::new();
    for (j, p) in list.iter().enumerate() {
        let re = Regex::new(p).map_err(|e| format!("`{key}.{j}`: {e}"))?;
        for group in re.capture_names().flatten() {
            if !params.contains_key(group) {
                return Err(format!("`{key}.{j}` captures `{group}`, which is not a declared parameter"));
            }
        }
        out.push(re);
    }
    Ok(out)
}

fn text_for(text: &EngineText, engine: Engine, key: &str) -> Result<String, String> {
    text.for_engine(engine).map(str::to_string).ok_or_else(|| format!("`{key}` has no text for {engine}"))
}

/// A `:user.<attr>` value: `subject`, `groups` (list), or an attribute (list when configured).
fn user_value(attr: &str, user: &UserContext, lists: &HashSet<String>) -> Value {
    match attr {
        "subject" => Value::Text(user.subject.clone()),
        "groups" => Value::List(user.groups.clone()),
        _ => match user.attributes.get(attr) {
            Some(v) if lists.contains(attr) => {
                Value::List(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect())
            }
            Some(v) => Value::Text(v.clone()),
            None if lists.contains(attr) => Value::List(Vec::new()),
            None => Value::Null,
        },
    }
}

fn relative_now(raw: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let rest = raw.trim().strip_prefix("now")?;
    if rest.is_empty() {
        return Some(now);
    }
    let rest = rest.strip_prefix('-')?;
    let (num, unit) = rest.split_at(rest.len().checked_sub(1)?);
    let n: i64 = num.parse().ok().filter(|n| (0..=36_500).contains(n))?;
    let delta = match unit {
        "d" => chrono::Duration::days(n),
        "h" => chrono::Duration::hours(n),
        "m" => chrono::Duration::minutes(n),
        _ => return None,
    };
    Some(now - delta)
}

/// Control characters and invisible format characters (bidi controls, zero-width characters, BOM):
/// a collation may ignore them (MariaDB's `utf8mb4_unicode_ci` does), so `\u{200F}pending`
/// would compare equal to `pending`. Parameter values never need them.
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(c as u32,
            0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F | 0x200B..=0x200F
            | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB)
}

impl Param {
    /// Checks and converts one raw value; errors name the parameter and never echo the value.
    pub fn parse(&self, name: &str, raw: &str) -> Result<Value, String> {
        self.parse_at(name, raw, Utc::now())
    }

    /// [`Param::parse`] with `now`, `now-7d` read against `now` (the sub-query's `as_of`).
    pub fn parse_at(&self, name: &str, raw: &str, now: DateTime<Utc>) -> Result<Value, String> {
        let spec = &self.spec;
        if raw.chars().count() > MAX_VALUE_CHARS {
            return Err(format!("parameter `{name}` is too long (at most {MAX_VALUE_CHARS} characters)"));
        }
        if raw.contains('\0') {
            return Err(format!("parameter `{name}` must not contain NUL characters"));
        }
        if raw.chars().any(is_invisible) {
            return Err(format!("parameter `{name}` must not contain control or invisible formatting characters"));
        }
        let value = match spec.kind {
            ParamType::String if spec.multi => {
                let terms: Vec<&str> =
                    raw.split(|c: char| c.is_whitespace() || c == ',' || c == '，').filter(|t| !t.is_empty()).collect();
                self.parse_terms(name, &terms)?
            }
            ParamType::String => {
                let code = self.code_of(raw);
                self.check_text(name, &code)?;
                match spec.like {
                    Some(mode) => Value::Text(like_pattern(&code, mode)),
                    None => Value::Text(code),
                }
            }
            ParamType::Int => {
                let n: i64 = raw.trim().parse().map_err(|_| format!("parameter `{name}` must be an integer"))?;
                self.check_bounds(name, n as f64)?;
                Value::Int(n)
            }
            ParamType::Float => {
                let x: f64 = raw.trim().parse().map_err(|_| format!("parameter `{name}` must be a number"))?;
                if !x.is_finite() {
                    return Err(format!("parameter `{name}` must be a finite number"));
                }
                self.check_bounds(name, x)?;
                Value::Float(x)
            }
            ParamType::Date => {
                let d = NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d")
                    .ok()
                    .or_else(|| {
                        DateTime::parse_from_rfc3339(raw.trim()).ok().map(|t| t.with_timezone(&Utc).date_naive())
                    })
                    .or_else(|| relative_now(raw, now).map(|t| t.date_naive()))
                    .ok_or_else(|| format!("parameter `{name}` must be a date (YYYY-MM-DD)"))?;
                Value::Day(d)
            }
            ParamType::Timestamp => {
                let t = DateTime::parse_from_rfc3339(raw.trim())
                    .ok()
                    .map(|t| t.with_timezone(&Utc))
                    .or_else(|| {
                        NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d")
                            .ok()
                            .and_then(|d| d.and_hms_opt(0, 0, 0))
                            .map(|d| d.and_utc())
                    })
                    .or_else(|| relative_now(raw, now))
                    .ok_or_else(|| format!("parameter `{name}` must be an RFC 3339 timestamp"))?;
                Value::Instant(t)
            }
        };
        Ok(value)
    }

    /// The code a word stands for (the value map), else the value itself.
    pub fn code_of(&self, raw: &str) -> String {
        let lowered = raw.trim().to_lowercase();
        self.words.iter().find(|(w, _)| *w == lowered).map_or_else(|| raw.to_string(), |(_, code)| code.clone())
    }

    fn check_text(&self, name: &str, value: &str) -> Result<(), String> {
        if let Some(max) = self.spec.max_len
            && value.chars().count() > max
        {
            return Err(format!("parameter `{name}` is too long (at most {max} characters)"));
        }
        if let Some(re) = &self.pattern
            && !re.is_match(value)
        {
            return Err(format!("parameter `{name}` does not have the expected format"));
        }
        Ok(())
    }

    /// A `multi` parameter's terms, each mapped, checked and (for `like`) made a pattern.
    pub fn parse_terms(&self, name: &str, terms: &[&str]) -> Result<Value, String> {
        if terms.len() > MAX_TERMS {
            return Err(format!("parameter `{name}` has too many terms (at most {MAX_TERMS})"));
        }
        let mut out: Vec<String> = Vec::with_capacity(terms.len());
        for t in terms {
            if t.chars().count() > MAX_VALUE_CHARS || t.contains('\0') || t.chars().any(is_invisible) {
                return Err(format!("parameter `{name}` has a term that is too long or contains control characters"));
            }
            let code = self.code_of(t);
            self.check_text(name, &code)?;
            let v = match self.spec.like {
                Some(mode) => like_pattern(&code, mode),
                None => code,
            };
            if !out.contains(&v) {
                out.push(v);
            }
        }
        Ok(Value::List(out))
    }

    /// The codes of every value-map word that occurs in `text`, longest words first, each once: a
    /// `multi` parameter takes them all ("unpaid or in dispute" → `open`, `disputed`). A word
    /// found only inside a longer word already read is not read again: "not paid" is not also
    /// "paid", 未付清 not also 付清.
    pub fn words_in(&self, text: &str) -> Vec<&str> {
        let lowered = text.to_lowercase();
        let mut read: Vec<(usize, usize)> = Vec::new();
        let mut codes: Vec<&str> = Vec::new();
        for (word, code) in &self.words {
            let mut found = false;
            for at in crate::lookup::occurrences(&lowered, word) {
                let end = at + word.len();
                if !read.iter().any(|&(s, e)| at < e && s < end) {
                    read.push((at, end));
                    found = true;
                }
            }
            if found && !codes.contains(&code.as_str()) {
                codes.push(code);
            }
        }
        codes
    }

    /// The code of the longest value-map word that occurs in `text` (the first of [`Self::words_in`]).
    pub fn word_in(&self, text: &str) -> Option<&str> {
        self.words_in(text).first().copied()
    }

    fn check_bounds(&self, name: &str, x: f64) -> Result<(), String> {
        if let Some(min) = self.spec.min
            && x < min
        {
            return Err(format!("parameter `{name}` must be at least {min}"));
        }
        if let Some(max) = self.spec.max
            && x > max
        {
            return Err(format!("parameter `{name}` must be at most {max}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Value {
        Value::Instant(DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc))
    }

    fn config(yaml_templates: &str) -> Result<SqlAdapterConfig, String> {
        let yaml = format!(
            "server: {{listen: '127.0.0.1:0'}}\ndatabase: {{url: 'sqlite::memory:'}}\nsource: {{name: shop}}\nlist_attributes: [business_lines]\n{yaml_templates}"
        );
        fedsearch_core::config::from_yaml_str(&yaml)
    }

    const GOOD: &str = r#"
templates:
  - name: order_by_number
    sql: "SELECT order_no FROM orders o WHERE o.order_no = :order_no AND {permission} LIMIT :limit"
    permission: "o.business_line IN (:user.business_lines)"
    params:
      order_no: {type: string, required: true, pattern: 'SO\d{8}', max_len: 10}
      days: {type: int, min: 1, max: 90, default: "7"}
    match: {patterns: ['(?P<order_no>SO\d{8})']}
    hit: {id: order_no, title: order_no, doc_type: order}
"#;

    fn user(lines: Option<&str>) -> UserContext {
        let mut u = UserContext { subject: "alice".into(), ..Default::default() };
        if let Some(l) = lines {
            u.attributes.insert("business_lines".into(), l.into());
        }
        u
    }

    #[test]
    fn refuses_a_template_without_permission_predicate_unless_public() {
        let no_perm = GOOD.replace("    permission: \"o.business_line IN (:user.business_lines)\"\n", "");
        let no_perm = no_perm.replace(" AND {permission}", "");
        let err = config(&no_perm).unwrap_err();
        assert!(err.contains("templates.0.permission") && err.contains("public: true"), "{err}");
        let public = no_perm.replace("  - name: order_by_number\n", "  - name: order_by_number\n    public: true\n");
        config(&public).unwrap();
    }

    #[test]
    fn like_and_multi_parameters_must_sit_where_a_pattern_list_can_go() {
        let with = |sql: &str, params: &str| {
            config(&format!(
                "templates:\n  - name: t\n    sql: \"{sql} AND {{permission}}\"\n    permission: \"o = :user.subject\"\n    params: {params}\n    hit: {{id: id, title: id, doc_type: t}}\n"
            ))
        };
        with("SELECT 1 WHERE (:q IS NULL OR note LIKE :q)", "{q: {type: string, like: contains}}").unwrap();
        let err = with("SELECT 1 WHERE note = :q", "{q: {type: string, like: contains}}").unwrap_err();
        assert!(err.contains("must follow `LIKE`"), "{err}");
        let err = with("SELECT 1 WHERE note LIKE :q", "{q: {type: string, like: contains, multi: true}}").unwrap_err();
        assert!(err.contains("{any: ...}"), "{err}");
        with("SELECT 1 WHERE {any: note LIKE :q}", "{q: {type: string, like: contains, multi: true}}").unwrap();
        let err = with("SELECT 1 WHERE {any: note LIKE :q}", "{q: {type: string, like: contains}}").unwrap_err();
        assert!(err.contains("exactly one `multi`"), "{err}");
        let list = "{p: {type: string, multi: true}}";
        with("SELECT 1 WHERE n IN (:p)", list).unwrap();
        with("SELECT 1 WHERE n NOT IN(:p)", list).unwrap();
        with("SELECT 1 WHERE {any: n = :p}", list).unwrap();
        for wrong in ["SELECT 1 WHERE n = :p", "SELECT 1 WHERE (:p IS NULL OR n IN (:p))", "SELECT 1 WHERE (:p)"] {
            let err = with(wrong, list).unwrap_err();
            assert!(err.contains("`:p` takes several values") && err.contains("IN (:p)"), "{wrong}: {err}");
        }
        let err = with("SELECT 1 WHERE n = :q", "{q: {type: int, values: {one: '1'}}}").unwrap_err();
        assert!(err.contains("need `type: string`"), "{err}");
        assert_eq!(like_pattern("100%_!x", LikeMode::Contains), "%100!%!_!!x%");
        assert_eq!(like_pattern("ab", LikeMode::Prefix), "ab%");
    }

    #[test]
    fn refuses_a_permission_predicate_not_bound_from_the_user() {
        let bad = GOOD.replace(":user.business_lines", "'retail'");
        let err = config(&bad).unwrap_err();
        assert!(err.contains("templates.0.permission") && err.contains(":user."), "{err}");
    }

    #[test]
    fn refuses_undeclared_parameters_and_bad_patterns() {
        let err = config(&GOOD.replace("= :order_no", "= :order_number")).unwrap_err();
        assert!(err.contains("`:order_number`"), "{err}");
        let err = config(&GOOD.replace("(?P<order_no>", "(?P<nope>")).unwrap_err();
        assert!(err.contains("templates.0.match.patterns.0"), "{err}");
        let err = config(&GOOD.replace("default: \"7\"", "default: \"700\"")).unwrap_err();
        assert!(err.contains("templates.0.params.days.default"), "{err}");
    }

    #[test]
    fn binds_list_attributes_as_one_placeholder_each() {
        let cfg = config(GOOD).unwrap();
        let catalog = Catalog::compile(&cfg, Engine::Postgres).unwrap();
        let t = catalog.template("order_by_number").unwrap();
        let mut values = BTreeMap::new();
        values.insert("order_no".to_string(), Value::Text("SO20261001".into()));
        values.insert("limit".to_string(), Value::Int(5));
        let (sql, binds) = t.bind(&catalog, &values, &user(Some("retail, wholesale"))).unwrap();
        assert!(sql.contains("o.order_no = $1 AND (o.business_line IN ($2, $3)) LIMIT $4"), "{sql}");
        assert_eq!(
            binds,
            vec![
                Value::Text("SO20261001".into()),
                Value::Text("retail".into()),
                Value::Text("wholesale".into()),
                Value::Int(5)
            ]
        );
        // No business lines: one NULL placeholder, which matches nothing.
        let (sql, binds) = t.bind(&catalog, &values, &user(None)).unwrap();
        assert!(sql.contains("IN ($2)"), "{sql}");
        assert_eq!(binds[1], Value::Null);
    }

    #[test]
    fn parameter_values_are_checked_and_errors_name_the_parameter() {
        let cfg = config(GOOD).unwrap();
        let catalog = Catalog::compile(&cfg, Engine::Sqlite).unwrap();
        let t = catalog.template("order_by_number").unwrap();
        let order = &t.params["order_no"];
        assert_eq!(order.parse("order_no", "SO20261001").unwrap(), Value::Text("SO20261001".into()));
        let err = order.parse("order_no", "SO2026' OR 1=1 --").unwrap_err();
        assert!(err.contains("`order_no`") && !err.contains("OR 1=1"), "{err}");
        assert!(order.parse("order_no", "SO2026100\0").unwrap_err().contains("NUL"));
        let status = Param { spec: order.spec.clone(), pattern: None, words: Vec::new() };
        for sneaky in ["\u{200F}pending", "pend\u{200B}ing", "\u{202E}gnidnep", "\u{FEFF}x", "a\nb"] {
            assert!(status.parse("status", sneaky).unwrap_err().contains("invisible"), "{sneaky:?}");
        }
        assert!(status.parse("status", "张伟").is_ok());
        assert!(order.parse("order_no", &"9".repeat(5000)).unwrap_err().contains("too long"));
        let days = &t.params["days"];
        assert_eq!(days.parse("days", "30").unwrap(), Value::Int(30));
        assert!(days.parse("days", "0").unwrap_err().contains("at least 1"));
        assert!(days.parse("days", "x").unwrap_err().contains("integer"));
    }

    #[test]
    fn timestamps_normalise_to_the_stored_text_form() {
        let p = Param {
            spec: ParamSpec {
                kind: ParamType::Timestamp,
                required: false,
                min: None,
                max: None,
                max_len: None,
                pattern: None,
                default: None,
                description: String::new(),
                values: BTreeMap::new(),
                like: None,
                multi: false,
                from_terms: false,
            },
            pattern: None,
            words: Vec::new(),
        };
        assert_eq!(p.parse("from", "2026-11-28T10:15:00+01:00").unwrap(), at("2026-11-28T09:15:00Z"));
        assert_eq!(p.parse("from", "2026-11-28").unwrap(), at("2026-11-28T00:00:00Z"));
        assert!(matches!(p.parse("from", "now-7d").unwrap(), Value::Instant(_)));
        assert!(p.parse("from", "yesterday").is_err());
    }
}
