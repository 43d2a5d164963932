//! Merging the answers of one plan's searches (see [`crate::terms`]) into one ranked list.
//!
//! A page found by several searches appears once. Its **score (`SourceHit.score`) is the share
//! of the question it matches**, in (0, 1], BM25-like over the searches of the plan (each one
//! concept of the question; synonyms the router grouped as `a|b` are one search, so they count
//! once):
//!
//! `score = Σ_{terms the page matches} w × tf_part × title / Σ_{terms} w × (1 + title_boost)`
//!
//! - `w = length weight × rarity × origin`: the length weight ([`crate::terms::length_weight`],
//!   1..2) favours longer, more specific terms; rarity is an IDF over this user's own answers,
//!   `ln(1 + N/df) / ln(1 + N)` in (0, 1] (`N` the distinct pages all searches returned, `df`
//!   the pages this search returned): a term that matches everything counts little, one that
//!   matches nothing keeps its full weight, so the question's unmatched words lower every
//!   page's share — except an id (a term with a digit: `BK26-10531`) that no page holds, which
//!   is another source's business and left out; origin is 1 for a term of the question and
//!   `ranking.expansion_weight` for a glossary expansion sent as a term of its own;
//! - `tf_part = 0.5 + 0.5 × tf / (tf + 1)`: DokuWiki's score of the page for that search (how
//!   often the words occur) saturates, as in BM25;
//! - `title = 1 + ranking.title_boost` when the page's title shows the term (a CJK term as a
//!   substring, a Latin one word by word give or take an ending, see [`shows`]), else 1. A term
//!   the title shows counts as matched even when its search missed the page (DokuWiki matches
//!   whole words: `disputes` does not find "Invoice dispute procedure").
//!
//! A page that matches only one term of a plan of three or more searches, not in its title (a
//! common word such as "class" in a travel policy), keeps `ranking.single_term_factor` of its
//! score. Pages below `ranking.min_score` (default 0: none) are dropped, except those that
//! match more than one term (or one in their title) and score at least `ranking.near_best` ×
//! the best page: with 0.04 a question whose only wiki match is one generic word gets no wiki
//! hit, and a Chinese question of many words keeps the page that matches two of them. So 1 means every term of the
//! question in the title and often in the body; a weak match scores low however it ranks. The
//! router's fusion still divides by the source's best score, so what it reads is the ratio
//! between pages; the absolute share is what decides the drop. Ties go to the sum of
//! DokuWiki's own scores, then the newer `mtime`, then the page id (a stable order).
//! `metadata.matched_terms` lists the terms whose searches found the page and
//! `metadata.wiki_score` the summed DokuWiki score. The snippet comes from the most specific
//! search that has one (DokuWiki gives snippets for its first 15 results only); `Found.matched`
//! keeps every matching search's alternatives, for [`crate::passages`].
//!
//! Measured with `scripts/eval.sh orca|spruce --fetch --context-tokens 1500` (2026-12-02,
//! router, fusion and the other adapters of b6de4c4), the defaults: nDCG@10 Orca 0.814 → 0.823,
//! Spruce 0.872 → 0.878, and on the held-out companies (aggregates only) Kestrel 0.720 → 0.734,
//! Nimbus 0.722 → 0.729. `min_score: 0.04` read Orca 0.824 (cross-lingual 0.675 → 0.730,
//! version 0.678 → 0.701) and Spruce 0.878 but lost Nimbus (0.700: policy, version and long
//! questions) with Kestrel flat (0.720), so it is off by default. On Orca / Spruce with 0.04,
//! an absolute `min_score` alone (no `near_best`) read 0.805 / 0.877, `near_best` without
//! exempting one-term pages 0.821 / 0.869, `title_boost: 2` 0.825 / 0.874,
//! `single_term_factor` 0.5 0.822 / 0.877 and 0.1 0.825 / 0.878, `expansion_weight: 1` the
//! same as 0.5.

use std::collections::{HashMap, HashSet};

use crate::{
    config::RankingConfig,
    source::Found,
    terms::{Plan, Planned, is_cjk},
};

struct Entry {
    found: Found,
    wiki_score: f64,
    /// (weight, -index) of the search the snippet came from.
    snippet_from: (f64, i64),
    /// (search index, DokuWiki's score for it).
    matched: Vec<(usize, f64)>,
}

