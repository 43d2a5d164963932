//! From one sub-query to the searches the wiki runs: OR semantics on a wiki that ANDs every word.
//!
//! DokuWiki requires every word of a query, so a whole English question finds nothing. A
//! sub-query therefore becomes a [`Plan`] of at most `search.max_searches` searches, each one
//! *concept*:
//! - the text as sent, when it has at most `search.text_max_words` words (it may carry the
//!   user's own syntax: `"phrases"`, `-exclude`), only cleaned of characters the wiki faults on
//!   — unless it is one alternative of a term with synonyms (`规定` of `规定|policy|rule`), whose
//!   search finds it already (a page showing the word would otherwise count it twice);
//! - one per distinct term of `SubQuery.terms`, in the router's order; a term written `a|b` is
//!   one concept with synonyms (`a or b` in one DokuWiki search, counted once when ranking);
//! - when `terms` is empty, terms split from `text` and then `original_text`: `"quoted
//!   phrases"`, Latin words of three or more letters minus English stop words, and CJK runs
//!   split at common function words.
//!
//! When there are more concepts than searches, the first ones (router order; for terms split
//! from free text, the longest) get their own search and the rest share the last one as a
//! DokuWiki `a or b or c` query, so no term is dropped.
//!
//! Terms are data, not syntax: DokuWiki's operators (`or`, `and`, `|`, `(`, `)`, a leading `-`,
//! `^`, `@`, `ns:`) are removed from them. Every search string is cleaned of what makes the
//! XML-RPC call fault or silently match nothing: control characters (→ space), noncharacters
//! such as U+FFFF and invisible format characters such as U+200B (removed).

use crate::config::SearchConfig;

/// One search of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The DokuWiki query string.
    pub query: String,
    /// The alternatives of this concept (for a CQL `text ~` literal each).
    pub alternatives: Vec<String>,
    /// Whether this is the text as sent.
    pub is_text: bool,
    /// Length weight in (1, 2]: longer terms are more specific (see [`length_weight`]).
    pub weight: f64,
    /// The term as shown in `matched_terms`.
    pub label: String,
    /// Whether the question itself holds one of the alternatives (the text as sent always does);
    /// false for a glossary expansion the router sent as a term of its own.
    pub original: bool,
}

/// The searches for one sub-query, best first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub searches: Vec<Planned>,
}

/// English words that carry no topic (only words of three or more letters matter).
const STOP_WORDS: &str = "\
    the and for are but not you all any can had her was one our out has have how what when where \
    which who whom why with does did doing this that these those there their them they then than \
    from into onto about after before over under again also just only some such very will would \
    should could shall may might must been being were is its it's his she him get got gets let \
    lets please tell know need want much many more most other each every your yours mine ours \
    via per yet own same too off both between during while because until whether here now still \
    ever often say says said make made use used using currently current latest today can't don't \
    doesn't";

/// CJK function words and question words a CJK run is split at (longer ones first).
const CJK_SPLITTERS: &str = "\
    为什么 怎么样 是什么 是多少 有没有 是不是 怎么 什么 多少 如何 哪些 哪个 请问 一下 现在 目前 \
    可以 需要 应该 是否 我们 你们 的 了 吗 呢 吧 啊 是 和 与 或 我 你";

/// Whether `c` is a CJK ideograph, kana or hangul (DokuWiki splits these per character).
pub use fedsearch_core::text::is_cjk;

