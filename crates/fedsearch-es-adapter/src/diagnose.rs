//! The es-adapter's self-check (`fedsearch doctor`, [`fedsearch_adapter_kit::diagnostics`]):
//! for each source, read the mapping of its indices as the adapter's own account and check that
//! every field the config names is there with a usable type — above all the permission fields,
//! because a missing one silently shows users fewer documents than they may read (or, for a
//! field inside an unconfigured `nested` object, none).
//!
//! Findings name config keys, indices and fields, never hosts or credentials.

use std::time::Duration;

use elasticsearch::{Elasticsearch, indices::IndicesGetMappingParts};
use fedsearch_adapter_kit::diagnostics::{Diagnostic, error, ok, wanted, warning};
use serde_json::{Map, Value};

use crate::config::{SourceConfig, parse_boosted};

/// What the mapping says about one field path.
#[derive(Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's `type` (`keyword`, `text`, `date`, `object`, `nested`, ...).
    pub ty: String,
    /// Every `nested` object on the way to the field (outermost first).
    pub nested: Vec<String>,
}

/// Resolves a dotted `path` in an index's `mappings` (objects via `properties`, multi-fields via
/// `fields`).
pub fn lookup(mappings: &Value, path: &str) -> Option<FieldInfo> {
    let mut props = mappings.get("properties")?.as_object()?;
    let mut nested = Vec::new();
    let parts: Vec<&str> = path.split('.').collect();
    let mut at = 0;
    let mut prefix = String::new();
    while at < parts.len() {
        let name = parts[at];
        let field = props.get(name)?;
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(name);
        let ty = field.get("type").and_then(Value::as_str).unwrap_or("object");
        at += 1;
        if at == parts.len() {
            return Some(FieldInfo { ty: ty.to_string(), nested });
        }
        if ty == "nested" {
            nested.push(prefix.clone());
        }
        let next = field.get("properties").or_else(|| field.get("fields")).and_then(Value::as_object);
        props = next?;
    }
    None
}

