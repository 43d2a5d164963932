//! Scores of one answer against its labels. Pure functions, so they are tested by hand.
//!
//! - **nDCG@k**: gain `2^g − 1` at rank `i` discounted by `log2(i + 1)`, divided by the ideal
//!   order of every labeled id. A fused hit earns the best grade among its own id and its
//!   duplicates' ids; each labeled id earns once (the first time it is shown).
//! - **P@5**: share of the first five hits with any grade. **MRR**: 1 / rank of the first graded
//!   hit (0 when none).
//! - **Routing**: recall and precision of the selected sources against `expected_sources`.
//! - **Source recall@k**: share of expected sources that appear among the top k (a duplicate's
//!   source counts: its document is shown).
//! - **Forbidden**: forbidden ids anywhere (hits, duplicates, context, fetched documents).
//! - **Superseded first**: an old version shown in the top k above its current version, or
//!   without it.

use std::collections::{BTreeMap, HashSet};

use super::labels::Question;

/// One fused hit as the evaluator sees it.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    /// The hit's id first, then its duplicates' ids.
    pub ids: Vec<String>,
    pub sources: Vec<String>,
    /// The hit says it is a superseded version.
    pub marked_superseded: bool,
}

/// What came back for one question.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub hits: Vec<Shown>,
    pub selected_sources: Vec<String>,
    /// Ids in the agent context, and ids of documents fetched by `full_text_ref`.
    pub other_ids: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Scores {
    pub ndcg: f64,
    pub p5: f64,
    pub mrr: f64,
    pub routing_recall: f64,
    pub routing_precision: f64,
    pub source_recall: f64,
    pub forbidden: Vec<String>,
    pub superseded_first: Vec<String>,
}

/// Whether a shown id is the labeled id. SQL hits are `<source>:<template>:<key>`, so a label
/// `<source>:<key>` also matches any template's hit with that key.
pub fn same_id(shown: &str, label: &str) -> bool {
    if shown == label {
        return true;
    }
    let (Some((s_src, s_rest)), Some((l_src, l_rest))) = (shown.split_once(':'), label.split_once(':')) else {
        return false;
    };
    s_src == l_src
        && s_rest
            .strip_suffix(l_rest)
            .is_some_and(|prefix| prefix.ends_with(':') && !prefix[..prefix.len() - 1].contains(':'))
}

fn grade_of<'a>(labels: &'a BTreeMap<String, u8>, id: &str) -> Option<(&'a str, u8)> {
    labels.iter().find(|(l, _)| same_id(id, l)).map(|(l, g)| (l.as_str(), *g))
}

fn dcg(gains: impl Iterator<Item = u8>) -> f64 {
    gains.enumerate().map(|(i, g)| (2f64.powi(g.into()) - 1.0) / ((i + 2) as f64).log2()).sum()
}

/// The grade each of the first `k` hits earns (each label once).
fn earned(q: &Question, hits: &[Shown], k: usize) -> Vec<u8> {
    let mut used: HashSet<&str> = HashSet::new();
    hits.iter()
        .take(k)
        .map(|h| {
            let best = h
                .ids
                .iter()
                .filter_map(|id| grade_of(&q.relevant, id))
                .filter(|(l, _)| !used.contains(l))
                .max_by_key(|(_, g)| *g);
            match best {
                Some((label, g)) => {
                    used.insert(label);
                    g
                }
                None => 0,
            }
        })
        .collect()
}

/// The grade each hit of the answer earned (each label once), in order.
pub fn grades(q: &Question, a: &Answer) -> Vec<u8> {
    earned(q, &a.hits, a.hits.len())
}

fn position(hits: &[Shown], k: usize, label: &str) -> Option<usize> {
    hits.iter().take(k).position(|h| h.ids.iter().any(|id| same_id(id, label)))
}

