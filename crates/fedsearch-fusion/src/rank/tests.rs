//! Unit tests of the ranking, through the public [`crate::Fuser`] API, against hand-computed values.

use std::collections::HashMap;

use fedsearch_proto::{
    fusion::{FuseStart, FusedList, SourceSpec},
    types::{FusionMethod, FusionOptions, Hit, SourceHit, VersionInfo},
};
use prost_types::Timestamp;

use crate::{Fuser, FusionError};

const EPS: f64 = 1e-12;

fn start(method: FusionMethod, sources: &[(&str, f64)]) -> FuseStart {
    FuseStart {
        options: Some(FusionOptions { method: method as i32, ..Default::default() }),
        top_k: 50,
        sources: sources
            .iter()
            .map(|(s, w)| SourceSpec { source: s.to_string(), weight: *w, ..Default::default() })
            .collect(),
        snapshots: false,
    }
}

fn rrf(sources: &[&str]) -> FuseStart {
    start(FusionMethod::Rrf, &sources.iter().map(|s| (*s, 1.0)).collect::<Vec<_>>())
}

fn hit(id: &str, rank: u32) -> SourceHit {
    SourceHit { local_id: id.into(), rank, full_text_ref: format!("ref/{id}"), ..Default::default() }
}

fn with_url(mut h: SourceHit, url: &str) -> SourceHit {
    h.url = url.into();
    h
}

fn with_title(mut h: SourceHit, title: &str) -> SourceHit {
    h.title = title.into();
    h
}

fn with_score(mut h: SourceHit, score: f64) -> SourceHit {
    h.score = Some(score);
    h
}

fn fuse(start: &FuseStart, batches: Vec<(&str, Vec<SourceHit>)>) -> FusedList {
    let mut fuser = Fuser::new(start).unwrap();
    for (source, hits) in batches {
        fuser.add_batch(source, hits);
    }
    fuser.finish()
}

fn by_id<'a>(list: &'a FusedList, id: &str) -> &'a Hit {
    list.hits.iter().find(|h| h.id == id).unwrap_or_else(|| panic!("no hit {id} in {:?}", ids(list)))
}

