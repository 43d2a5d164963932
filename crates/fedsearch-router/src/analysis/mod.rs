//! Text analysis shared by source selection and query formulation: tokens that match across
//! spellings (stemmed English words, Chinese character bigrams) and a bilingual glossary.
//!
//! - [`tokens`]: lowercased Latin words of 2+ letters without stop words, lightly stemmed
//!   (`shipments` → `shipment`, `refunded` → `refund`), and every bigram of each run of CJK
//!   characters (a one-character run is kept whole) — the standard CJK analysis, so 发货 in
//!   为什么还没发货 meets 发货 in a description without a dictionary.
//! - [`Glossary`]: concepts with their terms in several languages. A text that mentions a term
//!   (a CJK term anywhere, a Latin term as a whole word or a word prefix of it plus an inflection)
//!   is expanded with the concept's other terms. The router ships a built-in glossary of common
//!   enterprise words (`glossary.txt`); a deployment adds its own groups in `glossary.groups`.

use std::collections::{BTreeSet, HashMap};

pub use fedsearch_core::text::{is_cjk, is_stop_word, tokens, words};

/// Function words that separate content words in Chinese text (longest first when matched).
const CJK_STOP_WORDS: &[&str] = &[
    "为什么",
    "什么时候",
    "怎么样",
    "是不是",
    "有没有",
    "能不能",
    "可不可以",
    "什么",
    "怎么",
    "怎样",
    "如何",
    "哪些",
    "哪个",
    "哪里",
    "多少",
    "多久",
    "可以",
    "能否",
    "是否",
    "需要",
    "应该",
    "以后",
    "之后",
    "之前",
    "以前",
    "之内",
    "以内",
    "现在",
    "目前",
    "已经",
    "还是",
    "或者",
    "如果",
    "因为",
    "所以",
    "但是",
    "时候",
    "一下",
    "一直",
    "最后",
    "这个",
    "那个",
    "这些",
    "那些",
    "我们",
    "你们",
    "他们",
    "她们",
    "到底",
    "大概",
    "一共",
    "关于",
    "还有",
];
const CJK_STOP_CHARS: &str =
    "的了吗呢吧啊呀是在和与或及我你他她它们这那哪谁就都也还没不被把给对从到向让请要会能很又再才么该";

/// Chinese content words of a text: each run of CJK characters cut at function words, chunks
/// of 2+ characters, each once. "东西签收以后几天之内可以退吗" → 东西签收, 几天.
pub fn cjk_chunks(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        if cur.chars().count() >= 2 && !out.contains(cur) {
            out.push(cur.clone());
        }
        cur.clear();
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !is_cjk(c) {
            flush(&mut cur, &mut out);
            i += 1;
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 4)].iter().collect();
        if let Some(w) = CJK_STOP_WORDS.iter().find(|w| rest.starts_with(*w)) {
            flush(&mut cur, &mut out);
            i += w.chars().count();
            continue;
        }
        if CJK_STOP_CHARS.contains(c) {
            flush(&mut cur, &mut out);
        } else {
            cur.push(c);
        }
        i += 1;
    }
    flush(&mut cur, &mut out);
    out
}

/// Weight of a token that came from a glossary expansion (another language's word for the same
/// concept, or a near synonym) rather than from the question itself.
pub const EXPANSION_WEIGHT: f64 = 0.6;

/// The question's matching tokens with a weight: 1 for its own, [`EXPANSION_WEIGHT`] for the
/// tokens of its glossary `expansions`. Source selection and result merging both score by these.
pub fn question_tokens(query: &str, expansions: &[String]) -> Vec<(String, f64)> {
    fedsearch_core::text::weighted_tokens(query, expansions, EXPANSION_WEIGHT)
}

/// Chinese words that ask for every item that matches: 哪些订单, 列出, 所有, 清单.
const CJK_LIST_WORDS: &[&str] =
    &["哪些", "哪几", "列出", "列一下", "所有", "全部", "清单", "一览", "有几", "多少个", "多少张", "多少笔"];
/// English words that ask for every item that matches ("list the invoices", "which claims",
/// "all open cases"). Not "how many": "after how many days overdue" asks for a number.
const LIST_WORDS: &[&str] = &["list", "which", "all", "every", "each"];

