//! The wiki-adapter config file: `server:`, `telemetry:` and one entry per logical source under
//! `sources:`, each with exactly one connector (`dokuwiki:` or `confluence:`) and an `identity:`.
//!
//! Values that differ per deployment can come from the environment: `url_env` instead of `url`,
//! `secrets_file_env` instead of `secrets_file` name an environment variable that holds the value
//! (resolved when the adapter starts). See `deploy/config/wiki-adapter.yaml`.

use std::{collections::BTreeMap, time::Duration};

use fedsearch_adapter_kit::ServerConfig;
use fedsearch_core::config::{TelemetryConfig, Validate};
pub use fedsearch_core::secret::{ConfigValue, Secret};
use serde::Deserialize;

/// The whole config file of the `wiki-adapter` binary.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WikiAdapterConfig {
    pub server: ServerConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`); off when unset.
    #[serde(default)]
    pub admin: fedsearch_core::admin::AdminConfig,
    pub sources: Vec<SourceConfig>,
}

/// One logical source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Adapter-side source name, e.g. `wiki`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub when_to_use: String,
    #[serde(default)]
    pub dokuwiki: Option<DokuWikiConfig>,
    #[serde(default)]
    pub confluence: Option<ConfluenceConfig>,
    pub identity: IdentityConfig,
    /// Namespace (DokuWiki) or space key (Confluence) → doc type, e.g. `support: runbook`.
    /// The longest matching namespace prefix wins.
    #[serde(default)]
    pub doc_types: BTreeMap<String, String>,
    /// Doc type of pages no `doc_types` entry matches.
    #[serde(default = "default_doc_type")]
    pub default_doc_type: String,
    /// When set, only pages in these namespaces (and below) / spaces are returned.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Upper bound for one backend request (the sub-query deadline may be shorter).
    #[serde(default = "default_request_timeout", with = "fedsearch_core::config::duration")]
    pub request_timeout: Duration,
    /// How one sub-query becomes wiki searches (OR semantics, see [`crate::terms`]).
    #[serde(default)]
    pub search: SearchConfig,
    /// Version metadata read from page text (see [`crate::version`]).
    #[serde(default)]
    pub versions: VersionsConfig,
}

/// How one sub-query becomes backend searches. DokuWiki ANDs every word of a query, so the
/// adapter runs one search per key term (plus the text as sent when it is short) and merges.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    /// Searches run at once for one sub-query at most (DokuWiki), or terms ORed in one CQL.
    #[serde(default = "default_max_searches")]
    pub max_searches: usize,
    /// The text as sent is searched as-is only when it has at most this many words.
    #[serde(default = "default_text_max_words")]
    pub text_max_words: usize,
    /// How the merged pages are scored (see [`crate::merge`]).
    #[serde(default)]
    pub ranking: RankingConfig,
    /// DokuWiki matches whole words: search an English word of a term with any ending
    /// (`reporting` as `report*`, finding report, reports, reported), see
    /// [`crate::terms::any_ending`]. Off by default (see `default_any_ending`). Confluence's
    /// CQL stems on its own and ignores this.
    #[serde(default = "default_any_ending")]
    pub any_ending: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            max_searches: default_max_searches(),
            text_max_words: default_text_max_words(),
            ranking: RankingConfig::default(),
            any_ending: default_any_ending(),
        }
    }
}

/// How a DokuWiki page's score is computed from the searches that found it (see [`crate::merge`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankingConfig {
    /// Extra weight of a term the page's title shows (0: the title counts like the body).
    pub title_boost: f64,
    /// Weight of a glossary expansion the router sent as a term of its own, against 1 for a
    /// term of the question.
    pub expansion_weight: f64,
    /// Pages that match only one term, not in their title, while the question has at least
    /// three, keep this share of their score (1: no demotion).
    pub single_term_factor: f64,
    /// Pages whose score (share of the question, 0..1) is below this are dropped, unless they
    /// match more than one term (or one in their title) and score at least `near_best` × the
    /// best page's. Default 0 (none): 0.04 lost on a held-out company (see [`crate::merge`]).
    pub min_score: f64,
    /// See `min_score` (0..=1; 0 keeps every page that has a score of at least 0).
    pub near_best: f64,
}

impl Default for RankingConfig {
    fn default() -> Self {
        Self { title_boost: 1.0, expansion_weight: 0.5, single_term_factor: 0.25, min_score: 0.0, near_best: 0.5 }
    }
}

impl RankingConfig {
    fn check(&self, at: &str) -> Result<(), String> {
        if !(0.0..=10.0).contains(&self.title_boost) {
            return Err(format!("`{at}.search.ranking.title_boost` must be 0..=10"));
        }
        let shares = [
            ("expansion_weight", self.expansion_weight),
            ("single_term_factor", self.single_term_factor),
            ("min_score", self.min_score),
            ("near_best", self.near_best),
        ];
        match shares.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
            Some((name, _)) => Err(format!("`{at}.search.ranking.{name}` must be 0..=1")),
            None => Ok(()),
        }
    }
}

/// Off: measured flat on the tuning companies (nDCG@10 Spruce −0.002, Orca +0.003, Kestrel ±0) and
/// below on both held-out ones (Nimbus −0.003, Heron −0.005; BENCHMARKS.md, session 14).
fn default_any_ending() -> bool {
    false
}

fn default_max_searches() -> usize {
    9
}
fn default_text_max_words() -> usize {
    3
}

/// Version lines read from the text of the top pages (`Status: superseded — replaced by [[x]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionsConfig {
    /// Off: no page reads; versions are still inferred from `_<year>` page ids.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Pages read per sub-query at most (the best-ranked hits, as the user).
    #[serde(default = "default_lookups")]
    pub lookups: usize,
    /// Only the first this many lines of a page are scanned (status banners sit at the top).
    #[serde(default = "default_scan_lines")]
    pub scan_lines: usize,
    /// Parsed version metadata and page text are kept for (page id, mtime) pairs; the capacity
    /// of that cache is in units: a page counts 1, plus 1 per KiB of the plain text kept
    /// with it for passages (at most 4,000 characters), so 10,000 units hold at most ~10 MB of text.
    #[serde(default = "default_cache_entries")]
    pub cache_entries: u64,
    /// Replaces the built-in line patterns when set (see [`crate::version::default_patterns`]).
    #[serde(default)]
    pub patterns: Option<Vec<VersionPatternConfig>>,
}

impl Default for VersionsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            lookups: default_lookups(),
            scan_lines: default_scan_lines(),
            cache_entries: default_cache_entries(),
            patterns: None,
        }
    }
}