fn ids(list: &FusedList) -> Vec<&str> {
    list.hits.iter().map(|h| h.id.as_str()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < EPS
}

#[test]
fn rrf_scores_match_hand_computed_values() {
    let shared = "https://wiki.example.com/vpn";
    let list = fuse(
        &rrf(&["kb", "tickets"]),
        vec![
            ("tickets", vec![with_url(hit("T1", 1), shared), hit("T2", 2), hit("T3", 3)]),
            ("kb", vec![hit("K1", 1), hit("K2", 2), with_url(hit("K3", 3), shared)]),
        ],
    );
    // T1 (tickets#1) and K3 (kb#3) are one document: 1/61 + 1/63.
    // K2 and T2 tie at 1/62: source name decides.
    assert_eq!(ids(&list), vec!["tickets:T1", "kb:K1", "kb:K2", "tickets:T2", "tickets:T3"]);
    let merged = &list.hits[0];
    assert!(close(merged.fused_score, 1.0 / 61.0 + 1.0 / 63.0), "{}", merged.fused_score);
    assert!(close(by_id(&list, "kb:K1").fused_score, 1.0 / 61.0));
    assert!(close(by_id(&list, "tickets:T2").fused_score, 1.0 / 62.0));
    assert!(close(by_id(&list, "tickets:T3").fused_score, 1.0 / 63.0));
    let explanation = merged.explanation.as_ref().unwrap();
    assert_eq!(explanation.method, "rrf");
    assert_eq!(explanation.summary, "rrf k=60: tickets#1 w1.0 → 0.01639 + kb#3 w1.0 → 0.01587 = 0.03227");
    let c = &explanation.contributions;
    assert_eq!((c[0].source.as_str(), c[0].rank_in_source), ("tickets", 1));
    assert_eq!((c[1].source.as_str(), c[1].rank_in_source), ("kb", 3));
    assert!(close(c[0].value, 1.0 / 61.0) && close(c[1].value, 1.0 / 63.0));
    assert_eq!(merged.duplicates.len(), 1);
    assert_eq!(merged.duplicates[0].id, "kb:K3");
    assert_eq!(merged.duplicates[0].matched_on, "url");
    assert_eq!(merged.duplicates[0].rank_in_source, 3);
    assert_eq!(list.duplicates_merged, 1);
}

#[test]
fn rrf_counts_every_hit_of_a_one_set_source_at_the_first_position() {
    let rows = || {
        vec![
            ("sql", vec![with_score(hit("R1", 1), 0.9), with_score(hit("R2", 2), 0.5), with_score(hit("R3", 3), 0.2)]),
            ("kb", vec![hit("K1", 1), hit("K2", 2)]),
        ]
    };
    // Not a set: the source's order stands.
    let ordered = fuse(&rrf(&["sql", "kb"]), rows());
    assert!(close(by_id(&ordered, "sql:R3").fused_score, 1.0 / 63.0));
    let mut set = rrf(&["sql", "kb"]);
    set.sources[0].one_set = true;
    let list = fuse(&set, rows());
    for id in ["sql:R1", "sql:R2", "sql:R3", "kb:K1"] {
        assert!(close(by_id(&list, id).fused_score, 1.0 / 61.0), "{id}");
    }
    assert!(close(by_id(&list, "kb:K2").fused_score, 1.0 / 62.0));
    // The rank in the source stays the hit's own place.
    let r3 = by_id(&list, "sql:R3").explanation.as_ref().unwrap();
    assert_eq!(r3.contributions[0].rank_in_source, 3);
}

#[test]
fn weighted_score_counts_every_hit_of_a_one_set_source_as_its_best() {
    let rows = || {
        vec![(
            "sql",
            vec![with_score(hit("R1", 1), 1.0), with_score(hit("R2", 2), 0.25), with_score(hit("R3", 3), 0.25)],
        )]
    };
    let ordered = fuse(&start(FusionMethod::WeightedScore, &[("sql", 1.0)]), rows());
    assert!(close(by_id(&ordered, "sql:R3").fused_score, 0.25));
    let mut set = start(FusionMethod::WeightedScore, &[("sql", 1.0)]);
    set.sources[0].one_set = true;
    let list = fuse(&set, rows());
    for id in ["sql:R1", "sql:R2", "sql:R3"] {
        assert!(close(by_id(&list, id).fused_score, 1.0), "{id}");
    }
    // Ties keep the source's order.
    assert_eq!(ids(&list), vec!["sql:R1", "sql:R2", "sql:R3"]);
}

#[test]
fn rrf_k_comes_from_the_options() {
    let mut s = rrf(&["a"]);
    s.options.as_mut().unwrap().rrf_k = Some(1);
    let list = fuse(&s, vec![("a", vec![hit("1", 1), hit("2", 2)])]);
    assert!(close(list.hits[0].fused_score, 0.5));
    assert!(close(list.hits[1].fused_score, 1.0 / 3.0));
    assert!(list.hits[0].explanation.as_ref().unwrap().summary.starts_with("rrf k=1: a#1 w1.0 → 0.50000"));
}

#[test]
fn doubling_a_weight_doubles_its_contributions() {
    let batches = || {
        vec![
            ("a", vec![with_url(hit("A1", 1), "https://x.example/1"), hit("A2", 2)]),
            ("b", vec![hit("B1", 1), with_url(hit("B2", 2), "https://x.example/1")]),
        ]
    };
    let base = fuse(&start(FusionMethod::Rrf, &[("a", 1.0), ("b", 1.0)]), batches());
    let mut doubled_start = start(FusionMethod::Rrf, &[("a", 1.0), ("b", 1.0)]);
    doubled_start.options.as_mut().unwrap().weights = HashMap::from([("b".to_string(), 2.0)]);
    let doubled = fuse(&doubled_start, batches());
    let contribution = |list: &FusedList, id: &str, source: &str| {
        let hit = by_id(list, id);
        hit.explanation.as_ref().unwrap().contributions.iter().find(|c| c.source == source).unwrap().clone()
    };
    let (b1, b1x2) = (contribution(&base, "b:B1", "b"), contribution(&doubled, "b:B1", "b"));
    assert!(close(b1x2.value, 2.0 * b1.value));
    assert_eq!(b1x2.weight, 2.0);
    // The merged A1/B2 document: a's share unchanged, b's doubled.
    let merged = doubled.hits.iter().find(|h| h.duplicates.len() == 1).unwrap();
    let a_part = merged.explanation.as_ref().unwrap().contributions.iter().find(|c| c.source == "a").unwrap();
    let b_part = merged.explanation.as_ref().unwrap().contributions.iter().find(|c| c.source == "b").unwrap();
    assert!(close(a_part.value, 1.0 / 61.0));
    assert!(close(b_part.value, 2.0 / 62.0));
    assert!(close(merged.fused_score, 2.0 / 62.0 + 1.0 / 61.0));
    assert!(close(by_id(&doubled, "a:A2").fused_score, by_id(&base, "a:A2").fused_score));
}

#[test]
fn spec_weights_apply_and_options_override_them() {
    let list = fuse(&start(FusionMethod::Rrf, &[("a", 0.5)]), vec![("a", vec![hit("1", 1)])]);
    assert!(close(list.hits[0].fused_score, 0.5 / 61.0));
    // A SourceSpec weight of 0 is proto3's "unset": 1.0.
    let list = fuse(&start(FusionMethod::Rrf, &[("a", 0.0)]), vec![("a", vec![hit("1", 1)])]);
    assert!(close(list.hits[0].fused_score, 1.0 / 61.0));
    let mut s = start(FusionMethod::Rrf, &[("a", 0.5)]);
    s.options.as_mut().unwrap().weights = HashMap::from([("a".to_string(), 3.0)]);
    let list = fuse(&s, vec![("a", vec![hit("1", 1)])]);
    assert!(close(list.hits[0].fused_score, 3.0 / 61.0));
}

#[test]
fn weight_zero_still_dedupes_but_contributes_nothing_and_sorts_last() {
    let mut s = rrf(&["a", "muted"]);
    s.options.as_mut().unwrap().weights = HashMap::from([("muted".to_string(), 0.0)]);
    let list = fuse(
        &s,
        vec![
            ("muted", vec![hit("M1", 1), with_url(hit("M2", 2), "https://x.example/doc")]),
            (
                "a",
                (1..=5)
                    .map(|i| hit(&format!("A{i}"), i))
                    .chain([with_url(hit("A6", 6), "https://x.example/doc")])
                    .collect(),
            ),
        ],
    );
    // M1 is found only by the muted source: score 0, last.
    assert_eq!(list.hits.last().unwrap().id, "muted:M1");
    assert_eq!(list.hits.last().unwrap().fused_score, 0.0);
    // M2 merged into A6 and adds nothing.
    let a6 = by_id(&list, "a:A6");
    assert!(close(a6.fused_score, 1.0 / 66.0));
    assert_eq!(a6.duplicates[0].id, "muted:M2");
    assert_eq!(list.hits.len(), 7);
}

#[test]
fn weighted_score_normalises_by_the_best_score_per_source() {
    let list = fuse(
        &start(FusionMethod::WeightedScore, &[("a", 1.0), ("b", 0.5)]),
        vec![
            (
                "a",
                vec![
                    with_score(hit("A1", 1), 10.0),
                    with_score(hit("A2", 2), 6.0),
                    with_score(hit("A3", 3), 2.0),
                    hit("A4", 4),
                ],
            ),
            // All equal: n = 1/position.
            ("b", vec![with_score(hit("B1", 1), 3.0), with_score(hit("B2", 2), 3.0)]),
        ],
    );
    let score = |id| by_id(&list, id).fused_score;
    assert!(close(score("a:A1"), 1.0));
    assert!(close(score("a:A2"), 0.6));
    assert!(close(score("a:A3"), 0.2), "the weakest hit keeps what it scored, not 0");
    assert!(close(score("a:A4"), 0.0), "a hit without a score in a scored source normalises to 0");
    assert!(close(score("b:B1"), 0.5));
    assert!(close(score("b:B2"), 0.25));
    let a2 = by_id(&list, "a:A2").explanation.clone().unwrap();
    assert_eq!(a2.method, "weighted_score");
    assert_eq!(a2.contributions[0].raw_score, Some(6.0));
    assert_eq!(a2.contributions[0].normalised_score, Some(0.6));
    assert_eq!(a2.summary, "weighted_score: a#2 w1.0 × 0.600 → 0.60000");
    // No scores at all: 1/position too.
    let list = fuse(
        &start(FusionMethod::WeightedScore, &[("c", 1.0)]),
        vec![("c", vec![hit("1", 1), hit("2", 2), hit("3", 3)])],
    );
    let scores: Vec<f64> = list.hits.iter().map(|h| h.fused_score).collect();
    assert!(close(scores[0], 1.0) && close(scores[1], 0.5) && close(scores[2], 1.0 / 3.0), "{scores:?}");
    // A negative score: min-max over the source.
    let list = fuse(
        &start(FusionMethod::WeightedScore, &[("d", 1.0)]),
        vec![("d", vec![with_score(hit("1", 1), 2.0), with_score(hit("2", 2), 0.0), with_score(hit("3", 3), -2.0)])],
    );
    let scores: Vec<f64> = list.hits.iter().map(|h| h.fused_score).collect();
    assert!(close(scores[0], 1.0) && close(scores[1], 0.5) && close(scores[2], 0.0), "{scores:?}");
}

#[test]
fn url_variants_merge_across_sources() {
    let list = fuse(
        &rrf(&["a", "b", "c"]),
        vec![
            ("a", vec![with_url(hit("1", 1), "https://Wiki.Example.com/Page?b=2&a=1#top")]),
            ("b", vec![with_url(hit("1", 1), "https://wiki.example.com:443/Page/?a=1&b=2&utm_source=mail")]),
            ("c", vec![with_url(hit("1", 1), "https://wiki.example.com/Page?a=1&b=2")]),
        ],
    );
    assert_eq!(list.hits.len(), 1);
    assert!(close(list.hits[0].fused_score, 3.0 / 61.0));
    assert!(list.hits[0].duplicates.iter().all(|d| d.matched_on == "url"));
    // Path case matters: a different page.
    let list = fuse(
        &rrf(&["a", "b"]),
        vec![
            ("a", vec![with_url(hit("1", 1), "https://w.example/Page")]),
            ("b", vec![with_url(hit("1", 1), "https://w.example/page")]),
        ],
    );
    assert_eq!(list.hits.len(), 2);
}

#[test]
fn titles_merge_across_sources_only_when_long_enough() {
    let list = fuse(
        &rrf(&["a", "b"]),
        vec![
            ("a", vec![with_title(hit("A1", 1), "VPN setup guide (2026)"), with_title(hit("A2", 2), "README")]),
            ("b", vec![with_title(hit("B1", 1), "vpn SETUP guide — 2026"), with_title(hit("B2", 2), "readme")]),
        ],
    );
    assert_eq!(list.hits.len(), 3, "{:?}", ids(&list));
    let merged = list.hits.iter().find(|h| !h.duplicates.is_empty()).unwrap();
    assert_eq!(merged.duplicates[0].matched_on, "title");
    // Within one source two ids with the same title are two documents.
    let list = fuse(
        &rrf(&["a"]),
        vec![(
            "a",
            vec![
                with_title(hit("1", 1), "Password reset link expired"),
                with_title(hit("2", 2), "Password reset link expired"),
            ],
        )],
    );
    assert_eq!(list.hits.len(), 2);
}

#[test]
fn content_fingerprints_and_long_snippets_merge() {
    let mut x = hit("X", 1);
    x.content_fingerprint = "sha256:abc".into();
    let mut y = hit("Y", 2);
    y.content_fingerprint = "sha256:abc".into();
    let snippet = "Quarterly close: finance reconciles every ledger before the fifth working day.";
    let mut s1 = hit("S1", 3);
    s1.snippet = snippet.into();
    let mut s2 = hit("S2", 1);
    s2.snippet = snippet.to_uppercase();
    let mut short1 = hit("short", 4);
    short1.snippet = "see attached".into();
    let mut short2 = hit("short", 2);
    short2.snippet = "see attached".into();
    let list = fuse(&rrf(&["a", "b"]), vec![("a", vec![x, s1, short1]), ("b", vec![y, s2, short2])]);
    assert_eq!(list.hits.len(), 4, "{:?}", ids(&list));
    for id in ["a:X", "b:S2"] {
        let h = by_id(&list, id);
        assert_eq!(h.duplicates.len(), 1, "{id}");
        assert_eq!(h.duplicates[0].matched_on, "content");
    }
}

#[test]
fn merges_are_transitive() {
    // A~B by url, B~C by title: one document found by three sources.
    let a = with_url(hit("A", 1), "https://x.example/handbook");
    let b = with_title(with_url(hit("B", 2), "https://x.example/handbook/"), "Employee handbook 2026");
    let c = with_title(hit("C", 3), "employee handbook, 2026");
    let list = fuse(
        &rrf(&["a", "b", "c"]),
        vec![("a", vec![a]), ("b", vec![hit("b1", 1), b]), ("c", vec![hit("c1", 1), hit("c2", 2), c])],
    );
    let list = FusedList { hits: list.hits.into_iter().filter(|h| !h.duplicates.is_empty()).collect(), ..list };
    assert_eq!(list.hits.len(), 1);
    let h = &list.hits[0];
    assert_eq!(h.id, "a:A");
    assert!(close(h.fused_score, 1.0 / 61.0 + 1.0 / 62.0 + 1.0 / 63.0), "{h:#?}");
    assert_eq!(h.explanation.as_ref().unwrap().contributions.len(), 3);
    let matched: Vec<(&str, &str)> = h.duplicates.iter().map(|d| (d.id.as_str(), d.matched_on.as_str())).collect();
    assert_eq!(matched, vec![("b:B", "url"), ("c:C", "title")]);
    assert_eq!(list.duplicates_merged, 2);
}

#[test]
fn a_hit_repeated_in_one_list_counts_once() {
    let list = fuse(&rrf(&["a"]), vec![("a", vec![hit("dup", 1), hit("dup", 2), hit("dup", 3), hit("other", 4)])]);
    assert_eq!(ids(&list), vec!["a:dup", "a:other"]);
    assert!(close(list.hits[0].fused_score, 1.0 / 61.0));
    // Positions count distinct hits: `other` is the second.
    assert!(close(list.hits[1].fused_score, 1.0 / 62.0));
    assert_eq!(list.hits[1].rank_in_source, 2);
    // Two ids of one source with the same URL: the better one only.
    let list = fuse(
        &rrf(&["a", "b"]),
        vec![
            ("a", vec![with_url(hit("1", 1), "https://x.example/d"), with_url(hit("2", 2), "https://x.example/d")]),
            ("b", vec![with_url(hit("9", 1), "https://x.example/d")]),
        ],
    );
    assert_eq!(list.hits.len(), 1);
    assert!(close(list.hits[0].fused_score, 2.0 / 61.0));
    assert_eq!(list.hits[0].duplicates.len(), 2);
}

#[test]
fn rank_fields_reorder_arrivals_and_unranked_hits_come_last() {
    let list =
        fuse(&rrf(&["a"]), vec![("a", vec![hit("third", 3), hit("none", 0), hit("first", 1), hit("second", 2)])]);
    assert_eq!(ids(&list), vec!["a:first", "a:second", "a:third", "a:none"]);
    assert_eq!(list.hits.iter().map(|h| h.rank_in_source).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
}

fn ts(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp { seconds, nanos: 0 })
}

#[test]
fn equal_scores_order_by_updated_at_then_source_then_id() {
    let mk = |id: &str, t: i64| SourceHit { updated_at: ts(t), ..hit(id, 1) };
    let inputs = vec![
        ("c", vec![mk("z", 100)]),
        ("b", vec![mk("y", 200)]),
        ("a", vec![mk("x", 100)]),
        ("d", vec![mk("w", 100)]),
    ];
    let expected = vec!["b:y", "a:x", "c:z", "d:w"];
    let list = fuse(&rrf(&["a", "b", "c", "d"]), inputs.clone());
    assert_eq!(ids(&list), expected);
    // Any declaration and arrival order: the same list, field for field.
    let mut reversed = inputs.clone();
    reversed.reverse();
    let again = fuse(&rrf(&["d", "c", "b", "a"]), reversed);
    assert_eq!(again, list);
    // The representative of a merged group: best contribution, ties by newer updated_at.
    let old = SourceHit { updated_at: ts(1), ..with_url(hit("old", 1), "https://x.example/p") };
    let new = SourceHit { updated_at: ts(2), ..with_url(hit("new", 1), "https://x.example/p") };
    let list = fuse(&rrf(&["a", "b"]), vec![("a", vec![old]), ("b", vec![new])]);
    assert_eq!(list.hits[0].id, "b:new");
}

#[test]
fn top_k_cuts_the_list_and_is_validated() {
    let hits: Vec<SourceHit> = (1..=30).map(|i| hit(&i.to_string(), i)).collect();
    let mut s = rrf(&["a"]);
    s.top_k = 5;
    let list = fuse(&s, vec![("a", hits.clone())]);
    assert_eq!(ids(&list), vec!["a:1", "a:2", "a:3", "a:4", "a:5"]);
    s.top_k = 0;
    assert_eq!(fuse(&s, vec![("a", hits)]).hits.len(), 10);
    s.top_k = 51;
    assert_eq!(Fuser::new(&s).unwrap_err(), FusionError::TopK(51));
}

#[test]
fn bad_starts_are_refused_with_the_field_named() {
    let mut s = rrf(&["a"]);
    s.options.as_mut().unwrap().rrf_k = Some(0);
    assert!(Fuser::new(&s).unwrap_err().to_string().contains("rrf_k"));
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let s = start(FusionMethod::Rrf, &[("a", bad)]);
        assert!(matches!(Fuser::new(&s), Err(FusionError::Weight { .. })), "{bad}");
        let mut s = rrf(&["a"]);
        s.options.as_mut().unwrap().weights = HashMap::from([("a".to_string(), bad)]);
        assert!(Fuser::new(&s).unwrap_err().to_string().contains("weight of source `a`"), "{bad}");
    }
    assert_eq!(Fuser::new(&rrf(&["a", "a"])).unwrap_err(), FusionError::DuplicateSource("a".into()));
    assert_eq!(Fuser::new(&rrf(&[""])).unwrap_err(), FusionError::EmptySourceName);
    // No options at all: RRF with k = 60.
    let s = FuseStart {
        sources: vec![SourceSpec { source: "a".into(), weight: 1.0, ..Default::default() }],
        ..Default::default()
    };
    let list = fuse(&s, vec![("a", vec![hit("1", 1)])]);
    assert!(close(list.hits[0].fused_score, 1.0 / 61.0));
}

