//! What a source holds, for `Describe`: a bounded vocabulary read from the backend in the
//! background and refreshed periodically.
//!
//! An adapter keeps one [`VocabularyStore`] for its sources, starts [`VocabularyStore::spawn_refresh`]
//! with a function that reads one source's vocabulary (its own backend query, with the adapter's
//! service credentials), and fills each `SourceDescription` with [`VocabularyStore::fill`] in
//! `describe`. Start-up never waits for it: until the first read ends the state is `PENDING`; a
//! failed read keeps what an earlier one read (state `FAILED` only when nothing was ever read); a
//! source whose switch is off reports `OFF` and is never read. The vocabulary only helps the
//! router choose sources — it is never shown to a caller (docs/security.md).

use std::{
    collections::{BTreeSet, HashMap},
    future::Future,
    sync::{Arc, RwLock, Weak},
    time::{Duration, SystemTime},
};

pub use fedsearch_proto::adapter::{VocabularyKind, VocabularyState, VocabularyTerm};

use crate::SourceDescription;

/// The most terms one source describes itself with.
pub const MAX_TERMS: usize = 2000;
/// The longest term text, in characters (longer ones are cut).
pub const MAX_TERM_CHARS: usize = 100;
/// How long one source's read may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// `describe:` in an adapter's config file: whether and how often the sources' vocabulary is
/// read for `Describe`.
///
/// ```yaml
/// describe:
///   vocabulary: true     # false: no source's vocabulary is read
///   off: [hr_cases]      # these sources' vocabulary is never read
///   refresh: 10m
/// ```
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DescribeConfig {
    pub vocabulary: bool,
    pub off: Vec<String>,
    #[serde(with = "fedsearch_core::config::duration")]
    pub refresh: Duration,
}

impl Default for DescribeConfig {
    fn default() -> Self {
        Self { vocabulary: true, off: Vec::new(), refresh: Duration::from_secs(600) }
    }
}

impl DescribeConfig {
    /// Whether `source`'s vocabulary is read.
    pub fn reads(&self, source: &str) -> bool {
        self.vocabulary && !self.off.iter().any(|s| s == source)
    }

    /// A store for `sources` with this config's switches.
    pub fn store<'a>(&self, sources: impl IntoIterator<Item = &'a str>) -> VocabularyStore {
        VocabularyStore::new(sources.into_iter().map(|s| (s, self.reads(s))))
    }
}

#[derive(Debug, Clone)]
struct Entry {
    state: VocabularyState,
    terms: Arc<Vec<VocabularyTerm>>,
    read_at: Option<SystemTime>,
}

/// The vocabularies of an adapter's sources. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct VocabularyStore {
    inner: Arc<RwLock<HashMap<String, Entry>>>,
}

/// One term (`text` trimmed and cut to [`MAX_TERM_CHARS`]).
pub fn term(text: &str, kind: VocabularyKind, field: &str, documents: u32) -> VocabularyTerm {
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(MAX_TERM_CHARS).collect();
    VocabularyTerm { text, kind: kind as i32, field: field.to_string(), documents }
}

/// `terms` without empty or repeated texts (case-insensitive, the first kept), at most [`MAX_TERMS`].
pub fn bounded(terms: Vec<VocabularyTerm>) -> Vec<VocabularyTerm> {
    let mut seen = BTreeSet::new();
    terms
        .into_iter()
        .filter(|t| !t.text.is_empty() && seen.insert((t.kind, t.text.to_lowercase())))
        .take(MAX_TERMS)
        .collect()
}

