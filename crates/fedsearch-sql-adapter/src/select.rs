//! Template choice and parameter extraction for one sub-query.
//!
//! An explicit `SubQuery.template` (+ `params`) wins. Otherwise every template whose match
//! rules fit the query text runs: one of its regex `patterns` matches (named groups capture
//! into parameters) and one of its `keywords` occurs in the text or the router's terms (which
//! carry the glossary's other-language synonyms). Filters feed parameters too:
//! `time_range` → `:from` / `:to`, `equals` → the parameter of that name, `doc_types` skips
//! templates of other types. Values are checked against the parameter schema; nothing from the
//! request ever becomes SQL text.

use std::collections::BTreeMap;

use fedsearch_adapter_kit::{AdapterError, SubQuery};

use crate::{
    config::ParamType,
    lookup::Linked,
    template::{Catalog, LIMIT_PARAM, Param, Template, Value},
    timefmt::TimeSettings,
};

/// One template to run with its checked values.
#[derive(Debug)]
pub struct Run<'a> {
    pub template: &'a Template,
    pub values: BTreeMap<String, Value>,
    /// The template's keywords the question or the router's terms hold ([`held_keywords`]).
    pub keywords: Vec<&'a str>,
}

/// What a sub-query runs, plus notes for the caller (filters not applied, nothing matched).
#[derive(Debug, Default)]
pub struct Plan<'a> {
    pub runs: Vec<Run<'a>>,
    pub notes: Vec<String>,
}

/// A caller-supplied name, shown only when it is a plain identifier.
pub fn shown(name: &str) -> String {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain { format!("`{name}`") } else { "(not a valid name)".to_string() }
}

fn invalid(msg: String) -> AdapterError {
    AdapterError::InvalidArgument(msg)
}

/// Chooses the templates for `query` and extracts their parameters. `limit` is the
/// sub-query's row limit (already defaulted by the kit).
/// `linked` holds parameter values found by entity linking ([`crate::lookup`]).
pub fn plan<'a>(catalog: &'a Catalog, query: &SubQuery, linked: &Linked) -> Result<Plan<'a>, AdapterError> {
    let mut plan = Plan::default();
    let filters = query.filters.clone().unwrap_or_default();
    // `now`, `now-7d` in values and defaults mean the question's moment (`as_of`), else now.
    let now = query.as_of.as_ref().and_then(fedsearch_core::time::to_chrono).unwrap_or_else(chrono::Utc::now);
    if !filters.tags.is_empty() {
        plan.notes.push("the tags filter is not supported by this source".into());
    }
    let text = keyword_haystack(query);
    if !query.template.is_empty() {
        let template = catalog
            .template(&query.template)
            .ok_or_else(|| invalid(format!("unknown template {}", shown(&query.template))))?;
        for key in query.params.keys() {
            if !template.params.contains_key(key) {
                return Err(invalid(format!("template `{}` has no parameter {}", template.name, shown(key))));
            }
        }
        let mut values = BTreeMap::new();
        for (key, raw) in &query.params {
            values.insert(key.clone(), template.params[key].parse_at(key, raw, now).map_err(invalid)?);
        }
        capture(template, &query.text, &mut values)?;
        from_question(template, query, &mut values)?;
        apply_filters(template, &catalog.time, query, &mut values, &mut plan.notes)?;
        finish(template, query.limit, &mut values, true, now)?;
        plan.runs.push(Run { template, values, keywords: held_keywords(template, &text) });
        return Ok(plan);
    }
    implicit(catalog, query, linked, &text, now, false, &mut plan)?;
    if plan.runs.is_empty() && period_asked(query) {
        implicit(catalog, query, linked, &text, now, true, &mut plan)?;
    }
    if plan.runs.is_empty() {
        plan.notes.push("no template matched the query".into());
    }
    Ok(plan)
}

/// Whether the sub-query carries a time window with both ends (the question's period).
fn period_asked(query: &SubQuery) -> bool {
    query.filters.as_ref().and_then(|f| f.time_range.as_ref()).is_some_and(|r| r.from.is_some() && r.to.is_some())
}

/// Whether `template` lists the rows of a period: the start of its time range is a required
/// parameter without a default (one template per date column: the README's "Which templates to
/// write").
fn lists_a_period(template: &Template) -> bool {
    template.params.get(&template.time_range.0).is_some_and(|p| p.spec.required && p.spec.default.is_none())
}

