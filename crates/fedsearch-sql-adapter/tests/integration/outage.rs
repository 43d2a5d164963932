//! The database stops mid-run: sub-queries end UNAVAILABLE (within the acquire timeout, no
//! crash); after a restart the same adapter answers again. Each engine runs on its OWN instance
//! (own FEDSEARCH_RUN_DIR under a temp dir, own port) so the shared backends are not disturbed.

use std::{
    path::PathBuf,
    process::Command,
    time::{Duration, Instant},
};

use fedsearch_proto::types::SourceState;

use crate::common::{Harness, assert_no_leak, config_for, fetch, query, repo_root, search, serve};

/// A private backend instance; stopped (data removed) on drop.
struct Instance {
    script: PathBuf,
    run_dir: tempfile::TempDir,
    port_var: &'static str,
    port: u16,
}

impl Instance {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(&self.script)
            .args(args)
            .env("FEDSEARCH_RUN_DIR", self.run_dir.path())
            .env(self.port_var, self.port.to_string());
        cmd
    }

    fn run(&self, args: &[&str]) {
        let out = self.command(args).output().expect("run backend script");
        assert!(
            out.status.success(),
            "{} {args:?} failed: {}",
            self.script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn env_value(&self, file: &str, key: &str) -> String {
        let text = std::fs::read_to_string(self.run_dir.path().join(file)).expect("env file written by start");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} missing in {file}"))
            .to_string()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.command(&["stop"]).output();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn private_run_dir() -> tempfile::TempDir {
    // Short path (unix socket limits) that the database's OS user can enter.
    let dir = tempfile::Builder::new().prefix("fsq-").tempdir_in("/tmp").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

async fn start(script: &str, port_var: &'static str) -> Instance {
    let inst = Instance {
        script: repo_root().join(format!("scripts/backends/{script}.sh")),
        run_dir: private_run_dir(),
        port_var,
        port: free_port(),
    };
    in_blocking(inst, &["start"]).await
}

async fn in_blocking(inst: Instance, args: &'static [&'static str]) -> Instance {
    tokio::task::spawn_blocking(move || {
        inst.run(args);
        inst
    })
    .await
    .unwrap()
}

async fn answers(h: &mut Harness) -> bool {
    let (hits, done) = search(h, query("alice", "SO20261001")).await;
    done.state == SourceState::Ok as i32 && hits.len() == 1
}

async fn outage_and_recovery(script: &str, port_var: &'static str, env_file: &str, url_key: &str) {
    let inst = start(script, port_var).await;
    let url = inst.env_value(env_file, url_key);
    let mut cfg = config_for(&url);
    cfg.database.acquire_timeout = Duration::from_secs(1);
    let mut h = serve(cfg).await;
    assert!(answers(&mut h).await, "{script}: answers before the outage");

    let inst = in_blocking(inst, &["stop", "--keep-data"]).await;
    for _ in 0..3 {
        // UNAVAILABLE, not TIMEOUT: the sub-query did not wait out its deadline for the database.
        let (hits, done) = search(&mut h, query("alice", "SO20261001")).await;
        assert!(hits.is_empty());
        assert_eq!(done.state, SourceState::Unavailable as i32, "{script}: {done:?}");
        assert_eq!(done.code, "UNAVAILABLE", "{script}: {done:?}");
        assert_no_leak(&done.message);
    }
    let err = fetch(&mut h, "alice", "order:SO20261001").await.expect_err("fetch while down");
    assert_eq!(err.code(), tonic::Code::Unavailable, "{script}: {err:?}");

    let inst = in_blocking(inst, &["start"]).await;
    let restarted = Instant::now();
    let mut recovered = false;
    // Polls for up to 30 s: a restart on a loaded machine can take a while.
    for _ in 0..120 {
        if answers(&mut h).await {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(recovered, "{script}: the adapter did not answer again after the restart");
    eprintln!("{script} up again: answering {} ms after start returned", restarted.elapsed().as_millis());
    fetch(&mut h, "alice", "order:SO20261001").await.expect("fetch after recovery");
    drop(h);
    drop(inst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_postgres_unavailable_then_recovers() {
    outage_and_recovery("postgres", "PG_PORT", "postgres.env", "PG_RO_URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_mariadb_unavailable_then_recovers() {
    outage_and_recovery("mariadb", "MARIADB_PORT", "mariadb.env", "MARIADB_RO_URL").await;
}
