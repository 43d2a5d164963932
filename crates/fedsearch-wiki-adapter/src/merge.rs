//! Merging the answers of one plan's searches (see [`crate::terms`]) into one ranked list.
//!
//! A page found by several searches appears once. Pages are ranked by **coverage**: the sum,
//! over the searches (concepts) that found the page, of `length weight × rarity`, where
//! - the length weight ([`crate::terms::length_weight`], 1..2) favours longer, more specific terms,
//! - rarity is an IDF over this user's own answers: `ln(1 + N/df) / ln(1 + N)` (0..1], with `N`
//!   the distinct pages all searches returned and `df` the pages this search returned; a term
//!   that matches everything counts little.
//!
//! Synonyms the router grouped as `a|b` are one search, so they count once. Ties go to the sum
//! of DokuWiki's own scores, then the newer `mtime`, then the page id (a stable order). The
//! hit's `score` is the coverage; `metadata.matched_terms` lists the terms that found it and
//! `metadata.wiki_score` the summed DokuWiki score. The snippet comes from the most specific
//! search that has one (DokuWiki gives snippets for its first 15 results only).

use std::collections::HashMap;

use crate::{source::Found, terms::Plan};

struct Entry {
    found: Found,
    coverage: f64,
    wiki_score: f64,
    /// (weight, -index) of the search the snippet came from.
    snippet_from: (f64, i64),
    matched: Vec<usize>,
}