/// The templates the question selects by their patterns and keywords; with `periods`, instead,
/// every template that lists a period, keywords aside (no template matched a question with a
/// period: "最近一周都进了哪些单？" lists what each table holds of that week).
fn implicit<'a>(
    catalog: &'a Catalog,
    query: &SubQuery,
    linked: &Linked,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
    periods: bool,
    plan: &mut Plan<'a>,
) -> Result<(), AdapterError> {
    for template in &catalog.templates {
        if template.patterns.is_empty() && template.keywords.is_empty() {
            continue;
        }
        if periods && !lists_a_period(template) {
            continue;
        }
        if !admits_doc_type(query, template) {
            continue;
        }
        let linked_here: Vec<&String> = linked.values.keys().filter(|p| template.params.contains_key(*p)).collect();
        let pattern_ok = template.patterns.is_empty()
            || template.patterns.iter().any(|re| re.is_match(&query.text))
            || template
                .patterns
                .iter()
                .any(|re| re.capture_names().flatten().any(|n| linked_here.iter().any(|p| *p == n)));
        let keywords = held_keywords(template, text);
        let keyword_ok = periods || template.keywords.is_empty() || !keywords.is_empty();
        if !(pattern_ok && keyword_ok) {
            continue;
        }
        let mut values = BTreeMap::new();
        for (key, raw) in &query.params {
            if let Some(param) = template.params.get(key) {
                values.insert(key.clone(), param.parse_at(key, raw, now).map_err(invalid)?);
            }
        }
        capture(template, &query.text, &mut values)?;
        from_question(template, query, &mut values)?;
        for p in linked_here {
            if values.contains_key(p.as_str()) {
                continue;
            }
            let param = &template.params[p.as_str()];
            let Some(v) = linked_value(param, p, &linked.values[p.as_str()]) else { continue };
            values.insert(p.clone(), v);
            if let Some(cap) = linked.capped.get(p.as_str()).filter(|_| param.spec.multi) {
                let note = format!("the question names more than {cap} values for `{p}`; the first {cap} are used");
                if !plan.notes.contains(&note) {
                    plan.notes.push(note);
                }
            }
        }
        apply_filters(template, &catalog.time, query, &mut values, &mut plan.notes)?;
        if finish(template, query.limit, &mut values, false, now)? {
            plan.runs.push(Run { template, values, keywords });
        }
    }
    Ok(())
}

/// The keywords of `template` that `haystack` ([`keyword_haystack`]) holds, in the template's
/// order: what chose it, shown on its rows (`metadata.matched_keywords`).
fn held_keywords<'a>(template: &'a Template, haystack: &str) -> Vec<&'a str> {
    template.keywords.iter().map(String::as_str).filter(|k| haystack.contains(k)).collect()
}

/// Whether the sub-query's `doc_types` filter (none: every type) admits `template`'s hits.
pub(crate) fn admits_doc_type(query: &SubQuery, template: &Template) -> bool {
    query.filters.as_ref().is_none_or(|f| f.doc_types.is_empty() || f.doc_types.contains(&template.hit.doc_type))
}

/// Where a template's `keywords` are looked for: the question and the router's terms, which
/// carry its glossary expansions (a Chinese question meets English keywords and the reverse),
/// one per line so that no keyword is made of two neighbouring terms. Lowercased.
pub(crate) fn keyword_haystack(query: &SubQuery) -> String {
    let mut text = query.text.to_lowercase();
    for term in &query.terms {
        text.push('\n');
        text.push_str(&term.to_lowercase());
    }
    text
}

/// What a lookup's values (in the order named) give `param`: a `multi` parameter every value that
/// fits its schema, one list; another parameter the first value named. A value that does not fit
/// the schema is no link (`None` when none is left).
fn linked_value(param: &Param, name: &str, named: &[String]) -> Option<Value> {
    if !param.spec.multi {
        return param.parse(name, named.first()?).ok();
    }
    let fitting: Vec<&str> =
        named.iter().map(String::as_str).filter(|v| param.parse_terms(name, &[v]).is_ok()).collect();
    if fitting.is_empty() {
        return None;
    }
    param.parse_terms(name, &fitting).ok()
}

