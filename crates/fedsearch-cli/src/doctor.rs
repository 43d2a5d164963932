//! `fedsearch doctor --config router.yaml --token …`: checks a deployment source by source, the
//! way the router will use it, and prints what to fix, one line each.
//!
//! For every source of the router's config: connect to its adapter, call `Describe` (does the
//! adapter serve the source the router names?), ask the adapter's self-check
//! (`fedsearch.adapter.v1.AdapterDiagnosticsService`: index mappings and permission fields, SQL
//! templates and their columns, time zones, the adapter's own credentials), and run a probe
//! sub-query as the token's user, so wrong credentials, a refused user or a failing backend show
//! up before a real question does. The token is verified with the router's own `auth:` section
//! (and `FEDSEARCH_AUTH__*` overrides, as the router reads them).
//!
//! Output lines: `ok|warn|FAIL  <source>  <check>: <what> [— fix: <what to change>]`, then a
//! summary. Exit 0 when nothing FAILed, 1 otherwise, 2 on usage errors (unreadable config).
//! The token and secrets are never printed.
//!
//! Adapters and fusion are reached as the router reaches them: each `adapter` (and
//! `fusion.endpoint`) is read as core's [`ServiceEndpoint`], so a per-endpoint `tls`
//! (`server_name`, `ca_file`) over `internal_tls` is honoured, and a `fusion.endpoint` is asked
//! for its health over the same TLS.

use std::{collections::BTreeMap, path::Path, time::Duration};

use std::sync::Arc;

use fedsearch_core::{
    assertion::{AssertionSigner, SignerConfig, search_scope},
    auth::{Identity, JwtConfig, JwtVerifier},
    endpoints::ServiceEndpoint,
    tls::{ClientTls, EndpointTls, TlsConfig},
};
use fedsearch_proto::{
    adapter::{
        DescribeRequest, DiagnoseRequest, DiagnosticSeverity, ResultFrame, SearchFrame, SubQuery,
        adapter_diagnostics_service_client::AdapterDiagnosticsServiceClient, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    types::SourceState,
};
use serde_yaml::Value;
use tonic::transport::Channel;

use crate::client::Failure;

/// How long one adapter call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may take when the endpoint sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// One source of the router's config, as the doctor needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterSource {
    pub name: String,
    /// The adapter, every replica's URL, with the endpoint's own TLS settings.
    pub adapter: ServiceEndpoint,
    /// The adapter-side source name.
    pub target: String,
    pub required_groups: Vec<String>,
}

/// What the doctor reads of a router config: `auth:`, the sources, and how the router calls its
/// adapters (`internal_tls:` — mutual TLS — and `identity:` — the key that signs each call's user),
/// so the doctor calls them exactly as the router does.
pub struct RouterView {
    pub auth: JwtConfig,
    pub sources: Vec<RouterSource>,
    pub internal_tls: Option<TlsConfig>,
    pub identity: Option<SignerConfig>,
    /// `fusion.endpoint`, when the router calls a fusion service.
    pub fusion: Option<ServiceEndpoint>,
}

/// `key` of `section` as `T` (`what` names it in messages); `None` when absent.
fn field<T: serde::de::DeserializeOwned>(section: &Value, key: &str, what: &str) -> Result<Option<T>, String> {
    section.get(key).cloned().map(serde_yaml::from_value).transpose().map_err(|e| format!("`{what}.{key}`: {e}"))
}

/// The endpoint at `key` of `section` with the older keys beside it (`tls`) folded in, as the
/// router reads it.
fn endpoint_at(section: &Value, key: &str, what: &str) -> Result<Option<ServiceEndpoint>, String> {
    let Some(mut ep) = field::<ServiceEndpoint>(section, key, what)? else { return Ok(None) };
    let older_tls = field::<EndpointTls>(section, "tls", what)?;
    ep.fold_older(&format!("{what}.{key}"), what, older_tls, None, None)?;
    // a replicated adapter may be written "http://a:1,b:1": the scheme of the first
    let scheme = ep.urls().next().and_then(|u| u.split_once("://")).map_or("http", |(s, _)| s).to_string();
    let urls: Vec<String> =
        ep.urls().map(|u| if u.contains("://") { u.to_string() } else { format!("{scheme}://{u}") }).collect();
    ep.url = urls.join(",");
    Ok(Some(ep))
}

