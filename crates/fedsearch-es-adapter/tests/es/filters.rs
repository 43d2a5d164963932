//! Filters: time range, doc type, tags and equals each narrow the result set correctly.

use std::collections::{BTreeSet, HashMap};

use fedsearch_proto::types::{Filters, SourceState, TimeRange};

use crate::common::*;

async fn ids(s: &mut Served, source: &str, text: &str, filters: Filters) -> BTreeSet<String> {
    search_one(&mut s.client, sub_query("q", source, text, "alice", filters)).await.ok().id_set()
}

fn all_of(source: &str) -> Filters {
    let doc_type = match source {
        "tickets" => "ticket",
        "incidents" => "incident",
        _ => "kb",
    };
    Filters { doc_types: vec![doc_type.into()], ..Default::default() }
}

/// The tickets filter for the last 3 days as of the seed time (no seed document is within hours
/// of either bound), and the tickets alice may see in them.
async fn last_three_days(url: &str) -> (Filters, BTreeSet<String>) {
    let seeded = seeded_at(url).await;
    let range = TimeRange {
        from: Some(fedsearch_core::time::from_chrono(seeded - chrono::Duration::hours(72))),
        to: Some(fedsearch_core::time::from_chrono(seeded + chrono::Duration::hours(1))),
    };
    let inside =
        id_set(seed_docs().iter().filter(|d| d.index == "tickets" && d.visible_to("alice") && d.hours_ago <= 72));
    (Filters { time_range: Some(range), ..all_of("tickets") }, inside)
}

#[tokio::test]
async fn a_time_range_keeps_only_documents_inside_it() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let (filters, expected) = last_three_days(&url).await;
    let got = ids(&mut s, "tickets", "", filters).await;
    let everything = ids(&mut s, "tickets", "", all_of("tickets")).await;
    assert_eq!(got, expected);
    assert!(!got.is_empty() && got.len() < everything.len(), "{got:?} vs {everything:?}");
}

#[tokio::test]
async fn the_questions_own_window_ranks_its_documents_first_and_keeps_older_ones_that_match() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let seeds = seed_docs();
    let (filters, inside) = last_three_days(&url).await;
    // "payment timeout in the last three days": the window as the caller's filter
    let filtered =
        search_one(&mut s.client, sub_query("q", "tickets", "payment timeout", "alice", filters.clone())).await.ok();
    assert_eq!(filtered.id_set(), inside, "every ticket of the window, none older");
    // the same window read from the question: every ticket of it first, then older ones with the words
    let asked = fedsearch_proto::adapter::SubQuery {
        time_range_from_question: true,
        ..sub_query("q", "tickets", "payment timeout", "alice", filters)
    };
    let ranked = search_one(&mut s.client, asked).await.ok().ids();
    let first: BTreeSet<String> = ranked.iter().take(inside.len()).cloned().collect();
    assert_eq!(first, inside, "{ranked:?}");
    let older = &ranked[inside.len()..];
    assert!(older.iter().any(|id| id == "TCK-4990"), "15 days old, about a payment timeout: {ranked:?}");
    let shows_a_word = |id: &String| {
        seeds.iter().any(|d| {
            let text = format!("{} {}", d.title, d.body).to_lowercase();
            &d.id == id && (text.contains("payment") || text.contains("timeout"))
        })
    };
    assert!(older.iter().all(shows_a_word), "an older ticket only when it shows a word: {older:?}");
    let visible = |id: &String| seeds.iter().any(|d| &d.id == id && d.visible_to("alice"));
    assert!(older.iter().all(visible), "the permission filter holds outside the window too: {older:?}");
}

#[tokio::test]
async fn doc_types_keep_only_those_types() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let wrong = Filters { doc_types: vec!["incident".into()], ..Default::default() };
    assert!(ids(&mut s, "tickets", "payment timeout", wrong).await.is_empty());
    let right = Filters { doc_types: vec!["ticket".into(), "incident".into()], ..Default::default() };
    let unfiltered = ids(&mut s, "tickets", "payment timeout", Filters::default()).await;
    assert!(!unfiltered.is_empty());
    assert_eq!(ids(&mut s, "tickets", "payment timeout", right).await, unfiltered);
}

#[tokio::test]
async fn tags_require_every_listed_tag() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let seeds = seed_docs();
    let tags = ["payment_timeout", "payment_failed"];
    let filters = Filters { tags: tags.iter().map(|t| t.to_string()).collect(), ..Default::default() };
    let got = ids(&mut s, "tickets", "", filters).await;
    let expected = id_set(seeds.iter().filter(|d| {
        d.index == "tickets" && d.visible_to("alice") && tags.iter().all(|t| d.tags.iter().any(|x| x == t))
    }));
    let one_tag = ids(&mut s, "tickets", "", Filters { tags: vec![tags[0].into()], ..Default::default() }).await;
    assert_eq!(got, expected);
    assert!(!got.is_empty() && got.len() < one_tag.len(), "{got:?} vs {one_tag:?}");
}

