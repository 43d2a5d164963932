//! What a caller may see of the registry: only the sources they may use, each with its
//! description and an OpenAI-style function spec an agent framework can register directly.

use fedsearch_core::Identity;
use fedsearch_proto::api::SourceInfo;
use serde_json::json;

use crate::registry::{Registry, Source};

pub fn list(registry: &Registry, user: &Identity) -> Vec<SourceInfo> {
    registry
        .permitted(user)
        .map(|s| SourceInfo {
            name: s.name().to_string(),
            kind: s.config.kind.clone(),
            description: s.config.description.clone(),
            when_to_use: s.config.when_to_use.clone(),
            when_not_to_use: s.config.when_not_to_use.clone(),
            tags: s.config.tags.clone(),
            weight: s.config.weight,
            timeout_ms: s.config.timeout.as_millis() as u64,
            supported_filters: s.config.supported_filters.clone(),
            tool_spec_json: tool_spec(s).to_string(),
            freshness: s.config.freshness.clone(),
            cost: s.config.cost.clone(),
            cache_ttl_ms: s.config.cache_ttl.map_or(0, |t| t.as_millis() as u64),
        })
        .collect()
}

/// The filters a search may carry, by name, with their JSON Schema.
fn filter_schema(name: &str) -> Option<serde_json::Value> {
    Some(match name {
        "time_range" => json!({"type": "object", "properties": {
            "from": {"type": "string", "format": "date-time"},
            "to": {"type": "string", "format": "date-time"}},
            "additionalProperties": false,
            "description": "Only documents dated within this range (RFC 3339 times)."}),
        "doc_types" => json!({"type": "array", "items": {"type": "string"},
            "description": "Only these document types."}),
        "tags" => {
            json!({"type": "array", "items": {"type": "string"}, "description": "Only documents with these tags."})
        }
        "equals" => json!({"type": "object", "additionalProperties": {"type": "string"},
            "description": "Exact field values, e.g. {\"status\": \"open\"}."}),
        _ => return None,
    })
}

/// Every filter the API knows.
pub const ALL_FILTERS: [&str; 4] = ["time_range", "doc_types", "tags", "equals"];

/// The JSON Schema of a search's arguments, offering only `filters` (the MCP `search` tool
/// offers [`ALL_FILTERS`]; a source's tool only what it supports). No filters: no `filters`
/// argument at all.
pub fn search_parameters_schema(filters: &[&str]) -> serde_json::Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 1024,
                      "description": "The question or keywords, in the user's language."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                      "description": "How many fused hits to return."}
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let offered: serde_json::Map<String, serde_json::Value> =
        filters.iter().filter_map(|f| Some((f.to_string(), filter_schema(f)?))).collect();
    if !offered.is_empty() {
        schema["properties"]["filters"] =
            json!({"type": "object", "properties": offered, "additionalProperties": false});
    }
    schema
}

fn tool_spec(s: &Source) -> serde_json::Value {
    let mut description = s.config.description.clone();
    if !s.config.when_to_use.is_empty() {
        description.push_str(" Use when: ");
        description.push_str(&s.config.when_to_use);
    }
    if !s.config.when_not_to_use.is_empty() {
        description.push_str(" Do not use when: ");
        description.push_str(&s.config.when_not_to_use);
    }
    let filters: Vec<&str> = s.config.supported_filters.iter().map(String::as_str).collect();
    description.push_str(&format!(
        " (Calls fedsearch Search with sources=[\"{}\"]; the arguments are the SearchRequest fields of the same names.)",
        s.name()
    ));
    json!({
        "type": "function",
        "function": {
            "name": format!("search_{}", s.name().replace('-', "_")),
            "description": description,
            "parameters": search_parameters_schema(&filters),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_offers_only_the_filters_given() {
        let only_time = search_parameters_schema(&["time_range"]);
        let offered: Vec<&String> =
            only_time["properties"]["filters"]["properties"].as_object().unwrap().keys().collect();
        assert_eq!(offered, ["time_range"]);
        assert!(search_parameters_schema(&[]).pointer("/properties/filters").is_none(), "no filters: no argument");
        let all = search_parameters_schema(&ALL_FILTERS);
        assert_eq!(all["properties"]["filters"]["properties"].as_object().unwrap().len(), 4);
        assert!(search_parameters_schema(&["nonsense"]).pointer("/properties/filters").is_none());
    }
}
