//! The vector-adapter config file: `server:`, `telemetry:`, `admin:`, the vector `store:`, the
//! embedding `model:` and one entry per logical source under `sources:` (one collection each,
//! with what `fedsearch-vector-index` embeds into it). See `deploy/config/vector-adapter.yaml`.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use fedsearch_adapter_kit::ServerConfig;
use fedsearch_core::config::{TelemetryConfig, Validate};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorAdapterConfig {
    pub server: ServerConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    #[serde(default)]
    pub admin: fedsearch_core::admin::AdminConfig,
    pub store: StoreConfig,
    pub model: ModelConfig,
    pub sources: Vec<SourceConfig>,
}

/// The Chroma server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// The URL inline, or `{ env: NAME }` / `{ file: PATH }` (core's secret shape).
    #[serde(default)]
    pub url: Option<fedsearch_core::secret::ConfigValue>,
    /// Environment variable holding the URL (e.g. `CHROMA_URL` from `.run/chroma.env`).
    #[serde(default)]
    pub url_env: Option<String>,
    #[serde(default = "default_tenant")]
    pub tenant: String,
    #[serde(default = "default_database")]
    pub database: String,
    #[serde(default = "default_request_timeout", with = "fedsearch_core::config::duration")]
    pub request_timeout: Duration,
}

/// The local embedding model (a sentence-transformers directory, see [`crate::embed`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Environment variable holding the directory (`FEDSEARCH_VECTOR_MODEL_DIR`).
    #[serde(default)]
    pub dir_env: Option<String>,
    /// Caps the model's sequence length.
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// Target size of one indexed chunk, in tokens (title included).
    #[serde(default = "default_chunk_tokens")]
    pub chunk_tokens: usize,
}

/// What the query embedding is computed from.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum QueryText {
    /// The question as asked (`SubQuery.original_text`, else `text`).
    Original,
    /// The question plus the router's key terms with their glossary translations.
    #[default]
    OriginalAndTerms,
    /// The router's per-source rewrite (`SubQuery.text`).
    Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub when_to_use: String,
    /// Chroma collection name (3–512 of `[A-Za-z0-9._-]`).
    pub collection: String,
    /// Doc types the collection holds (for routing and `describe`).
    #[serde(default)]
    pub doc_types: Vec<String>,
    /// Hits less similar than this (cosine, −1..1) are not returned.
    #[serde(default)]
    pub min_similarity: f32,
    /// At most this many hits per sub-query, whatever limit the router asks (0: the router's).
    #[serde(default)]
    pub max_hits: usize,
    /// Nearest chunks asked per wanted document (chunks of one document collapse into one hit).
    #[serde(default = "default_chunks_per_doc")]
    pub chunks_per_doc: usize,
    /// Metadata keys the `equals` filter may name (besides `doc_type`).
    #[serde(default)]
    pub filterable: Vec<String>,
    #[serde(default)]
    pub query_text: QueryText,
    #[serde(default = "default_snippet_chars")]
    pub snippet_chars: usize,
    /// What `fedsearch-vector-index` embeds into this collection.
    #[serde(default)]
    pub index: Vec<IndexInput>,
}

/// One input of the indexer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum IndexInput {
    /// A search-index JSON file (`{"doc_type", "docs": [{id, title, body, url, tags, public,
    /// allowed_groups, allowed_users, updated_at | days_ago + hours_ago, ...}]}`) — the format
    /// of `data/*/search/*.json`. The ACL fields are copied.
    Docs(PathBuf),
    /// DokuWiki pages `<dir>/<ns>/…/<page>.txt`, their ACL computed from a DokuWiki auth spec.
    Wiki(WikiInput),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WikiInput {
    pub dir: PathBuf,
    /// Only these top-level folders (namespaces) of `dir`; all when empty.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Auth spec files (`user|login|name|mail|groups|subject`, `acl|scope|who|perm`).
    pub acl: Vec<PathBuf>,
    /// `<page id> <days_ago | ISO-8601 time> [author]` lines.
    #[serde(default)]
    pub mtimes: Option<PathBuf>,
    /// Environment variable holding the wiki's base URL (page URLs equal the wiki adapter's).
    #[serde(default)]
    pub url_env: Option<String>,
    /// Namespace prefix → doc type; the longest match wins.
    #[serde(default)]
    pub doc_types: BTreeMap<String, String>,
    #[serde(default = "default_wiki_doc_type")]
    pub default_doc_type: String,
}

fn default_tenant() -> String {
    "default_tenant".into()
}
fn default_database() -> String {
    "default_database".into()
}
fn default_request_timeout() -> Duration {
    Duration::from_secs(2)
}
fn default_chunk_tokens() -> usize {
    200
}
fn default_chunks_per_doc() -> usize {
    3
}
fn default_snippet_chars() -> usize {
    240
}
fn default_wiki_doc_type() -> String {
    "page".into()
}

