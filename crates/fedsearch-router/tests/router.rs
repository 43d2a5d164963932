//! The router's own logic, against in-process scripted adapters (test doubles are allowed for
//! the router's logic only; real adapters are tested against real backends elsewhere).

mod common;

use std::{pin::Pin, sync::atomic::Ordering, time::Duration};

use common::*;
use fedsearch_adapter_kit::{
    AdapterError,
    testing::{Behaviour, Gate, Script, ScriptedAdapter, make_hits},
};
use fedsearch_proto::{
    adapter::{
        DescribeRequest, DescribeResponse, FetchRequest, FetchResponse, HitBatch, ResultFrame, SearchFrame,
        result_frame,
        source_adapter_server::{SourceAdapter, SourceAdapterServer},
    },
    api::{
        GetDocumentRequest, ListSourcesRequest, SearchRequest, federated_search_client::FederatedSearchClient,
        search_event,
    },
    types::{Filters, FusionOptions, Secret, SourceState, TimeRange},
};
use tonic::{Code, Request, Response, Status, Streaming};

fn state_of(resp: &fedsearch_proto::api::SearchResponse, source: &str) -> SourceState {
    resp.sources.iter().find(|s| s.source == source).unwrap_or_else(|| panic!("no status for {source}")).state()
}

#[tokio::test]
async fn all_sub_queries_are_in_flight_before_any_answers() {
    // Each source waits at a gate until all three sub-queries have arrived: a router that
    // dispatched one after another would never open the gate and every source would time out.
    let gate = Gate::new(3);
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("one", Script::answer(make_hits("one", 3), Duration::ZERO)),
            ("two", Script::answer(make_hits("two", 3), Duration::ZERO)),
        ]),
    )
    .with_gate(gate.clone());
    let b = ScriptedAdapter::new("b", scripts(vec![("three", Script::answer(make_hits("three", 3), Duration::ZERO))]))
        .with_gate(gate);
    let (ra, rb) = (start_adapter(a.clone()).await, start_adapter(b.clone()).await);
    let router =
        start_router(&router_yaml(&[("one", &ra.url(), ""), ("two", &ra.url(), ""), ("three", &rb.url(), "")], ""))
            .await;
    let resp = client(&router)
        .await
        .search(authed(query("anything"), &token("alice", &["support"])))
        .await
        .unwrap()
        .into_inner();
    for s in ["one", "two", "three"] {
        assert_eq!(state_of(&resp, s), SourceState::Ok, "{s}: {:?}", resp.sources);
    }
    assert_eq!(resp.hits.len(), 9);
    assert!(!resp.trace_id.is_empty(), "a trace id is returned");
}

#[tokio::test]
async fn a_hanging_source_times_out_and_the_others_still_answer() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("fast", Script::answer(make_hits("fast", 4), Duration::from_millis(5))),
            ("slow", Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Hang }),
        ]),
    );
    let ra = start_adapter(a).await;
    let router =
        start_router(&router_yaml(&[("fast", &ra.url(), ""), ("slow", &ra.url(), "timeout: 300ms")], "")).await;
    let resp = client(&router).await.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "fast"), SourceState::Ok);
    assert_eq!(state_of(&resp, "slow"), SourceState::Timeout);
    assert_eq!(resp.hits.len(), 4);
    assert!(resp.hits.iter().all(|h| h.source == "fast"));
}

#[tokio::test]
async fn the_grpc_deadline_is_honoured_with_a_partial_answer() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("fast", Script::answer(make_hits("fast", 2), Duration::ZERO)),
            ("slow", Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Hang }),
        ]),
    );
    let ra = start_adapter(a).await;
    // Source timeouts are long; only the client's deadline can end the search in time.
    let router =
        start_router(&router_yaml(&[("fast", &ra.url(), "timeout: 5s"), ("slow", &ra.url(), "timeout: 5s")], "")).await;
    let mut req = authed(query("q"), &token("alice", &[]));
    // Long enough for a loaded machine: the router keeps a tenth (200 ms) to answer in.
    req.set_timeout(Duration::from_secs(2));
    let resp =
        client(&router).await.search(req).await.expect("an answer before the deadline, not an error").into_inner();
    assert_eq!(state_of(&resp, "fast"), SourceState::Ok);
    assert_eq!(state_of(&resp, "slow"), SourceState::Timeout);
}

#[tokio::test]
async fn request_timeout_is_capped_by_the_configured_maximum() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![("slow", Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Hang })]),
    );
    let ra = start_adapter(a).await;
    let router =
        start_router(&router_yaml(&[("slow", &ra.url(), "timeout: 30s")], "limits: { max_timeout: 300ms }")).await;
    let mut q = query("q");
    q.timeout = Some(prost_types::Duration { seconds: 60, nanos: 0 });
    let resp = client(&router).await.search(authed(q, &token("alice", &[]))).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "slow"), SourceState::Timeout);
}

