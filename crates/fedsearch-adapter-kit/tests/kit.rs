//! The kit's stream protocol over real gRPC: batches tagged with their sub-query, one done per
//! sub-query, notes on OK answers, deadlines and bad frames.

use std::time::Duration;

use fedsearch_adapter_kit::{Adapter, AdapterError, HitSink, ServerConfig, serve_adapter};
use fedsearch_proto::{
    adapter::{
        DescribeResponse, FetchRequest, FetchResponse, ResultFrame, SearchFrame, SubQuery, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    types::{SourceHit, SourceState, UserContext},
};

struct Noting;

impl Adapter for Noting {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse::default()
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        match query.text.as_str() {
            "slow" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(())
            }
            "fail" => {
                sink.note("lookup `orders` answered");
                Err(AdapterError::Unavailable("backend unreachable".into()))
            }
            "drain-me" => {
                tokio::time::sleep(Duration::from_millis(400)).await;
                sink.send(vec![SourceHit { local_id: "late".into(), rank: 1, ..Default::default() }]).await;
                Ok(())
            }
            _ => {
                sink.send(vec![SourceHit { local_id: "1".into(), rank: 1, ..Default::default() }]).await;
                sink.note("filter `tags` not applied");
                Ok(())
            }
        }
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
}

async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig::loopback(addr);
    tokio::spawn(async move { serve_adapter(Noting, listener, &config, std::future::pending()).await });
    format!("http://{addr}")
}

fn sub(id: &str, text: &str, deadline_ms: u64) -> SearchFrame {
    SearchFrame {
        frame: Some(search_frame::Frame::SubQuery(SubQuery {
            id: id.into(),
            text: text.into(),
            user: Some(UserContext { subject: "alice".into(), ..Default::default() }),
            deadline: Some(fedsearch_core::time::to_timestamp(
                std::time::SystemTime::now() + Duration::from_millis(deadline_ms),
            )),
            ..Default::default()
        })),
    }
}

#[tokio::test]
async fn each_sub_query_ends_with_its_own_done_carrying_state_and_notes() {
    let mut client = SourceAdapterClient::connect(serve().await).await.unwrap();
    let frames = vec![sub("a", "ok", 2000), sub("b", "fail", 2000), sub("c", "slow", 200)];
    let mut stream = client.search(tokio_stream::iter(frames)).await.unwrap().into_inner();
    let mut done = std::collections::HashMap::new();
    let mut batches = Vec::new();
    while let Some(ResultFrame { frame }) = stream.message().await.unwrap() {
        match frame.unwrap() {
            result_frame::Frame::Batch(b) => batches.push(b.sub_query_id),
            result_frame::Frame::Done(d) => {
                done.insert(d.sub_query_id.clone(), d);
            }
        }
    }
    assert_eq!(batches, vec!["a".to_string()]);
    assert_eq!(done.len(), 3, "exactly one done per sub-query");
    assert_eq!(done["a"].state(), SourceState::Ok);
    assert_eq!(done["a"].message, "filter `tags` not applied", "notes reach the caller on OK answers");
    assert_eq!(done["a"].hit_count, 1);
    assert_eq!((done["b"].state(), done["b"].code.as_str()), (SourceState::Unavailable, "UNAVAILABLE"));
    assert_eq!(
        done["b"].message, "backend unreachable; lookup `orders` answered",
        "what was noted before the failure travels with it"
    );
    assert_eq!((done["c"].state(), done["c"].code.as_str()), (SourceState::Timeout, "DEADLINE_EXCEEDED"));
}

