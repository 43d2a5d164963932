//! The current version beside every old one the answer shows.
//!
//! Fusion and result merging keep an old version (`version.status = superseded`) below its
//! current one when both were found. When the sources returned only the old one — the question
//! names the old notice's number, or its words are the old edition's — the answer would show an
//! outdated text alone, which is how an agent ends up quoting a withdrawn policy. For each such
//! hit of the final list whose `superseded_by` names a document the list lacks, the router
//! fetches that document from the same source, as the calling user (the source re-checks
//! permission: a current version the user may not read stays out), and puts it just above the
//! old one; the list keeps `top_k` hits. Fetches run concurrently and stop at the answer's
//! deadline; a failed one leaves the old hit as it was, still marked superseded.

use std::collections::HashMap;

use fedsearch_core::Identity;
use fedsearch_proto::{
    api::{Document, GetDocumentRequest},
    types::{Hit, Secret, VersionInfo},
};
use tokio::time::Instant;

use crate::state::RouterState;

/// How much of the current version's text becomes its snippet.
const SNIPPET_CHARS: usize = 300;

/// An old version of the list whose current version is missing: where it is and what to fetch.
#[derive(Debug, PartialEq, Eq)]
pub struct Missing {
    /// Index of the old hit in the list.
    pub at: usize,
    /// `<source>:<reference>` of the current version, for GetDocument.
    pub full_text_ref: String,
}

/// The old versions in `hits` whose current version is not in `hits`, with the reference of
/// that version. When the old hit's reference is its local id (a wiki page) and `superseded_by`
/// is a whole local id (`hr:leave`), that is the reference; otherwise the reference ends with
/// the document's key (an index path `idx/ID`, a row `invoice:FI-1`, a page in its namespace)
/// and the current version's key replaces it. An old hit whose reference does not end with its
/// key is left alone.
pub fn missing(hits: &[Hit]) -> Vec<Missing> {
    let mut out: Vec<Missing> = Vec::new();
    for (at, h) in hits.iter().enumerate() {
        let Some(v) = h.version.as_ref().filter(|v| v.status == "superseded" && !v.superseded_by.is_empty()) else {
            continue;
        };
        let Some(full_text_ref) = current_reference(h, &v.superseded_by) else { continue };
        let current_key = key(&v.superseded_by);
        let listed = hits.iter().any(|o| o.source == h.source && o.id != h.id && key(&o.id) == current_key);
        if !listed && !out.iter().any(|m| m.full_text_ref == full_text_ref) {
            out.push(Missing { at, full_text_ref });
        }
    }
    out
}

/// The last part of an id: after its last `:` or `/`.
pub(crate) fn key(id: &str) -> &str {
    id.rsplit([':', '/']).next().unwrap_or(id)
}

/// `<source>:<reference>` of the version `superseded_by` names, from the old hit `h`.
fn current_reference(h: &Hit, superseded_by: &str) -> Option<String> {
    let prefix = format!("{}:", h.source);
    let local = h.id.strip_prefix(&prefix)?;
    let reference = h.full_text_ref.strip_prefix(&prefix)?;
    let current = superseded_by.strip_prefix(&prefix).unwrap_or(superseded_by);
    if reference == local && current.contains([':', '/']) {
        return Some(format!("{prefix}{current}"));
    }
    let stem = reference.strip_suffix(key(local))?;
    Some(format!("{prefix}{stem}{}", key(current)))
}

