//! Per-source query rewriting, in one place: what each source receives.
//!
//! A question like "最近一周线上问题中哪些和支付超时有关" is a sentence; search engines with a
//! minimum-should-match and wikis that AND their terms want its key terms instead. The
//! router extracts, once per query:
//! - entities: every match of any source's routing patterns (order numbers, ticket ids);
//! - keywords: every routing keyword of any source the text mentions, matched as source
//!   selection matches them ([`crate::analysis::mentions`]: Chinese by substring, Latin by the
//!   stems of whole words, so `fee` is not in "coffee" and `policy` is in "policies"), longest
//!   first (a keyword inside a longer matched one is dropped: 超时 inside 支付超时);
//! - words: Latin words of 3+ letters that are not stop words;
//! - Chinese content words ([`crate::analysis::cjk_chunks`]) besides the keywords, for sources
//!   that search each term on its own (`routing.split_words`, e.g. DokuWiki);
//! - expansions: the glossary's other-language terms for the concepts the question mentions.
//!
//! Then each source gets, by its `routing.rewrite` mode:
//! - `original`: the text unchanged (SQL templates extract their own parameters);
//! - `terms`: entities + keywords + words (search engines);
//! - `own_terms`: the source's own matched keywords + words, else `terms` (wikis that AND
//!   every term: fewer, sharper terms).
//!
//! Any mode falls back to the original text when nothing was extracted. Sources with
//! `routing.time_phrases: true` also turn phrases such as 最近一周 / "last week" into a time
//! filter when the request has none ([`time_filter`]: what it covers depends on whether the
//! source's dates may lie ahead, `routing.dates_ahead`). Every rewrite is reported in the routing
//! decision.

use fedsearch_proto::types::{Filters, TimeRange};
use serde::Deserialize;

use crate::registry::{Registry, Source};

#[derive(Debug, Clone, Copy, Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RewriteMode {
    #[default]
    Original,
    Terms,
    OwnTerms,
}

/// The terms extracted from one query.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Terms {
    pub entities: Vec<String>,
    pub keywords: Vec<String>,
    pub words: Vec<String>,
    /// Other-language terms for the concepts the question mentions (the glossary's).
    pub expansions: Vec<String>,
    /// Chinese content words besides the keywords (sent to sources with `routing.split_words`).
    pub chinese_words: Vec<String>,
    /// The time phrase and its calendar window in the user's zone.
    pub window: Option<fedsearch_timeexpr::Window>,
    /// The glossary concepts the question mentions, with their other terms.
    pub concepts: Vec<crate::analysis::Concept>,
}

/// At most this many synonyms travel with one term (`term|syn|syn`).
const MAX_SYNONYMS: usize = 6;

impl Terms {
    /// Entities, keywords, words (and, with `split_words`, the Chinese content words) and
    /// glossary expansions, in that order, each once: what adapters receive as OR terms.
    ///
    /// With `split_words` (sources that search each term on its own and rank by how many terms
    /// a document matches, e.g. wikis), a question term the glossary knows carries its synonyms
    /// as one concept, `overdue|逾期|欠款|"past due"` (the other script first, phrases quoted):
    /// an English question's terms then each find a Chinese page, instead of every translation
    /// being a term of its own that matches alone.
    pub fn for_adapter(&self, split_words: bool) -> Vec<String> {
        let mut v = self.entities.clone();
        if !split_words {
            for t in self.keywords.iter().chain(&self.words).chain(&self.expansions) {
                push_unique(&mut v, t);
            }
            return v;
        }
        let mut own: Vec<String> = Vec::new();
        for t in self.keywords.iter().chain(&self.words).chain(&self.chinese_words) {
            push_unique(&mut own, t);
        }
        self.join_phrases(&mut own);
        let (synonyms, orphans) = self.synonyms_of(&own);
        for (t, syn) in own.iter().zip(synonyms) {
            let t = if t.contains(' ') { format!("\"{t}\"") } else { t.clone() };
            if syn.is_empty() {
                push_unique(&mut v, &t);
            } else {
                push_unique(&mut v, &std::iter::once(t).chain(syn).collect::<Vec<_>>().join("|"));
            }
        }
        for t in &orphans {
            push_unique(&mut v, t);
        }
        v
    }

    /// A glossary phrase of several Latin words the question holds ("serious injury", "credit
    /// hold") becomes one term in place of its words (sent quoted, as every term of several
    /// words): its translations then go with the phrase, and a page in the other language that
    /// shows the phrase's translation is not also asked to show each English word of it.
    fn join_phrases(&self, own: &mut Vec<String>) {
        use crate::analysis::{Prepared, Term};
        for found in self.concepts.iter().flat_map(|c| &c.found) {
            if !found.contains(' ') || found.chars().any(crate::analysis::is_cjk) {
                continue;
            }
            let phrase = Prepared::new(found);
            let words: Vec<usize> =
                (0..own.len()).filter(|&t| !own[t].contains(' ') && Term::new(&own[t]).found_in(&phrase)).collect();
            if words.len() < 2 {
                continue;
            }
            own[words[0]] = found.clone();
            for &t in words[1..].iter().rev() {
                own.remove(t);
            }
        }
    }