fn is_noncharacter(c: char) -> bool {
    let u = c as u32;
    (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE
}

fn is_invisible_format(c: char) -> bool {
    matches!(c as u32, 0xAD | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x2069 | 0xFEFF)
}

/// Removes what makes DokuWiki's XML-RPC fault (U+FFFE/U+FFFF) or match nothing (other
/// noncharacters, invisible format characters); control characters become spaces; whitespace
/// is collapsed.
pub fn clean(s: &str) -> String {
    let kept: String = s
        .chars()
        .filter(|c| !is_noncharacter(*c) && !is_invisible_format(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One term as data: DokuWiki operators removed. A `"quoted phrase"` stays a phrase. Empty when
/// nothing searchable is left.
pub fn neutralise(term: &str) -> String {
    let term = clean(term);
    if let Some(inner) = term.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        let inner = neutralise(&inner.replace('"', " "));
        return if inner.contains(' ') { format!("\"{inner}\"") } else { inner };
    }
    let spaced: String = term.chars().map(|c| if matches!(c, '"' | '(' | ')' | '|') { ' ' } else { c }).collect();
    let words: Vec<&str> = spaced
        .split_whitespace()
        .map(|w| w.trim_start_matches(['-', '^', '@']))
        .map(|w| if w.len() > 3 && w.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("ns:")) { &w[3..] } else { w })
        .filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("or") && !w.eq_ignore_ascii_case("and"))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect();
    words.join(" ")
}

/// How specific a term looks by its length: 1 + units/12 capped at 2, where a Latin letter or
/// digit is one unit and a CJK character two (one CJK character carries about a word's worth).
pub fn length_weight(term: &str) -> f64 {
    let units: usize = term.chars().map(|c| if is_cjk(c) { 2 } else { usize::from(c.is_alphanumeric()) }).sum();
    1.0 + (units.min(12) as f64) / 12.0
}

fn split_cjk_run(run: &str, out: &mut Vec<String>) {
    let mut rest = run;
    let mut piece = String::new();
    'outer: while let Some(c) = rest.chars().next() {
        for s in CJK_SPLITTERS.split_whitespace() {
            if let Some(after) = rest.strip_prefix(s) {
                if piece.chars().count() >= 2 {
                    out.push(std::mem::take(&mut piece));
                }
                piece.clear();
                rest = after;
                continue 'outer;
            }
        }
        piece.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if piece.chars().count() >= 2 {
        out.push(piece);
    }
}

/// Terms split from free text: `"phrases"`, Latin words (≥ 3 letters, not stop words), CJK runs.
pub fn split_terms(text: &str) -> Vec<String> {
    let text = clean(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    let mut plain = String::new();
    while let Some(i) = rest.find('"') {
        plain.push_str(&rest[..i]);
        plain.push(' ');
        let after = &rest[i + 1..];
        match after.find('"') {
            Some(end) => {
                let phrase = after[..end].trim();
                if phrase.contains(char::is_whitespace) {
                    out.push(format!("\"{phrase}\""));
                } else {
                    plain.push_str(phrase);
                    plain.push(' ');
                }
                rest = &after[end + 1..];
            }
            None => rest = after,
        }
    }
    plain.push_str(rest);

    let mut word = String::new();
    let mut cjk = String::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        let w = word.trim_matches(['-', '_', '.', '\'']).to_lowercase();
        if w.chars().filter(|c| c.is_alphanumeric()).count() >= 3 && !STOP_WORDS.split_whitespace().any(|s| s == w) {
            out.push(w);
        }
        word.clear();
    };
    for c in plain.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk.push(c);
        } else {
            if !cjk.is_empty() {
                split_cjk_run(&std::mem::take(&mut cjk), &mut out);
            }
            if c.is_alphanumeric() || (matches!(c, '-' | '_' | '.' | '\'') && !word.is_empty()) {
                word.push(c);
            } else {
                flush_word(&mut word, &mut out);
            }
        }
    }
    flush_word(&mut word, &mut out);
    if !cjk.is_empty() {
        split_cjk_run(&cjk, &mut out);
    }
    out
}

fn key(s: &str) -> String {
    s.to_lowercase()
}

/// A single English word folded to its singular (`containers` → `container`), for telling
/// two forms of one word apart from two words.
fn word_key(s: &str) -> String {
    let k = key(s);
    let plural = k.len() > 4 && k.bytes().all(|b| b.is_ascii_lowercase()) && k.ends_with('s') && !k.ends_with("ss");
    if plural { k[..k.len() - 1].to_string() } else { k }
}

fn is_stop_word(s: &str) -> bool {
    let k = key(s);
    STOP_WORDS.split_whitespace().any(|w| w == k)
}

/// One concept per candidate: its distinct, non-empty neutralised alternatives, English stop
/// words removed (the router may send `during`). A lone word that is another form of an
/// earlier concept's word (`containers` after `container`) joins that concept as an
/// alternative instead of counting twice.
fn concepts_of(
    candidates: Vec<Vec<String>>,
    seen: &mut std::collections::HashSet<String>,
) -> Vec<(Vec<String>, String)> {
    let mut concepts: Vec<(Vec<String>, String)> = Vec::new();
    for alternatives in candidates {
        let mut alts: Vec<String> = Vec::new();
        for a in alternatives.iter().map(|a| neutralise(a)).filter(|a| !a.is_empty() && !is_stop_word(a)) {
            if !alts.iter().any(|x| key(x) == key(&a)) {
                alts.push(a);
            }
        }
        if alts.is_empty() {
            continue;
        }
        if let [lone] = alts.as_slice()
            && let Some((same, label)) =
                concepts.iter_mut().find(|(c, _)| c.iter().any(|x| word_key(x) == word_key(lone)))
        {
            if !same.iter().any(|x| key(x) == key(lone)) {
                same.push(lone.clone());
                *label = same.join("|");
            }
            continue;
        }
        let k = alts.iter().map(|a| key(a)).collect::<Vec<_>>().join("|");
        if alts.iter().any(|a| seen.contains(&key(a))) && alts.len() == 1 || !seen.insert(k.clone()) {
            continue;
        }
        for a in &alts {
            seen.insert(key(a));
        }
        let label = alts.join("|");
        concepts.push((alts, label));
    }
    concepts
}

