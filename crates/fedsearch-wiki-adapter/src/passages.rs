//! Passages of a page's text that show what its searches matched and its snippet does not.
//!
//! DokuWiki's snippet shows the words of one search (the merge keeps the most specific one's,
//! see [`crate::merge`]). A page that matched several concepts — a Chinese page found through
//! the translations of an English question's words — then shows the router only one of them,
//! and the router's re-scoring reads the snippet, not the page. For the pages whose text the
//! adapter reads anyway (their version lines, [`crate::source`]), each other matched concept
//! adds the sentence-sized passage around its first occurrence, after the snippet.

use crate::merge::shows;

/// Characters of passages added after a snippet, at most.
pub const EXTRA_CHARS: usize = 200;
/// Characters kept before and after a found term.
const BEFORE: usize = 30;
const AFTER: usize = 60;

/// `snippet` followed by a passage of `text` for each matched search (its `alternatives`) the
/// snippet does not show, in the searches' order, joined with " … " and within [`EXTRA_CHARS`].
pub fn extend(snippet: &str, text: &str, matched: &[Vec<String>]) -> String {
    let lowered = text.to_lowercase();
    let mut out = snippet.to_string();
    let mut shown = out.to_lowercase();
    let mut added = 0;
    for alternatives in matched {
        if alternatives.iter().any(|a| shows(&shown, a)) {
            continue;
        }
        let Some(passage) = alternatives.iter().find_map(|a| passage(text, &lowered, a)) else { continue };
        let len = passage.chars().count();
        if added + len > EXTRA_CHARS {
            continue;
        }
        added += len;
        if !out.is_empty() {
            out.push_str(" … ");
        }
        out.push_str(&passage);
        shown = out.to_lowercase();
    }
    out
}

/// The passage of `text` around the first place `lowered` (its lowercase) holds `alternative`
/// (a CJK term anywhere, a Latin one at the start of a word).
fn passage(text: &str, lowered: &str, alternative: &str) -> Option<String> {
    let term = alternative.trim_matches('"').to_lowercase();
    if term.trim().is_empty() || lowered.len() != text.len() {
        return None; // lowercasing changed byte offsets: no safe slice
    }
    let cjk = term.chars().any(crate::terms::is_cjk);
    let at = lowered
        .match_indices(&term)
        .map(|(i, _)| i)
        .find(|&i| cjk || !lowered[..i].chars().next_back().is_some_and(char::is_alphanumeric))?;
    // Lowercasing may move offsets even where the total length is kept (İ grows, Ω shrinks).
    if !text.is_char_boundary(at) || !text.is_char_boundary(at + term.len()) {
        return None;
    }
    let start = back_chars(text, at, BEFORE);
    let end = forward_chars(text, at + term.len(), AFTER);
    Some(text[start..end].trim().to_string())
}

/// The byte offset `n` characters before `at` (or 0).
fn back_chars(text: &str, at: usize, n: usize) -> usize {
    text[..at].char_indices().rev().nth(n.saturating_sub(1)).map_or(0, |(i, _)| i)
}

/// The byte offset `n` characters after `at` (or the end).
fn forward_chars(text: &str, at: usize, n: usize) -> usize {
    text[at..].char_indices().nth(n).map_or(text.len(), |(i, _)| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alts(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_matched_concept_the_snippet_does_not_show_adds_its_passage() {
        let text = "Notice and time limits. Apparent damage or shortage: written notice from the customer \
                    within 3 days of delivery. Settlement authority: claims analyst up to USD 5,000.";
        let snippet = "Notice and time limits.";
        let matched =
            vec![alts(&["notice", "通知"]), alts(&["\"written notice\"", "书面通知"]), alts(&["货损", "damage"])];
        let out = extend(snippet, text, &matched);
        assert!(out.starts_with(snippet), "{out}");
        assert!(out.contains("written notice from the customer"), "{out}");
        assert_eq!(out.matches(" … ").count(), 1, "one passage holds both: {out}");
        assert!(out.chars().count() <= snippet.chars().count() + EXTRA_CHARS + 3);
    }

    #[test]
    fn chinese_terms_match_anywhere_latin_ones_at_a_word_start() {
        let text = "状态：现行。导致或可能导致严重伤害的事件：获知后 20 日内报告。 Undamaged goods need no survey.";
        let out = extend("", text, &[alts(&["serious", "严重伤害"])]);
        assert!(out.contains("严重伤害的事件"), "{out}");
        assert_eq!(extend("", text, &[alts(&["damaged"])]), "", "not inside undamaged");
    }

    #[test]
    fn text_whose_lowercase_moves_offsets_is_never_sliced_apart() {
        // İ lowercases to three bytes, the ohm sign Ω to two: same length, shifted offsets
        for text in ["\u{130} abc \u{2126} def", "\u{2126}\u{130}abc", "\u{130}严重伤害\u{2126}"] {
            let _ = extend("", text, &[alts(&["abc"]), alts(&["def"]), alts(&["严重伤害"])]);
        }
    }

    #[test]
    fn nothing_is_added_when_the_snippet_shows_every_match_or_nothing_is_found() {
        let text = "Claims analyst: up to USD 5,000.";
        assert_eq!(extend("Claims analyst: up to", text, &[alts(&["analyst"])]), "Claims analyst: up to");
        assert_eq!(extend("s", text, &[alts(&["absent"])]), "s");
    }
}