/// Each answered search's weight `w` (length weight × rarity × origin; see the module docs).
fn weights(plan: &Plan, answers: &[(usize, Vec<Found>)], ranking: &RankingConfig) -> HashMap<usize, f64> {
    let distinct: HashSet<&str> = answers.iter().flat_map(|(_, found)| found.iter().map(|f| f.id.as_str())).collect();
    let n = distinct.len() as f64;
    let rarity = |df: usize| if df == 0 || n <= 1.0 { 1.0 } else { (1.0 + n / df as f64).ln() / (1.0 + n).ln() };
    answers
        .iter()
        .map(|(i, found)| {
            let df = found.iter().map(|f| f.id.as_str()).collect::<HashSet<_>>().len();
            let (length, origin) = plan
                .searches
                .get(*i)
                .map_or((1.0, 1.0), |s| (s.weight, if s.original { 1.0 } else { ranking.expansion_weight }));
            (*i, length * rarity(df) * origin)
        })
        .collect()
}

/// Whether two Latin words are one word give or take an ending (`delivery`, `deliveries`).
fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let longest = a.chars().count().max(b.chars().count());
    common >= 4 && common + 3 >= longest
}

/// Whether `title` (lowercase) shows the term `alternative`: a CJK term as a substring, a Latin
/// term (or phrase) word by word.
pub fn shows(title: &str, alternative: &str) -> bool {
    let term = alternative.trim_matches('"').to_lowercase();
    if term.is_empty() {
        return false;
    }
    if term.chars().any(is_cjk) {
        return title.contains(&term);
    }
    let words: Vec<&str> = title.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    term.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).all(|t| words.iter().any(|w| same_word(w, t)))
}

fn in_title(title: &str, search: Option<&Planned>) -> bool {
    let Some(search) = search else { return false };
    if search.is_text {
        return search.query.split_whitespace().all(|w| shows(title, w));
    }
    search.alternatives.iter().any(|a| shows(title, a))
}

fn collect(answers: Vec<(usize, Vec<Found>)>, weights: &HashMap<usize, f64>) -> Vec<Entry> {
    let mut entries: HashMap<String, Entry> = HashMap::new();
    for (i, found) in answers {
        let weight = weights.get(&i).copied().unwrap_or(1.0);
        for f in found {
            let score = f.score.unwrap_or(0.0);
            let from = (weight, -(i as i64));
            match entries.get_mut(&f.id) {
                Some(e) => {
                    if e.matched.iter().any(|(m, _)| *m == i) {
                        continue; // a page listed twice by one search counts once
                    }
                    e.matched.push((i, score));
                    e.wiki_score += score;
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
                    let snippet_from = if f.snippet.is_empty() { (0.0, i64::MIN) } else { from };
                    entries.insert(
                        f.id.clone(),
                        Entry { found: f, wiki_score: score, snippet_from, matched: vec![(i, score)] },
                    );
                }
            }
        }
    }
    entries.into_values().collect()
}

/// The page's share of the question (see the module docs), and whether it was demoted as a
/// match of one term only. A term its title shows counts as
/// matched even when the search missed the page (DokuWiki matches whole words: `disputes` does
/// not find "Invoice dispute procedure").
fn page_score(
    e: &Entry,
    plan: &Plan,
    weights: &HashMap<usize, f64>,
    skipped: &HashSet<usize>,
    ranking: &RankingConfig,
) -> (f64, bool) {
    let title = e.found.title.to_lowercase();
    let (mut total, mut matched, mut terms, mut any_title) = (0.0, 0.0, 0usize, false);
    for (i, w) in weights {
        if skipped.contains(i) {
            continue; // an id no page holds (an order number) is another source's business
        }
        total += w * (1.0 + ranking.title_boost);
        let shown = in_title(&title, plan.searches.get(*i));
        let tf = e.matched.iter().find(|(m, _)| m == i).map(|(_, tf)| tf.max(1.0));
        if tf.is_none() && !shown {
            continue;
        }
        let tf = tf.unwrap_or(1.0);
        any_title |= shown;
        terms += 1;
        matched += w * (0.5 + 0.5 * tf / (tf + 1.0)) * if shown { 1.0 + ranking.title_boost } else { 1.0 };
    }
    let share = if total > 0.0 { (matched / total).min(1.0) } else { 0.0 };
    let lone = terms == 1 && !any_title && !plan.searches.get(e.matched[0].0).is_some_and(|s| s.is_text);
    if lone && plan.searches.len() >= 3 { (share * ranking.single_term_factor, true) } else { (share, false) }
}

