//! One long-lived stream carrying the sub-queries of many searches: each sub-query's work is
//! traced in the trace its `trace_context` names (the stream's when it names none: an older
//! router), and every sub-query is counted in `fedsearch.adapter.subquery.duration` when it
//! ends, while the stream's `rpc.server.call.duration` is recorded only when the stream ends.
//!
//! Its own test binary: the telemetry subscriber and the meter provider are per process, and
//! the tests take turns ([`one_at_a_time`]) so one test's stream is no call in another's count.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use fedsearch_adapter_kit::{Adapter, AdapterError, HitSink, ServerConfig, serve_adapter};
use fedsearch_proto::{
    adapter::{
        CancelSubQuery, DescribeResponse, FetchRequest, FetchResponse, ResultFrame, SearchFrame, SourceDescription,
        SubQuery, result_frame, search_frame, source_adapter_client::SourceAdapterClient,
    },
    types::{SourceHit, SourceState, UserContext},
};
use tokio::sync::mpsc;

/// Records the trace id its work runs in, per sub-query text; "hang" never answers.
#[derive(Clone, Default)]
struct Recording {
    traces: Arc<Mutex<HashMap<String, String>>>,
}

impl Adapter for Recording {
    fn describe(&self) -> DescribeResponse {
        let source = SourceDescription { name: "shared".into(), kind: "scripted".into(), ..Default::default() };
        DescribeResponse { adapter: "recording".into(), sources: vec![source] }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let trace = fedsearch_core::propagation::current_trace_id();
        self.traces.lock().unwrap().insert(query.text.clone(), trace);
        if query.text == "hang" {
            std::future::pending::<()>().await;
        }
        sink.send(vec![SourceHit { local_id: query.text, rank: 1, ..Default::default() }]).await;
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
}

/// The subscriber (ids only, no exporter) and the meter provider, once per process, before
/// any instrument is made.
fn telemetry() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let t = fedsearch_core::telemetry::init("kit-test", &Default::default()).expect("telemetry");
        std::mem::forget(t);
        let provider = fedsearch_core::metrics::install("kit-test", None, None).expect("metrics");
        std::mem::forget(provider);
    });
}

/// Held for a whole test: the call counts are per process.
async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
}

async fn serve(adapter: Recording) -> SourceAdapterClient<tonic::transport::Channel> {
    telemetry();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig::loopback(addr);
    tokio::spawn(async move { serve_adapter(adapter, listener, &config, std::future::pending()).await });
    SourceAdapterClient::connect(format!("http://{addr}")).await.unwrap()
}

fn traceparent(trace: &str) -> String {
    format!("00-{trace}-b7ad6b7169203331-01")
}

fn sub(id: &str, text: &str, trace: Option<&str>) -> SearchFrame {
    let trace_context = trace.map(|t| HashMap::from([("traceparent".to_string(), traceparent(t))])).unwrap_or_default();
    SearchFrame {
        frame: Some(search_frame::Frame::SubQuery(SubQuery {
            id: id.into(),
            source: "shared".into(),
            text: text.into(),
            user: Some(UserContext { subject: "alice".into(), ..Default::default() }),
            deadline: Some(fedsearch_core::time::to_timestamp(std::time::SystemTime::now() + Duration::from_secs(20))),
            trace_context,
            ..Default::default()
        })),
    }
}

/// Reads until `want` sub-queries are done; the states by id.
async fn dones(stream: &mut tonic::Streaming<ResultFrame>, want: usize) -> HashMap<String, SourceState> {
    let mut done = HashMap::new();
    while done.len() < want {
        match stream.message().await.expect("the stream stays up") {
            Some(ResultFrame { frame: Some(result_frame::Frame::Done(d)) }) => {
                done.insert(d.sub_query_id.clone(), d.state());
            }
            Some(_) => {}
            None => break,
        }
    }
    done
}

const STREAM_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const SEARCH_A: &str = "11111111111111111111111111111111";
const SEARCH_B: &str = "22222222222222222222222222222222";