/// Section `key` of the config with `FEDSEARCH_<KEY>__<FIELD>` overrides from `env` (one level,
/// as the router applies them to these sections).
fn section(root: &Value, key: &str, env: &BTreeMap<String, String>) -> Option<Value> {
    let prefix = format!("FEDSEARCH_{}__", key.to_ascii_uppercase());
    let mut value = root.get(key).cloned();
    for (k, v) in env {
        if let Some(field) = k.strip_prefix(&prefix) {
            let m = value.get_or_insert_with(|| Value::Mapping(Default::default()));
            if let Value::Mapping(m) = m {
                // booleans and numbers as YAML reads them, the rest as strings
                let parsed = serde_yaml::from_str::<Value>(v).unwrap_or(Value::String(v.clone()));
                let parsed =
                    if matches!(parsed, Value::Bool(_) | Value::Number(_)) { parsed } else { Value::String(v.clone()) };
                m.insert(Value::String(field.to_ascii_lowercase()), parsed);
            }
        }
    }
    value
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence().map(|s| s.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

/// Reads the parts of `router.yaml` the doctor uses (other keys are the router's business; the
/// router itself refuses unknown ones). `env` supplies `FEDSEARCH_AUTH__<KEY>` overrides.
pub fn read_router_config(text: &str, env: &BTreeMap<String, String>) -> Result<RouterView, String> {
    let root: Value = serde_yaml::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let auth = section(&root, "auth", env).unwrap_or(Value::Mapping(Default::default()));
    let auth: JwtConfig = serde_yaml::from_value(auth).map_err(|e| format!("`auth`: {e}"))?;
    let internal_tls = section(&root, "internal_tls", env)
        .map(serde_yaml::from_value::<TlsConfig>)
        .transpose()
        .map_err(|e| format!("`internal_tls`: {e}"))?;
    let identity = section(&root, "identity", env)
        .map(serde_yaml::from_value::<SignerConfig>)
        .transpose()
        .map_err(|e| format!("`identity`: {e}"))?;
    let list = root.get("sources").and_then(Value::as_sequence).ok_or("`sources` is missing or not a list")?;
    let mut sources = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let name = s.get("name").and_then(Value::as_str).ok_or(format!("`sources[{i}].name` is missing"))?;
        let at = format!("sources[{i}]");
        let adapter = endpoint_at(s, "adapter", &at)?.ok_or(format!("`{at}.adapter` is missing"))?;
        let target = s.get("target").and_then(Value::as_str).unwrap_or(name).to_string();
        let required_groups = s.get("required_groups").map(strings).unwrap_or_default();
        sources.push(RouterSource { name: name.to_string(), adapter, target, required_groups });
    }
    let fusion = match root.get("fusion") {
        Some(f) => endpoint_at(f, "endpoint", "fusion")?,
        None => None,
    };
    Ok(RouterView { auth, sources, internal_tls, identity, fusion })
}

/// One printed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub level: Level,
    pub source: String,
    pub check: String,
    pub message: String,
    pub fix: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Line {
    fn new(level: Level, source: &str, check: &str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { level, source: source.into(), check: check.into(), message: message.into(), fix: fix.into() }
    }

    pub fn text(&self) -> String {
        let level = match self.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        let source = if self.source.is_empty() { "-" } else { &self.source };
        let mut s = format!("{level}  {source}  {}: {}", self.check, one_line(&self.message));
        if !self.fix.is_empty() {
            s.push_str(" — fix: ");
            s.push_str(&one_line(&self.fix));
        }
        s
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How the doctor reaches the adapters: the router's client TLS and signing key, if any.
#[derive(Default)]
pub struct AsRouter {
    pub tls: Option<Arc<ClientTls>>,
    pub signer: Option<Arc<AssertionSigner>>,
}

/// A channel to one replica (`address`) of `endpoint` with the router's client TLS and the
/// endpoint's own `tls` over it (`what` names the endpoint's key).
fn channel(
    endpoint: &ServiceEndpoint,
    address: &str,
    what: &str,
    as_router: &AsRouter,
) -> Result<Channel, (String, &'static str)> {
    if address.starts_with("https://") && as_router.tls.is_none() {
        return Err((
            format!("`{address}` is https but router.yaml has no usable `internal_tls`"),
            "set `internal_tls` (ca_file, cert_file, key_file) as the router runs with",
        ));
    }
    let one = ServiceEndpoint {
        connect_timeout: Some(endpoint.connect_timeout_or(CONNECT_TIMEOUT)),
        timeout: Some(CALL_TIMEOUT),
        ..endpoint.replica(address)
    };
    one.lazy_channel(as_router.tls.as_ref(), what)
        .map_err(|e| (e.to_string(), "check `internal_tls` of router.yaml and this endpoint's `tls`"))
}

/// A TLS failure as the fix it needs (a server name or CA the endpoint must name), else `None`.
fn tls_fix(status: &tonic::Status) -> Option<&'static str> {
    use std::error::Error;
    let mut cause: Option<&dyn Error> = status.source();
    while let Some(e) = cause {
        let text = e.to_string();
        if text.contains("NotValidForName") || text.contains("not valid for name") {
            return Some("set this endpoint's `tls.server_name` to a name its certificate carries");
        }
        if text.contains("UnknownIssuer") || text.contains("invalid peer certificate") {
            return Some("set this endpoint's `tls.ca_file` to the CA its certificate chains to");
        }
        cause = e.source();
    }
    None
}

/// The line of `fusion.endpoint`: every replica asked for its health as the router asks it.
pub async fn check_fusion(endpoint: &ServiceEndpoint, as_router: &AsRouter) -> Vec<Line> {
    let mut lines = Vec::new();
    for address in endpoint.urls() {
        let channel = match channel(endpoint, address, "fusion.endpoint", as_router) {
            Ok(c) => c,
            Err((e, fix)) => {
                lines.push(Line::new(Level::Fail, "fusion", "endpoint", e, fix));
                continue;
            }
        };
        lines.push(if fedsearch_core::grpc::is_serving(channel, CALL_TIMEOUT).await {
            Line::new(Level::Ok, "fusion", "endpoint", format!("fusion at {address} is serving"), "")
        } else {
            Line::new(
                Level::Fail,
                "fusion",
                "endpoint",
                format!("fusion at {address} did not answer SERVING (not running, draining, or a TLS mismatch)"),
                "start fusion, or fix `fusion.endpoint` in router.yaml (its `tls.server_name` / `tls.ca_file`)",
            )
        });
    }
    lines
}

fn status_line(status: &tonic::Status) -> String {
    let m = status.message();
    let m = if m.is_empty() { status.code().description() } else { m };
    format!("{}: {m}", fedsearch_core::grpc::code_name(status.code()))
}

/// A fix for a probe that ended with `code`.
fn probe_fix(code: &str) -> &'static str {
    match code {
        "UNAUTHENTICATED" => {
            "give this user a credential for the source (the adapter's identity mapping / secrets file)"
        }
        "PERMISSION_DENIED" => "check the account the adapter uses for this user, or the source's ACLs",
        "UNAVAILABLE" => "start the backend, or fix the adapter's backend address",
        "FAILED_PRECONDITION" => "fix the adapter config or its credentials (see the lines above)",
        "DEADLINE_EXCEEDED" => "the backend is too slow for the source's timeout; check it or raise `timeout`",
        _ => "see the adapter's log for this sub-query",
    }
}

/// Checks one source; every line it finds.
pub async fn check_source(
    source: &RouterSource,
    user: Option<&Identity>,
    probe: &str,
    as_router: &AsRouter,
) -> Vec<Line> {
    let name = source.name.as_str();
    let mut lines = Vec::new();
    if source.adapter.urls().next().is_none() {
        lines.push(Line::new(Level::Fail, name, "adapter", "no adapter address", "set `adapter` of this source"));
        return lines;
    }
    for address in source.adapter.urls() {
        let channel = match channel(&source.adapter, address, &format!("source {name}: adapter"), as_router) {
            Ok(c) => c,
            Err((e, fix)) => {
                lines.push(Line::new(Level::Fail, name, "adapter", e, fix));
                continue;
            }
        };
        let mut adapter = SourceAdapterClient::new(channel.clone());
        let described = match adapter.describe(DescribeRequest {}).await {
            Ok(r) => r.into_inner(),
            Err(status) => {
                lines.push(Line::new(
                    Level::Fail,
                    name,
                    "adapter",
                    format!("adapter at {address} did not answer Describe ({})", status_line(&status)),
                    tls_fix(&status).unwrap_or("start the adapter, or fix `adapter` of this source in router.yaml"),
                ));
                continue;
            }
        };
        let served: Vec<&str> = described.sources.iter().map(|s| s.name.as_str()).collect();
        if !served.contains(&source.target.as_str()) {
            lines.push(Line::new(
                Level::Fail,
                name,
                "describe",
                format!(
                    "{} at {address} does not serve source `{}` (it serves: {})",
                    described.adapter,
                    source.target,
                    served.join(", ")
                ),
                "set `target` of this source to one of those, or add the source to the adapter's config",
            ));
            continue;
        }
        lines.push(Line::new(
            Level::Ok,
            name,
            "describe",
            format!("{} at {address} serves `{}`", described.adapter, source.target),
            "",
        ));

        let mut diagnostics = AdapterDiagnosticsServiceClient::new(channel.clone());
        match diagnostics.diagnose(DiagnoseRequest { sources: vec![source.target.clone()] }).await {
            Ok(r) => {
                for d in r.into_inner().diagnostics {
                    let level = match DiagnosticSeverity::try_from(d.severity) {
                        Ok(DiagnosticSeverity::Ok) => Level::Ok,
                        Ok(DiagnosticSeverity::Warning) => Level::Warn,
                        _ => Level::Fail,
                    };
                    lines.push(Line::new(level, name, &d.check, d.message, d.fix));
                }
            }
            Err(status) if status.code() == tonic::Code::Unimplemented => lines.push(Line::new(
                Level::Warn,
                name,
                "self-check",
                format!("{} has no self-check; only Describe and the probe were checked", described.adapter),
                "",
            )),
            Err(status) => lines.push(Line::new(
                Level::Fail,
                name,
                "self-check",
                format!("the self-check failed ({})", status_line(&status)),
                "see the adapter's log",
            )),
        }

        match user {
            None => {}
            Some(user) if !user.in_any_group(&source.required_groups) => lines.push(Line::new(
                Level::Warn,
                name,
                "probe",
                format!(
                    "not probed: `{}` is in none of `required_groups` ({})",
                    user.subject,
                    source.required_groups.join(", ")
                ),
                "use a token of a user who may use this source",
            )),
            Some(user) => lines.push(probe_line(&mut adapter, source, user, probe, as_router.signer.as_deref()).await),
        }
    }
    lines
}

async fn probe_line(
    adapter: &mut SourceAdapterClient<Channel>,
    source: &RouterSource,
    user: &Identity,
    text: &str,
    signer: Option<&AssertionSigner>,
) -> Line {
    let name = source.name.as_str();
    let deadline = std::time::SystemTime::now() + CALL_TIMEOUT;
    let mut context = user.to_user_context();
    // signed as the router signs it: adapters that verify assertions accept nothing else
    if let Some(signer) = signer {
        signer.sign_context(&mut context, &source.target, &search_scope("doctor-probe"), deadline);
    }
    let query = SubQuery {
        id: "doctor-probe".into(),
        source: source.target.clone(),
        text: text.into(),
        original_text: text.into(),
        limit: 3,
        deadline: Some(fedsearch_core::time::to_timestamp(deadline)),
        user: Some(context),
        ..Default::default()
    };
    let frames = tokio_stream::once(SearchFrame { frame: Some(search_frame::Frame::SubQuery(query)) });
    let mut stream = match adapter.search(frames).await {
        Ok(r) => r.into_inner(),
        Err(status) => {
            return Line::new(
                Level::Fail,
                name,
                "probe",
                format!("the search stream was refused ({})", status_line(&status)),
                "see the adapter's log",
            );
        }
    };
    let mut hits = 0usize;
    loop {
        match stream.message().await {
            Ok(Some(ResultFrame { frame: Some(result_frame::Frame::Batch(b)) })) => hits += b.hits.len(),
            Ok(Some(ResultFrame { frame: Some(result_frame::Frame::Done(d)) })) => {
                let state = SourceState::try_from(d.state).unwrap_or(SourceState::Unspecified);
                return if state == SourceState::Ok {
                    Line::new(
                        Level::Ok,
                        name,
                        "probe",
                        format!("searched {text:?} as `{}`: {hits} hit(s)", user.subject),
                        "",
                    )
                } else {
                    Line::new(
                        Level::Fail,
                        name,
                        "probe",
                        format!(
                            "searched {text:?} as `{}`: {} {} ({})",
                            user.subject,
                            state.as_str_name(),
                            d.code,
                            d.message
                        ),
                        probe_fix(&d.code),
                    )
                };
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                return Line::new(
                    Level::Fail,
                    name,
                    "probe",
                    "the stream ended without an answer",
                    "see the adapter's log",
                );
            }
            Err(status) => {
                return Line::new(
                    Level::Fail,
                    name,
                    "probe",
                    format!("the search failed ({})", status_line(&status)),
                    "see the adapter's log",
                );
            }
        }
    }
}

/// The whole command: prints every line and a summary; Ok(true) when nothing FAILed.
pub async fn run(config: &Path, token: Option<&str>, probe: &str, only: &[String]) -> Result<bool, Failure> {
    let text = std::fs::read_to_string(config)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", config.display())))?;
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            ["FEDSEARCH_AUTH__", "FEDSEARCH_INTERNAL_TLS__", "FEDSEARCH_IDENTITY__"].iter().any(|p| k.starts_with(p))
        })
        .collect();
    let view = read_router_config(&text, &env).map_err(|e| Failure::Usage(format!("{}: {e}", config.display())))?;
    if let Some(unknown) = only.iter().find(|o| !view.sources.iter().any(|s| &s.name == *o)) {
        return Err(Failure::Usage(format!("--source {unknown}: no such source in {}", config.display())));
    }
    let mut lines = Vec::new();
    let mut as_router = AsRouter::default();
    if let Some(tls) = &view.internal_tls {
        match ClientTls::from_config(tls, "internal_tls") {
            Ok(t) => as_router.tls = t,
            Err(e) => lines.push(Line::new(
                Level::Fail,
                "",
                "internal_tls",
                e,
                "fix `internal_tls` of router.yaml (the files the router uses)",
            )),
        }
    }
    if let Some(identity) = &view.identity {
        match AssertionSigner::load(identity) {
            Ok(s) => as_router.signer = Some(s),
            Err(e) => lines.push(Line::new(
                Level::Fail,
                "",
                "identity",
                format!("cannot load the router's signing key: {e}"),
                "fix `identity.signing_key_file` of router.yaml",
            )),
        }
    }
    let user = match token {
        None => {
            lines.push(Line::new(
                Level::Warn,
                "",
                "token",
                "no --token: sources are not probed as a user",
                "pass --token <a user's JWT>",
            ));
            None
        }
        Some(token) => {
            let verified = JwtVerifier::new(&view.auth)
                .map_err(|e| Failure::Usage(format!("`auth` of {}: {e}", config.display())))?
                .verify(token);
            match verified {
                Ok(identity) => {
                    lines.push(Line::new(
                        Level::Ok,
                        "",
                        "token",
                        format!(
                            "verified with the router's auth: `{}` in groups {}",
                            identity.subject,
                            identity.groups.join(", ")
                        ),
                        "",
                    ));
                    Some(identity)
                }
                Err(e) => {
                    lines.push(Line::new(
                        Level::Fail,
                        "",
                        "token",
                        format!("the router would refuse this token: {e}"),
                        "mint it with the key in the router's `auth` section (fedsearch token --secret …)",
                    ));
                    None
                }
            }
        }
    };
    for line in &lines {
        println!("{}", line.text());
    }
    if let Some(fusion) = view.fusion.as_ref().filter(|_| only.is_empty()) {
        let fusion_lines = check_fusion(fusion, &as_router).await;
        for line in &fusion_lines {
            println!("{}", line.text());
        }
        lines.extend(fusion_lines);
    }
    for source in view.sources.iter().filter(|s| only.is_empty() || only.contains(&s.name)) {
        let source_lines = check_source(source, user.as_ref(), probe, &as_router).await;
        for line in &source_lines {
            println!("{}", line.text());
        }
        lines.extend(source_lines);
    }
    let count = |l: Level| lines.iter().filter(|x| x.level == l).count();
    let (fails, warns) = (count(Level::Fail), count(Level::Warn));
    println!(
        "doctor: {} source(s), {} ok, {warns} warning(s), {fails} problem(s){}",
        view.sources.iter().filter(|s| only.is_empty() || only.contains(&s.name)).count(),
        count(Level::Ok),
        if fails == 0 { "" } else { " — fix the FAIL lines above" }
    );
    Ok(fails == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
server: { listen: 127.0.0.1:0 }
auth: { hs256_secret: "from-the-file-0123456789-0123456789" }
sources:
  - { name: tickets, adapter: "http://127.0.0.1:1", description: x }
  - { name: orders, adapter: "http://127.0.0.1:2,127.0.0.2:2", target: orders_v2, required_groups: [finance], description: y }
"#;

    #[test]
    fn the_router_config_gives_sources_targets_replicas_and_auth_with_env_overrides() {
        let view = read_router_config(CONFIG, &BTreeMap::new()).unwrap();
        assert_eq!(view.auth.hs256_secret, Some("from-the-file-0123456789-0123456789".into()));
        assert_eq!(
            view.sources[0],
            RouterSource {
                name: "tickets".into(),
                adapter: ServiceEndpoint::new("http://127.0.0.1:1"),
                target: "tickets".into(),
                required_groups: vec![],
            }
        );
        assert_eq!(view.sources[1].adapter.urls().collect::<Vec<_>>(), ["http://127.0.0.1:2", "http://127.0.0.2:2"]);
        assert_eq!(view.sources[1].target, "orders_v2");
        assert_eq!(view.sources[1].required_groups, ["finance"]);
        let env = BTreeMap::from([("FEDSEARCH_AUTH__HS256_SECRET".to_string(), "from-env".to_string())]);
        assert_eq!(read_router_config(CONFIG, &env).unwrap().auth.hs256_secret, Some("from-env".into()));
        assert!(read_router_config("auth: {}\n", &BTreeMap::new()).is_err());
        assert!(view.internal_tls.is_none() && view.identity.is_none());
        let env = BTreeMap::from([
            ("FEDSEARCH_INTERNAL_TLS__INSECURE".to_string(), "true".to_string()),
            ("FEDSEARCH_IDENTITY__SIGNING_KEY_FILE".to_string(), "/run/signing.pem".to_string()),
        ]);
        let view = read_router_config(CONFIG, &env).unwrap();
        assert!(view.internal_tls.unwrap().insecure);
        assert_eq!(view.identity.unwrap().signing_key_file, std::path::PathBuf::from("/run/signing.pem"));
    }

    #[test]
    fn endpoints_are_read_as_the_router_reads_them_with_their_own_tls() {
        let shipped = include_str!("../../../deploy/config/router.yaml");
        let view = read_router_config(shipped, &BTreeMap::new()).unwrap();
        assert!(view.sources.iter().all(|s| s.adapter.is_https()), "the example config is all TLS");
        assert_eq!(view.fusion.as_ref().map(|f| f.url.as_str()), Some("https://127.0.0.1:50052"));
        let own = "{ server_name: es.other.svc, ca_file: /x/ca.pem }";
        let mapped = CONFIG.replace(
            "adapter: \"http://127.0.0.1:1\"",
            &format!("adapter: {{ url: \"http://127.0.0.1:1\", tls: {own} }}"),
        );
        let older =
            CONFIG.replace("adapter: \"http://127.0.0.1:1\"", &format!("adapter: \"http://127.0.0.1:1\", tls: {own}"));
        let (a, b) = (
            read_router_config(&mapped, &BTreeMap::new()).unwrap(),
            read_router_config(&older, &BTreeMap::new()).unwrap(),
        );
        assert_eq!(a.sources[0].adapter, b.sources[0].adapter, "the older `tls:` beside `adapter:` folds in");
        assert_eq!(a.sources[0].adapter.tls.as_ref().and_then(|t| t.server_name.as_deref()), Some("es.other.svc"));
        let both = mapped.replace("description: x }", "description: x, tls: { server_name: b.svc } }");
        assert!(read_router_config(&both, &BTreeMap::new()).err().unwrap().contains("sources[0].tls"));
    }

    #[test]
    fn lines_are_one_line_each_with_the_fix() {
        let l = Line::new(Level::Fail, "kb", "index", "index `kb`\ndoes not exist", "create it");
        assert_eq!(l.text(), "FAIL  kb  index: index `kb` does not exist — fix: create it");
        assert_eq!(Line::new(Level::Ok, "", "token", "fine", "").text(), "ok    -  token: fine");
    }
}
