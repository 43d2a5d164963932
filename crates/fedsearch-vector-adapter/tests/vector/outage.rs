//! The store stops: sub-queries and fetches end UNAVAILABLE with a safe message; after a
//! restart (data kept) the same adapter answers again. On a Chroma instance of its own
//! (scripts/backends/chroma.sh with its own port and data dir), so the shared one is untouched.

use std::process::Command;

use fedsearch_proto::types::SourceState;

use crate::{config, fetch, index, repo_root, search, serve, user};

struct Instance {
    port: u16,
    dir: tempfile::TempDir,
}

impl Instance {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(repo_root().join("scripts/backends/chroma.sh"))
            .args(args)
            .env("CHROMA_PORT", self.port.to_string())
            .env("CHROMA_DIR", self.dir.path().join("chroma"));
        cmd
    }

    fn run(&self, args: &[&str]) {
        let out = self.command(args).output().expect("run chroma.sh");
        assert!(out.status.success(), "chroma.sh {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.command(&["stop"]).output();
    }
}

/// A free port in 20000–32000 (below the ephemeral range).
fn free_port() -> u16 {
    let seed = std::process::id() as u64 ^ std::time::SystemTime::now().elapsed().map_or(7, |d| d.as_nanos() as u64);
    (0..2000u64)
        .map(|i| 20000 + ((seed.wrapping_mul(2654435761).wrapping_add(i * 7919)) % 12000) as u16)
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port")
}

#[tokio::test]
async fn store_down_is_unavailable_and_it_comes_back() {
    let inst = Instance { port: free_port(), dir: tempfile::tempdir().unwrap() };
    inst.run(&["start"]);
    let url = format!("http://127.0.0.1:{}", inst.port);
    let mut cfg = config(&url, "fedsearch-test-outage");
    cfg.sources[0].index.truncate(1); // the KB articles are enough here
    index(&cfg).await;
    let mut s = serve(&cfg).await;
    let alice = user("alice", &["employee", "support"]);
    let (hits, done) = search(&mut s.client, "payment timeout", alice.clone(), 3, None).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert!(!hits.is_empty());

    inst.run(&["stop", "--keep-data"]);
    let (hits, done) = search(&mut s.client, "payment timeout", alice.clone(), 3, None).await;
    assert_eq!(done.state, SourceState::Unavailable as i32, "{done:?}");
    assert_eq!(done.code, "UNAVAILABLE");
    assert!(hits.is_empty());
    assert!(!done.message.contains("127.0.0.1") && !done.message.contains(&inst.port.to_string()), "{}", done.message);
    let err = fetch(&mut s.client, "KB-101", alice.clone()).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);

    inst.run(&["start"]);
    let (hits, done) = search(&mut s.client, "payment timeout", alice.clone(), 3, None).await;
    assert_eq!(done.state, SourceState::Ok as i32, "after the restart: {done:?}");
    assert!(!hits.is_empty(), "the kept data answers again");
    assert!(fetch(&mut s.client, "KB-101", alice).await.is_ok());
}
