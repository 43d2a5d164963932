//! Benchmark tools for fedsearch: the `scripted-adapter` binary (see [`fedsearch_bench::scripted`]).
//!
//! Plaintext with the user context believed by default (as before); with `--tls-cert`,
//! `--tls-key`, `--tls-ca` and `--allowed-client` it serves mutual TLS like a deployed adapter,
//! and with `--assertion-jwks` it verifies the router's identity assertions — so a benchmark can
//! measure what TLS and the assertions cost (scripts/bench-tls.sh).

use std::path::PathBuf;

use clap::Parser;
use fedsearch_core::{assertion::VerifierConfig, tls::TlsConfig};

/// mimalloc instead of glibc malloc: the hot path allocates many small, short-lived buffers
/// across the runtime's threads (BENCHMARKS.md, "Against the seed peer").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "scripted-adapter",
    about = "a SourceAdapter with fixed latency and hits, for benchmarks (loopback only)"
)]
struct Args {
    #[command(flatten)]
    scripted: fedsearch_bench::scripted::ScriptedArgs,
    /// PEM certificate chain to serve mutual TLS with (needs --tls-key, --tls-ca, --allowed-client).
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// PEM CA bundle client certificates must chain to.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// A SAN (DNS, IP or spiffe:// URI) a client certificate must carry; repeatable.
    #[arg(long)]
    allowed_client: Vec<String>,
    /// JWKS file of the router's assertion keys: verify every sub-query's identity assertion.
    #[arg(long)]
    assertion_jwks: Option<PathBuf>,
}

impl Args {
    /// The server's TLS and identity settings from the flags, checked like an adapter's config.
    fn security(&self) -> Result<(TlsConfig, VerifierConfig), String> {
        let tls = match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (None, None, None) if self.allowed_client.is_empty() => TlsConfig { insecure: true, ..Default::default() },
            _ => TlsConfig {
                ca_file: self.tls_ca.clone(),
                cert_file: self.tls_cert.clone(),
                key_file: self.tls_key.clone(),
                allowed_clients: self.allowed_client.clone(),
                ..Default::default()
            },
        };
        tls.validate_server("--tls-* flags")?;
        let identity = VerifierConfig {
            trust_unsigned: self.assertion_jwks.is_none(),
            jwks_file: self.assertion_jwks.clone(),
            issuer: fedsearch_core::assertion::DEFAULT_ISSUER.into(),
            leeway_secs: 5,
        };
        identity.validate("--assertion-jwks")?;
        Ok((tls, identity))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let built = args.scripted.build().map_err(|e| e.to_string()).and_then(|b| Ok((b, args.security()?)));
    let ((adapter, mut config), (tls, identity)) = match built {
        Ok(built) => built,
        Err(e) => {
            eprintln!("scripted-adapter: {e}");
            std::process::exit(2);
        }
    };
    // Plaintext and believed users stay quiet (the earlier default); the kit warns otherwise.
    config.tls = (!tls.insecure).then_some(tls);
    config.identity = (!identity.trust_unsigned).then_some(identity);
    let telemetry = fedsearch_core::telemetry::init("scripted-adapter", &Default::default())?;
    let listener = fedsearch_core::grpc::bind(config.listen).await?;
    tracing::info!(
        source = %args.scripted.source,
        latency_ms = args.scripted.latency_ms,
        tls = config.tls.is_some(),
        assertions = config.identity.is_some(),
        listen = %listener.local_addr()?,
        "serving"
    );
    let result =
        fedsearch_adapter_kit::serve_adapter(adapter, listener, &config, fedsearch_core::shutdown::signal()).await;
    telemetry.shutdown();
    result
}
