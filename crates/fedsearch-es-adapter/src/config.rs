//! The es-adapter's configuration: cluster connection, credentials and logical sources.
//!
//! ```yaml
//! server: { listen: 127.0.0.1:50061 }
//! cluster:
//!   urls: [http://127.0.0.1:9201]
//!   auth: { basic: { username: fedsearch, password: { env: ES_PASSWORD } } }
//! sources:
//!   - name: tickets
//!     index: tickets
//!     search_fields: [title^3, body]
//! ```
//!
//! Secrets are never inline: they name an environment variable or a file, and are read once at
//! start-up by [`ClusterConfig::credentials`].

use std::{collections::HashSet, time::Duration};

use elasticsearch::auth::Credentials;
use fedsearch_adapter_kit::ServerConfig;
use fedsearch_core::config::{TelemetryConfig, Validate};
use serde::Deserialize;

/// Hard upper bound on snippet length, in characters.
pub const MAX_SNIPPET_CHARS: usize = 300;

/// Upper bound on the passages one snippet joins.
pub const MAX_SNIPPET_FRAGMENTS: usize = 4;

/// The whole `es-adapter` config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EsAdapterConfig {
    pub server: ServerConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`); off when unset.
    #[serde(default)]
    pub admin: fedsearch_core::admin::AdminConfig,
    pub cluster: ClusterConfig,
    pub sources: Vec<SourceConfig>,
    /// What `Describe` reads of each index for the router (see [`crate::describe`]).
    #[serde(default)]
    pub describe: fedsearch_adapter_kit::vocabulary::DescribeConfig,
}

/// How to reach the Elasticsearch / OpenSearch cluster.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// One or more node URLs; requests go round-robin over them.
    #[serde(default)]
    pub urls: Vec<String>,
    /// Or the environment variable holding them (comma-separated), like the other adapters'
    /// `url_env`: a deployment names the cluster where it names the database and the wiki,
    /// instead of a URL in the file silently reaching whatever answers there. Wins over `urls`.
    #[serde(default)]
    pub urls_env: Option<String>,
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Client-side cap on one request, also the budget when a sub-query carries no deadline.
    #[serde(default = "default_request_timeout", with = "fedsearch_core::config::duration")]
    pub request_timeout: Duration,
}

fn default_request_timeout() -> Duration {
    Duration::from_secs(5)
}

/// Credentials of the adapter's own service account at the cluster.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum AuthConfig {
    Basic {
        username: String,
        password: SecretRef,
    },
    /// A base64-encoded API key (`id:api_key`, as Elasticsearch returns it in `encoded`).
    ApiKey(SecretRef),
}

/// Where a secret comes from: `{ env: NAME }` or `{ file: PATH }` (core's one secret shape).
pub use fedsearch_core::secret::SecretRef;

impl ClusterConfig {
    /// The node URLs: from `urls_env` when it is set (an error when that variable is not),
    /// else `urls`.
    pub fn node_urls(&self) -> Result<Vec<String>, String> {
        let Some(var) = &self.urls_env else { return Ok(self.urls.clone()) };
        let value = std::env::var(var).map_err(|_| format!("`cluster.urls_env` names {var}, which is not set"))?;
        Ok(value.split(',').map(str::trim).filter(|u| !u.is_empty()).map(String::from).collect())
    }

    /// Resolves the configured credentials (reads env vars / files now).
    pub fn credentials(&self) -> Result<Option<Credentials>, String> {
        match &self.auth {
            None => Ok(None),
            Some(AuthConfig::Basic { username, password }) => {
                let password = password.resolve("cluster.auth.basic.password")?;
                Ok(Some(Credentials::Basic(username.clone(), password.expose().to_string())))
            }
            Some(AuthConfig::ApiKey(key)) => {
                Ok(Some(Credentials::EncodedApiKey(key.resolve("cluster.auth.api_key")?.expose().to_string())))
            }
        }
    }
}

/// One logical source: an index (or pattern / comma list) with its field mapping.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Adapter-side source name, e.g. `tickets`.
    pub name: String,
    /// Index name, alias, pattern (`logs-*`) or comma-separated list; a YAML list of those
    /// (`index: [orca-cases, "orca-archive-*"]`) is the same as the comma list: one source over
    /// several indices, searched in one request, hits from any of them.
    #[serde(deserialize_with = "one_or_many")]
    pub index: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub when_to_use: String,
    /// Document types this source holds; the first one is used when a document has none.
    pub doc_types: Vec<String>,
    #[serde(default)]
    pub fields: FieldMapping,
    /// Fields the text query runs over, with optional boosts: `title^3`, `body`.
    pub search_fields: Vec<String>,
    /// `minimum_should_match` of the question's `multi_match` (e.g. `2<30%`); unset means any
    /// term matches. It never makes the whole query all-or-nothing: the extracted terms and the
    /// entities are alternatives beside the question (see [`crate::query`]).
    #[serde(default)]
    pub minimum_should_match: Option<String>,
    /// How the question's `multi_match` combines the search fields; see [`MatchType`].
    #[serde(default)]
    pub match_type: MatchType,
    /// `operator` of the question's `multi_match`: `or` (Elasticsearch's default: any word may
    /// match, `minimum_should_match` decides how many) or `and` (every word must match, in
    /// `cross_fields` across the fields). Unset leaves it to the engine (`or`). The terms clause
    /// is always `or`.
    #[serde(default)]
    pub operator: Option<Operator>,
    /// Keyword fields holding ids (`order_no`, `related`, optionally `field^boost`): a sub-query's
    /// entities that equal a value there add an exact-match boost (default
    /// [`DEFAULT_ENTITY_BOOST`]). Empty: entities only count as words of the question.
    #[serde(default)]
    pub id_fields: Vec<String>,
    /// Document fields that say which version of a document a hit is; unset: no version info.
    #[serde(default)]
    pub version_fields: Option<VersionFields>,
    /// Snippet length in characters (1..=300).
    #[serde(default = "default_snippet_chars")]
    pub snippet_chars: usize,
    /// How many passages of the body the snippet joins (1..=4), `snippet_chars` shared among them,
    /// best-matching passages first chosen and then shown in the order of the text.
    #[serde(default = "default_snippet_fragments")]
    pub snippet_fragments: usize,
    /// Fields returned as hit metadata (`status`, `order_no`, ...).
    #[serde(default)]
    pub metadata_fields: Vec<String>,
    /// Keys an `equals` filter may use; each is a keyword field of the index.
    #[serde(default)]
    pub filterable_fields: Vec<String>,
    /// Boost of a clause of its own for the router's glossary expansions, the `terms` the
    /// question does not hold (its other-language words: `逾期` for "overdue"), against 1 for
    /// the question's own terms (0..=4). At 1 (the default) they stay in the terms' clause.
    /// Measured on Orca and Spruce (2026-12-02, against 1): 0.5 gave 0.803 / 0.873 (0.814 /
    /// 0.872), 1.5 gave 0.810 / 0.871 — English questions about Chinese documents need their
    /// translations at full weight.
    #[serde(default = "default_expansion_boost")]
    pub expansion_boost: f64,
    /// Boost of a clause of its own for the other forms of the question's English words
    /// ([`fedsearch_core::text::word_forms`]: `surveyors` for "surveyor", `damage` for
    /// "damaged") that an index without stemming (the `standard` analyzer) keeps apart
    /// (0..=4; 0, the default: no such clause). Off by default: measured in session 16
    /// (BENCHMARKS.md) at 1 it read Orca +0.001 to +0.003 with Spruce and Kestrel ±0, but the
    /// held-out Nimbus −0.009. With an English-stemming analyzer the forms meet the same stems
    /// as the words: leave it at 0.
    #[serde(default = "default_inflection_boost")]
    pub inflection_boost: f64,
}

fn default_snippet_chars() -> usize {
    200
}

/// Three passages: a snippet then shows the question's rarer words too, not only the passage
/// where its common ones cluster (nDCG@10 Spruce 0.920 → 0.924, Orca 0.862 → 0.863, Kestrel
/// 0.814 → 0.818 against one passage; BENCHMARKS.md, session 12).
fn default_snippet_fragments() -> usize {
    3
}

fn default_expansion_boost() -> f64 {
    1.0
}

fn default_inflection_boost() -> f64 {
    0.0
}

/// Boost of one exact entity match on an `id_fields` field without its own `^boost`: a `term`
/// query scores its boost flat, and BM25 scores of a question over the shipped indices stay
/// around 5–40, so 20 per matched id puts the document that *is* the entity first while text
/// relevance still orders the rest.
pub const DEFAULT_ENTITY_BOOST: f64 = 20.0;

/// The `multi_match` type of the question clause (`match_type` in a source's config).
///
/// The default is `cross_fields`, chosen by measurement against the real OpenSearch node of the
/// tests (OpenSearch 2.19, indices with the seed mapping: `standard` text fields with `.cjk`
/// bigram sub-fields, fields `title^3, title.cjk^3, body, body.cjk`, `minimum_should_match:
/// "2<30%"`; `tests/es/formulation.rs` keeps the deciding cases):
///
/// | question (question clause alone)                          | best | most | cross | phrase |
/// |-----------------------------------------------------------|------|------|-------|--------|
/// | "warehouse firmware" (one word in the title, one in body) | miss | miss | found | miss   |
/// | 9 words, 2 key words split between title and body         | miss | miss | found | miss   |
/// | 8 words, 2 key words both in the body                     | found| found| found | miss   |
/// | Spruce Mall "payment timeout" / "支付超时": 3 tickets first | yes  | yes  | yes   | yes    |
/// | `title^10` vs `body^10` flip the order                    | yes  | yes  | yes   | yes    |
///
/// `best_fields` and `most_fields` apply `minimum_should_match` to each field on its own, so a
/// document whose title and body together hold the words, but neither alone, is missed.
/// `cross_fields` treats the fields of one analyzer (standard: title, body; cjk: title.cjk,
/// body.cjk) as one blended field per word, so the requirement counts words across fields,
/// while the boosts and the ranking of the shipped relevance checks stay the same.
///
/// `phrase` requires the words in order (a `match_phrase` per field, no
/// `minimum_should_match`): only for sources with short, formulaic titles. The terms clause
/// never uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchType {
    BestFields,
    MostFields,
    #[default]
    CrossFields,
    Phrase,
}

