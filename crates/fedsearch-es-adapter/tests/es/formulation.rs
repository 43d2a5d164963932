//! Query formulation against the real node: the question is kept, nothing is all-terms-or-
//! nothing, terms carry other-language synonyms, entities pin the exact document, and version
//! fields become `SourceHit.version`. Also the measurement behind the default `match_type`.

use fedsearch_proto::{
    adapter::SubQuery,
    types::{Filters, VersionInfo},
};
use serde_json::{Value, json};

use crate::common::*;

/// A scratch source with the shipped tickets' search fields and `minimum_should_match`.
fn source_yaml(name: &str, index: &str, match_type: &str, extra: &str) -> String {
    let fields = r#"["title^3", "title.cjk^3", "body", "body.cjk"]"#;
    format!(
        "{}    minimum_should_match: \"2<30%\"\n    match_type: {match_type}{extra}\n",
        scratch_source(name, index, fields)
    )
}

/// Documents for the formulation checks, each with words the others do not share.
fn docs() -> Vec<Value> {
    vec![
        doc("F-SPLIT", "Warehouse robot stuck", "The picking line halted after a firmware update.", &["support"]),
        doc(
            "F-LONG",
            "Parcel tracking lost",
            "Carrier scan missing: the parcel vanished between two hubs.",
            &["support"],
        ),
        doc("F-ZH", "退款到账时间说明", "退款审核通过后原路退回，一般三到五个工作日到账。", &["support"]),
        doc("F-NOISE", "Invoice layout", "Invoices show the tax number and the billing address.", &["support"]),
    ]
}

fn question(id: &str, source: &str, text: &str) -> SubQuery {
    SubQuery { original_text: text.into(), ..sub_query(id, source, text, "alice", Filters::default()) }
}

#[tokio::test]
async fn a_question_split_between_title_and_body_is_found_and_only_cross_fields_finds_it() {
    let url = opensearch_url();
    let scratch = ScratchIndex::create(&url, "split", &docs()).await;
    let types = ["cross_fields", "most_fields", "best_fields", "phrase"];
    let extra: String = types.iter().map(|t| source_yaml(t, &scratch.name, t, "")).collect();
    let mut s = serve(&config(&url, &extra)).await;
    // "warehouse" is only in the title, "firmware" only in the body.
    // Also inside a longer question (9 words, 2 in any document: `2<30%` asks for 2).
    for text in ["warehouse firmware", "why is our warehouse firmware suddenly broken again today"] {
        let queries = types.iter().map(|t| question(t, t, text)).collect();
        let mut out = search(&mut s.client, queries).await;
        let mut found = |t: &str| out.remove(t).unwrap().ok().ids();
        assert_eq!(found("cross_fields"), ["F-SPLIT"], "{text}");
        // The measurement behind the default (config::MatchType): minimum_should_match applies
        // per field for these, and no one field holds both words.
        for other in ["most_fields", "best_fields", "phrase"] {
            assert!(!found(other).contains(&"F-SPLIT".to_string()), "{other} found {text:?}");
        }
    }
}

#[tokio::test]
async fn a_long_question_still_returns_the_document_of_its_key_words() {
    let url = opensearch_url();
    let scratch = ScratchIndex::create(&url, "long", &docs()).await;
    let mut s = serve(&config(&url, &source_yaml("scratch", &scratch.name, "cross_fields", ""))).await;
    // 13 words, 2 of them (parcel, vanished) in any document: fewer than `2<30%` asks of the
    // question alone, so the router's key terms carry it.
    let text = "Could somebody kindly explain why our customer's parcel apparently vanished overnight near Munich";
    assert!(text.split_whitespace().count() >= 8);
    let alone = search_one(&mut s.client, question("alone", "scratch", text)).await.ok();
    let with_terms = SubQuery {
        terms: ["explain", "customer", "parcel", "apparently", "vanished", "overnight", "munich"]
            .map(String::from)
            .to_vec(),
        ..question("terms", "scratch", text)
    };
    let out = search_one(&mut s.client, with_terms).await.ok();
    assert_eq!(out.ids().first().map(String::as_str), Some("F-LONG"), "got {:?}", out.ids());
    assert!(!out.ids().contains(&"F-ZH".to_string()), "{:?}", out.ids());
    // The question alone must not do worse than the terms: if it finds anything, F-LONG leads.
    if let Some(first) = alone.ids().first() {
        assert_eq!(first, "F-LONG", "question alone: {:?}", alone.ids());
    }

    // A shorter long question whose key words meet `2<30%` is found from the question alone.
    let text = "why has the parcel apparently vanished from tracking";
    let out = search_one(&mut s.client, question("short", "scratch", text)).await.ok();
    assert_eq!(out.ids().first().map(String::as_str), Some("F-LONG"), "got {:?}", out.ids());
}

#[tokio::test]
async fn a_chinese_synonym_in_terms_finds_a_chinese_only_document_for_an_english_question() {
    let url = opensearch_url();
    let scratch = ScratchIndex::create(&url, "zh", &docs()).await;
    let mut s = serve(&config(&url, &source_yaml("scratch", &scratch.name, "cross_fields", ""))).await;
    let text = "How long until a refund reaches the account?";
    let english_only = search_one(&mut s.client, question("en", "scratch", text)).await.ok();
    assert!(!english_only.ids().contains(&"F-ZH".to_string()), "{:?}", english_only.ids());

    let q =
        SubQuery { terms: vec!["refund".into(), "退款".into(), "account".into()], ..question("zh", "scratch", text) };
    let out = search_one(&mut s.client, q).await.ok();
    assert_eq!(out.ids().first().map(String::as_str), Some("F-ZH"), "got {:?}", out.ids());
}

