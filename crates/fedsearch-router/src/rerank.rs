//! Result merging by the question's own words: the fused candidates are re-scored with one
//! scoring function for every source, over what each hit shows (title, snippet, metadata).
//!
//! Rank-based fusion gives every source's best hit full credit, however weakly it matched: an
//! incident log's top hit for "拒收手续费现在是多少" is still its top hit. Each source's scores
//! mean different things, so they cannot say which source's best is better; the words a hit
//! shows can. For each candidate:
//!
//! - `coverage` = Σ over question tokens the hit shows of weight × IDF / Σ over the question's
//!   tokens that any candidate shows of weight × IDF. Tokens are [`crate::analysis::tokens`]
//!   (stemmed words, CJK bigrams); a token from a glossary expansion (the other language's word)
//!   weighs 0.6; IDF is over the candidates, so a word every candidate shows counts little.
//! - `score` = (1 − β) × fused score / best fused score + β × coverage, β = `rerank.coverage_weight`.
//!
//! An old version (`version.status = superseded`) whose current version is also a candidate
//! keeps [`OLD_VERSION_SHARE`] of its score, unless it shows more of the question than the
//! current one ("the 2025 edition"): the current version answers, the old one is background.
//! Versions keep fusion's rule afterwards: an old version never ranks above its current one
//! (the current one takes the better place). With β = 0 the fused order is kept.

use std::collections::{HashMap, HashSet};

use fedsearch_proto::types::Hit;

/// The question's tokens that `h` shows in its title, snippet or metadata values (coverage
/// asks only about those, so no other token is kept).
fn shown_tokens(h: &Hit, asked: &HashSet<&str>) -> HashSet<String> {
    let mut shown = HashSet::new();
    for part in [h.title.as_str(), h.snippet.as_str()].into_iter().chain(h.metadata.values().map(String::as_str)) {
        fedsearch_core::text::each_token(part, |t| {
            if asked.contains(t) && !shown.contains(t) {
                shown.insert(t.to_string());
            }
        });
    }
    shown
}

/// Each hit's share of the question it shows, 0..=1, in the hits' order.
pub fn coverage(question: &[(String, f64)], hits: &[Hit]) -> Vec<f64> {
    let asked: HashSet<&str> = question.iter().map(|(t, _)| t.as_str()).collect();
    let shown: Vec<HashSet<String>> = hits.iter().map(|h| shown_tokens(h, &asked)).collect();
    fedsearch_core::text::coverage(question, &shown)
}

/// What an old version keeps of its score when its current version is among the candidates and
/// the question shows no preference for the old one (measured: 0.5 cost questions about the old
/// edition, 1.0 keeps an unasked old version in the top ten on both tuning companies).
pub const OLD_VERSION_SHARE: f64 = 0.7;

/// Re-orders `hits` by fused score and coverage (see the module docs).
pub fn rerank(hits: &mut Vec<Hit>, question: &[(String, f64)], coverage_weight: f64) {
    if hits.len() < 2 || coverage_weight <= 0.0 {
        return;
    }
    let cov = coverage(question, hits);
    let best = hits.iter().map(|h| h.fused_score).fold(0.0, f64::max);
    let at: HashMap<&str, usize> = hits.iter().enumerate().map(|(i, h)| (h.id.as_str(), i)).collect();
    let replaced: Vec<bool> = hits.iter().enumerate().map(|(i, h)| old_version_not_asked(h, i, &at, &cov)).collect();
    let mut scored: Vec<(f64, usize, Hit)> = std::mem::take(hits)
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let fused = if best > 0.0 { h.fused_score / best } else { 0.0 };
            let score = (1.0 - coverage_weight) * fused + coverage_weight * cov[i];
            (if replaced[i] { score * OLD_VERSION_SHARE } else { score }, i, h)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    *hits = scored.into_iter().map(|(_, _, h)| h).collect();
    current_before_superseded(hits);
}

/// Whether hit `i` is an old version whose current version is among the hits (`at`: id →
/// index) and that shows no more of the question than the current one (a question about the
/// 2025 edition shows `2025` in the old version only).
fn old_version_not_asked(h: &Hit, i: usize, at: &HashMap<&str, usize>, cov: &[f64]) -> bool {
    let Some(v) = h.version.as_ref().filter(|v| v.status == "superseded") else { return false };
    at.get(v.superseded_by.as_str()).is_some_and(|&c| cov[i] <= cov[c])
}

/// An old version marked by fusion (`version.status = superseded`, `superseded_by` in the list)
/// never ranks above its current version: the current one moves up to the old one's place.
pub fn current_before_superseded(hits: &mut Vec<Hit>) {
    for _ in 0..hits.len() {
        let pos: HashMap<String, usize> = hits.iter().enumerate().map(|(i, h)| (h.id.clone(), i)).collect();
        let misplaced = hits.iter().enumerate().find_map(|(i, h)| {
            let v = h.version.as_ref().filter(|v| v.status == "superseded")?;
            pos.get(&v.superseded_by).filter(|&&c| c > i).map(|&c| (i, c))
        });
        let Some((old, current)) = misplaced else { return };
        let h = hits.remove(current);
        hits.insert(old, h);
    }
}