fn default_true() -> bool {
    true
}
fn default_lookups() -> usize {
    8
}
fn default_scan_lines() -> usize {
    40
}
fn default_cache_entries() -> u64 {
    10_000
}

/// One version line pattern: a regex applied to each (markup-stripped) line.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionPatternConfig {
    pub kind: VersionPatternKind,
    /// Rust `regex` syntax. `supersedes`/`superseded_by` need a group `(?P<id>…)`, `effective`
    /// a group `(?P<date>YYYY-MM-DD)`, `label` a group `(?P<label>…)`.
    pub regex: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VersionPatternKind {
    /// The page is the current version.
    Current,
    /// The page is superseded.
    Superseded,
    /// The page replaces the page `id`.
    Supersedes,
    /// The page is replaced by the page `id` (implies superseded).
    SupersededBy,
    /// The page takes effect on `date` (ignored on a line that names a successor).
    Effective,
    /// The version's label, e.g. `2026`.
    Label,
}

fn default_doc_type() -> String {
    "page".into()
}
fn default_request_timeout() -> Duration {
    Duration::from_secs(5)
}

/// A DokuWiki reached over XML-RPC at `<url>/lib/exe/xmlrpc.php`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DokuWikiConfig {
    /// Base URL, e.g. `http://127.0.0.1:8090`, or `{ env: NAME }` / `{ file: PATH }`.
    #[serde(default)]
    pub url: Option<ConfigValue>,
    /// Name of an environment variable holding the base URL (e.g. `DOKUWIKI_URL`).
    #[serde(default)]
    pub url_env: Option<String>,
}

/// Confluence Cloud or Data Center, searched with CQL over REST.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfluenceConfig {
    /// Site URL: `https://example.atlassian.net` (Cloud) or the Data Center base URL including
    /// its context path. Or `{ env: NAME }` / `{ file: PATH }`.
    #[serde(default)]
    pub url: Option<ConfigValue>,
    #[serde(default)]
    pub url_env: Option<String>,
    pub flavor: ConfluenceFlavor,
    /// Content types searched (`type in (...)`).
    #[serde(default = "default_content_types")]
    pub content_types: Vec<String>,
    /// Results asked for per request (Confluence caps this server-side).
    #[serde(default = "default_page_size")]
    pub page_size: u32,
    /// Requests per sub-query at most (paging when filters drop results).
    #[serde(default = "default_max_pages")]
    pub max_pages: u32,
}

