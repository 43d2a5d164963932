//! A measurement, not a check run by default: search latency through the adapter's gRPC service
//! against the real DokuWiki. Run with
//! `cargo test -p fedsearch-wiki-adapter --test wiki latency -- --ignored --nocapture`.

use std::time::Instant;

use fedsearch_proto::types::SourceState;

use crate::common::*;

/// Prints p50 / p95 / max of latency samples in milliseconds.
fn report(label: &str, mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    println!("{label}, n={}: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms", samples.len(), pct(0.5), pct(0.95), pct(1.0));
}

#[tokio::test]
#[ignore = "measurement; run explicitly"]
async fn search_latency_through_grpc() {
    let mut served = serve(shared_config()).await;
    let queries = ["支付超时", "退货 拒收 手续费", "refund", "\"rejection fee\""];
    let mut samples = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        let (_, done) =
            search(&mut served.client, queries[i % queries.len()], ["alice", "bob", "carol", "dave"][i % 4]).await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    }
    report("wiki search via grpc", samples);
}

#[tokio::test]
#[ignore = "measurement; run explicitly"]
async fn dokuwiki_search_latency_without_grpc() {
    let url = required_env("DOKUWIKI_URL");
    let path = required_env("DOKUWIKI_SECRETS");
    let creds =
        fedsearch_wiki_adapter::identity::parse_secrets(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let wiki = fedsearch_wiki_adapter::dokuwiki::DokuWiki::new(&url, reqwest::Client::builder().build().unwrap());
    let mut samples = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        let found =
            wiki.search(&creds["bob"], ["支付超时", "refund"][i % 2], std::time::Duration::from_secs(5)).await.unwrap();
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(!found.is_empty());
    }
    report("dokuwiki.search direct", samples);
}

/// Same as [`search_latency_through_grpc`], but served with TCP_NODELAY on accepted sockets
/// (which `fedsearch_core::grpc::serve` does not set): isolates the ~40 ms Nagle/delayed-ACK
/// stall on the gRPC hop.
#[tokio::test]
#[ignore = "measurement; run explicitly"]
async fn search_latency_through_grpc_with_nodelay() {
    let config = shared_config();
    let adapter = fedsearch_wiki_adapter::WikiAdapter::build(&config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let service =
        fedsearch_adapter_kit::AdapterService::new(adapter, 16, std::time::Duration::from_secs(5)).into_server();
    tokio::spawn(tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming));
    let mut client =
        fedsearch_proto::adapter::source_adapter_client::SourceAdapterClient::connect(format!("http://{addr}"))
            .await
            .unwrap();
    let mut samples = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        let (_, done) = search(&mut client, ["支付超时", "refund"][i % 2], "bob").await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    }
    report("wiki search via grpc (nodelay)", samples);
}

/// A whole English question: up to six DokuWiki searches at once, merged, plus the page reads
/// for version metadata (cached per page id and mtime after the first round).
#[tokio::test]
#[ignore = "measurement; run explicitly"]
async fn long_question_latency_through_grpc() {
    let mut served = serve(shared_config()).await;
    let question = "What is the rejection fee when a customer refuses a delivery under the return policy?";
    let mut samples = Vec::new();
    for i in 0..100 {
        let started = Instant::now();
        let (hits, done) = search(&mut served.client, question, ["bob", "carol"][i % 2]).await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
        assert!(!hits.is_empty());
    }
    report("long question via grpc", samples);
}