    /// Each term's synonyms from the concepts: a concept goes to the term that is one of its
    /// found terms, else to the first term containing one (or contained in one). Returns the
    /// synonyms per term, and the terms of concepts that reach no term (sent as terms of their own).
    fn synonyms_of(&self, own: &[String]) -> (Vec<Vec<String>>, Vec<String>) {
        use crate::analysis::{Prepared, Term};
        let mut out: Vec<Vec<String>> = vec![Vec::new(); own.len()];
        let prepared: Vec<Prepared> = own.iter().map(|t| Prepared::new(t)).collect();
        let mut placed = vec![false; self.concepts.len()];
        let mut orphans: Vec<String> = Vec::new();
        let same =
            |t: usize, f: &str| Term::new(f).found_in(&prepared[t]) && Term::new(&own[t]).found_in(&Prepared::new(f));
        let near =
            |t: usize, f: &str| Term::new(f).found_in(&prepared[t]) || Term::new(&own[t]).found_in(&Prepared::new(f));
        for pass in [&same as &dyn Fn(usize, &str) -> bool, &near] {
            for (c, concept) in self.concepts.iter().enumerate() {
                if placed[c] {
                    continue;
                }
                if let Some(t) = (0..own.len()).find(|&t| concept.found.iter().any(|f| pass(t, f))) {
                    placed[c] = true;
                    let script = |s: &str| s.chars().any(crate::analysis::is_cjk);
                    // A glossary term inside a longer content word (保险 in 买保险) first: a wiki
                    // page about insurance need not hold the longer word.
                    let inside = concept.found.iter().filter(|f| Term::new(f).found_in(&prepared[t]) && !same(t, f));
                    let mut syn: Vec<&String> = concept.others.iter().collect();
                    // The other script first: the translation is what the term cannot find itself.
                    syn.sort_by_key(|s| script(s) == script(&own[t]));
                    let syn: Vec<&String> = inside.chain(syn).collect();
                    for s in syn {
                        let s = if s.contains(' ') { format!("\"{s}\"") } else { s.clone() };
                        if out[t].len() < MAX_SYNONYMS && !out[t].contains(&s) && s != own[t] {
                            out[t].push(s);
                        }
                    }
                }
            }
        }
        orphans.extend(
            self.concepts.iter().zip(&placed).filter(|(_, p)| !**p).flat_map(|(c, _)| c.others.iter().cloned()),
        );
        (out, orphans)
    }
}

/// Where a question splits into Latin words: anything but ASCII letters, digits and `-`.
fn is_word_break(c: char) -> bool {
    !c.is_ascii_alphanumeric() && c != '-'
}

/// A word worth sending (lowered `w`, as `asked`): letters with inner hyphens (`e-bike`,
/// `anti-dumping`, `cut-offs`) of three or more letters that are not a stop word, or an
/// acronym of two capitals as written (`HS code`, `DG cargo`).
fn is_content_word(w: &str, asked: &str) -> bool {
    let letters = w.chars().filter(char::is_ascii_alphabetic).count();
    let lettered = w.chars().all(|c| c.is_ascii_alphabetic() || c == '-') && !w.contains("--");
    let acronym = letters == 2 && w.len() == 2 && asked.chars().all(|c| c.is_ascii_uppercase());
    lettered && (letters >= 3 || acronym) && !crate::analysis::is_stop_word(w)
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// Keeps the longest matches: drops any keyword contained in another matched one.
fn longest_only(mut found: Vec<String>) -> Vec<String> {
    found.sort_by_key(|k| std::cmp::Reverse(k.chars().count()));
    let mut kept: Vec<String> = Vec::new();
    for k in found {
        if !kept.iter().any(|longer| longer.contains(k.as_str())) {
            kept.push(k);
        }
    }
    kept
}

/// The moment and the zone relative time in a question is read in.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub as_of: chrono::DateTime<chrono::Utc>,
    pub zone: chrono_tz::Tz,
}

impl Clock {
    pub fn now_utc() -> Clock {
        Clock { as_of: chrono::Utc::now(), zone: chrono_tz::Tz::UTC }
    }
}