fn default_content_types() -> Vec<String> {
    vec!["page".into(), "blogpost".into()]
}
fn default_page_size() -> u32 {
    25
}
fn default_max_pages() -> u32 {
    4
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConfluenceFlavor {
    /// `/wiki/rest/api/search`, Basic `email:api_token`.
    Cloud,
    /// `/rest/api/content/search`, Bearer personal access token.
    DataCenter,
}

/// Whose credential a request to the wiki carries. There is no service-account mode.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    pub mode: IdentityMode,
    /// `mapped`: YAML file mapping subject → `{username, password}` or `{token}`: its path, or
    /// `{ env: NAME }` naming a variable that holds the path.
    #[serde(default)]
    pub secrets_file: Option<ConfigValue>,
    #[serde(default)]
    pub secrets_file_env: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IdentityMode {
    /// The caller's own credential from `SubQuery.user.delegated_credential`.
    Delegated,
    /// The verified subject mapped to a credential from a secrets file.
    Mapped,
}

fn one_of(a: &Option<ConfigValue>, b: &Option<String>, key: &str) -> Result<(), String> {
    fedsearch_core::secret::check_one_with_env(a, b, key)
}

/// Resolves a `key` (inline, `{ env }` or `{ file }`) / older `key_env` pair to its value.
pub fn resolve(value: &Option<ConfigValue>, env: &Option<String>, key: &str) -> Result<String, String> {
    fedsearch_core::secret::resolve_with_env(value, env, key).map(|v| v.expose().to_string())
}

fn check_url(url: &Option<ConfigValue>, key: &str) -> Result<(), String> {
    match url.as_ref().and_then(ConfigValue::inline) {
        Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => {
            Err(format!("`{key}` must start with http:// or https://"))
        }
        _ => Ok(()),
    }
}

impl SourceConfig {
    fn validate(&self, at: &str) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err(format!("`{at}.name` must not be empty"));
        }
        match (&self.dokuwiki, &self.confluence) {
            (Some(d), None) => {
                one_of(&d.url, &d.url_env, &format!("{at}.dokuwiki.url"))?;
                check_url(&d.url, &format!("{at}.dokuwiki.url"))?;
            }
            (None, Some(c)) => {
                one_of(&c.url, &c.url_env, &format!("{at}.confluence.url"))?;
                check_url(&c.url, &format!("{at}.confluence.url"))?;
                if c.page_size == 0 || c.page_size > 1000 {
                    return Err(format!("`{at}.confluence.page_size` must be 1..=1000"));
                }
                if c.max_pages == 0 {
                    return Err(format!("`{at}.confluence.max_pages` must be at least 1"));
                }
                if c.content_types.is_empty() {
                    return Err(format!("`{at}.confluence.content_types` must not be empty"));
                }
                if let Some(bad) = c
                    .content_types
                    .iter()
                    .find(|t| t.is_empty() || !t.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
                {
                    return Err(format!("`{at}.confluence.content_types` has an invalid type `{bad}`"));
                }
            }
            (Some(_), Some(_)) => return Err(format!("`{at}` must have only one of `dokuwiki` and `confluence`")),
            (None, None) => return Err(format!("`{at}` needs a connector: `dokuwiki` or `confluence`")),
        }
        match self.identity.mode {
            IdentityMode::Mapped => one_of(
                &self.identity.secrets_file,
                &self.identity.secrets_file_env,
                &format!("{at}.identity.secrets_file"),
            )?,
            IdentityMode::Delegated => {
                if self.identity.secrets_file.is_some() || self.identity.secrets_file_env.is_some() {
                    return Err(format!("`{at}.identity.secrets_file` is only used with `mode: mapped`"));
                }
            }
        }
        if self.request_timeout.is_zero() {
            return Err(format!("`{at}.request_timeout` must be positive"));
        }
        if self.default_doc_type.trim().is_empty() {
            return Err(format!("`{at}.default_doc_type` must not be empty"));
        }
        if let Some((ns, _)) = self.doc_types.iter().find(|(ns, t)| ns.is_empty() || t.is_empty()) {
            return Err(format!("`{at}.doc_types` has an empty entry `{ns}`"));
        }
        if !(1..=16).contains(&self.search.max_searches) {
            return Err(format!("`{at}.search.max_searches` must be 1..=16"));
        }
        self.search.ranking.check(at)?;
        if self.versions.lookups > 50 {
            return Err(format!("`{at}.versions.lookups` must be at most 50"));
        }
        if let Some(patterns) = &self.versions.patterns {
            for (j, p) in patterns.iter().enumerate() {
                crate::version::Pattern::compile(p).map_err(|e| format!("`{at}.versions.patterns[{j}]`: {e}"))?;
            }
        }
        Ok(())
    }
}