#[cfg(test)]
mod tests {
    use fedsearch_proto::types::VersionInfo;

    use super::*;
    use crate::analysis::{Glossary, question_tokens};

    fn question(q: &str, g: &Glossary) -> Vec<(String, f64)> {
        question_tokens(q, &g.expand(q))
    }

    fn hit(id: &str, title: &str, score: f64) -> Hit {
        Hit { id: id.into(), title: title.into(), fused_score: score, ..Default::default() }
    }

    #[test]
    fn a_weak_sources_top_hit_gives_way_to_a_hit_that_shows_the_question() {
        let g = Glossary::new(true, &[]);
        let q = question("拒收手续费现在是多少？", &g);
        let mut hits = vec![
            hit("incidents:INC-1", "payment gateway timeout", 0.75),
            hit("kb:KB-3", "拒收与退货费用说明 rejection fee", 0.60),
            hit("tickets:T-9", "订单签收确认", 0.24),
        ];
        rerank(&mut hits, &q, 0.5);
        assert_eq!(hits[0].id, "kb:KB-3", "{:?}", hits.iter().map(|h| &h.id).collect::<Vec<_>>());
        let mut same = hits.clone();
        rerank(&mut same, &q, 0.0);
        assert_eq!(same.iter().map(|h| &h.id).collect::<Vec<_>>(), hits.iter().map(|h| &h.id).collect::<Vec<_>>());
    }

    #[test]
    fn coverage_counts_other_language_words_and_ignores_words_no_hit_shows() {
        let g = Glossary::new(true, &[]);
        let q = question("refund fee 咖啡", &g);
        let hits = vec![hit("a:1", "退款 手续费", 1.0), hit("a:2", "nothing here", 1.0)];
        let c = coverage(&q, &hits);
        assert!(c[0] > 0.5 && c[1] == 0.0, "{c:?}");
    }

    fn old(id: &str, title: &str, score: f64, current: &str) -> Hit {
        let mut h = hit(id, title, score);
        h.version =
            Some(VersionInfo { status: "superseded".into(), superseded_by: current.into(), ..Default::default() });
        h
    }

    #[test]
    fn an_old_version_gives_way_unless_the_question_asks_for_it() {
        let g = Glossary::new(true, &[]);
        let hits = || {
            vec![
                hit("wiki:p", "Return policy 2026 rejection fee", 1.0),
                old("wiki:p_2025", "Return policy legacy edition rejection fee", 0.9, "wiki:p"),
                hit("kb:x", "Rejection fee how-to", 0.8),
            ]
        };
        let ids = |h: &[Hit]| h.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
        let mut h = hits();
        rerank(&mut h, &question("rejection fee", &g), 0.3);
        assert_eq!(ids(&h), ["wiki:p", "kb:x", "wiki:p_2025"]);
        let mut h = hits();
        rerank(&mut h, &question("the legacy edition's rejection fee", &g), 0.3);
        assert_eq!(ids(&h), ["wiki:p", "wiki:p_2025", "kb:x"], "asked for: not demoted");
        // Without its current version among the candidates an old version is not demoted.
        let mut h = vec![
            old("wiki:p_2025", "Return policy legacy edition rejection fee", 0.9, "wiki:p"),
            hit("kb:x", "Rejection fee", 0.8),
        ];
        rerank(&mut h, &question("rejection fee", &g), 0.3);
        assert_eq!(ids(&h), ["wiki:p_2025", "kb:x"]);
    }

    proptest::proptest! {
        /// Keeping only the question's tokens of each hit gives the coverage of its whole token set.
        #[test]
        fn coverage_over_the_asked_tokens_is_coverage_over_all_tokens(
            q in "[a-z退款发货政策 ]{0,24}",
            texts in proptest::collection::vec(("[a-zA-Z退款发货政策运费 ,-]{0,40}", "[a-z发货 ]{0,20}"), 1..6),
        ) {
            let g = Glossary::new(true, &[]);
            let question = question(&q, &g);
            let hits: Vec<Hit> = texts
                .iter()
                .map(|(title, meta)| {
                    let mut h = hit("s:1", title, 1.0);
                    h.metadata.insert("k".into(), meta.clone());
                    h
                })
                .collect();
            let all: Vec<HashSet<String>> = hits
                .iter()
                .map(|h| fedsearch_core::text::token_set([h.title.as_str(), h.snippet.as_str(), h.metadata["k"].as_str()]))
                .collect();
            proptest::prop_assert_eq!(coverage(&question, &hits), fedsearch_core::text::coverage(&question, &all));
        }
    }

    #[test]
    fn an_old_version_never_ends_above_its_current_one() {
        let mut old = hit("wiki:p_2025", "Policy 2025", 1.0);
        old.version =
            Some(VersionInfo { status: "superseded".into(), superseded_by: "wiki:p".into(), ..Default::default() });
        let mut hits = vec![old, hit("kb:x", "x", 0.9), hit("wiki:p", "Policy 2026", 0.1)];
        current_before_superseded(&mut hits);
        assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["wiki:p", "wiki:p_2025", "kb:x"]);
    }
}
