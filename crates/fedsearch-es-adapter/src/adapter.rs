//! [`EsAdapter`]: the [`Adapter`] implementation that runs sub-queries and fetches against the
//! cluster.
//!
//! Fetch decision: a reference whose document exists but is not visible to the user now is
//! refused with PERMISSION_DENIED; one that does not exist gives NOT_FOUND. Telling the two
//! apart takes a second, count-only query (`size: 0`, no `_source`), so no field of a
//! forbidden document leaves the cluster — only the fact that its id exists, which the caller
//! already holds from an earlier search.

use std::{sync::Arc, time::Duration};

use elasticsearch::Elasticsearch;
use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SourceDescription, SubQuery,
};
use serde_json::Value;

use crate::{
    client,
    config::{EsAdapterConfig, SourceConfig},
    hits, query,
};

/// The binary and adapter name.
pub const ADAPTER_NAME: &str = "es-adapter";
/// The filters every source applies.
pub const SUPPORTED_FILTERS: [&str; 4] = ["time_range", "doc_types", "tags", "equals"];

/// Search and fetch over the configured Elasticsearch / OpenSearch sources.
#[derive(Clone)]
pub struct EsAdapter {
    es: Elasticsearch,
    sources: Arc<Vec<SourceConfig>>,
    request_timeout: Duration,
    /// What each index holds, read in the background ([`crate::describe`]).
    vocabulary: fedsearch_adapter_kit::vocabulary::VocabularyStore,
}

impl std::fmt::Debug for EsAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("EsAdapter").field("sources", &names).finish_non_exhaustive()
    }
}

/// Splits a time budget into (client-side timeout, server-side search timeout): the cluster
/// is asked to stop a little earlier so that partial results can still travel back.
fn budgets(remaining: Duration, cap: Duration) -> (Duration, Duration) {
    let client = remaining.min(cap);
    let margin = (client / 10).clamp(Duration::from_millis(5), Duration::from_millis(200));
    (client, client.saturating_sub(margin).max(Duration::from_millis(1)))
}

impl EsAdapter {
    /// Builds the adapter (and its client) from a validated config. Makes no request yet.
    /// Inside a tokio runtime it also starts reading the sources' vocabulary in the background.
    pub fn new(config: &EsAdapterConfig) -> anyhow::Result<Self> {
        let es = client::build(&config.cluster)?;
        let sources = Arc::new(config.sources.clone());
        let vocabulary = config.describe.store(sources.iter().map(|s| s.name.as_str()));
        let (reader, listed, timeout) = (es.clone(), sources.clone(), config.cluster.request_timeout);
        vocabulary.spawn_refresh(config.describe.refresh, move |name| {
            let (es, sources) = (reader.clone(), listed.clone());
            async move { crate::describe::read(&es, &sources, &name, timeout).await }
        });
        Ok(Self { es, sources, request_timeout: config.cluster.request_timeout, vocabulary })
    }

