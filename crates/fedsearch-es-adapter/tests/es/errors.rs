//! Cluster-side failures become safe per-source errors, never a crash.

use fedsearch_proto::types::{Filters, SourceState};

use crate::common::*;

#[tokio::test]
async fn a_missing_index_is_failed_precondition() {
    let url = opensearch_url();
    let missing = format!("es-adapter-test-missing-{}", std::process::id());
    let extra = scratch_source("ghost", &missing, r#"["title", "body"]"#);
    let mut s = serve(&config(&url, &extra)).await;
    let out = search_one(&mut s.client, sub_query("q", "ghost", "refund", "alice", Filters::default())).await;
    assert_eq!(out.state(), SourceState::Error);
    assert_eq!(out.code(), "FAILED_PRECONDITION");
    assert_eq!(out.message(), "the index of source `ghost` does not exist");
    let err = fetch(&mut s.client, "ghost", &format!("{missing}/X"), "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
}

#[tokio::test]
async fn a_query_the_mapping_rejects_is_failed_precondition() {
    let url = opensearch_url();
    // Text search over a date field: the cluster refuses to parse "refund" as a date.
    let extra = scratch_source("badmap", "tickets", r#"["updated_at"]"#);
    let mut s = serve(&config(&url, &extra)).await;
    let out = search_one(&mut s.client, sub_query("q", "badmap", "refund", "alice", Filters::default())).await;
    assert_eq!(out.code(), "FAILED_PRECONDITION", "{}", out.message());
    assert!(!out.message().contains("127.0.0.1"), "{}", out.message());
    // The adapter keeps serving.
    let ok = search_one(&mut s.client, sub_query("q", "tickets", "refund", "alice", Filters::default())).await;
    assert_eq!(ok.state(), SourceState::Ok);
}

#[tokio::test]
async fn an_unknown_source_is_invalid_argument() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let out = search_one(&mut s.client, sub_query("q", "nope", "refund", "alice", Filters::default())).await;
    assert_eq!(out.code(), "INVALID_ARGUMENT");
    assert!(out.message().contains("nope"));
}
