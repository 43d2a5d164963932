//! The adapter kit: one [`Adapter`] trait and [`serve_adapter`], shared by every source adapter.
//!
//! An adapter crate implements [`Adapter`] with its backend logic only. The kit turns it into
//! the `fedsearch.adapter.v1.SourceAdapter` gRPC service: it reads the router's sub-query
//! stream, runs every sub-query concurrently under its deadline, streams hit batches back,
//! ends each sub-query with a `SubQueryDone` carrying a state and a safe message, cancels work
//! when the router cancels or disconnects, and serves health, reflection and graceful shutdown.

pub mod diagnostics;
mod error;
mod metrics;
mod service;
pub mod testing;
pub mod vocabulary;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use fedsearch_core::{assertion::AssertionVerifier, tls::ServerTls};

pub use error::AdapterError;
pub use fedsearch_proto::{
    adapter::{DescribeResponse, FetchRequest, FetchResponse, SourceDescription, SubQuery},
    types::{SourceHit, UserContext},
};
use serde::Deserialize;
pub use service::{AdapterService, MAX_SUBQUERIES_PER_STREAM};
use tokio::sync::mpsc;

/// Where batches of hits for one sub-query go. Cheap to clone.
#[derive(Clone, Debug)]
pub struct HitSink {
    tx: mpsc::Sender<Vec<SourceHit>>,
    notes: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HitSink {
    /// Sends one batch. Returns `false` when the router stopped listening (stop working).
    pub async fn send(&self, batch: Vec<SourceHit>) -> bool {
        if batch.is_empty() {
            return true;
        }
        self.tx.send(batch).await.is_ok()
    }

    /// Adds a note for the caller to an answer that is otherwise OK, e.g. "no template
    /// matched" or "filter `tags` not applied". Notes end up in the source's status message,
    /// so they must be safe to show.
    pub fn note(&self, note: impl Into<String>) {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).push(note.into());
    }

    /// The notes added so far, joined.
    pub fn notes(&self) -> String {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).join("; ")
    }

    /// A handle that reads this sink's notes but does not keep the batch channel open.
    pub(crate) fn clone_notes(&self) -> Notes {
        Notes(self.notes.clone())
    }

    #[doc(hidden)]
    pub fn channel(capacity: usize) -> (Self, mpsc::Receiver<Vec<SourceHit>>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Self { tx, notes: Default::default() }, rx)
    }
}

/// Reads the notes of a [`HitSink`] after the sub-query ended.
pub(crate) struct Notes(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Notes {
    pub(crate) fn notes(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).join("; ")
    }
}

/// A source adapter's backend logic.
///
/// `search` runs one sub-query: it sends one or more batches of hits (ranked 1.. within the
/// sub-query) to `sink` and returns `Ok(())`, or returns the error that ended it. The kit
/// enforces the sub-query deadline around the future and drops it on cancellation, so
/// implementations only need to pass the remaining time on to their backend (see
/// [`remaining`]).
pub trait Adapter: Send + Sync + 'static {
    /// Name and logical sources of this adapter.
    fn describe(&self) -> DescribeResponse;

    fn search(&self, query: SubQuery, sink: HitSink) -> impl Future<Output = Result<(), AdapterError>> + Send;

    /// Full text of one document as the user in `request.user`, re-checking permission now.
    fn fetch(&self, request: FetchRequest) -> impl Future<Output = Result<FetchResponse, AdapterError>> + Send;

    /// Self-checks of the configured `sources` (empty: all) against the backend, for
    /// `fedsearch doctor` (see [`diagnostics`]). `None`, the default: this adapter has none.
    fn diagnose(&self, sources: Vec<String>) -> impl Future<Output = Option<Vec<diagnostics::Diagnostic>>> + Send {
        let _ = sources;
        async { None }
    }
}

/// Time left before a sub-query's deadline (`default` when it carries none).
pub fn remaining(query: &SubQuery, default: Duration) -> Duration {
    fedsearch_core::time::remaining(query.deadline.as_ref()).unwrap_or(default)
}