/// Whether the question asks for every item that matches rather than one answer: "List the
/// invoices that are overdue", "Which claims are still open", 哪些订单还没发货. Fusion then
/// counts every row a structured source returned as one of the answers (`SourceSpec.one_set`),
/// not as an order where the tenth row is worth a tenth of the first.
pub fn asks_for_list(question: &str) -> bool {
    let lowered = question.to_lowercase();
    CJK_LIST_WORDS.iter().any(|w| lowered.contains(w))
        || all_of_what(&lowered)
        || words(&lowered).any(|w| LIST_WORDS.contains(&w))
        || asks_what_changed_by_form(&lowered)
}

/// 都 … 啥 / 什么 within a few characters: 最近一周都出过啥状况, 上周都有什么问题 — "what, all of it".
fn all_of_what(lowered: &str) -> bool {
    lowered.match_indices('都').any(|(i, _)| {
        let after: String = lowered[i + '都'.len_utf8()..].chars().take(6).collect();
        after.contains('啥') || after.contains("什么")
    })
}

/// Chinese forms of "what changed": 改了什么, 有什么更新.
const CJK_CHANGE_FORMS: &[&str] = &[
    "改了什么",
    "改过什么",
    "更新了什么",
    "变了什么",
    "新增了什么",
    "有什么变化",
    "有什么更新",
    "有什么改动",
    "有什么新",
];
/// The verbs of "what changed" ("what got edited", "what's been updated") after `what`.
const CHANGE_VERBS: &[&str] = &["changed", "edited", "updated", "modified", "revised", "added", "published", "new"];
/// Auxiliaries that may stand between `what` and the change verb.
const CHANGE_AUXILIARIES: &[&str] = &["got", "gotten", "was", "were", "has", "have", "been", "is", "s"];
/// Words for a whole store of documents: "what changed on the wiki" asks for its changes, "what
/// changed in the drug library guide" for one document's.
const REPOSITORY_WORDS: &[&str] = &[
    "wiki",
    "wikis",
    "knowledge base",
    "kb",
    "help center",
    "help centre",
    "helpdesk",
    "documentation",
    "docs",
    "intranet",
    "confluence",
    "知识库",
    "帮助中心",
    "文档库",
    "内网",
];

/// "What changed on the wiki last week", "what got edited in the help center", 知识库最近改了什么: a
/// question for every change of a store of documents, as "which pages changed" is (`lowered`: the
/// question lower-cased). A change of one document ("what changed in the P200 guide") is not.
fn asks_what_changed_by_form(lowered: &str) -> bool {
    let latin: Vec<&str> = words(lowered).collect();
    let repository = REPOSITORY_WORDS.iter().any(|r| {
        let phrase: Vec<&str> = r.split(' ').collect();
        if r.is_ascii() { latin.windows(phrase.len()).any(|w| w == phrase) } else { lowered.contains(r) }
    });
    if !repository {
        return false;
    }
    let mut after_what =
        latin.iter().skip_while(|w| **w != "what").skip(1).skip_while(|w| CHANGE_AUXILIARIES.contains(w));
    CJK_CHANGE_FORMS.iter().any(|w| lowered.contains(w)) || after_what.next().is_some_and(|w| CHANGE_VERBS.contains(w))
}

/// A lowercased text prepared for many [`Term`] look-ups: its stemmed words, once.
pub struct Prepared {
    lowered: String,
    stems: Vec<String>,
}

impl Prepared {
    pub fn new(text: &str) -> Prepared {
        let lowered = text.to_lowercase();
        let stems = words(&lowered).map(|w| match_stem(w.trim_matches('-'))).collect();
        Prepared { lowered, stems }
    }
}

/// The stem terms are matched by: a token's ([`fedsearch_core::text::token_stem`]), so the bare
/// verb meets its other forms — `insure` meets "insured" (`insur`), `damage` "damaged".
fn match_stem(word: &str) -> String {
    fedsearch_core::text::token_stem(word).into_owned()
}

/// A glossary or keyword term, ready to match: CJK terms by substring, Latin terms by the stems
/// of consecutive whole words (`refund` in "refunded", `policy` in "policies", `ship` in
/// "shipping").
#[derive(Debug, Clone)]
pub struct Term {
    pub text: String,
    stems: Option<Vec<String>>,
}

impl Term {
    pub fn new(term: &str) -> Term {
        let text = term.trim().to_lowercase();
        let stems = (!text.chars().any(is_cjk)).then(|| words(&text).map(match_stem).collect());
        Term { text, stems }
    }