impl MatchType {
    /// The `type` value in the DSL.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BestFields => "best_fields",
            Self::MostFields => "most_fields",
            Self::CrossFields => "cross_fields",
            Self::Phrase => "phrase",
        }
    }
}

/// `operator` of a `multi_match` (see [`SourceConfig::operator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    And,
    Or,
}

impl Operator {
    /// The `operator` value in the DSL.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::And => "and",
            Self::Or => "or",
        }
    }
}

/// `index: name` or `index: [a, b]` (joined by commas, which Elasticsearch reads as a list).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => s,
        OneOrMany::Many(list) => list.iter().map(|s| s.trim()).collect::<Vec<_>>().join(","),
    })
}

/// Where a document keeps its version metadata (field names; dotted paths allowed). Every key is
/// optional; a hit carries [`fedsearch_proto::types::VersionInfo`] when any of them has a value.
/// A map whose keys are words matched trimmed and lower-cased: folded once, as it is read.
fn folded_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    let raw = std::collections::BTreeMap::<String, String>::deserialize(d)?;
    Ok(raw.into_iter().map(|(k, v)| (k.trim().to_lowercase(), v)).collect())
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VersionFields {
    /// Documents of one source with the same family are versions of one document.
    pub family: Option<String>,
    /// The version's label, e.g. `2026` or `v3`.
    pub label: Option<String>,
    /// `current`, `superseded`, `draft`, or a word fusion reads as one of them (`active`,
    /// `obsolete`, `已废止`, …); other values through `status_values`.
    pub status: Option<String>,
    /// The source's own status words, each with what it means: `{ erledigt: superseded,
    /// freigegeben: current }` (keys matched trimmed and lower-cased; values `current`,
    /// `superseded` or `draft`). Words neither here nor known to fusion count as no status. The
    /// keys are trimmed and lower-cased as the config is read.
    #[serde(deserialize_with = "folded_keys")]
    pub status_values: std::collections::BTreeMap<String, String>,
    /// When the version takes effect (RFC 3339, a plain date or epoch milliseconds).
    pub effective_at: Option<String>,
    /// Local id of the version this one replaces.
    pub supersedes: Option<String>,
    /// Local id of the newer version.
    pub superseded_by: Option<String>,
}

