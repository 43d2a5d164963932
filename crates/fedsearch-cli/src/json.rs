//! The fedsearch command line: `--json` output, mapped by hand from the prost types (which do
//! not derive serde), covering every field. Times are RFC 3339 strings, states their labels.

use std::collections::HashMap;

use fedsearch_proto::{
    api::{
        AgentContext, ContextItem, Document, FusedSnapshot, FusionReport, RoutedSource, RoutingDecision, SearchEvent,
        SearchResponse, SourceInfo, search_event::Event,
    },
    types::{
        DuplicateRef, Explanation, Hit, RerankFeatures, ScoreContribution, SourceState, SourceStatus, VersionInfo,
    },
};
use prost_types::Timestamp;
use serde_json::{Map, Value, json};

fn time(ts: Option<&Timestamp>) -> Value {
    ts.and_then(fedsearch_core::time::to_chrono).map_or(Value::Null, |t| Value::String(t.to_rfc3339()))
}

fn string_map(m: &HashMap<String, String>) -> Value {
    // serde_json's map is ordered by key, so the output is stable.
    Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<Map<_, _>>())
}

pub fn duplicate(d: &DuplicateRef) -> Value {
    json!({
        "source": d.source, "id": d.id, "url": d.url,
        "rank_in_source": d.rank_in_source, "matched_on": d.matched_on,
    })
}

pub fn contribution(c: &ScoreContribution) -> Value {
    json!({
        "source": c.source, "rank_in_source": c.rank_in_source, "weight": c.weight, "value": c.value,
        "raw_score": c.raw_score, "normalised_score": c.normalised_score,
    })
}

pub fn explanation(e: &Explanation) -> Value {
    json!({
        "method": e.method,
        "contributions": e.contributions.iter().map(contribution).collect::<Vec<_>>(),
        "summary": e.summary,
        "rerank": e.rerank.as_ref().map(rerank),
    })
}

pub fn rerank(r: &RerankFeatures) -> Value {
    json!({
        "fused": r.fused, "coverage": r.coverage, "title_coverage": r.title_coverage, "names": r.names,
        "reciprocal_rank": r.reciprocal_rank, "score": r.score, "bm25": r.bm25, "kind_named": r.kind_named,
        "phrases": r.phrases, "rule_reference": r.rule_reference, "corroborated": r.corroborated,
        "state": r.state, "named_id": r.named_id, "outside_window": r.outside_window,
    })
}

pub fn hit(h: &Hit) -> Value {
    json!({
        "id": h.id, "source": h.source, "title": h.title, "snippet": h.snippet, "url": h.url,
        "updated_at": time(h.updated_at.as_ref()), "rank_in_source": h.rank_in_source,
        "source_score": h.source_score, "fused_score": h.fused_score, "metadata": string_map(&h.metadata),
        "full_text_ref": h.full_text_ref,
        "duplicates": h.duplicates.iter().map(duplicate).collect::<Vec<_>>(),
        "doc_type": h.doc_type,
        "explanation": h.explanation.as_ref().map(explanation),
        "version": h.version.as_ref().map(version),
    })
}

pub fn version(v: &VersionInfo) -> Value {
    json!({
        "family": v.family, "label": v.label, "effective_at": time(v.effective_at.as_ref()),
        "status": v.status, "supersedes": v.supersedes, "superseded_by": v.superseded_by,
    })
}

pub fn source_status(s: &SourceStatus) -> Value {
    json!({
        "source": s.source,
        "state": SourceState::try_from(s.state).map(SourceState::label).unwrap_or("unknown"),
        "hit_count": s.hit_count, "latency_ms": s.latency_ms, "message": s.message, "code": s.code,
    })
}

fn routed(r: &RoutedSource) -> Value {
    json!({ "source": r.source, "reason": r.reason, "query": r.query, "rewrite": r.rewrite })
}

pub fn routing(r: &RoutingDecision) -> Value {
    json!({
        "strategy": r.strategy,
        "selected": r.selected.iter().map(routed).collect::<Vec<_>>(),
        "not_selected": r.not_selected.iter().map(routed).collect::<Vec<_>>(),
    })
}

pub fn fusion(f: &FusionReport) -> Value {
    json!({
        "method": f.method, "rrf_k": f.rrf_k, "in_process_fallback": f.in_process_fallback,
        "duplicates_merged": f.duplicates_merged, "message": f.message,
    })
}

fn context_item(c: &ContextItem) -> Value {
    json!({
        "citation": c.citation, "source": c.source, "title": c.title, "updated_at": time(c.updated_at.as_ref()),
        "snippet": c.snippet, "url": c.url, "full_text_ref": c.full_text_ref, "superseded_by": c.superseded_by,
    })
}

pub fn context(c: &AgentContext) -> Value {
    json!({
        "token_budget": c.token_budget, "tokens_used": c.tokens_used,
        "items": c.items.iter().map(context_item).collect::<Vec<_>>(), "text": c.text,
    })
}

pub fn search_response(r: &SearchResponse) -> Value {
    json!({
        "hits": r.hits.iter().map(hit).collect::<Vec<_>>(),
        "sources": r.sources.iter().map(source_status).collect::<Vec<_>>(),
        "routing": r.routing.as_ref().map(routing),
        "trace_id": r.trace_id,
        "fusion": r.fusion.as_ref().map(fusion),
        "context": r.context.as_ref().map(context),
    })
}

pub fn snapshot(s: &FusedSnapshot) -> Value {
    json!({ "hits": s.hits.iter().map(hit).collect::<Vec<_>>(), "sources_done": s.sources_done })
}

