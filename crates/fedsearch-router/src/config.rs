//! The router's configuration: listen address, limits, identity, fusion endpoint and the
//! source registry. Loaded by [`fedsearch_core::config::load`]; unknown keys and bad values fail
//! start-up with one line naming the key.

use std::{collections::HashSet, net::SocketAddr, time::Duration};

use fedsearch_core::{
    JwtConfig,
    config::{TelemetryConfig, Validate, duration},
    endpoints::ServiceEndpoint,
    tls::EndpointTls,
};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    pub server: ServerSection,
    pub auth: JwtConfig,
    #[serde(default)]
    pub fusion: FusionSection,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub circuit_breaker: CircuitBreakerConfig,
    pub sources: Vec<SourceConfig>,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The MCP endpoint (streamable HTTP at `/mcp`); off when unset.
    #[serde(default)]
    pub mcp: Option<McpSection>,
    /// A shared tier for the answer caches (Redis), so router replicas reuse each other's answers.
    #[serde(default)]
    pub shared_cache: Option<SharedCacheSection>,
    /// Bilingual glossary for query expansion and source selection (see [`crate::analysis`]).
    #[serde(default)]
    pub glossary: GlossarySection,
    /// Time zone and calendar settings for time phrases in questions.
    #[serde(default)]
    pub time: TimeSection,
    /// How sources are selected when a request names none (see [`crate::routing`]).
    #[serde(default)]
    pub selection: SelectionSection,
    /// Where `Feedback` reports are appended (see [`crate::feedback`]); off when unset.
    #[serde(default)]
    pub feedback: FeedbackSection,
    /// Re-scoring of the fused candidates by the question's words (see [`crate::rerank`]).
    #[serde(default)]
    pub rerank: RerankSection,
    /// The admin HTTP port: `/metrics`, `/healthz`, `/readyz` (see [`fedsearch_core::admin`]).
    #[serde(default)]
    pub admin: fedsearch_core::admin::AdminConfig,
    /// The audit trail of every call (see [`crate::audit`]); off when neither sink is set.
    #[serde(default)]
    pub audit: AuditSection,
    /// Mutual TLS of every call to the adapters and to fusion (`ca_file`, `cert_file`,
    /// `key_file`, optional `server_name`), or `insecure: true`; the binary refuses to start
    /// without one of the two. See [`fedsearch_core::tls`].
    #[serde(default)]
    pub internal_tls: Option<fedsearch_core::tls::TlsConfig>,
    /// The key the router signs each sub-query's identity assertion with
    /// (`signing_key_file`, see [`fedsearch_core::assertion`]); unset, sub-queries carry none
    /// and adapters that verify refuse them.
    #[serde(default)]
    pub identity: Option<fedsearch_core::assertion::SignerConfig>,
}

/// `audit:` — one JSON record per call, to a JSON-lines file and/or an append-only
/// PostgreSQL table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    /// JSON-lines file the records are appended to; off when unset.
    #[serde(default)]
    pub path: Option<std::path::PathBuf>,
    /// How the query is recorded: `full`, `hashed` (SHA-256, the default) or `redacted`.
    #[serde(default)]
    pub query: AuditQuery,
    /// An append-only PostgreSQL table; off when unset.
    #[serde(default)]
    pub postgres: Option<AuditPostgres>,
    /// Records waiting to be written, per sink; when full, records are dropped and counted,
    /// never waited for.
    #[serde(default = "default_audit_buffer")]
    pub buffer: usize,
}

impl Default for AuditSection {
    fn default() -> Self {
        Self { path: None, query: AuditQuery::default(), postgres: None, buffer: default_audit_buffer() }
    }
}

fn default_audit_buffer() -> usize {
    4096
}

#[derive(Debug, Clone, Copy, Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AuditQuery {
    Full,
    #[default]
    Hashed,
    Redacted,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditPostgres {
    /// The DSN of a role that may only INSERT into `table`: `{ env: NAME }` or `{ file: PATH }`
    /// (core's one secret shape; inline works but puts a password in the file).
    #[serde(default)]
    pub url: Option<fedsearch_core::secret::ConfigValue>,
    /// The older form: the environment variable holding the DSN.
    #[serde(default)]
    pub url_env: Option<String>,
    /// The table (see deploy/observability/audit-postgres.sql), optionally schema-qualified.
    #[serde(default = "default_audit_table")]
    pub table: String,
}

fn default_audit_table() -> String {
    "fedsearch_audit".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankSection {
    /// β: how much the share of the question a hit shows counts against its fused score
    /// (0 keeps fusion's order). The short form of `weights` (fused 1 − β, coverage β, the rest
    /// 0); ignored when `weights` is given.
    #[serde(default)]
    pub coverage_weight: Option<f64>,
    /// The weight of each feature of a candidate ([`crate::rerank`]).
    #[serde(default)]
    pub weights: Option<RerankWeights>,
    /// How many fused candidates are re-scored (at least top_k, at most 50).
    #[serde(default = "default_candidates")]
    pub candidates: u32,
    /// Ask the records sources (`kind: sql`) once more for the ids the first hits name, and the
    /// document sources for the rows among the first hits ([`crate::referenced`]): a second
    /// round of at most 400 ms on questions whose documents name records the question did not,
    /// or whose records have documents about them the question's words did not find.
    #[serde(default = "default_true")]
    pub follow_references: bool,
    /// The deployment's own status values for records still open or done, beside the built-in
    /// ones (the `state` feature; docs/answer-quality.md, "State cues").
    #[serde(default)]
    pub state_values: StateValues,
}

impl Default for RerankSection {
    fn default() -> Self {
        Self {
            coverage_weight: None,
            weights: None,
            candidates: default_candidates(),
            follow_references: true,
            state_values: StateValues::default(),
        }
    }
}

/// Status values that say a record is still open or done: `{ open: [wip, "in Bearbeitung"],
/// closed: [erledigt] }`. Matched as the built-in ones are: case, spaces and hyphens aside; the
/// values are folded once, when the config is read, not for every hit they are compared with.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(from = "WrittenStateValues")]
pub struct StateValues {
    /// Folded ([`StateValues::folded`]).
    open: Vec<String>,
    /// Folded ([`StateValues::folded`]).
    closed: Vec<String>,
}

/// [`StateValues`] as the config writes them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct WrittenStateValues {
    open: Vec<String>,
    closed: Vec<String>,
}