impl VersionFields {
    /// (key, field) for every configured field, in the proto's order.
    pub fn named(&self) -> [(&'static str, Option<&String>); 6] {
        [
            ("family", self.family.as_ref()),
            ("label", self.label.as_ref()),
            ("status", self.status.as_ref()),
            ("effective_at", self.effective_at.as_ref()),
            ("supersedes", self.supersedes.as_ref()),
            ("superseded_by", self.superseded_by.as_ref()),
        ]
    }
}

/// Where the adapter finds each part of a document. Permission fields are what the
/// permission filter runs on; `allowed_users` and `public` may be switched off with `null`.
///
/// Every field may be a dotted path into an object (`acl.groups`, `meta.owner`): Elasticsearch
/// indexes object fields flat, so a `terms` query on the path works as on a top-level field. A
/// field inside a `nested`-typed object is not reachable that way; list the nested object's path
/// in `nested` (`nested: [acl]`) and the permission clause on a field under it is wrapped in a
/// `nested` query (`fedsearch doctor` says when a mapping needs it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FieldMapping {
    /// Field holding the document id; `null` uses the index's `_id`.
    pub id: Option<String>,
    pub title: String,
    pub body: String,
    pub timestamp: String,
    pub url: Option<String>,
    pub doc_type: String,
    pub tags: String,
    pub allowed_groups: String,
    pub allowed_users: Option<String>,
    pub public: Option<String>,
    /// Paths of `nested`-typed objects that hold permission fields (`[acl]`).
    pub nested: Vec<String>,
}

