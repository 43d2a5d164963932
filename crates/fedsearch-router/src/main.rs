//! The `router` binary: load config, start telemetry, serve, shut down.

use clap::Parser;

/// mimalloc instead of glibc malloc: the hot path allocates many small, short-lived buffers
/// across the runtime's threads (BENCHMARKS.md, "Against the seed peer").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(about = "fedsearch router: one question, many sources, one cited answer")]
struct Args {
    /// YAML config file; `FEDSEARCH_*` environment variables override it.
    #[arg(long, env = "FEDSEARCH_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Validate the config as start-up does (and read the files it names), then exit: 0 when
    /// valid, 2 with the problem. Binds no port and calls no other service.
    #[arg(long)]
    check: bool,
}

fn main() -> anyhow::Result<()> {
    // On the runtime that hands freed memory back once the router goes idle.
    fedsearch_memory::block_on(run())?
}

async fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let config: fedsearch_router::RouterConfig = match fedsearch_core::config::load(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("router: {e}");
            std::process::exit(2);
        }
    };
    if config.internal_tls.is_none() {
        eprintln!("router: invalid config: `internal_tls` is required: certificate files, or `insecure: true`");
        std::process::exit(2);
    }
    if args.check {
        fedsearch_core::config::exit_after_check("router", fedsearch_router::check(config));
    }
    let telemetry = fedsearch_core::telemetry::init("router", &config.telemetry)?;
    if config.identity.is_none() {
        tracing::warn!(
            "no `identity.signing_key_file`: sub-queries carry no signed identity; verifying adapters refuse them"
        );
    }
    let admin = fedsearch_core::admin::start("router", &config.admin, &config.telemetry).await?;
    let listener = fedsearch_core::grpc::bind(config.server.listen).await?;
    tracing::info!(listen = %listener.local_addr()?, sources = config.sources.len(), "router serving");
    let result = fedsearch_router::serve(config, listener, fedsearch_core::shutdown::signal()).await;
    admin.shutdown();
    telemetry.shutdown();
    result
}