/// Merges the successful searches: `answers` pairs a search's index in `plan` with its results.
pub fn merge(plan: &Plan, answers: Vec<(usize, Vec<Found>)>) -> Vec<Found> {
    let distinct: std::collections::HashSet<&str> =
        answers.iter().flat_map(|(_, found)| found.iter().map(|f| f.id.as_str())).collect();
    let n = distinct.len() as f64;
    let rarity = |df: usize| if df == 0 || n <= 1.0 { 1.0 } else { (1.0 + n / df as f64).ln() / (1.0 + n).ln() };
    let weights: Vec<(usize, f64)> = answers
        .iter()
        .map(|(i, found)| {
            let mut ids: Vec<&str> = found.iter().map(|f| f.id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            (*i, plan.searches.get(*i).map_or(1.0, |s| s.weight) * rarity(ids.len()))
        })
        .collect();
    let mut entries: HashMap<String, Entry> = HashMap::new();
    for ((i, found), (_, weight)) in answers.into_iter().zip(weights) {
        for f in found {
            let score = f.score.unwrap_or(0.0);
            match entries.get_mut(&f.id) {
                Some(e) => {
                    if e.matched.contains(&i) {
                        continue; // a page listed twice by one search counts once
                    }
                    e.matched.push(i);
                    e.coverage += weight;
                    e.wiki_score += score;
                    let from = (weight, -(i as i64));
                    if !f.snippet.is_empty()
                        && (e.found.snippet.is_empty()
                            || from.0.total_cmp(&e.snippet_from.0).then(from.1.cmp(&e.snippet_from.1)).is_gt())
                    {
                        e.found.snippet = f.snippet;
                        e.snippet_from = from;
                    }
                    if e.found.updated_at.is_none() {
                        e.found.updated_at = f.updated_at;
                    }
                }
                None => {
                    let snippet_from = if f.snippet.is_empty() { (0.0, i64::MIN) } else { (weight, -(i as i64)) };
                    entries.insert(
                        f.id.clone(),
                        Entry { found: f, coverage: weight, wiki_score: score, snippet_from, matched: vec![i] },
                    );
                }
            }
        }
    }
    let mut ranked: Vec<Entry> = entries.into_values().collect();
    let mtime = |e: &Entry| e.found.updated_at.as_ref().map_or(i64::MIN, |t| t.seconds);
    ranked.sort_by(|a, b| {
        b.coverage
            .total_cmp(&a.coverage)
            .then(b.wiki_score.total_cmp(&a.wiki_score))
            .then(mtime(b).cmp(&mtime(a)))
            .then(a.found.id.cmp(&b.found.id))
    });
    ranked
        .into_iter()
        .map(|mut e| {
            e.matched.sort_unstable();
            let labels: Vec<&str> =
                e.matched.iter().filter_map(|i| plan.searches.get(*i)).map(|s| s.label.as_str()).collect();
            e.found.score = Some((e.coverage * 1000.0).round() / 1000.0);
            e.found.extra.push(("matched_terms".into(), labels.join(", ")));
            e.found.extra.push(("wiki_score".into(), format!("{}", e.wiki_score)));
            e.found
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use prost_types::Timestamp;

    use super::*;
    use crate::{config::SearchConfig, terms::plan};

    fn f(id: &str, score: i64, mtime: i64, snippet: &str) -> Found {
        Found {
            id: id.into(),
            title: id.into(),
            snippet: snippet.into(),
            url: format!("u/{id}"),
            updated_at: Some(Timestamp { seconds: mtime, nanos: 0 }),
            score: Some(score as f64),
            namespace: "public".into(),
            extra: vec![],
        }
    }

    fn ids(found: &[Found]) -> Vec<&str> {
        found.iter().map(|f| f.id.as_str()).collect()
    }

    fn extra<'a>(f: &'a Found, k: &str) -> &'a str {
        f.extra.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str()).unwrap_or("")
    }

    #[test]
    fn pages_matching_more_terms_rank_first_and_appear_once() {
        let p = plan("rejection fee refund policy for refused deliveries", &[], "", &SearchConfig::default());
        let q: Vec<&str> = p.searches.iter().map(|s| s.query.as_str()).collect();
        assert_eq!(q, ["rejection", "fee", "refund", "policy", "refused", "deliveries"]);
        let answers = vec![
            (0, vec![f("a", 3, 10, "a rejection")]),
            (1, vec![f("a", 2, 10, ""), f("b", 9, 20, "b fee"), f("c", 1, 30, "")]),
            (2, vec![f("b", 1, 20, ""), f("a", 1, 10, ""), f("c", 1, 30, ""), f("d", 1, 40, "")]),
            (3, vec![]),
        ];
        let merged = merge(&p, answers);
        assert_eq!(ids(&merged), ["a", "b", "c", "d"]);
        assert_eq!(extra(&merged[0], "matched_terms"), "rejection, fee, refund");
        assert_eq!(extra(&merged[0], "wiki_score"), "6");
        // the snippet of the rarer, more specific search wins
        assert_eq!(merged[0].snippet, "a rejection");
        assert_eq!(merged[1].snippet, "b fee");
        assert!(merged.windows(2).all(|w| w[0].score >= w[1].score), "{merged:?}");
    }

    #[test]
    fn a_rare_term_outweighs_one_that_matches_everything() {
        let p = plan("alpha omega", &["common".into(), "rare".into()], "", &SearchConfig::default());
        // search 0 is the text as sent; 1 = common, 2 = rare
        let everyone: Vec<Found> = (0..10).map(|i| f(&format!("p{i}"), 1, i, "")).collect();
        let merged = merge(&p, vec![(1, everyone), (2, vec![f("p3", 1, 3, "")])]);
        assert_eq!(merged[0].id, "p3");
        assert_eq!(merged.len(), 10);
    }

    #[test]
    fn ties_go_to_wiki_score_then_mtime_then_id() {
        let p = plan("x", &[], "", &SearchConfig::default());
        let merged =
            merge(&p, vec![(0, vec![f("old", 5, 1, ""), f("new", 5, 9, ""), f("best", 7, 1, ""), f("a", 5, 9, "")])]);
        assert_eq!(ids(&merged), ["best", "a", "new", "old"]);
    }

    #[test]
    fn merging_does_not_depend_on_the_order_answers_arrive_in() {
        let p = plan("rejection fee", &[], "", &SearchConfig::default());
        let a = vec![
            (0, vec![f("x", 2, 1, "")]),
            (1, vec![f("y", 1, 2, ""), f("x", 1, 1, "")]),
            (2, vec![f("z", 1, 3, "")]),
        ];
        let mut b = a.clone();
        b.reverse();
        assert_eq!(ids(&merge(&p, a)), ids(&merge(&p, b)));
    }
}