/// Fills parameters still unset from the question: a value-map word it contains (the code; for a
/// `multi` parameter every such word's code, and a code of several values, `open,overdue`, is
/// each of them), or a `from_terms` list from the sub-query's terms.
fn from_question(
    template: &Template,
    query: &SubQuery,
    values: &mut BTreeMap<String, Value>,
) -> Result<(), AdapterError> {
    for (name, param) in &template.params {
        if values.contains_key(name) {
            continue;
        }
        if !param.words.is_empty() {
            let code = if param.spec.multi {
                let in_text = |t: &str| Some(param.words_in(t).join(",")).filter(|c| !c.is_empty());
                in_text(&query.text).or_else(|| in_text(&query.original_text))
            } else {
                param.word_in(&query.text).or_else(|| param.word_in(&query.original_text)).map(str::to_string)
            };
            if let Some(code) = code {
                values.insert(name.clone(), param.parse(name, &code).map_err(invalid)?);
                continue;
            }
        }
        if param.spec.from_terms && !query.terms.is_empty() {
            let terms: Vec<&str> = query.terms.iter().map(String::as_str).take(crate::template::MAX_TERMS).collect();
            values.insert(name.clone(), param.parse_terms(name, &terms).map_err(invalid)?);
        }
    }
    Ok(())
}

/// Fills parameters not set yet from the named groups of the first matching pattern/capture.
fn capture(template: &Template, text: &str, values: &mut BTreeMap<String, Value>) -> Result<(), AdapterError> {
    for re in template.patterns.iter().chain(&template.captures) {
        let Some(caps) = re.captures(text) else {
            continue;
        };
        for name in re.capture_names().flatten() {
            if let Some(m) = caps.name(name)
                && !values.contains_key(name)
            {
                values.insert(name.to_string(), template.params[name].parse(name, m.as_str()).map_err(invalid)?);
            }
        }
    }
    Ok(())
}

