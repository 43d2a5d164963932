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
        let out = self.output(args);
        assert!(
            out.status.success(),
            "opensearch.sh {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn output(&self, args: &[&str]) -> std::process::Output {
        Command::new("bash")
            .arg(script())
            .args(args)
            .env("FEDSEARCH_RUN_DIR", self.run_dir.path())
            .env("OPENSEARCH_PORT", self.port.to_string())
            .env_remove("OPENSEARCH_URL")
            .output()
            .expect("run scripts/backends/opensearch.sh")
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

/// A free HTTP port above the runner's built-in maximum (9299), whose transport port (HTTP + 100,
/// scripts/backends/opensearch.sh) is free too: the script must start a node on any port.
fn free_port() -> u16 {
    let base = 20_000 + (std::process::id() % 5_000) as u16;
    for port in (base..32_000).chain(20_000..base) {
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::TcpListener::bind(("127.0.0.1", port + 100)).is_ok()
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
    assert!(node.port > 9_299, "the test must use a port the runner's own main() refuses");
    let started_in = blocking(&node, &["start"]).await;
    let nodes: serde_json::Value = rest(&node.url())
        .nodes()
        .info(elasticsearch::nodes::NodesInfoParts::NodeIdMetric(&["_local"], &["transport"]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let publish = nodes["nodes"].as_object().unwrap().values().next().unwrap()["transport"]["publish_address"].clone();
    assert_eq!(publish, format!("127.0.0.1:{}", node.port + 100), "the transport port follows the HTTP port");
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

#[test]
fn a_failed_start_prints_the_real_cause() {
    let node = OwnNode { run_dir: tempfile::tempdir().unwrap(), port: free_port() };
    copy_classpath(node.run_dir.path());
    // a file where the node's data directory must be: OpenSearch itself refuses to start
    std::fs::create_dir_all(node.run_dir.path().join("opensearch/node_1")).unwrap();
    std::fs::write(node.run_dir.path().join("opensearch/node_1/data"), b"not a directory").unwrap();
    let out = node.output(&["start"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("cause: ") && stderr.contains("Not a directory"), "the cause is shown:\n{stderr}");
    assert!(stderr.contains("OpenSearch exited during startup"), "{stderr}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", node.port)).is_err(), "nothing left listening");
}