/// `expansions`: the glossary's terms for the question (`Glossary::expand`), computed once per
/// search by the caller.
pub fn extract(registry: &Registry, query: &str, clock: Clock, expansions: Vec<String>) -> Terms {
    let lowered = query.to_lowercase();
    let prepared = crate::analysis::Prepared::new(query);
    let mut t = Terms::default();
    for s in registry.all() {
        for p in &s.patterns {
            for m in p.find_iter(query) {
                push_unique(&mut t.entities, m.as_str());
            }
        }
    }
    let mut found = Vec::new();
    for s in registry.all() {
        for k in &s.keywords {
            if !found.contains(k) && crate::analysis::Term::new(k).found_in(&prepared) {
                found.push(k.clone());
            }
        }
    }
    t.keywords = longest_only(found);
    for asked in query.split(is_word_break) {
        let asked = asked.trim_matches('-');
        let lowered_word = asked.to_ascii_lowercase();
        let w = lowered_word.as_str();
        let covered = t.keywords.iter().any(|k| k.contains(w)) || t.entities.iter().any(|e| e.to_lowercase() == w);
        if is_content_word(w, asked) && !covered {
            push_unique(&mut t.words, w);
        }
    }
    t.window = fedsearch_timeexpr::resolve(query, clock.as_of, clock.zone);
    // Chinese content words of what the keywords, entities and time phrase leave over.
    let mut residue = lowered;
    let phrase = t.window.as_ref().map(|w| w.phrase.to_lowercase());
    for taken in t.keywords.iter().chain(&t.entities).chain(phrase.iter()) {
        residue = residue.replace(&taken.to_lowercase(), " ");
    }
    for chunk in crate::analysis::cjk_chunks(&residue) {
        push_unique(&mut t.chinese_words, &chunk);
    }
    // A long chunk is rarely a word (东西签收, 讲理由寄回来): its two-character words are tried too.
    let long: Vec<String> = t.chinese_words.iter().filter(|c| c.chars().count() > 3).cloned().collect();
    for chunk in long {
        let chars: Vec<char> = chunk.chars().collect();
        for pair in chars.windows(2) {
            push_unique(&mut t.chinese_words, &pair.iter().collect::<String>());
        }
    }
    t.expansions = expansions;
    t.concepts = registry.glossary().concepts(query);
    t
}

/// The longest a period not over yet reaches back for what was written about it.
const ANNOUNCED_AHEAD_MAX_DAYS: i64 = 31;

/// The first document date a time filter keeps for `window`. A period over by the end of today
/// holds its own documents: its start ("yesterday", "the past week", 最近一周, "today"). A period
/// that goes on after today ("this week" asked on a Monday, 这个月: the window stops at today) is
/// also described by what was written before it about the days still to come — a forecast, a
/// schedule, a notice published the Friday before "this week" — so the filter reaches back before
/// the period's start by as long as is left of it after today (at most
/// [`ANNOUNCED_AHEAD_MAX_DAYS`]): six days for "this week" on a Monday, none on a Sunday.
fn documents_from(window: &fedsearch_timeexpr::Window) -> chrono::DateTime<chrono::Utc> {
    let Some(end) = window.period_to else { return window.from };
    let left = (end - window.to).min(chrono::TimeDelta::days(ANNOUNCED_AHEAD_MAX_DAYS));
    window.from - left.max(chrono::TimeDelta::zero())
}

/// A time filter's first instant and its end (exclusive).
type Span = (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>);

/// The time filter a window gives a source (its end exclusive), or `None` when the window should
/// not hide anything there; and what to say about it in the routing decision.
///
/// - Dates that may lie ahead (`routing.dates_ahead`: due, departure, expiry; default for SQL
///   templates, which bind `:from`/`:to` to their own column): the window's whole period — this
///   month to its last day, November asked on 18 November to the 30th, 下个月, the next 30 days,
///   月底前 — and nothing before its start.
/// - Dates of what has happened (created, published, updated): the window up to the end of today
///   (a document dated later in this month is noise of the index, not yet written), reaching back
///   before a period that goes on after today for what was written about it ([`documents_from`]).
///   A window ahead (下周, next month, 未来30天) gives no filter: nothing is dated there yet, and
///   what was written about it may be of any age.
fn time_filter(window: &fedsearch_timeexpr::Window, dates_ahead: bool) -> (Option<Span>, String) {
    let range = time_range(window, dates_ahead);
    let mut how = format!("; `{}` → {}", window.phrase, window.label);
    match range {
        Some((_, to)) if dates_ahead && to > window.to => {
            let last = (to - chrono::TimeDelta::seconds(1)).format("%Y-%m-%d %H:%M UTC");
            how.push_str(&format!(", through the period's end ({last})"));
        }
        None => how.push_str(", ahead: no filter on this source's dates of what has happened"),
        Some((start, _)) if !dates_ahead && start < window.from => {
            how.push_str(&format!(", with what was written about it from {} on", start.format("%Y-%m-%d %H:%M UTC")));
        }
        Some(_) => {}
    }
    (range, how)
}

