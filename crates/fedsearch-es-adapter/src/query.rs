//! Translation of a unified sub-query into Elasticsearch / OpenSearch query DSL.
//!
//! This is the only module that writes DSL. Every value that comes from the caller (text,
//! filter values, user subject and groups, document ids) is placed into a JSON value slot of a
//! `multi_match`, `term`, `terms`, `range` or `ids` query — never into a query string — so it
//! cannot change the query's structure. Field names come from the config only; an `equals` key
//! is used as a field name only when it is in the source's `filterable_fields` allow-list.
//!
//! Scoring never is all-terms-or-nothing. `bool.must` holds one `bool.should` with
//! `minimum_should_match: 1` over:
//! - the question as asked (`original_text`, else `text`): a `multi_match` of the source's
//!   `match_type` with its `minimum_should_match` (the lenient `2<30%` in the shipped config);
//! - the router's rewrite `text`, the same way, only when it differs from the question and is
//!   not made of the terms alone (so nothing is sent twice);
//! - the extracted `terms` (with other-language glossary synonyms), joined, `operator: or`:
//!   a document that matches any one of them can be returned, ranked by how many it matches;
//! - the other forms of the question's English words (`surveyors` for "surveyor", `damage` for
//!   "damaged": [`fedsearch_core::text::word_forms`]), `operator: or`, at `inflection_boost`:
//!   an index without stemming keeps them apart;
//! - an `ids` clause for the entities (the document whose own id the question names), and one
//!   exact `term` per entity and `id_fields` field, with a flat boost, so the document that
//!   *is* `SO20261001` ranks first.
//!
//! Within a bounded time window (both ends, at most a year: "last week", 昨天, "October") the
//! words are a `bool.should` instead of a `must`: every document of the window may answer
//! ("what happened last week?"), those showing the words first, then the newest. When the
//! window is the router's reading of the question's time phrase (`time_range_from_question`)
//! rather than the caller's filter, it ranks instead: a document outside it that shows a word
//! follows every document inside it ([`window_first`]), since the phrase may say when something
//! in the documents happens ("sailings this week") rather than when a document was written.
//! A document that names a day of a window of at most eight days as documents write it
//! (2026-07-03, 7月3日, July 3, week 27; in the user's zone) counts as inside it
//! ([`names_the_window`]): the notice written before the days it announces.
//!
//! The permission filter sits in `bool.filter` of every query, so a document the user may not
//! see never leaves the cluster. Only DSL that both Elasticsearch 8/9 and OpenSearch 2/3 accept
//! is used: `bool`, `multi_match`, `term(s)`, `range`, `ids`, `match_all`, `constant_score`,
//! `function_score` (a `filter` function with a `weight`), `highlight`,
//! `_source` includes, `sort`, `size`, `timeout`, `track_total_hits`.

use std::time::Duration;

use chrono::SecondsFormat;
use fedsearch_adapter_kit::{AdapterError, SubQuery, UserContext};
use fedsearch_proto::types::Filters;
use serde_json::{Map, Value, json};

use crate::config::{DEFAULT_ENTITY_BOOST, MatchType, Operator, SourceConfig, parse_boosted};

/// Longest query text accepted, in characters (longer text would only hit clause limits).
pub const MAX_TEXT_CHARS: usize = 1000;
/// At most this many entities are boosted (the rest only count as words of the question).
pub const MAX_ENTITIES: usize = 16;
/// `tie_breaker` of `best_fields` / `cross_fields`: the best field (or analyzer group) counts
/// fully, every other matching one a little.
const TIE_BREAKER: f64 = 0.3;

/// Highlight markers; [`crate::hits`] strips every tag from the snippet.
pub(crate) const PRE_TAG: &str = "<em>";
const POST_TAG: &str = "</em>";

/// `public:true OR allowed_groups ∈ user.groups OR allowed_users = user.subject`.
pub fn permission_filter(source: &SourceConfig, user: &UserContext) -> Value {
    let f = &source.fields;
    // a field inside a `nested` object is only reachable through a `nested` query on its path
    let on = |field: &str, clause: Value| match f.nested_path_of(field) {
        Some(path) => json!({ "nested": { "path": path, "query": clause } }),
        None => clause,
    };
    let mut should = Vec::new();
    if let Some(public) = &f.public {
        should.push(on(public, json!({ "term": { public: true } })));
    }
    let groups: Vec<&str> = user.groups.iter().map(String::as_str).filter(|g| !g.is_empty()).collect();
    if !groups.is_empty() {
        should.push(on(&f.allowed_groups, json!({ "terms": { &f.allowed_groups: groups } })));
    }
    if let Some(users) = &f.allowed_users
        && !user.subject.is_empty()
    {
        should.push(on(users, json!({ "term": { users: user.subject } })));
    }
    if should.is_empty() {
        // Nothing can grant access: match no document.
        return json!({ "bool": { "must_not": [{ "match_all": {} }] } });
    }
    json!({ "bool": { "should": should, "minimum_should_match": 1 } })
}

/// The `range` clause of `filters.time_range` on the source's timestamp field, if any.
fn time_clause(source: &SourceConfig, filters: &Filters) -> Result<Option<Value>, AdapterError> {
    let Some(range) = &filters.time_range else { return Ok(None) };
    let bound = |t: &Option<prost_types::Timestamp>, key: &str| -> Result<Option<String>, AdapterError> {
        t.as_ref()
            .map(|t| {
                fedsearch_core::time::to_chrono(t).map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true)).ok_or_else(
                    || AdapterError::InvalidArgument(format!("filters.time_range.{key} is not a valid time")),
                )
            })
            .transpose()
    };
    let from = bound(&range.from, "from")?;
    let to = bound(&range.to, "to")?;
    if let (Some(a), Some(b)) = (&range.from, &range.to)
        && (a.seconds, a.nanos) > (b.seconds, b.nanos)
    {
        return Err(AdapterError::InvalidArgument("filters.time_range.from is after filters.time_range.to".into()));
    }
    let mut r = Map::new();
    if let Some(from) = from {
        r.insert("gte".into(), from.into());
    }
    if let Some(to) = to {
        r.insert("lte".into(), to.into());
    }
    if r.is_empty() {
        return Ok(None);
    }
    r.insert("format".into(), "strict_date_optional_time".into());
    Ok(Some(json!({ "range": { &source.fields.timestamp: r } })))
}