/// An English word as a DokuWiki prefix search (`stem*`), so a term finds the word's other forms
/// where DokuWiki matches whole words only: `reporting` → `report*` (report, reports, reported),
/// `policies` / `policy` → `polic*`, `limit` → `limit*` (limited, limits), `deadlines` →
/// `deadline*`, `shipping` → `ship*`. The stem is [`fedsearch_core::text::stem`]'s when it keeps
/// at least 4 letters (`uses` stays `uses*`); a final consonant + `y` goes when 5 letters stay
/// (`apply` keeps it). `None` — search as written — for anything but one word of 4 or more ASCII
/// letters: CJK, digits, ids, phrases.
pub fn any_ending(word: &str) -> Option<String> {
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let w = word.to_ascii_lowercase();
    let stemmed = fedsearch_core::text::stem(&w);
    let stem = if stemmed.len() >= 4 { stemmed.as_str() } else { w.as_str() };
    let stem = match stem.strip_suffix('y') {
        Some(s) if s.len() >= 5 && !s.ends_with(['a', 'e', 'o', 'u']) => s,
        _ => stem,
    };
    Some(format!("{stem}*"))
}

/// One concept's DokuWiki query: its alternatives ORed, each English word with any ending when
/// `with_any_ending` (two forms of one word then make one prefix, `container*`, not two).
fn concept_query(alts: &[String], with_any_ending: bool) -> String {
    if !with_any_ending {
        return alts.join(" or ");
    }
    let mut words: Vec<String> = Vec::new();
    for w in alts.iter().map(|a| any_ending(a).unwrap_or_else(|| a.clone())) {
        if !words.contains(&w) {
            words.push(w);
        }
    }
    words.join(" or ")
}

/// Whether `text` is one alternative of a term with synonyms (`规定` of `规定|policy|rule`): that
/// term's search already finds what the text would, and a second search of the same word would
/// count a page that shows it twice (a Chinese page with 规定 above the English policy that
/// answers).
fn one_of_a_concept(text: &str, given: &[String]) -> bool {
    let text = key(&neutralise(text));
    given.iter().filter(|t| t.contains('|')).any(|t| t.split('|').any(|a| key(&neutralise(a)) == text))
}