/// Merges the successful searches: `answers` pairs a search's index in `plan` with its results.
pub fn merge(plan: &Plan, answers: Vec<(usize, Vec<Found>)>, ranking: &RankingConfig) -> Vec<Found> {
    let weights = weights(plan, &answers, ranking);
    let id_like = |i: &usize| plan.searches.get(*i).is_some_and(|s| s.query.contains(|c: char| c.is_ascii_digit()));
    let skipped: HashSet<usize> =
        answers.iter().filter(|(i, found)| found.is_empty() && id_like(i)).map(|(i, _)| *i).collect();
    let scored: Vec<((f64, bool), Entry)> = collect(answers, &weights)
        .into_iter()
        .map(|e| (page_score(&e, plan, &weights, &skipped, ranking), e))
        .collect();
    let best = scored.iter().map(|((s, _), _)| *s).fold(0.0, f64::max);
    let near = |score: f64| ranking.near_best > 0.0 && score >= ranking.near_best * best;
    let mut ranked: Vec<(f64, Entry)> = scored
        .into_iter()
        .filter(|((score, lone), _)| *score >= ranking.min_score || !lone && near(*score))
        .map(|((score, _), e)| (score, e))
        .collect();
    let mtime = |e: &Entry| e.found.updated_at.as_ref().map_or(i64::MIN, |t| t.seconds);
    ranked.sort_by(|(sa, a), (sb, b)| {
        sb.total_cmp(sa)
            .then(b.wiki_score.total_cmp(&a.wiki_score))
            .then(mtime(b).cmp(&mtime(a)))
            .then(a.found.id.cmp(&b.found.id))
    });
    ranked
        .into_iter()
        .map(|(score, mut e)| {
            e.matched.sort_unstable_by_key(|m| m.0);
            let labels: Vec<&str> =
                e.matched.iter().filter_map(|(i, _)| plan.searches.get(*i)).map(|s| s.label.as_str()).collect();
            e.found.matched =
                e.matched.iter().filter_map(|(i, _)| plan.searches.get(*i)).map(|s| s.alternatives.clone()).collect();
            e.found.score = Some((score * 10_000.0).round() / 10_000.0);
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
            matched: vec![],
        }
    }

    /// With weak pages dropped (`min_score: 0.04`; the default 0 keeps every page).
    fn merge_d(p: &Plan, answers: Vec<(usize, Vec<Found>)>) -> Vec<Found> {
        merge(p, answers, &RankingConfig { min_score: 0.04, ..RankingConfig::default() })
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
        let merged = merge_d(&p, answers);
        // d matches one common term of six: below min_score, far from the best, dropped
        assert_eq!(ids(&merged), ["a", "b", "c"]);
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
        let merged = merge_d(&p, vec![(1, everyone), (2, vec![f("p3", 1, 3, "")])]);
        assert_eq!(merged[0].id, "p3");
        // the others match one term that every page holds: demoted below min_score, dropped
        assert_eq!(merged.len(), 1);
        let open = RankingConfig { min_score: 0.0, ..RankingConfig::default() };
        let everyone: Vec<Found> = (0..10).map(|i| f(&format!("p{i}"), 1, i, "")).collect();
        assert_eq!(merge(&p, vec![(1, everyone), (2, vec![f("p3", 1, 3, "")])], &open).len(), 10);
    }

    #[test]
    fn ties_go_to_wiki_score_then_mtime_then_id() {
        let p = plan("x", &[], "", &SearchConfig::default());
        let merged =
            merge_d(&p, vec![(0, vec![f("old", 5, 1, ""), f("new", 5, 9, ""), f("best", 7, 1, ""), f("a", 5, 9, "")])]);
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
        assert_eq!(ids(&merge_d(&p, a)), ids(&merge_d(&p, b)));
    }

    fn titled(id: &str, title: &str, score: i64) -> Found {
        Found { title: title.into(), ..f(id, score, 1, "") }
    }

    #[test]
    fn scores_are_shares_of_the_question_and_the_title_counts_more() {
        let terms: Vec<String> = ["alpha", "bravo", "charlie"].into_iter().map(String::from).collect();
        let p =
            plan("alpha bravo charlie delta echo", &terms, "alpha bravo charlie delta echo", &SearchConfig::default());
        // both pages match the same two terms as often; one shows them in its title
        let answers = vec![
            (0, vec![titled("body", "Something else", 1), titled("head", "Alpha and Bravo", 1)]),
            (1, vec![titled("body", "Something else", 1), titled("head", "Alpha and Bravo", 1)]),
            (2, vec![titled("other", "Other", 1)]),
        ];
        let merged = merge_d(&p, answers);
        // "other" matches one term of three, not in its title: demoted
        assert_eq!(ids(&merged), ["head", "body", "other"]);
        assert!(merged[2].score.unwrap() < merged[1].score.unwrap() / 2.0, "{merged:?}");
        assert!(merged.iter().all(|h| h.score.is_some_and(|s| s > 0.0 && s <= 1.0)), "{merged:?}");
        // every term, in the title: the whole question
        let all = vec![(0, vec![titled("x", "alpha bravo", 9)]), (1, vec![titled("x", "", 9)]), (2, vec![])];
        let s = merge(&p, all, &RankingConfig { title_boost: 0.0, ..RankingConfig::default() })[0].score.unwrap();
        assert!(s > 0.55 && s < 0.7, "two of three terms, often: {s}");
    }

    #[test]
    fn a_page_matching_one_common_term_is_demoted_and_weak_ones_dropped() {
        let terms: Vec<String> = ["typhoon", "customers", "rolled"].into_iter().map(String::from).collect();
        let p = plan(
            "typhoon customers rolled",
            &terms,
            "",
            &SearchConfig { text_max_words: 0, ..SearchConfig::default() },
        );
        let lone: Vec<Found> = (0..6).map(|i| f(&format!("lone{i}"), 9, i, "")).collect();
        let mut customers = lone.clone();
        customers.push(f("good", 1, 1, ""));
        let answers = vec![(0, vec![f("good", 1, 1, "")]), (1, customers), (2, vec![f("good", 1, 1, "")])];
        let kept = merge(&p, answers.clone(), &RankingConfig { min_score: 0.0, ..RankingConfig::default() });
        assert_eq!(kept[0].id, "good");
        let (good, weak) = (kept[0].score.unwrap(), kept[1].score.unwrap());
        assert!(weak < good / 5.0, "one common term, demoted: {weak} vs {good}");
        let cut = merge_d(&p, answers);
        assert_eq!(ids(&cut), ["good"], "below min_score and far from the best");
    }

    #[test]
    fn expansions_weigh_less_and_the_best_pages_stay_unless_they_match_one_term() {
        let p = plan("q", &["asked".into(), "扩展".into(), "more".into()], "asked more", &SearchConfig::default());
        assert!(p.searches.iter().any(|s| s.query == "扩展" && !s.original));
        let open = RankingConfig { min_score: 0.0, ..RankingConfig::default() };
        let merged = merge(&p, vec![(1, vec![f("own", 1, 1, "")]), (2, vec![f("translated", 1, 1, "")])], &open);
        assert_eq!(ids(&merged), ["own", "translated"]);
        assert!(merged[1].score < merged[0].score);
        let strict = RankingConfig { min_score: 0.9, ..RankingConfig::default() };
        // below min_score: the best page and those near it stay when they match two terms ...
        let two = vec![
            (1, vec![f("weak", 1, 1, ""), f("weaker", 1, 1, "")]),
            (2, vec![f("weak", 1, 1, "")]),
            (3, vec![f("weaker", 1, 1, "")]),
        ];
        // (two of the question's own terms before one and a translation)
        assert_eq!(ids(&merge(&p, two, &strict)), ["weaker", "weak"]);
        // ... and go when the best matches one term of four only ("charged" of "Was Li Na
        // actually charged for the twenty office chairs?" in a return policy)
        assert!(merge(&p, vec![(1, vec![f("lone", 1, 1, "")])], &strict).is_empty());
    }

    #[test]
    fn a_title_showing_a_term_the_search_missed_still_counts() {
        // DokuWiki matches whole words: `disputes` does not find "Invoice dispute procedure"
        let terms: Vec<String> = ["invoice", "disputes", "written"].into_iter().map(String::from).collect();
        let p = plan("x", &terms, "", &SearchConfig::default());
        let page = titled("invoice_disputes", "Invoice dispute procedure", 1);
        let answers = vec![
            (1, vec![page.clone(), titled("complaints", "Complaints", 1)]),
            (2, vec![titled("complaints", "Complaints", 1)]),
            (3, vec![page]),
        ];
        assert_eq!(merge_d(&p, answers)[0].id, "invoice_disputes");
        assert!(shows("invoice dispute procedure", "disputes") && shows("退货政策", "退货"));
        assert!(!shows("classification", "class") && shows("vessel rollover", "\"vessel rollover\""));
    }
}