#[tokio::test]
async fn a_sub_query_without_a_user_is_denied_and_duplicate_ids_are_refused() {
    let mut client = SourceAdapterClient::connect(serve().await).await.unwrap();
    let mut anonymous = sub("x", "ok", 2000);
    if let Some(search_frame::Frame::SubQuery(q)) = anonymous.frame.as_mut() {
        q.user = None;
    }
    let mut stream = client.search(tokio_stream::iter(vec![anonymous])).await.unwrap().into_inner();
    let Some(ResultFrame { frame: Some(result_frame::Frame::Done(d)) }) = stream.message().await.unwrap() else {
        panic!("expected a done frame")
    };
    assert_eq!((d.state(), d.code.as_str()), (SourceState::Denied, "UNAUTHENTICATED"));

    let frames = vec![sub("same", "slow", 2000), sub("same", "ok", 2000)];
    let mut stream = client.search(tokio_stream::iter(frames)).await.unwrap().into_inner();
    let mut error = None;
    loop {
        match stream.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    assert_eq!(error.expect("the stream is refused").code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn shutdown_reports_not_serving_and_drains_in_flight_sub_queries() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig { shutdown_grace: Duration::from_secs(5), ..ServerConfig::loopback(addr) };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve_adapter(Noting, listener, &config, async {
            let _ = stopped.await;
        })
        .await
    });
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let check = tonic_health::pb::HealthCheckRequest { service: "fedsearch.adapter.v1.SourceAdapter".into() };
    let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
    assert_eq!(health.check(check.clone()).await.unwrap().into_inner().status, serving);
    let mut watch = health.watch(check).await.unwrap().into_inner();
    assert_eq!(watch.message().await.unwrap().unwrap().status, serving);

    let mut client = SourceAdapterClient::new(channel);
    let mut stream = client.search(tokio_stream::iter(vec![sub("d", "drain-me", 5000)])).await.unwrap().into_inner();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    // Health flips to NOT_SERVING at once, while the in-flight sub-query still finishes.
    let not_serving = tonic_health::pb::health_check_response::ServingStatus::NotServing as i32;
    assert_eq!(watch.message().await.unwrap().unwrap().status, not_serving);
    // An open watch is an in-flight call too; end it so the drain only waits for the search.
    drop(watch);
    drop(health);
    let mut got_hit = false;
    let mut done = None;
    while let Some(ResultFrame { frame }) = stream.message().await.unwrap() {
        match frame.unwrap() {
            result_frame::Frame::Batch(b) => got_hit |= b.hits.iter().any(|h| h.local_id == "late"),
            result_frame::Frame::Done(d) => done = Some(d),
        }
    }
    assert!(got_hit, "the in-flight answer was delivered during the drain");
    assert_eq!(done.unwrap().state(), SourceState::Ok);
    // Well within the 5 s grace: the server exits once the search has drained.
    tokio::time::timeout(Duration::from_secs(3), server)
        .await
        .expect("the server exits after draining")
        .unwrap()
        .unwrap();
}

