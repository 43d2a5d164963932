//! Properties of fusion over random inputs: the result does not depend on arrival order, no
//! fused score exceeds its documented bound, a fused hit never holds two documents of one
//! source, and no superseded version ranks above the current one it names.

use std::collections::HashMap;

use fedsearch_fusion::Fuser;
use fedsearch_proto::{
    fusion::{FuseStart, FusedList, SourceSpec},
    types::{FusionMethod, FusionOptions, SourceHit},
};
use proptest::prelude::*;

/// One source's list: (local id, url, title, score) per hit, in rank order. Small pools make
/// repeats within a list and merges across lists frequent.
fn source_list() -> impl Strategy<Value = Vec<(u8, u8, u8, Option<u8>)>> {
    prop::collection::vec((0u8..12, 0u8..10, 0u8..6, prop::option::of(0u8..5)), 0..15)
}

fn to_hits(list: &[(u8, u8, u8, Option<u8>)]) -> Vec<SourceHit> {
    list.iter()
        .enumerate()
        .map(|(i, (id, url, title, score))| SourceHit {
            local_id: format!("d{id}"),
            rank: i as u32 + 1,
            url: if *url < 7 { format!("https://docs.example.com/{url}") } else { String::new() },
            // Three titles, each in two years: versions of one document within a source.
            title: format!("shared document title {} {}", title % 3, 2024 + u32::from(*title) / 3),
            score: score.map(f64::from),
            ..Default::default()
        })
        .collect()
}

fn fuse_start(names: &[String], weights: &[f64], method: FusionMethod, k: u32) -> FuseStart {
    FuseStart {
        options: Some(FusionOptions {
            method: method as i32,
            rrf_k: Some(k),
            weights: names.iter().cloned().zip(weights.iter().copied()).collect::<HashMap<_, _>>(),
        }),
        top_k: 50,
        sources: names.iter().map(|n| SourceSpec { source: n.clone(), weight: 1.0, ..Default::default() }).collect(),
        snapshots: false,
    }
}

/// A tiny deterministic shuffle (the order is the property's input, not its subject).
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        items.swap(i, (seed >> 33) as usize % (i + 1));
    }
}