#[test]
fn snapshots_cover_what_arrived_so_far() {
    let mut fuser = Fuser::new(&rrf(&["a", "b"])).unwrap();
    fuser.add_batch("a", vec![hit("1", 1)]);
    fuser.add_batch("b", vec![hit("1", 1)]);
    fuser.end_source("a");
    let first = fuser.snapshot();
    assert_eq!(first.sources_done, vec!["a"]);
    assert_eq!(ids(&first), vec!["a:1", "b:1"]);
    fuser.add_batch("b", vec![with_url(hit("2", 2), "https://x.example/2")]);
    fuser.add_batch("a", vec![with_url(hit("2", 2), "https://x.example/2")]);
    fuser.end_source("b");
    let second = fuser.snapshot();
    assert_eq!(second.sources_done, vec!["a", "b"]);
    assert_eq!(second.hits.len(), 3);
    assert_eq!(second.duplicates_merged, 1);
    let done = fuser.finish();
    assert_eq!(done, second);
}

#[test]
fn hits_carry_prefixed_ids_refs_and_the_representative_fields() {
    let mut h = with_title(with_url(hit("INC-7", 1), "https://t.example/INC-7"), "Printer on fire");
    h.snippet = "smoke seen".into();
    h.doc_type = "incident".into();
    h.metadata = HashMap::from([("status".to_string(), "open".to_string())]);
    h.updated_at = ts(42);
    h.score = Some(7.5);
    let mut no_ref = hit("2", 2);
    no_ref.full_text_ref.clear();
    let list = fuse(&rrf(&["tickets"]), vec![("tickets", vec![h, no_ref, hit("ignored", 3), SourceHit::default()])]);
    let first = &list.hits[0];
    assert_eq!(first.id, "tickets:INC-7");
    assert_eq!(first.source, "tickets");
    assert_eq!(first.full_text_ref, "tickets:ref/INC-7");
    assert_eq!((first.title.as_str(), first.snippet.as_str()), ("Printer on fire", "smoke seen"));
    assert_eq!(first.url, "https://t.example/INC-7");
    assert_eq!(first.doc_type, "incident");
    assert_eq!(first.metadata["status"], "open");
    assert_eq!(first.updated_at, ts(42));
    assert_eq!(first.source_score, Some(7.5));
    assert_eq!(first.rank_in_source, 1);
    assert_eq!(list.hits[1].full_text_ref, "");
    // The hit without a local_id was ignored.
    assert_eq!(list.hits.len(), 3);
}