    fn source(&self, name: &str) -> Result<&SourceConfig, AdapterError> {
        self.sources
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| AdapterError::InvalidArgument(format!("unknown source `{name}`")))
    }

    async fn run_search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let source = self.source(&query.source)?;
        let remaining = fedsearch_adapter_kit::remaining(&query, self.request_timeout);
        if remaining.is_zero() {
            return Err(AdapterError::DeadlineExceeded);
        }
        let (client_timeout, es_timeout) = budgets(remaining, self.request_timeout);
        let body = query::search_body(source, &query, es_timeout)?;
        let response = client::search(&self.es, &source.name, &source.index, body, client_timeout).await?;
        let timed_out = response.get("timed_out").and_then(Value::as_bool).unwrap_or(false);
        let batch: Vec<_> = hits::raw_hits(&response, &source.fields.body)
            .iter()
            .zip(1u32..)
            .map(|(hit, rank)| hits::to_source_hit(source, hit, rank))
            .collect();
        let took_ms = response.get("took").and_then(Value::as_u64).unwrap_or(0);
        tracing::debug!(
            source = %source.name,
            hits = batch.len(),
            took_ms,
            timed_out,
            "search answered"
        );
        sink.send(batch).await;
        if timed_out {
            // Partial results were kept; the state tells the caller they are incomplete.
            return Err(AdapterError::DeadlineExceeded);
        }
        Ok(())
    }

    async fn run_fetch(&self, request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        let source = self.source(&request.source)?;
        let (index, id) = hits::parse_ref(&request.reference)
            .ok_or_else(|| AdapterError::InvalidArgument("reference must look like `<index>/<id>`".into()))?;
        if !source.covers_index(index) {
            return Err(AdapterError::InvalidArgument(format!(
                "reference does not belong to source `{}`",
                source.name
            )));
        }
        let user = request.user.unwrap_or_default();
        let (client_timeout, es_timeout) = budgets(self.request_timeout, self.request_timeout);
        let body = query::fetch_body(source, id, &user, es_timeout);
        let response = client::search(&self.es, &source.name, index, body, client_timeout).await?;
        if let Some(hit) = hits::raw_hits(&response, &source.fields.body).first() {
            return Ok(hits::to_fetch_response(source, hit));
        }
        let response =
            client::search(&self.es, &source.name, index, query::exists_body(id, es_timeout), client_timeout).await?;
        let exists = response.pointer("/hits/total/value").and_then(Value::as_u64).unwrap_or(0) > 0;
        if exists {
            tracing::info!(source = %source.name, subject = %user.subject, "fetch refused by the permission re-check");
            Err(AdapterError::PermissionDenied("you are not allowed to read this document".into()))
        } else {
            Err(AdapterError::NotFound("document not found".into()))
        }
    }
}

impl Adapter for EsAdapter {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: ADAPTER_NAME.into(),
            sources: self
                .sources
                .iter()
                .map(|s| {
                    let mut d = SourceDescription {
                        name: s.name.clone(),
                        kind: "elasticsearch".into(),
                        description: s.description.clone(),
                        when_to_use: s.when_to_use.clone(),
                        supported_filters: SUPPORTED_FILTERS.iter().map(|f| f.to_string()).collect(),
                        doc_types: s.doc_types.clone(),
                        ..Default::default()
                    };
                    self.vocabulary.fill(&mut d);
                    d
                })
                .collect(),
        }
    }

    fn search(&self, query: SubQuery, sink: HitSink) -> impl Future<Output = Result<(), AdapterError>> + Send {
        self.run_search(query, sink)
    }

    fn fetch(&self, request: FetchRequest) -> impl Future<Output = Result<FetchResponse, AdapterError>> + Send {
        self.run_fetch(request)
    }

    async fn diagnose(&self, sources: Vec<String>) -> Option<Vec<fedsearch_adapter_kit::diagnostics::Diagnostic>> {
        Some(crate::diagnose::diagnose(&self.es, &self.sources, &sources, self.request_timeout).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_leave_the_cluster_a_margin_and_respect_the_cap() {
        let (client, es) = budgets(Duration::from_secs(2), Duration::from_secs(5));
        assert_eq!(client, Duration::from_secs(2));
        assert_eq!(es, Duration::from_millis(1800));
        let (client, es) = budgets(Duration::from_secs(60), Duration::from_secs(5));
        assert_eq!(client, Duration::from_secs(5));
        assert_eq!(es, Duration::from_millis(4800));
        let (_, es) = budgets(Duration::from_millis(3), Duration::from_secs(5));
        assert_eq!(es, Duration::from_millis(1));
    }

    #[test]
    fn describe_lists_every_source_with_its_filters() {
        let yaml = include_str!("../../../deploy/config/es-adapter.yaml");
        let cfg: EsAdapterConfig = fedsearch_core::config::from_yaml_str(yaml).unwrap();
        let adapter = EsAdapter::new(&cfg).unwrap();
        let d = adapter.describe();
        assert_eq!(d.adapter, "es-adapter");
        assert_eq!(d.sources.len(), 3);
        assert!(d.sources.iter().all(|s| s.kind == "elasticsearch" && s.supported_filters.len() == 4));
        assert!(d.sources.iter().all(|s| !s.description.is_empty() && !s.when_to_use.is_empty()));
    }
}