/// Settings every adapter binary shares (`server:` in its config file).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:50061`.
    pub listen: SocketAddr,
    /// How long in-flight calls may drain after SIGTERM.
    #[serde(default = "default_grace", with = "fedsearch_core::config::duration")]
    pub shutdown_grace: Duration,
    /// Sub-queries one adapter runs at once across all streams; more wait their turn.
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent_subqueries: usize,
    /// Deadline applied when a sub-query carries none.
    #[serde(default = "default_timeout", with = "fedsearch_core::config::duration")]
    pub default_timeout: Duration,
    /// Mutual TLS (`ca_file`, `cert_file`, `key_file`, `allowed_clients`), or `insecure: true`.
    /// The binary refuses to start without one of the two; see [`fedsearch_core::tls`].
    #[serde(default)]
    pub tls: Option<fedsearch_core::tls::TlsConfig>,
    /// How the router's identity assertions are verified (`jwks_file`), or
    /// `trust_unsigned: true`. The binary refuses to start without one of the two; see
    /// [`fedsearch_core::assertion`].
    #[serde(default)]
    pub identity: Option<fedsearch_core::assertion::VerifierConfig>,
}

fn default_grace() -> Duration {
    Duration::from_secs(10)
}
fn default_max_concurrent() -> usize {
    256
}
fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

impl ServerConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_concurrent_subqueries == 0 {
            return Err("`server.max_concurrent_subqueries` must be at least 1".into());
        }
        if self.default_timeout.is_zero() {
            return Err("`server.default_timeout` must be positive".into());
        }
        if let Some(tls) = &self.tls {
            tls.validate_server("server.tls")?;
        }
        if let Some(identity) = &self.identity {
            identity.validate("server.identity")?;
        }
        Ok(())
    }

    /// These settings for a test harness serving the adapter in process: the same limits, over
    /// plaintext, with the user context believed (no `tls`, no `identity`) — whatever the shipped
    /// config file says about certificate files. Never for a deployed adapter, which
    /// [`ServerConfig::require_security`] refuses without both.
    pub fn in_process(&self) -> Self {
        Self { tls: None, identity: None, ..self.clone() }
    }

    /// A test's adapter on `listen` (loopback): in process (see [`ServerConfig::in_process`]),
    /// a 100 ms drain, 8 sub-queries at once, 5 s when a sub-query names no deadline. Tests
    /// change what they exercise with struct update syntax.
    pub fn loopback(listen: SocketAddr) -> Self {
        Self {
            listen,
            shutdown_grace: Duration::from_millis(100),
            max_concurrent_subqueries: 8,
            default_timeout: Duration::from_secs(5),
            tls: None,
            identity: None,
        }
    }

    /// What a deployed adapter must say explicitly: how callers are authenticated (`server.tls`)
    /// and how the user is known (`server.identity`).
    pub fn require_security(&self) -> Result<(), String> {
        if self.tls.is_none() {
            return Err("`server.tls` is required: certificate files and allowed_clients, or `insecure: true`".into());
        }
        if self.identity.is_none() {
            return Err("`server.identity` is required: the router's `jwks_file`, or `trust_unsigned: true`".into());
        }
        Ok(())
    }
}

/// What `--check` does after the config parsed and its security settings were checked: builds
/// the adapter as start-up does (templates, sources, patterns; the answer does not wait on the
/// backend) and reads the server's TLS and identity files.
async fn check<C, A, F, Fut>(config: &C, build: F) -> anyhow::Result<()>
where
    C: AdapterConfig,
    F: FnOnce(&C) -> Fut,
    Fut: Future<Output = anyhow::Result<A>>,
{
    build(config).await?;
    server_security(config.server())?;
    Ok(())
}

/// How callers are authenticated: the server's TLS settings and the router's identity keys.
type ServerSecurity = (Option<Arc<ServerTls>>, Option<Arc<AssertionVerifier>>);

/// The [`ServerSecurity`] of `config`, loaded from the files it names.
fn server_security(config: &ServerConfig) -> anyhow::Result<ServerSecurity> {
    let tls = match &config.tls {
        Some(tls) => ServerTls::from_config(tls, "server.tls").map_err(anyhow::Error::msg)?,
        None => None,
    };
    let verifier = match &config.identity {
        Some(identity) => AssertionVerifier::from_config(identity, "server.identity").map_err(anyhow::Error::msg)?,
        None => None,
    };
    Ok((tls, verifier))
}

