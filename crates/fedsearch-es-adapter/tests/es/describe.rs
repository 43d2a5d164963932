//! Describe over gRPC: the shipped config's three sources with their filters and doc types.

use fedsearch_proto::adapter::DescribeRequest;

use crate::common::*;

#[tokio::test]
async fn describe_lists_the_shipped_sources() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let d = s.client.describe(DescribeRequest {}).await.unwrap().into_inner();
    assert_eq!(d.adapter, "es-adapter");
    let names: Vec<_> = d.sources.iter().map(|s| (s.name.as_str(), s.doc_types.join(","))).collect();
    assert_eq!(names, [("tickets", "ticket".to_string()), ("incidents", "incident".into()), ("kb", "kb".into())]);
    for src in &d.sources {
        assert_eq!(src.kind, "elasticsearch");
        assert_eq!(src.supported_filters, ["time_range", "doc_types", "tags", "equals"]);
    }
}

/// What each index holds, read in the background with the adapter's credentials: keyword
/// values of `filterable_fields` and document titles (for the router's source selection only).
#[tokio::test]
async fn describe_says_what_each_index_holds() {
    use fedsearch_proto::adapter::{VocabularyKind, VocabularyState};
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let mut described = None;
    for _ in 0..600 {
        let d = s.client.describe(DescribeRequest {}).await.unwrap().into_inner();
        if d.sources.iter().all(|s| s.vocabulary_state() != VocabularyState::Pending) {
            described = Some(d);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let d = described.expect("every index is read within 30 s");
    let tickets = d.sources.iter().find(|s| s.name == "tickets").unwrap();
    assert_eq!(tickets.vocabulary_state(), VocabularyState::Ready);
    let has = |field: &str, text: &str| tickets.vocabulary.iter().any(|t| t.field == field && t.text == text);
    assert!(has("title", "订单SO20261001未发货，客户张伟询问原因"), "{:?}", tickets.vocabulary);
    assert!(has("customer_id", "C1001"), "{:?}", tickets.vocabulary);
    assert!(tickets.vocabulary.iter().all(|t| t.kind() == VocabularyKind::Term));
    assert!(tickets.vocabulary.len() <= fedsearch_adapter_kit::vocabulary::MAX_TERMS);
}