/// Fuses with the sources declared in `declare` order and the batches (chunks of `chunk` hits)
/// interleaved by `seed`.
fn fuse(
    names: &[String],
    weights: &[f64],
    lists: &[Vec<SourceHit>],
    method: FusionMethod,
    k: u32,
    seed: u64,
    chunk: usize,
) -> FusedList {
    let mut order: Vec<usize> = (0..names.len()).collect();
    shuffle(&mut order, seed);
    let declared: Vec<String> = order.iter().map(|&i| names[i].clone()).collect();
    let declared_w: Vec<f64> = order.iter().map(|&i| weights[i]).collect();
    let mut fuser = Fuser::new(&fuse_start(&declared, &declared_w, method, k)).unwrap();
    let mut batches: Vec<(usize, usize, Vec<SourceHit>)> = Vec::new();
    for (s, list) in lists.iter().enumerate() {
        for (n, c) in list.chunks(chunk).enumerate() {
            batches.push((s, n, c.to_vec()));
        }
    }
    shuffle(&mut batches, seed ^ 0x9e37_79b9);
    // Keep each source's batches in their own order: a source's stream is ordered.
    let mut next = vec![0usize; lists.len()];
    let mut pending = batches;
    while !pending.is_empty() {
        let i = pending.iter().position(|(s, n, _)| *n == next[*s]).unwrap();
        let (s, _, hits) = pending.remove(i);
        next[s] += 1;
        fuser.add_batch(&names[s], hits);
    }
    for name in &declared {
        fuser.end_source(name);
    }
    fuser.finish()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn fused_lists_do_not_depend_on_arrival_order(
        lists in prop::collection::vec(source_list(), 1..5),
        weights in prop::collection::vec(prop_oneof![Just(0.0), Just(0.5), Just(1.0), Just(2.0)], 5),
        weighted in any::<bool>(),
        k in 1u32..100,
        seeds in (any::<u64>(), any::<u64>()),
        chunks in (1usize..5, 1usize..5),
    ) {
        let names: Vec<String> = (0..lists.len()).map(|i| format!("src{i}")).collect();
        let lists: Vec<Vec<SourceHit>> = lists.iter().map(|l| to_hits(l)).collect();
        let method = if weighted { FusionMethod::WeightedScore } else { FusionMethod::Rrf };
        let w = &weights[..names.len()];
        let a = fuse(&names, w, &lists, method, k, seeds.0, chunks.0);
        let b = fuse(&names, w, &lists, method, k, seeds.1, chunks.1);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn no_fused_score_exceeds_the_sum_of_best_contributions(
        lists in prop::collection::vec(source_list(), 1..5),
        weights in prop::collection::vec(prop_oneof![Just(0.0), Just(0.5), Just(1.0), Just(3.0)], 5),
        weighted in any::<bool>(),
        k in 1u32..100,
    ) {
        let names: Vec<String> = (0..lists.len()).map(|i| format!("src{i}")).collect();
        let lists: Vec<Vec<SourceHit>> = lists.iter().map(|l| to_hits(l)).collect();
        let w = &weights[..names.len()];
        let method = if weighted { FusionMethod::WeightedScore } else { FusionMethod::Rrf };
        let list = fuse(&names, w, &lists, method, k, 0, 3);
        // RRF: Σ w/(k+1). Weighted score: Σ w (each normalised score is at most 1).
        let bound: f64 = if weighted { w.iter().sum() } else { w.iter().map(|w| w / (f64::from(k) + 1.0)).sum() };
        for hit in &list.hits {
            prop_assert!(hit.fused_score <= bound + 1e-12, "{} > {bound}", hit.fused_score);
            prop_assert!(hit.fused_score >= 0.0);
            // One contribution per distinct source, summing to the score.
            let c = &hit.explanation.as_ref().unwrap().contributions;
            let mut sources: Vec<&str> = c.iter().map(|c| c.source.as_str()).collect();
            sources.sort();
            sources.dedup();
            prop_assert_eq!(sources.len(), c.len());
            let sum: f64 = c.iter().map(|c| c.value).sum();
            prop_assert!((sum - hit.fused_score).abs() < 1e-12);
        }
        // Sorted by score, but for families of versions: a current version moved up to its old
        // version's place, and the old one directly below it.
        let in_list = |id: &str| list.hits.iter().any(|h| h.id == id);
        let old_of = |id: &str| {
            list.hits.iter().any(|o| o.version.as_ref().is_some_and(|v| v.status == "superseded" && v.superseded_by == id))
        };
        let scores: Vec<f64> = list
            .hits
            .iter()
            .filter(|h| !h.version.as_ref().is_some_and(|v| v.status == "superseded" && in_list(&v.superseded_by)))
            .filter(|h| !old_of(&h.id))
            .map(|h| h.fused_score)
            .collect();
        prop_assert!(scores.windows(2).all(|w| w[0] >= w[1]), "not sorted: {scores:?}");
    }

    #[test]
    fn a_fused_hit_holds_at_most_one_document_per_source_and_old_versions_rank_below_current(
        lists in prop::collection::vec(source_list(), 1..5),
        weighted in any::<bool>(),
    ) {
        let names: Vec<String> = (0..lists.len()).map(|i| format!("src{i}")).collect();
        let lists: Vec<Vec<SourceHit>> = lists.iter().map(|l| to_hits(l)).collect();
        let method = if weighted { FusionMethod::WeightedScore } else { FusionMethod::Rrf };
        let list = fuse(&names, &vec![1.0; names.len()], &lists, method, 60, 0, 3);
        for hit in &list.hits {
            // The only strong key in these inputs is the URL: members of one source share it.
            let mut members: Vec<(&str, &str)> = vec![(hit.source.as_str(), hit.url.as_str())];
            members.extend(hit.duplicates.iter().map(|d| (d.source.as_str(), d.url.as_str())));
            for (i, a) in members.iter().enumerate() {
                for b in &members[i + 1..] {
                    prop_assert!(a.0 != b.0 || (!a.1.is_empty() && a.1 == b.1), "two documents of {} in {}", a.0, hit.id);
                }
            }
        }
        let position = |id: &str| list.hits.iter().position(|h| h.id == id);
        let newer = |i: usize| {
            let v = list.hits[i].version.as_ref().filter(|v| v.status == "superseded")?;
            position(&v.superseded_by)
        };
        for i in 0..list.hits.len() {
            let Some(p) = newer(i) else { continue };
            // Except in a cycle (each group holds the other's newer version, through copies in
            // other sources), where the better-ranked group stays in place.
            let mut at = newer(p);
            let mut in_cycle = false;
            for _ in 0..list.hits.len() {
                match at {
                    Some(a) if a == i => in_cycle = true,
                    Some(a) => at = newer(a),
                    None => {}
                }
            }
            prop_assert!(p < i || in_cycle, "{} ranks above its newer version {}", list.hits[i].id, list.hits[p].id);
        }
    }
}
