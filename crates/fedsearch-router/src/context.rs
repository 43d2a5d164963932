//! Agent context packing: the best fused hits as compact, cited text within a token budget.
//!
//! - Tokens are counted with a real tokenizer (tiktoken `cl100k_base`); the packed text never
//!   exceeds the budget. An item that does not fit whole is tried once more with a shorter
//!   snippet; if even its title and citation do not fit, packing stops.
//! - Every item keeps its citation: source, title, date, url and `full_text_ref`.
//! - Versions: a hit fusion marked superseded (`Hit.version`) is placed after every current
//!   item with its `superseded_by`, so an agent does not mix an old policy with the new one.
//!   Hits fusion said nothing about are grouped the way fusion groups them (same source, same
//!   `fedsearch_fusion::versions::title_family`): the newest is current. A hit whose title itself
//!   says it is superseded is marked even when the newer version was not found.
//! - Items with the same normalised snippet are kept once.

use std::collections::{HashMap, HashSet};

use fedsearch_proto::{
    api::{AgentContext, ContextItem},
    types::Hit,
};

/// Counts tokens the way the agent's model will (cl100k_base).
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
}

const SUPERSEDED_MARKERS: &[&str] = &["superseded", "obsolete", "deprecated", "已废止", "已作废", "旧版", "废止"];
fn says_superseded(title: &str) -> bool {
    let t = title.to_lowercase();
    SUPERSEDED_MARKERS.iter().any(|m| t.contains(m))
}

fn updated(hit: &Hit) -> (i64, i32) {
    hit.updated_at.as_ref().map(|t| (t.seconds, t.nanos)).unwrap_or((i64::MIN, 0))
}

/// Marks superseded versions and returns hits with current ones first (fused order kept
/// within each group) and, for each superseded hit, the id of its newest version.
pub fn order_by_currency(hits: &[Hit]) -> Vec<(&Hit, Option<String>)> {
    // Fusion marks superseded versions (`Hit.version`); hits it said nothing about are grouped
    // here the same way fusion does: within one source, by title with version markers removed.
    let family = |h: &Hit| fedsearch_fusion::versions::title_family(&h.title).map(|f| (h.source.clone(), f.key));
    let mut newest: HashMap<(String, String), &Hit> = HashMap::new();
    for h in hits.iter().filter(|h| h.version.is_none()) {
        if let Some(fam) = family(h) {
            newest
                .entry(fam)
                .and_modify(|cur| {
                    if (says_superseded(&cur.title), std::cmp::Reverse(updated(cur)))
                        > (says_superseded(&h.title), std::cmp::Reverse(updated(h)))
                    {
                        *cur = h;
                    }
                })
                .or_insert(h);
        }
    }
    let mut current = Vec::new();
    let mut old = Vec::new();
    for h in hits {
        if let Some(v) = &h.version {
            if v.status == "superseded" {
                old.push((h, Some(v.superseded_by.clone())));
            } else {
                current.push((h, None));
            }
            continue;
        }
        let newer = family(h).and_then(|f| newest.get(&f)).filter(|n| n.id != h.id);
        match newer {
            Some(n) => old.push((h, Some(n.id.clone()))),
            None if says_superseded(&h.title) => old.push((h, Some(String::new()))),
            None => current.push((h, None)),
        }
    }
    current.extend(old);
    current
}

fn normalised_snippet(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn render(n: usize, item: &ContextItem, snippet: &str) -> String {
    let mut s = format!("[{n}] {} ({}, {})\n", item.title, item.source, date_label(item.updated_at.as_ref()));
    if !item.superseded_by.is_empty() {
        s.push_str(&format!("    SUPERSEDED by {} — do not use for current answers\n", item.superseded_by));
    }
    if !snippet.is_empty() {
        s.push_str(&format!("    {snippet}\n"));
    }
    s.push_str(&format!("    cite: {} | ref: {}\n", item.url, item.full_text_ref));
    s
}

fn date_label(t: Option<&prost_types::Timestamp>) -> String {
    t.and_then(fedsearch_core::time::to_chrono)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "undated".into())
}

fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n).collect();
    out.push('…');
    out
}

const HEADER: &str = "Search results (cite with [n]; newer versions first):\n";