impl From<WrittenStateValues> for StateValues {
    fn from(w: WrittenStateValues) -> Self {
        Self::new(&w.open, &w.closed)
    }
}

impl StateValues {
    /// None: the built-in values only.
    pub const NONE: StateValues = StateValues { open: Vec::new(), closed: Vec::new() };

    /// `open` and `closed` values as written.
    pub fn new(open: &[impl AsRef<str>], closed: &[impl AsRef<str>]) -> Self {
        Self { open: Self::fold_all(open), closed: Self::fold_all(closed) }
    }

    fn fold_all(values: &[impl AsRef<str>]) -> Vec<String> {
        values.iter().map(|v| Self::folded(v.as_ref())).collect()
    }

    /// The form values are compared in: lower-case, `_` for spaces and hyphens.
    pub fn folded(value: &str) -> String {
        value.trim().to_lowercase().replace([' ', '-'], "_")
    }

    /// Whether `folded` (see [`StateValues::folded`]) is one of the open values.
    pub fn is_open(&self, folded: &str) -> bool {
        self.open.iter().any(|v| v == folded)
    }

    /// Whether `folded` (see [`StateValues::folded`]) is one of the done values.
    pub fn is_closed(&self, folded: &str) -> bool {
        self.closed.iter().any(|v| v == folded)
    }
}

impl RerankSection {
    /// The weights in use: `weights`, else those `coverage_weight` stands for, else the defaults.
    pub fn weights(&self) -> RerankWeights {
        match (&self.weights, self.coverage_weight) {
            (Some(w), _) => w.clone(),
            (None, Some(beta)) => RerankWeights::from_coverage_weight(beta),
            (None, None) => RerankWeights::default(),
        }
    }
}

/// The weight of each feature the router re-scores the fused candidates by
/// ([`crate::rerank`]; each feature is within 0..=1).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default = "RerankWeights::zero")]
pub struct RerankWeights {
    /// The fused score relative to the best candidate's.
    pub fused: f64,
    /// The share of the question's tokens the hit shows.
    pub coverage: f64,
    /// The share of the question's tokens its title shows.
    pub title_coverage: f64,
    /// The share of the names and ids the question names that the hit shows.
    pub names: f64,
    /// 1 / its best rank in a source.
    pub reciprocal_rank: f64,
    /// Its BM25 for the question, relative to the best candidate's.
    pub bm25: f64,
    /// The question names its kind (doc_type or source).
    pub kind_named: f64,
    /// The share of the question's adjacent word pairs it shows adjacent.
    pub phrases: f64,
    /// A rule question and a hit from a reference source.
    pub rule_reference: f64,
    /// Another source found the same document.
    pub corroborated: f64,
    /// The question asks for records in one state and the hit is in it (1), or a list of them
    /// and the hit is in the other state (−1).
    pub state: f64,
    /// The question names the hit's own id.
    pub named_id: f64,
}

impl RerankWeights {
    pub fn from_coverage_weight(beta: f64) -> Self {
        Self { fused: 1.0 - beta, coverage: beta, ..Self::zero() }
    }

    fn zero() -> Self {
        Self {
            fused: 0.0,
            coverage: 0.0,
            title_coverage: 0.0,
            names: 0.0,
            reciprocal_rank: 0.0,
            bm25: 0.0,
            kind_named: 0.0,
            phrases: 0.0,
            rule_reference: 0.0,
            corroborated: 0.0,
            state: 0.0,
            named_id: 0.0,
        }
    }

    /// Whether only the fused score counts (the fused order is kept).
    pub fn is_fused_order(&self) -> bool {
        self.all()[1..].iter().all(|w| *w == 0.0)
    }

    /// Every weight, `fused` first.
    fn all(&self) -> [f64; 12] {
        [
            self.fused,
            self.coverage,
            self.title_coverage,
            self.names,
            self.reciprocal_rank,
            self.bm25,
            self.kind_named,
            self.phrases,
            self.rule_reference,
            self.corroborated,
            self.state,
            self.named_id,
        ]
    }

    fn check(&self) -> Result<(), String> {
        if self.all().iter().any(|w| !w.is_finite() || *w < 0.0 || *w > 10.0) {
            return Err("`rerank.weights` must each be within 0..=10".into());
        }
        Ok(())
    }
}

