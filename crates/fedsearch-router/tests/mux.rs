//! Long-lived multiplexed adapter streams (issue 15): many searches share one `Search` stream
//! per connection, each gets its own answer, a cancelled one does not disturb the others, a
//! broken stream is reopened and deadlines still end a sub-query, and each sub-query's work at
//! the adapter is traced in its own search's trace; with `streams: 0` each sub-query has a
//! stream of its own.
//!
//! No wall-clock assertions: every check is on statuses, hits and what the adapter saw.

mod common;

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use common::*;
use fedsearch_adapter_kit::{Adapter, AdapterError, HitSink, testing::Gate};
use fedsearch_proto::{
    adapter::{DescribeResponse, FetchRequest, FetchResponse, SourceDescription, SubQuery},
    types::{SourceHit, SourceState},
};
use tokio::sync::Notify;

/// Answers every sub-query with one hit titled by the sub-query's text, so each search can
/// tell its own answer; "hang" never answers, "wait" answers once released.
#[derive(Clone, Default)]
struct Echo {
    gate: Option<Arc<Gate>>,
    ids: Arc<Mutex<Vec<String>>>,
    /// The trace id the adapter's work for each sub-query ran in, by the sub-query's text.
    traces: Arc<Mutex<HashMap<String, String>>>,
    started: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
    release: Arc<Notify>,
}

struct Cancelled(Arc<AtomicUsize>, bool);

impl Drop for Cancelled {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Adapter for Echo {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "echo".into(),
            sources: vec![SourceDescription { name: "echo".into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        self.ids.lock().unwrap().push(query.id.clone());
        let trace = fedsearch_core::propagation::current_trace_id();
        self.traces.lock().unwrap().insert(query.text.clone(), trace);
        let mut guard = Cancelled(self.cancelled.clone(), false);
        let released = self.release.notified();
        self.started.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            gate.arrive_and_wait().await;
        }
        match query.text.as_str() {
            "hang" => std::future::pending::<()>().await,
            "wait" => released.await,
            _ => {}
        }
        let hit = SourceHit { local_id: query.text.clone(), title: query.text.clone(), rank: 1, ..Default::default() };
        sink.send(vec![hit]).await;
        guard.1 = true;
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
}

fn one_stream(url: &str, timeout: &str) -> String {
    router_yaml(
        &[("echo", url, &format!("streams: 1, timeout: {timeout}"))],
        "limits: { default_timeout: 30s, max_timeout: 30s }",
    )
}

async fn search(router: &Running, text: &str) -> fedsearch_proto::api::SearchResponse {
    search_as(router, text, "alice").await
}

async fn search_as(router: &Running, text: &str, user: &str) -> fedsearch_proto::api::SearchResponse {
    client(router).await.search(authed(query(text), &token(user, &[]))).await.expect("an answer").into_inner()
}

/// An adapter on its own runtime, so that killing it drops its connections as a dying
/// process would (an in-process graceful stop keeps a long-lived stream open).
struct Killable {
    addr: std::net::SocketAddr,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Killable {
    fn start(adapter: Echo, addr: std::net::SocketAddr) -> Self {
        let listener = std::net::TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (kill, killed) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let config = fedsearch_adapter_kit::ServerConfig::loopback(addr);
                tokio::select! {
                    _ = fedsearch_adapter_kit::serve_adapter(adapter, listener, &config, std::future::pending()) => {}
                    _ = killed => {}
                }
            });
            rt.shutdown_background();
        });
        Self { addr, kill: Some(kill), thread: Some(thread) }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn kill(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Killable {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test]
async fn many_concurrent_searches_on_one_stream_each_get_their_own_answer() {
    const N: usize = 40;
    let echo = Echo { gate: Some(Gate::new(N)), ..Default::default() };
    let ids = echo.ids.clone();
    let adapter = start_adapter(echo).await;
    let router = Arc::new(start_router(&one_stream(&adapter.url(), "30s")).await);
    let mut searches = tokio::task::JoinSet::new();
    for i in 0..N {
        let router = router.clone();
        // The gate holds every sub-query until all N are in flight at once on the stream.
        // Each its own user: a user may have only so many searches in flight.
        searches.spawn(async move { (i, search_as(&router, &format!("question{i}"), &format!("user{i}")).await) });
    }
    while let Some(done) = searches.join_next().await {
        let (i, resp) = done.unwrap();
        assert_eq!(resp.sources[0].state(), SourceState::Ok, "{:?}", resp.sources);
        let titles: Vec<_> = resp.hits.iter().map(|h| h.title.as_str()).collect();
        assert_eq!(titles, vec![format!("question{i}")], "search {i} got another search's answer");
    }
    // One stream: the ids are the pool's, unique over the stream (a stream per sub-query would
    // have sent id "1" each time).
    let ids = ids.lock().unwrap().clone();
    assert_eq!(ids.len(), N);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), N, "{ids:?}");
}