impl FieldMapping {
    /// The configured `nested` path that `field` lies under (the longest one), if any.
    pub fn nested_path_of(&self, field: &str) -> Option<&str> {
        self.nested
            .iter()
            .map(String::as_str)
            .filter(|p| field.strip_prefix(p).is_some_and(|rest| rest.starts_with('.')))
            .max_by_key(|p| p.len())
    }
}

impl Default for FieldMapping {
    fn default() -> Self {
        Self {
            id: None,
            title: "title".into(),
            body: "body".into(),
            timestamp: "updated_at".into(),
            url: Some("url".into()),
            doc_type: "doc_type".into(),
            tags: "tags".into(),
            allowed_groups: "allowed_groups".into(),
            allowed_users: Some("allowed_users".into()),
            public: Some("public".into()),
            nested: Vec::new(),
        }
    }
}

impl SourceConfig {
    /// Whether `index` (a concrete index name from a hit or reference) belongs to this source.
    pub fn covers_index(&self, index: &str) -> bool {
        self.index.split(',').map(str::trim).any(|pattern| glob_match(pattern, index))
    }

    /// Whether the source names exactly one concrete index (no pattern, no list).
    pub fn single_index(&self) -> bool {
        !self.index.contains([',', '*'])
    }
}

/// `*`-only glob matching (the wildcard Elasticsearch index patterns use).
fn glob_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A field name as Elasticsearch accepts it in our DSL: letters, digits, `_`, `-`, `.`, `@`.
fn valid_field(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
}

/// Splits `title^3` into (`title`, Some(3.0)).
pub fn parse_boosted(spec: &str) -> Option<(&str, Option<f64>)> {
    match spec.split_once('^') {
        None => valid_field(spec).then_some((spec, None)),
        Some((field, boost)) => {
            let boost: f64 = boost.parse().ok()?;
            (valid_field(field) && boost.is_finite() && boost > 0.0).then_some((field, Some(boost)))
        }
    }
}