/// The span of [`time_filter`], without its description.
fn time_range(window: &fedsearch_timeexpr::Window, dates_ahead: bool) -> Option<Span> {
    if dates_ahead {
        return Some((window.from, window.period_to.unwrap_or(window.to)));
    }
    if window.ahead {
        return None;
    }
    Some((documents_from(window), window.to))
}

/// Whether `source` is sent the question's time window: it holds events (`routing.time_phrases`),
/// or `named`: a list question that asks what changed names it ("最近六周知识库里改了哪些文章",
/// "which guides changed last month": reference material asked for what changed in a period, by
/// its documents' dates; [`crate::intent::asks_what_changed`]).
pub fn takes_window(source: &Source, named: bool) -> bool {
    source.config.routing.time_phrases || named
}

/// Whether the question's time window filters `source`'s documents by date (see [`time_filter`]);
/// `named`: the list question names the source ([`names_source`]).
pub fn window_filters(source: &Source, terms: &Terms, named: bool) -> bool {
    takes_window(source, named)
        && terms.window.as_ref().is_some_and(|w| time_range(w, source.config.dates_ahead()).is_some())
}

/// Whether the question's tokens (`asked`: [`crate::rerank::naming_tokens`]) name `source`'s kind:
/// one of its `routing.doc_types` or its name (`support_tickets` by "tickets", 知识库 → kb).
pub fn names_source(source: &Source, asked: &foldhash::HashSet<&str>) -> bool {
    crate::rerank::names_kind(
        source.config.routing.doc_types.iter().map(String::as_str).chain([source.config.name.as_str()]),
        asked,
    )
}

/// Whether a list question's hits from `source` are one set of equal answers (fusion's
/// `SourceSpec.one_set`) rather than an order: every row a structured (SQL) source returned; and
/// every document a source returned inside the question's time window when the question names
/// the source's kind ("which notices did we publish last month", 上周有哪些工单) — each is one of
/// the items asked for, however few of the question's words it shows.
/// `change_asked`: the question asks what changed, so reference material it names takes the window.
pub fn one_set(source: &Source, terms: &Terms, asked: &foldhash::HashSet<&str>, change_asked: bool) -> bool {
    let named = names_source(source, asked);
    source.config.kind == "sql" || (named && window_filters(source, terms, named && change_asked))
}

/// What one source receives.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewritten {
    pub text: String,
    pub filters: Option<Filters>,
    /// How it was rewritten (shown in the routing decision).
    pub how: String,
    /// Whether `filters.time_range` is the question's time phrase (not the caller's filter).
    pub time_range_from_question: bool,
}