/// The keyword fields of a mapping, as dotted paths (candidates to name in a fix).
fn keyword_fields(mappings: &Value) -> Vec<String> {
    fn walk(props: &Map<String, Value>, prefix: &str, out: &mut Vec<String>) {
        for (name, field) in props {
            let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
            if field.get("type").and_then(Value::as_str) == Some("keyword") {
                out.push(path.clone());
            }
            if let Some(p) = field.get("properties").and_then(Value::as_object) {
                walk(p, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(p) = mappings.get("properties").and_then(Value::as_object) {
        walk(p, "", &mut out);
    }
    out
}

/// Checks one source against the mappings of its concrete indices (`index name → mappings`).
pub fn check_mappings(source: &SourceConfig, indices: &Map<String, Value>) -> Vec<Diagnostic> {
    let name = source.name.as_str();
    let mut out = Vec::new();
    if indices.is_empty() {
        out.push(error(
            name,
            "index",
            format!("`{}` matches no index", source.index),
            "create the index (or fix `index` of this source)",
        ));
        return out;
    }
    let f = &source.fields;
    let permission: Vec<(&str, &str, &str)> = [
        Some(("fields.allowed_groups", f.allowed_groups.as_str(), "keyword")),
        f.allowed_users.as_deref().map(|u| ("fields.allowed_users", u, "keyword")),
        f.public.as_deref().map(|p| ("fields.public", p, "boolean")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut problems = 0;
    for (index, body) in indices {
        let mappings = body.get("mappings").unwrap_or(&Value::Null);
        for (key, field, want) in &permission {
            match lookup(mappings, field) {
                None => {
                    problems += 1;
                    let candidates = keyword_fields(mappings);
                    out.push(error(
                        name,
                        "permission_field",
                        format!("`{key}` is `{field}`, which is not in the mapping of index `{index}`: nobody is granted access through it"),
                        format!("set `{key}` to the field that holds it (keyword fields: {})", shown(&candidates)),
                    ));
                }
                Some(info) => {
                    for path in &info.nested {
                        if !f.nested.contains(path) {
                            problems += 1;
                            out.push(error(
                                name,
                                "permission_field",
                                format!("`{field}` is inside the nested object `{path}` of index `{index}`, which the config does not name: it matches nothing"),
                                format!("add `nested: [{path}]` under `fields` of this source"),
                            ));
                        }
                    }
                    if info.ty != *want {
                        problems += 1;
                        out.push(warning(
                            name,
                            "permission_field",
                            format!(
                                "`{field}` is of type `{}` in index `{index}`, not `{want}`: exact matches may fail",
                                info.ty
                            ),
                            format!("map `{field}` as `{want}` and re-index"),
                        ));
                    }
                }
            }
        }
        for path in &f.nested {
            if lookup(mappings, path).map(|i| i.ty) != Some("nested".into()) {
                problems += 1;
                out.push(error(
                    name,
                    "permission_field",
                    format!("`fields.nested` names `{path}`, which is not a nested object in index `{index}`: clauses on it match nothing"),
                    format!("remove `{path}` from `fields.nested`"),
                ));
            }
        }
        let mut others: Vec<(String, &str, Option<&str>)> = vec![
            ("fields.timestamp".into(), f.timestamp.as_str(), Some("date")),
            ("fields.title".into(), f.title.as_str(), None),
        ];
        for (j, spec) in source.search_fields.iter().enumerate() {
            if let Some((field, _)) = parse_boosted(spec)
                && !field.contains('*')
            {
                others.push((format!("search_fields[{j}]"), field, None));
            }
        }
        for (j, field) in source.filterable_fields.iter().enumerate() {
            others.push((format!("filterable_fields[{j}]"), field.as_str(), Some("keyword")));
        }
        for (key, field, want) in others {
            match (lookup(mappings, field), want) {
                (None, _) => {
                    problems += 1;
                    out.push(warning(
                        name,
                        "field",
                        format!("`{key}` is `{field}`, which is not in the mapping of index `{index}`"),
                        format!("fix `{key}` or map `{field}`"),
                    ));
                }
                (Some(info), Some(want)) if info.ty != want && !(want == "date" && info.ty == "date_nanos") => {
                    problems += 1;
                    out.push(warning(
                        name,
                        "field",
                        format!("`{key}` is `{field}`, of type `{}` in index `{index}`, not `{want}`", info.ty),
                        format!("map `{field}` as `{want}` and re-index"),
                    ));
                }
                _ => {}
            }
        }
    }
    if problems == 0 {
        let names: Vec<&str> = indices.keys().map(String::as_str).collect();
        let fields: Vec<&str> = permission.iter().map(|(_, f, _)| *f).collect();
        out.push(ok(
            name,
            "mapping",
            format!("indices {}: permission fields {} present", names.join(", "), fields.join(", ")),
        ));
    }
    out
}

fn shown(list: &[String]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    let mut s: Vec<&str> = list.iter().take(8).map(String::as_str).collect();
    if list.len() > 8 {
        s.push("…");
    }
    s.join(", ")
}

/// Reads each wanted source's mappings and checks them; transport and HTTP failures become one
/// finding per source.
pub async fn diagnose(
    es: &Elasticsearch,
    sources: &[SourceConfig],
    wanted_sources: &[String],
    timeout: Duration,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for source in sources.iter().filter(|s| wanted(wanted_sources, &s.name)) {
        let indices: Vec<&str> = source.index.split(',').map(str::trim).collect();
        let response = es
            .indices()
            .get_mapping(IndicesGetMappingParts::Index(&indices))
            .allow_no_indices(true)
            .request_timeout(timeout)
            .send()
            .await;
        let name = source.name.as_str();
        let response = match response {
            Ok(r) => r,
            Err(_) => {
                out.push(error(
                    name,
                    "cluster",
                    "the search cluster is unreachable",
                    "check `cluster.urls` and that the cluster runs",
                ));
                continue;
            }
        };
        let status = response.status_code().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        match status {
            200 => out.extend(check_mappings(source, body.as_object().unwrap_or(&Map::new()))),
            401 | 403 => out.push(error(
                name,
                "credentials",
                "the search cluster refused the adapter's own credentials",
                "check `cluster.auth` (the secret it names) and the account's read rights on the index",
            )),
            404 => out.push(error(
                name,
                "index",
                format!("index `{}` does not exist", source.index),
                "create the index (or fix `index` of this source)",
            )),
            other => out.push(error(
                name,
                "cluster",
                format!("the search cluster answered HTTP {other} to the mapping request"),
                "check the cluster's health",
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_resolve_through_objects_nested_objects_and_multi_fields() {
        let m = json!({ "properties": {
            "title": { "type": "text", "fields": { "cjk": { "type": "text" } } },
            "acl": { "type": "nested", "properties": { "groups": { "type": "keyword" } } },
            "meta": { "properties": { "owner": { "type": "keyword" } } },
        } });
        assert_eq!(lookup(&m, "title.cjk").unwrap().ty, "text");
        assert_eq!(lookup(&m, "acl.groups"), Some(FieldInfo { ty: "keyword".into(), nested: vec!["acl".into()] }));
        assert_eq!(lookup(&m, "meta.owner"), Some(FieldInfo { ty: "keyword".into(), nested: vec![] }));
        assert_eq!(lookup(&m, "meta").unwrap().ty, "object");
        assert!(lookup(&m, "acl.users").is_none() && lookup(&m, "nope").is_none());
        assert_eq!(keyword_fields(&m), ["acl.groups", "meta.owner"]);
    }
}
