//! Benchmark tools for fedsearch: the `scripted-adapter` binary (see [`fedsearch_bench::scripted`]).

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_bench::scripted::main(fedsearch_bench::scripted::ScriptedArgs::parse()).await
}
