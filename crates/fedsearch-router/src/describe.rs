//! What the sources hold, from their adapters' `Describe`: each source's vocabulary (names its
//! database links, its documents' titles and keyword values, the id patterns it recognises),
//! merged into its routing profile ([`crate::registry::Source::vocabulary`]) and scored by
//! [`crate::routing`].
//!
//! One background task per adapter address asks `Describe` at start-up and every
//! `selection.vocabulary_refresh`; while an adapter says its first read is still `PENDING`, or
//! does not answer, it is asked again after a short back-off. Start-up waits at most
//! `selection.vocabulary_wait` for the first answers ([`spawn`]'s future); a source without an
//! answer keeps its config-only profile, and a failed refresh keeps the last vocabulary.
//!
//! The vocabulary was read with the adapter's service credentials, so it may name things a
//! caller may not see: it only moves scores. No vocabulary text appears in a routing reason, a
//! response or a log line (docs/security.md: the side channel and `routing.vocabulary: false`).

use std::{
    collections::{BTreeSet, HashSet},
    sync::{Arc, RwLock},
    time::Duration,
};

use fedsearch_proto::adapter::{DescribeRequest, SourceDescription, VocabularyKind, VocabularyState};
use regex::Regex;

use crate::{
    analysis::{self, Term},
    registry::Registry,
};

/// The longest a Describe call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The most id patterns taken from one source.
const MAX_PATTERNS: usize = 50;
/// The most vocabulary terms kept per source (adapters bound theirs too).
const MAX_TERMS: usize = 5000;

/// What one source holds, ready to score a question with.
#[derive(Debug, Default)]
pub struct Vocabulary {
    /// Names (customers, products, page titles) matched as a whole in the question.
    pub entities: Vec<Term>,
    /// The same names, for document frequency across sources.
    pub entity_texts: HashSet<String>,
    /// Tokens ([`analysis::tokens`]) of the source's titles, field values and template words.
    pub tokens: BTreeSet<String>,
    /// Id patterns the adapter recognises.
    pub patterns: Vec<Regex>,
    /// The names written in two scripts, as (CJK part, Latin part): [`crate::aliases`].
    pub bilingual: Vec<(String, String)>,
}

/// Whether an entity name is specific enough to route by: two CJK characters, or three
/// letters or digits, and not a stop word.
fn routable(name: &str) -> bool {
    let cjk = name.chars().filter(|c| analysis::is_cjk(*c)).count();
    let alnum = name.chars().filter(|c| c.is_alphanumeric() && !analysis::is_cjk(*c)).count();
    (cjk >= 2 || alnum >= 3) && !analysis::is_stop_word(name)
}

impl Vocabulary {
    /// The vocabulary in one source's description (`None`: it holds none to use).
    pub fn from_description(d: &SourceDescription) -> Option<Vocabulary> {
        if d.vocabulary_state() != VocabularyState::Ready && d.entity_patterns.is_empty() {
            return None;
        }
        let mut v = Vocabulary::default();
        for t in d.vocabulary.iter().take(MAX_TERMS) {
            let text = t.text.trim().to_lowercase();
            if text.is_empty() {
                continue;
            }
            if t.kind() == VocabularyKind::Entity {
                if routable(&text) && v.entity_texts.insert(text.clone()) {
                    v.bilingual.extend(crate::aliases::pair(&text));
                    v.entities.push(Term::new(&text));
                }
            } else {
                v.tokens.extend(analysis::tokens(&text));
            }
        }
        // Longest first: where two names of one source overlap, the longer one is the match.
        v.entities.sort_by(|a, b| b.text.chars().count().cmp(&a.text.chars().count()).then(a.text.cmp(&b.text)));
        v.patterns = d.entity_patterns.iter().take(MAX_PATTERNS).filter_map(|p| Regex::new(p).ok()).collect();
        Some(v)
    }

    /// The entity names of this vocabulary `question` mentions (longest first, none inside another).
    pub fn named_in<'a>(&'a self, question: &analysis::Prepared) -> Vec<&'a str> {
        let mut found: Vec<&str> = Vec::new();
        for e in &self.entities {
            if e.found_in(question) && !found.iter().any(|f| f.contains(e.text.as_str())) {
                found.push(&e.text);
            }
        }
        found
    }
}

/// A source's current vocabulary, replaced whole by each Describe answer.
#[derive(Debug, Default, Clone)]
pub struct Slot(Arc<RwLock<Arc<Vocabulary>>>);

impl Slot {
    pub fn get(&self) -> Arc<Vocabulary> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set(&self, v: Vocabulary) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(v);
    }
}