#[tokio::test]
async fn concurrent_searches_on_one_stream_are_traced_at_the_adapter_in_their_own_traces() {
    let echo = Echo { gate: Some(Gate::new(2)), ..Default::default() };
    let (ids, traces) = (echo.ids.clone(), echo.traces.clone());
    let adapter = start_adapter(echo).await;
    let router = start_router(&one_stream(&adapter.url(), "30s")).await;
    // The gate holds each sub-query until both are in flight on the one stream.
    let (first, second) = tokio::join!(search_as(&router, "first", "user1"), search_as(&router, "second", "user2"));
    assert_eq!(ids.lock().unwrap().iter().collect::<HashSet<_>>().len(), 2, "two sub-queries on one stream");
    assert_ne!(first.trace_id, second.trace_id);
    let traces = traces.lock().unwrap().clone();
    for (text, resp) in [("first", &first), ("second", &second)] {
        assert_eq!(resp.sources[0].state(), SourceState::Ok, "{:?}", resp.sources);
        assert_eq!(resp.trace_id.len(), 32);
        assert_eq!(traces.get(text), Some(&resp.trace_id), "the {text} search's sub-query left its trace: {traces:?}");
    }
}

/// `streams: 0` (no longer the default): a stream per sub-query, each traced in its search.
#[tokio::test]
async fn with_streams_0_each_sub_query_has_a_stream_of_its_own_in_its_own_trace() {
    let echo = Echo { gate: Some(Gate::new(2)), ..Default::default() };
    let (ids, traces) = (echo.ids.clone(), echo.traces.clone());
    let adapter = start_adapter(echo).await;
    let yaml = router_yaml(
        &[("echo", &adapter.url(), "streams: 0, timeout: 30s")],
        "limits: { default_timeout: 30s, max_timeout: 30s }",
    );
    let router = start_router(&yaml).await;
    let (first, second) = tokio::join!(search_as(&router, "first", "user1"), search_as(&router, "second", "user2"));
    // Each sub-query is the only one on its stream: its id is "1" there.
    assert_eq!(*ids.lock().unwrap(), ["1", "1"]);
    let traces = traces.lock().unwrap().clone();
    for (text, resp) in [("first", &first), ("second", &second)] {
        assert_eq!(resp.sources[0].state(), SourceState::Ok, "{:?}", resp.sources);
        assert_eq!(resp.hits[0].title, text);
        assert_eq!(traces.get(text), Some(&resp.trace_id), "the {text} search's sub-query left its trace: {traces:?}");
    }
}

