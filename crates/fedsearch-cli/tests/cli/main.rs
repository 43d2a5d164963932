//! The fedsearch command line: the real `fedsearch` binary against an in-test router.
//!
//! The router crate has its own tests; here a tiny `FederatedSearch` server ([`router`]) checks
//! the bearer token and answers with canned responses, so these tests are about the CLI: what
//! it sends, what it prints, and how it exits.

mod commands;
mod router;
mod search;

use std::process::Stdio;

/// What one run of the binary printed, and how it exited.
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

/// `fedsearch ARGS` with no FEDSEARCH_* variables from the test's environment.
pub fn command(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_fedsearch"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("FEDSEARCH_") {
            cmd.env_remove(&key);
        }
    }
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    cmd
}

/// Runs `fedsearch ARGS` to the end.
pub async fn fedsearch(args: &[&str]) -> Run {
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), command(args).output())
        .await
        .expect("fedsearch did not finish within 60 s")
        .expect("cannot run the fedsearch binary");
    Run {
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        code: out.status.code(),
    }
}

/// A token for a sample-company user, minted by the binary itself.
pub async fn token_for(user: &str) -> String {
    let run = fedsearch(&["token", "--user", user, "--secret", router::SECRET]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    run.stdout.trim().to_string()
}
