//! What each index holds, for `Describe`: the top values of its keyword fields
//! (`filterable_fields`) and the titles of its documents, read in one `_search` (`terms`
//! aggregations, titles of at most [`TITLES`] documents) with the adapter's credentials, so
//! restricted documents count too. The router only scores sources with it and never shows it;
//! `describe.off` / `describe.vocabulary: false` turn it off (docs/security.md).

use std::{sync::Arc, time::Duration};

use elasticsearch::Elasticsearch;
use fedsearch_adapter_kit::vocabulary::{VocabularyKind, VocabularyTerm, term};
use serde_json::{Value, json};

use crate::{client, config::SourceConfig};

/// Documents whose titles are read per source.
pub const TITLES: usize = 500;
/// Values read per keyword field.
pub const VALUES_PER_FIELD: usize = 50;

/// The one request: no hits scored, titles only, a `terms` aggregation per keyword field.
pub fn body(source: &SourceConfig) -> Value {
    let aggs: serde_json::Map<String, Value> = source
        .filterable_fields
        .iter()
        .map(|f| (f.clone(), json!({"terms": {"field": f, "size": VALUES_PER_FIELD}})))
        .collect();
    json!({
        "size": TITLES,
        "track_total_hits": false,
        "query": {"match_all": {}},
        "_source": [source.fields.title],
        "aggs": aggs,
    })
}

/// The vocabulary in a response to [`body`]: field values first (they name things), then titles.
pub fn from_response(source: &SourceConfig, response: &Value) -> Vec<VocabularyTerm> {
    let mut out = Vec::new();
    for field in &source.filterable_fields {
        let buckets = response.pointer(&format!("/aggregations/{field}/buckets")).and_then(Value::as_array);
        for b in buckets.into_iter().flatten() {
            let text = match b.get("key") {
                Some(Value::String(s)) => s.clone(),
                _ => continue,
            };
            let count = b.get("doc_count").and_then(Value::as_u64).unwrap_or(0);
            out.push(term(&text, VocabularyKind::Term, field, count.min(u32::MAX as u64) as u32));
        }
    }
    let hits = response.pointer("/hits/hits").and_then(Value::as_array);
    for h in hits.into_iter().flatten() {
        if let Some(title) = h.pointer(&format!("/_source/{}", source.fields.title)).and_then(Value::as_str) {
            out.push(term(title, VocabularyKind::Term, "title", 1));
        }
    }
    out
}

/// Reads one source's vocabulary.
pub async fn read(
    es: &Elasticsearch,
    sources: &Arc<Vec<SourceConfig>>,
    name: &str,
    timeout: Duration,
) -> Result<Vec<VocabularyTerm>, String> {
    let source = sources.iter().find(|s| s.name == name).ok_or_else(|| format!("unknown source `{name}`"))?;
    let response =
        client::search(es, &source.name, &source.index, body(source), timeout).await.map_err(|e| e.to_string())?;
    Ok(from_response(source, &response))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EsAdapterConfig;

    #[test]
    fn field_values_and_titles_become_terms() {
        let yaml = include_str!("../../../deploy/config/es-adapter.yaml");
        let cfg: EsAdapterConfig = fedsearch_core::config::from_yaml_str(yaml).unwrap();
        let mut source = cfg.sources[0].clone();
        source.filterable_fields = vec!["status".into()];
        let b = body(&source);
        assert_eq!(b["aggs"]["status"]["terms"]["field"], "status");
        assert_eq!(b["_source"][0], source.fields.title);
        let response = json!({
            "hits": {"hits": [{"_source": {"title": "支付超时：订单SO20261004付款失败"}}, {"_source": {}}]},
            "aggregations": {"status": {"buckets": [{"key": "open", "doc_count": 3}, {"key": 7, "doc_count": 1}]}}
        });
        let terms = from_response(&source, &response);
        let texts: Vec<&str> = terms.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["open", "支付超时：订单SO20261004付款失败"]);
        assert_eq!(terms[0].field, "status");
        assert_eq!(terms[0].documents, 3);
    }
}
