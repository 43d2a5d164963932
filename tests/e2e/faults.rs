//! Faults and abuse against the real processes: kill -9 and restart each adapter and the fusion
//! service under load, SIGSTOP an adapter and the fusion service, stop and start a DokuWiki, a
//! user trying to switch sources off for everyone, and overload. Every assertion is about
//! behaviour (statuses, which calls failed), never about how long something took.

use std::{
    collections::BTreeMap,
    process::{Child, Command},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use fedsearch_proto::{
    api::{SearchRequest, SearchResponse},
    types::SourceState,
};
use tonic::Code;

use crate::harness::{SECRET, Stack, StackOptions, free_port, need_env, root};

/// A token for `subject` with the claims of alice (a retail support agent).
fn token_like_alice(subject: &str) -> String {
    fedsearch_core::auth::mint_hs256(
        SECRET,
        subject,
        &["employee".to_string(), "support".to_string()],
        [("business_lines".to_string(), "retail".to_string())].into(),
        Duration::from_secs(600),
    )
    .unwrap()
}

fn request(query: &str, subject: &str, deadline: Duration) -> tonic::Request<SearchRequest> {
    let mut r = tonic::Request::new(SearchRequest { query: query.into(), ..Default::default() });
    r.metadata_mut().insert("authorization", format!("Bearer {}", token_like_alice(subject)).parse().unwrap());
    r.set_timeout(deadline);
    r
}

fn states(resp: &SearchResponse) -> BTreeMap<String, SourceState> {
    resp.sources.iter().map(|s| (s.source.clone(), s.state())).collect()
}

/// Searches until `done(response)` holds (at most `tries` times, a little apart).
async fn until(stack: &Stack, tries: usize, done: impl Fn(&SearchResponse) -> bool) -> Option<SearchResponse> {
    let mut c = stack.client().await;
    for _ in 0..tries {
        if let Ok(r) = c.search(request("SO20261001 支付超时 退款", "alice", Duration::from_secs(5))).await {
            let r = r.into_inner();
            if done(&r) {
                return Some(r);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Searches from three users in a loop while running; counts calls that failed as calls.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
    errors: Arc<std::sync::Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    async fn start(stack: &Stack) -> Load {
        let stop = Arc::<AtomicBool>::default();
        let (ok, failed) = (Arc::<AtomicUsize>::default(), Arc::<AtomicUsize>::default());
        let errors = Arc::<std::sync::Mutex<Vec<String>>>::default();
        let mut tasks = Vec::new();
        for user in ["alice", "ann", "amy"] {
            let mut c = stack.client().await;
            let (stop, ok, failed, errors) = (Arc::clone(&stop), ok.clone(), failed.clone(), errors.clone());
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    match c.search(request("支付超时 退款政策", user, Duration::from_secs(5))).await {
                        Ok(_) => ok.fetch_add(1, Ordering::SeqCst),
                        Err(e) => {
                            errors.lock().unwrap().push(format!("{:?}: {}", e.code(), e.message()));
                            failed.fetch_add(1, Ordering::SeqCst)
                        }
                    };
                }
            }));
        }
        Load { stop, ok, failed, errors, tasks }
    }

    async fn finish(self) -> (usize, usize, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.tasks {
            let _ = t.await;
        }
        let errors = self.errors.lock().unwrap().clone();
        (self.ok.load(Ordering::SeqCst), self.failed.load(Ordering::SeqCst), errors)
    }
}

#[tokio::test]
async fn killing_and_restarting_each_adapter_and_fusion_under_load_fails_no_call() {
    let mut stack = Stack::start(StackOptions::default()).await;
    let load = Load::start(&stack).await;
    for (process, source) in [("es-adapter", "tickets"), ("sql-adapter", "orders"), ("wiki-adapter", "wiki")] {
        stack.proc(process).kill9();
        let down = until(&stack, 100, |r| {
            matches!(states(r).get(source), Some(SourceState::Unavailable | SourceState::CircuitOpen))
        })
        .await;
        assert!(down.is_some(), "{source} is reported unavailable while {process} is dead");
        let others_ok = down.unwrap().sources.iter().filter(|s| s.state() == SourceState::Ok).count();
        assert!(others_ok >= 1, "the other sources still answer");
        stack.proc(process).restart().await;
        let back = until(&stack, 600, |r| states(r).get(source) == Some(&SourceState::Ok)).await;
        assert!(back.is_some(), "{source} is used again once {process} is back\n{}", stack.logs());
    }
    stack.proc("fusion").kill9();
    let fallback = until(&stack, 100, |r| r.fusion.as_ref().is_some_and(|f| f.in_process_fallback)).await;
    assert!(fallback.is_some_and(|r| !r.hits.is_empty()), "fused in-process while fusion is dead");
    stack.proc("fusion").restart().await;
    let fused = until(&stack, 600, |r| r.fusion.as_ref().is_some_and(|f| !f.in_process_fallback)).await;
    assert!(fused.is_some(), "the fusion service is used again");
    let (ok, failed, errors) = load.finish().await;
    assert!(ok > 0);
    assert_eq!(failed, 0, "no call failed during the faults: {errors:?}");
}

