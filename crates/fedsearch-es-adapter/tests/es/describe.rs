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