impl Validate for EsAdapterConfig {
    fn validate(&self) -> Result<(), String> {
        self.server.validate()?;
        let urls = self.cluster.node_urls()?;
        if urls.is_empty() {
            return Err("`cluster.urls` (or the variable `cluster.urls_env` names) needs at least one URL".into());
        }
        for (i, url) in urls.iter().enumerate() {
            match elasticsearch::http::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return Err(format!("`cluster.urls[{i}]` is not an http(s) URL")),
            }
        }
        if self.cluster.request_timeout.is_zero() {
            return Err("`cluster.request_timeout` must be positive".into());
        }
        if self.sources.is_empty() {
            return Err("`sources` needs at least one source".into());
        }
        let mut names = HashSet::new();
        for (i, s) in self.sources.iter().enumerate() {
            let at = |key: &str| format!("sources[{i}].{key}");
            if s.name.trim().is_empty() {
                return Err(format!("`{}` must not be empty", at("name")));
            }
            if !names.insert(s.name.as_str()) {
                return Err(format!("`{}`: duplicate source name `{}`", at("name"), s.name));
            }
            if s.index.trim().is_empty() || s.index.contains(['/', ' ', '?', '#']) {
                return Err(format!("`{}` must be an index name, pattern or comma list", at("index")));
            }
            if s.doc_types.is_empty() {
                return Err(format!("`{}` needs at least one document type", at("doc_types")));
            }
            if s.search_fields.is_empty() {
                return Err(format!("`{}` needs at least one field", at("search_fields")));
            }
            for (j, f) in s.search_fields.iter().enumerate() {
                if parse_boosted(f).is_none() {
                    return Err(format!("`{}[{j}]`: `{f}` is not `field` or `field^boost`", at("search_fields")));
                }
            }
            if !(0.0..=4.0).contains(&s.expansion_boost) {
                return Err(format!("`{}` must be between 0 and 4", at("expansion_boost")));
            }
            if !(0.0..=4.0).contains(&s.inflection_boost) {
                return Err(format!("`{}` must be between 0 and 4", at("inflection_boost")));
            }
            if s.snippet_chars == 0 || s.snippet_chars > MAX_SNIPPET_CHARS {
                return Err(format!("`{}` must be between 1 and {MAX_SNIPPET_CHARS}", at("snippet_chars")));
            }
            if !(1..=MAX_SNIPPET_FRAGMENTS).contains(&s.snippet_fragments) {
                return Err(format!("`{}` must be between 1 and {MAX_SNIPPET_FRAGMENTS}", at("snippet_fragments")));
            }
            let m = &s.fields;
            let named = [
                ("fields.title", Some(&m.title)),
                ("fields.body", Some(&m.body)),
                ("fields.timestamp", Some(&m.timestamp)),
                ("fields.doc_type", Some(&m.doc_type)),
                ("fields.tags", Some(&m.tags)),
                ("fields.allowed_groups", Some(&m.allowed_groups)),
                ("fields.id", m.id.as_ref()),
                ("fields.url", m.url.as_ref()),
                ("fields.allowed_users", m.allowed_users.as_ref()),
                ("fields.public", m.public.as_ref()),
            ];
            for (key, value) in named {
                if let Some(v) = value
                    && !valid_field(v)
                {
                    return Err(format!("`{}`: `{v}` is not a field name", at(key)));
                }
            }
            for (j, p) in m.nested.iter().enumerate() {
                if !valid_field(p) {
                    return Err(format!("`{}[{j}]`: `{p}` is not a field path", at("fields.nested")));
                }
            }
            for (j, f) in s.id_fields.iter().enumerate() {
                if parse_boosted(f).is_none() {
                    return Err(format!("`{}[{j}]`: `{f}` is not `field` or `field^boost`", at("id_fields")));
                }
            }
            if let Some(v) = &s.version_fields {
                let named = v.named();
                if named.iter().all(|(_, f)| f.is_none()) {
                    return Err(format!("`{}` names no field", at("version_fields")));
                }
                for (key, field) in named {
                    if let Some(f) = field
                        && !valid_field(f)
                    {
                        return Err(format!("`{}`: `{f}` is not a field name", at(&format!("version_fields.{key}"))));
                    }
                }
                if !v.status_values.is_empty() && v.status.is_none() {
                    return Err(format!("`{}` needs `version_fields.status`", at("version_fields.status_values")));
                }
                for (word, meaning) in &v.status_values {
                    if !["current", "superseded", "draft"].contains(&meaning.as_str()) {
                        return Err(format!(
                            "`{}`: `{meaning}` is not current, superseded or draft",
                            at(&format!("version_fields.status_values.{word}"))
                        ));
                    }
                }
            }
            for (key, list) in [("metadata_fields", &s.metadata_fields), ("filterable_fields", &s.filterable_fields)] {
                for (j, f) in list.iter().enumerate() {
                    if !valid_field(f) {
                        return Err(format!("`{}[{j}]`: `{f}` is not a field name", at(key)));
                    }
                }
            }
        }
        Ok(())
    }
}

fedsearch_adapter_kit::impl_adapter_config!(EsAdapterConfig);

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
server: { listen: "127.0.0.1:0" }
cluster:
  urls: ["http://127.0.0.1:9201"]
  auth: { basic: { username: fedsearch, password: { env: FEDSEARCH_ES_TEST_UNSET_PASSWORD } } }
sources:
  - name: tickets
    index: tickets
    doc_types: [ticket]
    search_fields: ["title^3", body]
    metadata_fields: [status]
    filterable_fields: [status]