/// Every done frame of a stream, by sub-query id (a stream error ends the reading).
async fn dones(
    stream: &mut tonic::Streaming<ResultFrame>,
    want: usize,
) -> std::collections::HashMap<String, (SourceState, String)> {
    let mut done = std::collections::HashMap::new();
    while done.len() < want {
        match stream.message().await {
            Ok(Some(ResultFrame { frame: Some(result_frame::Frame::Done(d)) })) => {
                done.insert(d.sub_query_id.clone(), (d.state(), d.code.clone()));
            }
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    done
}

#[tokio::test]
async fn control_characters_in_a_sub_query_are_invalid_argument_before_any_backend_call() {
    let mut client = SourceAdapterClient::connect(serve().await).await.unwrap();
    let mut bad_terms = sub("t", "ok", 2000);
    if let Some(search_frame::Frame::SubQuery(q)) = bad_terms.frame.as_mut() {
        q.terms = vec!["退款".into(), "政策\u{ffff}".into()];
    }
    let frames = vec![sub("q", "refund\u{fffe}", 2000), bad_terms, sub("fine", "ok", 2000)];
    let mut stream = client.search(tokio_stream::iter(frames)).await.unwrap().into_inner();
    let done = dones(&mut stream, 3).await;
    assert_eq!(done["q"], (SourceState::Error, "INVALID_ARGUMENT".to_string()));
    assert_eq!(done["t"], (SourceState::Error, "INVALID_ARGUMENT".to_string()));
    assert_eq!(done["fine"].0, SourceState::Ok);
}

#[tokio::test]
async fn one_stream_runs_a_bounded_number_of_sub_queries_at_once() {
    let mut client = SourceAdapterClient::connect(serve().await).await.unwrap();
    let max = fedsearch_adapter_kit::MAX_SUBQUERIES_PER_STREAM;
    let (tx, rx) = tokio::sync::mpsc::channel(max + 2);
    for i in 0..max {
        tx.send(sub(&format!("slow-{i}"), "slow", 5_000)).await.unwrap();
    }
    tx.send(sub("one-too-many", "ok", 5_000)).await.unwrap();
    let mut stream = client.search(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    let done = dones(&mut stream, 1).await;
    assert_eq!(done["one-too-many"], (SourceState::Error, "RESOURCE_EXHAUSTED".to_string()), "{done:?}");
    drop(tx);
}

/// Holds every sub-query until `gate`'s count have arrived, then answers with one hit.
struct Gated(std::sync::Arc<fedsearch_adapter_kit::testing::Gate>);

impl Adapter for Gated {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse::default()
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        self.0.arrive_and_wait().await;
        sink.send(vec![SourceHit { local_id: query.id, rank: 1, ..Default::default() }]).await;
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
}

#[tokio::test]
async fn one_long_lived_stream_runs_its_sub_queries_together_and_ends_cleanly_after_a_half_close() {
    // More than a stream used to carry (64), and all in flight at once: none answers before
    // every one has arrived.
    const N: usize = 150;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig { max_concurrent_subqueries: N, ..ServerConfig::loopback(addr) };
    let gate = fedsearch_adapter_kit::testing::Gate::new(N);
    tokio::spawn(async move { serve_adapter(Gated(gate), listener, &config, std::future::pending()).await });
    let mut client = SourceAdapterClient::connect(format!("http://{addr}")).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(N);
    let mut stream = client.search(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    for i in 0..N {
        tx.send(sub(&format!("q{i}"), "ok", 20_000)).await.unwrap();
    }
    drop(tx);
    let mut hits = std::collections::HashMap::new();
    let mut done = std::collections::HashMap::new();
    // Read to the end: a clean end is `Ok(None)` (trailers with status OK), not an error.
    while let Some(ResultFrame { frame }) = stream.message().await.expect("the stream ends cleanly") {
        match frame.unwrap() {
            result_frame::Frame::Batch(b) => {
                assert_eq!(b.hits[0].local_id, b.sub_query_id, "a batch tagged with another sub-query's id");
                *hits.entry(b.sub_query_id).or_insert(0) += 1;
            }
            result_frame::Frame::Done(d) => {
                assert_eq!(d.state(), SourceState::Ok, "{d:?}");
                done.insert(d.sub_query_id.clone(), d);
            }
        }
    }
    assert_eq!(done.len(), N, "one done per sub-query");
    assert!(hits.values().all(|&n| n == 1) && hits.len() == N);
}

#[tokio::test]
async fn shutdown_ends_an_open_long_lived_stream_once_its_sub_queries_are_done() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A grace far beyond the test's patience: only ending the stream lets the server exit.
    let config = ServerConfig { shutdown_grace: Duration::from_secs(3600), ..ServerConfig::loopback(addr) };
    // The sub-query answers once the test, too, has arrived at the gate: after the drain began.
    let gate = fedsearch_adapter_kit::testing::Gate::new(2);
    let hits = fedsearch_adapter_kit::testing::make_hits("kb", 1);
    let scripts = [("kb".to_string(), fedsearch_adapter_kit::testing::Script::answer(hits, Duration::ZERO))].into();
    let adapter = fedsearch_adapter_kit::testing::ScriptedAdapter::new("kb", scripts).with_gate(gate.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve_adapter(adapter, listener, &config, async {
            let _ = stopped.await;
        })
        .await
    });
    let mut client = SourceAdapterClient::connect(format!("http://{addr}")).await.unwrap();
    // The router's kind of stream: it never half-closes.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut stream =
        client.search(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await.unwrap().into_inner();
    let mut in_flight = sub("in-flight", "ok", 60_000);
    if let Some(search_frame::Frame::SubQuery(q)) = in_flight.frame.as_mut() {
        q.source = "kb".into();
    }
    tx.send(in_flight).unwrap();
    stop.send(()).unwrap();
    gate.arrive_and_wait().await;
    let read = async {
        let mut frames = Vec::new();
        while let Some(ResultFrame { frame }) = stream.message().await.expect("the stream ends cleanly") {
            frames.push(frame.unwrap());
        }
        frames
    };
    let frames =
        tokio::time::timeout(Duration::from_secs(60), read).await.expect("the draining adapter ended the stream");
    let done: Vec<_> = frames
        .iter()
        .filter_map(|f| match f {
            result_frame::Frame::Done(d) => Some((d.sub_query_id.as_str(), d.state())),
            _ => None,
        })
        .collect();
    assert_eq!(done, vec![("in-flight", SourceState::Ok)], "the in-flight sub-query was answered first");
    tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .expect("the server exits once its streams ended, not at the grace period")
        .unwrap()
        .unwrap();
    drop(tx);
}
