//! Benchmark tools for fedsearch: the `scripted-adapter` binary (see [`fedsearch_bench::scripted`]).

use clap::Parser;

/// mimalloc instead of glibc malloc: the hot path allocates many small, short-lived buffers
/// across the runtime's threads (BENCHMARKS.md, "Against the seed peer").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_bench::scripted::main(fedsearch_bench::scripted::ScriptedArgs::parse()).await
}
