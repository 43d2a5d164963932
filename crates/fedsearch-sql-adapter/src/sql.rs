//! Template SQL: finds the named parameters (`:order_no`, `:user.business_lines`) in SQL text
//! from the config and renders it with the engine's placeholder syntax.
//!
//! Parsing happens once at start-up. At query time the only SQL the adapter generates is
//! placeholder syntax (`$1`, `$2`, … for PostgreSQL, `?` for MySQL/MariaDB and SQLite), repeated
//! once per element when a list value is expanded; every value is bound, never spliced.

use std::fmt;

/// The database engine a DSN selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    Postgres,
    Mysql,
    Sqlite,
}

impl Engine {
    /// The engine of a DSN (`postgres://`, `postgresql://`, `mysql://`, `mariadb://`, `sqlite:`).
    pub fn from_url(url: &str) -> Option<Self> {
        let scheme = url.split(':').next()?.to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => Some(Self::Postgres),
            "mysql" | "mariadb" => Some(Self::Mysql),
            "sqlite" => Some(Self::Sqlite),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Postgres => "postgres",
            Self::Mysql => "mysql",
            Self::Sqlite => "sqlite",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Whether SQL text ends with `LIKE` / `ILIKE` (a pattern placeholder follows it).
pub fn follows_like(before: &str) -> bool {
    let last = before.trim_end().rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    last.eq_ignore_ascii_case("like") || last.eq_ignore_ascii_case("ilike")
}

/// Whether `before` ends with `IN (`, where a list's placeholders go, comma-separated.
pub fn follows_in(before: &str) -> bool {
    let Some(rest) = before.trim_end().strip_suffix('(') else {
        return false;
    };
    rest.trim_end().rsplit(char::is_whitespace).next().is_some_and(|w| w.eq_ignore_ascii_case("in"))
}

/// One piece of template SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// SQL text from the config, copied verbatim.
    Text(String),
    /// A named parameter, e.g. `order_no` or `user.business_lines`.
    Param(String),
    /// `{any: <sql>}` / `{all: <sql>}`: the inner SQL once per element of the list parameter it
    /// binds, joined by OR / AND in parentheses (`1=1` when the list is empty or absent).
    Repeat { all: bool, inner: Vec<Segment> },
}

/// Template SQL split into text and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSql {
    pub segments: Vec<Segment>,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits SQL into text and `:name` / `:user.name` parameters. String literals, quoted
/// identifiers, comments and PostgreSQL `::type` casts are left alone. Positional placeholders
/// (`?`, `$1`) in template SQL are refused: every value must go through a named parameter.
pub fn parse(sql: &str) -> Result<ParsedSql, String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut segments = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' | '`' => {
                let end =
                    chars[i + 1..].iter().position(|&d| d == c).ok_or_else(|| format!("unterminated {c} quote"))?;
                text.extend(&chars[i..=i + 1 + end]);
                i += end + 2;
            }
            '-' if chars.get(i + 1) == Some(&'-') => {
                let end = chars[i..].iter().position(|&d| d == '\n').map_or(chars.len(), |p| i + p);
                text.extend(&chars[i..end]);
                i = end;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let rest: String = chars[i + 2..].iter().collect();
                let end = rest.find("*/").ok_or("unterminated /* comment")?;
                let len = rest[..end].chars().count() + 4;
                text.extend(&chars[i..i + len]);
                i += len;
            }
            ':' if chars.get(i + 1) == Some(&':') => {
                text.push_str("::");
                i += 2;
            }
            ':' if chars.get(i + 1).is_some_and(|&d| is_ident_start(d)) => {
                let mut j = i + 1;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                if chars.get(j) == Some(&'.') && chars.get(j + 1).is_some_and(|&d| is_ident_start(d)) {
                    j += 1;
                    while j < chars.len() && is_ident(chars[j]) {
                        j += 1;
                    }
                }
                if !text.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut text)));
                }
                segments.push(Segment::Param(chars[i + 1..j].iter().collect()));
                i = j;
            }
            '?' => {
                return Err("positional `?` placeholders are not allowed; use named :parameters".into());
            }
            '$' if chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                return Err("positional `$n` placeholders are not allowed; use named :parameters".into());
            }
            ';' => return Err("`;` is not allowed: a template is exactly one statement".into()),
            '{' if chars[i + 1..].starts_with(&['a', 'n', 'y', ':'])
                || chars[i + 1..].starts_with(&['a', 'l', 'l', ':']) =>
            {
                let all = chars[i + 1] == 'a' && chars[i + 2] == 'l';
                let end = chars[i..].iter().position(|&d| d == '}').ok_or("unterminated `{any:` / `{all:`")? + i;
                let inner: String = chars[i + 5..end].iter().collect();
                let inner = parse(&inner)?;
                if inner.segments.iter().any(|s| matches!(s, Segment::Repeat { .. })) {
                    return Err("`{any:` / `{all:` cannot be nested".into());
                }
                if !text.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut text)));
                }
                segments.push(Segment::Repeat { all, inner: inner.segments });
                i = end + 1;
            }
            _ => {
                text.push(c);
                i += 1;
            }
        }
    }
    if !text.is_empty() {
        segments.push(Segment::Text(text));
    }
    Ok(ParsedSql { segments })
}

impl ParsedSql {
    /// The parameter names in order of appearance (with repeats; inside `{any:}` once).
    pub fn params(&self) -> std::vec::IntoIter<&str> {
        fn walk<'a>(segments: &'a [Segment], out: &mut Vec<&'a str>) {
            for s in segments {
                match s {
                    Segment::Param(p) => out.push(p),
                    Segment::Repeat { inner, .. } => walk(inner, out),
                    Segment::Text(_) => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.segments, &mut out);
        out.into_iter()
    }

    /// Renders the SQL for `engine` and lists the placeholders' parameters in order.
    /// `arity(name)` says how many placeholders a parameter outside `{any:}` expands to (1 for
    /// scalars, the element count for lists, at least 1); `repeat(inner)` how many times an
    /// `{any:}` / `{all:}` block repeats (0: `1=1`); `suffix(name)` is text after each of the
    /// parameter's placeholders (` ESCAPE '!'` for LIKE patterns). Placeholders of a repeated
    /// block are numbered per repetition: `(name, k)` binds element k of a list parameter
    /// (a scalar whatever k).
    pub fn render_bound(
        &self,
        engine: Engine,
        arity: impl Fn(&str) -> usize,
        repeat: impl Fn(&[Segment]) -> usize,
        suffix: impl Fn(&str, &str) -> &'static str,
    ) -> (String, Vec<(String, usize)>) {
        let mut out = String::new();
        let mut order = Vec::new();
        let placeholder = |out: &mut String, order: &mut Vec<(String, usize)>, p: &str, k: usize, before: &str| {
            order.push((p.to_string(), k));
            match engine {
                Engine::Postgres => {
                    out.push('$');
                    out.push_str(&order.len().to_string());
                }
                Engine::Mysql | Engine::Sqlite => out.push('?'),
            }
            out.push_str(suffix(p, before));
        };
        let mut before = "";
        for segment in &self.segments {
            match segment {
                Segment::Text(t) => {
                    out.push_str(t);
                    before = t;
                }
                Segment::Param(p) => {
                    let n = arity(p).max(1);
                    for k in 0..n {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        placeholder(&mut out, &mut order, p, k, before);
                    }
                    before = "";
                }
                Segment::Repeat { all, inner } => {
                    let times = repeat(inner);
                    if times == 0 {
                        out.push_str("(1=1)");
                        continue;
                    }
                    out.push('(');
                    for k in 0..times {
                        if k > 0 {
                            out.push_str(if *all { " AND " } else { " OR " });
                        }
                        let mut before = "";
                        for s in inner {
                            match s {
                                Segment::Text(t) => {
                                    out.push_str(t);
                                    before = t;
                                }
                                Segment::Param(p) => {
                                    placeholder(&mut out, &mut order, p, k, before);
                                    before = "";
                                }
                                Segment::Repeat { .. } => {}
                            }
                        }
                    }
                    out.push(')');
                    before = "";
                }
            }
        }
        (out, order)
    }

    /// Renders the SQL for `engine`; `arity(name)` says how many placeholders a parameter
    /// expands to (1 for scalars, the element count for lists, at least 1).
    pub fn render(&self, engine: Engine, arity: impl Fn(&str) -> usize) -> String {
        self.render_bound(engine, &arity, |_| 1, |_, _| "").0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<String> {
        parse(sql).unwrap().params().map(str::to_string).collect()
    }

    #[test]
    fn finds_named_and_user_parameters() {
        assert_eq!(
            names(
                "SELECT * FROM o WHERE order_no = :order_no AND business_line IN (:user.business_lines) LIMIT :limit"
            ),
            ["order_no", "user.business_lines", "limit"]
        );
    }

    #[test]
    fn ignores_literals_comments_and_casts() {
        let sql = "SELECT ':not_a', \"x:y\", `a:b`, amount::text -- :nope\n FROM t /* :nor */ WHERE a = :yes";
        assert_eq!(names(sql), ["yes"]);
        let rendered = parse(sql).unwrap().render(Engine::Postgres, |_| 1);
        assert!(rendered.contains("amount::text"), "{rendered}");
        assert!(rendered.ends_with("a = $1"), "{rendered}");
    }

    #[test]
    fn renders_placeholders_per_engine_with_list_expansion() {
        let p = parse("a = :x AND b IN (:user.lines) AND c = :x").unwrap();
        let arity = |n: &str| if n == "user.lines" { 3 } else { 1 };
        assert_eq!(p.render(Engine::Postgres, arity), "a = $1 AND b IN ($2, $3, $4) AND c = $5");
        assert_eq!(p.render(Engine::Mysql, arity), "a = ? AND b IN (?, ?, ?) AND c = ?");
        assert_eq!(p.render(Engine::Sqlite, |_| 0), "a = ? AND b IN (?) AND c = ?");
    }

    #[test]
    fn any_and_all_blocks_repeat_per_element() {
        let p = parse("x = :a AND {any: note LIKE :terms} AND {all: t LIKE :w}").unwrap();
        assert_eq!(p.params().collect::<Vec<_>>(), ["a", "terms", "w"]);
        let (sql, order) = p.render_bound(
            Engine::Postgres,
            |_| 1,
            |inner| if inner.iter().any(|s| *s == Segment::Param("terms".into())) { 2 } else { 0 },
            |n, before| if n != "a" && follows_like(before) { " ESCAPE '!'" } else { "" },
        );
        assert_eq!(sql, "x = $1 AND ( note LIKE $2 ESCAPE '!' OR  note LIKE $3 ESCAPE '!') AND (1=1)");
        assert_eq!(order[1], ("terms".to_string(), 0));
        assert_eq!(order[2], ("terms".to_string(), 1));
        assert!(parse("{any: a LIKE :x").is_err());
    }

    #[test]
    fn refuses_positional_placeholders_and_stacked_statements() {
        assert!(parse("SELECT 1 WHERE a = ?").is_err());
        assert!(parse("SELECT 1 WHERE a = $1").is_err());
        assert!(parse("SELECT 1; DROP TABLE orders").is_err());
        assert!(parse("SELECT 'unterminated").is_err());
        assert!(parse("SELECT '?;' FROM t").is_ok());
    }

    #[test]
    fn engine_from_dsn() {
        assert_eq!(Engine::from_url("postgres://u@h/db"), Some(Engine::Postgres));
        assert_eq!(Engine::from_url("mariadb://u@h/db"), Some(Engine::Mysql));
        assert_eq!(Engine::from_url("sqlite:///tmp/x.db?mode=ro"), Some(Engine::Sqlite));
        assert_eq!(Engine::from_url("oracle://x"), None);
    }
}