#[tokio::test]
async fn failing_down_and_panicking_adapters_become_statuses() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("ok", Script::answer(make_hits("ok", 2), Duration::ZERO)),
            (
                "broken",
                Script {
                    hits: vec![],
                    latency: Duration::ZERO,
                    behaviour: Behaviour::Fail(AdapterError::Unavailable("database unreachable".into())),
                },
            ),
            (
                "bad",
                Script {
                    hits: vec![],
                    latency: Duration::ZERO,
                    behaviour: Behaviour::Fail(AdapterError::InvalidArgument(
                        "parameter `order_no` must match SO\\d{8}".into(),
                    )),
                },
            ),
            (
                "panics",
                Script {
                    hits: make_hits("panics", 3),
                    latency: Duration::ZERO,
                    behaviour: Behaviour::PanicAfterFirstBatch,
                },
            ),
        ]),
    );
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(
        &[
            ("ok", &ra.url(), ""),
            ("broken", &ra.url(), ""),
            ("bad", &ra.url(), ""),
            ("panics", &ra.url(), ""),
            ("down", "http://127.0.0.1:1", ""),
        ],
        "",
    ))
    .await;
    let resp = client(&router).await.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "ok"), SourceState::Ok);
    assert_eq!(state_of(&resp, "broken"), SourceState::Unavailable);
    let bad = resp.sources.iter().find(|s| s.source == "bad").unwrap();
    assert_eq!((bad.state(), bad.code.as_str()), (SourceState::Error, "INVALID_ARGUMENT"));
    assert!(bad.message.contains("order_no"), "{}", bad.message);
    let panics = resp.sources.iter().find(|s| s.source == "panics").unwrap();
    assert_eq!((panics.state(), panics.code.as_str()), (SourceState::Error, "INTERNAL"));
    assert_eq!(panics.hit_count, 1, "the batch that arrived before the crash is kept");
    let down = resp.sources.iter().find(|s| s.source == "down").unwrap();
    assert_eq!(down.state(), SourceState::Unavailable);
    assert!(!down.message.contains("127.0.0.1"), "no host in the message: {}", down.message);
    assert_eq!(resp.hits.iter().filter(|h| h.source == "ok").count(), 2);
}

/// An adapter whose stream breaks after one batch, like a process dying mid-answer.
struct BreaksMidStream;

#[tonic::async_trait]
impl SourceAdapter for BreaksMidStream {
    async fn describe(&self, _: Request<DescribeRequest>) -> Result<Response<DescribeResponse>, Status> {
        Ok(Response::new(DescribeResponse::default()))
    }
    type SearchStream = Pin<Box<dyn futures::Stream<Item = Result<ResultFrame, Status>> + Send>>;
    async fn search(&self, req: Request<Streaming<SearchFrame>>) -> Result<Response<Self::SearchStream>, Status> {
        let mut inbound = req.into_inner();
        let first = inbound.message().await?.and_then(|f| f.frame);
        let id = match first {
            Some(fedsearch_proto::adapter::search_frame::Frame::SubQuery(q)) => q.id,
            _ => String::new(),
        };
        let batch = ResultFrame {
            frame: Some(result_frame::Frame::Batch(HitBatch { sub_query_id: id, hits: make_hits("crashy", 2) })),
        };
        let s = futures::stream::iter(vec![Ok(batch), Err(Status::internal("boom"))]);
        Ok(Response::new(Box::pin(s)))
    }
    async fn fetch(&self, _: Request<FetchRequest>) -> Result<Response<FetchResponse>, Status> {
        Err(Status::unimplemented("no"))
    }
}

#[tokio::test]
async fn an_adapter_stream_that_breaks_mid_answer_keeps_what_arrived() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(SourceAdapterServer::new(BreaksMidStream))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let router = start_router(&router_yaml(&[("crashy", &format!("http://{addr}"), "")], "")).await;
    let resp = client(&router).await.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    let st = &resp.sources[0];
    assert_eq!(st.state(), SourceState::Error);
    assert_eq!(st.hit_count, 2);
    assert!(!st.message.contains("boom"), "adapter internals are not shown: {}", st.message);
    assert_eq!(resp.hits.len(), 2, "hits that arrived before the break are fused");
}

#[tokio::test]
async fn cancelling_the_client_call_cancels_the_sub_queries() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![("slow", Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Hang })]),
    );
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let router =
        start_router(&router_yaml(&[("slow", &ra.url(), "timeout: 30s")], "limits: { max_timeout: 30s }")).await;
    let mut c = client(&router).await;
    let mut q = query("q");
    q.timeout = Some(prost_types::Duration { seconds: 30, nanos: 0 });
    let call = tokio::spawn(async move { c.search(authed(q, &token("alice", &[]))).await });
    assert!(eventually(|| record.started.load(Ordering::SeqCst) == 1).await, "the sub-query started");
    call.abort();
    assert!(
        eventually(|| record.cancelled.load(Ordering::SeqCst) == 1).await,
        "the adapter saw its sub-query cancelled after the client went away"
    );
}

#[tokio::test]
async fn callers_without_a_valid_token_are_unauthenticated() {
    let ra = start_adapter(ScriptedAdapter::new(
        "a",
        scripts(vec![("s", Script::answer(make_hits("s", 1), Duration::ZERO))]),
    ))
    .await;
    let router = start_router(&router_yaml(&[("s", &ra.url(), "")], "")).await;
    let mut c = client(&router).await;
    let expired = fedsearch_core::auth::mint_claims(
        SECRET,
        &fedsearch_core::auth::Claims {
            sub: "a".into(),
            groups: vec![],
            attrs: Default::default(),
            exp: 1,
            iat: None,
            nbf: None,
            iss: None,
            aud: None,
        },
    )
    .unwrap();
    let wrong_key = fedsearch_core::auth::mint_hs256(
        "another-secret-another-secret-0123456",
        "a",
        &[],
        Default::default(),
        Duration::from_secs(60),
    )
    .unwrap();
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("not bearer", Some("Basic YWxpY2U6cHc=".into())),
        ("garbage", Some("Bearer not-a-jwt".into())),
        ("expired", Some(format!("Bearer {expired}"))),
        ("wrong key", Some(format!("Bearer {wrong_key}"))),
    ];
    for (name, header) in cases {
        let mut req = Request::new(query("q"));
        if let Some(h) = header {
            req.metadata_mut().insert("authorization", h.parse().unwrap());
        }
        let err = c.search(req).await.expect_err(name);
        assert_eq!(err.code(), Code::Unauthenticated, "{name}: {err:?}");
        let mut req = Request::new(ListSourcesRequest {});
        req.metadata_mut().insert("authorization", "Bearer x".parse().unwrap());
        assert_eq!(c.list_sources(req).await.unwrap_err().code(), Code::Unauthenticated);
    }
}

