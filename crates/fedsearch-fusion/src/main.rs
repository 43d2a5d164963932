//! The fusion service: deduplicates and fuses per-source result lists into one ranked, explained list.
//!
//! `fusion --config deploy/config/fusion.yaml`: load the config (exit 2 with one line when it is
//! bad), start telemetry, serve until SIGTERM/SIGINT, drain, flush spans.

use fedsearch_fusion::FusionConfig;

/// mimalloc instead of glibc malloc: the hot path allocates many small, short-lived buffers
/// across the runtime's threads (BENCHMARKS.md, "Against the seed peer").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(clap::Parser, Debug)]
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
    // On the runtime that hands freed memory back once the service goes idle.
    fedsearch_memory::block_on(run())?
}

async fn run() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let config: FusionConfig = fedsearch_core::config::load(args.config.as_deref()).unwrap_or_else(|e| {
        eprintln!("fusion: {e}");
        std::process::exit(2);
    });
    if config.server.tls.is_none() {
        eprintln!(
            "fusion: invalid config: `server.tls` is required: certificate files and allowed_clients, or `insecure: true`"
        );
        std::process::exit(2);
    }
    if args.check {
        fedsearch_core::config::exit_after_check("fusion", fedsearch_fusion::check(&config));
    }
    let telemetry = fedsearch_core::telemetry::init("fusion", &config.telemetry)?;
    let admin = fedsearch_core::admin::start("fusion", &config.admin, &config.telemetry).await?;
    let listener = fedsearch_core::grpc::bind(config.server.listen).await?;
    tracing::info!(service = "fusion", listen = %listener.local_addr()?, "serving");
    let result = fedsearch_fusion::serve(listener, &config, fedsearch_core::shutdown::signal()).await;
    admin.shutdown();
    telemetry.shutdown();
    result
}