/// The searches for a sub-query's `text`, `terms` and `original_text`.
pub fn plan(text: &str, terms: &[String], original_text: &str, config: &SearchConfig) -> Plan {
    let mut searches: Vec<Planned> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let text = clean(text);
    let given: Vec<String> = terms.iter().map(|t| clean(t)).filter(|t| !t.is_empty()).collect();
    if !text.is_empty() && text.split_whitespace().count() <= config.text_max_words && !one_of_a_concept(&text, &given)
    {
        seen.insert(key(&neutralise(&text)));
        searches.push(Planned {
            query: text.clone(),
            alternatives: vec![text.clone()],
            is_text: true,
            weight: length_weight(&text),
            label: text.clone(),
            original: true,
        });
    }
    let candidates: Vec<Vec<String>> = if given.is_empty() {
        let mut split = split_terms(&text);
        split.extend(split_terms(original_text));
        split.into_iter().map(|t| vec![t]).collect()
    } else {
        given.iter().map(|t| t.split('|').map(str::to_string).collect()).collect()
    };
    let mut concepts = concepts_of(candidates, &mut seen);
    let room = config.max_searches.saturating_sub(searches.len());
    if concepts.len() > room && room > 0 {
        // more concepts than searches: the first `room - 1` (router order) or the most specific
        // (split from free text) get their own search, the rest share one `a or b or c` search
        let mut order: Vec<usize> = (0..concepts.len()).collect();
        if given.is_empty() {
            order.sort_by(|a, b| length_weight(&concepts[*b].1).total_cmp(&length_weight(&concepts[*a].1)));
        }
        let own: std::collections::HashSet<usize> = order.into_iter().take(room - 1).collect();
        let (mut kept, mut rest) = (Vec::new(), Vec::new());
        for (i, c) in concepts.into_iter().enumerate() {
            if own.contains(&i) { kept.push(c) } else { rest.push(c) }
        }
        let alts: Vec<String> = rest.into_iter().flat_map(|(alts, _)| alts).collect();
        let label = alts.join("|");
        kept.push((alts, label));
        concepts = kept;
    }
    let asked = key(&format!("{text} {}", clean(original_text)));
    for (alts, label) in concepts.into_iter().take(room) {
        let weights = alts.iter().map(|a| length_weight(a));
        // a shared search may have matched its least specific alternative
        let weight = if alts.len() > 1 { weights.fold(2.0, f64::min) } else { weights.fold(1.0, f64::max) };
        let original = alts.iter().any(|a| asked.contains(&key(a.trim_matches('"'))));
        let query = concept_query(&alts, config.any_ending);
        searches.push(Planned { query, alternatives: alts, is_text: false, weight, label, original });
    }
    Plan { searches }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six searches: room for the budget rules to show.
    fn cfg() -> SearchConfig {
        SearchConfig { max_searches: 6, ..SearchConfig::default() }
    }

    fn queries(p: &Plan) -> Vec<&str> {
        p.searches.iter().map(|s| s.query.as_str()).collect()
    }

    #[test]
    fn an_english_word_is_searched_with_any_ending() {
        let cases = [
            ("reporting", Some("report*")),
            ("limited", Some("limit*")),
            ("limit", Some("limit*")),
            ("policies", Some("polic*")),
            ("policy", Some("polic*")),
            ("liability", Some("liabilit*")),
            ("deadlines", Some("deadline*")),
            ("Cartons", Some("carton*")),
            ("shipping", Some("ship*")),
            ("billing", Some("bill*")),
            ("rates", Some("rate*")),
            ("status", Some("status*")),
            ("uses", Some("uses*")),
            ("changed", Some("chang*")),
            ("address", Some("address*")),
            ("apply", Some("apply*")),
            ("monday", Some("monday*")),
            ("tea", None),
            ("BK26-10277", None),
            ("sla2", None),
            ("合同", None),
            ("\"past due\"", None),
        ];
        for (word, want) in cases {
            assert_eq!(any_ending(word).as_deref(), want, "{word}");
        }
    }

    #[test]
    fn term_searches_match_any_ending_unless_switched_off() {
        let terms = ["cartons|纸箱".to_string(), "liability".to_string()];
        let on = SearchConfig { any_ending: true, ..SearchConfig::default() };
        let p = plan("", &terms, "", &on);
        assert_eq!(queries(&p), ["carton* or 纸箱", "liabilit*"]);
        assert_eq!(p.searches[0].label, "cartons|纸箱");
        assert_eq!(queries(&plan("", &terms, "", &cfg())), ["cartons or 纸箱", "liability"]);
        // two forms of one word make one prefix search
        let forms = ["container|containers".to_string()];
        assert_eq!(queries(&plan("", &forms, "", &on)), ["container*"]);
        assert!(!SearchConfig::default().any_ending, "off unless a deployment turns it on");
    }

    #[test]
    fn clean_drops_what_faults_and_what_hides() {
        assert_eq!(clean("refund\u{FFFF} fee\u{FFFE}"), "refund fee");
        assert_eq!(clean("re\u{200B}fund\u{FDD0}\u{1FFFF}"), "refund");
        assert_eq!(clean("a\u{1}b\n\tc"), "a b c");
        assert_eq!(clean("退货\u{FEFF}政策"), "退货政策");
    }

    #[test]
    fn operators_are_removed_from_terms() {
        assert_eq!(neutralise("refund or fee"), "refund fee");
        assert_eq!(neutralise("-secret ns:finance (x|y)"), "secret finance x y");
        assert_eq!(neutralise("\"rejection fee\""), "\"rejection fee\"");
        assert_eq!(neutralise("\"or\""), "");
        assert_eq!(neutralise("\" OR space = \""), "space");
        assert_eq!(neutralise("@ ^ - |"), "");
        assert_eq!(neutralise("RF3002"), "RF3002");
        // A word whose third byte is inside a character (hs编码) is a word, not a namespace.
        assert_eq!(neutralise("hs编码"), "hs编码");
        assert_eq!(neutralise("NS:财务 ns编码"), "财务 ns编码");
    }

    proptest::proptest! {
        #[test]
        fn any_term_is_neutralised_without_a_panic(term in "\\PC{0,24}") {
            let out = neutralise(&term);
            proptest::prop_assert!(!out.contains('|') && !out.contains('('));
        }
    }

    #[test]
    fn free_text_splits_into_words_phrases_and_cjk_runs() {
        assert_eq!(
            split_terms("What is the rejection fee for a refused delivery under the 2026 policy?"),
            ["rejection", "fee", "refused", "delivery", "2026", "policy"]
        );
        assert_eq!(split_terms("\"rejection fee\" or refund"), ["\"rejection fee\"", "refund"]);
        assert_eq!(split_terms("拒收手续费是多少？退货政策"), ["拒收手续费", "退货政策"]);
        assert_eq!(split_terms("支付超时了怎么处理"), ["支付超时", "处理"]);
        assert_eq!(split_terms("ORD-1234 退款"), ["ord-1234", "退款"]);
    }

    #[test]
    fn short_text_is_searched_as_sent_plus_one_search_per_term() {
        let p = plan("退货 拒收 手续费", &[], "", &cfg());
        assert_eq!(queries(&p), ["退货 拒收 手续费", "退货", "拒收", "手续费"]);
        assert!(p.searches[0].is_text && !p.searches[1].is_text);
        // a phrase that is the whole text runs once
        assert_eq!(queries(&plan("\"rejection fee\"", &[], "", &cfg())), ["\"rejection fee\""]);
        assert_eq!(queries(&plan("支付超时", &[], "", &cfg())), ["支付超时"]);
        assert_eq!(queries(&plan("refund", &["Refund".into()], "", &cfg())), ["refund"]);
    }

    #[test]
    fn a_text_that_is_one_synonym_of_a_term_is_not_searched_twice() {
        let terms: Vec<String> = vec!["规定|policy|rule".into(), "台风|typhoon".into()];
        let p = plan("规定", &terms, "台风延误按规定要赔吗", &cfg());
        assert_eq!(p.searches.len(), 2, "{:?}", queries(&p));
        assert!(p.searches.iter().all(|s| !s.is_text));
        assert_eq!(p.searches[0].alternatives, ["规定", "policy", "rule"]);
        // a text of its own (not a synonym of any term) is still searched as sent
        let p = plan("规定 台风", &terms, "", &cfg());
        assert!(p.searches[0].is_text);
        assert_eq!(p.searches.len(), 3);
    }

    #[test]
    fn long_text_uses_terms_and_the_budget() {
        let text = "what is the rejection fee when a customer refuses a delivery";
        let p = plan(text, &[], text, &cfg());
        assert_eq!(queries(&p), ["rejection", "fee", "customer", "refuses", "delivery"]);
        let terms: Vec<String> = ["refund", "退款", "fee", "手续费", "rejection", "拒收", "policy", "政策"]
            .into_iter()
            .map(String::from)
            .collect();
        let p = plan(text, &terms, text, &cfg());
        assert_eq!(queries(&p), ["refund", "退款", "fee", "手续费", "rejection", "拒收 or policy or 政策"]);
        let many = "alpha bravo charlie delta echo foxtrot golf hotel internationalisation";
        let p = plan(many, &[], "", &cfg());
        assert_eq!(
            queries(&p),
            ["alpha", "bravo", "charlie", "foxtrot", "internationalisation", "delta or echo or golf or hotel"]
        );
        assert!(p.searches[5].weight < p.searches[0].weight);
    }

    #[test]
    fn synonyms_written_with_a_pipe_are_one_concept() {
        let p =
            plan("how much is the fee for a refusal", &["refund|退款".into(), "退款".into(), "fee".into()], "", &cfg());
        assert_eq!(queries(&p), ["refund or 退款", "fee"]);
        assert_eq!(p.searches[0].alternatives, ["refund", "退款"]);
        assert_eq!(p.searches[0].label, "refund|退款");
    }

    #[test]
    fn noncharacters_never_reach_a_query() {
        let p = plan("refund\u{FFFF}", &["fee\u{FFFF}".into(), "\u{FFFF}".into()], "", &cfg());
        assert_eq!(queries(&p), ["refund", "fee"]);
        assert!(length_weight("internationalisation") > length_weight("fee"));
        assert!(length_weight("手续费") > length_weight("fee"));
    }

    #[test]
    fn stop_words_go_and_two_forms_of_one_word_are_one_concept() {
        let terms: Vec<String> =
            ["container", "during", "typhoon|台风", "containers", "rolled"].into_iter().map(String::from).collect();
        let p = plan("x", &terms, "container during typhoon containers rolled", &cfg());
        assert_eq!(queries(&p), ["x", "container or containers", "typhoon or 台风", "rolled"]);
        assert!(p.searches.iter().all(|s| s.original));
        let p = plan("x", &["overdue".into(), "逾期".into()], "Which invoices are overdue?", &cfg());
        assert_eq!(p.searches.iter().map(|s| s.original).collect::<Vec<_>>(), [true, true, false]);
    }
}