impl VocabularyStore {
    /// A store for `sources` (name, whether its vocabulary is read): `PENDING` or `OFF`.
    pub fn new<'a>(sources: impl IntoIterator<Item = (&'a str, bool)>) -> Self {
        let entries = sources
            .into_iter()
            .map(|(name, on)| {
                let state = if on { VocabularyState::Pending } else { VocabularyState::Off };
                (name.to_string(), Entry { state, terms: Arc::default(), read_at: None })
            })
            .collect();
        Self { inner: Arc::new(RwLock::new(entries)) }
    }

    /// Sets `description`'s vocabulary fields from what was read for its source.
    pub fn fill(&self, description: &mut SourceDescription) {
        let map = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = map.get(&description.name) else { return };
        description.vocabulary_state = entry.state as i32;
        description.vocabulary = entry.terms.as_ref().clone();
        description.vocabulary_read_at = entry.read_at.map(prost_types::Timestamp::from);
    }

    /// The sources whose vocabulary is read.
    fn sources_on(&self) -> Vec<String> {
        let map = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> =
            map.iter().filter(|(_, e)| e.state != VocabularyState::Off).map(|(n, _)| n.clone()).collect();
        names.sort();
        names
    }

    fn record(inner: &RwLock<HashMap<String, Entry>>, source: &str, read: Result<Vec<VocabularyTerm>, String>) {
        let mut map = inner.write().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = map.get_mut(source) else { return };
        match read {
            Ok(terms) => {
                tracing::info!(source, terms = terms.len(), "source vocabulary read");
                *entry = Entry {
                    state: VocabularyState::Ready,
                    terms: Arc::new(bounded(terms)),
                    read_at: Some(SystemTime::now()),
                };
            }
            Err(error) => {
                tracing::warn!(source, error = %error, "source vocabulary not read; the last one is kept");
                if entry.read_at.is_none() {
                    entry.state = VocabularyState::Failed;
                }
            }
        }
    }

    /// Reads every source whose switch is on now, then every `every`, in a background task that
    /// ends when the store is dropped. Outside a tokio runtime (plain unit tests) nothing is
    /// started and the sources stay `PENDING`. Each read is cut after [`READ_TIMEOUT`].
    pub fn spawn_refresh<F, Fut>(&self, every: Duration, read: F)
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<VocabularyTerm>, String>> + Send + 'static,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let weak: Weak<RwLock<HashMap<String, Entry>>> = Arc::downgrade(&self.inner);
        let sources = self.sources_on();
        if sources.is_empty() {
            return;
        }
        runtime.spawn(async move {
            loop {
                for source in &sources {
                    let read = match tokio::time::timeout(READ_TIMEOUT, read(source.clone())).await {
                        Ok(r) => r,
                        Err(_) => Err(format!("no answer within {} s", READ_TIMEOUT.as_secs())),
                    };
                    let Some(inner) = weak.upgrade() else { return };
                    Self::record(&inner, source, read);
                }
                tokio::time::sleep(every).await;
                if weak.strong_count() == 0 {
                    return;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(store: &VocabularyStore, name: &str) -> SourceDescription {
        let mut d = SourceDescription { name: name.into(), ..Default::default() };
        store.fill(&mut d);
        d
    }

    #[test]
    fn terms_are_deduplicated_case_insensitively_and_cut() {
        let long = "x".repeat(300);
        let terms = bounded(vec![
            term("Kessler  Maschinenbau", VocabularyKind::Entity, "customers", 1),
            term("kessler maschinenbau", VocabularyKind::Entity, "customers", 1),
            term("kessler maschinenbau", VocabularyKind::Term, "title", 1),
            term("  ", VocabularyKind::Term, "title", 1),
            term(&long, VocabularyKind::Term, "title", 1),
        ]);
        assert_eq!(terms.len(), 3);
        assert_eq!(terms[0].text, "Kessler Maschinenbau");
        assert_eq!(terms[2].text.chars().count(), MAX_TERM_CHARS);
    }

    #[tokio::test]
    async fn a_read_fills_the_description_and_a_failure_keeps_it() {
        let store = VocabularyStore::new([("cases", true), ("guides", false)]);
        assert_eq!(described(&store, "cases").vocabulary_state(), VocabularyState::Pending);
        assert_eq!(described(&store, "guides").vocabulary_state(), VocabularyState::Off);
        VocabularyStore::record(&store.inner, "cases", Err("down".into()));
        assert_eq!(described(&store, "cases").vocabulary_state(), VocabularyState::Failed);
        VocabularyStore::record(&store.inner, "cases", Ok(vec![term("迅达电子", VocabularyKind::Term, "title", 1)]));
        VocabularyStore::record(&store.inner, "cases", Err("down again".into()));
        let d = described(&store, "cases");
        assert_eq!(d.vocabulary_state(), VocabularyState::Ready, "an earlier read is kept");
        assert_eq!(d.vocabulary[0].text, "迅达电子");
        assert!(d.vocabulary_read_at.is_some());

        // The background task reads the switched-on sources only.
        let fresh = VocabularyStore::new([("cases", true), ("guides", false)]);
        fresh.spawn_refresh(Duration::from_secs(3600), |source| async move {
            assert_eq!(source, "cases");
            Ok(vec![term("Nordlicht Möbel", VocabularyKind::Entity, "customers", 1)])
        });
        for _ in 0..3000 {
            if described(&fresh, "cases").vocabulary_state() == VocabularyState::Ready {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(described(&fresh, "cases").vocabulary[0].text, "Nordlicht Möbel");
        assert_eq!(described(&fresh, "guides").vocabulary_state(), VocabularyState::Off);
    }
}
