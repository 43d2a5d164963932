//! Source selection: explicit sources win; otherwise every source the caller may use is scored
//! against the question and the well-scoring ones are asked. A source the caller may not use is
//! never selected, and naming one explicitly is indistinguishable from naming an unknown one.
//!
//! The score uses what each source says about itself, not hand-written keyword lists alone:
//! - an entity pattern match (`SO\d{8}`) or a requested doc type: always selected;
//! - each listed routing keyword in the question: 1.5 (at most two) — keywords are boosts;
//! - each question token (stemmed word or CJK bigram, see [`crate::analysis`]) found in the
//!   source's profile — its description, when to use it, tags, doc types and keywords, expanded
//!   with the glossary — adds its IDF over the permitted sources' profiles (a word all sources
//!   mention adds ~0), weighted 0.6 when the token came from a glossary expansion;
//! - a token found only in `when_not_to_use` takes half its IDF away.
//!
//! `selection.mode: all` (the default) asks every permitted source, ordered by relevance (score /
//! best score; 1 for a named entity), and the relevance scales each source's fusion weight: on
//! the tuning company this beat asking only the well-matching sources (BENCHMARKS.md), because a
//! source's self-description cannot know that "Li Na" is a customer of the orders database.
//! `mode: scored` selects a source when an entity names it, or when its score reaches
//! `selection.min_score` and `selection.relative` of the best score; there a question asking for a
//! rule or procedure ([`intent`]) triples the score of reference sources (no `time_phrases`),
//! which is measured to lose nDCG under `mode: all` (BENCHMARKS.md, session 7) and so is not
//! applied there. When no source reaches `min_score` the question says
//! nothing the registry recognises, and every permitted source is asked (`fallback_all`): a
//! wasted sub-query costs latency and backend load, a missed source costs the answer.

use fedsearch_core::Identity;
use fedsearch_proto::{
    api::{RoutedSource, RoutingDecision},
    types::Filters,
};

use crate::{
    analysis,
    config::{SelectionMode, SelectionSection},
    describe::Vocabulary,
    intent,
    registry::{Registry, Source},
};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RouteError {
    #[error("unknown source `{0}`; call ListSources for the sources you may use")]
    UnknownSource(String),
    #[error("you may not use any source")]
    NoSources,
}

fn routed(source: String, reason: String) -> RoutedSource {
    RoutedSource { source, reason, ..Default::default() }
}

