//! The rows of a sub-query ranked by the question: templates return candidate rows (a
//! customer's orders, newest first), and the row the question is about comes first.
//!
//! Each hit's score is the share of the question it shows in its title, snippet and metadata
//! (which holds `matched_keywords`: the keywords that chose its template, so a row written in
//! English or in codes shows the 货款 / "leave" its template was chosen for):
//! Σ weight × IDF over the question's tokens ([`fedsearch_core::text::tokens`]) that the hit
//! shows, divided by the same over the tokens any hit shows; the router's terms that are not in
//! the question (other-language synonyms) weigh 0.6; IDF is over the rows returned. Ties keep
//! the templates' own order. A row that refers to another returned row (a refund naming the
//! order row's number) scores at least 0.8 of that row: it is about the same thing. Ranks are
//! 1.. in the new order and `score` carries the share, so fusion can weigh a strong match above
//! a weak one.

use std::collections::HashSet;

use fedsearch_adapter_kit::SourceHit;
use fedsearch_core::text::{token_set, weighted_tokens};

const TERM_WEIGHT: f64 = 0.6;

fn shown(h: &SourceHit) -> HashSet<String> {
    let mut keys: Vec<&String> = h.metadata.keys().collect();
    keys.sort();
    let meta = keys.into_iter().map(|k| h.metadata[k].as_str());
    token_set([h.title.as_str(), h.snippet.as_str()].into_iter().chain(meta))
}

/// What a row keeps of the share of a row it refers to (see [`linked`]); 1.0 measured the same.
pub const LINK_SHARE: f64 = 0.8;

/// A row that refers to another returned row — one of its metadata values is that row's key
/// (a refund's `order_no` is the order row's id) — is about what that row is about: its score
/// is at least [`LINK_SHARE`] of that row's. "Zhang Wei's smart watch refund": the order row
/// shows the name and the item, the refund row only the refund.
fn linked(hits: &[SourceHit], scores: &[f64]) -> Vec<f64> {
    let key = |h: &SourceHit| h.local_id.split_once(':').map_or(h.local_id.clone(), |(_, k)| k.to_string());
    let keys: Vec<String> = hits.iter().map(key).collect();
    hits.iter()
        .enumerate()
        .map(|(i, h)| {
            let refers = (0..hits.len())
                .filter(|&j| keys[j] != keys[i] && h.metadata.values().any(|v| *v == keys[j]))
                .map(|j| scores[j])
                .fold(0.0, f64::max);
            scores[i].max(LINK_SHARE * refers)
        })
        .collect()
}

/// Re-orders `hits` by how much of the question each shows; sets `rank` and `score`.
pub fn by_question(hits: &mut Vec<SourceHit>, question: &str, terms: &[String]) {
    let wanted = weighted_tokens(question, terms, TERM_WEIGHT);
    let shown: Vec<HashSet<String>> = hits.iter().map(shown).collect();
    let scores = linked(hits, &fedsearch_core::text::coverage(&wanted, &shown));
    let mut order: Vec<(f64, usize, SourceHit)> =
        std::mem::take(hits).into_iter().enumerate().map(|(i, h)| (scores[i], i, h)).collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    *hits = order
        .into_iter()
        .enumerate()
        .map(|(rank, (score, _, mut h))| {
            h.rank = rank as u32 + 1;
            h.score = Some(score);
            h
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, title: &str) -> SourceHit {
        SourceHit { local_id: id.into(), title: title.into(), ..Default::default() }
    }

    #[test]
    fn the_row_the_question_is_about_comes_first_and_ties_keep_the_template_order() {
        let mut hits = vec![
            hit("o:1", "SO1 无线降噪耳机 Wireless earbuds — paid"),
            hit("o:3", "SO3 智能手表 Smart watch — refunded"),
            hit("o:9", "SO9 Yoga mat — delivered"),
        ];
        by_question(&mut hits, "张伟的智能手表退款为什么会有争议？", &[]);
        assert_eq!(hits.iter().map(|h| h.local_id.as_str()).collect::<Vec<_>>(), ["o:3", "o:1", "o:9"]);
        assert_eq!(hits.iter().map(|h| h.rank).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(hits[0].score.unwrap() > 0.0 && hits[2].score == Some(0.0));
        // English question, Chinese row: the router's synonyms carry it.
        let mut hits = vec![hit("o:1", "SO1 耳机"), hit("o:3", "SO3 智能手表")];
        by_question(&mut hits, "the smart watch", &["智能手表".into()]);
        assert_eq!(hits[0].local_id, "o:3");
    }

    #[test]
    fn a_row_that_refers_to_the_row_the_question_is_about_follows_it() {
        let mut refund = hit("refunds:RF1", "Refund RF1 for SO3 — completed");
        refund.metadata.insert("order_no".into(), "SO3".into());
        let mut hits = vec![
            hit("orders:SO1", "SO1 无线降噪耳机 Wireless earbuds — paid"),
            hit("orders:SO3", "SO3 智能手表 Smart watch — refunded"),
            refund,
            hit("orders:SO9", "SO9 Yoga mat — delivered"),
        ];
        by_question(&mut hits, "Was the smart watch paid back?", &[]);
        let ids: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).collect();
        assert_eq!(ids[..2], ["orders:SO3", "refunds:RF1"], "{ids:?}");
        let (order, refund) = (hits[0].score.unwrap(), hits[1].score.unwrap());
        assert!((refund - LINK_SHARE * order).abs() < 1e-9, "{order} {refund}");
    }
}
