//! One logical wiki source: a connector, an identity mode, namespace → doc type mapping and
//! the filters the adapter applies after the wiki answered.
//!
//! Filters (reported in `SourceDescription.supported_filters`):
//! - `time_range`: DokuWiki has no date filter, so it is applied on each page's `mtime` after the
//!   search; Confluence gets it as `lastmodified` bounds in the CQL and again afterwards. A
//!   DokuWiki window with both ends (at most a year) also lists the pages changed in it that the
//!   searches did not find, after them, newest first ([`Source::changed_in`]): within a window every
//!   page of it may answer, as in the es-adapter ("最近一周wiki上改了哪些页面"). Confluence does not
//!   list yet.
//! - `doc_types`: applied on the doc type derived from the namespace (space) mapping.
//! - `equals`: only the key `namespace` is supported (exact namespace or space key).
//! - `tags` and other `equals` keys are not supported by this source and are ignored on purpose
//!   (wiki pages carry no tags the adapter can read); Describe does not list them, and the
//!   adapter reports each ignored filter as a note in the source's status message.
//!
//! A sub-query becomes a plan of searches ([`crate::terms`]): on DokuWiki they run concurrently
//! (each as the user, so the ACL applies to each) and are merged and ranked by how many terms
//! matched ([`crate::merge`]); on Confluence they are ORed in one CQL and Confluence's order is
//! kept. When some searches fail the answer comes from the rest with a note; when all fail,
//! the most telling error is the answer (the user's credential refused first).
//!
//! Results are cut to the sub-query limit after filtering and ranked 1... Then the text and the
//! revision history (`wiki.getPageVersions`) of the best DokuWiki hits are read, as the user:
//! versions are inferred from the text ([`crate::version`]), and the history gives the hit its
//! current revision's date (`updated_at`), `metadata.revision_count`, `metadata.first_revision_at`
//! (RFC 3339, when the whole history was read) and, for a page whose text states no effective
//! date, `version.effective_at` = its first revision's date — so of two editions of a policy the
//! one written later is the newer even when the old one was edited last.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use fedsearch_adapter_kit::{AdapterError, FetchResponse, SourceDescription, SourceHit, SubQuery, UserContext};
use fedsearch_proto::types::{Filters, TimeRange, VersionInfo};
use prost_types::Timestamp;

use crate::{
    config::SearchConfig,
    confluence::{self, Confluence},
    dokuwiki::{self, DokuWiki, History},
    identity::{Credential, Identity},
    merge, passages,
    terms::{self, Plan},
    text,
    version::{self, Parser, Stated},
};

/// Current versions read for superseded hits, at most, per sub-query.
const MAX_CURRENT_READS: usize = 3;
/// Snippet length of a page read whole: a superseded hit's current version, a window's changed page.
const CURRENT_SNIPPET_CHARS: usize = 240;
/// Pages changed in a window that one sub-query reads, at most ([`Source::changed_in`]).
const MAX_LISTED_READS: usize = 10;
/// The longest window whose changed pages are listed (the es-adapter's bound).
const MAX_LISTED_WINDOW_SECS: i64 = 366 * 86_400;

/// A page read whole (not found by a search) as a result: its first [`CURRENT_SNIPPET_CHARS`] of
/// plain text for a snippet, no matched terms.
fn found_from_page(page: PageText, score: Option<f64>) -> Found {
    Found {
        snippet: text::plain_text(&page.content, CURRENT_SNIPPET_CHARS),
        id: page.id,
        title: page.title,
        url: page.url,
        updated_at: page.updated_at,
        score,
        namespace: page.namespace,
        extra: page.extra,
        matched: Vec::new(),
    }
}

/// The sub-query's time window when its pages can be listed: it has both ends and spans at most
/// a year, or it is an open-ended past ("more than six weeks ago": from the router's epoch,
/// [`fedsearch_core::time::starts_at_epoch`], up to a day).
fn listable_window(filters: Option<&Filters>) -> Option<&TimeRange> {
    let range = filters?.time_range.as_ref()?;
    let (from, to) = (range.from.as_ref()?, range.to.as_ref()?);
    let open_past = fedsearch_core::time::starts_at_epoch(from);
    (to.seconds >= from.seconds && (open_past || to.seconds - from.seconds <= MAX_LISTED_WINDOW_SECS)).then_some(range)
}