/// Picks the sources for one query.
/// `question` is [`analysis::question_tokens`] of `query` (computed once per search: result
/// merging scores by the same tokens).
pub fn route(
    registry: &Registry,
    user: &Identity,
    query: &str,
    question: &[(String, f64)],
    filters: Option<&Filters>,
    explicit: &[String],
    selection: &SelectionSection,
) -> Result<RoutingDecision, RouteError> {
    let permitted: Vec<_> = registry.permitted(user).collect();
    if permitted.is_empty() {
        return Err(RouteError::NoSources);
    }
    if !explicit.is_empty() {
        let mut selected = Vec::new();
        for name in explicit {
            let source = registry
                .get(name)
                .filter(|s| s.permits(user))
                .ok_or_else(|| RouteError::UnknownSource(name.clone()))?;
            if !selected.iter().any(|r: &RoutedSource| r.source == *name) {
                selected.push(routed(source.name().to_string(), "named in the request".into()));
            }
        }
        let not_selected = permitted
            .iter()
            .filter(|s| !explicit.iter().any(|n| n == s.name()))
            .map(|s| routed(s.name().to_string(), "not named in the request".into()))
            .collect();
        return Ok(RoutingDecision { strategy: "explicit".into(), selected, not_selected });
    }

    let doc_types: &[String] = filters.map(|f| f.doc_types.as_slice()).unwrap_or(&[]);
    let idf = Idf::over(&permitted);
    let prepared = analysis::Prepared::new(query);
    let mut scored: Vec<Score> = permitted
        .iter()
        .zip(&idf.vocabularies)
        .map(|(s, v)| score(s, v, query, &prepared, question, &idf, doc_types))
        .collect();
    if selection.mode == SelectionMode::Scored && intent::asks_for_rule(query) {
        for (s, sc) in permitted.iter().zip(&mut scored) {
            rule_prior(s, sc);
        }
    }
    for (s, sc) in permitted.iter().zip(&scored) {
        tracing::debug!(source = s.name(), named = sc.named, score = sc.content, "routing score");
    }
    let best = scored.iter().map(|s| s.content).fold(0.0, f64::max);
    let bar = selection.min_score.max(selection.relative * best);
    let relevance = |sc: &Score| {
        if sc.named {
            1.0
        } else if best > 0.0 {
            sc.content / best
        } else {
            0.0
        }
    };
    if selection.mode == SelectionMode::All {
        let mut ranked: Vec<(RoutedSource, (bool, f64))> = permitted
            .iter()
            .zip(&scored)
            .map(|(s, sc)| {
                let why = if sc.why.is_empty() { "no match".to_string() } else { sc.why.clone() };
                let mut r = routed(s.name().to_string(), format!("every permitted source is asked; {why}"));
                r.relevance = relevance(sc);
                (r, (sc.named, relevance(sc)))
            })
            .collect();
        // Named by an entity first, then by relevance; ties keep registry order.
        ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(b.1.1.total_cmp(&a.1.1)));
        let selected = ranked.into_iter().map(|(r, _)| r).collect();
        return Ok(RoutingDecision { strategy: "all".into(), selected, not_selected: Vec::new() });
    }
    if !scored.iter().any(|s| s.named || s.content >= bar) {
        let selected = permitted
            .iter()
            .map(|s| {
                routed(
                    s.name().to_string(),
                    "no source matched the question well; querying every permitted source".into(),
                )
            })
            .collect();
        return Ok(RoutingDecision { strategy: "fallback_all".into(), selected, not_selected: Vec::new() });
    }
    let mut selected = Vec::new();
    let mut not_selected = Vec::new();
    for (s, sc) in permitted.iter().zip(scored) {
        let reason = if sc.why.is_empty() {
            format!("score {:.2}", sc.content)
        } else {
            format!("score {:.2}: {}", sc.content, sc.why)
        };
        if sc.named || sc.content >= bar {
            let mut r = routed(s.name().to_string(), reason);
            r.relevance = relevance(&sc);
            selected.push(r);
        } else {
            not_selected.push(routed(s.name().to_string(), format!("{reason} (below {bar:.2})")));
        }
    }
    Ok(RoutingDecision { strategy: "scored".into(), selected, not_selected })
}

/// What each listed keyword scores, and how many count.
const KEYWORD_SCORE: f64 = 1.5;
const MAX_KEYWORDS: usize = 2;
/// The share of a token's IDF a `when_not_to_use` match takes away.
const NEGATIVE_SHARE: f64 = 0.5;
/// What a name the source holds (a customer, a product, a page) scores when the question says
/// it, times its IDF over the permitted sources' vocabularies; at most [`MAX_ENTITIES`] count.
const ENTITY_SCORE: f64 = 2.0;
const MAX_ENTITIES: usize = 2;
/// The share of its IDF a question token earns when it is not in the source's profile but in
/// what the source holds (its titles, field values, template words).
const VOCABULARY_SHARE: f64 = 0.5;

/// What a question asking for a rule, a limit or a procedure ([`intent::asks_for_rule`])
/// multiplies the score of reference material by (sources without `routing.time_phrases`).
const RULE_PRIOR: f64 = 3.0;

/// Reference material answers rules and procedures even when its self-description lists none
/// of the question's words; records (events, orders) keep their score.
fn rule_prior(s: &Source, sc: &mut Score) {
    if s.config.routing.time_phrases {
        return;
    }
    sc.content *= RULE_PRIOR;
    let note = "the question asks for a rule or procedure and this is reference material";
    sc.why = if sc.why.is_empty() { note.to_string() } else { format!("{}; {note}", sc.why) };
}

