//! Outage and recovery on the test's OWN node (own run dir and port): stopped → UNAVAILABLE,
//! restarted → answers again through the same adapter, without restarting it.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use fedsearch_proto::types::{Filters, SourceState};

use crate::common::*;

/// A node started by the project's script in a private run dir; stopped (data deleted) on drop.
struct OwnNode {
    run_dir: tempfile::TempDir,
    port: u16,
}

fn script() -> PathBuf {
    repo_root().join("scripts/backends/opensearch.sh")
}

impl OwnNode {
    fn run(&self, args: &[&str]) {
        let out = Command::new("bash")
            .arg(script())
            .args(args)
            .env("FEDSEARCH_RUN_DIR", self.run_dir.path())
            .env("OPENSEARCH_PORT", self.port.to_string())
            .env_remove("OPENSEARCH_URL")
            .output()
            .expect("run scripts/backends/opensearch.sh");
        assert!(
            out.status.success(),
            "opensearch.sh {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for OwnNode {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .env("FEDSEARCH_RUN_DIR", self.run_dir.path())
            .env("OPENSEARCH_PORT", self.port.to_string())
            .output();
    }
}

fn free_port() -> u16 {
    // The runner refuses HTTP ports above 9299 (its built-in maximum), so stay well above the
    // shared node's default 9201 and below 9300.
    for port in 9_241..9_300 {
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::TcpListener::bind(("127.0.0.1", port - 1)).is_ok()
        {
            return port;
        }
    }
    panic!("no free port for a private OpenSearch node");
}

/// Reuses the shared run dir's resolved classpath so no Maven run is needed when it exists.
fn copy_classpath(to: &Path) {
    let shared = std::env::var("FEDSEARCH_RUN_DIR").map(PathBuf::from).unwrap_or_else(|_| repo_root().join(".run"));
    for f in ["opensearch.classpath", "opensearch.classpath.version"] {
        let _ = std::fs::copy(shared.join(f), to.join(f));
    }
}

async fn blocking(node: &OwnNode, args: &'static [&'static str]) -> std::time::Duration {
    let t = Instant::now();
    tokio::task::block_in_place(|| node.run(args));
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_node_is_unavailable_and_a_restarted_one_answers_again() {
    let node = OwnNode { run_dir: tempfile::tempdir().unwrap(), port: free_port() };
    copy_classpath(node.run_dir.path());
    let started_in = blocking(&node, &["start"]).await;
    blocking(&node, &["seed"]).await;

    let mut s = serve(&config(&node.url(), "")).await;
    let q = || sub_query("q", "tickets", "支付超时", "alice", Filters::default());
    let before = search_one(&mut s.client, q()).await.ok().ids();
    assert!(!before.is_empty());

    blocking(&node, &["stop", "--keep-data"]).await;
    let down = search_one(&mut s.client, q()).await;
    assert_eq!(down.state(), SourceState::Unavailable);
    assert_eq!(down.code(), "UNAVAILABLE");
    assert_eq!(down.message(), "search cluster unreachable");
    let err = fetch(&mut s.client, "tickets", "tickets/TCK-5002", "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);
    assert!(!err.message().contains("127.0.0.1"), "{}", err.message());

    let restarted_in = blocking(&node, &["start"]).await;
    let after = search_one(&mut s.client, q()).await.ok().ids();
    assert_eq!(after, before, "same answers after recovery, same adapter");
    eprintln!("own node: first start {started_in:?}, restart {restarted_in:?}");
}
