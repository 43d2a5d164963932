//! The vector adapter: semantic search over a Chroma collection per logical source, the query
//! embedded in-process by a local all-MiniLM-L6-v2 ([`embed`]), the user's permission a `where`
//! clause inside the store's nearest-neighbour search ([`filter`]), and `Fetch` re-reading the
//! document's chunks with the same clause. [`ingest`] is the indexer behind
//! `fedsearch-vector-index`.

pub mod acl;
pub mod chroma;
pub mod config;
pub mod embed;
pub mod filter;
pub mod ingest;

use std::{collections::HashMap, sync::Arc};

use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SourceDescription, SourceHit,
    SubQuery,
};
use fedsearch_proto::types::VersionInfo;
use serde_json::{Map, Value};
use tokio::sync::RwLock;

pub use config::VectorAdapterConfig;
use config::{QueryText, SourceConfig};
pub use embed::Embedder;

/// Longest `full_text_ref` accepted.
const MAX_REFERENCE_LEN: usize = 512;

pub struct VectorAdapter {
    sources: Vec<SourceConfig>,
    store: chroma::Chroma,
    embedder: Arc<Embedder>,
    /// Collection name → id, resolved on first use and again after the store lost it.
    ids: RwLock<HashMap<String, String>>,
}

impl VectorAdapter {
    /// Loads the model (local files only) and connects lazily to the store.
    pub fn build(config: &VectorAdapterConfig) -> anyhow::Result<Self> {
        let url = config.store_url().map_err(anyhow::Error::msg)?;
        let store =
            chroma::Chroma::new(&url, &config.store.tenant, &config.store.database, config.store.request_timeout)
                .map_err(anyhow::Error::msg)?;
        let embedder = Embedder::load(&config.model_dir().map_err(anyhow::Error::msg)?, config.model.max_tokens)?;
        Ok(Self::new(config.sources.clone(), store, Arc::new(embedder)))
    }

    pub fn new(sources: Vec<SourceConfig>, store: chroma::Chroma, embedder: Arc<Embedder>) -> Self {
        Self { sources, store, embedder, ids: RwLock::new(HashMap::new()) }
    }

    fn source(&self, name: &str) -> Result<&SourceConfig, AdapterError> {
        if name.is_empty() && self.sources.len() == 1 {
            return Ok(&self.sources[0]);
        }
        self.sources
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| AdapterError::InvalidArgument(format!("unknown source `{name}`")))
    }

    async fn collection(&self, name: &str) -> Result<String, AdapterError> {
        if let Some(id) = self.ids.read().await.get(name) {
            return Ok(id.clone());
        }
        let id = self.store.collection_id(name).await?;
        self.ids.write().await.insert(name.to_string(), id.clone());
        Ok(id)
    }

    /// Runs `op` on the collection's id; when the store answers that the id is unknown (it was
    /// re-created), resolves the name once more and retries.
    async fn with_collection<T, F, Fut>(&self, name: &str, op: F) -> Result<T, AdapterError>
    where
        F: Fn(String) -> Fut,
        Fut: std::future::Future<Output = Result<T, AdapterError>>,
    {
        let id = self.collection(name).await?;
        match op(id).await {
            Err(AdapterError::FailedPrecondition(_)) => {
                self.ids.write().await.remove(name);
                let id = self.collection(name).await?;
                op(id).await
            }
            other => other,
        }
    }

    async fn embed_query(&self, text: String) -> Result<Vec<f32>, AdapterError> {
        let embedder = self.embedder.clone();
        let mut v = tokio::task::spawn_blocking(move || embedder.embed(&[text]))
            .await
            .map_err(|_| AdapterError::Internal("embedding task failed".into()))?
            .map_err(|e| {
                tracing::warn!(error = %e, "query embedding failed");
                AdapterError::Internal("the query could not be embedded".into())
            })?;
        v.pop().ok_or_else(|| AdapterError::Internal("the query could not be embedded".into()))
    }
}

/// The text whose embedding is searched for.
pub fn query_text(query: &SubQuery, mode: QueryText) -> String {
    let original = if query.original_text.trim().is_empty() { &query.text } else { &query.original_text };
    match mode {
        QueryText::Text if !query.text.trim().is_empty() => query.text.clone(),
        QueryText::Text | QueryText::Original => original.clone(),
        QueryText::OriginalAndTerms => {
            let mut out = original.clone();
            for term in &query.terms {
                for t in term.split('|').map(|t| t.trim().trim_matches('"')).filter(|t| !t.is_empty()) {
                    if !out.contains(t) {
                        out.push(' ');
                        out.push_str(t);
                    }
                }
            }
            out
        }
    }
}

fn meta_str<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(|v| v.as_str()).unwrap_or("")
}

fn timestamp(m: &Map<String, Value>) -> Option<prost_types::Timestamp> {
    m.get(filter::UPDATED_AT).and_then(|v| v.as_i64()).map(|seconds| prost_types::Timestamp { seconds, nanos: 0 })
}

fn snippet(text: &str, max: usize) -> String {
    let t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() <= max { t } else { t.chars().take(max).collect::<String>() + "…" }
}

/// Metadata passed on to the hit (everything but the ACL and the fields a hit has anyway).
fn hit_metadata(m: &Map<String, Value>) -> HashMap<String, String> {
    m.iter()
        .filter(|(k, _)| !filter::RESERVED.contains(&k.as_str()) && k.as_str() != filter::DOC_TYPE)
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k.clone(), s.clone())),
            Value::Number(n) => Some((k.clone(), n.to_string())),
            Value::Bool(b) => Some((k.clone(), b.to_string())),
            _ => None,
        })
        .collect()
}

