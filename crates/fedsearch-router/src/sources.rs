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

/// The JSON Schema of a search's arguments, shared by every tool spec and the MCP tools.
pub fn search_parameters_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 1024,
                      "description": "The question or keywords, in the user's language."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                      "description": "How many fused hits to return."},
            "filters": {
                "type": "object",
                "properties": {
                    "time_range": {"type": "object", "properties": {
                        "from": {"type": "string", "format": "date-time"},
                        "to": {"type": "string", "format": "date-time"}},
                        "additionalProperties": false},
                    "doc_types": {"type": "array", "items": {"type": "string"}},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "equals": {"type": "object", "additionalProperties": {"type": "string"}}
                },
                "additionalProperties": false
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
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
    json!({
        "type": "function",
        "function": {
            "name": format!("search_{}", s.name().replace('-', "_")),
            "description": description,
            "parameters": search_parameters_schema(),
        }
    })
}