#[test]
fn undeclared_sources_are_ignored_by_the_library() {
    let mut fuser = Fuser::new(&rrf(&["a"])).unwrap();
    fuser.add_batch("nope", vec![hit("1", 1)]);
    fuser.end_source("nope");
    assert!(!fuser.is_declared("nope"));
    let list = fuser.finish();
    assert!(list.hits.is_empty() && list.sources_done.is_empty());
}

#[test]
fn overlong_snippets_are_cut_at_a_char_boundary() {
    let mut long = hit("cjk", 1);
    long.snippet = "東京オフィス".repeat(100);
    let mut short = hit("short", 2);
    short.snippet = "ok".into();
    let list = fuse(&rrf(&["a"]), vec![("a", vec![long, short])]);
    assert_eq!(list.hits[0].snippet.chars().count(), crate::MAX_SNIPPET_CHARS);
    assert!(list.hits[0].snippet.starts_with("東京オフィス東京"));
    assert_eq!(list.hits[1].snippet, "ok");
}

#[test]
fn two_hits_of_one_source_never_merge_through_a_third_source() {
    let title = "Password reset link expired";
    let list = fuse(
        &rrf(&["kb", "tickets"]),
        vec![
            ("tickets", vec![with_title(hit("A", 1), title), with_title(hit("B", 2), title)]),
            ("kb", vec![with_title(hit("C", 1), "password reset: link expired")]),
        ],
    );
    assert_eq!(list.hits.len(), 2, "{:?}", ids(&list));
    // C joins the better-ranked of the two.
    let merged = by_id(&list, "kb:C");
    assert_eq!(merged.duplicates.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), vec!["tickets:A"]);
    assert!(by_id(&list, "tickets:B").duplicates.is_empty());
    assert_eq!(list.duplicates_merged, 1);
    // Whatever the arrival order.
    let again = fuse(
        &rrf(&["tickets", "kb"]),
        vec![
            ("kb", vec![with_title(hit("C", 1), "password reset: link expired")]),
            ("tickets", vec![with_title(hit("B", 2), title), with_title(hit("A", 1), title)]),
        ],
    );
    assert_eq!(again, list);
}