/// Inverse document frequencies over the permitted sources: a word every source mentions says
/// nothing about which one to ask.
struct Idf<'a> {
    profiles: Vec<&'a std::collections::BTreeSet<String>>,
    /// Each permitted source's vocabulary (empty when it has none or its switch is off).
    vocabularies: Vec<std::sync::Arc<Vocabulary>>,
}

fn idf(n: usize, df: usize) -> f64 {
    ((n as f64 + 1.0) / (df as f64 + 0.5)).ln().max(0.0)
}

impl<'a> Idf<'a> {
    fn over(sources: &[&'a Source]) -> Self {
        Idf {
            profiles: sources.iter().map(|s| &s.profile).collect(),
            vocabularies: sources.iter().map(|s| s.vocabulary_in_use()).collect(),
        }
    }

    /// Over the profiles (what the sources say about themselves).
    fn of(&self, token: &str) -> f64 {
        idf(self.profiles.len(), self.profiles.iter().filter(|p| p.contains(token)).count())
    }

    /// Over what the sources say and hold.
    fn of_held(&self, token: &str) -> f64 {
        let df =
            self.profiles.iter().zip(&self.vocabularies).filter(|(p, v)| p.contains(token) || v.tokens.contains(token));
        idf(self.profiles.len(), df.count())
    }

    /// Over the names the sources hold.
    fn of_name(&self, name: &str) -> f64 {
        idf(self.vocabularies.len(), self.vocabularies.iter().filter(|v| v.entity_texts.contains(name)).count())
    }
}

/// One source's score for a question, and why.
struct Score {
    /// An entity pattern matched or a requested doc type is the source's: always selected.
    named: bool,
    /// Keywords plus profile and vocabulary matches, minus `when_not_to_use` matches.
    content: f64,
    why: String,
}

/// `question`: the question's tokens with their weights. What the vocabulary matched is never
/// named in `why` (it was read with the adapter's credentials; see [`crate::describe`]).
fn score(
    s: &Source,
    held: &Vocabulary,
    query: &str,
    prepared: &analysis::Prepared,
    question: &[(String, f64)],
    idf: &Idf,
    doc_types: &[String],
) -> Score {
    let mut named = false;
    let mut value = 0.0;
    let mut why = Vec::new();
    if let Some(m) = s.patterns.iter().find_map(|p| p.find(query)) {
        named = true;
        why.push(format!("entity `{}`", m.as_str()));
    } else if let Some(m) = held.patterns.iter().find_map(|p| p.find(query)) {
        named = true;
        why.push(format!("entity `{}` (a pattern the adapter recognises)", m.as_str()));
    }
    if let Some(t) = doc_types.iter().find(|t| s.config.routing.doc_types.contains(t)) {
        named = true;
        why.push(format!("doc type `{t}` requested"));
    }
    let lowered = query.to_lowercase();
    let keywords: Vec<&String> =
        s.keywords.iter().filter(|k| analysis::mentions(&lowered, k)).take(MAX_KEYWORDS).collect();
    if !keywords.is_empty() {
        value += KEYWORD_SCORE * keywords.len() as f64;
        why.push(format!("keyword {}", keywords.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")));
    }
    let mut about = Vec::new();
    let mut holds = 0.0;
    for (t, w) in question {
        if s.profile.contains(t) {
            value += w * idf.of(t);
            about.push(t.as_str());
        } else if held.tokens.contains(t) {
            holds += VOCABULARY_SHARE * w * idf.of_held(t);
        } else if s.negative.contains(t) {
            value -= NEGATIVE_SHARE * w * idf.of(t);
        }
    }
    let names = held.named_in(prepared);
    holds += names.iter().take(MAX_ENTITIES).map(|n| ENTITY_SCORE * idf.of_name(n)).sum::<f64>();
    if !about.is_empty() {
        about.truncate(6);
        why.push(format!("about {}", about.join(", ")));
    }
    if holds > 0.0 {
        value += holds;
        why.push(if names.is_empty() {
            "its documents' words match the question".into()
        } else {
            "it holds a name the question mentions".into()
        });
    }
    Score { named, content: value.max(0.0), why: why.join("; ") }
}

#[cfg(test)]
mod tests {
    use fedsearch_proto::adapter::{SourceDescription, VocabularyKind, VocabularyState, VocabularyTerm};

    use super::*;
    use crate::{analysis::Glossary, config::SourceConfig, describe::Vocabulary};

    fn registry_of(yaml: &str) -> Registry {
        let configs: Vec<SourceConfig> = figment::Figment::new()
            .merge(<figment::providers::Yaml as figment::providers::Format>::string(yaml))
            .extract_inner("sources")
            .unwrap();
        Registry::new(&configs, &Default::default(), Glossary::new(false, &[])).unwrap()
    }

    /// Three sources whose descriptions know no customer, product or page by name.
    fn registry() -> Registry {
        let yaml = r#"
sources:
  - name: orders
    adapter: http://127.0.0.1:1
    kind: sql
    description: "Orders, shipments and refunds of the shop"
  - name: tickets
    adapter: http://127.0.0.1:1
    kind: search
    description: "Support tickets: what customers asked and were told"
  - name: wiki
    adapter: http://127.0.0.1:2
    kind: wiki
    description: "Internal policies and procedures"
"#;
        registry_of(yaml)
    }

    fn holds(registry: &Registry, source: &str, terms: &[(&str, VocabularyKind)]) {
        let d = SourceDescription {
            name: source.into(),
            vocabulary_state: VocabularyState::Ready as i32,
            vocabulary: terms
                .iter()
                .map(|(t, k)| VocabularyTerm { text: t.to_string(), kind: *k as i32, ..Default::default() })
                .collect(),
            ..Default::default()
        };
        registry.get(source).unwrap().vocabulary.set(Vocabulary::from_description(&d).unwrap());
    }

    fn decide(r: &Registry, q: &str) -> RoutingDecision {
        let question = analysis::question_tokens(q, &r.glossary().expand(q));
        let selection = SelectionSection { mode: SelectionMode::Scored, ..Default::default() };
        route(r, &Identity::default(), q, &question, None, &[], &selection).unwrap()
    }

    fn selected(d: &RoutingDecision) -> Vec<&str> {
        d.selected.iter().map(|s| s.source.as_str()).collect()
    }

    #[tokio::test]
    async fn a_name_only_one_source_holds_routes_there_without_saying_the_name() {
        let r = registry();
        let q = "Was Kessler Maschinenbau charged twice?";
        assert_eq!(decide(&r, q).strategy, "fallback_all", "no self-description knows the customer");
        holds(&r, "orders", &[("kessler maschinenbau", VocabularyKind::Entity), ("kessler", VocabularyKind::Entity)]);
        holds(&r, "wiki", &[("Refund policy", VocabularyKind::Term)]);
        let d = decide(&r, q);
        assert_eq!((d.strategy.as_str(), selected(&d)), ("scored", vec!["orders"]), "{d:?}");
        let reasons: String = d.selected.iter().chain(&d.not_selected).map(|s| s.reason.to_lowercase()).collect();
        assert!(!reasons.contains("kessler"), "the vocabulary never shows: {reasons}");
        assert!(reasons.contains("holds a name"), "{reasons}");
    }

    #[tokio::test]
    async fn title_words_weigh_by_how_many_sources_hold_them() {
        let r = registry();
        holds(&r, "tickets", &[("迅达电子 BK26-10452 因台风甩柜", VocabularyKind::Term)]);
        holds(&r, "wiki", &[("台风应急流程", VocabularyKind::Term)]);
        // 迅达电子 is in the tickets' titles only; 台风 in two sources' titles.
        let d = decide(&r, "迅达电子的柜子现在到哪了？");
        assert_eq!(selected(&d), ["tickets"], "{d:?}");
        // A word two of the three sources hold says little about which one to ask.
        assert_eq!(decide(&r, "台风期间怎么办？").strategy, "fallback_all");
    }

    #[tokio::test]
    async fn a_source_switched_off_is_scored_by_its_config_alone() {
        let mut configs: Vec<SourceConfig> = registry().all().map(|s| s.config.clone()).collect();
        configs[0].routing.vocabulary = Some(false);
        let r = Registry::new(&configs, &Default::default(), Glossary::new(false, &[])).unwrap();
        holds(&r, "orders", &[("kessler", VocabularyKind::Entity)]);
        assert_eq!(decide(&r, "Was Kessler charged twice?").strategy, "fallback_all");
    }

    /// A shop whose orders and tickets are events (`time_phrases`) and whose wiki is reference
    /// material; no source lists a routing keyword.
    fn shop() -> Registry {
        let yaml = r#"
sources:
  - name: orders
    adapter: http://127.0.0.1:1
    kind: sql
    description: "Orders of the shop: what was bought, paid, shipped and refunded"
    routing: { time_phrases: true }
  - name: tickets
    adapter: http://127.0.0.1:1
    kind: search
    description: "Support tickets: what customers asked about a delivery or a refund and were told"
    routing: { time_phrases: true }
  - name: wiki
    adapter: http://127.0.0.1:2
    kind: wiki
    description: "Internal handbook: returns, refunds, delivery times"
"#;
        registry_of(yaml)
    }

    #[tokio::test]
    async fn a_policy_question_without_listed_keywords_reaches_the_wiki() {
        let r = shop();
        let d = decide(&r, "Within how many days may a shopper send back a refunded delivery?");
        assert!(selected(&d).contains(&"wiki"), "{d:?}");
        assert!(d.selected.iter().any(|s| s.source == "wiki" && s.reason.contains("asks for a rule")), "{d:?}");
        let d = decide(&r, "按规定，退款要几天到账？");
        assert_eq!(d.strategy, "fallback_all", "no source says anything in Chinese: {d:?}");
    }

    #[tokio::test]
    async fn an_order_question_without_an_order_number_reaches_sql() {
        let r = shop();
        let d = decide(&r, "Which orders were paid but not shipped?");
        assert_eq!((d.strategy.as_str(), selected(&d)), ("scored", vec!["orders"]), "{d:?}");
        holds(&r, "orders", &[("李娜", VocabularyKind::Entity)]);
        let d = decide(&r, "李娜买的投影仪送到了吗？");
        assert_eq!(selected(&d), ["orders"], "a customer the orders hold: {d:?}");
    }

    #[tokio::test]
    async fn a_question_matching_nothing_asks_every_source_and_says_why() {
        let r = shop();
        let d = decide(&r, "Anything new about Kessler?");
        assert_eq!((d.strategy.as_str(), selected(&d)), ("fallback_all", vec!["orders", "tickets", "wiki"]));
        assert!(d.selected.iter().all(|s| s.reason.contains("no source matched")), "{d:?}");
    }

    #[tokio::test]
    async fn an_id_pattern_the_adapter_recognises_names_the_source() {
        let r = registry();
        let d = SourceDescription {
            name: "orders".into(),
            entity_patterns: vec![r"(?P<order_no>SO\d{8})".into()],
            ..Default::default()
        };
        r.get("orders").unwrap().vocabulary.set(Vocabulary::from_description(&d).unwrap());
        let decided = decide(&r, "where is SO20261001");
        assert_eq!(selected(&decided), ["orders"], "{decided:?}");
        assert_eq!(decided.selected[0].relevance, 1.0);
    }
}