#[tokio::test]
async fn other_forms_of_an_english_word_find_a_document_on_an_index_without_stemming() {
    let url = opensearch_url();
    let mut docs = docs();
    docs.push(doc("F-FORMS", "Container roof leak", "Hanseatic Surveyors confirmed the water damage.", &["support"]));
    let scratch = ScratchIndex::create(&url, "forms", &docs).await;
    let off = source_yaml("off", &scratch.name, "cross_fields", "");
    let on = source_yaml("on", &scratch.name, "cross_fields", "\n    inflection_boost: 1");
    let mut s = serve(&config(&url, &format!("{off}{on}"))).await;
    // The `standard` analyzer keeps "surveyor" and "Surveyors", "damaged" and "damage" apart.
    let text = "which surveyor looks at damaged goods";
    let asked = |source: &str| SubQuery {
        terms: ["surveyor", "damaged", "goods"].map(String::from).to_vec(),
        ..question(source, source, text)
    };
    let without = search_one(&mut s.client, asked("off")).await.ok();
    assert!(!without.ids().contains(&"F-FORMS".to_string()), "{:?}", without.ids());
    let with = search_one(&mut s.client, asked("on")).await.ok();
    assert_eq!(with.ids().first().map(String::as_str), Some("F-FORMS"), "got {:?}", with.ids());
    assert!(with.hits[0].snippet.contains("Surveyors"), "the form found is shown: {}", with.hits[0].snippet);
}

#[tokio::test]
async fn an_entity_on_an_id_field_ranks_its_document_first() {
    let url = opensearch_url();
    let mut wordy = doc(
        "E-WORDY",
        "Refund for SO20269901 delayed",
        "The customer asks again about the refund for SO20269901; the refund for SO20269901 is late.",
        &["support"],
    );
    wordy["order_no"] = json!([]);
    let mut exact = doc("E-EXACT", "Order question", "A customer wrote about an order.", &["support"]);
    exact["order_no"] = json!(["SO20269901"]);
    let mut other = doc("E-OTHER", "Refund question", "A refund for another order.", &["support"]);
    other["order_no"] = json!(["SO20269902"]);
    let scratch = ScratchIndex::create(&url, "entity", &[wordy, exact, other]).await;
    let extra = format!(
        "{}{}",
        source_yaml("plain", &scratch.name, "cross_fields", ""),
        source_yaml("ids", &scratch.name, "cross_fields", "\n    id_fields: [order_no, related]")
    );
    let mut s = serve(&config(&url, &extra)).await;
    let q = |id: &str, source: &str| SubQuery {
        terms: vec!["SO20269901".into(), "refund".into()],
        entities: vec!["SO20269901".into()],
        ..question(id, source, "refund for SO20269901")
    };
    let mut out = search(&mut s.client, vec![q("plain", "plain"), q("ids", "ids")]).await;
    let plain = out.remove("plain").unwrap().ok().ids();
    let boosted = out.remove("ids").unwrap().ok().ids();
    assert_eq!(plain.first().map(String::as_str), Some("E-WORDY"), "without id_fields the text decides: {plain:?}");
    assert_eq!(boosted.first().map(String::as_str), Some("E-EXACT"), "{boosted:?}");
    assert_eq!(boosted[1], "E-WORDY", "text relevance still orders the rest: {boosted:?}");
}

#[tokio::test]
async fn version_fields_map_into_the_hit() {
    let url = opensearch_url();
    let version = |id: &str, edition: &str, state: &str, effective: Value, link: (&str, &str)| {
        let mut d = doc(id, &format!("Refund policy {edition}"), "Refunds are paid within five days.", &["support"]);
        d["policy"] = json!("refund-policy");
        d["edition"] = json!(edition);
        d["meta"] = json!({ "state": state, "effective": effective });
        d[link.0] = json!(link.1);
        d
    };
    let scratch = ScratchIndex::create(
        &url,
        "version",
        &[
            version("V-2025", "2025", "superseded", json!("2025-01-01"), ("replaced_by", "V-2026")),
            version("V-2026", "2026", "Current", json!("2026-01-01T00:00:00Z"), ("replaces", "V-2025")),
            doc("V-NONE", "Refund policy draft notes", "Refunds notes.", &["support"]),
        ],
    )
    .await;
    let fields = "\n    version_fields: { family: policy, label: edition, status: meta.state, \
                  effective_at: meta.effective, supersedes: replaces, superseded_by: replaced_by }";
    let mut s = serve(&config(&url, &source_yaml("scratch", &scratch.name, "cross_fields", fields))).await;
    let out = search_one(&mut s.client, question("v", "scratch", "refund policy")).await.ok();
    let version_of =
        |id: &str| out.hits.iter().find(|h| h.local_id == id).unwrap_or_else(|| panic!("{id}")).version.clone();
    let at = |s: &str| Some(fedsearch_core::time::parse_rfc3339(s).unwrap());
    assert_eq!(
        version_of("V-2025"),
        Some(VersionInfo {
            family: "refund-policy".into(),
            label: "2025".into(),
            effective_at: at("2025-01-01T00:00:00Z"),
            status: "superseded".into(),
            supersedes: String::new(),
            superseded_by: "V-2026".into(),
        })
    );
    assert_eq!(
        version_of("V-2026"),
        Some(VersionInfo {
            family: "refund-policy".into(),
            label: "2026".into(),
            effective_at: at("2026-01-01T00:00:00Z"),
            status: "current".into(),
            supersedes: "V-2025".into(),
            superseded_by: String::new(),
        })
    );
    assert_eq!(version_of("V-NONE"), None);
}