"#;

    fn load(yaml: &str) -> Result<EsAdapterConfig, String> {
        fedsearch_core::config::from_yaml_str(yaml)
    }

    #[test]
    fn the_shipped_example_config_loads() {
        let yaml = include_str!("../../../deploy/config/es-adapter.yaml");
        let cfg = load(yaml).unwrap();
        let names: Vec<_> = cfg.sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["tickets", "incidents", "kb"]);
        assert!(cfg.sources.iter().all(|s| s.match_type == MatchType::CrossFields && !s.id_fields.is_empty()));
    }

    #[test]
    fn a_good_config_loads_with_default_field_names() {
        let cfg = load(GOOD).unwrap();
        let s = &cfg.sources[0];
        assert_eq!(s.fields.allowed_groups, "allowed_groups");
        assert_eq!(s.fields.public.as_deref(), Some("public"));
        assert_eq!(s.snippet_chars, 200);
        assert_eq!(cfg.cluster.request_timeout, Duration::from_secs(5));
        assert_eq!(s.match_type, MatchType::CrossFields);
        assert!(s.id_fields.is_empty() && s.version_fields.is_none());
    }

    #[test]
    fn match_type_id_fields_and_version_fields_load() {
        let yaml = GOOD.replace(
            "filterable_fields: [status]",
            "filterable_fields: [status]\n    match_type: most_fields\n    id_fields: [order_no, \"related^5\"]\n    \
             version_fields: { family: policy_id, label: version, effective_at: meta.effective }",
        );
        let s = load(&yaml).unwrap().sources.remove(0);
        assert_eq!(s.match_type, MatchType::MostFields);
        assert_eq!(s.match_type.as_str(), "most_fields");
        assert_eq!(s.id_fields, ["order_no", "related^5"]);
        let v = s.version_fields.unwrap();
        assert_eq!(v.family.as_deref(), Some("policy_id"));
        assert_eq!(v.effective_at.as_deref(), Some("meta.effective"));
        assert!(v.status.is_none() && v.supersedes.is_none());
        let with_words = |words: &str| {
            GOOD.replace(
                "filterable_fields: [status]",
                &format!(
                    "filterable_fields: [status]\n    version_fields: {{ status: state, status_values: {words} }}"
                ),
            )
        };
        let s = load(&with_words("{ erledigt: superseded, ' Freigegeben ': current }")).unwrap().sources.remove(0);
        let words = s.version_fields.unwrap().status_values;
        assert_eq!(words["erledigt"], "superseded");
        assert_eq!(words["freigegeben"], "current", "keys are folded as the config is read");
        let err = load(&with_words("{ erledigt: gone }")).unwrap_err();
        assert!(err.contains("status_values.erledigt") && err.contains("current, superseded or draft"), "{err}");
        let err = load(&GOOD.replace(
            "filterable_fields: [status]",
            "filterable_fields: [status]\n    version_fields: { family: f, status_values: { a: draft } }",
        ))
        .unwrap_err();
        assert!(err.contains("needs `version_fields.status`"), "{err}");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure returns figment's large Error
    fn the_cluster_can_be_named_by_an_environment_variable() {
        let yaml = GOOD.replace("urls: [\"http://127.0.0.1:9201\"]", "urls_env: FEDSEARCH_TEST_ES_URLS");
        assert_ne!(yaml, GOOD, "the fixture names its cluster as expected");
        figment::Jail::expect_with(|jail| {
            jail.set_env("FEDSEARCH_TEST_ES_URLS", "http://10.0.0.1:9200, http://10.0.0.2:9200");
            let cfg = load(&yaml).unwrap();
            assert_eq!(cfg.cluster.node_urls().unwrap(), ["http://10.0.0.1:9200", "http://10.0.0.2:9200"]);
            jail.set_env("FEDSEARCH_TEST_ES_URLS", "ftp://x");
            assert!(load(&yaml).unwrap_err().contains("cluster.urls[0]"));
            Ok(())
        });
        let err = load(&yaml).unwrap_err();
        assert!(err.contains("FEDSEARCH_TEST_ES_URLS") && err.contains("not set"), "{err}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = load(&GOOD.replace("doc_types: [ticket]", "doc_types: [ticket]\n    boosts: {}")).unwrap_err();
        assert!(err.contains("boosts"), "{err}");
        let err = load(&GOOD.replace("\"title^3\"", "\"title^x\"")).unwrap_err();
        assert!(err.contains("sources[0].search_fields[0]"), "{err}");
        let err = load(&GOOD.replace("[status]\n    filterable", "[\"a b\"]\n    filterable")).unwrap_err();
        assert!(err.contains("sources[0].metadata_fields[0]"), "{err}");
        let err = load(&GOOD.replace("http://127.0.0.1:9201", "ftp://x")).unwrap_err();
        assert!(err.contains("cluster.urls[0]"), "{err}");
        let err = load(&GOOD.replace("index: tickets", "index: tickets/_doc")).unwrap_err();
        assert!(err.contains("sources[0].index"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "snippet_chars: 301")).unwrap_err();
        assert!(err.contains("sources[0].snippet_chars"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "match_type: fuzzy")).unwrap_err();
        assert!(err.contains("match_type") || err.contains("fuzzy"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "id_fields: [\"order no\"]")).unwrap_err();
        assert!(err.contains("sources[0].id_fields[0]"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "version_fields: { lable: v }")).unwrap_err();
        assert!(err.contains("lable"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "version_fields: { label: \"a b\" }")).unwrap_err();
        assert!(err.contains("sources[0].version_fields.label"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "version_fields: {}")).unwrap_err();
        assert!(err.contains("sources[0].version_fields"), "{err}");
    }

    #[test]
    fn duplicate_source_names_are_refused() {
        let twice = format!("{GOOD}{}", &GOOD[GOOD.find("  - name").unwrap()..]);
        let err = load(&twice).unwrap_err();
        assert!(err.contains("sources[1].name") && err.contains("duplicate"), "{err}");
    }

    #[test]
    fn missing_secrets_name_the_key_but_never_a_value() {
        let cfg = load(GOOD).unwrap();
        let err = cfg.cluster.credentials().unwrap_err();
        assert!(err.contains("cluster.auth.basic.password"), "{err}");
        assert!(err.contains("FEDSEARCH_ES_TEST_UNSET_PASSWORD"), "{err}");

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "c2VjcmV0OmtleQ==\n").unwrap();
        let secret = SecretRef::File(file);
        assert_eq!(secret.resolve("k").unwrap().expose(), "c2VjcmV0OmtleQ==");
    }

    #[test]
    fn index_patterns_cover_their_indices_only() {
        let mut s = load(GOOD).unwrap().sources.remove(0);
        assert!(s.covers_index("tickets") && !s.covers_index("tickets2") && s.single_index());
        s.index = "logs-*,kb".into();
        assert!(s.covers_index("logs-2026.11") && s.covers_index("kb") && !s.covers_index("finance"));
        assert!(!s.single_index());
        assert!(glob_match("a*b*c", "aXbYc") && !glob_match("a*b*c", "aXbY") && glob_match("*", "x"));
    }

    #[test]
    fn index_lists_operator_and_nested_paths_load() {
        let yaml = GOOD.replace("index: tickets", "index: [tickets, \"tickets-archive-*\"]").replace(
            "filterable_fields: [status]",
            "filterable_fields: [status]\n    operator: and\n    \
                 fields: { allowed_groups: acl.groups, allowed_users: acl.users, nested: [acl] }",
        );
        let s = load(&yaml).unwrap().sources.remove(0);
        assert_eq!(s.index, "tickets,tickets-archive-*");
        assert!(s.covers_index("tickets-archive-2025") && s.covers_index("tickets") && !s.single_index());
        assert_eq!(s.operator, Some(Operator::And));
        assert_eq!(s.fields.nested_path_of("acl.groups"), Some("acl"));
        assert_eq!(s.fields.nested_path_of("aclx.groups"), None);
        assert_eq!(s.fields.nested_path_of("public"), None);
        let err = load(&GOOD.replace("filterable_fields: [status]", "operator: maybe")).unwrap_err();
        assert!(err.contains("maybe") || err.contains("operator"), "{err}");
        let err = load(&GOOD.replace("filterable_fields: [status]", "fields: { nested: [\"a b\"] }")).unwrap_err();
        assert!(err.contains("sources[0].fields.nested[0]"), "{err}");
    }

    #[test]
    fn boosted_fields_parse() {
        assert_eq!(parse_boosted("title^3"), Some(("title", Some(3.0))));
        assert_eq!(parse_boosted("body.cjk"), Some(("body.cjk", None)));
        assert_eq!(parse_boosted("title^-1"), None);
        assert_eq!(parse_boosted("ti tle"), None);
    }
}