    pub fn found_in(&self, p: &Prepared) -> bool {
        match &self.stems {
            _ if self.text.is_empty() => false,
            None => p.lowered.contains(&self.text),
            Some(want) => !want.is_empty() && p.stems.windows(want.len()).any(|w| w == want.as_slice()),
        }
    }
}

/// Whether `text` mentions `term` (see [`Term`]); for one-off checks.
pub fn mentions(text: &str, term: &str) -> bool {
    Term::new(term).found_in(&Prepared::new(text))
}

/// How a text mentions a glossary term; ordered, so the stronger of two mentions wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Found {
    No,
    /// A two-character CJK term split by an infix ([`split_at`]).
    Split,
    AsWritten,
}

/// What may stand between the two characters of a Chinese verb-object word that splits (离合词):
/// 发了货, 付过款, 发不了货, 开不出票, 退完款. Longest first.
const SPLIT_INFIXES: &[&str] = &["不了", "不出", "不到", "不上", "得了", "了", "过", "完"];

/// Whether `text` starts with the two-character CJK `term` split by one of [`SPLIT_INFIXES`]
/// (发不了货 for 发货). Only the term's first character is known to match when called.
fn split_at(text: &str, term: &str) -> bool {
    let mut chars = term.chars();
    let (Some(first), Some(second), None) = (chars.next(), chars.next(), chars.next()) else { return false };
    if !is_cjk(first) || !is_cjk(second) {
        return false;
    }
    let Some(rest) = text.strip_prefix(first) else { return false };
    SPLIT_INFIXES.iter().any(|infix| rest.strip_prefix(infix).is_some_and(|after| after.starts_with(second)))
}

/// One glossary concept a text mentions (see [`Glossary::concepts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Concept {
    /// Its terms the text contains.
    pub found: Vec<String>,
    /// Its other terms (other languages, synonyms).
    pub others: Vec<String>,
}

/// Concepts and their terms in several languages.
#[derive(Debug, Clone, Default)]
pub struct Glossary {
    groups: Vec<Vec<Term>>,
    /// Every term, as (group, term) positions, by what an occurrence must start with: a
    /// substring (CJK) term by its first character, a word term by its first stem. A text is
    /// looked up once per character and once per word instead of checking every term.
    by_char: HashMap<char, Vec<(usize, usize)>>,
    by_stem: HashMap<String, Vec<(usize, usize)>>,
}

impl Glossary {
    /// The built-in groups (`glossary.txt`) when `builtin`, plus `extra` groups from config.
    pub fn new(builtin: bool, extra: &[Vec<String>]) -> Glossary {
        Self::with_removed(builtin, &[], extra)
    }

    /// The glossary a router config asks for (`glossary.builtin`, `.remove`, `.groups`).
    pub fn from_config(config: &crate::config::GlossarySection) -> Glossary {
        Self::with_removed(config.builtin, &config.remove, &config.groups)
    }