#[tokio::test]
async fn a_cancelled_search_is_cancelled_on_the_stream_and_the_others_go_on() {
    let echo = Echo::default();
    let (started, cancelled, release) = (echo.started.clone(), echo.cancelled.clone(), echo.release.clone());
    let adapter = start_adapter(echo).await;
    let router = Arc::new(start_router(&one_stream(&adapter.url(), "30s")).await);
    let waiting = {
        let router = router.clone();
        tokio::spawn(async move { search(&router, "wait").await })
    };
    assert!(eventually(|| started.load(Ordering::SeqCst) == 1).await);
    let hanging = {
        let router = router.clone();
        tokio::spawn(async move { search(&router, "hang").await })
    };
    assert!(eventually(|| started.load(Ordering::SeqCst) == 2).await);
    // The caller of the hanging search goes away: the router sends CancelSubQuery for it.
    hanging.abort();
    assert!(eventually(|| cancelled.load(Ordering::SeqCst) == 1).await, "the adapter saw no cancellation");
    release.notify_waiters();
    let resp = waiting.await.unwrap();
    assert_eq!(resp.sources[0].state(), SourceState::Ok, "{:?}", resp.sources);
    assert_eq!(resp.hits[0].title, "wait");
    // The stream is still the same and usable.
    assert_eq!(search(&router, "after").await.hits[0].title, "after");
    assert_eq!(cancelled.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_sub_query_past_its_deadline_times_out_and_is_cancelled_on_the_stream() {
    let echo = Echo::default();
    let cancelled = echo.cancelled.clone();
    let adapter = start_adapter(echo).await;
    let router = start_router(&one_stream(&adapter.url(), "300ms")).await;
    let resp = search(&router, "hang").await;
    assert_eq!(resp.sources[0].state(), SourceState::Timeout, "{:?}", resp.sources);
    assert_eq!(resp.sources[0].code, "DEADLINE_EXCEEDED");
    assert!(eventually(|| cancelled.load(Ordering::SeqCst) == 1).await, "the adapter saw no cancellation");
    assert_eq!(search(&router, "next").await.hits[0].title, "next", "the stream outlives a timed-out sub-query");
}

#[tokio::test]
async fn a_caller_deadline_ends_the_search_with_a_timeout_status() {
    let adapter = start_adapter(Echo::default()).await;
    let router = start_router(&one_stream(&adapter.url(), "30s")).await;
    let mut req = authed(query("hang"), &token("alice", &[]));
    req.set_timeout(Duration::from_secs(2));
    let resp = client(&router).await.search(req).await.expect("an answer before the deadline").into_inner();
    assert_eq!(resp.sources[0].state(), SourceState::Timeout, "{:?}", resp.sources);
}

#[tokio::test]
async fn a_killed_adapter_fails_its_sub_queries_as_unavailable_and_its_stream_is_reopened() {
    let echo = Echo::default();
    let started = echo.started.clone();
    let mut adapter = Killable::start(echo.clone(), "127.0.0.1:0".parse().unwrap());
    let addr = adapter.addr;
    let router = Arc::new(start_router(&one_stream(&adapter.url(), "30s")).await);
    assert_eq!(search(&router, "first").await.hits[0].title, "first");
    let in_flight = {
        let router = router.clone();
        tokio::spawn(async move { search(&router, "hang").await })
    };
    assert!(eventually(|| started.load(Ordering::SeqCst) == 2).await);
    adapter.kill();
    let resp = in_flight.await.unwrap();
    assert_eq!(resp.sources[0].state(), SourceState::Unavailable, "{:?}", resp.sources);
    assert_eq!(resp.sources[0].code, "UNAVAILABLE");
    // The adapter is back on the same address: the next search opens a new stream.
    let _back = Killable::start(echo, addr);
    let mut answered = false;
    for i in 0..50 {
        let resp = search(&router, &format!("again{i}")).await;
        if resp.sources[0].state() == SourceState::Ok {
            assert_eq!(resp.hits[0].title, format!("again{i}"));
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered, "the stream was not reopened");
}

#[tokio::test]
async fn sub_queries_reach_every_replica_and_a_killed_one_costs_no_failed_sub_query() {
    let (one, two) = (Echo::default(), Echo::default());
    let (on_first, on_second) = (one.started.clone(), two.started.clone());
    let mut first = Killable::start(one, "127.0.0.1:0".parse().unwrap());
    let port = first.addr.port();
    let _second = Killable::start(two, std::net::SocketAddr::from(([127, 0, 0, 2], port)));
    let replicas = format!("http://127.0.0.1:{port},http://127.0.0.2:{port}");
    let router = start_router(&router_yaml(
        &[("echo", &replicas, "streams: 2, timeout: 30s")],
        "limits: { default_timeout: 30s, max_timeout: 30s }",
    ))
    .await;
    for i in 0..10 {
        let resp = search(&router, &format!("before{i}")).await;
        assert_eq!(resp.sources[0].state(), SourceState::Ok, "{:?}", resp.sources);
    }
    let (a, b) = (on_first.load(Ordering::SeqCst), on_second.load(Ordering::SeqCst));
    assert!(a > 0 && b > 0, "both replicas got sub-queries: {a} and {b}");
    // The first dies; before the health checks notice, sub-queries sent to it fail and are
    // retried on the second.
    first.kill();
    for i in 0..20 {
        let resp = search(&router, &format!("after{i}")).await;
        assert_eq!(resp.sources[0].state(), SourceState::Ok, "search {i} after the kill: {:?}", resp.sources);
        assert_eq!(resp.hits[0].title, format!("after{i}"));
    }
    assert_eq!(on_second.load(Ordering::SeqCst), b + 20, "the second replica answered every search after the kill");
}