#[test]
fn the_stronger_key_wins_when_two_merges_exclude_each_other() {
    // C shares a title with A (ranked first) and a URL with B: the URL decides.
    let title = "Quarterly close checklist";
    let list = fuse(
        &rrf(&["kb", "tickets"]),
        vec![
            ("tickets", vec![with_title(hit("A", 1), title), with_url(hit("B", 2), "https://x.example/close")]),
            ("kb", vec![with_title(with_url(hit("C", 1), "https://x.example/close/"), title)]),
        ],
    );
    assert_eq!(list.hits.len(), 2, "{:?}", ids(&list));
    let merged = list.hits.iter().find(|h| !h.duplicates.is_empty()).unwrap();
    let mut members = vec![merged.id.as_str(), merged.duplicates[0].id.as_str()];
    members.sort();
    assert_eq!(members, vec!["kb:C", "tickets:B"]);
    assert!(by_id(&list, "tickets:A").duplicates.is_empty());
}

#[test]
fn one_document_of_a_source_under_two_ids_still_merges_with_a_third_source() {
    // Same canonical URL within one source: one document, so both join kb's copy.
    let url = "https://x.example/doc";
    let list = fuse(
        &rrf(&["kb", "tickets"]),
        vec![
            ("tickets", vec![with_url(hit("A", 1), url), with_url(hit("B", 2), url)]),
            ("kb", vec![with_title(with_url(hit("C", 1), url), "Some long shared title")]),
        ],
    );
    assert_eq!(list.hits.len(), 1);
    assert_eq!(list.hits[0].duplicates.len(), 2);
}

