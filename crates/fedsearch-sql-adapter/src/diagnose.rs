//! The sql-adapter's self-check (`fedsearch doctor`, [`fedsearch_adapter_kit::diagnostics`]):
//! the database answers as the read-only role; every template (search, fetch, lookup) is
//! described by the engine without running it, and each result column is of a type the adapter
//! reads; the `hit` mapping names columns the template returns; templates without a permission
//! predicate are pointed out; the time zone is set when templates take time parameters, and a
//! MySQL/MariaDB server knows a zone with DST by name (its time zone tables).
//! Messages name templates and columns from the config, never values, hosts or credentials.

use std::{collections::BTreeMap, time::Duration};

use fedsearch_adapter_kit::{
    UserContext,
    diagnostics::{Diagnostic, error, ok, warning},
};

use crate::{
    config::ParamType,
    db::{Database, DescribeFailure, Kind},
    template::{Catalog, LIMIT_PARAM, Template, Value},
};

/// The longest one check may wait for the database.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Every finding for the source `source`.
pub async fn diagnose(source: &str, catalog: &Catalog, db: &Database, lookups: &[(String, String)]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    match db.query("SELECT 1 AS ok".into(), Vec::new(), 1, CHECK_TIMEOUT).await {
        Ok(_) => out.push(ok(source, "database", format!("the {} database answers the adapter's role", db.engine()))),
        Err(e) => {
            out.push(error(
                source,
                "database",
                format!("the database does not answer: {e}"),
                "check `database.url_env` / `url_file` / `url` and that the read-only role may connect",
            ));
            return out;
        }
    }
    let uses_time = catalog
        .templates
        .iter()
        .chain(catalog.fetch.values())
        .any(|t| t.params.values().any(|p| matches!(p.spec.kind, ParamType::Date | ParamType::Timestamp)));
    match (&catalog.time.zone, uses_time) {
        (None, true) => out.push(warning(
            source,
            "time_zone",
            "templates take time parameters but `database.time_zone` is not set: times are bound and read as UTC",
            "set `database.time_zone` to the zone the database's times are in (e.g. Asia/Shanghai), and `timestamp_format`",
        )),
        (Some(z), _) => out.push(ok(source, "time_zone", format!("times are bound and read in {z}"))),
        (None, false) => {}
    }
    if let Some(z) = &catalog.time.zone
        && catalog.time.has_dst(chrono::Utc::now())
        && let Ok(Some(false)) = db.mysql_knows_zone(CHECK_TIMEOUT).await
    {
        out.push(warning(
            source,
            "time_zone_tables",
            format!(
                "the server does not know {z} by name (no time zone tables): sessions run in its offset of today, \
                 so TIMESTAMP columns compared with a bound time, NOW() and FROM_UNIXTIME are an hour off across a DST change"
            ),
            "load the server's time zone tables: mariadb-tzinfo-to-sql /usr/share/zoneinfo | mariadb -u root mysql (MySQL: mysql_tzinfo_to_sql)",
        ));
    }
    for t in catalog.templates.iter().chain(catalog.fetch.values()) {
        out.extend(check_template(source, catalog, db, t).await);
    }
    for (name, sql) in lookups {
        let check = format!("lookup {name}");
        match db.describe_columns(sql, &[], CHECK_TIMEOUT).await {
            Ok(cols) => {
                let has = |c: &str| cols.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(c));
                if has("value") && has("label") {
                    out.push(ok(source, &check, "returns `value` and `label`"));
                } else {
                    out.push(error(
                        source,
                        &check,
                        "does not return both `value` and `label`",
                        "select the id AS value and the name AS label",
                    ));
                }
            }
            Err(f) => out.push(refused(source, &check, f)),
        }
    }
    out
}

fn refused(source: &str, check: &str, f: DescribeFailure) -> Diagnostic {
    match f {
        DescribeFailure::Refused(code) => error(
            source,
            check,
            format!("the database refuses the statement (code {code})"),
            "check the table and column names and the role's SELECT grants",
        ),
        DescribeFailure::Other(e) => error(source, check, format!("the statement cannot be checked: {e}"), ""),
    }
}

/// The template's SQL as it would run: every parameter absent, the row limit 0, a user with no
/// attributes (list attributes bind one NULL).
async fn check_template(source: &str, catalog: &Catalog, db: &Database, t: &Template) -> Vec<Diagnostic> {
    let check = format!("template {}", t.name);
    let mut out = Vec::new();
    if t.public {
        out.push(warning(
            source,
            &check,
            "has no permission predicate (`public: true`): every user may read all its rows",
            "add a `permission` bound from the user unless the rows are meant for everybody",
        ));
    }
    let values = BTreeMap::from([(LIMIT_PARAM.to_string(), Value::Int(0))]);
    let user = UserContext { subject: "doctor".into(), ..Default::default() };
    let (sql, binds) = match t.bind(catalog, &values, &user) {
        Ok(bound) => bound,
        Err(e) => {
            out.push(error(source, &check, format!("cannot be rendered: {e}"), ""));
            return out;
        }
    };
    let columns = match db.describe_columns(&sql, &binds, CHECK_TIMEOUT).await {
        Ok(c) => c,
        Err(f) => {
            out.push(refused(source, &check, f));
            return out;
        }
    };
    let mut problems = 0;
    for (name, kind, type_name) in &columns {
        match kind {
            Some(Kind::Binary) => {
                problems += 1;
                out.push(error(
                    source,
                    &check,
                    format!("returns binary data ({type_name}) in `{name}`, which the adapter refuses"),
                    format!("leave `{name}` out of the SELECT"),
                ));
            }
            Some(Kind::Other) => {
                problems += 1;
                out.push(error(
                    source,
                    &check,
                    format!("returns `{name}` as {type_name}, a type the adapter does not read"),
                    format!("convert `{name}` to text in the SELECT"),
                ));
            }
            _ => {}
        }
    }
    let has = |c: &str| columns.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(c));
    let mut wanted: Vec<(String, &str)> = vec![(t.hit.id.clone(), "hit.id")];
    wanted.extend(t.hit.updated_at.iter().map(|c| (c.clone(), "hit.date_column")));
    wanted.extend(t.hit.metadata.iter().map(|c| (c.clone(), "hit.metadata")));
    for spec in [Some(&t.hit.title), t.hit.snippet.as_ref(), t.hit.url.as_ref()].into_iter().flatten() {
        if spec.contains('{') {
            wanted.extend(placeholders(spec).into_iter().map(|c| (c, "hit title/snippet/url")));
        } else {
            wanted.push((spec.clone(), "hit title/snippet/url"));
        }
    }
    for f in &t.follow_ups {
        wanted.extend(f.params.values().map(|c| (c.clone(), "follow_ups.params")));
    }
    for (column, key) in wanted {
        if !has(&column) {
            problems += 1;
            out.push(error(
                source,
                &check,
                format!("`{key}` names `{column}`, which the template does not return"),
                format!("select `{column}` or change `{key}`"),
            ));
        }
    }
    if problems == 0 {
        out.push(ok(source, &check, format!("{} columns, every one readable", columns.len())));
    }
    out
}

fn placeholders(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = pattern;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else { break };
        out.push(rest[start + 1..start + end].to_string());
        rest = &rest[start + end + 1..];
    }
    out
}
