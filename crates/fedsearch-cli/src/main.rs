//! The `fedsearch` binary: parse the command line, run it, exit 0, 1 (error) or 2 (usage).

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    fedsearch_cli::main(fedsearch_cli::cli::Cli::parse()).await
}