#[tokio::test]
async fn bad_requests_are_invalid_argument_naming_the_field() {
    let ra = start_adapter(ScriptedAdapter::new(
        "a",
        scripts(vec![("s", Script::answer(make_hits("s", 1), Duration::ZERO))]),
    ))
    .await;
    let router = start_router(&router_yaml(&[("s", &ra.url(), "")], "")).await;
    let mut c = client(&router).await;
    let t = token("alice", &[]);
    let bad_range = Filters {
        time_range: Some(TimeRange {
            from: Some(prost_types::Timestamp { seconds: 2000, nanos: 0 }),
            to: Some(prost_types::Timestamp { seconds: 1000, nanos: 0 }),
        }),
        ..Default::default()
    };
    let cases: Vec<(&str, SearchRequest)> = vec![
        ("query", query("   ")),
        ("query", query(&"x".repeat(1025))),
        ("top_k", SearchRequest { top_k: 51, ..query("q") }),
        ("unknown source", SearchRequest { sources: vec!["nope".into()], ..query("q") }),
        ("time_range", SearchRequest { filters: Some(bad_range), ..query("q") }),
        (
            "fusion.weights",
            SearchRequest {
                fusion: Some(FusionOptions { weights: [("s".to_string(), -1.0)].into(), ..Default::default() }),
                ..query("q")
            },
        ),
        (
            "fusion.weights",
            SearchRequest {
                fusion: Some(FusionOptions { weights: [("zzz".to_string(), 1.0)].into(), ..Default::default() }),
                ..query("q")
            },
        ),
        ("rrf_k", SearchRequest { fusion: Some(FusionOptions { rrf_k: Some(0), ..Default::default() }), ..query("q") }),
        ("timeout", SearchRequest { timeout: Some(prost_types::Duration { seconds: -1, nanos: 0 }), ..query("q") }),
        ("query", query("退款\u{ffff}政策")),
        ("query", query("refund\u{7}policy")),
    ];
    for (needle, req) in cases {
        let err = c.search(authed(req, &t)).await.expect_err(needle);
        assert_eq!(err.code(), Code::InvalidArgument, "{needle}: {err:?}");
        assert!(err.message().contains(needle.split(' ').next().unwrap()), "{needle}: {}", err.message());
    }
}

/// Sends raw bytes as a gRPC message, as a hostile or broken client would.
#[derive(Clone, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }
    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use bytes::Buf;
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

#[tokio::test]
async fn undecodable_requests_and_huge_echoes_are_the_callers_fault() {
    let ra = start_adapter(ScriptedAdapter::new(
        "a",
        scripts(vec![("s", Script::answer(make_hits("s", 1), Duration::ZERO))]),
    ))
    .await;
    let router = start_router(&router_yaml(&[("s", &ra.url(), "")], "")).await;
    let channel = tonic::transport::Endpoint::from_shared(router.url()).unwrap().connect().await.unwrap();
    let t = token("alice", &[]);
    // An invalid wire type, and field 1 (query) holding invalid UTF-8.
    for body in [vec![0xff, 0xff, 0xff], vec![0x0a, 0x02, 0xc3, 0x28]] {
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.unwrap();
        let path = http::uri::PathAndQuery::from_static("/fedsearch.v1.FederatedSearch/Search");
        let err = grpc.unary(authed(body.clone(), &t), path, RawCodec).await.expect_err("refused");
        assert_eq!(err.code(), Code::InvalidArgument, "{body:?}: {err:?}");
    }
    // A 10 kB source name is not echoed whole.
    let mut c = client(&router).await;
    let req = SearchRequest { sources: vec!["n".repeat(10_000)], ..query("q") };
    let err = c.search(authed(req, &t)).await.expect_err("unknown source");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().len() <= 600, "{} bytes", err.message().len());
}