/// What a page read for its version says: its version lines and its revision history.
#[derive(Debug, Clone, Default)]
pub struct PageFacts {
    pub stated: Stated,
    /// `None`: the wiki listed no revision, or does not offer `wiki.getPageVersions`.
    pub history: Option<History>,
    /// The page's plain text, its first `PAGE_TEXT_CHARS` (4,000) characters: where
    /// [`crate::passages`] finds what the snippet does not show.
    pub text: String,
}

/// Characters of a page's plain text kept with its facts.
const PAGE_TEXT_CHARS: usize = 4_000;

impl PageFacts {
    /// Its weight in the cache: 1 for the facts, plus 1 per KiB of kept text.
    fn weight(&self) -> u32 {
        1 + u32::try_from(self.text.len() / 1024).unwrap_or(u32::MAX)
    }
}

/// Reading version lines and revision histories of pages: the parser, how many pages, and the
/// parsed-metadata cache keyed by (page id, mtime) — see [`crate::version`] for why no user is
/// in the key (a new revision changes the mtime, so the key).
#[derive(Debug, Clone)]
pub struct Versions {
    pub parser: Parser,
    pub lookups: usize,
    pub cache: moka::future::Cache<(String, i64), Arc<PageFacts>>,
}

impl Versions {
    pub fn new(parser: Parser, lookups: usize, cache_entries: u64) -> Self {
        Self {
            parser,
            lookups,
            cache: moka::future::Cache::builder()
                .weigher(|_, facts: &Arc<PageFacts>| facts.weight())
                .max_capacity(cache_entries)
                .time_to_idle(Duration::from_secs(24 * 3600))
                .build(),
        }
    }
}

/// What one sub-query produced: hits, and notes for the status line.
#[derive(Debug, Default)]
pub struct Answer {
    pub hits: Vec<SourceHit>,
    pub notes: Vec<String>,
}

/// Time kept back from the page reads for sending the answer.
const ANSWER_MARGIN: Duration = Duration::from_millis(50);

/// One search result as a connector understood it.
#[derive(Debug, Clone)]
pub struct Found {
    /// Page id (DokuWiki) or content id (Confluence): local id and full-text reference.
    pub id: String,
    pub title: String,
    /// Clean, bounded plain text.
    pub snippet: String,
    pub url: String,
    pub updated_at: Option<Timestamp>,
    pub score: Option<f64>,
    /// DokuWiki namespace or Confluence space key.
    pub namespace: String,
    /// More metadata.
    pub extra: Vec<(String, String)>,
    /// The alternatives of each search that found the page (set by [`crate::merge`]).
    pub matched: Vec<Vec<String>>,
}

/// A page's full text as a connector read it.
#[derive(Debug, Clone)]
pub struct PageText {
    pub id: String,
    pub title: String,
    pub content: String,
    pub url: String,
    pub updated_at: Option<Timestamp>,
    pub namespace: String,
    pub extra: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub enum Connector {
    DokuWiki(DokuWiki),
    Confluence(Confluence),
}

impl Connector {
    pub fn kind(&self) -> &'static str {
        match self {
            Connector::DokuWiki(_) => "dokuwiki",
            Connector::Confluence(_) => "confluence",
        }
    }
}

/// A configured logical source.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub description: String,
    pub when_to_use: String,
    pub connector: Connector,
    pub identity: Arc<Identity>,
    pub doc_types: BTreeMap<String, String>,
    pub default_doc_type: String,
    pub namespaces: Vec<String>,
    pub request_timeout: Duration,
    pub search: SearchConfig,
    /// `None`: no page reads (versions are still inferred from `_<year>` ids).
    pub versions: Option<Versions>,
}

/// Of several failed searches, the error to answer with: the user's credential or permission
/// refused first (the same for every search), then the first failure.
fn telling_error(errors: Vec<AdapterError>) -> AdapterError {
    let rank = |e: &AdapterError| match e {
        AdapterError::Unauthenticated(_) => 0,
        AdapterError::PermissionDenied(_) => 1,
        _ => 2,
    };
    let best = errors.iter().enumerate().min_by_key(|(i, e)| (rank(e), *i)).map(|(i, _)| i).unwrap_or(0);
    errors.into_iter().nth(best).unwrap_or_else(|| AdapterError::Internal("no search ran".into()))
}

