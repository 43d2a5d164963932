//! The `Fusion.Fuse` stream protocol over real gRPC: the service on 127.0.0.1:0 in-process, the
//! generated client.

use std::net::SocketAddr;

use fedsearch_fusion::FusionConfig;
use fedsearch_proto::{
    fusion::{
        FuseInput, FuseOutput, FuseStart, FusedList, SourceBatch, SourceEnd, SourceSpec, fuse_input::Input,
        fuse_output::Output, fusion_client::FusionClient,
    },
    types::{SourceHit, SourceState},
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming, transport::Channel};

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Server {
    async fn start() -> Self {
        let config: FusionConfig =
            fedsearch_core::config::from_yaml_str("server:\n  listen: 127.0.0.1:0\n  shutdown_grace: 1s\n").unwrap();
        let listener = tokio::net::TcpListener::bind(config.server.listen).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            fedsearch_fusion::serve(listener, &config, async {
                let _ = stopped.await;
            })
            .await
        });
        Self { addr, stop: Some(stop), task }
    }

    async fn client(&self) -> FusionClient<Channel> {
        FusionClient::connect(format!("http://{}", self.addr)).await.unwrap()
    }

    async fn stop(mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        self.task.await.unwrap().unwrap();
    }
}

fn start(sources: &[&str], snapshots: bool) -> FuseInput {
    FuseInput {
        input: Some(Input::Start(FuseStart {
            options: None,
            top_k: 10,
            sources: sources
                .iter()
                .map(|s| SourceSpec { source: s.to_string(), weight: 1.0, ..Default::default() })
                .collect(),
            snapshots,
        })),
    }
}

fn batch(source: &str, ids: &[&str]) -> FuseInput {
    let hits = ids
        .iter()
        .enumerate()
        .map(|(i, id)| SourceHit {
            local_id: id.to_string(),
            rank: i as u32 + 1,
            url: format!("https://docs.example.com/{id}"),
            ..Default::default()
        })
        .collect();
    FuseInput { input: Some(Input::Batch(SourceBatch { source: source.into(), hits })) }
}

fn end(source: &str) -> FuseInput {
    FuseInput { input: Some(Input::End(SourceEnd { source: source.into(), state: SourceState::Ok as i32 })) }
}

/// Opens a stream whose inputs the test sends one by one.
async fn open(client: &mut FusionClient<Channel>) -> (mpsc::Sender<FuseInput>, Streaming<FuseOutput>) {
    let (tx, rx) = mpsc::channel(16);
    let response = client.fuse(ReceiverStream::new(rx)).await.unwrap();
    (tx, response.into_inner())
}

async fn next_output(out: &mut Streaming<FuseOutput>) -> Output {
    out.message().await.unwrap().expect("the stream ended early").output.unwrap()
}

fn ids(list: &FusedList) -> Vec<&str> {
    list.hits.iter().map(|h| h.id.as_str()).collect()
}

#[tokio::test]
async fn snapshots_follow_each_end_and_one_result_closes_the_stream() {
    let server = Server::start().await;
    let mut client = server.client().await;
    let (tx, mut out) = open(&mut client).await;
    tx.send(start(&["kb", "tickets"], true)).await.unwrap();
    tx.send(batch("tickets", &["T1", "shared"])).await.unwrap();
    tx.send(batch("kb", &["shared"])).await.unwrap();
    tx.send(end("tickets")).await.unwrap();
    // The snapshot arrives while the stream is still open.
    let Output::Snapshot(first) = next_output(&mut out).await else { panic!("expected a snapshot") };
    assert_eq!(first.sources_done, vec!["tickets"]);
    assert_eq!(ids(&first), vec!["kb:shared", "tickets:T1"]);
    assert_eq!(first.duplicates_merged, 1);
    tx.send(batch("kb", &["K2"])).await.unwrap();
    tx.send(end("kb")).await.unwrap();
    let Output::Snapshot(second) = next_output(&mut out).await else { panic!("expected a snapshot") };
    assert_eq!(second.sources_done, vec!["kb", "tickets"]);
    assert_eq!(second.hits.len(), 3);
    drop(tx);
    let Output::Result(result) = next_output(&mut out).await else { panic!("expected the result") };
    assert_eq!(result, second);
    let merged = &result.hits[0];
    assert_eq!(merged.duplicates[0].id, "tickets:shared");
    assert!(merged.explanation.as_ref().unwrap().summary.starts_with("rrf k=60: kb#1"));
    assert!(out.message().await.unwrap().is_none(), "exactly one result, then the end");
    server.stop().await;
}

