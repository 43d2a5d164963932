//! Against the real DokuWiki: every user sees exactly the pages matching any term of the query
//! that the seeded ACL lets them read, pages matching every term first; eve (no wiki account) is DENIED; hits are clean, dated and ranked; Fetch re-checks
//! permission as the user.

use std::collections::{BTreeMap, BTreeSet};

use fedsearch_proto::types::{Filters, SourceState, TimeRange};
use fedsearch_wiki_adapter::text::{SNIPPET_MAX_CHARS, looks_dirty};

use crate::common::*;

const USERS: [&str; 4] = ["alice", "dave", "bob", "carol"];
const QUERIES: [&str; 6] = ["支付超时", "退货 拒收 手续费", "拒收 手续费", "\"rejection fee\"", "refund", "gateway"];

fn doc_type_for(ns: &str) -> &'static str {
    match ns {
        "public" => "policy",
        "support" => "runbook",
        "finance" => "procedure",
        _ => "page",
    }
}

#[tokio::test]
async fn every_user_gets_exactly_the_readable_matching_pages() {
    let url = required_env("DOKUWIKI_URL");
    let mut served = serve(shared_config()).await;
    let pages = sample_pages();
    for subject in USERS {
        for query in QUERIES {
            // OR semantics: the adapter runs one search per term and merges
            let expected: BTreeSet<String> = pages
                .iter()
                .filter(|p| may_read(subject, &p.namespace) && matches_any(&p.text, query))
                .map(|p| p.id.clone())
                .collect();
            let all_terms: BTreeSet<&str> =
                pages.iter().filter(|p| matches(&p.text, query)).map(|p| p.id.as_str()).collect();
            let (hits, done) = search(&mut served.client, query, subject).await;
            assert_eq!(done.state, SourceState::Ok as i32, "{subject} {query}: {done:?}");
            let got: BTreeSet<String> = hits.iter().map(|h| h.local_id.clone()).collect();
            assert_eq!(got, expected, "{subject} searching {query}");
            assert_eq!(done.hit_count as usize, hits.len());
            let first_partial =
                hits.iter().position(|h| !all_terms.contains(h.local_id.as_str())).unwrap_or(hits.len());
            assert!(
                hits[first_partial..].iter().all(|h| !all_terms.contains(h.local_id.as_str())),
                "{subject} {query}: pages matching every term must come first: {:?}",
                hits.iter().map(|h| &h.local_id).collect::<Vec<_>>()
            );
            for (i, hit) in hits.iter().enumerate() {
                let ns = hit.local_id.split(':').next().unwrap();
                assert!(may_read(subject, ns), "{subject} got {} it may not read", hit.local_id);
                assert_eq!(hit.rank as usize, i + 1);
                assert_eq!(hit.full_text_ref, hit.local_id);
                assert_eq!(hit.url, format!("{}/doku.php?id={}", url.trim_end_matches('/'), hit.local_id));
                assert_eq!(hit.doc_type, doc_type_for(ns));
                assert_eq!(hit.metadata.get("namespace").map(String::as_str), Some(ns));
                assert!(hit.updated_at.is_some(), "{}", hit.local_id);
                assert!(!hit.title.is_empty());
                assert!(!hit.snippet.is_empty(), "{} has no snippet", hit.local_id);
                assert!(hit.snippet.chars().count() <= SNIPPET_MAX_CHARS);
                assert!(!looks_dirty(&hit.snippet), "dirty snippet for {}: {}", hit.local_id, hit.snippet);
                assert!(hit.score.is_some());
            }
        }
    }
}

#[tokio::test]
async fn eve_without_a_wiki_credential_is_denied() {
    let mut served = serve(shared_config()).await;
    let (hits, done) = search(&mut served.client, "退货 拒收 手续费", "eve").await;
    assert!(hits.is_empty());
    assert_eq!(done.state, SourceState::Denied as i32, "{done:?}");
    assert_eq!(done.code, "UNAUTHENTICATED");
    assert_eq!(done.message, "no wiki credential for this user");
    let err = fetch(&mut served.client, "public:return_policy", user("eve")).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
}