/// One page's stated version and history: from the cache for its (id, mtime), else read as the
/// user (text and history at once). Cached only when both reads answered (a wiki without
/// `wiki.getPageVersions` counts as an answer: no history).
async fn read_version(
    v: &Versions,
    wiki: &DokuWiki,
    credential: &Credential,
    f: &Found,
    left: Duration,
) -> Option<PageFacts> {
    let key = f.updated_at.as_ref().map(|t| (f.id.clone(), t.seconds));
    if let Some(key) = &key
        && let Some(hit) = v.cache.get(key).await
    {
        return Some(hit.as_ref().clone());
    }
    if left.is_zero() {
        return None;
    }
    let (text, history) = tokio::join!(wiki.page_text(credential, &f.id, left), wiki.history(credential, &f.id, left));
    let text = match text {
        Ok(text) => text,
        Err(e) => {
            tracing::debug!(error = %e, "page not read for its version");
            return None;
        }
    };
    let (history, settled) = match history {
        Ok(h) => (h, true),
        Err(e) => {
            tracing::debug!(error = %e, "page history not read");
            (None, matches!(e, AdapterError::FailedPrecondition(_)))
        }
    };
    let facts =
        PageFacts { stated: v.parser.parse(&f.id, &text), history, text: text::plain_text(&text, PAGE_TEXT_CHARS) };
    if let Some(key) = key
        && settled
    {
        v.cache.insert(key, Arc::new(facts.clone())).await;
    }
    Some(facts)
}

fn at(seconds: i64) -> Timestamp {
    Timestamp { seconds, nanos: 0 }
}

/// `revision_count` and, when the whole history was read, `first_revision_at` (RFC 3339).
fn history_metadata(history: &History) -> Vec<(String, String)> {
    let mut out = vec![("revision_count".to_string(), history.count.to_string())];
    if history.complete
        && let Some(first) = chrono::DateTime::from_timestamp(history.first, 0)
    {
        out.push(("first_revision_at".into(), first.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)));
    }
    out
}

/// A page's revision history on its hit: the current revision's date, the metadata, and the
/// first revision's date as `effective_at` when the text states none.
fn apply_history(found: &mut Found, version: &mut Option<VersionInfo>, history: &History) {
    found.updated_at = Some(at(history.current));
    found.extra.extend(history_metadata(history));
    if history.complete {
        let v = version.get_or_insert_with(VersionInfo::default);
        if v.effective_at.is_none() {
            v.effective_at = Some(at(history.first));
        }
    }
}

/// The filter names this adapter applies.
pub const SUPPORTED_FILTERS: [&str; 3] = ["time_range", "doc_types", "equals"];

fn in_namespace(ns: &str, prefix: &str) -> bool {
    ns == prefix || ns.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(':'))
}

fn in_range(t: Option<&Timestamp>, range: &TimeRange) -> bool {
    let Some(t) = t else {
        // no date known: a time filter cannot be satisfied
        return range.from.is_none() && range.to.is_none();
    };
    let key = |t: &Timestamp| (t.seconds, t.nanos);
    range.from.as_ref().is_none_or(|from| key(t) >= key(from)) && range.to.as_ref().is_none_or(|to| key(t) <= key(to))
}

