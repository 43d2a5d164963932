//! Relevance basics: English and Chinese queries find the payment-timeout tickets, boosts
//! change the order, hits are well formed.

use std::collections::BTreeSet;

use fedsearch_proto::types::Filters;

use crate::common::*;

/// Visible tickets tagged payment_timeout: what a payment-timeout query must rank first.
fn payment_timeout_tickets(subject: &str) -> BTreeSet<String> {
    let docs = seed_docs();
    id_set(
        docs.iter()
            .filter(|d| d.index == "tickets" && d.tags.iter().any(|t| t == "payment_timeout") && d.visible_to(subject)),
    )
}

async fn top_ids(text: &str) -> (Vec<String>, BTreeSet<String>) {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let out = search_one(&mut s.client, sub_query("q", "tickets", text, "alice", Filters::default())).await.ok();
    let expected = payment_timeout_tickets("alice");
    assert_eq!(expected.len(), 3, "seed data changed: {expected:?}");
    (out.ids(), expected)
}

#[tokio::test]
async fn english_payment_timeout_ranks_the_payment_timeout_tickets_first() {
    let (ids, expected) = top_ids("payment timeout").await;
    let top: BTreeSet<String> = ids.iter().take(expected.len()).cloned().collect();
    assert_eq!(top, expected, "got {ids:?}");
}

#[tokio::test]
async fn chinese_payment_timeout_ranks_the_payment_timeout_tickets_first() {
    let (ids, expected) = top_ids("支付超时").await;
    let top: BTreeSet<String> = ids.iter().take(expected.len()).cloned().collect();
    assert_eq!(top, expected, "got {ids:?}");
}

#[tokio::test]
async fn hits_are_ranked_cited_and_carry_short_plain_snippets() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let out = search_one(&mut s.client, sub_query("q", "tickets", "支付超时", "alice", Filters::default())).await.ok();
    assert!(!out.hits.is_empty());
    assert_eq!(out.done.as_ref().unwrap().hit_count as usize, out.hits.len());
    let seeds = seed_docs();
    for (i, h) in out.hits.iter().enumerate() {
        assert_eq!(h.rank as usize, i + 1);
        assert_eq!(h.full_text_ref, format!("tickets/{}", h.local_id));
        assert_eq!(h.doc_type, "ticket");
        assert!(h.updated_at.is_some(), "{h:?}");
        assert!(h.url.starts_with("https://helpdesk."), "{}", h.url);
        assert!(h.score.is_some());
        assert!(h.metadata.contains_key("status"), "{:?}", h.metadata);
        let seed = seeds.iter().find(|d| d.id == h.local_id).unwrap();
        assert_eq!(h.title, seed.title);
        let n = h.snippet.chars().count();
        assert!(n > 0 && n <= 200, "snippet of {} has {n} chars", h.local_id);
        assert!(!h.snippet.contains("<em>") && !h.snippet.contains('\n'), "{}", h.snippet);
        if seed.body.chars().count() > 200 {
            assert!(n < seed.body.chars().count(), "snippet is the whole body of {}", h.local_id);
        }
    }
    // The best hit's snippet shows the matched passage.
    assert!(out.hits[0].snippet.contains("支付") || out.hits[0].snippet.contains("超时"), "{}", out.hits[0].snippet);
}

#[tokio::test]
async fn boosts_change_the_order_as_configured() {
    let url = opensearch_url();
    let scratch = ScratchIndex::create(
        &url,
        "boost",
        &[
            doc(
                "B-TITLE",
                "Courier escalation",
                "A customer asked about a parcel that did not arrive yet.",
                &["support"],
            ),
            doc(
                "B-BODY",
                "Parcel question",
                "The courier escalation team will contact the customer today.",
                &["support"],
            ),
        ],
    )
    .await;
    let extra = format!(
        "{}{}",
        scratch_source("title_boosted", &scratch.name, r#"["title^10", "body"]"#),
        scratch_source("body_boosted", &scratch.name, r#"["title", "body^10"]"#)
    );
    let mut s = serve(&config(&url, &extra)).await;
    let q = |id: &str, source: &str| sub_query(id, source, "courier escalation", "alice", Filters::default());
    let mut out = search(&mut s.client, vec![q("t", "title_boosted"), q("b", "body_boosted")]).await;
    let title_first = out.remove("t").unwrap().ok().ids();
    let body_first = out.remove("b").unwrap().ok().ids();
    assert_eq!(title_first, ["B-TITLE", "B-BODY"]);
    assert_eq!(body_first, ["B-BODY", "B-TITLE"]);
}
