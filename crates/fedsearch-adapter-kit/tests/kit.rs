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
            "fail" => Err(AdapterError::Unavailable("backend unreachable".into())),
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
    let config = ServerConfig {
        listen: addr,
        shutdown_grace: Duration::from_millis(100),
        max_concurrent_subqueries: 8,
        default_timeout: Duration::from_secs(5),
    };
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