/// Resolves a `x` / `x_env` pair: the value itself, else the named environment variable.
pub fn resolve(value: &Option<String>, env: &Option<String>, key: &str) -> Result<String, String> {
    if let Some(v) = value.as_ref().filter(|v| !v.is_empty()) {
        return Ok(v.clone());
    }
    match env {
        Some(name) => std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("`{key}_env` names `{name}`, which is not set")),
        None => Err(format!("`{key}` or `{key}_env` is required")),
    }
}

impl VectorAdapterConfig {
    pub fn store_url(&self) -> Result<String, String> {
        fedsearch_core::secret::resolve_with_env(&self.store.url, &self.store.url_env, "store.url")
            .map(|url| url.expose().to_string())
    }

    pub fn model_dir(&self) -> Result<PathBuf, String> {
        let dir = self.model.dir.as_ref().map(|d| d.to_string_lossy().into_owned());
        resolve(&dir, &self.model.dir_env, "model.dir").map(PathBuf::from)
    }

    pub fn source(&self, name: &str) -> Option<&SourceConfig> {
        self.sources.iter().find(|s| s.name == name)
    }
}

fn valid_collection(name: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    (3..=512).contains(&name.len())
        && name.chars().all(ok_char)
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl Validate for VectorAdapterConfig {
    fn validate(&self) -> Result<(), String> {
        self.server.validate()?;
        if self.store.url.is_none() && self.store.url_env.is_none() {
            return Err("`store.url` or `store.url_env` is required".into());
        }
        if self.store.request_timeout.is_zero() {
            return Err("`store.request_timeout` must be positive".into());
        }
        if self.model.dir.is_none() && self.model.dir_env.is_none() {
            return Err("`model.dir` or `model.dir_env` is required".into());
        }
        if self.model.chunk_tokens < 16 {
            return Err("`model.chunk_tokens` must be at least 16".into());
        }
        if self.sources.is_empty() {
            return Err("`sources` must list at least one source".into());
        }
        let mut seen = std::collections::HashSet::new();
        for (i, s) in self.sources.iter().enumerate() {
            if s.name.is_empty() {
                return Err(format!("`sources[{i}].name` is empty"));
            }
            if !seen.insert(s.name.as_str()) {
                return Err(format!("`sources[{i}].name` `{}` is used twice", s.name));
            }
            if !valid_collection(&s.collection) {
                return Err(format!(
                    "`sources[{i}].collection` must be 3-512 characters of [A-Za-z0-9._-], starting and ending alphanumeric"
                ));
            }
            if !(-1.0..=1.0).contains(&s.min_similarity) {
                return Err(format!("`sources[{i}].min_similarity` must be between -1 and 1"));
            }
            if s.chunks_per_doc == 0 {
                return Err(format!("`sources[{i}].chunks_per_doc` must be at least 1"));
            }
            if s.snippet_chars == 0 {
                return Err(format!("`sources[{i}].snippet_chars` must be at least 1"));
            }
            for key in &s.filterable {
                if crate::filter::RESERVED.contains(&key.as_str()) || key.starts_with('$') || key.starts_with('#') {
                    return Err(format!("`sources[{i}].filterable` may not name `{key}`"));
                }
            }
        }
        Ok(())
    }
}

fedsearch_adapter_kit::impl_adapter_config!(VectorAdapterConfig);

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<VectorAdapterConfig, String> {
        let c: VectorAdapterConfig = serde_yaml_ng(yaml)?;
        c.validate().map(|_| c)
    }

    fn serde_yaml_ng(yaml: &str) -> Result<VectorAdapterConfig, String> {
        serde_json::from_value(yaml_to_json(yaml)).map_err(|e| e.to_string())
    }

    // Tiny YAML subset is not worth a dependency here: the tests write JSON.
    fn yaml_to_json(s: &str) -> serde_json::Value {
        serde_json::from_str(s).expect("test configs are JSON")
    }

    const BASE: &str = r#"{"server": {"listen": "127.0.0.1:0"}, "store": {"url_env": "CHROMA_URL"},
        "model": {"dir": "/m"}, "sources": [{"name": "vector", "collection": "spruce_docs"}]}"#;

    #[test]
    fn a_minimal_config_is_valid() {
        let c = parse(BASE).unwrap();
        assert_eq!(c.sources[0].query_text, QueryText::OriginalAndTerms);
        assert_eq!(c.sources[0].max_hits, 0, "no cap unless configured");
        assert_eq!(c.store.tenant, "default_tenant");
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad = BASE.replace("spruce_docs", "x");
        assert!(parse(&bad).unwrap_err().contains("sources[0].collection"));
        let bad = BASE.replace(r#""collection""#, r#""filterable": ["groups"], "collection""#);
        assert!(parse(&bad).unwrap_err().contains("may not name `groups`"));
        let bad = BASE.replace(r#""dir": "/m""#, r#""dir": "/m", "bogus": 1"#);
        assert!(parse(&bad).unwrap_err().contains("bogus"));
    }
}
