//! Benchmark tools for fedsearch: the load generator and the scripted adapter against a real
//! router, fusion service and adapters on loopback ports (in-process, and as the real binaries).

use std::{
    net::SocketAddr,
    process::{Command, Stdio},
    sync::Arc,
    time::Duration,
};

use clap::Parser;
use fedsearch_bench::{
    health,
    load::{self, LoadgenArgs, Pool},
    scripted::ScriptedArgs,
};
use tokio::sync::oneshot;

const SECRET: &str = "bench-test-secret-0123456789abcdef";

/// Stops a server started here when dropped.
struct Running {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl Running {
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn listener() -> (tokio::net::TcpListener, SocketAddr, oneshot::Sender<()>, oneshot::Receiver<()>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = oneshot::channel();
    (l, addr, tx, rx)
}

async fn start_scripted(source: &str, latency_ms: u64) -> Running {
    let args = ScriptedArgs::try_parse_from([
        "scripted-adapter",
        "--listen",
        "127.0.0.1:0",
        "--source",
        source,
        "--latency-ms",
        &latency_ms.to_string(),
        "--hits",
        "10",
    ])
    .unwrap();
    let (adapter, config) = args.build().unwrap();
    let (l, addr, tx, rx) = listener().await;
    tokio::spawn(async move {
        let _ = fedsearch_adapter_kit::serve_adapter(adapter, l, &config, async {
            let _ = rx.await;
        })
        .await;
    });
    Running { addr, _stop: tx }
}

async fn start_fusion() -> Running {
    let config: fedsearch_fusion::FusionConfig =
        fedsearch_core::config::from_yaml_str("server: { listen: \"127.0.0.1:0\", shutdown_grace: 1s }").unwrap();
    let (l, addr, tx, rx) = listener().await;
    tokio::spawn(async move {
        let _ = fedsearch_fusion::serve(l, &config, async {
            let _ = rx.await;
        })
        .await;
    });
    Running { addr, _stop: tx }
}

async fn start_router(sources: &[(&str, &Running)], fusion: &Running) -> Running {
    let mut yaml = format!(
        "server: {{ listen: \"127.0.0.1:0\", shutdown_grace: 1s }}\nauth: {{ hs256_secret: \"{SECRET}\" }}\n\
         fusion: {{ endpoint: \"{}\", timeout: 10s }}\nlimits: {{ max_in_flight: 4096, default_timeout: 10s }}\nsources:\n",
        fusion.url()
    );
    for (name, adapter) in sources {
        yaml.push_str(&format!(
            "  - {{ name: {name}, adapter: \"{}\", description: \"{name} docs\", timeout: 10s }}\n",
            adapter.url()
        ));
    }
    let config: fedsearch_router::RouterConfig = fedsearch_core::config::from_yaml_str(&yaml).unwrap();
    let (l, addr, tx, rx) = listener().await;
    tokio::spawn(async move {
        let _ = fedsearch_router::serve(config, l, async {
            let _ = rx.await;
        })
        .await;
    });
    Running { addr, _stop: tx }
}

/// Three scripted sources (10, 20, 30 ms), fusion and the router, as `make bench` runs them.
struct Stack {
    router: Running,
    _parts: Vec<Running>,
}

async fn stack() -> Stack {
    let fusion = start_fusion().await;
    let a = start_scripted("alpha", 10).await;
    let b = start_scripted("beta", 20).await;
    let c = start_scripted("gamma", 30).await;
    let router = start_router(&[("alpha", &a), ("beta", &b), ("gamma", &c)], &fusion).await;
    health::wait_healthy(&router.url().parse().unwrap(), Duration::from_secs(10)).await.unwrap();
    Stack { router, _parts: vec![fusion, a, b, c] }
}

/// Loadgen flags for `router`; `extra` is split on whitespace.
fn args(router: &Running, extra: &str) -> LoadgenArgs {
    let url = router.url();
    let base = ["fedsearch-loadgen", "--target", url.as_str(), "--secret", SECRET];
    LoadgenArgs::try_parse_from(base.into_iter().chain(extra.split_whitespace())).unwrap()
}

async fn drive(args: &LoadgenArgs) -> fedsearch_bench::report::Report {
    let spec = args.spec().unwrap();
    let tokens = args.tokens(&spec).unwrap();
    let pool = Pool::connect(&args.target.parse().unwrap(), args.channels, &tokens).await.unwrap();
    load::run(Arc::new(pool), spec).await
}

#[tokio::test]
async fn open_loop_sends_at_the_rate_and_overhead_is_latency_minus_the_slowest_source() {
    let s = stack().await;
    // A rate any machine keeps up with, even at load average 10: this checks the accounting,
    // not capacity (that is `make bench`'s job).
    let a = args(&s.router, "--rate 20 --duration 1s --warmup 200ms --slowest-source-ms 30");
    let r = drive(&a).await;
    assert_eq!(r.sent, 20, "{r:?}");
    assert_eq!(r.ok, 20, "{r:?}");
    assert_eq!(r.error_total, 0, "{r:?}");
    assert_eq!(r.partial, 0, "every source answers OK: {r:?}");
    assert_eq!(r.fusion_fallback, 0, "the fusion service fused every answer: {r:?}");
    // Never above the rate; how far below depends on the machine, so only "some" is asserted.
    assert!(r.achieved_qps > 0.0 && r.achieved_qps <= 20.5, "{}", r.achieved_qps);
    let (p50, o50) = (r.latency_ms.p50.unwrap(), r.overhead_ms.p50.unwrap());
    assert!(p50 >= 30.0, "no answer can beat the 30 ms source: {p50}");
    // Both come from histograms of 3 significant digits: on a busy machine (p50 in the
    // hundreds of ms) a bucket is wider than 0.1 ms.
    let tolerance = 0.1f64.max(p50 * 2e-3);
    assert!((p50 - 30.0 - o50).abs() < tolerance, "overhead = latency - 30 ms: {p50} vs {o50}");
    assert!(r.router_reported_slowest_source_ms.p50.unwrap() >= 30.0);
    let row = r.markdown_row();
    assert!(row.starts_with("| open 20 q/s | open | 20 q/s | 20 | 20 | 0 |"), "{row}");
}

#[tokio::test]
async fn closed_loop_runs_n_workers_back_to_back_and_stops_at_the_duration() {
    let s = stack().await;
    let a = args(&s.router, "--concurrency 4 --duration 1s --warmup 0s --slowest-source-ms 30");
    let r = drive(&a).await;
    // 4 workers, each answer takes at least 30 ms: at most 4 x 1 s / 30 ms (+1 each to finish),
    // so a run that went on past its duration would show more; each worker answers at least once.
    assert!(r.ok >= 4 && r.ok <= 4 * 34, "{r:?}");
    assert_eq!(r.error_total, 0, "{r:?}");
    assert_eq!(r.run.concurrency, Some(4));
}

#[tokio::test]
async fn max_requests_bounds_a_run() {
    let s = stack().await;
    let a = args(&s.router, "--concurrency 8 --duration 10s --warmup 0s --max-requests 20");
    let r = drive(&a).await;
    assert_eq!(r.sent, 20, "a 10 s run of 8 workers stops at 20 requests: {r:?}");
}

#[tokio::test]
async fn a_token_signed_with_another_secret_is_counted_as_unauthenticated() {
    let s = stack().await;
    let mut a = args(&s.router, "--rate 50 --duration 200ms --warmup 0s");
    a.secret = Some("a-different-secret-0123456789abcdef".into());
    let r = drive(&a).await;
    assert_eq!(r.ok, 0);
    assert_eq!(r.errors.get("UNAUTHENTICATED"), Some(&10), "{r:?}");
    assert_eq!(r.latency_ms.p50, None);
}

#[tokio::test]
async fn wait_healthy_fails_with_a_clear_message_when_nothing_listens() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let uri: http::Uri = format!("http://127.0.0.1:{port}").parse().unwrap();
    let err = health::wait_healthy(&uri, Duration::from_millis(300)).await.unwrap_err().to_string();
    assert!(err.contains("did not become healthy") && err.contains("cannot connect"), "{err}");
}

// --- the real binaries ---

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Kills the child (SIGKILL) if a test fails before stopping it.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_binaries_refuse_non_loopback_addresses_with_exit_code_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_scripted-adapter"))
        .args(["--listen", "0.0.0.0:50999", "--source", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not loopback"));
    let out = Command::new(env!("CARGO_BIN_EXE_fedsearch-loadgen"))
        .args(["--target", "http://10.1.2.3:50051", "--rate", "1"])
        .env("FEDSEARCH_BENCH_SECRET", SECRET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not loopback"));
}

#[tokio::test]
async fn the_scripted_adapter_binary_serves_the_router_and_stops_on_sigterm() {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_scripted-adapter"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--source", "alpha", "--latency-ms", "5", "--hits", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Child(child);
    let adapter_url = format!("http://127.0.0.1:{port}");
    // The loadgen binary's --wait-healthy, as scripts/bench.sh uses it.
    let wait = tokio::process::Command::new(env!("CARGO_BIN_EXE_fedsearch-loadgen"))
        .args(["--target", &adapter_url, "--wait-healthy", "10s"])
        .output()
        .await
        .unwrap();
    assert!(wait.status.success(), "{}", String::from_utf8_lossy(&wait.stderr));

    let fusion = start_fusion().await;
    let adapter = Running { addr: format!("127.0.0.1:{port}").parse().unwrap(), _stop: oneshot::channel().0 };
    let router = start_router(&[("alpha", &adapter)], &fusion).await;
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_fedsearch-loadgen"))
        .args(["--target", &router.url(), "--rate", "20", "--duration", "500ms", "--warmup", "0s", "--json"])
        .args(["--slowest-source-ms", "5"])
        .env("FEDSEARCH_BENCH_SECRET", SECRET)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ok"], 10, "{json}");
    assert_eq!(json["partial"], 0, "{json}");
    assert!(json["latency_ms"]["p50"].as_f64().unwrap() >= 5.0, "{json}");

    let killed = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let mut exited = None;
    for _ in 0..100 {
        if let Some(status) = child.0.try_wait().unwrap() {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = exited.expect("scripted-adapter exits within 5 s of SIGTERM");
    assert!(status.success(), "{status:?}");
}