/// What one Describe answer did for the sources of one adapter.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    /// Every source that reads a vocabulary has one now (or reads none).
    Done,
    /// A source's adapter is still reading: ask again soon.
    Pending,
}

/// Stores the vocabularies of one Describe answer into the sources of `names` (router names).
fn apply(registry: &Registry, names: &[String], sources: &[SourceDescription]) -> Round {
    let mut round = Round::Done;
    for name in names {
        let Some(s) = registry.get(name) else { continue };
        let Some(d) = sources.iter().find(|d| d.name == s.target) else { continue };
        if d.vocabulary_state() == VocabularyState::Pending {
            round = Round::Pending;
        }
        if let Some(v) = Vocabulary::from_description(d) {
            tracing::info!(
                source = %name,
                entities = v.entities.len(),
                tokens = v.tokens.len(),
                patterns = v.patterns.len(),
                "source vocabulary merged into its profile"
            );
            s.vocabulary.set(v);
        }
    }
    round
}

/// Starts one Describe task per source (sources on one adapter share its channel, so this is a
/// few small calls per refresh). The returned future ends when every source's adapter answered
/// its first Describe with what the source holds, or failed to answer (callers bound it with
/// `selection.vocabulary_wait`).
pub fn spawn(registry: &Registry, refresh: Duration) -> impl std::future::Future<Output = ()> + Send + 'static {
    let names: Vec<String> =
        registry.all().filter(|s| s.config.uses_vocabulary()).map(|s| s.name().to_string()).collect();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(names.len().max(1));
    let expected = names.len();
    for name in names {
        let registry = registry.clone();
        let done = done_tx.clone();
        tokio::spawn(async move {
            let Some(source) = registry.get(&name) else { return };
            let mut client = source.client.clone();
            let mut announced = false;
            let mut backoff = Duration::from_millis(250);
            loop {
                let answer = tokio::time::timeout(CALL_TIMEOUT, client.describe(DescribeRequest {})).await;
                let answered = matches!(answer, Ok(Ok(_)));
                let round = match answer {
                    Ok(Ok(r)) => apply(&registry, std::slice::from_ref(&name), &r.into_inner().sources),
                    Ok(Err(status)) => {
                        tracing::warn!(source = %name, code = ?status.code(), "describe failed; the profile is kept");
                        Round::Done
                    }
                    Err(_) => {
                        tracing::warn!(source = %name, "describe did not answer in time; the profile is kept");
                        Round::Done
                    }
                };
                let retry = round == Round::Pending || !answered;
                if !announced && (round == Round::Done || backoff > Duration::from_secs(8)) {
                    announced = true;
                    let _ = done.send(()).await;
                }
                let wait = if retry { backoff.min(refresh) } else { refresh };
                backoff = if retry { (backoff * 2).min(refresh) } else { Duration::from_millis(250) };
                tokio::time::sleep(wait).await;
            }
        });
    }
    drop(done_tx);
    async move {
        for _ in 0..expected {
            if done_rx.recv().await.is_none() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fedsearch_proto::adapter::VocabularyTerm;

    use super::*;

    fn entity(text: &str) -> VocabularyTerm {
        VocabularyTerm { text: text.into(), kind: VocabularyKind::Entity as i32, ..Default::default() }
    }

    #[test]
    fn a_ready_description_becomes_names_tokens_and_patterns() {
        let d = SourceDescription {
            name: "orders".into(),
            vocabulary_state: VocabularyState::Ready as i32,
            vocabulary: vec![
                entity("Kessler"),
                entity("kessler maschinenbau"),
                entity("ab"),
                entity("the"),
                VocabularyTerm {
                    text: "Refund dispute for SO20261003".into(),
                    kind: VocabularyKind::Term as i32,
                    ..Default::default()
                },
            ],
            entity_patterns: vec![r"(?P<order_no>SO\d{8})".into(), "(".into()],
            ..Default::default()
        };
        let v = Vocabulary::from_description(&d).unwrap();
        let names: Vec<&str> = v.entities.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(names, ["kessler maschinenbau", "kessler"], "too short or stop words are dropped");
        assert!(v.tokens.contains("refund") && v.tokens.contains("disput"));
        assert_eq!(v.patterns.len(), 1, "a bad pattern is dropped");
        let q = analysis::Prepared::new("When do the parts of Kessler Maschinenbau arrive?");
        assert_eq!(v.named_in(&q), ["kessler maschinenbau"], "the longer name is the match");
        assert!(v.named_in(&analysis::Prepared::new("a kesslerish question")).is_empty());

        let pending = SourceDescription { vocabulary_state: VocabularyState::Pending as i32, ..d.clone() };
        assert!(Vocabulary::from_description(&SourceDescription { entity_patterns: vec![], ..pending }).is_none());
    }
}
