//! Benchmark tools for fedsearch: the `fedsearch-loadgen` binary (see [`fedsearch_bench::load`]).

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_bench::load::main(fedsearch_bench::load::LoadgenArgs::parse()).await
}