fn version(status: &str, superseded_by: &str) -> Option<VersionInfo> {
    Some(VersionInfo { status: status.into(), superseded_by: superseded_by.into(), ..Default::default() })
}

#[test]
fn the_current_version_ranks_above_a_superseded_one_and_the_old_is_marked() {
    let list = fuse(
        &rrf(&["tickets", "wiki"]),
        vec![
            (
                "wiki",
                vec![
                    with_title(
                        hit("public:return_policy_2025", 1),
                        "退货政策（2025 版，已废止） Return Policy 2025 (superseded)",
                    ),
                    with_title(hit("public:shipping", 2), "Shipping delays"),
                    with_title(hit("public:return_policy", 3), "退货政策（2026 版） Return Policy 2026"),
                ],
            ),
            ("tickets", vec![hit("T1", 1), hit("T2", 2)]),
        ],
    );
    // By score alone: tickets#1 and wiki#1 (the old policy) tie, then wiki#2 / tickets#2, then
    // wiki#3 (the current policy). The current policy takes the old one's place, and the old
    // one follows it directly.
    assert_eq!(
        ids(&list),
        vec![
            "tickets:T1",
            "wiki:public:return_policy",
            "wiki:public:return_policy_2025",
            "tickets:T2",
            "wiki:public:shipping",
        ]
    );
    let old = by_id(&list, "wiki:public:return_policy_2025").version.clone().unwrap();
    assert_eq!(old.status, "superseded");
    assert_eq!(old.superseded_by, "wiki:public:return_policy");
    assert_eq!(old.family, "退货政策 return policy");
    assert_eq!(old.label, "2025");
    let new = by_id(&list, "wiki:public:return_policy").version.clone().unwrap();
    assert_eq!((new.status.as_str(), new.superseded_by.as_str(), new.label.as_str()), ("current", "", "2026"));
    assert_eq!(by_id(&list, "tickets:T1").version, None);
    assert_eq!(by_id(&list, "wiki:public:shipping").version, None);
}

#[test]
fn an_explicit_version_is_carried_and_decides() {
    let mut old = hit("DOC-2025", 1);
    old.version = Some(VersionInfo {
        family: "api-rate-limits".into(),
        label: "2025".into(),
        effective_at: ts(100),
        ..Default::default()
    });
    let mut new = hit("DOC-2026", 2);
    new.version = Some(VersionInfo {
        family: "api-rate-limits".into(),
        label: "2026.10".into(),
        effective_at: ts(200),
        supersedes: "DOC-2025".into(),
        ..Default::default()
    });
    let list = fuse(&rrf(&["docs"]), vec![("docs", vec![old, new])]);
    assert_eq!(ids(&list), vec!["docs:DOC-2026", "docs:DOC-2025"]);
    let (new, old) = (list.hits[0].version.clone().unwrap(), list.hits[1].version.clone().unwrap());
    assert_eq!(
        new,
        VersionInfo {
            family: "api-rate-limits".into(),
            label: "2026.10".into(),
            effective_at: ts(200),
            status: "current".into(),
            supersedes: "DOC-2025".into(),
            superseded_by: String::new(),
        }
    );
    assert_eq!((old.status.as_str(), old.superseded_by.as_str()), ("superseded", "docs:DOC-2026"));
    assert_eq!(old.effective_at, ts(100));
}