impl Validate for WikiAdapterConfig {
    fn validate(&self) -> Result<(), String> {
        self.server.validate()?;
        if self.sources.is_empty() {
            return Err("`sources` must list at least one source".into());
        }
        let mut seen = std::collections::HashSet::new();
        for (i, s) in self.sources.iter().enumerate() {
            s.validate(&format!("sources[{i}]"))?;
            if !seen.insert(s.name.as_str()) {
                return Err(format!("`sources[{i}].name` `{}` is used twice", s.name));
            }
        }
        Ok(())
    }
}

fedsearch_adapter_kit::impl_adapter_config!(WikiAdapterConfig);

#[cfg(test)]
mod tests {
    use fedsearch_core::config::from_yaml_str;

    use super::*;

    const GOOD: &str = r#"
server:
  listen: 127.0.0.1:0
sources:
  - name: wiki
    dokuwiki: { url: "http://127.0.0.1:8090" }
    identity: { mode: mapped, secrets_file_env: DOKUWIKI_SECRETS }
    doc_types: { support: runbook, public: policy }
  - name: confluence
    confluence: { url_env: CONFLUENCE_URL, flavor: data_center }
    identity: { mode: delegated }
"#;

    #[test]
    fn the_shipped_example_config_parses() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/config/wiki-adapter.yaml"))
                .expect("deploy/config/wiki-adapter.yaml exists");
        let cfg: WikiAdapterConfig = from_yaml_str(&text).unwrap();
        assert_eq!(cfg.sources[0].name, "wiki");
        assert_eq!(cfg.sources[0].identity.mode, IdentityMode::Mapped);
    }

    #[test]
    fn good_config_parses_with_defaults() {
        let cfg: WikiAdapterConfig = from_yaml_str(GOOD).unwrap();
        assert_eq!(cfg.sources.len(), 2);
        assert_eq!(cfg.sources[0].default_doc_type, "page");
        let c = cfg.sources[1].confluence.as_ref().unwrap();
        assert_eq!((c.flavor, c.page_size, c.content_types.len()), (ConfluenceFlavor::DataCenter, 25, 2));
        let s = &cfg.sources[0];
        assert_eq!((s.search.max_searches, s.search.text_max_words), (9, 3));
        assert!(s.versions.enabled && s.versions.patterns.is_none());
        assert_eq!(s.versions.lookups, 8);
    }

    #[test]
    fn bad_configs_name_the_key() {
        let cases = [
            (GOOD.replace("doc_types:", "doc_typos:"), "doc_typos"),
            (GOOD.replace("mode: delegated", "mode: service_account"), "service_account"),
            (GOOD.replace("url: \"http://127.0.0.1:8090\"", "url: \"ftp://x\""), "sources[0].dokuwiki.url"),
            (GOOD.replace("secrets_file_env: DOKUWIKI_SECRETS", ""), "sources[0].identity.secrets_file"),
            (GOOD.replace("name: confluence", "name: wiki"), "sources[1].name"),
            (GOOD.replace("dokuwiki: { url: \"http://127.0.0.1:8090\" }", ""), "sources[0]"),
            (
                GOOD.replace("mode: delegated }", "mode: delegated, secrets_file: /x }"),
                "sources[1].identity.secrets_file",
            ),
            (
                GOOD.replace("doc_types: {", "search: { max_searches: 0 }\n    doc_types: {"),
                "sources[0].search.max_searches",
            ),
            (
                GOOD.replace("doc_types: {", "search: { ranking: { min_score: 1.5 } }\n    doc_types: {"),
                "sources[0].search.ranking.min_score",
            ),
            (
                GOOD.replace(
                    "doc_types: {",
                    "versions: { patterns: [{ kind: supersedes, regex: 'replaces (.*)' }] }\n    doc_types: {",
                ),
                "sources[0].versions.patterns[0]",
            ),
            (
                GOOD.replace("doc_types: {", "versions: { patterns: [{ kind: label, regex: '(' }] }\n    doc_types: {"),
                "sources[0].versions.patterns[0]",
            ),
        ];
        for (yaml, key) in cases {
            let err = from_yaml_str::<WikiAdapterConfig>(&yaml).unwrap_err();
            assert!(err.contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn env_indirection_resolves_or_names_the_variable() {
        assert_eq!(resolve(&Some(ConfigValue::Inline(Secret::new("v"))), &None, "url").unwrap(), "v");
        let err = resolve(&None, &Some("FEDSEARCH_WIKI_TEST_SURELY_UNSET".into()), "url").unwrap_err();
        assert!(err.contains("FEDSEARCH_WIKI_TEST_SURELY_UNSET") && err.contains("url_env"), "{err}");
    }
}