#[tokio::test]
async fn a_source_the_caller_may_not_use_is_never_called_nor_listed() {
    let fin = ScriptedAdapter::new(
        "fin",
        scripts(vec![("finance", Script::answer(make_hits("finance", 2), Duration::ZERO))]),
    );
    let pubs =
        ScriptedAdapter::new("pub", scripts(vec![("public", Script::answer(make_hits("public", 2), Duration::ZERO))]));
    let fin_record = fin.record.clone();
    let (rf, rp) = (start_adapter(fin).await, start_adapter(pubs).await);
    let router = start_router(&router_yaml(
        &[("finance", &rf.url(), "required_groups: [finance]"), ("public", &rp.url(), "")],
        "",
    ))
    .await;
    let mut c = client(&router).await;
    let carol = token("carol", &["employee"]);
    let resp = c.search(authed(query("q"), &carol)).await.unwrap().into_inner();
    assert_eq!(resp.routing.as_ref().unwrap().strategy, "all");
    assert_eq!(resp.sources.iter().map(|s| s.source.as_str()).collect::<Vec<_>>(), vec!["public"]);
    let err =
        c.search(authed(SearchRequest { sources: vec!["finance".into()], ..query("q") }, &carol)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(fin_record.started.load(Ordering::SeqCst), 0, "the finance adapter was never called");
    let listed = c.list_sources(authed(ListSourcesRequest {}, &carol)).await.unwrap().into_inner();
    assert_eq!(listed.sources.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["public"]);
    let bob = token("bob", &["finance"]);
    let listed = c.list_sources(authed(ListSourcesRequest {}, &bob)).await.unwrap().into_inner();
    assert_eq!(listed.sources.len(), 2);
    let spec: serde_json::Value = serde_json::from_str(&listed.sources[0].tool_spec_json).unwrap();
    assert_eq!(spec["type"], "function");
    assert_eq!(spec["function"]["parameters"]["required"][0], "query");
    let err = c
        .get_document(authed(
            GetDocumentRequest { full_text_ref: "finance:doc-1".into(), ..Default::default() },
            &carol,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let doc = c
        .get_document(authed(GetDocumentRequest { full_text_ref: "finance:doc-1".into(), ..Default::default() }, &bob))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(doc.id, "finance:doc-1");
    assert_eq!(fin_record.started.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_verified_identity_and_only_its_own_credential_reach_each_source() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("wiki", Script::answer(make_hits("wiki", 1), Duration::ZERO)),
            ("tickets", Script::answer(make_hits("tickets", 1), Duration::ZERO)),
        ]),
    );
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(&[("wiki", &ra.url(), ""), ("tickets", &ra.url(), "")], "")).await;
    let mut req = query("q");
    req.source_credentials.insert("wiki".into(), Secret { value: "wiki-token-of-alice".into() });
    let resp = client(&router).await.search(authed(req, &token("alice", &["support"]))).await.unwrap().into_inner();
    assert_eq!(resp.sources.len(), 2);
    let seen = record.seen.lock().unwrap();
    for q in seen.iter() {
        let user = q.user.as_ref().unwrap();
        assert_eq!(user.subject, "alice");
        assert_eq!(user.groups, vec!["support".to_string()]);
        let cred = user.delegated_credential.as_ref().map(|s| s.value.as_str());
        match q.source.as_str() {
            "wiki" => assert_eq!(cred, Some("wiki-token-of-alice")),
            _ => assert_eq!(cred, None, "a credential only goes to its own source"),
        }
    }
    let shown = format!("{resp:?}");
    assert!(!shown.contains("wiki-token-of-alice"), "credentials are never returned");
}

#[tokio::test]
async fn without_the_fusion_service_the_router_fuses_in_process_and_says_so() {
    let a = ScriptedAdapter::new("a", scripts(vec![("s", Script::answer(make_hits("s", 3), Duration::ZERO))]));
    let ra = start_adapter(a).await;
    let router =
        start_router(&router_yaml(&[("s", &ra.url(), "")], "fusion: { endpoint: \"http://127.0.0.1:1\" }")).await;
    let resp = client(&router).await.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    let fusion = resp.fusion.unwrap();
    assert!(fusion.in_process_fallback, "{fusion:?}");
    assert!(fusion.message.contains("unavailable"), "{}", fusion.message);
    assert_eq!(resp.hits.len(), 3);
    assert_eq!(resp.hits[0].id, "s:doc-1");
}

fn failing(name: &str, error: AdapterError) -> ScriptedAdapter {
    ScriptedAdapter::new(
        "a",
        scripts(vec![(name, Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Fail(error) })]),
    )
}

#[tokio::test]
async fn a_source_failing_for_several_users_is_suspended_by_its_circuit_breaker() {
    let a = failing("flaky", AdapterError::Unavailable("down".into()));
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(
        &[("flaky", &ra.url(), "")],
        "circuit_breaker: { failure_threshold: 2, open_for: 60s }",
    ))
    .await;
    let mut c = client(&router).await;
    for user in ["alice", "bob"] {
        let resp = c.search(authed(query("q"), &token(user, &[]))).await.unwrap().into_inner();
        assert_eq!(resp.sources[0].state(), SourceState::Unavailable);
    }
    let resp = c.search(authed(query("q"), &token("carol", &[]))).await.unwrap().into_inner();
    assert_eq!(resp.sources[0].state(), SourceState::CircuitOpen);
    assert!(resp.sources[0].message.contains("next try"), "{}", resp.sources[0].message);
    assert_eq!(record.started.load(Ordering::SeqCst), 2, "an open circuit does not call the source");
}

#[tokio::test]
async fn one_user_cannot_switch_a_source_off_for_the_others() {
    // Every answer of this source fails, as if mallory's input broke it: her failures alone
    // never open the circuit, nor do her tiny timeouts or invalid arguments.
    let a = failing("wiki", AdapterError::Internal("the wiki answered a fault".into()));
    let ra = start_adapter(a).await;
    let good = ScriptedAdapter::new("b", scripts(vec![("kb", Script::answer(make_hits("kb", 2), Duration::ZERO))]));
    let rb = start_adapter(good).await;
    let router = start_router(&router_yaml(
        &[("wiki", &ra.url(), ""), ("kb", &rb.url(), "")],
        "circuit_breaker: { failure_threshold: 3, open_for: 60s }",
    ))
    .await;
    let mut c = client(&router).await;
    let mallory = token("mallory", &[]);
    for _ in 0..10 {
        let resp = c.search(authed(query("a query that breaks the wiki"), &mallory)).await.unwrap().into_inner();
        assert_eq!(state_of(&resp, "wiki"), SourceState::Error, "{:?}", resp.sources);
        let mut tiny = query("q");
        tiny.timeout = Some(prost_types::Duration { seconds: 0, nanos: 1 });
        c.search(authed(tiny, &mallory)).await.unwrap();
    }
    let resp = c.search(authed(query("q"), &mallory)).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "wiki"), SourceState::Error, "still asked, not suspended: {:?}", resp.sources);
    assert_eq!(state_of(&resp, "kb"), SourceState::Ok);
    // A second user failing on it too makes it the source's fault.
    let resp = c.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "wiki"), SourceState::Error);
    let resp = c.search(authed(query("q"), &token("bob", &[]))).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "wiki"), SourceState::CircuitOpen, "{:?}", resp.sources);
}