/// Packs `hits` (in fused order) into at most `budget` tokens.
pub fn pack(hits: &[Hit], budget: u32) -> AgentContext {
    let budget_usize = budget as usize;
    let mut text = String::new();
    let mut used = 0usize;
    let mut items = Vec::new();
    let header_tokens = count_tokens(HEADER);
    if header_tokens <= budget_usize {
        text.push_str(HEADER);
        used = header_tokens;
        let mut seen = HashSet::new();
        for (hit, superseded_by) in order_by_currency(hits) {
            let norm = normalised_snippet(&hit.snippet);
            if !norm.is_empty() && !seen.insert(norm) {
                continue;
            }
            let mut item = ContextItem {
                citation: format!("[{}]", items.len() + 1),
                source: hit.source.clone(),
                title: hit.title.clone(),
                updated_at: hit.updated_at,
                snippet: truncate_chars(&hit.snippet, 240),
                url: hit.url.clone(),
                full_text_ref: hit.full_text_ref.clone(),
                superseded_by: superseded_by
                    .map(|s| if s.is_empty() { "a newer version".into() } else { s })
                    .unwrap_or_default(),
            };
            let n = items.len() + 1;
            let mut chunk = render(n, &item, &item.snippet);
            let mut tokens = count_tokens(&chunk);
            if used + tokens > budget_usize {
                // One more try with a short snippet, then without one.
                let short = truncate_chars(&item.snippet, 60);
                chunk = render(n, &item, &short);
                tokens = count_tokens(&chunk);
                item.snippet = short;
                if used + tokens > budget_usize {
                    chunk = render(n, &item, "");
                    tokens = count_tokens(&chunk);
                    item.snippet.clear();
                    if used + tokens > budget_usize {
                        break;
                    }
                }
            }
            // Token counts of concatenated text can differ at the seam; re-check exactly.
            let candidate = format!("{text}{chunk}");
            let exact = count_tokens(&candidate);
            if exact > budget_usize {
                break;
            }
            text = candidate;
            used = exact;
            items.push(item);
        }
    }
    if items.is_empty() {
        text.clear();
        used = 0;
    }
    AgentContext { token_budget: budget, tokens_used: used as u32, items, text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hit(id: &str, title: &str, days_ago: i64, snippet: &str) -> Hit {
        let t = chrono::Utc::now() - chrono::Duration::days(days_ago);
        Hit {
            id: id.into(),
            source: id.split(':').next().unwrap().into(),
            title: title.into(),
            snippet: snippet.into(),
            url: format!("https://wiki.example/{id}"),
            full_text_ref: id.into(),
            updated_at: Some(fedsearch_core::time::from_chrono(t)),
            ..Default::default()
        }
    }

    fn sample() -> Vec<Hit> {
        vec![
            hit(
                "wiki:public:return_policy_2025",
                "退货政策（2025 版，已废止） Return Policy 2025 (superseded)",
                300,
                "拒收手续费 8 元 rejection fee ¥8",
            ),
            hit("orders:SO20261001", "SO20261001 无线降噪耳机 — paid", 1, "张伟, 899.00 CNY. 仓库缺货，预计2天后发货"),
            hit(
                "wiki:public:return_policy",
                "退货政策（2026 版） Return Policy 2026",
                40,
                "非质量问题拒收收取退回运费 12 元 rejection fee ¥12",
            ),
            hit(
                "kb:KB-102",
                "Shipping delays and backorders 发货延迟说明",
                20,
                "Backordered items ship when stock arrives.",
            ),
        ]
    }

    /// The family key the fallback grouping uses (fusion's, within one source).
    fn version_family(title: &str) -> Option<String> {
        fedsearch_fusion::versions::title_family(title).map(|f| f.key)
    }

    #[test]
    fn versions_of_one_policy_share_a_family_and_other_titles_do_not() {
        let a = version_family("退货政策（2025 版，已废止） Return Policy 2025 (superseded)");
        let b = version_family("退货政策（2026 版） Return Policy 2026");
        assert!(a.is_some());
        assert_eq!(a, b);
        assert_ne!(version_family("Shipping delays and backorders 发货延迟说明"), a);
        assert_ne!(version_family("SO20261001 earbuds"), version_family("SO20261002 earbuds"));
    }

    #[test]
    fn the_old_policy_is_marked_superseded_and_placed_after_current_items() {
        let hits = sample();
        let ctx = pack(&hits, 2000);
        let ids: Vec<_> = ctx.items.iter().map(|i| i.full_text_ref.as_str()).collect();
        assert_eq!(ids.last(), Some(&"wiki:public:return_policy_2025"), "{ids:?}");
        let old = ctx.items.last().unwrap();
        assert_eq!(old.superseded_by, "wiki:public:return_policy");
        assert!(ctx.items[..3].iter().all(|i| i.superseded_by.is_empty()));
        assert!(ctx.text.contains("SUPERSEDED by wiki:public:return_policy"));
        assert!(ctx.text.find("2026 版").unwrap() < ctx.text.find("2025 版").unwrap());
    }

    #[test]
    fn duplicate_snippets_are_packed_once() {
        let mut hits = sample();
        let mut dup = hits[1].clone();
        dup.id = "tickets:TCK-5001".into();
        dup.source = "tickets".into();
        hits.push(dup);
        let ctx = pack(&hits, 2000);
        assert_eq!(ctx.items.len(), 4);
    }

    #[test]
    fn a_tiny_budget_gives_an_empty_context_not_a_broken_one() {
        let ctx = pack(&sample(), 5);
        assert!(ctx.items.is_empty());
        assert_eq!(ctx.tokens_used, 0);
        assert!(ctx.text.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn never_over_budget_and_every_item_is_cited(budget in 0u32..600, extra in 0usize..8) {
            let mut hits = sample();
            for i in 0..extra {
                hits.push(hit(&format!("kb:KB-{i}"), &format!("Article number {i} about payments"), i as i64, &"长文本 long text ".repeat(i * 5 + 1)));
            }
            let ctx = pack(&hits, budget);
            prop_assert!(ctx.tokens_used <= budget);
            prop_assert_eq!(count_tokens(&ctx.text) as u32, ctx.tokens_used);
            for item in &ctx.items {
                prop_assert!(!item.full_text_ref.is_empty() && !item.url.is_empty());
                let cite_line = format!("cite: {} | ref: {}", item.url, item.full_text_ref);
                prop_assert!(ctx.text.contains(&cite_line));
            }
            // Current items never come after a superseded one.
            let first_old = ctx.items.iter().position(|i| !i.superseded_by.is_empty());
            if let Some(p) = first_old {
                prop_assert!(ctx.items[p..].iter().all(|i| !i.superseded_by.is_empty()));
            }
        }
    }
}