fn apply_filters(
    template: &Template,
    time: &TimeSettings,
    query: &SubQuery,
    values: &mut BTreeMap<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(), AdapterError> {
    let Some(filters) = &query.filters else {
        return Ok(());
    };
    if let Some(range) = &filters.time_range {
        let bounds = [
            ("from", template.time_range.0.as_str(), range.from.as_ref()),
            ("to", template.time_range.1.as_str(), range.to.as_ref()),
        ];
        let mut applied = false;
        for (bound_name, name, bound) in bounds {
            let Some(ts) = bound else { continue };
            let Some(param) = template.params.get(name) else {
                continue;
            };
            let t = fedsearch_core::time::to_chrono(ts)
                .ok_or_else(|| invalid(format!("time_range.{bound_name} is not a valid time")))?;
            let value = match param.spec.kind {
                ParamType::Timestamp => Value::Instant(t),
                // The calendar day of the bound in the database's zone.
                ParamType::Date => Value::Day(t.with_timezone(&time.tz()).date_naive()),
                _ => continue,
            };
            values.insert(name.to_string(), value);
            applied = true;
        }
        if !applied && (range.from.is_some() || range.to.is_some()) {
            notes.push(format!("template `{}` does not apply the time_range filter", template.name));
        }
    }
    for (key, raw) in &filters.equals {
        match template.params.get(key) {
            Some(param) => {
                values.insert(key.clone(), param.parse(key, raw).map_err(invalid)?);
            }
            None => {
                notes.push(format!("template `{}` does not apply the equals filter on {}", template.name, shown(key)))
            }
        }
    }
    Ok(())
}

/// Applies defaults and the row limit. A missing required parameter is an error for an
/// explicit template and makes an implicitly matched template not apply (`Ok(false)`).
pub(crate) fn finish(
    template: &Template,
    limit: u32,
    values: &mut BTreeMap<String, Value>,
    explicit: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, AdapterError> {
    for (name, param) in &template.params {
        if values.contains_key(name) {
            continue;
        }
        if let Some(default) = &param.spec.default {
            values.insert(name.clone(), param.parse_at(name, default, now).map_err(invalid)?);
        } else if param.spec.required {
            if explicit {
                return Err(invalid(format!("missing required parameter `{name}` for template `{}`", template.name)));
            }
            return Ok(false);
        }
    }
    let limit = if limit == 0 { template.max_rows } else { limit.min(template.max_rows) };
    values.insert(LIMIT_PARAM.to_string(), Value::Int(i64::from(limit)));
    Ok(true)
}

#[cfg(test)]
mod tests {
    use fedsearch_proto::types::{Filters, TimeRange};

    use super::*;
    use crate::{config::SqlAdapterConfig, sql::Engine};

    const YAML: &str = r#"
server: {listen: '127.0.0.1:0'}
database: {url: 'sqlite::memory:'}
source: {name: shop}
list_attributes: [business_lines]
templates:
  - name: order_by_number
    sql: "SELECT 1 FROM orders o WHERE o.order_no = :order_no AND {permission}"
    permission: "o.business_line IN (:user.business_lines)"
    params: {order_no: {type: string, required: true, pattern: 'SO\d{8}'}}
    match: {patterns: ['(?P<order_no>SO\d{8})']}
    hit: {id: order_no, title: order_no, doc_type: order}
  - name: refunds
    sql: "SELECT 1 FROM refunds r WHERE (:order_no IS NULL OR r.order_no = :order_no) AND (:customer_id IS NULL OR r.customer_id = :customer_id) AND {permission} LIMIT :limit"
    permission: "r.business_line IN (:user.business_lines)"
    max_rows: 5
    params:
      order_no: {type: string, pattern: 'SO\d{8}'}
      customer_id: {type: string, pattern: 'C\d{4}'}
      from: {type: timestamp, default: "now-30d"}
    match: {captures: ['(?P<order_no>SO\d{8})'], keywords: [退款, refund]}
    hit: {id: refund_id, title: refund_id, doc_type: refund}
  - name: customer_orders
    sql: "SELECT 1 FROM orders o WHERE o.customer_id IN (:customer_id) AND {permission} LIMIT :limit"
    permission: "o.business_line IN (:user.business_lines)"
    params: {customer_id: {type: string, required: true, multi: true, pattern: 'C\d{4}'}}
    match: {patterns: ['(?P<customer_id>C\d{4})'], keywords: [订单, orders]}
    hit: {id: order_no, title: order_no, doc_type: order}
  - name: orders_placed
    sql: "SELECT 1 FROM orders o WHERE o.placed_at >= :from AND (:to IS NULL OR o.placed_at < :to) AND {permission} LIMIT :limit"
    permission: "o.business_line IN (:user.business_lines)"
    params: {from: {type: timestamp, required: true}, to: {type: timestamp}}
    match: {keywords: [placed, 下单]}
    hit: {id: order_no, title: order_no, doc_type: order}
  - name: invoices_by_status
    sql: "SELECT 1 FROM invoices i WHERE i.status IN (:status) AND {permission} LIMIT :limit"
    permission: "i.business_line IN (:user.business_lines)"
    params:
      status:
        type: string
        multi: true
        default: "overdue"
        values: {overdue: overdue, unpaid: "open,overdue", 未付: "open,overdue", dispute: disputed, 争议: disputed, paid: paid, "not paid": "open,overdue"}
    match: {keywords: [invoice, 发票]}
    hit: {id: invoice_no, title: invoice_no, doc_type: invoice}
"#;

    fn catalog() -> Catalog {
        let cfg: SqlAdapterConfig = fedsearch_core::config::from_yaml_str(YAML).unwrap();
        Catalog::compile(&cfg, Engine::Sqlite).unwrap()
    }

    fn q(text: &str) -> SubQuery {
        SubQuery { id: "1".into(), text: text.into(), limit: 10, ..Default::default() }
    }

    fn instant(s: &str) -> Value {
        Value::Instant(chrono::DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&chrono::Utc))
    }

    fn names(plan: &Plan<'_>) -> Vec<String> {
        plan.runs.iter().map(|r| r.template.name.clone()).collect()
    }

    #[test]
    fn a_linked_name_fills_the_parameter_and_stands_in_for_the_pattern() {
        let c = catalog();
        let named = linked(&[("order_no", &["SO20261003"])]);
        let plan = plan(&c, &q("张伟的手表订单怎么样了"), &named).unwrap();
        assert_eq!(names(&plan), ["order_by_number"]);
        assert_eq!(plan.runs[0].values["order_no"], Value::Text("SO20261003".into()));
        let bad = linked(&[("order_no", &["not an order"])]);
        assert!(plan_names(&c, "张伟的手表订单怎么样了", &bad).is_empty(), "a value outside the schema is no link");
    }

    fn linked(values: &[(&str, &[&str])]) -> Linked {
        Linked {
            values: values.iter().map(|(p, v)| (p.to_string(), v.iter().map(|v| v.to_string()).collect())).collect(),
            capped: BTreeMap::new(),
        }
    }

    #[test]
    fn a_list_parameter_gets_every_linked_value_and_a_single_one_the_first() {
        let c = catalog();
        let mut named = linked(&[("customer_id", &["C1003", "nobody", "C1001"])]);
        let plan = plan(&c, &q("张伟和李娜的退款和订单"), &named).unwrap();
        assert_eq!(names(&plan), ["refunds", "customer_orders"]);
        assert_eq!(plan.runs[0].values["customer_id"], Value::Text("C1003".into()), "single-valued: the first named");
        assert_eq!(
            plan.runs[1].values["customer_id"],
            Value::List(vec!["C1003".into(), "C1001".into()]),
            "a list: every value that fits the schema, in the order named"
        );
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
        named.capped.insert("customer_id".into(), 3);
        let plan = super::plan(&c, &q("张伟和李娜的退款和订单"), &named).unwrap();
        assert_eq!(plan.notes, ["the question names more than 3 values for `customer_id`; the first 3 are used"]);
        let plan = super::plan(&c, &q("张伟和李娜的退款"), &named).unwrap();
        assert_eq!(names(&plan), ["refunds"]);
        assert!(plan.notes.is_empty(), "a single-valued parameter was never going to take them all");
    }

    fn plan_names(c: &Catalog, text: &str, linked: &Linked) -> Vec<String> {
        names(&plan(c, &q(text), linked).unwrap())
    }

    #[test]
    fn order_number_in_text_captures_into_the_parameter() {
        let c = catalog();
        let plan = plan(&c, &q("订单SO20261001为什么还没发货"), &Linked::default()).unwrap();
        assert_eq!(names(&plan), ["order_by_number"]);
        assert_eq!(plan.runs[0].values["order_no"], Value::Text("SO20261001".into()));
    }

    #[test]
    fn several_matching_templates_all_run() {
        let c = catalog();
        let plan = plan(&c, &q("refund for SO20261003?"), &Linked::default()).unwrap();
        assert_eq!(names(&plan), ["order_by_number", "refunds"]);
        assert_eq!(plan.runs[1].values["order_no"], Value::Text("SO20261003".into()));
        assert_eq!(plan.runs[1].values["limit"], Value::Int(5), "min(max_rows, limit)");
    }

    #[test]
    fn a_keyword_in_the_routers_terms_counts_as_in_the_question() {
        let c = catalog();
        // 退款 is the question's word; the router's glossary adds "Refund" to its terms.
        let mut query = q("SO20261003 能退钱吗");
        assert_eq!(plan_names(&c, &query.text, &Linked::default()), ["order_by_number"]);
        query.terms = vec!["退钱".into(), "Refund".into()];
        assert_eq!(names(&plan(&c, &query, &Linked::default()).unwrap()), ["order_by_number", "refunds"]);
        // Two neighbouring terms make no keyword between them.
        let mut split = q("C0001");
        split.terms = vec!["订".into(), "单".into()];
        assert!(plan(&c, &split, &Linked::default()).unwrap().runs.is_empty());
    }

    #[test]
    fn no_match_is_a_note_not_an_error() {
        let c = catalog();
        let plan = plan(&c, &q("what is the weather"), &Linked::default()).unwrap();
        assert!(plan.runs.is_empty());
        assert!(plan.notes.iter().any(|n| n.contains("no template matched")), "{:?}", plan.notes);
    }

    #[test]
    fn explicit_template_checks_params_and_names_them() {
        let c = catalog();
        let mut query = q("");
        query.template = "order_by_number".into();
        let err = plan(&c, &query, &Linked::default()).unwrap_err();
        assert_eq!(
            err,
            AdapterError::InvalidArgument(
                "missing required parameter `order_no` for template `order_by_number`".into()
            )
        );
        query.params.insert("order_no".into(), "1' OR '1'='1".into());
        let err = plan(&c, &query, &Linked::default()).unwrap_err().to_string();
        assert!(err.contains("`order_no`") && !err.contains("OR"), "{err}");
        query.params.clear();
        query.params.insert("user.business_lines".into(), "retail".into());
        assert!(
            matches!(plan(&c, &query, &Linked::default()), Err(AdapterError::InvalidArgument(m)) if m.contains("no parameter"))
        );
        query.template = "drop table; --".into();
        let err = plan(&c, &query, &Linked::default()).unwrap_err().to_string();
        assert_eq!(err, "unknown template (not a valid name)");
    }

    #[test]
    fn time_range_and_doc_types_filters_apply() {
        let c = catalog();
        let mut query = q("refunds");
        let from = fedsearch_core::time::parse_rfc3339("2026-11-01T00:00:00Z").unwrap();
        query.filters = Some(Filters {
            time_range: Some(TimeRange { from: Some(from), to: None }),
            doc_types: vec!["refund".into()],
            ..Default::default()
        });
        let plan = plan(&c, &query, &Linked::default()).unwrap();
        assert_eq!(names(&plan), ["refunds"]);
        assert_eq!(plan.runs[0].values["from"], instant("2026-11-01T00:00:00Z"));
        assert!(!plan.runs[0].values.contains_key("order_no"), "optional and absent: bound as NULL");
    }

    #[test]
    fn a_list_parameter_takes_every_value_word_the_question_holds() {
        let c = catalog();
        let status = |text: &str| {
            let plan = plan(&c, &q(text), &Linked::default()).unwrap();
            let run = plan.runs.iter().find(|r| r.template.name == "invoices_by_status").unwrap();
            run.values["status"].clone()
        };
        let list = |codes: &[&str]| Value::List(codes.iter().map(|c| c.to_string()).collect());
        // Two words, and a word whose code is two values: each value once (longest words first).
        assert_eq!(status("which invoices are unpaid or in dispute"), list(&["disputed", "open", "overdue"]));
        assert_eq!(status("哪些发票有争议"), list(&["disputed"]));
        assert_eq!(status("list the invoices"), list(&["overdue"]), "no value word: the default");
        // A word inside a longer one read already is not read again; elsewhere it is.
        assert_eq!(status("invoices not paid yet"), list(&["open", "overdue"]));
        assert_eq!(status("invoices not paid, and those paid late"), list(&["open", "overdue", "paid"]));
    }

    #[test]
    fn a_period_no_template_matched_runs_the_templates_that_list_a_period() {
        let c = catalog();
        let with_period = |text: &str| {
            let mut query = q(text);
            query.filters = Some(Filters {
                time_range: Some(TimeRange {
                    from: Some(prost_types::Timestamp { seconds: 1_780_000_000, nanos: 0 }),
                    to: Some(prost_types::Timestamp { seconds: 1_780_600_000, nanos: 0 }),
                }),
                ..Default::default()
            });
            plan(&c, &query, &Linked::default()).unwrap()
        };
        // No keyword of any template: the period's rows of every template that lists a period.
        let p = with_period("最近一周都进了哪些单？");
        assert_eq!(names(&p), ["orders_placed"]);
        assert!(!p.notes.iter().any(|n| n.contains("no template matched")), "{:?}", p.notes);
        // A keyword matched: only what it selects (refunds), not the period's other lists.
        assert_eq!(names(&with_period("最近一周的退款")), ["refunds"]);
        // No period: nothing runs.
        let p = plan(&c, &q("都进了哪些单？"), &Linked::default()).unwrap();
        assert!(p.runs.is_empty() && p.notes.iter().any(|n| n.contains("no template matched")));
    }

    #[test]
    fn relative_defaults_are_read_against_the_questions_moment() {
        let c = catalog();
        let mut query = q("refunds");
        query.as_of = Some(fedsearch_core::time::parse_rfc3339("2026-07-20T10:00:00Z").unwrap());
        let plan = plan(&c, &query, &Linked::default()).unwrap();
        assert_eq!(plan.runs[0].values["from"], instant("2026-06-20T10:00:00Z"), "now-30d from as_of");
        query.params.insert("from".into(), "now-1d".into());
        let plan = super::plan(&c, &query, &Linked::default()).unwrap();
        assert_eq!(plan.runs[0].values["from"], instant("2026-07-19T10:00:00Z"));
    }
}