fn version(m: &Map<String, Value>) -> Option<VersionInfo> {
    let family = meta_str(m, "version_family");
    if family.is_empty() {
        return None;
    }
    Some(VersionInfo {
        family: family.into(),
        label: meta_str(m, "version_label").into(),
        status: meta_str(m, "version_status").into(),
        supersedes: meta_str(m, "supersedes").into(),
        superseded_by: meta_str(m, "superseded_by").into(),
        effective_at: m
            .get("effective_at")
            .and_then(|v| v.as_i64())
            .map(|seconds| prost_types::Timestamp { seconds, nanos: 0 }),
    })
}

impl Adapter for VectorAdapter {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "vector-adapter".into(),
            sources: self
                .sources
                .iter()
                .map(|s| SourceDescription {
                    name: s.name.clone(),
                    kind: "vector".into(),
                    description: s.description.clone(),
                    when_to_use: s.when_to_use.clone(),
                    supported_filters: vec!["time_range".into(), "doc_types".into(), "tags".into(), "equals".into()],
                    doc_types: s.doc_types.clone(),
                    // No vocabulary: the collection is searched by meaning, not by names.
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[tracing::instrument(name = "vector.search", skip_all, fields(otel.kind = "client", source = %query.source))]
    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let source = self.source(&query.source)?;
        let text = query_text(&query, source.query_text);
        if text.trim().is_empty() {
            return Err(AdapterError::InvalidArgument("`text` is empty".into()));
        }
        let mut limit = if query.limit == 0 { 10 } else { query.limit.min(100) } as usize;
        if source.max_hits > 0 {
            limit = limit.min(source.max_hits);
        }
        let (where_, notes) = filter::build(query.user.as_ref(), query.filters.as_ref(), &source.filterable);
        for n in notes {
            sink.note(n);
        }
        let embedding = self.embed_query(text).await?;
        let n = (limit * source.chunks_per_doc).min(300);
        let found = self
            .with_collection(&source.collection, |id| {
                let (embedding, where_) = (&embedding, &where_);
                async move { self.store.query(&id, embedding, n, where_).await }
            })
            .await?;
        // Chunks of one document collapse into its best chunk (the list is nearest first).
        let mut seen = std::collections::HashSet::new();
        let mut hits = Vec::new();
        for nb in found {
            let m = &nb.record.metadata;
            let doc_id = meta_str(m, filter::DOC_ID);
            let similarity = 1.0 - nb.distance / 2.0;
            if doc_id.is_empty() || similarity < source.min_similarity || !seen.insert(doc_id.to_string()) {
                continue;
            }
            hits.push(SourceHit {
                local_id: doc_id.into(),
                title: meta_str(m, filter::TITLE).into(),
                snippet: snippet(&nb.record.document, source.snippet_chars),
                url: meta_str(m, filter::URL).into(),
                updated_at: timestamp(m),
                rank: hits.len() as u32 + 1,
                score: Some(f64::from(similarity)),
                metadata: hit_metadata(m),
                full_text_ref: doc_id.into(),
                doc_type: meta_str(m, filter::DOC_TYPE).into(),
                content_fingerprint: String::new(),
                version: version(m),
            });
            if hits.len() == limit {
                break;
            }
        }
        sink.send(hits).await;
        Ok(())
    }

    #[tracing::instrument(name = "vector.fetch", skip_all, fields(otel.kind = "client", source = %request.source))]
    async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        let source = self.source(&request.source)?;
        let reference = request.reference.trim();
        if reference.is_empty() || reference.len() > MAX_REFERENCE_LEN {
            return Err(AdapterError::InvalidArgument(format!("`reference` must be 1-{MAX_REFERENCE_LEN} bytes")));
        }
        let visible = filter::document(reference, request.user.as_ref());
        let mut chunks = self
            .with_collection(&source.collection, |id| {
                let visible = &visible;
                async move { self.store.get(&id, Some(visible), true).await }
            })
            .await?;
        if chunks.is_empty() {
            // Tell "not yours" from "not there", as the other adapters do, by id only.
            let exists = serde_json::json!({ filter::DOC_ID: { "$eq": reference } });
            let any = self
                .with_collection(&source.collection, |id| {
                    let exists = &exists;
                    async move { self.store.get(&id, Some(exists), false).await }
                })
                .await?;
            return Err(if any.is_empty() {
                AdapterError::NotFound("document not found".into())
            } else {
                AdapterError::PermissionDenied("you are not allowed to read this document".into())
            });
        }
        chunks.sort_by_key(|c| c.metadata.get(filter::CHUNK).and_then(|v| v.as_i64()).unwrap_or(0));
        let first = chunks[0].metadata.clone();
        let content = chunks.iter().map(|c| c.document.as_str()).collect::<Vec<_>>().join("\n\n");
        Ok(FetchResponse {
            id: reference.into(),
            title: meta_str(&first, filter::TITLE).into(),
            content,
            url: meta_str(&first, filter::URL).into(),
            updated_at: timestamp(&first),
            metadata: hit_metadata(&first),
            doc_type: meta_str(&first, filter::DOC_TYPE).into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_text_adds_each_term_and_synonym_once() {
        let q = SubQuery {
            text: "rewritten".into(),
            original_text: "支付超时 怎么办".into(),
            terms: vec!["支付超时|\"payment timeout\"".into(), "refund".into()],
            ..Default::default()
        };
        assert_eq!(query_text(&q, QueryText::OriginalAndTerms), "支付超时 怎么办 payment timeout refund");
        assert_eq!(query_text(&q, QueryText::Original), "支付超时 怎么办");
        assert_eq!(query_text(&q, QueryText::Text), "rewritten");
    }

    #[test]
    fn snippets_are_short_plain_text() {
        assert_eq!(snippet("a\n\n b   c", 10), "a b c");
        assert_eq!(snippet("abcdef", 3), "abc…");
    }
}