#[tokio::test]
async fn chinese_and_english_queries_find_policies_and_runbooks_with_clean_snippets() {
    let mut served = serve(shared_config()).await;
    let (hits, _) = search(&mut served.client, "退货 拒收 手续费", "carol").await;
    let ids: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).collect();
    assert_eq!(
        ids.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from(["public:return_policy", "public:return_policy_2025"])
    );
    let current = hits.iter().find(|h| h.local_id == "public:return_policy").unwrap();
    assert!(current.snippet.contains("拒收手续费 12 元"), "{}", current.snippet);
    assert_eq!(current.title, "退货政策（2026 版） Return Policy 2026");

    let (hits, _) = search(&mut served.client, "支付超时", "alice").await;
    assert_eq!(hits[0].local_id, "support:runbook_payment_timeout");
    assert!(hits[0].snippet.contains("支付超时处理手册"), "{}", hits[0].snippet);
    assert_eq!(hits[0].doc_type, "runbook");

    let (hits, _) = search(&mut served.client, "\"rejection fee\"", "dave").await;
    assert!(hits.iter().all(|h| h.snippet.to_lowercase().contains("rejection fee")), "{hits:?}");
}

#[tokio::test]
async fn last_modified_times_match_the_seeded_mtimes() {
    let mut served = serve(shared_config()).await;
    let days = seeded_days_ago();
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    for (subject, query) in
        [("bob", "refund"), ("bob", "拒收"), ("alice", "refund"), ("alice", "支付超时"), ("bob", "支付超时")]
    {
        for hit in search(&mut served.client, query, subject).await.0 {
            seen.insert(hit.local_id.clone(), hit.updated_at.unwrap().seconds);
        }
    }
    assert!(seen.len() >= 6, "{seen:?}");
    // every page's mtime is load_time - days_ago * 86400 for one load time
    let load_times: Vec<i64> = seen.iter().map(|(id, t)| t + (days[id] * 86400.0).round() as i64).collect();
    let (min, max) = (load_times.iter().min().unwrap(), load_times.iter().max().unwrap());
    assert!(max - min <= 5, "mtimes do not follow mtimes.txt: {seen:?}");
    let now = chrono::Utc::now().timestamp();
    assert!(*max <= now + 5, "seeded in the future?");
    // the newer policy is newer, and Fetch (wiki.getPageInfo) reports the same time
    assert!(seen["public:return_policy"] > seen["public:return_policy_2025"]);
    let page = fetch(&mut served.client, "public:return_policy", user("carol")).await.unwrap();
    assert_eq!(page.updated_at.unwrap().seconds, seen["public:return_policy"]);
}

#[tokio::test]
async fn limit_cuts_the_list_and_filters_apply_after_the_search() {
    let mut served = serve(shared_config()).await;
    let (all, _) = search(&mut served.client, "refund", "bob").await;
    assert!(all.len() >= 4);
    let (two, done) = search_with(&mut served.client, "wiki", "refund", user("bob"), 2, None).await;
    assert_eq!(done.hit_count, 2);
    assert_eq!(
        two.iter().map(|h| (&h.local_id, h.rank)).collect::<Vec<_>>(),
        all[..2].iter().map(|h| (&h.local_id, h.rank)).collect::<Vec<_>>()
    );

    // time_range on mtime: only pages changed in the last 100 days (drops the 300-day-old policy)
    let from =
        fedsearch_core::time::to_timestamp(std::time::SystemTime::now() - std::time::Duration::from_secs(100 * 86400));
    let filters = Filters { time_range: Some(TimeRange { from: Some(from), to: None }), ..Default::default() };
    let (recent, _) = search_with(&mut served.client, "wiki", "退货 拒收 手续费", user("bob"), 50, Some(filters)).await;
    let ids: BTreeSet<&str> = recent.iter().map(|h| h.local_id.as_str()).collect();
    assert!(ids.contains("public:return_policy") && !ids.contains("public:return_policy_2025"), "{ids:?}");
    assert_eq!(recent.iter().map(|h| h.rank).collect::<Vec<_>>(), (1..=recent.len() as u32).collect::<Vec<_>>());

    let filters = Filters { doc_types: vec!["policy".into()], ..Default::default() };
    let (policies, _) = search_with(&mut served.client, "wiki", "refund", user("bob"), 50, Some(filters)).await;
    assert!(!policies.is_empty() && policies.iter().all(|h| h.local_id.starts_with("public:")), "{policies:?}");
}

