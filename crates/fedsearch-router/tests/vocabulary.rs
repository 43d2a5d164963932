//! Source selection by what the adapters' `Describe` says their sources hold: the router asks
//! at start-up, merges the vocabulary into each profile and routes a question that names only a
//! customer to the one source that holds the name — without the name ever appearing in the
//! answer's routing reasons.

mod common;

use common::*;
use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SourceDescription, SubQuery,
    testing::make_hits,
    vocabulary::{VocabularyKind, VocabularyState, term},
};

/// Two sources on one adapter: `orders` holds the customer Kessler Maschinenbau, `tickets`
/// only ticket titles. Their descriptions name neither.
struct Holding;

impl Adapter for Holding {
    fn describe(&self) -> DescribeResponse {
        let ready = |name: &str, vocabulary| SourceDescription {
            name: name.into(),
            kind: "scripted".into(),
            vocabulary,
            vocabulary_state: VocabularyState::Ready as i32,
            ..Default::default()
        };
        DescribeResponse {
            adapter: "holding".into(),
            sources: vec![
                ready("orders", vec![term("kessler maschinenbau", VocabularyKind::Entity, "customers", 1)]),
                ready("tickets", vec![term("Printer paper delivery date", VocabularyKind::Term, "title", 1)]),
            ],
        }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        sink.send(make_hits(&query.source, 2)).await;
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
}

#[tokio::test]
async fn a_question_naming_only_a_customer_one_source_holds_routes_there() {
    let adapter = start_adapter(Holding).await;
    let router = start_router(&router_yaml(
        &[("orders", &adapter.url(), ""), ("tickets", &adapter.url(), ""), ("wiki", &adapter.url(), "")],
        "selection: { mode: scored }",
    ))
    .await;
    let mut c = client(&router).await;
    let t = token("alice", &[]);
    // Start-up waited for the first Describe answers, so the first question already uses them.
    let resp = c.search(authed(query("Was Kessler Maschinenbau charged twice?"), &t)).await.unwrap().into_inner();
    let routing = resp.routing.unwrap();
    assert_eq!(routing.strategy, "scored", "{routing:?}");
    let selected: Vec<&str> = routing.selected.iter().map(|r| r.source.as_str()).collect();
    assert_eq!(selected, ["orders"], "{routing:?}");
    let reasons: String =
        routing.selected.iter().chain(&routing.not_selected).map(|r| r.reason.to_lowercase() + "; ").collect();
    assert!(!reasons.contains("maschinenbau"), "the vocabulary never appears in a reason: {reasons}");
    assert!(reasons.contains("holds a name"), "{reasons}");
    // A question about something no source holds or describes still asks everyone.
    let resp = c.search(authed(query("weather tomorrow"), &t)).await.unwrap().into_inner();
    assert_eq!(resp.routing.unwrap().strategy, "fallback_all");
}

#[tokio::test]
async fn a_source_switched_off_keeps_its_config_only_profile() {
    let adapter = start_adapter(Holding).await;
    let router = start_router(&router_yaml(
        &[("orders", &adapter.url(), "routing: { vocabulary: false }"), ("tickets", &adapter.url(), "")],
        "selection: { mode: scored }",
    ))
    .await;
    let mut c = client(&router).await;
    let resp = c
        .search(authed(query("Was Kessler Maschinenbau charged twice?"), &token("alice", &[])))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.routing.unwrap().strategy, "fallback_all", "orders' names are not used");
}