/// One stream event as `{"routing": ...}`, `{"source_status": ...}`, `{"snapshot": ...}` or
/// `{"result": ...}` (`{}` for an empty event).
pub fn search_event(e: &SearchEvent) -> Value {
    match &e.event {
        Some(Event::Routing(r)) => json!({ "routing": routing(r) }),
        Some(Event::SourceStatus(s)) => json!({ "source_status": source_status(s) }),
        Some(Event::Snapshot(s)) => json!({ "snapshot": snapshot(s) }),
        Some(Event::Result(r)) => json!({ "result": search_response(r) }),
        None => json!({}),
    }
}

pub fn document(d: &Document) -> Value {
    json!({
        "id": d.id, "source": d.source, "title": d.title, "content": d.content, "url": d.url,
        "updated_at": time(d.updated_at.as_ref()), "metadata": string_map(&d.metadata), "doc_type": d.doc_type,
    })
}

/// A source; `tool_spec_json` is embedded as JSON when it parses, else kept as a string.
pub fn source_info(s: &SourceInfo) -> Value {
    let tool_spec =
        serde_json::from_str::<Value>(&s.tool_spec_json).unwrap_or_else(|_| Value::String(s.tool_spec_json.clone()));
    json!({
        "name": s.name, "kind": s.kind, "description": s.description, "when_to_use": s.when_to_use,
        "when_not_to_use": s.when_not_to_use, "tags": s.tags, "weight": s.weight, "timeout_ms": s.timeout_ms,
        "supported_filters": s.supported_filters, "tool_spec_json": tool_spec,
        "freshness": s.freshness, "cost": s.cost, "cache_ttl_ms": s.cache_ttl_ms,
    })
}

pub fn sources(list: &[SourceInfo]) -> Value {
    json!({ "sources": list.iter().map(source_info).collect::<Vec<_>>() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort();
        k
    }

    #[test]
    fn a_hit_maps_every_field() {
        let h = Hit {
            id: "tickets:TCK-5001".into(),
            source: "tickets".into(),
            title: "订单SO20261001未发货".into(),
            updated_at: fedsearch_core::time::parse_rfc3339("2026-11-29T08:00:00Z"),
            source_score: Some(3.5),
            metadata: HashMap::from([("status".into(), "open".into())]),
            duplicates: vec![DuplicateRef { source: "kb".into(), ..Default::default() }],
            explanation: Some(Explanation {
                method: "rrf".into(),
                contributions: vec![ScoreContribution {
                    source: "tickets".into(),
                    raw_score: Some(3.5),
                    ..Default::default()
                }],
                summary: "rrf".into(),
                rerank: Some(RerankFeatures { coverage: 0.5, ..Default::default() }),
            }),
            version: Some(VersionInfo {
                status: "superseded".into(),
                superseded_by: "wiki:new".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = hit(&h);
        // Hit has 15 proto fields, DuplicateRef 5, Explanation 4, ScoreContribution 6,
        // RerankFeatures 14, VersionInfo 6.
        assert_eq!(keys(&v).len(), 15, "{v}");
        assert_eq!(keys(&v["version"]).len(), 6);
        assert_eq!(v["version"]["superseded_by"], "wiki:new");
        assert_eq!(keys(&v["duplicates"][0]).len(), 5);
        assert_eq!(keys(&v["explanation"]).len(), 4);
        assert_eq!(keys(&v["explanation"]["rerank"]).len(), 14);
        assert_eq!(v["explanation"]["rerank"]["coverage"], 0.5);
        assert_eq!(keys(&v["explanation"]["contributions"][0]).len(), 6);
        assert_eq!(v["updated_at"], "2026-11-29T08:00:00+00:00");
        assert_eq!(v["source_score"], 3.5);
        assert_eq!(v["metadata"]["status"], "open");
        assert_eq!(v["title"], "订单SO20261001未发货");
        assert_eq!(v["explanation"]["contributions"][0]["normalised_score"], Value::Null);
    }

    #[test]
    fn a_response_and_its_parts_map_every_field() {
        let r = SearchResponse {
            sources: vec![SourceStatus {
                source: "wiki".into(),
                state: SourceState::Denied as i32,
                ..Default::default()
            }],
            routing: Some(RoutingDecision {
                strategy: "rules".into(),
                selected: vec![RoutedSource::default()],
                not_selected: vec![],
            }),
            fusion: Some(FusionReport::default()),
            context: Some(AgentContext { items: vec![ContextItem::default()], ..Default::default() }),
            ..Default::default()
        };
        let v = search_response(&r);
        assert_eq!(keys(&v).len(), 6);
        assert_eq!(keys(&v["sources"][0]).len(), 6);
        assert_eq!(v["sources"][0]["state"], "denied");
        assert_eq!(keys(&v["routing"]).len(), 3);
        assert_eq!(keys(&v["routing"]["selected"][0]).len(), 4);
        assert_eq!(keys(&v["fusion"]).len(), 5);
        assert_eq!(keys(&v["context"]).len(), 4);
        assert_eq!(keys(&v["context"]["items"][0]).len(), 8);
        let ev = search_event(&SearchEvent { event: Some(Event::Snapshot(FusedSnapshot::default())) });
        assert_eq!(keys(&ev["snapshot"]).len(), 2);
    }

    #[test]
    fn documents_and_sources_map_every_field() {
        assert_eq!(keys(&document(&Document::default())).len(), 8);
        let s = SourceInfo { tool_spec_json: r#"{"name":"search_wiki"}"#.into(), ..Default::default() };
        let v = source_info(&s);
        assert_eq!(keys(&v).len(), 13);
        assert_eq!(v["tool_spec_json"]["name"], "search_wiki");
        let odd = source_info(&SourceInfo { tool_spec_json: "not json".into(), ..Default::default() });
        assert_eq!(odd["tool_spec_json"], "not json");
    }
}