/// The structured filters of a sub-query as `bool.filter` clauses, but the time range (see
/// [`time_clause`]).
fn filter_clauses(source: &SourceConfig, filters: &Filters) -> Result<Vec<Value>, AdapterError> {
    let f = &source.fields;
    let mut clauses = Vec::new();
    if !filters.doc_types.is_empty() {
        clauses.push(json!({ "terms": { &f.doc_type: filters.doc_types } }));
    }
    for tag in &filters.tags {
        clauses.push(json!({ "term": { &f.tags: tag } }));
    }
    let mut keys: Vec<&String> = filters.equals.keys().collect();
    keys.sort();
    for key in keys {
        if !source.filterable_fields.iter().any(|k| k == key) {
            let allowed = if source.filterable_fields.is_empty() {
                "none".to_string()
            } else {
                source.filterable_fields.join(", ")
            };
            return Err(AdapterError::InvalidArgument(format!(
                "filters.equals key `{key}` is not filterable in source `{}` (filterable: {allowed})",
                source.name
            )));
        }
        clauses.push(json!({ "term": { key.as_str(): filters.equals[key] } }));
    }
    Ok(clauses)
}

/// Fields `_source` returns for a hit (`with_body` for Fetch).
fn source_includes(source: &SourceConfig, with_body: bool) -> Vec<String> {
    let f = &source.fields;
    let mut out: Vec<String> = [Some(&f.title), Some(&f.timestamp), Some(&f.doc_type), f.id.as_ref(), f.url.as_ref()]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if with_body {
        out.push(f.body.clone());
    }
    let versions = source.version_fields.iter().flat_map(|v| v.named()).filter_map(|(_, f)| f);
    for m in source.metadata_fields.iter().chain(versions) {
        if !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

fn es_duration(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// The search fields as `multi_match` takes them (`title^3`).
fn search_fields(source: &SourceConfig) -> Vec<String> {
    source
        .search_fields
        .iter()
        .filter_map(|s| parse_boosted(s))
        .map(|(field, boost)| match boost {
            Some(b) => format!("{field}^{b}"),
            None => field.to_string(),
        })
        .collect()
}

/// One `multi_match` of `text` over `fields`. `minimum_should_match` is left out for `phrase`
/// (it has no meaning there) and `tie_breaker` for `most_fields` (which sums every field).
/// `operator` is the source's (`None`: the engine's default); the terms clause passes `Or`.
fn multi_match(
    fields: &[String],
    text: &str,
    match_type: MatchType,
    msm: Option<&str>,
    operator: Option<Operator>,
) -> Value {
    let mut mm = json!({ "query": text, "fields": fields, "type": match_type.as_str() });
    if matches!(match_type, MatchType::BestFields | MatchType::CrossFields | MatchType::Phrase) {
        mm["tie_breaker"] = TIE_BREAKER.into();
    }
    if let Some(op) = operator
        && match_type != MatchType::Phrase
    {
        mm["operator"] = op.as_str().into();
    }
    if let Some(msm) = msm
        && match_type != MatchType::Phrase
    {
        mm["minimum_should_match"] = msm.into();
    }
    json!({ "multi_match": mm })
}

/// The extracted terms, each once, joined by spaces and cut at [`MAX_TEXT_CHARS`] on a term
/// boundary.
fn joined_terms(terms: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::new();
    for t in terms.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        if seen.contains(&t) {
            continue;
        }
        if out.chars().count() + t.chars().count() + 1 > MAX_TEXT_CHARS {
            break;
        }
        seen.push(t);
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// The terms the question holds (case-insensitively), and the rest: the router's glossary
/// expansions in the other language. With no question every term is its own.
fn split_expansions(terms: &[String], question: &str) -> (Vec<String>, Vec<String>) {
    let asked = question.to_lowercase();
    terms.iter().cloned().partition(|t| asked.is_empty() || asked.contains(&t.trim().trim_matches('"').to_lowercase()))
}

/// The other forms of the English words of `terms` ([`fedsearch_core::text::word_forms`]) that
/// neither the terms nor the question hold. Called with the question's own terms: the forms of
/// a glossary translation (the English for a Chinese question) measured worse.
fn inflections(terms: &[String], question: &str) -> Vec<String> {
    let asked: std::collections::HashSet<String> =
        fedsearch_core::text::words(&question.to_lowercase()).map(str::to_string).collect();
    let mut forms: Vec<String> = Vec::new();
    for t in terms.iter().map(|t| t.trim().to_lowercase()).filter(|t| !t.contains(' ')) {
        for f in fedsearch_core::text::word_forms(&t) {
            if !asked.contains(&f) && !terms.iter().any(|x| x.trim().eq_ignore_ascii_case(&f)) && !forms.contains(&f) {
                forms.push(f);
            }
        }
    }
    forms
}

/// The alternatives of `bool.should` (see the module docs); empty when there is nothing to
/// score by.
fn scoring_clauses(source: &SourceConfig, query: &SubQuery, text: &str, original: &str) -> Vec<Value> {
    let fields = search_fields(source);
    let msm = source.minimum_should_match.as_deref();
    let question = if original.is_empty() { text } else { original };
    // At boost 1 the expansions stay in the terms' clause (one clause, as measured before).
    let (own, expansions) = if source.expansion_boost == 1.0 {
        (query.terms.clone(), Vec::new())
    } else {
        split_expansions(&query.terms, question)
    };
    let mut should = Vec::new();
    if !question.is_empty() {
        should.push(multi_match(&fields, question, source.match_type, msm, source.operator));
    }
    // The router's `terms` rewrite is the terms joined: already an alternative below.
    let in_terms = text.split_whitespace().all(|w| query.terms.iter().any(|t| t.trim() == w));
    if !text.is_empty() && text != question && !in_terms {
        should.push(multi_match(&fields, text, source.match_type, msm, source.operator));
    }
    // A phrase of joined terms would match nothing; terms use the default type instead.
    let match_type = match source.match_type {
        MatchType::Phrase => MatchType::default(),
        other => other,
    };
    // Off by default: no work for a clause that is not sent.
    let forms = if source.inflection_boost > 0.0 {
        inflections(&split_expansions(&own, question).0, question)
    } else {
        Vec::new()
    };
    let own = joined_terms(&own);
    if !own.is_empty() {
        should.push(multi_match(&fields, &own, match_type, None, Some(Operator::Or)));
    }
    let expansions = joined_terms(&expansions);
    if !expansions.is_empty() && source.expansion_boost > 0.0 {
        let mut clause = multi_match(&fields, &expansions, match_type, None, Some(Operator::Or));
        clause["multi_match"]["boost"] = source.expansion_boost.into();
        should.push(clause);
    }
    if !forms.is_empty() {
        let mut clause = multi_match(&fields, &joined_terms(&forms), match_type, None, Some(Operator::Or));
        clause["multi_match"]["boost"] = source.inflection_boost.into();
        should.push(clause);
    }
    let mut entities: Vec<&str> = Vec::new();
    for e in query.entities.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        if !entities.contains(&e) && entities.len() < MAX_ENTITIES {
            entities.push(e);
        }
    }
    // The document whose own id the question names, whatever `id_fields` says.
    if !entities.is_empty() {
        should.push(json!({ "ids": { "values": entities, "boost": DEFAULT_ENTITY_BOOST } }));
    }
    for (field, boost) in source.id_fields.iter().filter_map(|f| parse_boosted(f)) {
        let boost = boost.unwrap_or(DEFAULT_ENTITY_BOOST);
        for e in &entities {
            should.push(json!({ "term": { field: { "value": e, "boost": boost } } }));
        }
    }
    should
}

/// The `_search` body for one sub-query. `es_timeout` is the server-side search timeout.
pub fn search_body(source: &SourceConfig, query: &SubQuery, es_timeout: Duration) -> Result<Value, AdapterError> {
    let user = query.user.clone().unwrap_or_default();
    let filters = query.filters.clone().unwrap_or_default();
    let text = query.text.trim();
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(AdapterError::InvalidArgument(format!("text is longer than {MAX_TEXT_CHARS} characters")));
    }
    let original = query.original_text.trim();
    if original.chars().count() > MAX_TEXT_CHARS {
        return Err(AdapterError::InvalidArgument(format!("original_text is longer than {MAX_TEXT_CHARS} characters")));
    }
    let mut filter = vec![permission_filter(source, &user)];
    let time = time_clause(source, &filters)?;
    let structured = filter_clauses(source, &filters)?;
    let scoring = scoring_clauses(source, query, text, original);
    if scoring.is_empty() && structured.is_empty() && time.is_none() {
        return Err(AdapterError::InvalidArgument("text must not be empty unless a filter is given".into()));
    }
    let windowed = is_bounded_window(&filters) || is_open_past(&filters);
    let has_words = !scoring.is_empty();
    // The question's own time phrase, with words to rank by: the window ranks, it does not drop.
    let window_ranks = windowed && query.time_range_from_question && has_words;
    let query_clause = match time {
        Some(time) if window_ranks => {
            filter.extend(structured);
            let names = names_the_window(source, &filters, &query.time_zone);
            window_first(scoring, time, names, filter)
        }
        time => {
            filter.extend(time);
            filter.extend(structured);
            hard_query(scoring, filter, windowed)
        }
    };

    let fragments = source.snippet_fragments.max(1);
    let mut body = json!({
        "query": query_clause,
        "size": query.limit,
        "timeout": es_duration(es_timeout),
        "track_total_hits": false,
        "_source": { "includes": source_includes(source, false) },
        "highlight": {
            "pre_tags": [PRE_TAG],
            "post_tags": [POST_TAG],
            "fields": { &source.fields.body: {
                "type": "unified",
                // Whole sentences: the adapter cuts each around its match at a space
                // (hits::passage); the engine would cut at its word breaks, inside `E-218`.
                "fragment_size": 0,
                "number_of_fragments": fragments,
                "no_match_size": source.snippet_chars,
            } },
        },
    });
    let newest = json!({ &source.fields.timestamp: { "order": "desc", "unmapped_type": "date" } });
    if !has_words {
        // Without text every hit scores the same: newest first is the useful order.
        body["sort"] = json!([newest, "_doc"]);
    } else if windowed {
        // Documents of the window that show none of the words tie (at 0, or at 1 when the window
        // ranks): newest first among them.
        body["sort"] = json!(["_score", newest, "_doc"]);
    }
    Ok(body)
}

/// The query of a caller's filters: without words every document of the filters, newest
/// first; within a bounded window every document of it, ranked by the words
/// ("what happened last week"); else the documents that match a word.
fn hard_query(scoring: Vec<Value>, filter: Vec<Value>, windowed: bool) -> Value {
    if scoring.is_empty() {
        return json!({ "bool": { "must": [{ "match_all": {} }], "filter": filter } });
    }
    let words = json!({ "bool": { "should": scoring, "minimum_should_match": 1 } });
    if windowed {
        json!({ "bool": { "should": [words], "filter": filter } })
    } else {
        json!({ "bool": { "must": [words], "filter": filter } })
    }
}

/// Score of a document outside the question's window is its words' score times this: below
/// every document inside it (which scores at least 1) while the words score under 1,000.
const OUTSIDE_WINDOW: f64 = 0.001;

/// The query when the window is the question's own time phrase (`time_range_from_question`):
/// every document of the window scores 1 plus its words' score, so it may answer with no word
/// ("what happened last week") and keeps today's order by words; a document outside it that
/// matches a word comes after all of them ("is the surcharge charged on sailings this week?"
/// finds the notice written before the week). `function_score` is both Elasticsearch's and
/// OpenSearch's.
///
/// `names`: a document that names a day of the window ([`names_the_window`]) counts as inside it
/// — the notice written before the days it announces.
fn window_first(scoring: Vec<Value>, time: Value, names: Option<Value>, filter: Vec<Value>) -> Value {
    let words = json!({ "bool": { "should": scoring, "minimum_should_match": 1 } });
    let (about, not_about) = match names {
        Some(names) => (
            json!({ "bool": { "should": [time.clone(), names.clone()], "minimum_should_match": 1 } }),
            vec![time, names],
        ),
        None => (time.clone(), vec![time]),
    };
    let inside = json!({ "constant_score": { "filter": about, "boost": 1.0 } });
    json!({ "function_score": {
        "query": { "bool": { "should": [inside, words], "minimum_should_match": 1, "filter": filter } },
        "functions": [{ "filter": { "bool": { "must_not": not_about } }, "weight": OUTSIDE_WINDOW }],
        "score_mode": "multiply",
        "boost_mode": "multiply",
    } })
}

/// The longest window whose days a document may name ([`names_the_window`]): eight days (a
/// week, and "this week" reaching back for what was written before it), at most 6 × 8 + 6 phrase
/// queries, each over the source's search fields (OpenSearch refuses a query of more than 1,024
/// clauses).
const NAMED_DAYS_MAX: u32 = 8;

/// How long before the window a document naming its days may be dated: "July 3" and "week 27"
/// carry no year, and a notice of another year is about another July.
const NAMED_DAYS_WRITTEN_BEFORE_DAYS: i64 = 92;

/// A clause matching the documents that name a day of the question's window as documents write
/// it (2026-07-03, 7月3日, July 3, week 27: [`fedsearch_timeexpr::written_days`]), in the user's
/// zone (`time_zone`, else UTC): a notice written before the days it announces is about them.
/// Only documents dated from [`NAMED_DAYS_WRITTEN_BEFORE_DAYS`] before the window on count.
/// `None` for a window without both ends or longer than [`NAMED_DAYS_MAX`] days.
fn names_the_window(source: &SourceConfig, filters: &Filters, time_zone: &str) -> Option<Value> {
    let range = filters.time_range.as_ref()?;
    let zone = fedsearch_timeexpr::parse_tz(time_zone).unwrap_or(chrono_tz::Tz::UTC);
    let from = fedsearch_core::time::to_chrono(range.from.as_ref()?)?;
    let first = from.with_timezone(&zone).date_naive();
    // `to` is the window's last instant (the router sends the end of its last day).
    let end = fedsearch_core::time::to_chrono(range.to.as_ref()?)?.with_timezone(&zone).date_naive().succ_opt()?;
    let fields = search_fields(source);
    let phrases: Vec<Value> = fedsearch_timeexpr::written_days(first, end, NAMED_DAYS_MAX)
        .iter()
        .map(|p| multi_match(&fields, p, MatchType::Phrase, None, None))
        .collect();
    if phrases.is_empty() {
        return None;
    }
    let written_from = from - chrono::TimeDelta::days(NAMED_DAYS_WRITTEN_BEFORE_DAYS);
    let written = json!({ "range": { &source.fields.timestamp: {
        "gte": written_from.to_rfc3339_opts(SecondsFormat::Millis, true),
        "format": "strict_date_optional_time",
    } } });
    Some(json!({ "bool": { "should": phrases, "minimum_should_match": 1, "filter": [written] } }))
}

/// The longest time window that still counts as the question's subject (see [`search_body`]).
const MAX_WINDOW_SECONDS: i64 = 366 * 24 * 3600;

/// A time range with both ends, at most [`MAX_WINDOW_SECONDS`] long: "yesterday", "last
/// week", "October". An open-ended past ("more than a week ago") is a constraint, not a subject.
fn is_bounded_window(filters: &Filters) -> bool {
    let Some(range) = &filters.time_range else { return false };
    match (&range.from, &range.to) {
        (Some(from), Some(to)) => to.seconds >= from.seconds && to.seconds - from.seconds <= MAX_WINDOW_SECONDS,
        _ => false,
    }
}

/// A time range from the epoch to a day: an open-ended past the router read from a question
/// ("every ticket we got more than a week ago"). Its documents are listed as a bounded window's
/// are; a range with no start (a caller's "before October") stays a constraint.
fn is_open_past(filters: &Filters) -> bool {
    let Some(range) = &filters.time_range else { return false };
    range.to.is_some() && range.from.as_ref().is_some_and(fedsearch_core::time::starts_at_epoch)
}

/// The Fetch query: the one document `id`, with the same permission filter as a search.
pub fn fetch_body(source: &SourceConfig, id: &str, user: &UserContext, es_timeout: Duration) -> Value {
    json!({
        "query": { "bool": {
            "must": [{ "ids": { "values": [id] } }],
            "filter": [permission_filter(source, user)],
        } },
        "size": 1,
        "timeout": es_duration(es_timeout),
        "track_total_hits": false,
        "_source": { "includes": source_includes(source, true) },
    })
}

/// Whether document `id` exists at all (count only: no field of it leaves the cluster).
pub fn exists_body(id: &str, es_timeout: Duration) -> Value {
    json!({
        "query": { "ids": { "values": [id] } },
        "size": 0,
        "timeout": es_duration(es_timeout),
        "track_total_hits": true,
        "_source": false,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use fedsearch_proto::types::TimeRange;
    use prost_types::Timestamp;

    use super::*;
    use crate::config::{FieldMapping, SourceConfig};

    fn source() -> SourceConfig {
        SourceConfig {
            name: "tickets".into(),
            index: "tickets".into(),
            description: String::new(),
            when_to_use: String::new(),
            doc_types: vec!["ticket".into()],
            fields: FieldMapping::default(),
            search_fields: vec!["title^3".into(), "title.cjk^3".into(), "body".into()],
            minimum_should_match: None,
            match_type: MatchType::CrossFields,
            operator: None,
            id_fields: vec![],
            version_fields: None,
            snippet_chars: 120,
            snippet_fragments: 3,
            metadata_fields: vec!["status".into(), "order_no".into()],
            filterable_fields: vec!["status".into(), "priority".into()],
            expansion_boost: 0.5,
            inflection_boost: 0.0,
        }
    }

    fn alice() -> UserContext {
        UserContext { subject: "alice".into(), groups: vec!["employee".into(), "support".into()], ..Default::default() }
    }

    fn query(text: &str, filters: Filters) -> SubQuery {
        SubQuery {
            id: "q1".into(),
            source: "tickets".into(),
            text: text.into(),
            filters: Some(filters),
            limit: 7,
            user: Some(alice()),
            ..Default::default()
        }
    }

    fn build(text: &str, filters: Filters) -> Result<Value, AdapterError> {
        search_body(&source(), &query(text, filters), Duration::from_millis(1500))
    }

    /// The alternatives of the scoring `bool.should`.
    fn should(body: &Value) -> &Vec<Value> {
        let scoring = &body["query"]["bool"]["must"][0]["bool"];
        assert_eq!(scoring["minimum_should_match"], 1, "{body}");
        scoring["should"].as_array().unwrap()
    }

    #[test]
    fn text_becomes_a_multi_match_over_boosted_fields() {
        let body = build("payment timeout", Filters::default()).unwrap();
        assert_eq!(
            body["query"]["bool"]["must"][0],
            json!({ "bool": { "should": [{ "multi_match": {
                "query": "payment timeout",
                "fields": ["title^3", "title.cjk^3", "body"],
                "type": "cross_fields",
                "tie_breaker": 0.3,
            } }], "minimum_should_match": 1 } })
        );
        assert_eq!(body["query"]["bool"]["must"].as_array().unwrap().len(), 1);
        assert_eq!(body["size"], 7);
        assert_eq!(body["timeout"], "1500ms");
        assert_eq!(
            body["_source"]["includes"],
            json!(["title", "updated_at", "doc_type", "url", "status", "order_no"])
        );
        assert!(body.get("sort").is_none(), "text queries rank by score");
        let hl = &body["highlight"]["fields"]["body"];
        assert_eq!(hl["fragment_size"], 0, "whole sentences: the adapter cuts them (hits::passage)");
        assert_eq!(hl["no_match_size"], 120);
        assert_eq!(hl["number_of_fragments"], 3);
    }

    #[test]
    fn minimum_should_match_is_passed_when_configured() {
        let mut s = source();
        s.minimum_should_match = Some("2<75%".into());
        let body = search_body(&s, &query("支付超时", Filters::default()), Duration::from_secs(1)).unwrap();
        assert_eq!(should(&body)[0]["multi_match"]["minimum_should_match"], "2<75%");
    }

    fn full_query() -> SubQuery {
        SubQuery {
            text: "SO20261001 refund".into(),
            original_text: "Why was the refund for order SO20261001 late?".into(),
            terms: vec!["SO20261001".into(), "refund".into(), "退款".into(), "refund".into(), " ".into()],
            entities: vec!["SO20261001".into(), "SO20261001".into()],
            ..query("", Filters::default())
        }
    }

    #[test]
    fn the_question_the_terms_and_the_entities_are_alternatives() {
        let mut s = source();
        s.minimum_should_match = Some("2<30%".into());
        s.id_fields = vec!["order_no".into(), "related^5".into()];
        let body = search_body(&s, &full_query(), Duration::from_secs(1)).unwrap();
        let fields = json!(["title^3", "title.cjk^3", "body"]);
        assert_eq!(
            body["query"]["bool"]["must"],
            json!([{ "bool": { "should": [
                { "multi_match": {
                    "query": "Why was the refund for order SO20261001 late?",
                    "fields": fields,
                    "type": "cross_fields",
                    "tie_breaker": 0.3,
                    "minimum_should_match": "2<30%",
                } },
                { "multi_match": {
                    "query": "SO20261001 refund",
                    "fields": fields,
                    "type": "cross_fields",
                    "tie_breaker": 0.3,
                    "operator": "or",
                } },
                // the glossary's translation, which the question does not hold, weighs less
                { "multi_match": {
                    "query": "退款",
                    "fields": fields,
                    "type": "cross_fields",
                    "tie_breaker": 0.3,
                    "operator": "or",
                    "boost": 0.5,
                } },
                { "ids": { "values": ["SO20261001"], "boost": DEFAULT_ENTITY_BOOST } },
                { "term": { "order_no": { "value": "SO20261001", "boost": DEFAULT_ENTITY_BOOST } } },
                { "term": { "related": { "value": "SO20261001", "boost": 5.0 } } },
            ], "minimum_should_match": 1 } }])
        );
        assert_eq!(body["query"]["bool"]["filter"][0], permission_filter(&s, &alice()));
        assert!(body.get("sort").is_none());
    }

    /// The query texts of the scoring `multi_match` clauses.
    fn texts(body: &Value) -> Vec<&Value> {
        should(body).iter().filter(|c| c.get("multi_match").is_some()).map(|c| &c["multi_match"]["query"]).collect()
    }

    #[test]
    fn at_expansion_boost_one_the_translations_stay_in_the_terms_clause() {
        let s = SourceConfig { expansion_boost: 1.0, ..source() };
        let body = search_body(&s, &full_query(), Duration::from_secs(1)).unwrap();
        let queries = texts(&body);
        assert_eq!(
            queries,
            [&json!("Why was the refund for order SO20261001 late?"), &json!("SO20261001 refund 退款")]
        );
        assert!(should(&body).iter().all(|c| c["multi_match"].get("boost").is_none()));
    }

    #[test]
    fn other_forms_of_the_questions_english_words_are_a_clause_of_their_own() {
        let s = SourceConfig { inflection_boost: 0.7, ..source() };
        let q = SubQuery {
            original_text: "Why were the refunds delayed? Is the delay over?".into(),
            terms: vec!["refunds".into(), "delayed".into(), "退款".into()],
            ..full_query()
        };
        let body = search_body(&s, &q, Duration::from_secs(1)).unwrap();
        let forms = should(&body).iter().find(|c| c["multi_match"]["boost"] == json!(0.7)).expect("a forms clause");
        // `delay` is a word of the question already, so only what it does not hold is added.
        assert_eq!(forms["multi_match"]["query"], json!("refund delaye delays delayes"));
        assert_eq!(forms["multi_match"]["operator"], json!("or"));
        let off = search_body(&source(), &q, Duration::from_secs(1)).unwrap();
        assert!(texts(&off).iter().all(|t| !t.as_str().unwrap().contains("delays")));
    }

    #[test]
    fn a_rewrite_that_differs_from_question_and_terms_is_one_more_alternative() {
        let q = SubQuery { text: "refund delay".into(), ..full_query() };
        let body = search_body(&source(), &q, Duration::from_secs(1)).unwrap();
        let queries = texts(&body);
        assert_eq!(
            queries,
            [
                &json!("Why was the refund for order SO20261001 late?"),
                &json!("refund delay"),
                &json!("SO20261001 refund"),
                &json!("退款")
            ]
        );
        assert!(should(&body)[1]["multi_match"].get("operator").is_none());

        // The text equal to the question is sent once, and without original_text it is the question.
        let q = SubQuery { text: q.original_text.clone(), terms: vec![], entities: vec![], ..q };
        assert_eq!(should(&search_body(&source(), &q, Duration::from_secs(1)).unwrap()).len(), 1);
        let q = SubQuery { original_text: String::new(), ..q };
        let body = search_body(&source(), &q, Duration::from_secs(1)).unwrap();
        assert_eq!(should(&body).len(), 1);
        assert_eq!(should(&body)[0]["multi_match"]["query"], "Why was the refund for order SO20261001 late?");
    }

    #[test]
    fn each_match_type_writes_its_own_multi_match() {
        let mut s = source();
        s.minimum_should_match = Some("2<30%".into());
        let q = SubQuery { terms: vec!["refund".into()], ..query("late refund", Filters::default()) };
        let clauses = |t: MatchType| {
            let mut s = s.clone();
            s.match_type = t;
            should(&search_body(&s, &q, Duration::from_secs(1)).unwrap()).clone()
        };
        let most = clauses(MatchType::MostFields);
        assert_eq!(most[0]["multi_match"]["type"], "most_fields");
        assert!(most[0]["multi_match"].get("tie_breaker").is_none(), "most_fields sums every field");
        assert_eq!(most[0]["multi_match"]["minimum_should_match"], "2<30%");
        assert_eq!(clauses(MatchType::BestFields)[0]["multi_match"]["type"], "best_fields");
        let phrase = clauses(MatchType::Phrase);
        assert_eq!(phrase[0]["multi_match"]["type"], "phrase");
        assert!(phrase[0]["multi_match"].get("minimum_should_match").is_none());
        assert_eq!(phrase[1]["multi_match"]["type"], "cross_fields", "terms are never a phrase");
        assert_eq!(phrase[1]["multi_match"]["operator"], "or");
    }

    #[test]
    fn terms_or_entities_alone_are_enough_to_search() {
        let mut s = source();
        s.id_fields = vec!["order_no".into()];
        let q = SubQuery { entities: vec!["SO20261001".into()], ..query("", Filters::default()) };
        let body = search_body(&s, &q, Duration::from_secs(1)).unwrap();
        assert_eq!(
            should(&body),
            &vec![
                json!({ "ids": { "values": ["SO20261001"], "boost": 20.0 } }),
                json!({ "term": { "order_no": { "value": "SO20261001", "boost": 20.0 } } })
            ]
        );
        assert!(body.get("sort").is_none());

        // Without id fields an entity still finds the document whose own id it is.
        let body = search_body(&source(), &q, Duration::from_secs(1)).unwrap();
        assert_eq!(should(&body), &vec![json!({ "ids": { "values": ["SO20261001"], "boost": 20.0 } })]);
        let nothing = SubQuery { entities: vec![], ..q.clone() };
        let err = search_body(&source(), &nothing, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, AdapterError::InvalidArgument(_)), "{err:?}");

        let many = SubQuery { entities: (0..40).map(|i| format!("SO{i:08}")).collect(), ..q };
        // One `ids` clause for all of them, one `term` per boosted entity.
        assert_eq!(should(&search_body(&s, &many, Duration::from_secs(1)).unwrap()).len(), MAX_ENTITIES + 1);
    }

    #[test]
    fn version_fields_are_returned_in_source() {
        let mut s = source();
        s.version_fields = Some(crate::config::VersionFields {
            family: Some("policy".into()),
            effective_at: Some("effective_from".into()),
            status: Some("status".into()),
            ..Default::default()
        });
        let body = search_body(&s, &query("x", Filters::default()), Duration::from_secs(1)).unwrap();
        assert_eq!(
            body["_source"]["includes"],
            json!(["title", "updated_at", "doc_type", "url", "status", "order_no", "policy", "effective_from"])
        );
    }

    #[test]
    fn the_permission_filter_is_always_in_bool_filter() {
        let body = build("x", Filters::default()).unwrap();
        assert_eq!(
            body["query"]["bool"]["filter"][0],
            json!({ "bool": { "should": [
                { "term": { "public": true } },
                { "terms": { "allowed_groups": ["employee", "support"] } },
                { "term": { "allowed_users": "alice" } },
            ], "minimum_should_match": 1 } })
        );
        assert_eq!(body["query"]["bool"]["filter"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn permission_fields_under_a_nested_path_are_wrapped_in_nested_queries() {
        let mut s = source();
        s.fields.allowed_groups = "acl.groups".into();
        s.fields.allowed_users = Some("acl.users".into());
        s.fields.public = Some("visibility.public".into());
        s.fields.nested = vec!["acl".into()];
        assert_eq!(
            permission_filter(&s, &alice()),
            json!({ "bool": { "should": [
                { "term": { "visibility.public": true } },
                { "nested": { "path": "acl", "query": { "terms": { "acl.groups": ["employee", "support"] } } } },
                { "nested": { "path": "acl", "query": { "term": { "acl.users": "alice" } } } },
            ], "minimum_should_match": 1 } })
        );
    }

    #[test]
    fn the_configured_operator_reaches_the_question_clause_only() {
        let mut s = source();
        let mut q = query("payment timeout", Filters::default());
        q.terms = vec!["payment".into(), "timeout".into(), "refund".into()];
        let clauses = |s: &SourceConfig| scoring_clauses(s, &q, "payment timeout", "");
        let unset = clauses(&s);
        assert!(unset[0]["multi_match"].get("operator").is_none(), "{unset:?}");
        s.operator = Some(Operator::And);
        let and = clauses(&s);
        assert_eq!(and[0]["multi_match"]["operator"], "and");
        assert_eq!(and[1]["multi_match"]["operator"], "or", "the terms stay alternatives: {and:?}");
        s.match_type = MatchType::Phrase;
        assert!(clauses(&s)[0]["multi_match"].get("operator").is_none(), "a phrase has no operator");
    }

    #[test]
    fn a_user_without_groups_gets_public_and_own_documents_only() {
        let user = UserContext { subject: "eve".into(), ..Default::default() };
        let f = permission_filter(&source(), &user);
        assert_eq!(
            f,
            json!({ "bool": { "should": [
                { "term": { "public": true } },
                { "term": { "allowed_users": "eve" } },
            ], "minimum_should_match": 1 } })
        );
    }

    #[test]
    fn a_source_with_nothing_that_can_grant_access_matches_nothing() {
        let mut s = source();
        s.fields.public = None;
        s.fields.allowed_users = None;
        let f = permission_filter(&s, &UserContext { subject: "eve".into(), ..Default::default() });
        assert_eq!(f, json!({ "bool": { "must_not": [{ "match_all": {} }] } }));
    }

    #[test]
    fn empty_text_needs_a_filter() {
        let err = build("  ", Filters::default()).unwrap_err();
        assert!(matches!(err, AdapterError::InvalidArgument(ref m) if m.contains("text")), "{err:?}");

        let body = build("", Filters { tags: vec!["payment_timeout".into()], ..Default::default() }).unwrap();
        assert_eq!(body["query"]["bool"]["must"][0], json!({ "match_all": {} }));
        assert_eq!(body["sort"][0]["updated_at"]["order"], "desc");
    }

    #[test]
    fn overlong_text_is_refused_and_overlong_terms_are_cut() {
        let err = build(&"支".repeat(MAX_TEXT_CHARS + 1), Filters::default()).unwrap_err();
        assert!(matches!(err, AdapterError::InvalidArgument(_)));
        assert!(build(&"支".repeat(MAX_TEXT_CHARS), Filters::default()).is_ok());
        let q = SubQuery { original_text: "支".repeat(MAX_TEXT_CHARS + 1), ..query("x", Filters::default()) };
        let err = search_body(&source(), &q, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, AdapterError::InvalidArgument(ref m) if m.contains("original_text")), "{err:?}");

        let q = SubQuery { terms: (0..500).map(|i| format!("term{i}")).collect(), ..query("x", Filters::default()) };
        let body = search_body(&source(), &q, Duration::from_secs(1)).unwrap();
        let joined = should(&body)[1]["multi_match"]["query"].as_str().unwrap();
        assert!(
            joined.chars().count() <= MAX_TEXT_CHARS && joined.starts_with("term0 term1 ") && !joined.ends_with(' ')
        );
    }

    #[test]
    fn filters_become_range_terms_and_term_clauses() {
        let filters = Filters {
            time_range: Some(TimeRange {
                from: Some(Timestamp { seconds: 1_790_000_000, nanos: 0 }),
                to: Some(Timestamp { seconds: 1_790_086_400, nanos: 500_000_000 }),
            }),
            doc_types: vec!["ticket".into(), "incident".into()],
            tags: vec!["payment_timeout".into(), "checkout".into()],
            equals: HashMap::from([("status".into(), "open".into()), ("priority".into(), "P1".into())]),
        };
        let body = build("x", filters).unwrap();
        let filter = body["query"]["bool"]["filter"].as_array().unwrap();
        assert_eq!(filter.len(), 7);
        assert_eq!(
            filter[1],
            json!({ "range": { "updated_at": {
                "gte": "2026-09-21T14:13:20.000Z",
                "lte": "2026-09-22T14:13:20.500Z",
                "format": "strict_date_optional_time",
            } } })
        );
        assert_eq!(filter[2], json!({ "terms": { "doc_type": ["ticket", "incident"] } }));
        assert_eq!(filter[3], json!({ "term": { "tags": "payment_timeout" } }));
        assert_eq!(filter[4], json!({ "term": { "tags": "checkout" } }));
        assert_eq!(filter[5], json!({ "term": { "priority": "P1" } }));
        assert_eq!(filter[6], json!({ "term": { "status": "open" } }));
    }

    #[test]
    fn in_a_bounded_time_window_the_words_rank_but_are_not_required() {
        let window = |from: i64, to: i64| Filters {
            time_range: Some(TimeRange {
                from: Some(Timestamp { seconds: from, nanos: 0 }),
                to: Some(Timestamp { seconds: to, nanos: 0 }),
            }),
            ..Default::default()
        };
        // Last week: every ticket of the week may answer "what was opened last week?".
        let body = build("what was opened", window(1_790_000_000, 1_790_000_000 + 7 * 86_400)).unwrap();
        let q = &body["query"]["bool"];
        assert!(q.get("must").is_none(), "{q}");
        assert_eq!(q["should"][0]["bool"]["minimum_should_match"], 1);
        assert_eq!(q["filter"][1]["range"]["updated_at"]["lte"], "2026-09-28T14:13:20.000Z");
        assert_eq!(body["sort"][0], "_score");
        assert_eq!(body["sort"][1]["updated_at"]["order"], "desc", "ties at score 0: newest first");
        // Two years, or an open-ended past, constrain the answer but are not its subject.
        for filters in [
            window(1_700_000_000, 1_700_000_000 + 2 * 366 * 86_400),
            Filters {
                time_range: Some(TimeRange { from: None, to: Some(Timestamp { seconds: 1_790_000_000, nanos: 0 }) }),
                ..Default::default()
            },
        ] {
            let body = build("what was opened", filters).unwrap();
            assert_eq!(body["query"]["bool"]["must"][0]["bool"]["minimum_should_match"], 1);
            assert!(body.get("sort").is_none());
        }
    }

    #[test]
    fn the_questions_own_window_ranks_documents_inside_it_first_and_drops_none_that_match() {
        let week = Filters {
            time_range: Some(TimeRange {
                from: Some(Timestamp { seconds: 1_790_000_000, nanos: 0 }),
                to: Some(Timestamp { seconds: 1_790_000_000 + 7 * 86_400, nanos: 0 }),
            }),
            doc_types: vec!["notice".into()],
            ..Default::default()
        };
        let asked = SubQuery { time_range_from_question: true, ..query("surcharge sailings", week.clone()) };
        let body = search_body(&source(), &asked, Duration::from_secs(1)).unwrap();
        let f = &body["query"]["function_score"];
        let q = &f["query"]["bool"];
        // the window is no filter: permission and the caller's other filters are
        let filters = q["filter"].as_array().unwrap();
        assert_eq!(filters.len(), 2, "{q}");
        assert!(filters.iter().all(|c| c.get("range").is_none()), "{q}");
        assert_eq!(filters[1], json!({ "terms": { "doc_type": ["notice"] } }));
        // inside: 1 + the words' score, so a document of the week (or one that names a day of
        // it) may answer with no word
        let inside = &q["should"][0]["constant_score"];
        assert_eq!(inside["boost"], 1.0);
        let about = inside["filter"]["bool"]["should"].as_array().unwrap();
        assert_eq!(about[0]["range"]["updated_at"]["lte"], "2026-09-28T14:13:20.000Z");
        let names = &about[1]["bool"]["should"];
        let phrase = |p: &str| names.as_array().unwrap().iter().any(|c| c["multi_match"]["query"] == p);
        // 2026-09-21 14:13:20 UTC to 2026-09-28 14:13:20: eight days, ISO weeks 39 and 40.
        assert!(phrase("2026-09-21") && phrase("9月28日") && phrase("September 25") && phrase("week 39"), "{names}");
        assert!(!phrase("2026-09-20") && !phrase("2026-09-29"), "{names}");
        assert_eq!(names[0]["multi_match"]["type"], "phrase");
        assert_eq!(q["minimum_should_match"], 1);
        assert_eq!(q["should"][1]["bool"]["minimum_should_match"], 1, "or any word");
        // outside: the words' score × 0.001, after every document of the window
        let outside = &f["functions"][0];
        assert_eq!(outside["weight"], OUTSIDE_WINDOW);
        assert_eq!(outside["filter"]["bool"]["must_not"], json!([about[0], about[1]]));
        assert_eq!((f["score_mode"].as_str(), f["boost_mode"].as_str()), (Some("multiply"), Some("multiply")));
        assert_eq!(body["sort"][0], "_score");

        // a window the caller gave, or one with no words to rank by, stays a filter
        for q in
            [query("surcharge sailings", week.clone()), SubQuery { time_range_from_question: true, ..query("", week) }]
        {
            let body = search_body(&source(), &q, Duration::from_secs(1)).unwrap();
            assert!(body["query"].get("function_score").is_none(), "{body}");
            assert_eq!(body["query"]["bool"]["filter"][1]["range"]["updated_at"]["lte"], "2026-09-28T14:13:20.000Z");
        }
    }

    #[test]
    fn the_days_a_document_may_name_are_the_windows_in_the_users_zone_and_a_month_has_none() {
        let range = |from: i64, to: i64| Filters {
            time_range: Some(TimeRange {
                from: Some(Timestamp { seconds: from, nanos: 0 }),
                to: Some(Timestamp { seconds: to, nanos: 999_999_999 }),
            }),
            ..Default::default()
        };
        // 2026-06-28T16:00Z – 2026-07-01T15:59:59Z is 29 June – 1 July in Shanghai.
        let shanghai = range(1_782_662_400, 1_782_921_599);
        let names = names_the_window(&source(), &shanghai, "Asia/Shanghai").unwrap();
        let phrases: Vec<&str> = names["bool"]["should"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["multi_match"]["query"].as_str().unwrap())
            .collect();
        assert_eq!(phrases.len(), 3 * 6 + 3, "{phrases:?}");
        assert!(phrases.contains(&"2026-06-29") && phrases.contains(&"7月1日") && phrases.contains(&"week 27"));
        // In UTC the same instants start on 28 June.
        let utc = names_the_window(&source(), &shanghai, "").unwrap();
        assert!(utc.to_string().contains("2026-06-28"), "{utc}");
        assert!(names_the_window(&source(), &range(1_782_662_400, 1_782_662_400 + 30 * 86_400), "UTC").is_none());
        // Only documents written since 92 days before the window: "July 3" of another year is not it.
        assert_eq!(names["bool"]["filter"][0]["range"]["updated_at"]["gte"], "2026-03-28T16:00:00.000Z");
    }

    #[test]
    fn an_open_ended_past_from_the_epoch_lists_its_documents_as_a_window_does() {
        // "every ticket we got more than a week ago": the router starts it at its epoch (1970-01-01
        // in the user's zone).
        let before = |from: Option<i64>| Filters {
            time_range: Some(TimeRange {
                from: from.map(|seconds| Timestamp { seconds, nanos: 0 }),
                to: Some(Timestamp { seconds: 1_790_000_000, nanos: 0 }),
            }),
            ..Default::default()
        };
        // As the question's window: what lies inside ranks first.
        let asked = SubQuery { time_range_from_question: true, ..query("ticket", before(Some(-28_800))) };
        let body = search_body(&source(), &asked, Duration::from_secs(1)).unwrap();
        let inside = &body["query"]["function_score"]["query"]["bool"]["should"][0]["constant_score"];
        assert_eq!(inside["filter"]["range"]["updated_at"]["lte"], "2026-09-21T14:13:20.000Z", "{body}");
        // As the set a list question asks for (a filter): every document of it, the words ranking.
        let body = search_body(&source(), &query("ticket", before(Some(-28_800))), Duration::from_secs(1)).unwrap();
        assert!(body["query"]["bool"].get("must").is_none(), "{body}");
        assert_eq!(body["query"]["bool"]["should"][0]["bool"]["minimum_should_match"], 1, "{body}");
        // A range with no start stays a constraint the words must meet.
        let body = search_body(&source(), &query("ticket", before(None)), Duration::from_secs(1)).unwrap();
        assert_eq!(body["query"]["bool"]["must"][0]["bool"]["minimum_should_match"], 1, "{body}");
    }

    #[test]
    fn a_half_open_time_range_has_one_bound() {
        let filters = Filters {
            time_range: Some(TimeRange { from: Some(Timestamp { seconds: 0, nanos: 0 }), to: None }),
            ..Default::default()
        };
        let body = build("", filters).unwrap();
        let range = &body["query"]["bool"]["filter"][1]["range"]["updated_at"];
        assert_eq!(range["gte"], "1970-01-01T00:00:00.000Z");
        assert!(range.get("lte").is_none());
    }

    #[test]
    fn an_inverted_time_range_is_refused() {
        let filters = Filters {
            time_range: Some(TimeRange {
                from: Some(Timestamp { seconds: 10, nanos: 0 }),
                to: Some(Timestamp { seconds: 5, nanos: 0 }),
            }),
            ..Default::default()
        };
        assert!(matches!(build("x", filters), Err(AdapterError::InvalidArgument(_))));
    }

    #[test]
    fn an_equals_key_outside_the_allow_list_is_refused_by_name() {
        let filters =
            Filters { equals: HashMap::from([("allowed_groups".into(), "finance".into())]), ..Default::default() };
        let err = build("x", filters).unwrap_err();
        match err {
            AdapterError::InvalidArgument(m) => {
                assert!(m.contains("`allowed_groups`") && m.contains("status, priority"), "{m}")
            }
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn caller_values_stay_json_values() {
        let hostile = r#"x" } }, { "match_all": {} } ] } }"#;
        let filters = Filters { equals: HashMap::from([("status".into(), hostile.into())]), ..Default::default() };
        let body = build(hostile, filters).unwrap();
        assert_eq!(should(&body)[0]["multi_match"]["query"], hostile);
        assert_eq!(body["query"]["bool"]["filter"][1]["term"]["status"], hostile);
        assert_eq!(body["query"]["bool"]["must"].as_array().unwrap().len(), 1);

        let mut s = source();
        s.id_fields = vec!["order_no".into()];
        let q = SubQuery {
            terms: vec![hostile.into()],
            entities: vec![hostile.into()],
            original_text: hostile.into(),
            ..query(hostile, Filters::default())
        };
        let body = search_body(&s, &q, Duration::from_secs(1)).unwrap();
        let clauses = should(&body);
        assert_eq!(clauses.len(), 4);
        assert_eq!(clauses[1]["multi_match"]["query"], hostile);
        assert_eq!(clauses[2]["ids"]["values"][0], hostile);
        assert_eq!(clauses[3]["term"]["order_no"]["value"], hostile);
    }

    #[test]
    fn fetch_uses_ids_with_the_same_permission_filter() {
        let body = fetch_body(&source(), "TCK-5001", &alice(), Duration::from_secs(2));
        assert_eq!(body["query"]["bool"]["must"][0], json!({ "ids": { "values": ["TCK-5001"] } }));
        assert_eq!(body["query"]["bool"]["filter"][0], permission_filter(&source(), &alice()));
        assert_eq!(body["size"], 1);
        assert!(body["_source"]["includes"].as_array().unwrap().contains(&json!("body")));

        let exists = exists_body("TCK-5001", Duration::from_secs(2));
        assert_eq!(exists["size"], 0);
        assert_eq!(exists["_source"], false);
        assert_eq!(exists["track_total_hits"], true);
    }
}
