//! The wiki stopped → UNAVAILABLE; started again → answers, without restarting the adapter.
//! Uses ITS OWN DokuWiki instance (own run dir under a temp dir, own port) so the shared one
//! other tests use is never disturbed.

use std::{path::Path, process::Command};

use fedsearch_proto::types::SourceState;

use crate::common::*;

fn script(run_dir: &Path, port: u16, args: &[&str]) {
    let out = Command::new(repo_root().join("scripts/backends/dokuwiki.sh"))
        .args(args)
        .env("FEDSEARCH_RUN_DIR", run_dir)
        .env("DOKUWIKI_PORT", port.to_string())
        .output()
        .expect("scripts/backends/dokuwiki.sh runs");
    assert!(
        out.status.success(),
        "dokuwiki.sh {args:?} failed (is DokuWiki installed? run scripts/backends/dokuwiki.sh install): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Stops and deletes the private instance even when the test fails.
struct Instance {
    run_dir: tempfile::TempDir,
    port: u16,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/backends/dokuwiki.sh"))
            .arg("stop")
            .env("FEDSEARCH_RUN_DIR", self.run_dir.path())
            .env("DOKUWIKI_PORT", self.port.to_string())
            .output();
    }
}

fn env_file(run_dir: &Path) -> std::collections::HashMap<String, String> {
    std::fs::read_to_string(run_dir.join("dokuwiki.env"))
        .expect("dokuwiki.env written by start")
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

#[tokio::test]
async fn wiki_stopped_is_unavailable_and_recovers_without_restart() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let instance = Instance { run_dir: tempfile::tempdir().unwrap(), port };
    script(instance.run_dir.path(), port, &["start"]);
    let env = env_file(instance.run_dir.path());
    let mut served = serve(dokuwiki_config(&env["DOKUWIKI_URL"], &env["DOKUWIKI_SECRETS"])).await;

    let (hits, done) = search(&mut served.client, "退货 拒收 手续费", "carol").await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert_eq!(hits.len(), 2);

    script(instance.run_dir.path(), port, &["stop", "--keep-data"]);
    let (hits, done) = search(&mut served.client, "退货 拒收 手续费", "carol").await;
    assert!(hits.is_empty());
    assert_eq!((done.state, done.code.as_str()), (SourceState::Unavailable as i32, "UNAVAILABLE"), "{done:?}");
    assert!(!done.message.contains("127.0.0.1") && !done.message.contains(&port.to_string()), "{}", done.message);
    let err = fetch(&mut served.client, "public:return_policy", user("carol")).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable);

    script(instance.run_dir.path(), port, &["start"]);
    let (hits, done) = search(&mut served.client, "退货 拒收 手续费", "carol").await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert_eq!(hits.len(), 2);
}