#[tokio::test]
async fn each_sub_query_is_traced_in_the_trace_it_carries_else_in_the_streams() {
    let _turn = one_at_a_time().await;
    let adapter = Recording::default();
    let traces = adapter.traces.clone();
    let mut client = serve(adapter).await;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut request = tonic::Request::new(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
    // The stream itself is in a trace of its own (the router's stream is opened outside any search).
    request.metadata_mut().insert("traceparent", traceparent(STREAM_TRACE).parse().unwrap());
    let mut stream = client.search(request).await.unwrap().into_inner();
    tx.send(sub("1", "a", Some(SEARCH_A))).unwrap();
    tx.send(sub("2", "b", Some(SEARCH_B))).unwrap();
    tx.send(sub("3", "older router", None)).unwrap();
    let done = dones(&mut stream, 3).await;
    assert!(done.values().all(|s| *s == SourceState::Ok), "{done:?}");
    let traces = traces.lock().unwrap().clone();
    assert_eq!(traces["a"], SEARCH_A, "{traces:?}");
    assert_eq!(traces["b"], SEARCH_B, "{traces:?}");
    assert_eq!(traces["older router"], STREAM_TRACE, "no trace context: the stream's, as before");
    drop(tx);
    while stream.message().await.expect("the stream ends cleanly").is_some() {}
}

/// The value of the Prometheus series `name{labels...}` whose labels include every one of
/// `labels` (0 when there is none).
fn series(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

const SUBQUERIES: &str = "fedsearch_adapter_subquery_duration_seconds_count";
const CALLS: &str = "rpc_server_call_duration_seconds_count";

#[tokio::test]
async fn every_sub_query_is_counted_when_it_ends_and_the_stream_when_it_ends() {
    let _turn = one_at_a_time().await;
    let search_calls = || series(&fedsearch_core::metrics::render(), CALLS, &["rpc_method=\"Search\""]);
    let sub_queries = |state: &str| {
        let state = format!("fedsearch_source_state=\"{state}\"");
        series(&fedsearch_core::metrics::render(), SUBQUERIES, &["fedsearch_source=\"shared\"", &state])
    };
    let adapter = Recording::default();
    let traces = adapter.traces.clone();
    let mut client = serve(adapter).await;
    let (tx, rx) = mpsc::unbounded_channel();
    let (before, ok_before, skipped_before) = (search_calls(), sub_queries("ok"), sub_queries("skipped"));
    let mut stream =
        client.search(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await.unwrap().into_inner();
    tx.send(sub("1", "ok", None)).unwrap();
    tx.send(sub("2", "hang", None)).unwrap();
    assert_eq!(dones(&mut stream, 1).await.get("1"), Some(&SourceState::Ok));
    while !traces.lock().unwrap().contains_key("hang") {
        tokio::task::yield_now().await;
    }
    let cancel = SearchFrame { frame: Some(search_frame::Frame::Cancel(CancelSubQuery { id: "2".into() })) };
    tx.send(cancel).unwrap();
    assert_eq!(dones(&mut stream, 1).await.get("2"), Some(&SourceState::Skipped));

    // The stream is still open: both sub-queries are counted, the call is not.
    assert_eq!(sub_queries("ok"), ok_before + 1.0);
    assert_eq!(sub_queries("skipped"), skipped_before + 1.0, "a cancelled sub-query is counted too");
    assert_eq!(search_calls(), before, "an open stream is no finished call");

    // Half-closed, the stream ends once nothing runs on it: recorded (with its status, OK) as
    // its trailers pass, so before the client reads its end.
    drop(tx);
    while stream.message().await.expect("the stream ends cleanly").is_some() {}
    assert_eq!(search_calls(), before + 1.0, "the stream is recorded when it ends");
    let ok =
        series(&fedsearch_core::metrics::render(), CALLS, &["rpc_method=\"Search\"", "rpc_grpc_status_code=\"0\""]);
    assert!(ok >= 1.0, "recorded as OK");
}