/// What `source` receives; `named`: the list question names the source ([`names_source`]), so
/// it takes the question's time window even as reference material ([`takes_window`]).
pub fn for_source(source: &Source, query: &str, filters: Option<&Filters>, terms: &Terms, named: bool) -> Rewritten {
    let all_terms = || {
        let mut v = terms.entities.clone();
        v.extend(terms.keywords.iter().cloned());
        v.extend(terms.words.iter().cloned());
        v
    };
    let (text, mut how) = match source.config.routing.rewrite {
        RewriteMode::Original => (query.to_string(), "original text".to_string()),
        RewriteMode::Terms => (all_terms().join(" "), "key terms".to_string()),
        RewriteMode::OwnTerms => {
            let prepared = crate::analysis::Prepared::new(query);
            let own: Vec<String> = longest_only(
                source.keywords.iter().filter(|k| crate::analysis::Term::new(k).found_in(&prepared)).cloned().collect(),
            );
            if own.is_empty() {
                (all_terms().join(" "), "key terms".to_string())
            } else {
                let mut v = own;
                v.extend(terms.words.iter().cloned());
                (v.join(" "), "this source's terms".to_string())
            }
        }
    };
    let (text, how_text) =
        if text.trim().is_empty() { (query.to_string(), "original text".to_string()) } else { (text, how) };
    how = how_text;
    let mut filters = filters.cloned();
    let has_range = filters.as_ref().is_some_and(|f| f.time_range.is_some());
    let mut time_range_from_question = false;
    if takes_window(source, named)
        && !has_range
        && let Some(w) = &terms.window
    {
        let (range, said) = time_filter(w, source.config.dates_ahead());
        how.push_str(&said);
        if let Some((start, end)) = range {
            // Filters are inclusive; the window's end is exclusive: stop one nanosecond before it.
            let from = prost_types::Timestamp { seconds: start.timestamp(), nanos: 0 };
            let to = prost_types::Timestamp { seconds: end.timestamp() - 1, nanos: 999_999_999 };
            let f = filters.get_or_insert_with(Filters::default);
            f.time_range = Some(TimeRange { from: Some(from), to: Some(to) });
            time_range_from_question = true;
        }
    }
    Rewritten { text, filters, how, time_range_from_question }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CircuitBreakerConfig, SourceConfig};

    fn registry() -> Registry {
        registry_with(crate::analysis::Glossary::default())
    }

    /// The terms of `q` with no sources and the built-in glossary's expansions.
    fn with_builtin_glossary(q: &str) -> Terms {
        let r =
            Registry::new(&[], &CircuitBreakerConfig::default(), crate::analysis::Glossary::new(true, &[])).unwrap();
        extract(&r, q, clock(), r.glossary().expand(q))
    }

    fn registry_with(glossary: crate::analysis::Glossary) -> Registry {
        let yaml = r#"
- { name: orders, kind: sql, adapter: "http://127.0.0.1:1", description: d, routing: { time_phrases: true, patterns: ['SO\d{8}', 'C\d{4}'], keywords: [发货, 买的, order] } }
- { name: incidents, adapter: "http://127.0.0.1:1", description: d, routing: { rewrite: terms, time_phrases: true, keywords: [线上问题, 超时, timeout] } }
- { name: tickets, adapter: "http://127.0.0.1:1", description: d, routing: { rewrite: terms, time_phrases: true, keywords: [工单, 支付超时] } }
- { name: wiki, adapter: "http://127.0.0.1:1", description: d, routing: { rewrite: own_terms, keywords: [手续费, 拒收, 处理, fee] } }
"#;
        let sources: Vec<SourceConfig> = serde_yaml_ng(yaml);
        Registry::new(&sources, &CircuitBreakerConfig::default(), glossary).unwrap()
    }

    /// 07:00 on 1 December 2026 in Shanghai (still 30 November in UTC).
    fn clock() -> Clock {
        use chrono::TimeZone;
        Clock { as_of: chrono::Utc.with_ymd_and_hms(2026, 11, 30, 23, 0, 0).unwrap(), zone: chrono_tz::Asia::Shanghai }
    }

    fn serde_yaml_ng(yaml: &str) -> Vec<SourceConfig> {
        #[derive(serde::Deserialize)]
        struct W {
            s: Vec<SourceConfig>,
        }
        let w: W = figment::Figment::new()
            .merge(figment::providers::Data::<figment::providers::Yaml>::string(&format!("s:\n{}", indent(yaml))))
            .extract()
            .unwrap();
        w.s
    }

    fn indent(s: &str) -> String {
        s.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
    }

    #[tokio::test]
    async fn a_sentence_becomes_key_terms_and_a_time_filter_for_search_sources() {
        let r = registry();
        let q = "最近一周线上问题中哪些和支付超时有关，同时附上对应的工单处理状态";
        let t = extract(&r, q, clock(), r.glossary().expand(q));
        assert_eq!(t.keywords, vec!["线上问题", "支付超时", "工单", "处理"], "超时 is inside 支付超时");
        assert_eq!(t.window.as_ref().unwrap().phrase, "最近一周");
        let inc = for_source(r.get("incidents").unwrap(), q, None, &t, false);
        assert_eq!(inc.text, "线上问题 支付超时 工单 处理");
        let range = inc.filters.unwrap().time_range.unwrap();
        // The 7 calendar days ending today in Shanghai: from 25 November 00:00 +08:00 to the end of 1 December.
        assert_eq!(
            range.from.unwrap().seconds,
            chrono::DateTime::parse_from_rfc3339("2026-11-25T00:00:00+08:00").unwrap().timestamp()
        );
        assert_eq!(
            range.to.unwrap().seconds + 1,
            chrono::DateTime::parse_from_rfc3339("2026-12-02T00:00:00+08:00").unwrap().timestamp()
        );
        assert!(inc.how.contains("最近一周"), "{}", inc.how);
    }

    #[tokio::test]
    async fn wikis_get_their_own_terms_and_sql_gets_the_original() {
        let r = registry();
        let q = "客户C1001：我昨天买的商品为什么还没发货？如果拒收要收手续费吗？";
        let t = extract(&r, q, clock(), r.glossary().expand(q));
        assert_eq!(t.entities, vec!["C1001"]);
        let wiki = for_source(r.get("wiki").unwrap(), q, None, &t, false);
        assert!(wiki.text.starts_with("手续费 拒收"), "the wiki's own keywords first: {}", wiki.text);
        assert!(t.chinese_words.contains(&"商品".to_string()), "{:?}", t.chinese_words);
        assert!(
            t.for_adapter(true).contains(&"商品".to_string()) && !t.for_adapter(false).contains(&"商品".to_string())
        );
        assert!(wiki.filters.is_none(), "no time_phrases on the wiki: policies are not recent news");
        let orders = for_source(r.get("orders").unwrap(), q, None, &t, false);
        assert_eq!(orders.text, q);
    }

    #[tokio::test]
    async fn an_explicit_time_range_wins_and_nothing_extracted_keeps_the_text() {
        let r = registry();
        let explicit = Filters {
            time_range: Some(TimeRange { from: Some(prost_types::Timestamp { seconds: 5, nanos: 0 }), to: None }),
            ..Default::default()
        };
        let q = "timeout last week";
        let t = extract(&r, q, clock(), r.glossary().expand(q));
        let inc = for_source(r.get("incidents").unwrap(), q, Some(&explicit), &t, false);
        assert!(!inc.time_range_from_question, "the caller's filter is a filter");
        assert_eq!(inc.filters.unwrap().time_range.unwrap().from.unwrap().seconds, 5);
        let read = for_source(r.get("incidents").unwrap(), q, None, &t, false);
        assert!(read.time_range_from_question, "last week, read from the question");
        let wiki = for_source(r.get("wiki").unwrap(), q, None, &t, false);
        assert!(!wiki.time_range_from_question && wiki.filters.is_none(), "no time phrases: no window");
        let q = "天气怎么样";
        let t = extract(&r, q, clock(), r.glossary().expand(q));
        assert_eq!(for_source(r.get("tickets").unwrap(), q, None, &t, false).text, q);
        let q = "？！";
        let t = extract(&r, q, clock(), r.glossary().expand(q));
        assert_eq!(
            for_source(r.get("tickets").unwrap(), q, None, &t, false).text,
            q,
            "nothing extracted: the text as asked"
        );
    }

    #[tokio::test]
    async fn yesterday_is_the_previous_calendar_day_in_the_users_zone_at_seven_in_the_morning() {
        let r = registry();
        let t = extract(&r, "昨天的线上问题", clock(), vec![]);
        let inc = for_source(r.get("incidents").unwrap(), "昨天的线上问题", None, &t, false);
        let range = inc.filters.unwrap().time_range.unwrap();
        let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        assert_eq!(range.from.unwrap().seconds, at("2026-11-30T00:00:00+08:00"), "not 24 hours before 07:00");
        assert_eq!(range.to.unwrap().seconds + 1, at("2026-12-01T00:00:00+08:00"));
        assert!(inc.how.contains("2026-11-30 in Asia/Shanghai"), "{}", inc.how);
    }

    #[tokio::test]
    async fn this_week_asked_on_a_monday_keeps_what_was_written_about_it_before_it_began() {
        use chrono::TimeZone;
        let r = registry();
        let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        // Monday 20 July 2026, 09:00 in Shanghai: the week runs to Sunday 26 July.
        let monday = Clock {
            as_of: chrono::Utc.with_ymd_and_hms(2026, 7, 20, 1, 0, 0).unwrap(),
            zone: chrono_tz::Asia::Shanghai,
        };
        let q = "这周会不会有台风线上问题";
        let t = extract(&r, q, monday, vec![]);
        let range = for_source(r.get("incidents").unwrap(), q, None, &t, false).filters.unwrap().time_range.unwrap();
        assert_eq!(
            range.to.unwrap().seconds + 1,
            at("2026-07-21T00:00:00+08:00"),
            "up to the end of today: nothing has happened later in the week yet"
        );
        assert_eq!(
            range.from.unwrap().seconds,
            at("2026-07-14T00:00:00+08:00"),
            "and the six days left of it before it: what was announced about them"
        );
        // A period that ends today holds only its own days, however early today it is.
        for q in ["最近一周线上问题", "今天的线上问题", "昨天的线上问题"] {
            let t = extract(&r, q, monday, vec![]);
            let w = t.window.clone().unwrap();
            let range =
                for_source(r.get("incidents").unwrap(), q, None, &t, false).filters.unwrap().time_range.unwrap();
            assert_eq!(range.from.unwrap().seconds, w.from.timestamp(), "{q}");
        }
    }

    #[tokio::test]
    async fn keywords_are_whole_words_as_in_source_selection() {
        let r = registry();
        let t = extract(&r, "Which orders mention a coffee timeout?", clock(), vec![]);
        assert_eq!(t.keywords, vec!["timeout", "order"], "`order` in orders; no `fee` in coffee");
        assert!(t.words.contains(&"coffee".to_string()), "{:?}", t.words);
        let t = extract(&r, "reorder", clock(), vec![]);
        assert!(t.keywords.is_empty(), "{:?}", t.keywords);
    }

    #[tokio::test]
    async fn a_wiki_gets_each_term_with_its_translations_as_one_concept() {
        let t = with_builtin_glossary("After how many days overdue do we stop taking new bookings?");
        let wiki = t.for_adapter(true);
        let overdue = wiki.iter().find(|w| w.starts_with("overdue|")).unwrap();
        assert!(overdue.starts_with("overdue|逾期"), "the other script first: {overdue}");
        assert!(overdue.contains("|\"past due\""), "phrases quoted: {overdue}");
        assert!(overdue.split('|').count() <= 1 + MAX_SYNONYMS);
        assert!(!wiki.contains(&"逾期".to_string()), "not a term of its own: {wiki:?}");
        // Other sources get the translations as terms of their own.
        let search = t.for_adapter(false);
        assert!(search.contains(&"overdue".to_string()) && search.contains(&"逾期".to_string()), "{search:?}");
        // A Chinese question: the concept goes to the word that is the glossary's term.
        let t = with_builtin_glossary("东西签收以后几天之内可以退吗？");
        let wiki = t.for_adapter(true);
        assert!(wiki.contains(&"东西签收".to_string()), "{wiki:?}");
        assert!(wiki.iter().any(|w| w.starts_with("签收|")), "{wiki:?}");
    }

    #[tokio::test]
    async fn a_glossary_phrase_of_several_question_words_travels_as_one_term() {
        let t = with_builtin_glossary("What are the deadlines for reporting a serious injury to the regulator?");
        let wiki = t.for_adapter(true);
        let injury = wiki.iter().find(|w| w.starts_with("\"serious injury\"|")).unwrap_or_else(|| panic!("{wiki:?}"));
        assert!(injury.contains("严重伤害"), "{injury}");
        assert!(!wiki.iter().any(|w| w == "injury" || w.starts_with("serious|")), "no word of it alone: {wiki:?}");
        assert!(wiki.iter().any(|w| w.starts_with("regulator|")), "{wiki:?}");
        // Other sources keep the words, the translations as terms of their own.
        let search = t.for_adapter(false);
        assert!(search.contains(&"injury".to_string()) && search.contains(&"严重伤害".to_string()), "{search:?}");
    }

    #[tokio::test]
    async fn weather_price_and_measurement_words_reach_the_other_language() {
        let search = with_builtin_glossary("Which ports were closed because of fog last month?").for_adapter(false);
        assert!(search.contains(&"大雾".to_string()) && search.contains(&"港口".to_string()), "{search:?}");
        let search = with_builtin_glossary("上个月船公司新发布了哪些 GRI 涨价通知？").for_adapter(false);
        assert!(search.iter().any(|w| w.contains("rate increase")), "{search:?}");
        let search = with_builtin_glossary("医院反映设备读数不准，订单卡着发不了货").for_adapter(false);
        for word in ["readings", "inaccurate", "stuck"] {
            assert!(search.iter().any(|w| w.contains(word)), "{word}: {search:?}");
        }
    }

    #[tokio::test]
    async fn hyphenated_words_and_two_capital_acronyms_are_kept() {
        let r = registry();
        let q = "出口 e-bike 到德国，HS code 是多少？有没有 anti-dumping？cut-offs -- ok is an it";
        let t = extract(&r, q, clock(), vec![]);
        assert_eq!(t.words, vec!["e-bike", "hs", "code", "anti-dumping", "cut-offs"], "not ok/is/an/it in lower case");
        let t = extract(&r, "Is it OK for DG cargo? IT said x-ray", clock(), vec![]);
        assert_eq!(t.words, vec!["ok", "dg", "cargo", "x-ray"], "`Is` and `it` are not capitals; IT is a stop word");
    }

    #[tokio::test]
    async fn a_glossary_term_inside_a_longer_chinese_word_travels_with_it() {
        let t = with_builtin_glossary("那票货有没有买保险？");
        let wiki = t.for_adapter(true);
        let insured = wiki.iter().find(|w| w.starts_with("买保险|")).expect("买保险 carries the concept");
        assert!(insured.starts_with("买保险|保险|"), "the glossary's own word first, then translations: {insured}");
        assert!(insured.contains("insurance"), "{insured}");
    }

    #[tokio::test]
    async fn english_words_are_kept_without_stop_words() {
        let r = registry();
        let t = extract(&r, "Why was the order SO20261001 not shipped yet?", clock(), vec![]);
        assert_eq!(t.entities, vec!["SO20261001"]);
        assert_eq!(t.keywords, vec!["order"]);
        assert_eq!(t.words, vec!["shipped"]);
    }

    #[tokio::test]
    async fn a_dated_list_question_takes_every_document_of_the_kind_it_names_as_one_set() {
        let r = registry_with(crate::analysis::Glossary::new(true, &[]));
        let sets = |q: &str| -> Vec<String> {
            let expansions = r.glossary().expand(q);
            let question = crate::analysis::question_tokens(q, &expansions);
            let asked = crate::rerank::naming_tokens(&question, &expansions);
            let t = extract(&r, q, clock(), expansions.clone());
            let changed = crate::intent::asks_what_changed(q);
            r.all().filter(|s| one_set(s, &t, &asked, changed)).map(|s| s.config.name.clone()).collect()
        };
        // 工单 names the tickets (ticket, by the glossary) and 上周 filters them by date; the wiki
        // has no dates, the incidents are not named; a SQL source's rows are always one set.
        assert_eq!(sets("上周有哪些工单还没关？"), ["orders", "tickets"]);
        assert_eq!(sets("Which tickets were opened last week?"), ["orders", "tickets"]);
        // No time window: the tickets' order is their relevance.
        assert_eq!(sets("Which tickets mention a timeout?"), ["orders"]);
        // Reference material the list question names is asked what changed in the window.
        assert_eq!(sets("最近一周wiki上改了哪些页面？"), ["orders", "wiki"]);
    }

    #[tokio::test]
    async fn reference_material_takes_the_window_only_when_a_list_question_names_it() {
        let r = registry_with(crate::analysis::Glossary::new(true, &[]));
        let sent = |q: &str| {
            let expansions = r.glossary().expand(q);
            let question = crate::analysis::question_tokens(q, &expansions);
            let asked = crate::rerank::naming_tokens(&question, &expansions);
            let t = extract(&r, q, clock(), expansions.clone());
            let wiki = r.get("wiki").unwrap();
            let named = crate::intent::asks_what_changed(q) && names_source(wiki, &asked);
            let out = for_source(wiki, q, None, &t, named);
            (out.time_range_from_question, out.filters.and_then(|f| f.time_range).is_some())
        };
        // "What changed on the wiki in the last week": the wiki's pages of that week, by date.
        assert_eq!(sent("最近一周wiki上改了哪些页面？"), (true, true));
        assert!(crate::analysis::asks_for_list("What changed on the wiki in the last week?"));
        assert_eq!(sent("What changed on the wiki in the last week?"), (true, true));
        // A policy question with a time phrase: the wiki's pages are not news.
        assert_eq!(sent("最近一周的拒收手续费是多少？"), (false, false));
        // The wiki named, but for what explains the week's events, not for what changed in it.
        assert_eq!(sent("上周的支付故障，wiki上有哪些处理说明？"), (false, false));
        assert_eq!(sent("Which wiki pages were updated last week?"), (true, true));
    }

    #[tokio::test]
    async fn a_window_ahead_filters_dates_that_lie_ahead_and_hides_nothing_else() {
        let r = registry();
        let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        let range = |source: &str, q: &str| {
            let t = extract(&r, q, clock(), vec![]);
            let out = for_source(r.get(source).unwrap(), q, None, &t, false);
            (
                out.filters.and_then(|f| f.time_range).map(|t| (t.from.unwrap().seconds, t.to.unwrap().seconds + 1)),
                out.how,
            )
        };
        // Asked at 07:00 on Tuesday 1 December 2026 in Shanghai.
        for q in ["下个月到期的订单", "orders due next month"] {
            let (orders, how) = range("orders", q);
            assert_eq!(orders, Some((at("2027-01-01T00:00:00+08:00"), at("2027-02-01T00:00:00+08:00"))), "{q}");
            assert!(how.contains("2027-01-01 – 2027-01-31"), "{how}");
            let (incidents, how) = range("incidents", q);
            assert_eq!(incidents, None, "nothing has happened next month yet: {q}");
            assert!(how.contains("ahead"), "the decision says why: {how}");
        }
        let (orders, _) = range("orders", "未来30天的订单");
        assert_eq!(
            orders,
            Some((at("2026-12-01T00:00:00+08:00"), at("2027-01-01T00:00:00+08:00"))),
            "today and 30 days"
        );
        assert_eq!(range("incidents", "未来30天的线上问题").0, None);
        let (orders, _) = range("orders", "月底前要发货的订单");
        assert_eq!(orders, Some((at("2026-12-01T00:00:00+08:00"), at("2027-01-01T00:00:00+08:00"))));
    }

    #[tokio::test]
    async fn this_month_is_the_whole_month_for_dates_ahead_and_up_to_today_for_the_rest() {
        let r = registry();
        let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        // Thursday 10 December 2026, 09:00 in Shanghai.
        let clock = Clock {
            as_of: chrono::DateTime::parse_from_rfc3339("2026-12-10T09:00:00+08:00").unwrap().into(),
            zone: chrono_tz::Asia::Shanghai,
        };
        for q in ["这个月的订单", "本月", "orders this month", "12月的订单"] {
            let t = extract(&r, q, clock, vec![]);
            let orders = for_source(r.get("orders").unwrap(), q, None, &t, false).filters.unwrap().time_range.unwrap();
            assert_eq!(
                (orders.from.unwrap().seconds, orders.to.unwrap().seconds + 1),
                (at("2026-12-01T00:00:00+08:00"), at("2027-01-01T00:00:00+08:00")),
                "something due on the 31st is this month's: {q}"
            );
            let incidents =
                for_source(r.get("incidents").unwrap(), q, None, &t, false).filters.unwrap().time_range.unwrap();
            assert_eq!(incidents.to.unwrap().seconds + 1, at("2026-12-11T00:00:00+08:00"), "up to today: {q}");
        }
    }
}