#[tokio::test]
async fn without_snapshots_only_the_result_is_sent() {
    let server = Server::start().await;
    let mut client = server.client().await;
    let inputs = vec![start(&["a", "b"], false), batch("a", &["1"]), end("a"), batch("b", &["2"]), end("b"), end("b")];
    let mut out = client.fuse(tokio_stream::iter(inputs)).await.unwrap().into_inner();
    let Output::Result(result) = next_output(&mut out).await else { panic!("expected the result") };
    assert_eq!(ids(&result), vec!["a:1", "b:2"]);
    assert!(out.message().await.unwrap().is_none());
    server.stop().await;
}

/// Sends `inputs`, half-closes, and returns the status the stream ended with.
async fn refused(client: &mut FusionClient<Channel>, inputs: Vec<FuseInput>) -> tonic::Status {
    let mut out = client.fuse(tokio_stream::iter(inputs)).await.unwrap().into_inner();
    loop {
        match out.message().await {
            Ok(Some(FuseOutput { output: Some(Output::Snapshot(_)) })) => continue,
            Ok(other) => panic!("expected an error, got {other:?}"),
            Err(status) => return status,
        }
    }
}

#[tokio::test]
async fn protocol_violations_are_invalid_argument() {
    let server = Server::start().await;
    let mut client = server.client().await;
    let bad_start = FuseInput { input: Some(Input::Start(FuseStart { top_k: 99, ..Default::default() })) };
    let no_local_id =
        FuseInput { input: Some(Input::Batch(SourceBatch { source: "a".into(), hits: vec![SourceHit::default()] })) };
    let cases: Vec<(&str, Vec<FuseInput>, &str)> = vec![
        ("batch first", vec![batch("a", &["1"])], "must start with a FuseStart"),
        ("empty stream", vec![], "must start with a FuseStart"),
        ("undeclared source", vec![start(&["a"], false), batch("other", &["1"])], "`other` was not declared"),
        ("undeclared end", vec![start(&["a"], false), end("other")], "`other` was not declared"),
        ("second start", vec![start(&["a"], false), start(&["a"], false)], "only be sent once"),
        ("batch after end", vec![start(&["a"], true), end("a"), batch("a", &["1"])], "after its end"),
        ("bad top_k", vec![bad_start], "top_k"),
        ("missing local_id", vec![start(&["a"], false), no_local_id], "local_id"),
    ];
    for (name, inputs, message) in cases {
        let status = refused(&mut client, inputs).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{name}: {status:?}");
        assert!(status.message().contains(message), "{name}: {}", status.message());
    }
    // The service keeps serving after refusals.
    let mut out =
        client.fuse(tokio_stream::iter(vec![start(&["a"], false), batch("a", &["1"])])).await.unwrap().into_inner();
    assert!(matches!(next_output(&mut out).await, Output::Result(r) if r.hits.len() == 1));
    server.stop().await;
}

#[tokio::test]
async fn too_many_hits_are_refused() {
    let server = Server::start().await;
    let mut client = server.client().await;
    let ids: Vec<String> = (0..fedsearch_fusion::service::MAX_HITS_PER_STREAM + 1).map(|i| i.to_string()).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let status = refused(&mut client, vec![start(&["a"], false), batch("a", &ids)]).await;
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("hits in one fusion stream"), "{}", status.message());
    server.stop().await;
}