/// Serves `adapter` on `listener` until `shutdown` resolves, then drains. Over mutual TLS when
/// `config.tls` says so; with `config.identity` every sub-query and fetch must carry a valid
/// router-signed assertion. Without `config.identity` (in-process tests) the plain
/// `UserContext` is believed; the binary ([`run`]) refuses to start that way unless the config
/// says `trust_unsigned: true`.
pub async fn serve_adapter<A: Adapter>(
    adapter: A,
    listener: tokio::net::TcpListener,
    config: &ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let adapter = std::sync::Arc::new(adapter);
    let diagnostics = diagnostics::DiagnosticsService::new(adapter.clone());
    let (tls, verifier) = server_security(config)?;
    let (drain, drained) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = drain.send(true);
    };
    let service = AdapterService::new(adapter, config.max_concurrent_subqueries, config.default_timeout)
        .with_verifier(verifier)
        .with_drain(drained);
    let served = fedsearch_core::grpc::Served {
        routes: tonic::service::Routes::new(service.into_server()).add_service(diagnostics.into_server()),
        service_names: vec!["fedsearch.adapter.v1.SourceAdapter", diagnostics::SERVICE_NAME],
    };
    fedsearch_core::grpc::serve_tls(listener, served, shutdown, config.shutdown_grace, tls).await
}

/// What the kit needs from an adapter's config file: `server:` and `telemetry:` sections.
pub trait AdapterConfig: serde::de::DeserializeOwned + fedsearch_core::config::Validate + Send + 'static {
    fn server(&self) -> &ServerConfig;
    fn telemetry(&self) -> &fedsearch_core::config::TelemetryConfig;
    /// The `admin:` section (metrics and HTTP health); none by default.
    fn admin(&self) -> &fedsearch_core::admin::AdminConfig {
        static OFF: std::sync::LazyLock<fedsearch_core::admin::AdminConfig> =
            std::sync::LazyLock::new(Default::default);
        &OFF
    }
}

/// Implements [`AdapterConfig`] for a config struct with the usual `server`, `telemetry` and
/// `admin` fields: `fedsearch_adapter_kit::impl_adapter_config!(EsAdapterConfig);`.
#[macro_export]
macro_rules! impl_adapter_config {
    ($config:ty) => {
        impl $crate::AdapterConfig for $config {
            fn server(&self) -> &$crate::ServerConfig {
                &self.server
            }
            fn telemetry(&self) -> &$crate::__core::config::TelemetryConfig {
                &self.telemetry
            }
            fn admin(&self) -> &$crate::__core::admin::AdminConfig {
                &self.admin
            }
        }
    };
}

#[doc(hidden)]
pub use fedsearch_core as __core;

#[derive(clap::Parser, Debug)]
struct Args {
    /// YAML config file; `FEDSEARCH_*` environment variables override it.
    #[arg(long, env = "FEDSEARCH_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Validate the config as start-up does (and read the TLS and identity files it names),
    /// then exit: 0 when valid, 2 with the problem. Binds no port; the answer does not depend on
    /// the backend, which need not be up.
    #[arg(long)]
    check: bool,
}

/// The whole `main` of an adapter binary: parse `--config`, load and validate the config
/// (exit 2 with one line on error), start telemetry, build the adapter, serve until
/// SIGTERM/SIGINT, drain, flush spans. With `--check`, stop after the validation ([`check`]).
pub async fn run<C, A, F, Fut>(service: &'static str, build: F) -> anyhow::Result<()>
where
    C: AdapterConfig,
    A: Adapter,
    F: FnOnce(&C) -> Fut,
    Fut: Future<Output = anyhow::Result<A>>,
{
    use clap::Parser;
    let args = Args::parse();
    let config: C = match fedsearch_core::config::load(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{service}: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = config.server().require_security().and_then(|()| config.admin().validate()) {
        eprintln!("{service}: invalid config: {e}");
        std::process::exit(2);
    }
    if args.check {
        fedsearch_core::config::exit_after_check(service, check(&config, build).await);
    }
    let telemetry = fedsearch_core::telemetry::init(service, config.telemetry())?;
    let admin = fedsearch_core::admin::start(service, config.admin(), config.telemetry()).await?;
    let adapter = match build(&config).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{service}: {e:#}");
            std::process::exit(2);
        }
    };
    let listener = fedsearch_core::grpc::bind(config.server().listen).await?;
    tracing::info!(service, listen = %listener.local_addr()?, "serving");
    let result = serve_adapter(adapter, listener, config.server(), fedsearch_core::shutdown::signal()).await;
    admin.shutdown();
    telemetry.shutdown();
    result
}
