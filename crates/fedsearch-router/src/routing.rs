//! Source selection: explicit sources win; otherwise rules (keywords, entity patterns, doc-type
//! filters) select sources; a query that matches no rule falls back to every source the caller
//! may use ("rules first, everything as the safety net"). A source the caller may not use is
//! never selected, and naming one explicitly is indistinguishable from naming an unknown one.

use fedsearch_core::Identity;
use fedsearch_proto::{
    api::{RoutedSource, RoutingDecision},
    types::Filters,
};

use crate::registry::Registry;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RouteError {
    #[error("unknown source `{0}`; call ListSources for the sources you may use")]
    UnknownSource(String),
    #[error("you may not use any source")]
    NoSources,
}

fn routed(source: String, reason: String) -> RoutedSource {
    RoutedSource { source, reason, ..Default::default() }
}

/// Picks the sources for one query.
pub fn route(
    registry: &Registry,
    user: &Identity,
    query: &str,
    filters: Option<&Filters>,
    explicit: &[String],
) -> Result<RoutingDecision, RouteError> {
    let permitted: Vec<_> = registry.permitted(user).collect();
    if permitted.is_empty() {
        return Err(RouteError::NoSources);
    }
    if !explicit.is_empty() {
        let mut selected = Vec::new();
        for name in explicit {
            let source = registry
                .get(name)
                .filter(|s| s.permits(user))
                .ok_or_else(|| RouteError::UnknownSource(name.clone()))?;
            if !selected.iter().any(|r: &RoutedSource| r.source == *name) {
                selected.push(routed(source.name().to_string(), "named in the request".into()));
            }
        }
        let not_selected = permitted
            .iter()
            .filter(|s| !explicit.iter().any(|n| n == s.name()))
            .map(|s| routed(s.name().to_string(), "not named in the request".into()))
            .collect();
        return Ok(RoutingDecision { strategy: "explicit".into(), selected, not_selected });
    }

    let lowered = query.to_lowercase();
    let doc_types: &[String] = filters.map(|f| f.doc_types.as_slice()).unwrap_or(&[]);
    let mut selected = Vec::new();
    let mut not_selected = Vec::new();
    for s in &permitted {
        let mut reasons = Vec::new();
        for k in &s.keywords {
            if lowered.contains(k.as_str()) {
                reasons.push(format!("keyword `{k}`"));
            }
        }
        for p in &s.patterns {
            if let Some(m) = p.find(query) {
                reasons.push(format!("pattern `{}` matched `{}`", p.as_str(), m.as_str()));
            }
        }
        for t in doc_types {
            if s.config.routing.doc_types.contains(t) {
                reasons.push(format!("doc type `{t}` requested"));
            }
        }
        if reasons.is_empty() {
            not_selected.push(routed(s.name().to_string(), "no rule matched".into()));
        } else {
            selected.push(routed(s.name().to_string(), reasons.join(", ")));
        }
    }
    if selected.is_empty() {
        let selected = permitted
            .iter()
            .map(|s| routed(s.name().to_string(), "no rule matched; querying every permitted source".into()))
            .collect();
        return Ok(RoutingDecision { strategy: "fallback_all".into(), selected, not_selected: Vec::new() });
    }
    Ok(RoutingDecision { strategy: "rules".into(), selected, not_selected })
}
