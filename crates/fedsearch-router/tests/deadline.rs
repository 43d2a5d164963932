//! A hanging source and the caller's time: the request's `timeout` field and the gRPC deadline
//! give the same budget, each keeping time for the answer to travel back (issue 15), and either
//! way the answer carries the other sources' hits and a TIMEOUT status for the hanging one.
//!
//! Nothing here measures wall-clock time: the hanging source never answers, so an answer at all
//! shows the router stopped waiting on its own, and the TIMEOUT status's `latency_ms` is the
//! budget the router computed for the sources.

mod common;

use std::time::Duration;

use common::*;
use fedsearch_adapter_kit::testing::{Behaviour, Script, ScriptedAdapter, make_hits};
use fedsearch_proto::{api::SearchResponse, types::SourceState};

async fn search_with_a_hanging_source(
    request_timeout: Option<Duration>,
    grpc_deadline: Option<Duration>,
) -> SearchResponse {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("fast", Script::answer(make_hits("fast", 3), Duration::ZERO)),
            ("stuck", Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Hang }),
        ]),
    );
    let ra = start_adapter(a).await;
    // Source timeouts and the configured limits are far longer than the caller's time: only the
    // caller's time can end this search.
    let router = start_router(&router_yaml(
        &[("fast", &ra.url(), "timeout: 30s"), ("stuck", &ra.url(), "timeout: 30s")],
        "limits: { default_timeout: 30s, max_timeout: 30s }",
    ))
    .await;
    let mut q = query("q");
    q.timeout = request_timeout.map(|t| prost_types::Duration::try_from(t).unwrap());
    let mut req = authed(q, &token("alice", &[]));
    if let Some(d) = grpc_deadline {
        req.set_timeout(d);
    }
    client(&router).await.search(req).await.expect("an answer before the caller's time, not an error").into_inner()
}

/// Checks the answer and returns the TIMEOUT status's `latency_ms`: the time the router gave
/// the sources.
fn check(resp: &SearchResponse) -> u64 {
    let status = |name: &str| resp.sources.iter().find(|s| s.source == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(status("fast").state(), SourceState::Ok);
    assert_eq!(status("stuck").state(), SourceState::Timeout);
    assert_eq!(status("stuck").code, "DEADLINE_EXCEEDED");
    assert_eq!(resp.hits.len(), 3, "the answering source's hits are fused");
    assert!(resp.hits.iter().all(|h| h.source == "fast"));
    status("stuck").latency_ms
}

// 2 s asked: the answer leaves at 1.95 s (a twentieth, at most 50 ms, kept for it to travel
// back), and the sources are waited for until 1.755 s (a tenth of that kept for fusing and packing).
const SOURCES_MS: u64 = 1_755;

#[tokio::test]
async fn the_request_timeout_field_keeps_time_for_the_answer_like_a_grpc_deadline() {
    let resp = search_with_a_hanging_source(Some(Duration::from_secs(2)), None).await;
    assert_eq!(check(&resp), SOURCES_MS);
}

#[tokio::test]
async fn a_grpc_deadline_gives_the_same_budget() {
    let resp = search_with_a_hanging_source(None, Some(Duration::from_secs(2))).await;
    // `grpc-timeout` travels in whole units (tonic may round it down): the router sees about 2 s.
    let ms = check(&resp);
    assert!((SOURCES_MS - 100..=SOURCES_MS).contains(&ms), "{ms}");
}

#[tokio::test]
async fn with_both_the_shorter_counts() {
    let resp = search_with_a_hanging_source(Some(Duration::from_secs(2)), Some(Duration::from_secs(20))).await;
    assert_eq!(check(&resp), SOURCES_MS);
}