impl Source {
    /// The doc type of a namespace: longest configured prefix, else the default.
    pub fn doc_type_of(&self, namespace: &str) -> &str {
        self.doc_types
            .iter()
            .filter(|(prefix, _)| in_namespace(namespace, prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map_or(self.default_doc_type.as_str(), |(_, t)| t.as_str())
    }

    pub fn describe(&self) -> SourceDescription {
        let mut doc_types: Vec<String> = self.doc_types.values().cloned().collect();
        doc_types.push(self.default_doc_type.clone());
        doc_types.sort();
        doc_types.dedup();
        SourceDescription {
            name: self.name.clone(),
            kind: self.connector.kind().into(),
            description: self.description.clone(),
            when_to_use: self.when_to_use.clone(),
            supported_filters: SUPPORTED_FILTERS.iter().map(|f| f.to_string()).collect(),
            doc_types,
            // No vocabulary: the wiki is only ever read as the end user (no service account to
            // list its pages with), so it describes itself by its config alone.
            ..Default::default()
        }
    }

    fn allowed_namespace(&self, ns: &str) -> bool {
        self.namespaces.is_empty() || self.namespaces.iter().any(|p| in_namespace(ns, p))
    }

    /// Whether a result passes the configured namespaces and the sub-query's filters.
    pub fn keep(&self, found: &Found, filters: Option<&Filters>) -> bool {
        if !self.allowed_namespace(&found.namespace) {
            return false;
        }
        let Some(f) = filters else { return true };
        if let Some(range) = &f.time_range
            && !in_range(found.updated_at.as_ref(), range)
        {
            return false;
        }
        if !f.doc_types.is_empty() && !f.doc_types.iter().any(|t| t == self.doc_type_of(&found.namespace)) {
            return false;
        }
        if let Some(ns) = f.equals.get("namespace")
            && &found.namespace != ns
        {
            return false;
        }
        true
    }

    /// The filters this source cannot apply, as notes for the caller's status line.
    pub fn ignored_filters(&self, filters: Option<&Filters>) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(f) = filters {
            if !f.tags.is_empty() {
                notes.push("filter `tags` not applied: wiki pages carry no tags".to_string());
            }
            for key in f.equals.keys().filter(|k| k.as_str() != "namespace") {
                notes.push(format!("filter `equals.{key}` not applied: only `namespace` is supported"));
            }
        }
        notes
    }

    pub fn to_hit(&self, found: Found, rank: u32) -> SourceHit {
        let mut metadata: std::collections::HashMap<String, String> = found.extra.into_iter().collect();
        metadata.insert("namespace".into(), found.namespace.clone());
        metadata.insert("wiki".into(), self.connector.kind().into());
        SourceHit {
            local_id: found.id.clone(),
            title: found.title,
            snippet: found.snippet,
            url: found.url,
            updated_at: found.updated_at,
            rank,
            score: found.score,
            metadata,
            full_text_ref: found.id,
            doc_type: self.doc_type_of(&found.namespace).to_string(),
            content_fingerprint: String::new(),
            version: None,
        }
    }

    fn credential(&self, user: Option<&UserContext>) -> Result<Credential, AdapterError> {
        self.identity.credential_for(user)
    }

    /// Runs one sub-query as its user: the hits, ranked, at most `limit`, and notes.
    pub async fn search(&self, query: &SubQuery, budget: Duration) -> Result<Answer, AdapterError> {
        let started = Instant::now();
        if query.text.trim().is_empty() && query.terms.iter().all(|t| t.trim().is_empty()) {
            return Err(AdapterError::InvalidArgument("query text must not be empty".into()));
        }
        let credential = self.credential(query.user.as_ref())?;
        let plan = terms::plan(&query.text, &query.terms, &query.original_text, &self.search);
        if plan.searches.is_empty() {
            return Ok(Answer { hits: vec![], notes: vec!["nothing searchable is left in the query".into()] });
        }
        let filters = query.filters.as_ref();
        let timeout = budget.min(self.request_timeout);
        let limit = query.limit.max(1) as usize;
        let mut notes = Vec::new();
        let mut found = match &self.connector {
            Connector::DokuWiki(wiki) => {
                let all = self.search_dokuwiki(wiki, &credential, &plan, timeout, &mut notes).await?;
                let mut kept: Vec<Found> = all.into_iter().filter(|f| self.keep(f, filters)).take(limit).collect();
                if let Some(range) = listable_window(filters)
                    && kept.len() < limit
                {
                    let left = budget.saturating_sub(started.elapsed()).saturating_sub(ANSWER_MARGIN);
                    let listed = self.changed_in(wiki, &credential, range, &kept, limit - kept.len(), left).await;
                    kept.extend(listed.into_iter().filter(|f| self.keep(f, filters)));
                }
                kept
            }
            Connector::Confluence(site) => {
                let texts: Vec<&str> =
                    plan.searches.iter().flat_map(|s| s.alternatives.iter().map(String::as_str)).collect();
                let cql = site.cql(&texts, filters.and_then(|f| f.time_range.as_ref()));
                let mut kept = Vec::new();
                let mut start = 0u32;
                for _ in 0..site.max_pages {
                    let want = (limit - kept.len()) as u32;
                    let page = site.search_page(&credential, &cql, start, want.min(site.page_size), timeout).await?;
                    kept.extend(page.found.into_iter().filter(|f| self.keep(f, filters)));
                    start += page.size as u32;
                    if kept.len() >= limit || !page.more || page.size == 0 {
                        break;
                    }
                }
                kept.truncate(limit);
                kept
            }
        };
        let versions = match &self.connector {
            Connector::DokuWiki(wiki) => {
                let left = budget.saturating_sub(started.elapsed()).saturating_sub(ANSWER_MARGIN);
                let facts = self.read_versions(wiki, &credential, &found, left.min(self.request_timeout)).await;
                let pairs: Vec<(String, Option<Stated>)> = found
                    .iter()
                    .map(|f| f.id.clone())
                    .zip(facts.iter().map(|p| p.as_ref().map(|p| p.stated.clone())))
                    .collect();
                let mut versions = version::infer(&pairs);
                for ((f, v), p) in found.iter_mut().zip(versions.iter_mut()).zip(&facts) {
                    if let Some(h) = p.as_ref().and_then(|p| p.history.as_ref()) {
                        apply_history(f, v, h);
                    }
                    if let Some(p) = p {
                        f.snippet = passages::extend(&f.snippet, &p.text, &f.matched);
                    }
                }
                versions
            }
            Connector::Confluence(_) => vec![None; found.len()],
        };
        let (found, versions) = match &self.connector {
            Connector::DokuWiki(wiki) => {
                let left = budget.saturating_sub(started.elapsed()).saturating_sub(ANSWER_MARGIN);
                self.with_current_versions(wiki, &credential, found, versions, filters, left).await
            }
            Connector::Confluence(_) => (found, versions),
        };
        let hits = found
            .into_iter()
            .zip(versions)
            .enumerate()
            .map(|(i, (f, v))| {
                let mut hit = self.to_hit(f, i as u32 + 1);
                hit.version = v;
                hit
            })
            .collect();
        Ok(Answer { hits, notes })
    }

    /// The pages changed in `range` that the search did not find (`found`), newest first, at
    /// most `want` and [`MAX_LISTED_READS`]: `wiki.getRecentChanges` as the user (the wiki checks
    /// its ACL), then each page read as the user. Within a window every page of it may answer, as
    /// in the es-adapter: "最近一周wiki上改了哪些页面" names no word any page shows. A failed call lists
    /// nothing (the search's pages still answer).
    async fn changed_in(
        &self,
        wiki: &DokuWiki,
        credential: &Credential,
        range: &TimeRange,
        found: &[Found],
        want: usize,
        left: Duration,
    ) -> Vec<Found> {
        let Some(from) = range.from.as_ref() else { return Vec::new() };
        let timeout = left.min(self.request_timeout);
        if timeout.is_zero() {
            return Vec::new();
        }
        let mut changed = match wiki.recent_changes(credential, from.seconds, timeout).await {
            Ok(changed) => changed,
            Err(e) => {
                tracing::debug!(error = %e, "recent changes not listed");
                return Vec::new();
            }
        };
        changed.retain(|(id, at)| {
            in_range(at.as_ref(), range)
                && self.allowed_namespace(dokuwiki::namespace_of(id))
                && !found.iter().any(|f| &f.id == id)
        });
        changed.sort_by(|a, b| b.1.as_ref().map(|t| t.seconds).cmp(&a.1.as_ref().map(|t| t.seconds)));
        changed.truncate(want.min(MAX_LISTED_READS));
        let pages = futures::future::join_all(changed.iter().map(|(id, _)| wiki.page(credential, id, timeout))).await;
        pages
            .into_iter()
            .filter_map(Result::ok)
            .map(|page| {
                let mut found = found_from_page(page, None);
                found.extra.push(("listed".into(), "changed in the time window".into()));
                found
            })
            .collect()
    }

    /// A superseded page whose current version the search did not return brings it along,
    /// placed just before it, when this user may read it (read as the user: the wiki decides)
    /// and it passes the same filters — so an old edition is never the only one shown.
    async fn with_current_versions(
        &self,
        wiki: &DokuWiki,
        credential: &Credential,
        mut found: Vec<Found>,
        mut versions: Vec<Option<VersionInfo>>,
        filters: Option<&Filters>,
        left: Duration,
    ) -> (Vec<Found>, Vec<Option<VersionInfo>>) {
        let missing: Vec<(usize, String)> = versions
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = v.as_ref().filter(|v| v.status == "superseded" && !v.superseded_by.is_empty())?;
                (!found.iter().any(|f| f.id == v.superseded_by)).then(|| (i, v.superseded_by.clone()))
            })
            .take(MAX_CURRENT_READS)
            .collect();
        if missing.is_empty() || left.is_zero() {
            return (found, versions);
        }
        let pages = futures::future::join_all(missing.iter().map(|(_, id)| wiki.page(credential, id, left))).await;
        // Insert from the back so earlier positions stay valid.
        for ((at, id), page) in missing.into_iter().zip(pages).rev() {
            let Ok(page) = page else { continue };
            if found.iter().any(|f| f.id == id) {
                continue;
            }
            let current = found_from_page(page, found[at].score);
            if !self.keep(&current, filters) {
                continue;
            }
            let old = versions[at].clone().unwrap_or_default();
            let version = VersionInfo {
                family: if old.family.is_empty() { id.clone() } else { old.family.clone() },
                status: "current".into(),
                supersedes: found[at].id.clone(),
                ..Default::default()
            };
            found.insert(at, current);
            versions.insert(at, Some(version));
        }
        (found, versions)
    }

    /// Every search of the plan at once, as the user; merged. All failed → the telling error;
    /// some failed → a note.
    async fn search_dokuwiki(
        &self,
        wiki: &DokuWiki,
        credential: &Credential,
        plan: &Plan,
        timeout: Duration,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Found>, AdapterError> {
        let results =
            futures::future::join_all(plan.searches.iter().map(|s| wiki.search(credential, &s.query, timeout))).await;
        let total = results.len();
        let mut answers = Vec::new();
        let mut errors = Vec::new();
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(found) => answers.push((i, found)),
                Err(e) => {
                    tracing::debug!(search = i, error = %e, "one wiki search failed");
                    errors.push(e);
                }
            }
        }
        if answers.is_empty() {
            return Err(telling_error(errors));
        }
        if let Some(first) = errors.first() {
            notes.push(format!(
                "{} of {total} wiki searches failed ({first}); the answer comes from the others",
                errors.len()
            ));
        }
        Ok(merge::merge(plan, answers, &self.search.ranking))
    }

    /// What the text and history of the best hits state about their versions (`None` where not
    /// read). Only pages this user's search just returned are read, as this user, within `left`.
    async fn read_versions(
        &self,
        wiki: &DokuWiki,
        credential: &Credential,
        found: &[Found],
        left: Duration,
    ) -> Vec<Option<PageFacts>> {
        let Some(v) = &self.versions else { return vec![None; found.len()] };
        let n = v.lookups.min(found.len());
        let mut stated =
            futures::future::join_all(found[..n].iter().map(|f| read_version(v, wiki, credential, f, left))).await;
        stated.resize(found.len(), None);
        stated
    }

    /// The full text of `reference` as the user; the wiki re-checks permission now.
    pub async fn fetch(
        &self,
        reference: &str,
        user: Option<&UserContext>,
        budget: Duration,
    ) -> Result<FetchResponse, AdapterError> {
        let credential = self.credential(user)?;
        let timeout = budget.min(self.request_timeout);
        let page = match &self.connector {
            Connector::DokuWiki(wiki) => {
                if !dokuwiki::valid_page_id(reference) {
                    return Err(AdapterError::InvalidArgument("reference is not a wiki page id".into()));
                }
                let (page, history) = tokio::join!(
                    wiki.page(&credential, reference, timeout),
                    wiki.history(&credential, reference, timeout)
                );
                let mut page = page?;
                match history {
                    Ok(Some(h)) => {
                        page.updated_at = Some(at(h.current));
                        page.extra.extend(history_metadata(&h));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::debug!(error = %e, "page history not read"),
                }
                page
            }
            Connector::Confluence(site) => {
                if !confluence::valid_content_id(reference) {
                    return Err(AdapterError::InvalidArgument("reference is not a confluence content id".into()));
                }
                site.page(&credential, reference, timeout).await?
            }
        };
        if !self.allowed_namespace(&page.namespace) {
            return Err(AdapterError::NotFound("no such page in this source".into()));
        }
        let mut metadata: std::collections::HashMap<String, String> = page.extra.into_iter().collect();
        metadata.insert("namespace".into(), page.namespace.clone());
        metadata.insert("wiki".into(), self.connector.kind().into());
        Ok(FetchResponse {
            id: page.id,
            title: page.title,
            content: page.content,
            url: page.url,
            updated_at: page.updated_at,
            metadata,
            doc_type: self.doc_type_of(&page.namespace).to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::CredentialKind;

    fn source(namespaces: &[&str]) -> Source {
        Source {
            name: "wiki".into(),
            description: String::new(),
            when_to_use: String::new(),
            connector: Connector::DokuWiki(DokuWiki::new("http://w", reqwest::Client::new())),
            identity: Arc::new(Identity::Delegated { kind: CredentialKind::Basic }),
            doc_types: [
                ("public".to_string(), "policy".to_string()),
                ("support".into(), "runbook".into()),
                ("support:old".into(), "archive".into()),
            ]
            .into_iter()
            .collect(),
            default_doc_type: "page".into(),
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            request_timeout: Duration::from_secs(1),
            search: SearchConfig::default(),
            versions: None,
        }
    }

    fn found(ns: &str, seconds: Option<i64>) -> Found {
        Found {
            id: format!("{ns}:p"),
            title: "t".into(),
            snippet: "s".into(),
            url: "u".into(),
            updated_at: seconds.map(|seconds| Timestamp { seconds, nanos: 0 }),
            score: Some(3.0),
            namespace: ns.into(),
            extra: vec![],
            matched: vec![],
        }
    }

    #[test]
    fn doc_type_is_the_longest_namespace_prefix() {
        let s = source(&[]);
        assert_eq!(s.doc_type_of("support"), "runbook");
        assert_eq!(s.doc_type_of("support:old:x"), "archive");
        assert_eq!(s.doc_type_of("supportive"), "page");
        assert_eq!(s.doc_type_of(""), "page");
        assert_eq!(s.describe().doc_types, vec!["archive", "page", "policy", "runbook"]);
        assert_eq!(s.describe().supported_filters, vec!["time_range", "doc_types", "equals"]);
    }

    #[test]
    fn filters_apply_on_mtime_doc_type_and_namespace() {
        let s = source(&[]);
        let range = TimeRange {
            from: Some(Timestamp { seconds: 100, nanos: 0 }),
            to: Some(Timestamp { seconds: 200, nanos: 0 }),
        };
        let f = Filters { time_range: Some(range), ..Default::default() };
        assert!(s.keep(&found("public", Some(150)), Some(&f)));
        assert!(!s.keep(&found("public", Some(99)), Some(&f)));
        assert!(!s.keep(&found("public", Some(201)), Some(&f)));
        assert!(!s.keep(&found("public", None), Some(&f)));
        let f = Filters { doc_types: vec!["runbook".into()], ..Default::default() };
        assert!(s.keep(&found("support", None), Some(&f)));
        assert!(!s.keep(&found("public", None), Some(&f)));
        let f = Filters {
            equals: [("namespace".to_string(), "public".to_string())].into_iter().collect(),
            tags: vec!["x".into()],
            ..Default::default()
        };
        assert!(s.keep(&found("public", None), Some(&f)));
        assert!(!s.keep(&found("support", None), Some(&f)));
        let scoped = source(&["public"]);
        assert!(scoped.keep(&found("public", None), None));
        assert!(!scoped.keep(&found("finance", None), None));
    }

    #[test]
    fn hits_carry_rank_ref_doc_type_and_namespace() {
        let hit = source(&[]).to_hit(found("support", Some(5)), 2);
        assert_eq!((hit.rank, hit.local_id.as_str(), hit.full_text_ref.as_str()), (2, "support:p", "support:p"));
        assert_eq!(hit.doc_type, "runbook");
        assert_eq!(hit.metadata.get("namespace").map(String::as_str), Some("support"));
        assert_eq!(hit.updated_at.map(|t| t.seconds), Some(5));
    }

    #[test]
    fn the_users_refusal_is_the_answer_when_every_search_failed() {
        let e = telling_error(vec![
            AdapterError::DeadlineExceeded,
            AdapterError::Unauthenticated("no".into()),
            AdapterError::FailedPrecondition("fault".into()),
        ]);
        assert!(matches!(e, AdapterError::Unauthenticated(_)), "{e:?}");
        let e = telling_error(vec![AdapterError::FailedPrecondition("a".into()), AdapterError::DeadlineExceeded]);
        assert!(matches!(e, AdapterError::FailedPrecondition(m) if m == "a"));
    }
}