    /// [`Glossary::new`] with the built-in terms `removed` taken out of every built-in group (a
    /// word that means something else in this deployment: a ticket is a plane ticket at a travel
    /// agency, not the built-in support ticket).
    fn with_removed(builtin: bool, removed: &[String], extra: &[Vec<String>]) -> Glossary {
        let removed: Vec<Term> = removed.iter().map(|t| Term::new(t)).collect();
        // A Latin term goes with its word forms ("ticket" takes "tickets" along: both stem alike).
        let same = |r: &Term, t: &Term| r.text == t.text || (r.stems.is_some() && r.stems == t.stems);
        let kept = |t: &Term| !t.text.is_empty() && !removed.iter().any(|r| same(r, t));
        let mut groups: Vec<Vec<Term>> = Vec::new();
        if builtin {
            for line in include_str!("glossary.txt").lines() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                groups.push(line.split('|').map(Term::new).filter(kept).collect());
            }
        }
        for g in extra {
            groups.push(g.iter().map(|t| Term::new(t)).filter(|t| !t.text.is_empty()).collect());
        }
        groups.retain(|g| g.len() >= 2);
        let mut by_char: HashMap<char, Vec<(usize, usize)>> = HashMap::new();
        let mut by_stem: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for (gi, g) in groups.iter().enumerate() {
            for (ti, t) in g.iter().enumerate() {
                match &t.stems {
                    None => {
                        if let Some(c) = t.text.chars().next() {
                            by_char.entry(c).or_default().push((gi, ti));
                        }
                    }
                    Some(want) => {
                        if let Some(first) = want.first() {
                            by_stem.entry(first.clone()).or_default().push((gi, ti));
                        }
                    }
                }
            }
        }
        Glossary { groups, by_char, by_stem }
    }

    /// The (group, term, how) positions of the terms `p` mentions ([`Term::found_in`], and
    /// two-character CJK terms split by an infix: [`split_at`]), sorted: a substring term occurs
    /// where a character of the text starts it, a word term where a word's stem is its first stem.
    fn found(&self, p: &Prepared) -> Vec<(usize, usize, Found)> {
        let mut found = Vec::new();
        for (at, c) in p.lowered.char_indices() {
            for &(g, t) in self.by_char.get(&c).map_or(&[][..], Vec::as_slice) {
                let term = self.groups[g][t].text.as_str();
                if p.lowered[at..].starts_with(term) {
                    found.push((g, t, Found::AsWritten));
                } else if split_at(&p.lowered[at..], term) {
                    found.push((g, t, Found::Split));
                }
            }
        }
        for (at, stem) in p.stems.iter().enumerate() {
            for &(g, t) in self.by_stem.get(stem.as_str()).map_or(&[][..], Vec::as_slice) {
                if let Some(want) = &self.groups[g][t].stems
                    && p.stems[at..].starts_with(want)
                {
                    found.push((g, t, Found::AsWritten));
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The concepts `text` mentions, in glossary order: each group with, per term, how the text
    /// mentions it (as written wins over split).
    fn mentioned(&self, text: &str) -> Vec<(&[Term], Vec<Found>)> {
        let found = self.found(&Prepared::new(text));
        let mut out: Vec<(&[Term], Vec<Found>)> = Vec::new();
        let mut last = None;
        for (g, t, how) in found {
            if last != Some(g) {
                out.push((&self.groups[g], vec![Found::No; self.groups[g].len()]));
                last = Some(g);
            }
            if let Some((_, hit)) = out.last_mut() {
                hit[t] = hit[t].max(how);
            }
        }
        out
    }

    /// For each concept the text mentions, its terms the text does not already contain as
    /// written (a split term is sent whole: 发不了货 is expanded with 发货).
    pub fn expand(&self, text: &str) -> Vec<String> {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut ordered = Vec::new();
        for (g, hit) in self.mentioned(text) {
            for (t, &found) in g.iter().zip(&hit) {
                if found != Found::AsWritten && seen.insert(t.text.as_str()) {
                    ordered.push(t.text.clone());
                }
            }
        }
        ordered
    }

    /// For each concept the text mentions: its terms the text contains (as written or split),
    /// and its other terms — the same as [`Glossary::expand`], kept per concept so a term's
    /// synonyms can travel with it.
    pub fn concepts(&self, text: &str) -> Vec<Concept> {
        let mut out = Vec::new();
        for (g, hit) in self.mentioned(text) {
            let terms = |mentioned: bool| -> Vec<String> {
                g.iter()
                    .zip(&hit)
                    .filter(|(_, f)| (**f != Found::No) == mentioned)
                    .map(|(t, _)| t.text.clone())
                    .collect()
            };
            let (found, others) = (terms(true), terms(false));
            if !found.is_empty() && !others.is_empty() {
                out.push(Concept { found, others });
            }
        }
        out
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_questions_are_told_from_questions_about_one_thing() {
        for q in [
            "List the invoices that are overdue at the moment.",
            "Which cargo claims are still open right now, and how much is being claimed in each?",
            "Show me every order that is still unpaid.",
            "哪些订单还没有发货？",
            "列出本月所有逾期发票",
            "What changed on the wiki in the last six weeks?",
            "What got edited in the help center more than six weeks ago?",
            "What's been updated in the knowledge base?",
            "知识库最近改了什么？",
            "最近一周系统那边都出过啥状况？",
            "上周都有什么问题？",
        ] {
            assert!(asks_for_list(q), "{q}");
        }
        for q in [
            "Where is container CAIU8830021 now?",
            "退款政策是什么？",
            "Was Li Na charged for the chairs?",
            "Is the allowance enough?",
            "After how many days overdue do we stop taking new bookings?",
            "What is the new return fee?",
            "Why was the order changed?",
            "What changed in the P200 drug library guide this October?",
            "退货政策今年改了什么？",
        ] {
            assert!(!asks_for_list(q), "{q}");
        }
    }

    #[test]
    fn a_removed_built_in_term_takes_only_the_deployments_meaning() {
        let support = |g: &Glossary, q: &str| g.expand(q).iter().any(|t| t == "工单");
        assert!(support(&Glossary::new(true, &[]), "change the ticket to Friday"));
        let plane = vec![vec!["ticket".to_string(), "机票".to_string()]];
        // Added, a group is one more meaning; removed from the built-in ones, it is the only one.
        assert!(support(&Glossary::new(true, &plane), "change the ticket to Friday"));
        let config = crate::config::GlossarySection { builtin: true, remove: vec!["ticket".into()], groups: plane };
        let g = Glossary::from_config(&config);
        assert!(!support(&g, "change the ticket to Friday"), "{:?}", g.expand("change the ticket to Friday"));
        assert!(g.expand("change the ticket to Friday").iter().any(|t| t == "机票"));
        assert!(support(&g, "open a support ticket"), "the concept's other terms stay");
    }

    #[test]
    fn chinese_questions_give_their_content_words() {
        assert_eq!(cjk_chunks("东西签收以后几天之内可以退吗？"), vec!["东西签收", "几天"]);
        assert_eq!(cjk_chunks("李娜买的投影仪送到了吗"), vec!["李娜买", "投影仪送"]);
        assert_eq!(cjk_chunks("订单SO20261001为什么还没发货？"), vec!["订单", "发货"]);
        assert!(cjk_chunks("Why was it not shipped?").is_empty());
    }

    #[test]
    fn latin_terms_match_whole_words_with_inflections() {
        assert!(mentions("was it refunded?", "refund"));
        assert!(mentions("two refunds", "refund"));
        assert!(!mentions("coffee grinder", "fee"), "fee inside coffee is not the word fee");
        assert!(mentions("the on-call rota", "on-call"));
        assert!(mentions("客户拒收了", "拒收"));
        assert!(!mentions("reorder", "order"));
        assert!(mentions("our return policies", "policy"));
        assert!(mentions("did not insure the cargo", "insured"), "insure and insured meet");
        assert!(mentions("is the damage covered", "damaged"));
        assert!(mentions("which case is it", "cases"), "cases stems to cas: case meets it");
        assert!(mentions("no fees", "fee") && !mentions("for free", "fre"), "ee stays");
        assert!(mentions("why was it shipped", "shipping"));
        assert!(mentions("refuse delivery twice", "refuse delivery"));
        assert!(!mentions("refuse the delivery", "refuse delivery"));
    }

    /// The glossary's answers as checking every term against the text would give them.
    fn by_every_term(g: &Glossary, text: &str) -> (Vec<String>, Vec<Concept>) {
        let p = Prepared::new(text);
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let (mut expanded, mut concepts) = (Vec::new(), Vec::new());
        for group in &g.groups {
            let (found, others): (Vec<&Term>, Vec<&Term>) = group.iter().partition(|t| t.found_in(&p));
            if found.is_empty() {
                continue;
            }
            for t in &others {
                if seen.insert(t.text.as_str()) {
                    expanded.push(t.text.clone());
                }
            }
            if !others.is_empty() {
                concepts.push(Concept {
                    found: found.into_iter().map(|t| t.text.clone()).collect(),
                    others: others.into_iter().map(|t| t.text.clone()).collect(),
                });
            }
        }
        (expanded, concepts)
    }

    #[test]
    fn the_term_index_finds_exactly_the_terms_a_scan_finds() {
        let g = Glossary::new(true, &[vec!["云杉".into(), "spruce".into()], vec!["SO单".into(), "sales order".into()]]);
        let mut texts: Vec<String> = [
            "What does a customer pay to refuse delivery?",
            "退款多久到账",
            "客户C1001：我昨天买的商品为什么还没发货？如果拒收要收手续费吗？",
            "最近一周线上问题中哪些和支付超时有关，同时附上对应的工单处理状态",
            "refund refunds refunded for a delayed order, return policies and shipping fees",
            "Spruce Mall SO单 sales orders on-call rota 支付超时问题",
            "",
            "天气",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Every term alone, inside a sentence, and next to its neighbour in the glossary.
        let terms: Vec<&str> = g.groups.iter().flatten().map(|t| t.text.as_str()).collect();
        for w in terms.windows(2) {
            texts.push(w[0].to_string());
            texts.push(format!("Why {} and {}?", w[0], w[1]));
            texts.push(format!("{}{}了吗", w[1], w[0]));
        }
        for text in &texts {
            let (expanded, concepts) = by_every_term(&g, text);
            assert_eq!(g.expand(text), expanded, "{text}");
            assert_eq!(g.concepts(text), concepts, "{text}");
        }
    }

    #[test]
    fn an_english_question_is_expanded_with_chinese_terms_and_back() {
        let g = Glossary::new(true, &[vec!["云杉".into(), "spruce".into()]]);
        let en = g.expand("What does a customer pay to refuse delivery?");
        assert!(en.contains(&"拒收".to_string()), "{en:?}");
        assert!(en.contains(&"客户".to_string()), "{en:?}");
        let zh = g.expand("退款多久到账");
        assert!(zh.contains(&"refund".to_string()), "{zh:?}");
        assert!(g.expand("spruce mall").contains(&"云杉".to_string()));
        assert!(g.expand("天气").is_empty());
        let c = g.concepts("退款多久到账");
        let refund = c.iter().find(|c| c.found.contains(&"退款".to_string())).unwrap();
        assert!(refund.others.contains(&"refund".to_string()) && !refund.others.contains(&"退款".to_string()));
        let all: Vec<String> = c.iter().flat_map(|c| c.others.clone()).collect();
        assert!(g.expand("退款多久到账").iter().all(|t| all.contains(t)));
    }

    #[test]
    fn a_split_verb_object_word_is_found_and_sent_whole() {
        let g = Glossary::new(true, &[]);
        // 发不了货 / 付了款 are 发货 / 付款 split by an infix: the concept is found, and the whole
        // word is sent with its other terms (the text does not hold it as written).
        let cannot_ship = g.expand("现在有哪些订单卡着发不了货？");
        for t in ["发货", "ship", "shipped"] {
            assert!(cannot_ship.contains(&t.to_string()), "{t}: {cannot_ship:?}");
        }
        let paid = g.expand("客户说已经付了款");
        assert!(paid.contains(&"付款".to_string()) && paid.contains(&"payment".to_string()), "{paid:?}");
        let concepts = g.concepts("付了款");
        assert!(
            concepts.iter().any(|c| c.found == ["付款"] && c.others.contains(&"payment".to_string())),
            "{concepts:?}"
        );
        // Written whole, the word is not sent again; other characters between the two are no split.
        assert!(!g.expand("为什么还没发货").contains(&"发货".to_string()));
        assert!(!g.expand("发票和货款").contains(&"发货".to_string()));
        assert!(split_at("发不了货", "发货") && split_at("退过款", "退款") && !split_at("发了好多货", "发货"));
        assert!(!split_at("发不了货", "发货单") && !split_at("ship it", "sh"));
    }

    #[test]
    fn colloquial_chinese_reaches_the_words_templates_list() {
        let g = Glossary::new(true, &[]);
        let ordered = g.expand("珠江医院今年都订了些什么？");
        assert!(ordered.contains(&"order".to_string()) && ordered.contains(&"订单".to_string()), "{ordered:?}");
        let unpaid = g.expand("9 月份开票的订单有哪些还没收到钱？");
        assert!(unpaid.contains(&"未付".to_string()) && unpaid.contains(&"unpaid".to_string()), "{unpaid:?}");
        assert!(g.expand("Which invoices are not yet paid?").contains(&"未付".to_string()));
    }

    #[test]
    fn general_enterprise_words_cross_languages_both_ways() {
        let g = Glossary::new(true, &[]);
        let rule = g.expand("What are the deadlines for reporting a serious injury to the regulator?");
        for zh in ["严重伤害", "监管部门"] {
            assert!(rule.contains(&zh.to_string()), "{zh} missing from {rule:?}");
        }
        let authority = g.expand("理赔专员自己最多能批多少钱的赔款？");
        assert!(authority.contains(&"specialist".to_string()), "{authority:?}");
        let lapsed = g.expand("How much do we charge once a service contract has lapsed?");
        assert!(lapsed.contains(&"失效".to_string()), "{lapsed:?}");
        assert!(g.expand("出现服务降级怎么办").contains(&"degradation".to_string()));
    }
}
