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
//! `selection.min_score` and `selection.relative` of the best score. When no source reaches `min_score` the question says
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
    // Each question token's worth: its weight × its IDF over the permitted sources' profiles.
    let terms: Vec<(&str, f64)> = question.iter().map(|(t, w)| (t.as_str(), w * idf.of(t))).collect();
    let scored: Vec<Score> = permitted.iter().map(|s| score(s, query, &terms, doc_types)).collect();
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

/// Inverse document frequency of profile tokens over the permitted sources: a word every source
/// mentions says nothing about which one to ask.
struct Idf<'a> {
    profiles: Vec<&'a std::collections::BTreeSet<String>>,
}

impl<'a> Idf<'a> {
    fn over(sources: &[&'a Source]) -> Self {
        Idf { profiles: sources.iter().map(|s| &s.profile).collect() }
    }

    fn of(&self, token: &str) -> f64 {
        let n = self.profiles.len() as f64;
        let df = self.profiles.iter().filter(|p| p.contains(token)).count() as f64;
        ((n + 1.0) / (df + 0.5)).ln().max(0.0)
    }
}

/// One source's score for a question, and why.
struct Score {
    /// An entity pattern matched or a requested doc type is the source's: always selected.
    named: bool,
    /// Keywords plus profile matches, minus `when_not_to_use` matches.
    content: f64,
    why: String,
}

/// `terms`: the question's tokens with their worth (weight × IDF).
fn score(s: &Source, query: &str, terms: &[(&str, f64)], doc_types: &[String]) -> Score {
    let mut named = false;
    let mut value = 0.0;
    let mut why = Vec::new();
    if let Some(m) = s.patterns.iter().find_map(|p| p.find(query)) {
        named = true;
        why.push(format!("entity `{}`", m.as_str()));
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
    for &(t, worth) in terms {
        if s.profile.contains(t) {
            value += worth;
            about.push(t);
        } else if s.negative.contains(t) {
            value -= NEGATIVE_SHARE * worth;
        }
    }
    if !about.is_empty() {
        about.truncate(6);
        why.push(format!("about {}", about.join(", ")));
    }
    Score { named, content: value.max(0.0), why: why.join("; ") }
}