#[tokio::test]
async fn equals_matches_an_allowed_field_exactly() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let seeds = seed_docs();
    let filters =
        |status: &str| Filters { equals: HashMap::from([("status".into(), status.into())]), ..Default::default() };
    let got = ids(&mut s, "tickets", "", filters("open")).await;
    let expected = id_set(seeds.iter().filter(|d| d.index == "tickets" && d.visible_to("alice") && d.status == "open"));
    let everything = ids(&mut s, "tickets", "", all_of("tickets")).await;
    assert_eq!(got, expected);
    assert!(!got.is_empty() && got.len() < everything.len());
}

#[tokio::test]
async fn an_equals_key_outside_the_allow_list_is_invalid_argument_naming_it() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let filters =
        Filters { equals: HashMap::from([("allowed_groups".into(), "support".into())]), ..Default::default() };
    let out = search_one(&mut s.client, sub_query("q", "tickets", "refund", "carol", filters)).await;
    assert_eq!(out.state(), SourceState::Error);
    assert_eq!(out.code(), "INVALID_ARGUMENT");
    assert!(out.message().contains("allowed_groups"), "{}", out.message());
    assert!(out.hits.is_empty());
}

#[tokio::test]
async fn empty_text_without_filters_is_invalid_argument() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let out = search_one(&mut s.client, sub_query("q", "kb", "  ", "carol", Filters::default())).await;
    assert_eq!(out.code(), "INVALID_ARGUMENT");
}

#[tokio::test]
async fn a_notice_that_names_a_day_of_the_questions_window_ranks_with_the_window() {
    let url = opensearch_url();
    let dated = |id: &str, title: &str, at: &str| {
        let mut d = doc(id, title, "Operations notice for customers.", &["support"]);
        d["updated_at"] = at.into();
        d
    };
    // "blank sailings this week", asked on Wednesday 1 July 2026 in Shanghai: 29 June – 1 July.
    let mut docs = vec![
        dated("N-WEEK27", "Blank sailing on the AE7 service, week 27", "2026-06-18T08:00:00Z"),
        dated("N-DAY", "海关系统 2026-06-30 夜间暂停申报", "2026-06-10T08:00:00Z"),
        dated("N-WEEK23", "Blank sailing on the NE2 service, week 23", "2026-05-20T08:00:00Z"),
        // Week 27 of another year: the words carry no year, the date does.
        dated("N-WEEK27-2025", "Blank sailing on the AE7 service, week 27", "2025-06-18T08:00:00Z"),
    ];
    // More documents of the window than the sub-query's limit, none about sailings.
    docs.extend((0..6).map(|i| dated(&format!("N-IN-{i}"), "Terminal gate hours", "2026-06-30T02:00:00Z")));
    let scratch = ScratchIndex::create(&url, "named-days", &docs).await;
    let fields = r#"["title^3", "title.cjk^3", "body", "body.cjk"]"#;
    let mut s = serve(&config(&url, &scratch_source("scratch", &scratch.name, fields))).await;
    let window = TimeRange {
        from: Some(prost_types::Timestamp { seconds: 1_782_662_400, nanos: 0 }),
        to: Some(prost_types::Timestamp { seconds: 1_782_921_599, nanos: 999_999_999 }),
    };
    let asked = |text: &str, limit: u32| fedsearch_proto::adapter::SubQuery {
        time_range_from_question: true,
        time_zone: "Asia/Shanghai".into(),
        limit,
        ..sub_query("q", "scratch", text, "alice", Filters { time_range: Some(window), ..Default::default() })
    };
    let ranked = search_one(&mut s.client, asked("blank sailing", 5)).await.ok().ids();
    assert_eq!(ranked.first().map(String::as_str), Some("N-WEEK27"), "named by its week number: {ranked:?}");
    for other in ["N-WEEK23", "N-WEEK27-2025"] {
        assert!(!ranked.contains(&other.to_string()), "{other} follows the window's documents: {ranked:?}");
    }
    // With no word of the question, a document that names a day of the window is one of the window's.
    let any = search_one(&mut s.client, asked("customs", 20)).await.ok().ids();
    assert!(any.contains(&"N-DAY".to_string()) && !any.contains(&"N-WEEK23".to_string()), "{any:?}");
}