#[tokio::test]
async fn a_stopped_adapter_is_a_timeout_and_a_stopped_fusion_service_a_fallback() {
    let mut stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;
    stack.proc("wiki-adapter").signal("STOP");
    let resp = c.search(request("退款政策", "alice", Duration::from_secs(3))).await;
    stack.proc("wiki-adapter").signal("CONT");
    let resp = resp.expect("a partial answer, not an error").into_inner();
    let wiki = resp.sources.iter().find(|s| s.source == "wiki").unwrap();
    assert_eq!(wiki.state(), SourceState::Timeout, "a hung adapter is a timeout: {wiki:?}");
    assert_eq!(states(&resp).get("kb"), Some(&SourceState::Ok));

    stack.proc("fusion").signal("STOP");
    let resp = c.search(request("退款政策", "alice", Duration::from_secs(3))).await;
    stack.proc("fusion").signal("CONT");
    let resp = resp.expect("an answer while fusion is stopped").into_inner();
    assert!(resp.fusion.as_ref().unwrap().in_process_fallback, "{:?}", resp.fusion);
    assert!(!resp.hits.is_empty());
}

#[tokio::test]
async fn a_user_trying_to_switch_sources_off_leaves_other_users_answers_untouched() {
    let stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;
    let baseline =
        states(&c.search(request("支付超时 退款", "alice", Duration::from_secs(5))).await.unwrap().into_inner());
    for _ in 0..10 {
        // Tiny timeouts: every source times out for mallory alone.
        let mut tiny = request("支付超时", "mallory", Duration::from_secs(5));
        tiny.get_mut().timeout = Some(prost_types::Duration { seconds: 0, nanos: 1 });
        assert!(c.search(tiny).await.is_ok());
        // A noncharacter the wiki's XML-RPC cannot carry: refused before any source.
        let err = c.search(request("退款\u{ffff}政策", "mallory", Duration::from_secs(5))).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
    }
    let after =
        states(&c.search(request("支付超时 退款", "alice", Duration::from_secs(5))).await.unwrap().into_inner());
    assert_eq!(after, baseline, "alice's sources answer as before mallory tried");
    assert!(after.values().all(|s| *s != SourceState::CircuitOpen), "{after:?}");
}

/// A DokuWiki of its own (`php -S` on the site `all.sh` built), so stopping it touches no other
/// test.
struct OwnWiki {
    port: u16,
    child: Option<Child>,
}

impl OwnWiki {
    fn start(port: u16) -> OwnWiki {
        let secrets = std::path::PathBuf::from(need_env("DOKUWIKI_SECRETS"));
        let site = secrets.parent().unwrap().join("site");
        let child = Command::new("php")
            .env("PHP_CLI_SERVER_WORKERS", "2")
            .args(["-d", "display_errors=0", "-S", &format!("127.0.0.1:{port}"), "-t"])
            .arg(&site)
            .arg(root().join("scripts/backends/dokuwiki/router.php"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("php -S");
        OwnWiki { port, child: Some(child) }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // The workers are the server's children; end them with it.
            let _ = Command::new("pkill").args(["-P", &c.id().to_string()]).status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnWiki {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test]
async fn a_stopped_and_restarted_dokuwiki_costs_no_failed_call() {
    let port = free_port();
    let mut wiki = OwnWiki::start(port);
    let stack =
        Stack::start(StackOptions { wiki_url: Some(format!("http://127.0.0.1:{port}")), ..Default::default() }).await;
    let up = until(&stack, 300, |r| states(r).get("wiki") == Some(&SourceState::Ok)).await;
    assert!(up.is_some(), "the wiki answers through its own DokuWiki\n{}", stack.logs());
    let load = Load::start(&stack).await;
    wiki.stop();
    let down = until(&stack, 100, |r| {
        matches!(states(r).get("wiki"), Some(SourceState::Unavailable | SourceState::Error | SourceState::CircuitOpen))
    })
    .await;
    assert!(down.is_some_and(|r| states(&r).get("kb") == Some(&SourceState::Ok)), "the wiki is down, kb is not");
    wiki = OwnWiki::start(wiki.port);
    let back = until(&stack, 600, |r| states(r).get("wiki") == Some(&SourceState::Ok)).await;
    assert!(back.is_some(), "the wiki answers again once DokuWiki is back\n{}", stack.logs());
    let (ok, failed, errors) = load.finish().await;
    assert!(ok > 0);
    assert_eq!(failed, 0, "{errors:?}");
    drop(wiki);
}

#[tokio::test]
async fn overload_is_refused_early_and_every_answer_arrives_inside_its_deadline() {
    // A small fixed limit stands for the capacity this machine would have under real load.
    let env =
        vec![("FEDSEARCH_LIMITS__MAX_IN_FLIGHT", "3".to_string()), ("FEDSEARCH_LIMITS__ADAPTIVE", "false".into())];
    let stack = Stack::start(StackOptions { router_env: env, ..Default::default() }).await;
    let mut calls = Vec::new();
    for i in 0..40 {
        let mut c = stack.client().await;
        calls.push(tokio::spawn(async move {
            c.search(request("支付超时 退款政策", &format!("user{i}"), Duration::from_secs(5))).await.map(|_| ())
        }));
    }
    let mut by_code: BTreeMap<String, usize> = BTreeMap::new();
    for call in calls {
        let code = match call.await.unwrap() {
            Ok(()) => "OK".to_string(),
            Err(e) => {
                if e.code() == Code::ResourceExhausted {
                    assert!(e.metadata().get("retry-after-ms").is_some(), "a retry hint");
                }
                format!("{:?}", e.code())
            }
        };
        *by_code.entry(code).or_default() += 1;
    }
    assert!(by_code.get("ResourceExhausted").copied().unwrap_or(0) > 0, "{by_code:?}");
    assert!(by_code.get("OK").copied().unwrap_or(0) > 0, "{by_code:?}");
    // Any answer later than its deadline would have arrived as DEADLINE_EXCEEDED or CANCELLED.
    assert_eq!(by_code.len(), 2, "only answers on time and early refusals: {by_code:?}");
}