#[tokio::test]
async fn fetch_returns_the_page_as_the_user_and_the_wiki_rechecks_permission() {
    let mut served = serve(shared_config()).await;
    let page = fetch(&mut served.client, "public:return_policy", user("carol")).await.unwrap();
    assert!(page.content.contains("拒收手续费 12 元"));
    assert_eq!(page.id, "public:return_policy");
    assert_eq!(page.title, "退货政策（2026 版） Return Policy 2026");
    assert_eq!(page.doc_type, "policy");
    assert_eq!(page.metadata.get("author").map(String::as_str), Some("carol"));

    for (subject, reference) in [
        ("alice", "finance:q3_revenue"),
        ("carol", "support:runbook_payment_timeout"),
        ("dave", "finance:refund_reconciliation"),
    ] {
        let err = fetch(&mut served.client, reference, user(subject)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::PermissionDenied, "{subject} {reference}: {err:?}");
        assert!(!err.message().contains("127.0.0.1"), "{}", err.message());
    }
    let missing = fetch(&mut served.client, "public:no_such_page", user("carol")).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    let bad = fetch(&mut served.client, "../conf/users.auth.php", user("carol")).await.unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn a_bounded_or_open_past_window_lists_the_pages_changed_in_it_that_the_user_may_read() {
    let mut served = serve(shared_config()).await;
    // The backends were seeded at FEDSEARCH_SEED_NOW; page dates count back from it.
    let seeded: i64 = std::env::var("FEDSEARCH_SEED_NOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fedsearch_core::time::to_timestamp(std::time::SystemTime::now()).seconds);
    let window = |from_days: i64| Filters {
        time_range: Some(TimeRange {
            from: Some(prost_types::Timestamp { seconds: seeded - from_days * 86_400, nanos: 0 }),
            to: Some(prost_types::Timestamp { seconds: seeded + 86_400, nanos: 0 }),
        }),
        ..Default::default()
    };
    let days = seeded_days_ago();
    let pages = sample_pages();
    for subject in USERS {
        // No page shows the word: every readable page of the last 50 days, newest first.
        let (hits, done) =
            search_with(&mut served.client, "wiki", "xyzzyplugh", user(subject), 20, Some(window(50))).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{subject}: {done:?}");
        let mut expected: Vec<&SamplePage> =
            pages.iter().filter(|p| may_read(subject, &p.namespace) && days[&p.id] < 50.0).collect();
        expected.sort_by(|a, b| days[&a.id].total_cmp(&days[&b.id]));
        let got: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).collect();
        assert_eq!(got, expected.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), "{subject}");
        for h in &hits {
            assert_eq!(h.metadata.get("listed").map(String::as_str), Some("changed in the time window"));
            assert!(!h.snippet.is_empty() && !h.title.is_empty() && h.updated_at.is_some(), "{h:?}");
        }
    }
    // A page the words find comes first; the window's other pages follow.
    let (hits, _) = search_with(&mut served.client, "wiki", "gateway", user("alice"), 20, Some(window(50))).await;
    assert_eq!(hits.first().map(|h| h.local_id.as_str()), Some("support:runbook_payment_timeout"));
    assert!(!hits[0].metadata.contains_key("listed"));
    assert!(hits[1..].iter().all(|h| h.metadata.contains_key("listed")), "{hits:?}");
    // Open-ended to the future: a filter only, nothing listed.
    let mut open = window(50);
    open.time_range.as_mut().unwrap().to = None;
    let (hits, _) = search_with(&mut served.client, "wiki", "xyzzyplugh", user("bob"), 20, Some(open)).await;
    assert!(hits.is_empty(), "{hits:?}");
    // An open-ended past ("more than 41 days ago": from the epoch): the readable pages last
    // changed before it, newest first, ten at most.
    let before = Filters {
        time_range: Some(TimeRange {
            from: Some(prost_types::Timestamp { seconds: 0, nanos: 0 }),
            to: Some(prost_types::Timestamp { seconds: seeded - 41 * 86_400, nanos: 0 }),
        }),
        ..Default::default()
    };
    for subject in USERS {
        let (hits, done) =
            search_with(&mut served.client, "wiki", "xyzzyplugh", user(subject), 20, Some(before.clone())).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{subject}: {done:?}");
        let mut expected: Vec<&SamplePage> =
            pages.iter().filter(|p| may_read(subject, &p.namespace) && days[&p.id] > 41.0).collect();
        expected.sort_by(|a, b| days[&a.id].total_cmp(&days[&b.id]));
        expected.truncate(10);
        assert!(!expected.is_empty(), "{subject}: the sample has pages older than 41 days");
        let got: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).collect();
        assert_eq!(got, expected.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), "{subject}");
    }
}