#[tokio::test]
async fn tiny_client_deadlines_never_open_the_circuit() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![("slow", Script::answer(make_hits("slow", 2), Duration::from_millis(200)))]),
    );
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(
        &[("slow", &ra.url(), "")],
        "circuit_breaker: { failure_threshold: 2, open_for: 60s, min_distinct_users: 1 }",
    ))
    .await;
    let mut c = client(&router).await;
    for user in ["mallory", "trudy", "mallory", "trudy", "mallory"] {
        let mut tiny = query("q");
        tiny.timeout = Some(prost_types::Duration { seconds: 0, nanos: 1 });
        let resp = c.search(authed(tiny, &token(user, &[]))).await.unwrap().into_inner();
        assert_eq!(state_of(&resp, "slow"), SourceState::Timeout);
    }
    let resp = c.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "slow"), SourceState::Ok, "{:?}", resp.sources);
}

#[tokio::test]
async fn a_source_that_comes_back_is_used_again_after_its_health_check_not_after_the_open_period() {
    // The adapter's port is closed: unreachable opens the circuit for 10 minutes.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let router = start_router(&router_yaml(
        &[("back", &format!("http://{addr}"), "")],
        "circuit_breaker: { failure_threshold: 2, open_for: 600s, health_interval: 50ms }",
    ))
    .await;
    let mut c = client(&router).await;
    let t = token("alice", &[]);
    for _ in 0..2 {
        let resp = c.search(authed(query("q"), &t)).await.unwrap().into_inner();
        assert_eq!(state_of(&resp, "back"), SourceState::Unavailable);
    }
    let resp = c.search(authed(query("q"), &t)).await.unwrap().into_inner();
    assert_eq!(state_of(&resp, "back"), SourceState::CircuitOpen);
    let a = ScriptedAdapter::new("a", scripts(vec![("back", Script::answer(make_hits("back", 2), Duration::ZERO))]));
    let _adapter = start_adapter_on(a, addr).await;
    let mut state = SourceState::CircuitOpen;
    for _ in 0..600 {
        let resp = c.search(authed(query("q"), &t)).await.unwrap().into_inner();
        state = state_of(&resp, "back");
        if state == SourceState::Ok {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, SourceState::Ok, "used again long before the 600 s open period ends");
}

#[tokio::test]
async fn search_stream_reports_routing_statuses_snapshots_then_the_result() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("fast", Script::answer(make_hits("fast", 2), Duration::ZERO)),
            ("later", Script::answer(make_hits("later", 2), Duration::from_millis(100))),
        ]),
    );
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(&[("fast", &ra.url(), ""), ("later", &ra.url(), "")], "")).await;
    let mut stream =
        client(&router).await.search_stream(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    let mut kinds = Vec::new();
    let mut first_status = None;
    while let Some(ev) = stream.message().await.unwrap() {
        match ev.event.unwrap() {
            search_event::Event::Routing(_) => kinds.push("routing"),
            search_event::Event::SourceStatus(s) => {
                first_status.get_or_insert(s.source.clone());
                kinds.push("status")
            }
            search_event::Event::Snapshot(_) => kinds.push("snapshot"),
            search_event::Event::Result(r) => {
                assert_eq!(r.hits.len(), 4);
                kinds.push("result")
            }
        }
    }
    assert_eq!(kinds, vec!["routing", "status", "snapshot", "status", "snapshot", "result"]);
    assert_eq!(first_status.as_deref(), Some("fast"), "statuses arrive as sources finish");
}

#[tokio::test]
async fn rules_pick_sources_and_explain_why() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("orders", Script::answer(make_hits("orders", 1), Duration::ZERO)),
            ("wiki", Script::answer(make_hits("wiki", 1), Duration::ZERO)),
        ]),
    );
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(
        &[
            ("orders", &ra.url(), r"routing: { patterns: ['SO\d{8}'], keywords: ['发货'] }"),
            ("wiki", &ra.url(), "routing: { keywords: ['policy', '手续费'] }"),
        ],
        "selection: { mode: scored }",
    ))
    .await;
    let mut c = client(&router).await;
    let t = token("alice", &[]);
    let resp = c.search(authed(query("SO20261001 为什么还没发货"), &t)).await.unwrap().into_inner();
    let routing = resp.routing.unwrap();
    assert_eq!(routing.strategy, "scored");
    assert_eq!(routing.selected.iter().map(|r| r.source.as_str()).collect::<Vec<_>>(), vec!["orders"]);
    assert!(routing.selected[0].reason.contains("SO20261001"), "{}", routing.selected[0].reason);
    assert_eq!(routing.not_selected[0].source, "wiki");
    let resp = c.search(authed(query("weather tomorrow"), &t)).await.unwrap().into_inner();
    assert_eq!(resp.routing.unwrap().strategy, "fallback_all");
    assert_eq!(resp.sources.len(), 2);
}

