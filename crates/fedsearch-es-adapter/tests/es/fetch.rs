//! Fetch: full text by reference, with the permission filter re-checked at fetch time.

use fedsearch_proto::types::Filters;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn fetch_returns_the_full_document_of_a_search_hit() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let out = search_one(&mut s.client, sub_query("q", "kb", "支付超时", "carol", Filters::default())).await.ok();
    let hit = out.hits.first().expect("a kb hit");
    let doc = fetch(&mut s.client, "kb", &hit.full_text_ref, "carol").await.unwrap();
    let seed = seed_docs().into_iter().find(|d| d.id == hit.local_id).unwrap();
    assert_eq!(doc.id, seed.id);
    assert_eq!(doc.title, seed.title);
    assert_eq!(doc.content, seed.body, "fetch returns the whole body");
    assert_eq!(doc.doc_type, "kb");
    assert_eq!(doc.url, hit.url);
    assert!(doc.updated_at.is_some());
}

#[tokio::test]
async fn fetch_refuses_a_document_the_user_may_not_read() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let err = fetch(&mut s.client, "tickets", "tickets/TCK-5002", "carol").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err:?}");
    assert!(!err.message().contains("支付"), "nothing of the document leaks: {}", err.message());
    assert!(fetch(&mut s.client, "tickets", "tickets/TCK-5002", "dave").await.is_ok());
}

#[tokio::test]
async fn fetch_of_a_missing_document_is_not_found() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let err = fetch(&mut s.client, "tickets", "tickets/TCK-0000", "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");
}

#[tokio::test]
async fn fetch_refuses_references_outside_the_source() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    // A public-source reference pointing into another index must not read that index.
    let err = fetch(&mut s.client, "kb", "tickets/TCK-5002", "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    let err = fetch(&mut s.client, "kb", "*/TCK-5002", "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    let err = fetch(&mut s.client, "nope", "kb/KB-101", "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
}

#[tokio::test]
async fn fetch_rechecks_permissions_changed_after_the_search() {
    let url = opensearch_url();
    let original =
        doc("RECHECK-1", "Chargeback for order SO20269999", "Customer disputes the chargeback.", &["support"]);
    let scratch = ScratchIndex::create(&url, "recheck", std::slice::from_ref(&original)).await;
    let extra = scratch_source("scratch", &scratch.name, r#"["title^3", "body"]"#);
    let mut s = serve(&config(&url, &extra)).await;

    let out =
        search_one(&mut s.client, sub_query("q", "scratch", "chargeback", "alice", Filters::default())).await.ok();
    assert_eq!(out.ids(), ["RECHECK-1"]);
    let reference = out.hits[0].full_text_ref.clone();
    assert!(fetch(&mut s.client, "scratch", &reference, "alice").await.is_ok());

    // The document moves to finance after the search.
    let mut moved = original.clone();
    moved["allowed_groups"] = json!(["finance"]);
    scratch.put(&moved).await;

    let err = fetch(&mut s.client, "scratch", &reference, "alice").await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err:?}");
    assert!(fetch(&mut s.client, "scratch", &reference, "bob").await.is_ok(), "finance may read it now");
    let again =
        search_one(&mut s.client, sub_query("q", "scratch", "chargeback", "alice", Filters::default())).await.ok();
    assert!(again.hits.is_empty(), "the search no longer returns it either");
}