impl Default for RerankWeights {
    /// Fitted on the two tuning companies' candidates by `scripts/fit-rerank.py` (BENCHMARKS.md,
    /// answer quality, session 7); the held-out companies were only scored. `reciprocal_rank`
    /// 0.2 → 0.1 in session 21, measured on the five tuning sets with the questions written from
    /// the data alone (kestrel-extra +0.018, the others within ±0.003): every source's first hit
    /// has it at 1, however weakly it matched. `names` 0.3 → 0.5 on the same sets (kestrel-extra
    /// +0.021, Kestrel and Orca +0.002, Spruce −0.001; 0.7 and 1.0 read less): a hit that shows
    /// the code or name the question asks about (`E-218`, `CAPA-2026-014`) above pages that only
    /// share its words.
    fn default() -> Self {
        Self {
            fused: 0.6,
            coverage: 0.5,
            title_coverage: 0.3,
            names: 0.5,
            reciprocal_rank: 0.1,
            bm25: 0.2,
            kind_named: 0.4,
            phrases: 0.05,
            rule_reference: 0.4,
            corroborated: 0.0,
            state: 0.5,
            named_id: 0.5,
        }
    }
}
/// 40 rather than 30 (session 17): Orca +0.002, Kestrel +0.005 (a relevant manual fused at 31–40
/// now re-scored into the top ten), Spruce ±0; 50 read the same gains with two small losses.
fn default_candidates() -> u32 {
    40
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FeedbackSection {
    /// A JSONL file, e.g. `/var/lib/fedsearch/feedback.jsonl`.
    #[serde(default)]
    pub path: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlossarySection {
    /// Use the built-in glossary of common enterprise terms (Chinese/English).
    #[serde(default = "yes")]
    pub builtin: bool,
    /// Built-in terms this deployment does not want, taken out of every built-in concept (a word
    /// that means something else here); list it in `groups` too to give it this deployment's meaning.
    #[serde(default)]
    pub remove: Vec<String>,
    /// This deployment's own concepts, each a list of equivalent terms in any language,
    /// e.g. `[[云雀, nimbus], [工单, ticket]]`.
    #[serde(default)]
    pub groups: Vec<Vec<String>>,
}

impl Default for GlossarySection {
    fn default() -> Self {
        Self { builtin: true, remove: Vec::new(), groups: Vec::new() }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSection {
    /// IANA zone for calendar phrases (昨天, "this month") when neither the request's
    /// `time_zone` nor the token's `tz` attribute names one.
    #[serde(default = "default_zone")]
    pub default_time_zone: String,
}

impl Default for TimeSection {
    fn default() -> Self {
        Self { default_time_zone: default_zone() }
    }
}

fn default_zone() -> String {
    "UTC".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectionSection {
    /// `all`: ask every permitted source, ordered and weighted by how well it matches (the
    /// default: measured best for answer quality, see BENCHMARKS.md); `scored`: ask only the
    /// sources that match well (fewer sub-queries, lower recall).
    #[serde(default)]
    pub mode: SelectionMode,
    /// How much the match scales a source's fusion weight: `weight × (1 − boost/2 + boost ×
    /// relevance)`, relevance in 0..=1. 0 keeps the configured weights.
    #[serde(default = "default_boost")]
    pub weight_boost: f64,
    /// The weight share of sources without `routing.time_phrases` (reference material) when the
    /// question has a time phrase (1 = no change).
    #[serde(default = "default_undated")]
    pub undated_weight: f64,
    /// A source is selected when its score reaches this (a listed keyword scores 1.5, each
    /// question term found in what the source says about itself its IDF); entities always select.
    #[serde(default = "default_min_score")]
    pub min_score: f64,
    /// ...and at least this share of the best source's score.
    #[serde(default = "default_relative")]
    pub relative: f64,
    /// How often the adapters' `Describe` is asked again for what their sources hold.
    #[serde(default = "default_vocabulary_refresh", with = "duration")]
    pub vocabulary_refresh: Duration,
    /// How long the router waits at start-up for the first `Describe` answers before it serves
    /// (a source that has not answered by then keeps its config-only profile until it does).
    #[serde(default = "default_vocabulary_wait", with = "duration")]
    pub vocabulary_wait: Duration,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMode {
    #[default]
    All,
    Scored,
}

impl Default for SelectionSection {
    fn default() -> Self {
        Self {
            mode: SelectionMode::All,
            weight_boost: default_boost(),
            undated_weight: default_undated(),
            min_score: default_min_score(),
            relative: default_relative(),
            vocabulary_refresh: default_vocabulary_refresh(),
            vocabulary_wait: default_vocabulary_wait(),
        }
    }
}

fn default_vocabulary_refresh() -> Duration {
    Duration::from_secs(300)
}
fn default_vocabulary_wait() -> Duration {
    Duration::from_secs(3)
}

fn default_undated() -> f64 {
    0.5
}
fn default_boost() -> f64 {
    0.5
}

fn default_min_score() -> f64 {
    1.0
}
fn default_relative() -> f64 {
    0.3
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    pub listen: SocketAddr,
    /// `Host` header values (host or host:port) MCP requests may carry — the names clients and
    /// ingresses use to reach the router. Others get 403 (DNS-rebinding protection). `["*"]`
    /// accepts any host (only behind an ingress that checks it).
    #[serde(default = "default_mcp_hosts")]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted (e.g. `https://app.example.com:443`); empty: no Origin check.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Every request stands alone (no `Mcp-Session-Id`): any router replica can serve any
    /// request, and nothing is held between requests.
    #[serde(default)]
    pub stateless: bool,
    /// Sessions held at once; a new one beyond this gets 503 with Retry-After.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// Sessions one user (token subject) may hold at once.
    #[serde(default = "default_max_sessions_per_user")]
    pub max_sessions_per_user: usize,
    /// A session unused this long is closed.
    #[serde(default = "default_session_idle", with = "duration")]
    pub session_idle_timeout: Duration,
    /// OAuth 2.0 protected-resource metadata (RFC 9728) served at
    /// `/.well-known/oauth-protected-resource` and named in every 401's `WWW-Authenticate`,
    /// so MCP clients know where to get a token. Unset: a bare `Bearer` challenge.
    #[serde(default)]
    pub protected_resource: Option<ProtectedResource>,
}

/// The shared answer cache ([`crate::cache`]): only sources with `cache_ttl` use it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedCacheSection {
    /// e.g. `redis://cache:6379/` (`rediss://` for TLS; credentials from the URL's userinfo).
    pub redis_url: String,
    #[serde(default = "default_cache_prefix")]
    pub key_prefix: String,
    /// Every Redis call waits at most this long; then the search goes on without it.
    #[serde(default = "default_cache_timeout", with = "duration")]
    pub timeout: Duration,
}

fn default_cache_prefix() -> String {
    "fedsearch:answer:".into()
}
fn default_cache_timeout() -> Duration {
    Duration::from_millis(25)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedResource {
    /// This MCP endpoint's public URL, e.g. `https://search.example.com/mcp`.
    pub resource: String,
    /// Issuer URLs of the authorization servers whose tokens the router accepts.
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

fn default_mcp_hosts() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec()
}
fn default_max_sessions() -> usize {
    1000
}
fn default_max_sessions_per_user() -> usize {
    16
}
fn default_session_idle() -> Duration {
    Duration::from_secs(300)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub listen: SocketAddr,
    #[serde(default = "default_grace", with = "duration")]
    pub shutdown_grace: Duration,
}

fn default_grace() -> Duration {
    Duration::from_secs(10)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionSection {
    /// The fusion service: an address (`https://127.0.0.1:50052`) or a
    /// [`ServiceEndpoint`] map (`url`, `tls` over `internal_tls`, `connect_timeout`, `timeout` =
    /// the time fusion has to answer after the last source ended). Unset → fuse in-process.
    #[serde(default)]
    pub endpoint: Option<ServiceEndpoint>,
    /// The time fusion has to answer after the last source ended: `endpoint.timeout`, or the
    /// older `fusion.timeout` (500 ms when neither is set). Set by [`Validate::settle`].
    #[serde(skip, default = "default_fusion_timeout")]
    pub timeout: Duration,
    /// Older spellings of `endpoint.timeout`, `endpoint.connect_timeout` and `endpoint.tls`.
    #[serde(default, rename = "timeout", with = "duration::option")]
    older_timeout: Option<Duration>,
    #[serde(default, rename = "connect_timeout", with = "duration::option")]
    older_connect_timeout: Option<Duration>,
    #[serde(default, rename = "tls")]
    older_tls: Option<EndpointTls>,
    /// The method when a request does not name one: `weighted_score` (min-max-normalised source
    /// scores × weight; measured best on both sample companies, see BENCHMARKS.md) or `rrf`.
    #[serde(default)]
    pub method: DefaultFusion,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DefaultFusion {
    #[default]
    WeightedScore,
    Rrf,
}

impl Default for FusionSection {
    fn default() -> Self {
        Self {
            endpoint: None,
            timeout: default_fusion_timeout(),
            older_timeout: None,
            older_connect_timeout: None,
            older_tls: None,
            method: DefaultFusion::default(),
        }
    }
}

fn default_fusion_timeout() -> Duration {
    Duration::from_millis(500)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Timeout when neither the request nor the gRPC deadline gives one.
    #[serde(default = "default_timeout", with = "duration")]
    pub default_timeout: Duration,
    /// No search waits longer than this, whatever the client asks.
    #[serde(default = "default_max_timeout", with = "duration")]
    pub max_timeout: Duration,
    #[serde(default = "default_max_query_chars")]
    pub max_query_chars: usize,
    #[serde(default = "default_top_k")]
    pub default_top_k: u32,
    #[serde(default = "default_max_top_k")]
    pub max_top_k: u32,
    /// Calls served at once at most; more get RESOURCE_EXHAUSTED (see [`crate::admission`]).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Adapt the in-flight limit to load: late answers lower it, answers on time raise it back
    /// up to `max_in_flight`. `false`: the limit is `max_in_flight`.
    #[serde(default = "default_true")]
    pub adaptive: bool,
    /// The adaptive limit never goes below this.
    #[serde(default = "default_min_in_flight")]
    pub min_in_flight: usize,
    /// The runtime falling this far behind (a 20 ms timer ending this much late) lowers the
    /// adaptive limit at once; 0s: only late answers do.
    #[serde(default = "default_max_runtime_lag", with = "duration")]
    pub max_runtime_lag: Duration,
    /// Per-user (token subject) limits, alike for gRPC and MCP.
    #[serde(default)]
    pub per_user: PerUserLimits,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerUserLimits {
    /// Calls of one user in flight at once.
    #[serde(default = "default_user_in_flight")]
    pub max_in_flight: usize,
    /// Calls per second one user may make on average (token bucket); 0 = no rate limit.
    #[serde(default)]
    pub rate_per_second: u32,
    /// Calls one user may make at once above the rate (the bucket's size); 0 = the rate.
    #[serde(default)]
    pub burst: u32,
}

impl Default for PerUserLimits {
    fn default() -> Self {
        Self { max_in_flight: default_user_in_flight(), rate_per_second: 0, burst: 0 }
    }
}

fn default_true() -> bool {
    true
}
fn default_min_in_flight() -> usize {
    8
}
fn default_max_runtime_lag() -> Duration {
    Duration::from_millis(100)
}
fn default_user_in_flight() -> usize {
    32
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            default_timeout: default_timeout(),
            max_timeout: default_max_timeout(),
            max_query_chars: default_max_query_chars(),
            default_top_k: default_top_k(),
            max_top_k: default_max_top_k(),
            max_in_flight: default_max_in_flight(),
            adaptive: true,
            min_in_flight: default_min_in_flight(),
            max_runtime_lag: default_max_runtime_lag(),
            per_user: PerUserLimits::default(),
        }
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(3)
}
fn default_max_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_max_query_chars() -> usize {
    1024
}
fn default_top_k() -> u32 {
    10
}
fn default_max_top_k() -> u32 {
    50
}
fn default_max_in_flight() -> usize {
    1024
}

/// Suspends a source after repeated source-caused failures, so a dead backend costs nothing
/// (see [`crate::breaker`] for what counts and who can trip it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitBreakerConfig {
    /// Consecutive source-caused failures that open the circuit. 0 disables it.
    #[serde(default = "default_failures")]
    pub failure_threshold: u32,
    /// How long an open circuit skips the source before one probe is let through.
    #[serde(default = "default_open_for", with = "duration")]
    pub open_for: Duration,
    /// Each failed probe doubles the open period, up to this.
    #[serde(default = "default_max_open_for", with = "duration")]
    pub max_open_for: Duration,
    /// Failures an input may have caused open the circuit only when this many different users
    /// had them in a row (an unreachable adapter opens it whoever asked). 1 = any user.
    #[serde(default = "default_min_distinct_users")]
    pub min_distinct_users: u32,
    /// How often an open source's adapter is asked for its gRPC health; SERVING lets the probe
    /// through at once. 0s disables the health probe.
    #[serde(default = "default_health_interval", with = "duration")]
    pub health_interval: Duration,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: default_failures(),
            open_for: default_open_for(),
            max_open_for: default_max_open_for(),
            min_distinct_users: default_min_distinct_users(),
            health_interval: default_health_interval(),
        }
    }
}

fn default_failures() -> u32 {
    5
}
fn default_open_for() -> Duration {
    Duration::from_secs(30)
}
fn default_max_open_for() -> Duration {
    Duration::from_secs(300)
}
fn default_min_distinct_users() -> u32 {
    2
}
fn default_health_interval() -> Duration {
    Duration::from_secs(1)
}

fn default_streams() -> usize {
    2
}

/// One source in the registry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Public name, used in requests, hits ids and statuses.
    pub name: String,
    /// The adapter service: an address (`https://127.0.0.1:50061`, replicas comma-separated)
    /// or a [`ServiceEndpoint`] map: `url`, `tls` over `internal_tls` (the name the adapter's
    /// certificate carries, `server_name`, and the CA it chains to, `ca_file`, when they
    /// differ), `connect_timeout`, `timeout` (the source's time, see [`SourceConfig::timeout`]).
    /// Sources on one address share one channel, so they must agree on `tls` and
    /// `connect_timeout`.
    pub adapter: ServiceEndpoint,
    /// Older spelling of `adapter.tls`.
    #[serde(default, rename = "tls")]
    older_tls: Option<EndpointTls>,
    /// The adapter-side logical source (defaults to `name`).
    #[serde(default)]
    pub target: Option<String>,
    /// "search", "sql", "wiki", ...
    #[serde(default)]
    pub kind: String,
    pub description: String,
    #[serde(default)]
    pub when_to_use: String,
    #[serde(default)]
    pub when_not_to_use: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// How long a sub-query to this source may take: `adapter.timeout`, or the older
    /// `sources[].timeout` (2 s when neither is set). Set by [`Validate::settle`].
    #[serde(skip, default = "default_source_timeout")]
    pub timeout: Duration,
    #[serde(default, rename = "timeout", with = "duration::option")]
    older_timeout: Option<Duration>,
    /// The caller must be in one of these groups to use the source (empty = everyone).
    #[serde(default)]
    pub required_groups: Vec<String>,
    /// Filters the source applies.
    #[serde(default)]
    pub supported_filters: Vec<String>,
    /// Rule routing: when any rule matches a query, the source is selected.
    #[serde(default)]
    pub routing: RoutingRules,
    /// How fresh the data is, for the agent (e.g. "live", "indexed every 5 min").
    #[serde(default)]
    pub freshness: String,
    /// Relative cost of a query, for the agent ("low", "medium", "high").
    #[serde(default)]
    pub cost: String,
    /// Reuse a user's identical answer from this source for this long (off when unset).
    #[serde(default, with = "duration::option")]
    pub cache_ttl: Option<Duration>,
    /// Long-lived sub-query streams to every serving replica of the adapter (2 by default),
    /// each on its own HTTP/2 connection, every one carrying many sub-queries ([`crate::mux`]);
    /// sources on one address share the first one's pool. Each sub-query goes to the replica
    /// with the fewest in flight, and the pool follows the replicas the health checks find
    /// serving (new ones get streams, ones that leave are retired). On shared streams each
    /// sub-query carries its own trace context (the adapter traces it in its search's trace)
    /// and adapters count sub-queries as they end (`fedsearch.adapter.subquery.duration`); a
    /// stream is one long adapter call, recorded in `rpc.server.call.duration` when it ends.
    /// 0: one stream per sub-query, balanced per sub-query. Shared streams gave 1.3-1.6x the
    /// throughput of `streams: 0` with less router CPU in the side-by-side bench (BENCHMARKS.md).
    #[serde(default = "default_streams")]
    pub streams: usize,
}

impl SourceConfig {
    /// Whether the question's Chinese content words go to this source as separate terms.
    pub fn split_words(&self) -> bool {
        self.routing.split_words.unwrap_or(self.kind == "wiki")
    }

    /// Whether the source's time filter applies to dates that may lie ahead (`routing.dates_ahead`).
    pub fn dates_ahead(&self) -> bool {
        self.routing.dates_ahead.unwrap_or(self.kind == "sql")
    }

    /// Whether the source is scored by its adapter's vocabulary too (`routing.vocabulary`).
    pub fn uses_vocabulary(&self) -> bool {
        self.routing.vocabulary.unwrap_or(true)
    }
}

fn default_weight() -> f64 {
    1.0
}
fn default_source_timeout() -> Duration {
    Duration::from_secs(2)
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RoutingRules {
    /// Case-insensitive substrings, e.g. "订单", "refund".
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Regular expressions for entities, e.g. `SO\d{8}`.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Selected when the request filters on one of these doc types.
    #[serde(default)]
    pub doc_types: Vec<String>,
    /// What the source receives: `original` text, key `terms`, or `own_terms` (see
    /// [`crate::rewrite`]).
    #[serde(default)]
    pub rewrite: crate::rewrite::RewriteMode,
    /// Turn phrases such as 最近一周 / "last week" into a time filter for this source.
    #[serde(default)]
    pub time_phrases: bool,
    /// Whether the dates this source's time filter applies to may lie ahead of today (due,
    /// departure, expiry, renewal dates): a window then filters on its whole period (this month
    /// to its last day, 下个月, the next 30 days). Off: the dates of what has happened (created,
    /// published, updated) — a window stops at today and one ahead filters nothing. Default: on
    /// for `kind: sql` (templates bind `:from`/`:to` to the column they choose), off otherwise.
    #[serde(default)]
    pub dates_ahead: Option<bool>,
    /// Also send the question's Chinese content words as separate terms: for sources that
    /// search each term on its own (the wiki-adapter's DokuWiki OR search), not for engines that
    /// analyse the question themselves. Default: on for `kind: wiki`, off otherwise.
    #[serde(default)]
    pub split_words: Option<bool>,
    /// Score the source also by what its adapter's `Describe` says it holds (names, titles,
    /// field values; see [`crate::describe`]). Default on; `false` keeps the config-only profile.
    #[serde(default)]
    pub vocabulary: Option<bool>,
}

impl Validate for RouterConfig {
    /// Folds the older keys next to an endpoint (`sources[].tls`, `sources[].timeout`,
    /// `fusion.tls`, `fusion.connect_timeout`, `fusion.timeout`) into it, and sets the times
    /// the code reads from the endpoints.
    fn settle(&mut self) -> Result<(), String> {
        for (i, s) in self.sources.iter_mut().enumerate() {
            let (at, older) = (format!("sources[{i}].adapter"), format!("sources[{i}]"));
            s.adapter.fold_older(&at, &older, s.older_tls.take(), None, s.older_timeout.take())?;
            s.timeout = s.adapter.timeout.unwrap_or_else(default_source_timeout);
        }
        let f = &mut self.fusion;
        let (tls, connect, timeout) = (f.older_tls.take(), f.older_connect_timeout.take(), f.older_timeout.take());
        match &mut f.endpoint {
            Some(ep) => {
                ep.fold_older("fusion.endpoint", "fusion", tls, connect, timeout)?;
                f.timeout = ep.timeout.unwrap_or_else(default_fusion_timeout);
            }
            None if tls.is_some() || connect.is_some() => {
                return Err("`fusion.tls` and `fusion.connect_timeout` need `fusion.endpoint`".into());
            }
            None => f.timeout = timeout.unwrap_or_else(default_fusion_timeout),
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        fedsearch_core::JwtVerifier::new(&self.auth)?;
        self.admin.validate()?;
        if let Some(tls) = &self.internal_tls {
            tls.validate_client("internal_tls")?;
        }
        let endpoints = self.sources.iter().enumerate().map(|(i, s)| (format!("sources[{i}].adapter"), &s.adapter));
        for (at, ep) in endpoints.chain(self.fusion.endpoint.iter().map(|ep| ("fusion.endpoint".to_string(), ep))) {
            ep.validate(self.internal_tls.as_ref(), &at)?;
        }
        for (i, s) in self.sources.iter().enumerate() {
            let shared = |o: &&SourceConfig| o.adapter.url == s.adapter.url;
            let differs = |o: &&SourceConfig| {
                (&o.adapter.tls, o.adapter.connect_timeout) != (&s.adapter.tls, s.adapter.connect_timeout)
            };
            if let Some(other) = self.sources[..i].iter().filter(shared).find(differs) {
                return Err(format!(
                    "`sources[{i}].adapter` differs in `tls` or `connect_timeout` from source `{}` on the same address (one channel)",
                    other.name
                ));
            }
        }
        if self.audit.buffer == 0 {
            return Err("`audit.buffer` must be at least 1".into());
        }
        if let Some(pg) = &self.audit.postgres {
            fedsearch_core::secret::check_one_with_env(&pg.url, &pg.url_env, "audit.postgres.url")?;
            if !pg.table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                return Err("`audit.postgres.table` must be a plain (optionally schema-qualified) table name".into());
            }
        }
        if self.limits.max_top_k == 0 || self.limits.max_top_k > 50 {
            return Err("`limits.max_top_k` must be within 1..=50".into());
        }
        if self.limits.default_top_k == 0 || self.limits.default_top_k > self.limits.max_top_k {
            return Err("`limits.default_top_k` must be within 1..=limits.max_top_k".into());
        }
        if self.limits.max_timeout.is_zero() || self.limits.default_timeout.is_zero() {
            return Err("`limits.default_timeout` and `limits.max_timeout` must be positive".into());
        }
        if self.limits.max_in_flight == 0 {
            return Err("`limits.max_in_flight` must be at least 1".into());
        }
        fedsearch_timeexpr::parse_tz(&self.time.default_time_zone)
            .map_err(|e| format!("`time.default_time_zone`: {e}"))?;
        if !(0.0..=1.0).contains(&self.selection.relative) || !self.selection.min_score.is_finite() {
            return Err("`selection.relative` must be within 0..=1 and `selection.min_score` finite".into());
        }
        if self.rerank.coverage_weight.is_some_and(|b| !(0.0..=1.0).contains(&b)) {
            return Err("`rerank.coverage_weight` must be within 0..=1".into());
        }
        self.rerank.weights().check()?;
        if !(0.0..=1.0).contains(&self.selection.undated_weight) || self.selection.undated_weight == 0.0 {
            return Err("`selection.undated_weight` must be within (0, 1]".into());
        }
        if !(0.0..=1.5).contains(&self.selection.weight_boost) {
            return Err("`selection.weight_boost` must be within 0..=1.5".into());
        }
        if self.sources.is_empty() {
            return Err("`sources` must list at least one source".into());
        }
        let mut names = HashSet::new();
        for (i, s) in self.sources.iter().enumerate() {
            let at = format!("sources[{i}]");
            if s.name.is_empty() || !s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(format!("`{at}.name` must be non-empty and use only a-z, 0-9, '_' or '-'"));
            }
            if !names.insert(s.name.as_str()) {
                return Err(format!("`{at}.name`: source `{}` is declared twice", s.name));
            }
            // 0 is not allowed: the fusion contract reads an unset (0) weight as 1.0. To switch a
            // source off for one query, send `fusion.weights[source] = 0` in the request.
            if !s.weight.is_finite() || s.weight <= 0.0 {
                return Err(format!("`{at}.weight` must be a finite number > 0"));
            }
            if s.timeout.is_zero() {
                return Err(format!("`{at}.timeout` must be positive"));
            }
            if s.description.trim().is_empty() {
                return Err(format!("`{at}.description` must say what the source holds"));
            }
            for (j, p) in s.routing.patterns.iter().enumerate() {
                regex::Regex::new(p).map_err(|e| format!("`{at}.routing.patterns[{j}]` is not a valid regex: {e}"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
server: { listen: "127.0.0.1:0" }
auth: { hs256_secret: "0123456789abcdef0123456789abcdef" }
sources:
  - { name: tickets, adapter: "http://127.0.0.1:1", description: "support tickets", timeout: 500ms }
"#;

    #[test]
    fn a_minimal_config_loads_with_defaults() {
        let c: RouterConfig = fedsearch_core::config::from_yaml_str(OK).unwrap();
        assert_eq!(c.sources[0].weight, 1.0);
        assert_eq!(c.sources[0].timeout, Duration::from_millis(500));
        assert_eq!(c.limits.max_top_k, 50);
        assert_eq!(c.sources[0].streams, 2, "two shared streams per replica by default");
    }

    #[test]
    fn the_audit_dsn_takes_the_one_secret_shape_or_the_older_url_env() {
        let with = |pg: &str| OK.replace("sources:", &format!("audit: {{ postgres: {pg} }}\nsources:"));
        let c: RouterConfig = fedsearch_core::config::from_yaml_str(&with("{ url: { env: AUDIT_DSN } }")).unwrap();
        let pg = c.audit.postgres.unwrap();
        assert_eq!(
            pg.url,
            Some(fedsearch_core::secret::ConfigValue::From(fedsearch_core::secret::SecretRef::Env("AUDIT_DSN".into())))
        );
        let c: RouterConfig = fedsearch_core::config::from_yaml_str(&with("{ url_env: AUDIT_DSN }")).unwrap();
        assert_eq!(c.audit.postgres.unwrap().url_env.as_deref(), Some("AUDIT_DSN"));
        let both = fedsearch_core::config::from_yaml_str::<RouterConfig>(&with("{ url: { env: A }, url_env: B }"));
        assert!(both.unwrap_err().contains("only one"));
        let neither = fedsearch_core::config::from_yaml_str::<RouterConfig>(&with("{ table: t }"));
        assert!(neither.unwrap_err().contains("audit.postgres.url"));
    }

    #[test]
    fn bad_configs_fail_with_one_line_naming_the_key() {
        for (yaml, needle) in [
            (OK.replace("timeout: 500ms", "timeout: 500ms, colour: red"), "colour"),
            (OK.replace("timeout: 500ms", "timeout: soon"), "timeout"),
            (OK.replace("http://127.0.0.1:1", "127.0.0.1:1"), "sources[0].adapter"),
            (OK.replace("0123456789abcdef0123456789abcdef", "short"), "32 bytes"),
            (OK.replace("timeout: 500ms", "timeout: 500ms, weight: -1"), "sources[0].weight"),
            (OK.replace("timeout: 500ms", "timeout: 500ms, routing: { patterns: ['('] }"), "patterns[0]"),
        ] {
            let err = fedsearch_core::config::from_yaml_str::<RouterConfig>(&yaml).unwrap_err();
            assert!(err.contains(needle), "expected `{needle}` in: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn rerank_state_values_load_and_reject_unknown_keys() {
        let with = |rerank: &str| OK.replace("sources:", &format!("rerank: {rerank}\nsources:"));
        let c: RouterConfig =
            fedsearch_core::config::from_yaml_str(&with("{ state_values: { open: [wip, \"in Bearbeitung\"] } }"))
                .unwrap();
        assert_eq!(c.rerank.state_values, StateValues::new(&["wip", "in Bearbeitung"], &[] as &[&str]));
        assert!(c.rerank.state_values.is_open(&StateValues::folded("In-Bearbeitung")));
        assert!(!c.rerank.state_values.is_closed(&StateValues::folded("wip")));
        let err = fedsearch_core::config::from_yaml_str::<RouterConfig>(&with("{ state_values: { opened: [x] } }"));
        assert!(err.unwrap_err().contains("opened"));
    }

    #[test]
    fn an_endpoint_tls_override_needs_tls_on_and_one_setting_per_adapter_address() {
        let tls = OK.replace("http://", "https://")
            + "internal_tls: { ca_file: ca.pem, cert_file: r.pem, key_file: r.key }\n"
            + "fusion: { endpoint: \"https://127.0.0.1:2\", tls: { server_name: fusion.other.svc } }\n";
        let with = |o: &str| tls.replace("timeout: 500ms }", &format!("timeout: 500ms, tls: {o} }}"));
        let c: RouterConfig = fedsearch_core::config::from_yaml_str(&with("{ server_name: es.other.svc }")).unwrap();
        assert_eq!(c.sources[0].adapter.tls.as_ref().unwrap().server_name.as_deref(), Some("es.other.svc"));
        let fusion = c.fusion.endpoint.unwrap();
        assert_eq!(fusion.tls.unwrap().server_name.as_deref(), Some("fusion.other.svc"));
        let insecure = OK.to_string() + "internal_tls: { insecure: true }\n";
        let insecure = insecure.replace("timeout: 500ms }", "timeout: 500ms, tls: { ca_file: other.pem } }");
        let err = fedsearch_core::config::from_yaml_str::<RouterConfig>(&insecure).unwrap_err();
        assert!(err.contains("sources[0].adapter.tls") && err.contains("TLS on"), "{err}");
        let twice = tls.replace(
            "timeout: 500ms }",
            "tls: { server_name: a.svc } }\n  - { name: kb, adapter: \"https://127.0.0.1:1\", description: kb, tls: { server_name: b.svc } }",
        );
        let err = fedsearch_core::config::from_yaml_str::<RouterConfig>(&twice).unwrap_err();
        assert!(err.contains("sources[1].adapter") && err.contains("tickets"), "{err}");
    }

    #[test]
    fn every_endpoint_takes_cores_one_shape_and_the_older_keys_beside_it() {
        let new = r#"
server: { listen: "127.0.0.1:0" }
auth: { hs256_secret: "0123456789abcdef0123456789abcdef" }
internal_tls: { ca_file: ca.pem, cert_file: r.pem, key_file: r.key }
fusion:
  endpoint: { url: "https://127.0.0.1:2", tls: { server_name: fusion.other.svc }, connect_timeout: 200ms, timeout: 300ms }
sources:
  - name: tickets
    adapter:
      url: ["https://127.0.0.1:1", "https://127.0.0.2:1"]
      tls: { server_name: es.other.svc }
      timeout: 700ms
    description: tickets
"#;
        let c: RouterConfig = fedsearch_core::config::from_yaml_str(new).unwrap();
        let s = &c.sources[0];
        assert_eq!(s.adapter.url, "https://127.0.0.1:1,https://127.0.0.2:1");
        assert_eq!(s.timeout, Duration::from_millis(700), "adapter.timeout is the source's time");
        assert_eq!(c.fusion.timeout, Duration::from_millis(300));
        let fusion = c.fusion.endpoint.as_ref().unwrap();
        assert_eq!(fusion.connect_timeout, Some(Duration::from_millis(200)));
        // The older spelling: the same settings beside the endpoint.
        let old = new
            .replace(
                "endpoint: { url: \"https://127.0.0.1:2\", tls: { server_name: fusion.other.svc }, connect_timeout: 200ms, timeout: 300ms }",
                "endpoint: \"https://127.0.0.1:2\"\n  tls: { server_name: fusion.other.svc }\n  connect_timeout: 200ms\n  timeout: 300ms",
            )
            .replace("      tls: { server_name: es.other.svc }\n      timeout: 700ms\n", "")
            .replace("    description: tickets", "    description: tickets\n    tls: { server_name: es.other.svc }\n    timeout: 700ms");
        let o: RouterConfig = fedsearch_core::config::from_yaml_str(&old).unwrap();
        assert_eq!((&o.sources[0].adapter, o.sources[0].timeout), (&s.adapter, s.timeout));
        assert_eq!((o.fusion.endpoint.as_ref(), o.fusion.timeout), (Some(fusion), c.fusion.timeout));
        // Both spellings, disagreeing: the older key is named.
        let both = new.replace("    description: tickets", "    description: tickets\n    timeout: 1s");
        let err = fedsearch_core::config::from_yaml_str::<RouterConfig>(&both).unwrap_err();
        assert!(err.contains("`sources[0].timeout`") && err.contains("`sources[0].adapter.timeout`"), "{err}");
        // Defaults when neither is set.
        let bare: RouterConfig = fedsearch_core::config::from_yaml_str(&OK.replace(", timeout: 500ms", "")).unwrap();
        assert_eq!(
            (bare.sources[0].timeout, bare.fusion.timeout),
            (Duration::from_secs(2), Duration::from_millis(500))
        );
    }
}
