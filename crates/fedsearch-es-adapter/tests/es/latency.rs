//! Deadlines and latency of a search round trip through the real gRPC service.

use std::time::{Duration, Instant, SystemTime};

use fedsearch_proto::types::{Filters, SourceState};

use crate::common::*;

#[tokio::test]
async fn a_deadline_that_already_passed_ends_as_timeout() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let mut q = sub_query("q", "tickets", "payment timeout", "alice", Filters::default());
    q.deadline = Some(fedsearch_core::time::to_timestamp(SystemTime::now() - Duration::from_secs(1)));
    let out = search_one(&mut s.client, q).await;
    assert_eq!(out.state(), SourceState::Timeout, "{} {}", out.code(), out.message());
    assert!(out.hits.is_empty());
}

#[tokio::test]
async fn search_round_trip_latency_stays_low() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let texts = ["payment timeout", "支付超时", "refund", "SO20261001", "拒收手续费"];
    for t in texts {
        search_one(&mut s.client, sub_query("warm", "tickets", t, "alice", Filters::default())).await.ok();
    }
    let mut samples = Vec::new();
    for i in 0..200 {
        let source = ["tickets", "incidents", "kb"][i % 3];
        let started = Instant::now();
        search_one(&mut s.client, sub_query("q", source, texts[i % texts.len()], "alice", Filters::default()))
            .await
            .ok();
        samples.push(started.elapsed());
    }
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    eprintln!(
        "search round trip over gRPC, 200 sequential sub-queries: p50 {:?}, p95 {:?}, p99 {:?}, max {:?}",
        p(0.5),
        p(0.95),
        p(0.99),
        samples[samples.len() - 1]
    );
    assert!(p(0.99) < Duration::from_millis(500), "p99 {:?}", p(0.99));
}