#[tokio::test]
async fn a_cached_answer_is_reused_for_the_same_user_only() {
    let a = ScriptedAdapter::new("a", scripts(vec![("kb", Script::answer(make_hits("kb", 3), Duration::ZERO))]));
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(&[("kb", &ra.url(), "cache_ttl: 60s")], "")).await;
    let mut c = client(&router).await;
    let alice = token("alice", &["support"]);
    let first = c.search(authed(query("支付超时"), &alice)).await.unwrap().into_inner();
    let second = c.search(authed(query("支付超时"), &alice)).await.unwrap().into_inner();
    assert_eq!(record.started.load(Ordering::SeqCst), 1, "the second identical search was served from the cache");
    assert!(second.sources[0].message.starts_with("from cache"), "{:?}", second.sources[0]);
    assert_eq!(
        first.hits.iter().map(|h| &h.id).collect::<Vec<_>>(),
        second.hits.iter().map(|h| &h.id).collect::<Vec<_>>()
    );
    // Another user, or another question, goes to the source.
    c.search(authed(query("支付超时"), &token("carol", &["employee"]))).await.unwrap();
    c.search(authed(query("发货"), &alice)).await.unwrap();
    assert_eq!(record.started.load(Ordering::SeqCst), 3);
    // A delegated credential is never cached.
    for _ in 0..2 {
        let mut q = query("支付超时");
        q.source_credentials.insert("kb".into(), Secret { value: "t".into() });
        c.search(authed(q, &alice)).await.unwrap();
    }
    assert_eq!(record.started.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn feedback_is_stored_per_user_and_only_for_sources_they_may_use() {
    use fedsearch_proto::api::FeedbackRequest;
    let a = ScriptedAdapter::new("a", scripts(vec![("kb", Script::answer(make_hits("kb", 1), Duration::ZERO))]));
    let ra = start_adapter(a).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feedback.jsonl");
    let sources = [("kb", ra.url()), ("finance", ra.url())];
    let specs: Vec<(&str, &str, &str)> =
        vec![(sources[0].0, &sources[0].1, ""), (sources[1].0, &sources[1].1, "required_groups: [finance]")];
    let router = start_router(&router_yaml(&specs, &format!("feedback: {{ path: \"{}\" }}", path.display()))).await;
    let mut c = client(&router).await;
    let carol = token("carol", &["employee"]);
    let report = |used: &[&str]| FeedbackRequest {
        trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
        query: "q".into(),
        used: used.iter().map(|s| s.to_string()).collect(),
        shown: vec!["kb:1".into(), "kb:2".into()],
        ..Default::default()
    };
    let ok = c.feedback(authed(report(&["kb:1"]), &carol)).await.unwrap().into_inner();
    assert_eq!(ok.recorded, 1);
    let line = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(
        (v["user"].as_str(), v["used"][0].as_str(), v["shown"][1].as_str()),
        (Some("carol"), Some("kb:1"), Some("kb:2"))
    );
    for bad in [&["finance:9"][..], &["nosuch:1"], &["no-colon"], &[]] {
        let err = c.feedback(authed(report(bad), &carol)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad:?}: {}", err.message());
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1, "refused reports are not stored");
    let err = c.feedback(Request::new(report(&["kb:1"]))).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    // Without feedback.path the router says so.
    let plain = start_router(&router_yaml(&specs, "")).await;
    let err = client(&plain).await.feedback(authed(report(&["kb:1"]), &carol)).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn as_of_and_the_users_zone_decide_what_yesterday_means_and_reach_the_adapter() {
    let a =
        ScriptedAdapter::new("a", scripts(vec![("tickets", Script::answer(make_hits("tickets", 1), Duration::ZERO))]));
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let router =
        start_router(&router_yaml(&[("tickets", &ra.url(), "kind: search, routing: { time_phrases: true }")], ""))
            .await;
    let mut c = client(&router).await;
    let t = token("alice", &[]);
    // 07:00 on 1 December 2026 in Shanghai is still 30 November in UTC: 昨天 is 30 November there.
    let as_of = prost_types::Timestamp { seconds: 1_796_079_600, nanos: 0 }; // 2026-11-30T23:00:00Z
    let req = SearchRequest { as_of: Some(as_of), time_zone: "Asia/Shanghai".into(), ..query("昨天的工单") };
    let resp = c.search(authed(req, &t)).await.unwrap().into_inner();
    let routed = &resp.routing.unwrap().selected[0];
    assert!(routed.rewrite.contains("2026-11-30 in Asia/Shanghai"), "{}", routed.rewrite);
    assert!(routed.rewrite.contains("ranked first"), "a search index ranks by the window: {}", routed.rewrite);
    let seen = record.seen.lock().unwrap().last().cloned().unwrap();
    let range = seen.filters.unwrap().time_range.unwrap();
    assert_eq!(range.from.unwrap().seconds, 1_795_968_000, "2026-11-30T00:00+08:00");
    assert_eq!(range.to.unwrap().seconds + 1, 1_796_054_400, "the end of that local day");
    assert_eq!((seen.as_of.unwrap().seconds, seen.time_zone.as_str()), (1_796_079_600, "Asia/Shanghai"));
    assert_eq!(seen.original_text, "昨天的工单");
    assert!(seen.time_range_from_question, "read from the question: the adapter may rank by it");
    // The caller's own window is a filter, whatever the question says.
    let given = fedsearch_proto::types::Filters { time_range: Some(range), ..Default::default() };
    let req = SearchRequest {
        as_of: Some(as_of),
        time_zone: "Asia/Shanghai".into(),
        filters: Some(given),
        ..query("昨天的工单")
    };
    c.search(authed(req, &t)).await.unwrap();
    let seen = record.seen.lock().unwrap().last().cloned().unwrap();
    assert!(!seen.time_range_from_question && seen.filters.unwrap().time_range.is_some());
    // A zone that does not exist is the caller's mistake, named.
    let bad = SearchRequest { time_zone: "Mars/Olympus".into(), ..query("昨天的工单") };
    let err = c.search(authed(bad, &t)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("time_zone"), "{}", err.message());
}

/// The output stream of the test fusion services.
type FuseOutputs = Pin<Box<dyn futures::Stream<Item = Result<fedsearch_proto::fusion::FuseOutput, Status>> + Send>>;

/// Serves `fusion` on a free port of 127.0.0.1 and returns its address.
async fn serve_fusion(fusion: impl fedsearch_proto::fusion::fusion_server::Fusion) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(fedsearch_proto::fusion::fusion_server::FusionServer::new(fusion))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    addr
}

/// A fusion service that takes the stream and then stops: it never reads an input nor answers,
/// like a stopped (SIGSTOP) process whose kernel still accepts.
struct StalledFusion;

#[tonic::async_trait]
impl fedsearch_proto::fusion::fusion_server::Fusion for StalledFusion {
    type FuseStream = FuseOutputs;

    async fn fuse(
        &self,
        request: Request<Streaming<fedsearch_proto::fusion::FuseInput>>,
    ) -> Result<Response<Self::FuseStream>, Status> {
        let inbound = request.into_inner();
        Ok(Response::new(Box::pin(futures::stream::unfold(inbound, |inbound| async move {
            std::future::pending::<()>().await;
            Some((Ok(Default::default()), inbound))
        }))))
    }
}

#[tokio::test]
async fn a_stalled_fusion_service_cannot_hold_a_search_past_its_deadline() {
    let fusion_addr = serve_fusion(StalledFusion).await;
    let many: Vec<_> =
        (0..40).map(|i| (format!("s{i}"), Script::answer(make_hits(&format!("s{i}"), 5), Duration::ZERO))).collect();
    let a = ScriptedAdapter::new("a", many.into_iter().collect());
    let ra = start_adapter(a).await;
    let url = ra.url();
    let names: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
    let sources: Vec<(&str, &str, &str)> = names.iter().map(|n| (n.as_str(), url.as_str(), "")).collect();
    let router = start_router(&router_yaml(
        &sources,
        &format!("fusion: {{ endpoint: \"http://{fusion_addr}\", timeout: 60s }}"),
    ))
    .await;
    // The router's budget is the request's 3 s; the caller waits far longer, so a loaded machine
    // cannot turn the router's answer near its own deadline into the caller's DEADLINE_EXCEEDED:
    // what is asserted is that the stalled fusion (60 s) did not hold the answer, not a time.
    let three_s = prost_types::Duration { seconds: 3, nanos: 0 };
    let mut req = authed(SearchRequest { top_k: 50, timeout: Some(three_s), ..query("q") }, &token("alice", &[]));
    req.set_timeout(Duration::from_secs(50));
    let resp = client(&router).await.search(req).await.expect("a partial answer, not DEADLINE_EXCEEDED").into_inner();
    let fusion = resp.fusion.unwrap();
    assert!(fusion.in_process_fallback, "{fusion:?}");
    assert_eq!(resp.hits.len(), 50);
}

#[tokio::test]
async fn one_users_flood_is_refused_early_and_others_are_still_served() {
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("slow", Script { hits: vec![], latency: Duration::ZERO, behaviour: Behaviour::Hang }),
            ("kb", Script::answer(make_hits("kb", 2), Duration::ZERO)),
        ]),
    );
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(
        &[("slow", &ra.url(), "timeout: 30s"), ("kb", &ra.url(), "")],
        "limits: { per_user: { max_in_flight: 2 } }",
    ))
    .await;
    let mallory = token("mallory", &[]);
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (router_url, t) = (router.url(), mallory.clone());
            tokio::spawn(async move {
                let mut c = FederatedSearchClient::connect(router_url).await.unwrap();
                let mut q = SearchRequest { sources: vec!["slow".into()], ..query("q") };
                q.timeout = Some(prost_types::Duration { seconds: 20, nanos: 0 });
                c.search(authed(q, &t)).await
            })
        })
        .collect();
    assert!(eventually(|| record.started.load(Ordering::SeqCst) == 2).await, "both of mallory's searches run");
    let mut c = client(&router).await;
    let err = c.search(authed(query("q"), &mallory)).await.expect_err("a third is over her cap");
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(err.metadata().get("retry-after-ms").is_some());
    let err = c.list_sources(authed(ListSourcesRequest::default(), &mallory)).await.expect_err("every method counts");
    assert_eq!(err.code(), Code::ResourceExhausted);
    let resp = c.search(authed(SearchRequest { sources: vec!["kb".into()], ..query("q") }, &token("alice", &[])));
    assert_eq!(state_of(&resp.await.expect("alice is served").into_inner(), "kb"), SourceState::Ok);
    for h in held {
        h.abort();
    }
}

