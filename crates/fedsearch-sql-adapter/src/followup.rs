//! Follow-up lookups: a template may name templates to run next with parameters taken from
//! the columns of its rows (a customer found by phone → that customer's orders → each order's
//! shipment), so a question that names a customer but no order gets the whole chain.
//!
//! ```yaml
//! templates:
//!   - name: customer_by_phone
//!     follow_ups:
//!       - template: customer_recent_orders
//!         params: {customer_id: customer_id}   # target parameter: column of this row
//! follow_up_limits: {max_depth: 2, max_fan_out: 5, max_runs: 20}
//! ```
//!
//! Each step is a whitelisted template like any other: its values are checked against its
//! parameter schema (a row whose value does not fit starts nothing), and it runs under its own
//! permission predicate bound from the same user. Steps run breadth-first: at most `max_depth`
//! steps after the first lookup, the first `max_fan_out` rows of a lookup each start its
//! follow-ups, at most `max_runs` follow-up statements per sub-query, and one (template,
//! values) pair runs once. Every step shares the sub-query's deadline. Hits of a follow-up carry
//! `via` (the chain of templates, `customer_by_phone > customer_recent_orders`) and `via_row`
//! (the id of the row that started it).
//!
//! Keyed follow-ups ([`keyed`]) need no config: a template the question asks for by its keywords
//! but not by its patterns runs with the key its patterns capture taken from a first lookup's row.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use fedsearch_adapter_kit::SubQuery;

use crate::{
    db::Record,
    mapping, select,
    template::{Catalog, Template, Value},
};

/// One follow-up statement to run.
#[derive(Debug)]
pub struct Next<'a> {
    pub template: &'a Template,
    pub values: BTreeMap<String, Value>,
    /// The chain of templates that led here, this one last.
    pub via: String,
    /// The id of the row whose columns gave the values.
    pub parent: String,
}

/// The follow-ups of `from`'s `rows` (reached by `via`), skipping (template, values) pairs in
/// `seen` and adding the new ones to it. `limit` is the sub-query's row limit.
pub fn next<'a>(
    catalog: &'a Catalog,
    from: &Template,
    rows: &[Record],
    via: &str,
    limit: u32,
    now: DateTime<Utc>,
    seen: &mut HashSet<String>,
) -> Vec<Next<'a>> {
    let fan_out = catalog.follow_up_limits.max_fan_out as usize;
    let mut out = Vec::new();
    for row in rows.iter().take(fan_out) {
        let parent = mapping::row_id(from, row).unwrap_or_default();
        for f in &from.follow_ups {
            let Some(target) = catalog.template(&f.template) else { continue };
            let mut values = BTreeMap::new();
            let mut fits = true;
            for (param, col) in &f.params {
                match mapping::cell_text(row, col).map(|raw| target.params[param].parse_at(param, &raw, now)) {
                    Some(Ok(v)) => {
                        values.insert(param.clone(), v);
                    }
                    // NULL, missing or outside the schema: this row starts nothing.
                    _ => fits = false,
                }
            }
            let Some(values) = fits.then(|| ready(target, values, limit, now, seen)).flatten() else { continue };
            out.push(Next {
                template: target,
                values,
                via: format!("{via} > {}", target.name),
                parent: parent.clone(),
            });
        }
    }
    out
}

/// `values` completed with the target's defaults and the row limit, unless a required
/// parameter is still missing or the (template, values) pair is in `seen` (which it joins).
fn ready(
    target: &Template,
    mut values: BTreeMap<String, Value>,
    limit: u32,
    now: DateTime<Utc>,
    seen: &mut HashSet<String>,
) -> Option<BTreeMap<String, Value>> {
    let complete = matches!(select::finish(target, limit, &mut values, false, now), Ok(true));
    (complete && seen.insert(format!("{}\u{0}{values:?}", target.name))).then_some(values)
}

/// Keyed follow-ups, which need no config: a template the question asks for by its keywords
/// ("what did this container cost" → the charges of a booking), keyed by a parameter its
/// patterns capture (`booking_no`) that the question does not name, runs with that parameter
/// taken from the same-named column of a row the first lookups found (the booking that carries
/// the container). `ran` are the templates that ran already. None when the sub-query names its
/// template (the caller chose), and never a template its `doc_types` filter leaves out. Bounded
/// like `follow_ups`: the first `max_fan_out` rows of each lookup, and the caller's run limit.
pub fn keyed<'a>(
    catalog: &'a Catalog,
    query: &SubQuery,
    first: &[(&Template, Vec<Record>)],
    ran: &HashSet<&str>,
    now: DateTime<Utc>,
    seen: &mut HashSet<String>,
) -> Vec<Next<'a>> {
    if !query.template.is_empty() {
        return Vec::new();
    }
    let haystack = select::keyword_haystack(query);
    let limit = query.limit;
    let fan_out = catalog.follow_up_limits.max_fan_out as usize;
    let targets: Vec<&Template> = catalog
        .templates
        .iter()
        .filter(|t| !ran.contains(t.name.as_str()) && asked_for(t, &haystack))
        .filter(|t| select::admits_doc_type(query, t))
        .collect();
    let mut out = Vec::new();
    for (from, rows) in first {
        for row in rows.iter().take(fan_out) {
            let parent = mapping::row_id(from, row).unwrap_or_default();
            for target in &targets {
                for key in target.patterns.iter().flat_map(|re| re.capture_names().flatten()) {
                    let Some(Ok(v)) =
                        mapping::cell_text(row, key).map(|raw| target.params[key].parse_at(key, &raw, now))
                    else {
                        continue;
                    };
                    let Some(values) = ready(target, BTreeMap::from([(key.to_string(), v)]), limit, now, seen) else {
                        continue;
                    };
                    out.push(Next {
                        template: target,
                        values,
                        via: format!("{} > {}", from.name, target.name),
                        parent: parent.clone(),
                    });
                }
            }
        }
    }
    out
}

/// Whether the question asks for `template` by one of its keywords (a template without keywords
/// is asked for by its patterns alone, which the question did not match).
fn asked_for(template: &Template, haystack: &str) -> bool {
    !template.patterns.is_empty() && template.keywords.iter().any(|k| haystack.contains(k.as_str()))
}