#[test]
fn a_lone_superseded_version_is_kept_and_marked() {
    let mut old = hit("DOC-2025", 1);
    old.version = version("superseded", "DOC-2026");
    let list = fuse(&rrf(&["docs"]), vec![("docs", vec![old, hit("other", 2)])]);
    assert_eq!(ids(&list), vec!["docs:DOC-2025", "docs:other"]);
    let v = list.hits[0].version.clone().unwrap();
    assert_eq!((v.status.as_str(), v.superseded_by.as_str()), ("superseded", "DOC-2026"));
    // A title that says it is superseded is marked too, with no pointer.
    let list = fuse(&rrf(&["wiki"]), vec![("wiki", vec![with_title(hit("p", 1), "Return Policy 2025 (superseded)")])]);
    let v = list.hits[0].version.clone().unwrap();
    assert_eq!((v.status.as_str(), v.superseded_by.as_str()), ("superseded", ""));
}

#[test]
fn versions_are_never_inferred_across_sources() {
    let list = fuse(
        &rrf(&["a", "b"]),
        vec![
            ("a", vec![with_title(hit("1", 1), "Travel policy 2025")]),
            ("b", vec![with_title(hit("1", 2), "Travel policy 2026")]),
        ],
    );
    assert_eq!(ids(&list), vec!["a:1", "b:1"]);
    assert!(list.hits.iter().all(|h| h.version.is_none()));
}

#[test]
fn numbered_items_are_not_versions_of_each_other() {
    let mut a = with_title(hit("SP-2026-031", 1), "Incident 12: API latency");
    a.updated_at = ts(1);
    let mut b = with_title(hit("SP-2026-034", 2), "Incident 13: API latency");
    b.updated_at = ts(2);
    let list = fuse(&rrf(&["status"]), vec![("status", vec![a, b])]);
    assert_eq!(ids(&list), vec!["status:SP-2026-031", "status:SP-2026-034"]);
    assert!(list.hits.iter().all(|h| h.version.is_none()));
}

#[test]
fn superseded_by_names_the_fused_hit_that_holds_the_newer_version() {
    // wiki's current page is a duplicate in kb's better-ranked copy: the old page points there.
    let url = "https://wiki.example.com/return_policy";
    let list = fuse(
        &rrf(&["kb", "wiki"]),
        vec![
            (
                "wiki",
                vec![
                    with_title(hit("return_policy_2025", 1), "Return Policy 2025"),
                    with_url(with_title(hit("return_policy", 2), "Return Policy 2026"), url),
                ],
            ),
            ("kb", vec![with_url(hit("K1", 1), url)]),
        ],
    );
    assert_eq!(ids(&list), vec!["kb:K1", "wiki:return_policy_2025"]);
    let v = list.hits[1].version.clone().unwrap();
    assert_eq!((v.status.as_str(), v.superseded_by.as_str()), ("superseded", "kb:K1"));
    // The kb copy's own version is unknown: versions are per source.
    assert_eq!(list.hits[0].version, None);
}

#[test]
fn a_superseded_hit_stays_below_its_newer_version_when_that_one_moves() {
    // A proptest find. `b:d3` (the 2024 version in b) is superseded by `b:d1`, which is a
    // duplicate in the group of `a:d0`; `a:d0` is itself superseded by `a:d1` and moves below
    // it, and `b:d3` must follow.
    let mk = |id: &str, url: &str, title: &str, rank: u32| with_title(with_url(hit(id, rank), url), title);
    let (u0, u2) = ("https://docs.example.com/0", "https://docs.example.com/2");
    let a =
        vec![mk("d0", u2, "Shared title 0 2024", 1), mk("d1", "https://docs.example.com/1", "Shared title 0 2025", 2)];
    let b = vec![
        mk("d0", u0, "Shared title 1 2024", 1),
        mk("d1", u2, "Shared title 0 2025", 2),
        with_score(mk("d2", u0, "Shared title 1 2024", 4), 0.0),
        with_score(mk("d3", u0, "Shared title 0 2024", 5), 1.0),
    ];
    let list = fuse(&start(FusionMethod::WeightedScore, &[("a", 1.0), ("b", 1.0)]), vec![("a", a), ("b", b)]);
    assert_eq!(ids(&list), vec!["a:d1", "a:d0", "b:d3"]);
    let superseded_by = |id| by_id(&list, id).version.clone().unwrap().superseded_by;
    assert_eq!(superseded_by("a:d0"), "a:d1");
    assert_eq!(superseded_by("b:d3"), "a:d0");
    assert_eq!(by_id(&list, "b:d3").duplicates.len(), 2);
}

/// Hits whose titles and snippets are long and share long prefixes (so that many share a prefix
/// key and only some their full key), with repeated ids, in two sources.
fn prefix_heavy_lists() -> impl proptest::strategy::Strategy<Value = Vec<Vec<(u8, u8, u8, u8)>>> {
    use proptest::prelude::*;
    prop::collection::vec(prop::collection::vec((0u8..8, 0u8..4, 0u8..4, 0u8..3), 0..12), 1..4)
}