/// The hit that stands for a fetched current version of `old`.
pub fn hit_of(doc: Document, old: &Hit, full_text_ref: String) -> Hit {
    let family = old.version.as_ref().map(|v| v.family.clone()).unwrap_or_default();
    let snippet: String = doc.content.chars().take(SNIPPET_CHARS).collect();
    Hit {
        id: doc.id,
        source: doc.source,
        title: doc.title,
        snippet: snippet.trim().to_string(),
        url: doc.url,
        updated_at: doc.updated_at,
        fused_score: old.fused_score,
        metadata: doc.metadata,
        full_text_ref,
        doc_type: doc.doc_type,
        version: Some(VersionInfo {
            family,
            status: "current".into(),
            supersedes: old.id.rsplit_once(':').map_or(old.id.clone(), |(_, l)| l.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Puts each fetched current version just above its old one (whose `superseded_by` then names
/// the fused id), keeping at most `top_k` hits.
pub fn insert(hits: &mut Vec<Hit>, found: Vec<(usize, Hit)>, top_k: usize) {
    let mut found = found;
    // From the bottom up, so the indices of the ones above stay right.
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (at, current) in found {
        if let Some(v) = hits[at].version.as_mut() {
            v.superseded_by = current.id.clone();
        }
        hits.insert(at, current);
    }
    hits.truncate(top_k);
}

/// Fetches the missing current versions of `hits` (see the module docs) and inserts them.
pub async fn complete(
    state: &RouterState,
    user: &Identity,
    credentials: &HashMap<String, Secret>,
    hits: &mut Vec<Hit>,
    top_k: usize,
    until: Instant,
) {
    let wanted = missing(hits);
    if wanted.is_empty() {
        return;
    }
    let fetches = wanted.into_iter().map(|m| async move {
        let req =
            GetDocumentRequest { full_text_ref: m.full_text_ref.clone(), source_credentials: credentials.clone() };
        match tokio::time::timeout_at(until, crate::documents::get(state, user, req)).await {
            Ok(Ok(doc)) => Some((m, doc)),
            Ok(Err(status)) => {
                tracing::debug!(reference = %m.full_text_ref, code = ?status.code(), "current version not fetched");
                None
            }
            Err(_) => None,
        }
    });
    let fetched = futures::future::join_all(fetches).await;
    let found: Vec<(usize, Hit)> =
        fetched.into_iter().flatten().map(|(m, doc)| (m.at, hit_of(doc, &hits[m.at], m.full_text_ref))).collect();
    insert(hits, found, top_k);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn old(id: &str, reference: &str, superseded_by: &str) -> Hit {
        Hit {
            id: id.into(),
            source: id.split(':').next().unwrap().into(),
            full_text_ref: reference.into(),
            version: Some(VersionInfo {
                family: "fam".into(),
                status: "superseded".into(),
                superseded_by: superseded_by.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn plain(id: &str) -> Hit {
        Hit {
            id: id.into(),
            source: id.split(':').next().unwrap().into(),
            full_text_ref: id.into(),
            ..Default::default()
        }
    }

    #[test]
    fn an_old_version_alone_asks_for_its_current_one_by_the_same_reference_shape() {
        let hits = vec![plain("tickets:T1"), old("notices:FSN-5", "notices:idx-notices/FSN-5", "FSN-5-U1")];
        assert_eq!(missing(&hits), vec![Missing { at: 1, full_text_ref: "notices:idx-notices/FSN-5-U1".into() }]);
        // An index path in the local id, a row key after the template's name.
        let multi = vec![old("kb:kb-2025/A-1", "kb:kb-2025/A-1", "A-2")];
        assert_eq!(missing(&multi)[0].full_text_ref, "kb:kb-2025/A-2");
        let row = vec![old("orders:by_status:P-1", "orders:policy:P-1", "P-2")];
        assert_eq!(missing(&row)[0].full_text_ref, "orders:policy:P-2");
        // A wiki page id is its own reference.
        let wiki = vec![old("wiki:hr:leave_2025", "wiki:hr:leave_2025", "hr:leave")];
        assert_eq!(missing(&wiki)[0].full_text_ref, "wiki:hr:leave");
    }

    #[test]
    fn nothing_is_asked_when_the_current_version_is_listed_or_unknown() {
        let listed = vec![old("kb:A-2025", "kb:kb/A-2025", "kb:A-2026"), plain("kb:A-2026")];
        assert!(missing(&listed).is_empty());
        // The same key in another source is another document.
        let elsewhere = vec![old("kb:A-2025", "kb:kb/A-2025", "A-2026"), plain("tickets:A-2026")];
        assert_eq!(missing(&elsewhere)[0].full_text_ref, "kb:kb/A-2026");
        assert!(missing(&listed).is_empty());
        let unknown = vec![old("kb:A-2025", "kb:kb/A-2025", "")];
        assert!(missing(&unknown).is_empty());
        // A reference that does not end with the hit's id cannot be rewritten safely.
        let opaque = vec![old("kb:A-2025", "kb:blob-77", "A-2026")];
        assert!(missing(&opaque).is_empty());
        let current = vec![Hit {
            version: Some(VersionInfo { status: "current".into(), ..Default::default() }),
            ..plain("kb:A")
        }];
        assert!(missing(&current).is_empty());
    }

    #[test]
    fn the_current_version_goes_just_above_the_old_one_and_the_list_keeps_its_length() {
        let mut hits = vec![plain("a:1"), old("kb:A-2025", "kb:kb/A-2025", "A-2026"), plain("a:2")];
        let doc = Document {
            id: "kb:A-2026".into(),
            source: "kb".into(),
            title: "A (2026)".into(),
            content: "x".repeat(1000),
            ..Default::default()
        };
        let current = hit_of(doc, &hits[1], "kb:kb/A-2026".into());
        assert_eq!(current.snippet.chars().count(), SNIPPET_CHARS);
        assert_eq!(current.version.as_ref().unwrap().supersedes, "A-2025");
        insert(&mut hits, vec![(1, current)], 3);
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, vec!["a:1", "kb:A-2026", "kb:A-2025"]);
        assert_eq!(hits[2].version.as_ref().unwrap().superseded_by, "kb:A-2026");
    }
}