pub fn score(q: &Question, a: &Answer, k: usize) -> Scores {
    let gains = earned(q, &a.hits, k);
    let mut ideal: Vec<u8> = q.relevant.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    ideal.truncate(k);
    let idcg = dcg(ideal.into_iter());
    let ndcg = if idcg > 0.0 { dcg(gains.iter().copied()) / idcg } else { 0.0 };
    let p5 = gains.iter().take(5).filter(|g| **g > 0).count() as f64 / 5.0;
    let mrr = gains.iter().position(|g| *g > 0).map_or(0.0, |i| 1.0 / (i + 1) as f64);

    let expected: HashSet<&str> = q.expected_sources.iter().map(String::as_str).collect();
    let selected: HashSet<&str> = a.selected_sources.iter().map(String::as_str).collect();
    let hit_sel = expected.intersection(&selected).count() as f64;
    let ratio = |n: f64, d: usize| if d == 0 { 1.0 } else { n / d as f64 };
    let shown_sources: HashSet<&str> =
        a.hits.iter().take(k).flat_map(|h| h.sources.iter().map(String::as_str)).collect();

    let mut forbidden: Vec<String> = q
        .forbidden
        .iter()
        .filter(|f| a.hits.iter().flat_map(|h| &h.ids).chain(&a.other_ids).any(|id| same_id(id, f)))
        .cloned()
        .collect();
    forbidden.dedup();
    let superseded_first = q
        .superseded
        .iter()
        .filter(|s| match (position(&a.hits, k, &s.old), position(&a.hits, k, &s.current)) {
            (Some(old), Some(cur)) => old < cur,
            (Some(_), None) => true,
            _ => false,
        })
        .map(|s| s.old.clone())
        .collect();
    Scores {
        ndcg,
        p5,
        mrr,
        routing_recall: ratio(hit_sel, expected.len()),
        routing_precision: if selected.is_empty() { 0.0 } else { ratio(hit_sel, selected.len()) },
        source_recall: ratio(expected.intersection(&shown_sources).count() as f64, expected.len()),
        forbidden,
        superseded_first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::labels::parse_questions;

    fn q(line: &str) -> Question {
        parse_questions(line).unwrap().remove(0)
    }

    fn shown(ids: &[&str]) -> Shown {
        Shown {
            ids: ids.iter().map(|s| s.to_string()).collect(),
            sources: ids.iter().map(|s| s.split(':').next().unwrap().to_string()).collect(),
            marked_superseded: false,
        }
    }

    #[test]
    fn sql_template_prefixes_match_a_plain_label() {
        assert!(same_id("orders:order_by_number:SO1", "orders:SO1"));
        assert!(same_id("wiki:public:p", "wiki:public:p"));
        assert!(!same_id("orders:order_by_number:SO11", "orders:SO1"));
        assert!(!same_id("wiki:a:b:p", "wiki:p"), "only one template segment is skipped");
        assert!(!same_id("tickets:SO1", "orders:SO1"));
    }

    #[test]
    fn ndcg_by_hand() {
        let q = q(r#"{"id":"q","user":"u","question":"x","relevant":{"a:1":3,"b:2":1},"expected_sources":["a","b"]}"#);
        let perfect = Answer {
            hits: vec![shown(&["a:1"]), shown(&["b:2"])],
            selected_sources: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        let s = score(&q, &perfect, 10);
        assert!((s.ndcg - 1.0).abs() < 1e-12);
        assert_eq!((s.p5, s.mrr, s.routing_recall, s.routing_precision, s.source_recall), (0.4, 1.0, 1.0, 1.0, 1.0));
        // Swapped: DCG = 1/1 + 7/log2(3); ideal = 7 + 1/log2(3).
        let swapped = Answer {
            hits: vec![shown(&["b:2"]), shown(&["a:1"])],
            selected_sources: vec!["a".into(), "x".into()],
            ..Default::default()
        };
        let s = score(&q, &swapped, 10);
        let want = (1.0 + 7.0 / 3f64.log2()) / (7.0 + 1.0 / 3f64.log2());
        assert!((s.ndcg - want).abs() < 1e-12);
        assert_eq!((s.routing_recall, s.routing_precision), (0.5, 0.5));
    }

    #[test]
    fn a_duplicate_earns_its_grade_once() {
        let q = q(r#"{"id":"q","user":"u","question":"x","relevant":{"a:1":3}}"#);
        let a = Answer { hits: vec![shown(&["c:9", "a:1"]), shown(&["a:1"])], ..Default::default() };
        let s = score(&q, &a, 10);
        assert!((s.ndcg - 1.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s.p5, 0.2);
    }

    #[test]
    fn forbidden_ids_are_found_anywhere_and_old_versions_above_current_count() {
        let q = q(
            r#"{"id":"q","user":"u","question":"x","relevant":{"w:new":3},"forbidden":["w:secret"],"superseded":[{"old":"w:old","current":"w:new"}]}"#,
        );
        let a = Answer {
            hits: vec![shown(&["w:old"]), shown(&["w:new"])],
            other_ids: vec!["w:secret".into()],
            ..Default::default()
        };
        let s = score(&q, &a, 10);
        assert_eq!(s.forbidden, vec!["w:secret"]);
        assert_eq!(s.superseded_first, vec!["w:old"]);
        let alone = Answer { hits: vec![shown(&["w:old"])], ..Default::default() };
        assert_eq!(score(&q, &alone, 10).superseded_first, vec!["w:old"]);
        let right = Answer { hits: vec![shown(&["w:new"]), shown(&["w:old"])], ..Default::default() };
        assert!(score(&q, &right, 10).superseded_first.is_empty());
    }
}