fn prefix_heavy_hits(list: &[(u8, u8, u8, u8)]) -> Vec<SourceHit> {
    let prefix = "The quarterly close checklist lists every step that finance runs at month end";
    list.iter()
        .enumerate()
        .map(|(i, &(id, title, snippet, case))| {
            let tail = |n: u8| match n {
                0 => String::new(),
                1 => " and then some".to_string(),
                2 => format!(" variant {n}"),
                _ => " AND THEN  some!".to_string(),
            };
            let mut h = hit(&format!("d{id}"), i as u32 % 7);
            h.title = format!("{}{}", &prefix[..20 + 25 * usize::from(case)], tail(title));
            // Urls shared now and then, within a source too, some only once they are canonical.
            h.url = match (id + snippet) % 4 {
                0 => String::new(),
                1 => format!("https://Docs.example.com/p/{}/?utm_source=x", id % 3),
                _ => format!("https://docs.example.com/p/{}", id % 3),
            };
            // Two openings: snippets of one opening share a prefix key, of two do not.
            let opening = if id % 3 == 0 { "Section about payroll: " } else { "" };
            h.snippet = format!("{opening}{prefix}{}", tail(snippet));
            if case == 2 {
                h.snippet = h.snippet.to_uppercase();
            }
            if snippet == 3 && title != 3 {
                // 38 chars: longer than a prefix key's prefix, too short for a content key.
                h.snippet = format!("The quarterly close checklist lists v{}", id % 2);
            }
            h
        })
        .collect()
}

/// Fuses the hits `to_hits` makes of each list (source `s0`, `s1`, ..., one hit per batch, all
/// in order or all reversed) as it is, and again with the test switch `switch` set.
fn fuse_with_and_without<T>(
    lists: &[Vec<T>],
    to_hits: fn(&[T]) -> Vec<SourceHit>,
    reverse: bool,
    switch: &'static std::thread::LocalKey<std::cell::Cell<bool>>,
) -> (FusedList, FusedList) {
    let names: Vec<String> = (0..lists.len()).map(|i| format!("s{i}")).collect();
    let start = rrf(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let mut batches: Vec<(&str, Vec<SourceHit>)> = names
        .iter()
        .zip(lists)
        .flat_map(|(name, list)| to_hits(list).into_iter().map(move |h| (name.as_str(), vec![h])))
        .collect();
    if reverse {
        batches.reverse();
    }
    let without = fuse(&start, batches.clone());
    switch.set(true);
    let with = fuse(&start, batches);
    switch.set(false);
    (without, with)
}

proptest::proptest! {
    /// Prefix keys and the full keys computed when prefixes meet merge exactly as full keys do,
    /// in any order of arrival.
    #[test]
    fn lazy_keys_fuse_as_full_keys_do(lists in prefix_heavy_lists(), reverse: bool) {
        let (lazy, full) = fuse_with_and_without(&lists, prefix_heavy_hits, reverse, &super::FULL_KEYS);
        proptest::prop_assert_eq!(lazy, full);
    }
}

#[test]
fn prefix_keys_are_taken_once_and_shared_ones_become_full() {
    let long = "Section about the runbook: the team reviews the alerts and updates the status page";
    let other = "Section about the runbook: the team reviews the alerts and then escalates to on-call";
    let h = |id: &str, snippet: &str| SourceHit { local_id: id.into(), snippet: snippet.into(), ..Default::default() };
    let (first, partial) = crate::keys::Keys::lazy(&h("a", long));
    assert_ne!(partial, 0);
    assert_ne!(first.content, crate::keys::Keys::of(&h("a", long)).content);
    let start = rrf(&["a", "b", "c"]);
    let list = fuse(&start, vec![("a", vec![h("1", long)]), ("b", vec![h("1", other)]), ("c", vec![h("1", long)])]);
    assert_eq!(list.duplicates_merged, 1);
    let merged = list.hits.iter().find(|x| !x.duplicates.is_empty()).unwrap();
    assert_eq!(merged.duplicates[0].matched_on, "content");
}

/// Lists whose titles, ids and versions sometimes tell something of versions and often do not:
/// titles with and without years, labels and status words (some equal but for case), ids with
/// and without a marker, now and then an explicit version, in one to three sources.
fn version_lists() -> impl proptest::strategy::Strategy<Value = Vec<Vec<(u8, u8, u8, u8)>>> {
    use proptest::prelude::*;
    prop::collection::vec(prop::collection::vec((0u8..10, 0u8..12, 0u8..8, 0u8..10), 0..10), 1..4)
}

fn version_hits(list: &[(u8, u8, u8, u8)]) -> Vec<SourceHit> {
    const TITLES: [&str; 12] = [
        "Return policy",
        "Return Policy",
        "return policy 2025",
        "Return policy v2",
        "Return policy (superseded)",
        "Incident 12: API latency",
        "Incident 13: API latency",
        "Release notes 4.4",
        "Onboarding guide, current edition",
        "Travel rules",
        "退货政策（2026 版）",
        "Travel rules October 2026",
    ];
    list.iter()
        .enumerate()
        .map(|(i, &(id, title, suffix, explicit))| {
            let suffix = ["", "_2025", "-v2", "_old", "-12", "", "", ""][usize::from(suffix)];
            let mut h = hit(&format!("d{id}{suffix}"), i as u32 % 6 + 1);
            h.title = TITLES[usize::from(title)].to_string();
            h.updated_at = ts(1_700_000_000 + i64::from(id) * 86_400);
            h.version = match explicit {
                0 => version("superseded", ""),
                1 => version("", &format!("d{}", (id + 1) % 10)),
                2 => Some(VersionInfo { family: "travel".into(), ..Default::default() }),
                _ => None,
            };
            h
        })
        .collect()
}

proptest::proptest! {
    /// Skipping the sources no hit of which may tell anything of versions changes nothing.
    #[test]
    fn screened_versions_fuse_as_resolving_every_source_does(lists in version_lists(), reverse: bool) {
        let (screened, all) = fuse_with_and_without(&lists, version_hits, reverse, &super::ALL_VERSIONED);
        proptest::prop_assert_eq!(screened, all);
    }
}