/// A Redis of the test's own (Debian's redis-server, which `scripts/backends/all.sh` installs),
/// so it can be stopped without touching anything else.
struct OwnRedis {
    url: String,
    child: std::process::Child,
}

impl OwnRedis {
    async fn start() -> OwnRedis {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (install it with scripts/backends/all.sh start redis)");
        let own = OwnRedis { url: format!("redis://127.0.0.1:{port}/"), child };
        let client = redis::Client::open(own.url.as_str()).unwrap();
        for _ in 0..200 {
            if let Ok(mut c) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING").query_async::<String>(&mut c).await.is_ok()
            {
                return own;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not answer"); // (dropping `own` stops it)
    }

    async fn keys(&self) -> usize {
        let client = redis::Client::open(self.url.as_str()).unwrap();
        let mut c = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS").arg("fedsearch:answer:*").query_async(&mut c).await.unwrap();
        keys.len()
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn two_routers_share_cached_answers_through_redis_but_never_across_users() {
    let mut redis = OwnRedis::start().await;
    let a = ScriptedAdapter::new("a", scripts(vec![("kb", Script::answer(make_hits("kb", 3), Duration::ZERO))]));
    let record = a.record.clone();
    let ra = start_adapter(a).await;
    let yaml = router_yaml(
        &[("kb", &ra.url(), "cache_ttl: 60s")],
        &format!("shared_cache: {{ redis_url: \"{}\" }}", redis.url),
    );
    let (one, two) = (start_router(&yaml).await, start_router(&yaml).await);
    let (mut c1, mut c2) = (client(&one).await, client(&two).await);
    let alice = token("alice", &["support"]);
    c1.search(authed(query("退款政策"), &alice)).await.unwrap();
    assert_eq!(record.started.load(Ordering::SeqCst), 1);
    // The write to Redis happens off the answer's path.
    for _ in 0..200 {
        if redis.keys().await > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(redis.keys().await, 1, "router one stored its answer in the shared tier");
    let shared = c2.search(authed(query("退款政策"), &alice)).await.unwrap().into_inner();
    assert!(shared.sources[0].message.starts_with("from cache"), "{:?}", shared.sources[0]);
    assert_eq!(record.started.load(Ordering::SeqCst), 1, "router two reused router one's answer");
    assert_eq!(shared.hits.len(), 3);
    // Another user asking the same question on router two goes to the source.
    let carol = c2.search(authed(query("退款政策"), &token("carol", &["employee"]))).await.unwrap().into_inner();
    assert!(!carol.sources[0].message.starts_with("from cache"), "{:?}", carol.sources[0]);
    assert_eq!(record.started.load(Ordering::SeqCst), 2);
    // Redis gone: searches go on without the shared tier.
    let _ = redis.child.kill();
    let _ = redis.child.wait();
    let resp = c1.search(authed(query("发货延迟"), &alice)).await.expect("no failed call").into_inner();
    assert_eq!(state_of(&resp, "kb"), SourceState::Ok);
    assert_eq!(record.started.load(Ordering::SeqCst), 3);
}

/// A fusion service that fuses with the `fedsearch-fusion` library, as the real one does, and
/// records the order of each stream's inputs ("start" or "start with snapshots", "batch", "end").
#[derive(Clone, Default)]
struct RecordingFusion {
    streams: std::sync::Arc<std::sync::Mutex<Vec<Vec<&'static str>>>>,
}

#[tonic::async_trait]
impl fedsearch_proto::fusion::fusion_server::Fusion for RecordingFusion {
    type FuseStream = FuseOutputs;

    async fn fuse(
        &self,
        request: Request<Streaming<fedsearch_proto::fusion::FuseInput>>,
    ) -> Result<Response<Self::FuseStream>, Status> {
        use fedsearch_proto::fusion::{FuseOutput, fuse_input::Input, fuse_output::Output};
        let mut inbound = request.into_inner();
        let streams = self.streams.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let (mut fuser, mut seen, mut snapshots) = (None, Vec::new(), false);
            while let Ok(Some(input)) = inbound.message().await {
                match input.input.unwrap() {
                    Input::Start(start) => {
                        snapshots = start.snapshots;
                        seen.push(if snapshots { "start with snapshots" } else { "start" });
                        fuser = Some(fedsearch_fusion::Fuser::new(&start).unwrap());
                    }
                    Input::Batch(b) => {
                        seen.push("batch");
                        fuser.as_mut().unwrap().add_batch(&b.source, b.hits);
                    }
                    Input::End(e) => {
                        seen.push("end");
                        let f = fuser.as_mut().unwrap();
                        f.end_source(&e.source);
                        if snapshots {
                            let _ = tx.send(Ok(FuseOutput { output: Some(Output::Snapshot(f.snapshot())) })).await;
                        }
                    }
                }
            }
            streams.lock().unwrap().push(seen);
            let result = fuser.unwrap().finish();
            let _ = tx.send(Ok(FuseOutput { output: Some(Output::Result(result)) })).await;
        });
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }
}

#[tokio::test]
async fn a_search_is_fused_by_the_service_in_one_call_and_a_stream_batch_by_batch() {
    let fusion = RecordingFusion::default();
    let fusion_addr = serve_fusion(fusion.clone()).await;
    let a = ScriptedAdapter::new(
        "a",
        scripts(vec![
            ("fast", Script::answer(make_hits("fast", 2), Duration::ZERO)),
            ("later", Script::answer(make_hits("later", 2), Duration::from_millis(50))),
        ]),
    );
    let ra = start_adapter(a).await;
    let router = start_router(&router_yaml(
        &[("fast", &ra.url(), ""), ("later", &ra.url(), "")],
        &format!("fusion: {{ endpoint: \"http://{fusion_addr}\", timeout: 30s }}"),
    ))
    .await;
    let mut c = client(&router).await;

    // Search: nothing is fused before the last source is done, so the batches and ends wait in
    // the router and follow the start together, every batch before any end.
    let resp = c.search(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    assert!(!resp.fusion.as_ref().unwrap().in_process_fallback, "{:?}", resp.fusion);
    assert_eq!(resp.hits.len(), 4);
    assert_eq!(fusion.streams.lock().unwrap().pop().unwrap(), ["start", "batch", "batch", "end", "end"]);

    // SearchStream: the stream opens as the sub-queries go out, asking for snapshots, and each
    // source's batch and end follow as they arrive (in an order the sources' timing decides).
    let mut stream = c.search_stream(authed(query("q"), &token("alice", &[]))).await.unwrap().into_inner();
    let (mut snapshots, mut result) = (0, None);
    while let Some(ev) = stream.message().await.unwrap() {
        match ev.event.unwrap() {
            search_event::Event::Snapshot(_) => snapshots += 1,
            search_event::Event::Result(r) => result = Some(r),
            _ => {}
        }
    }
    let result = result.expect("a final result");
    assert!(!result.fusion.as_ref().unwrap().in_process_fallback, "{:?}", result.fusion);
    assert_eq!(result.hits.len(), 4);
    assert_eq!(snapshots, 2, "a snapshot after each source");
    let mut seen = fusion.streams.lock().unwrap().pop().unwrap();
    assert_eq!(seen.remove(0), "start with snapshots");
    seen.sort_unstable();
    assert_eq!(seen, ["batch", "batch", "end", "end"]);
}
