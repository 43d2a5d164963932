//! Result merging by the question's own words: the fused candidates are re-scored with one
//! scoring function for every source, over what each hit shows (title, snippet, metadata).
//!
//! Rank-based fusion gives every source's best hit full credit, however weakly it matched: an
//! incident log's top hit for "拒收手续费现在是多少" is still its top hit. Each source's scores
//! mean different things, so they cannot say which source's best is better; the words a hit
//! shows can. Each candidate gets features, all within 0..=1 ([`RerankFeatures`], recorded in
//! its `explanation.rerank`):
//!
//! - `fused`: its fused score / the best candidate's.
//! - `coverage` = Σ over question tokens the hit shows of weight × IDF / Σ over the question's
//!   tokens that any candidate shows of weight × IDF. Tokens are [`crate::analysis::tokens`]
//!   (stemmed words, CJK bigrams); a token from a glossary expansion (the other language's word)
//!   weighs 0.6; IDF is over the candidates, so a word every candidate shows counts little. A
//!   hit that shows one term of a glossary concept the question holds is credited with the
//!   concept's every term (a Chinese page that shows 逾期 shows "overdue" too), so a page in the
//!   other language is not held to the part of the question its language can show.
//!   `title_coverage`: the same of its title alone, without that credit.
//! - `bm25`: BM25 of the same weighted tokens (title counted twice), relative to the best
//!   candidate's: unlike coverage it counts repeats and discounts long snippets.
//! - `names`: the share of the names and ids the question names (order numbers, and customers or
//!   people in either script from the sources' vocabularies: [`crate::aliases`]) and of its
//!   numbered names and codes ("class 7", "Terminal 2", "UN38.3", "B2606":
//!   [`fedsearch_core::text::numbered_names`], [`fedsearch_core::text::codes`]; "class 7" is not
//!   shown by "class 70") it shows, and of its two-character codes that are one of the hit's
//!   metadata values ("which P1 tickets": `priority: P1`; [`short_codes`]), unless it asks for a
//!   rule.
//! - `reciprocal_rank`: 1 / its best rank in a source.
//! - `kind_named`: the question names its kind, its doc_type or source ("which tickets").
//! - `named_id`: the question names the hit's own id (`TCK-5002`): the record asked about. A
//!   weight, not a rule: a question about a notice's execution ("FSN-2026-07 还有几台没升级")
//!   names the notice but asks for the devices.
//! - `state`: the question asks for records in one state ("still open", 还没关, "resolved":
//!   [`crate::intent::asks_for_state`]) and the hit's status metadata says it is in that state
//!   (1), or, for a list question, in the other one (−1).
//!
//! `score` = Σ `rerank.weights` × feature (the defaults were fitted to the tuning companies'
//! labeled candidates by `scripts/fit-rerank.py`; `rerank.coverage_weight: β` is the short form
//! fused 1 − β, coverage β).
//!
//! A question that asks for one answer (not a list: [`crate::analysis::asks_for_list`]) gets a
//! varied list: past [`VARIETY_FREE`] hits of one group (a source, or one template of a records
//! source), each further hit of that group keeps [`VARIETY_DECAY`] of its score for every one
//! before it, so ten rows of one template do not push the other sources' answers off the page.
//!
//! An old version (`version.status = superseded`) whose current version is also a candidate
//! keeps [`OLD_VERSION_SHARE`] of its score, unless it shows more of the question than the
//! current one ("the 2025 edition"): the current version answers, the old one is background.
//! A row of a records source keeps [`RULE_ROW_SHARE`] when the question asks for a rule and
//! names no record ([`rule_row`]): one overdue invoice shows every word of "after how many days
//! overdue do we stop taking bookings", the policy states the rule.
//! When a list question asks which of something a records source holds ("哪些退款"), every hit
//! but the records rows of the kind it names keeps [`LISTED_ROWS_FIRST_SHARE`]. When a list
//! question's time phrase was sent to a source as a window (it lists the events of a period),
//! reference material keeps [`WINDOW_LIST_REFERENCE_SHARE`].
//! When the question asks why about one thing (not a list), or asks for a rule and names no
//! record, every records row but the best-scored one keeps [`OTHER_ROWS_SHARE`]: the record
//! asked about (or one example) and the reason or the rule answer, the other rows only show the
//! same words again.
//! A glossary page (titled glossary, 术语表 …: [`crate::intent::is_glossary_title`]) keeps
//! [`GLOSSARY_SHARE`] of its score unless the question asks what a word means: it shares words
//! with most questions of its domain because it defines them, not because it answers.
//! Versions keep fusion's rule afterwards: an old version never ranks above its current one
//! (the current one takes the better place). With every weight but `fused` at 0 the fused order
//! is kept.

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};

use fedsearch_proto::types::{Hit, RerankFeatures};

use crate::{
    config::{RerankWeights, StateValues},
    intent::AskedState,
};

/// No deployment status values: the built-in ones only.
static NO_STATE_VALUES: StateValues = StateValues::NONE;

/// A metadata key whose value repeats the question's own terms (the wiki's `matched_terms`): not
/// something the hit shows, so no feature reads it.
const ECHO_KEYS: &[&str] = &["matched_terms"];

/// The values of `h`'s metadata that say something of the hit itself.
fn shown_metadata(h: &Hit) -> impl Iterator<Item = &str> {
    h.metadata.iter().filter(|(k, _)| !ECHO_KEYS.contains(&k.as_str())).map(|(_, v)| v.as_str())
}

/// The question indexed for one pass over each candidate's text: its weighted tokens (each
/// distinct token at the last index it has), the adjacent pairs of its own tokens and the
/// expansion phrases its tokens are bound to.
struct Index<'a> {
    tokens: HashMap<&'a str, usize>,
    /// Each distinct token of the question's own sequence, numbered.
    words: HashMap<&'a str, usize>,
    /// The question's adjacent pairs, as numbers of [`Index::words`].
    pairs: Vec<(usize, usize)>,
    /// The expansion phrases of several tokens, lowercased.
    phrases: Vec<String>,
    /// Per question token: the [`Index::phrases`] it came from when only such phrases gave it
    /// (it then counts only where the hit shows one of them); empty for every other token.
    bound: Vec<Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(question: &'a [(String, f64)], sequence: &'a [String], expansions: &[String]) -> Self {
        // A token the question repeats is read at its last index (BM25 counts it once).
        let tokens: HashMap<&str, usize> = question.iter().enumerate().map(|(i, (t, _))| (t.as_str(), i)).collect();
        let mut words = HashMap::with_capacity(sequence.len());
        for w in sequence {
            let n = words.len();
            words.entry(w.as_str()).or_insert(n);
        }
        let pairs = sequence.windows(2).map(|w| (words[w[0].as_str()], words[w[1].as_str()])).collect();
        let (phrases, bound) = phrase_bound(question, expansions);
        Index { tokens, words, pairs, phrases, bound }
    }
}

/// The expansion phrases of several tokens, and per question token the phrases it came from
/// when no single-token expansion gave it too. Tokens of the question's own words
/// (weight 1) are never bound: the asker wrote them.
fn phrase_bound(question: &[(String, f64)], expansions: &[String]) -> (Vec<String>, Vec<Vec<usize>>) {
    let mut phrases = Vec::new();
    let mut bound = vec![Vec::new(); question.len()];
    let mut free: HashSet<String> = HashSet::new();
    for e in expansions {
        let toks = fedsearch_core::text::tokens(e);
        if toks.len() < 2 {
            free.extend(toks);
            continue;
        }
        let p = phrases.len();
        phrases.push(e.trim_matches('"').to_lowercase());
        for (i, (t, w)) in question.iter().enumerate() {
            if *w < 1.0 && toks.contains(t) {
                bound[i].push(p);
            }
        }
    }
    for (i, (t, _)) in question.iter().enumerate() {
        if free.contains(t) {
            bound[i].clear();
        }
    }
    (phrases, bound)
}

/// What one candidate shows of the question, from one tokenizing pass over its title, snippet
/// and metadata values.
struct Shown {
    /// Occurrences of each distinct question token (at its last index) in the title.
    title: Vec<u32>,
    /// The same in the snippet and the metadata values.
    body: Vec<u32>,
    /// Its number of tokens, the title counted twice (BM25's document length).
    len: usize,
    /// The question's adjacent pairs the title or the snippet shows adjacent.
    pairs: HashSet<(usize, usize)>,
}

impl Shown {
    /// `lowered`: [`lowered_text`] of `h` when the question has expansion phrases.
    fn of(h: &Hit, index: &Index<'_>, question_len: usize, lowered: &str) -> Self {
        let mut shown =
            Shown { title: vec![0; question_len], body: vec![0; question_len], len: 0, pairs: HashSet::new() };
        shown.read(&h.title, index, Part::Title);
        shown.read(&h.snippet, index, Part::Body { adjacency: true });
        for value in shown_metadata(h) {
            shown.read(value, index, Part::Body { adjacency: false });
        }
        shown.unbind(lowered, index);
        shown
    }

    /// Clears the counts of tokens only an expansion phrase gave when the hit shows none of
    /// their phrases (服务 of `服务单` in 服务工程师).
    fn unbind(&mut self, lowered: &str, index: &Index<'_>) {
        if index.phrases.is_empty() {
            return;
        }
        let shown: Vec<bool> = index.phrases.iter().map(|p| lowered.contains(p.as_str())).collect();
        for (i, phrases) in index.bound.iter().enumerate() {
            if !phrases.is_empty() && !phrases.iter().any(|&p| shown[p]) {
                self.title[i] = 0;
                self.body[i] = 0;
            }
        }
    }

    /// Counts `text`'s tokens into the title's or the body's occurrences and, where adjacency
    /// counts, the question's pairs it shows adjacent (within this text only).
    fn read(&mut self, text: &str, index: &Index<'_>, part: Part) {
        let (counts, weight, adjacency) = match part {
            Part::Title => (&mut self.title, 2, true),
            Part::Body { adjacency } => (&mut self.body, 1, adjacency),
        };
        let mut previous: Option<usize> = None;
        fedsearch_core::text::each_token(text, |t| {
            self.len += weight;
            if let Some(&i) = index.tokens.get(t) {
                counts[i] += 1;
            }
            if adjacency {
                let word = index.words.get(t).copied();
                if let (Some(a), Some(b)) = (previous, word) {
                    self.pairs.insert((a, b));
                }
                previous = word;
            }
        });
    }

    fn shows(&self, i: usize) -> bool {
        self.title[i] + self.body[i] > 0
    }
}

/// `h`'s title, snippet and shown metadata values, lowercased: where the names the question
/// names and its expansion phrases are looked for (built once per hit).
fn lowered_text(h: &Hit) -> String {
    [h.title.as_str(), h.snippet.as_str()]
        .into_iter()
        .chain(shown_metadata(h))
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase()
}

/// Which part of a hit a text is: the title (counted twice by BM25) or the rest.
#[derive(Clone, Copy)]
enum Part {
    Title,
    /// The snippet (whose adjacent pairs count as phrases) or a metadata value (whose do not).
    Body {
        adjacency: bool,
    },
}

/// Per hit, per question token: whether `shows` says the hit shows it (a repeated token read at
/// its last index, so it counts as often as the question repeats it).
fn shown_matrix(
    question: &[(String, f64)],
    index: &Index<'_>,
    shown: &[Shown],
    shows: impl Fn(&Shown, usize) -> bool,
) -> Vec<Vec<bool>> {
    shown.iter().map(|s| question.iter().map(|(t, _)| shows(s, index.tokens[t.as_str()])).collect()).collect()
}

/// Per concept, the question-token indices of each of its terms (a term only when the question's
/// tokens hold all of its tokens).
fn concept_terms(index: &Index<'_>, concepts: &[crate::analysis::Concept]) -> Vec<Vec<Vec<usize>>> {
    let term_at = |term: &String| -> Option<Vec<usize>> {
        let at: Option<Vec<usize>> =
            fedsearch_core::text::tokens(term).iter().map(|t| index.tokens.get(t.as_str()).copied()).collect();
        at.filter(|at| !at.is_empty())
    };
    concepts.iter().map(|c| c.found.iter().chain(&c.others).filter_map(term_at).collect()).collect()
}

/// A hit that shows every token of one term of a concept shows the concept's every term.
fn credit_concepts(shows: &mut [Vec<bool>], concepts: &[Vec<Vec<usize>>]) {
    for row in shows.iter_mut() {
        for terms in concepts {
            if terms.iter().any(|term| term.iter().all(|&t| row[t])) {
                for &t in terms.iter().flatten() {
                    row[t] = true;
                }
            }
        }
    }
}

/// Each hit's share of the question it shows, 0..=1, in the hits' order.
pub fn coverage(question: &[(String, f64)], hits: &[Hit]) -> Vec<f64> {
    let index = Index::new(question, &[], &[]);
    let shown: Vec<Shown> = hits.iter().map(|h| Shown::of(h, &index, question.len(), "")).collect();
    fedsearch_core::text::coverage_of(question, &shown_matrix(question, &index, &shown, Shown::shows))
}

/// Share of `names` (each a name in its spellings, lowercased) and `numbered` names that `h`
/// shows in its id, title, snippet or metadata (`lowered`: [`lowered_text`] of `h`), and of the
/// `values` the question names that are one of its metadata values; 0 when the question names
/// nothing.
fn names_shown(h: &Hit, lowered: &str, names: &[Vec<String>], numbered: &[String], values: &[&str]) -> f64 {
    let asked = names.len() + numbered.len() + values.len();
    if asked == 0 {
        return 0.0;
    }
    let id = h.id.to_lowercase();
    let shows = |n: &str| holds_name(&id, n) || holds_name(lowered, n);
    let shown = names.iter().filter(|spellings| spellings.iter().any(|n| shows(n))).count()
        + numbered.iter().filter(|n| shows(n)).count()
        + values.iter().filter(|v| holds_value(h, v)).count();
    shown as f64 / asked as f64
}

/// Whether one of `h`'s metadata values is `value` (ASCII case aside).
fn holds_value(h: &Hit, value: &str) -> bool {
    h.metadata.values().any(|v| v.trim().eq_ignore_ascii_case(value))
}

/// The question's short codes ([`short_codes`]) that are a metadata value of some candidate:
/// "which P1 tickets" names the priority `P1` when tickets carry it. A short code no candidate
/// holds as a value ("Q3" in a title) names nothing here; longer codes are `numbered`.
fn values_named<'a>(short_codes: &'a [String], hits: &[Hit]) -> Vec<&'a str> {
    short_codes.iter().map(String::as_str).filter(|c| hits.iter().any(|h| holds_value(h, c))).collect()
}

/// The letter-and-digit words of two characters a question holds, lowercased ("P1", "Q3", "L2"):
/// too short to be codes ([`fedsearch_core::text::codes`]), they may still be a field's value.
pub fn short_codes(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in question.split(|c: char| !c.is_ascii_alphanumeric()) {
        let b = w.as_bytes();
        if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1].is_ascii_digit() {
            let lowered = w.to_ascii_lowercase();
            if !out.contains(&lowered) {
                out.push(lowered);
            }
        }
    }
    out
}

/// Whether `text` holds `name`; a name ending in a digit only where no digit follows it ("class 7"
/// is not in "class 70").
fn holds_name(text: &str, name: &str) -> bool {
    if !name.ends_with(|c: char| c.is_ascii_digit()) {
        return text.contains(name);
    }
    text.match_indices(name).any(|(at, _)| !text[at + name.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// 1 / the best rank any source gave the hit (its merged duplicates included).
fn reciprocal_rank(h: &Hit) -> f64 {
    let contributed = h.explanation.iter().flat_map(|e| &e.contributions).map(|c| c.rank_in_source);
    let best = contributed.chain(std::iter::once(h.rank_in_source)).filter(|&r| r > 0).min();
    best.map_or(0.0, |r| 1.0 / f64::from(r))
}

/// BM25's term-frequency saturation and length normalisation.
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;

/// Each hit's BM25 for the question over its title (twice), snippet and metadata values, relative
/// to the best candidate's (0..=1); IDF and the average length are the candidates'. A token the
/// question repeats counts once.
fn bm25(question: &[(String, f64)], index: &Index<'_>, shown: &[Shown]) -> Vec<f64> {
    let n = shown.len() as f64;
    let avg = (shown.iter().map(|s| s.len).sum::<usize>() as f64 / n).max(1.0);
    let tf = |s: &Shown, i: usize| 2 * s.title[i] + s.body[i];
    let mut distinct = vec![false; question.len()];
    for &i in index.tokens.values() {
        distinct[i] = true;
    }
    let idf: Vec<f64> = (0..question.len())
        .map(|i| {
            let df = shown.iter().filter(|s| tf(s, i) > 0).count() as f64;
            if df > 0.0 { (1.0 + (n - df + 0.5) / (df + 0.5)).ln() } else { 0.0 }
        })
        .collect();
    let scores: Vec<f64> = shown
        .iter()
        .map(|s| {
            let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * s.len as f64 / avg);
            let mut sum = 0.0;
            for i in 0..question.len() {
                let f = tf(s, i);
                if f > 0 && distinct[i] {
                    sum += question[i].1 * idf[i] * f64::from(f) * (BM25_K1 + 1.0) / (f64::from(f) + norm);
                }
            }
            sum
        })
        .collect();
    let best = scores.iter().copied().fold(0.0, f64::max);
    scores.into_iter().map(|s| if best > 0.0 { s / best } else { 0.0 }).collect()
}

/// Whether the question names what kind of thing the hit is: its doc_type or its source
/// ("Which tickets …", "open claims", 哪些工单 with the glossary's "ticket").
fn kind_named(h: &Hit, asked: &HashSet<&str>) -> f64 {
    if names_kind([h.doc_type.as_str(), h.source.as_str()], asked) { 1.0 } else { 0.0 }
}

/// The question's tokens that may name a kind: its own and its expansions' single words, not a
/// word only a phrase of several gave ("test case" for 测试 names no case).
pub fn naming_tokens<'q>(question: &'q [(String, f64)], expansions: &[String]) -> HashSet<&'q str> {
    naming(question, &phrase_bound(question, expansions).1)
}

fn naming<'q>(question: &'q [(String, f64)], bound: &[Vec<usize>]) -> HashSet<&'q str> {
    question.iter().zip(bound).filter(|(_, b)| b.is_empty()).map(|((t, _), _)| t.as_str()).collect()
}

/// Whether the question's tokens (`asked`, glossary expansions included) name one of `kinds` (a
/// doc type or a source name: `support_tickets` is named by "tickets" and by 工单 → ticket).
pub fn names_kind<'k>(kinds: impl IntoIterator<Item = &'k str>, asked: &HashSet<&str>) -> bool {
    let mut named = false;
    for part in kinds {
        fedsearch_core::text::each_token(&part.replace(['_', '-'], " "), |t| named |= asked.contains(t));
    }
    named
}

/// [`kind_named`] of each hit, worked out once per kind: the candidates share a few doc types
/// and sources.
fn kinds_named(hits: &[Hit], asked: &HashSet<&str>) -> Vec<f64> {
    let mut known: Vec<((&str, &str), f64)> = Vec::new();
    hits.iter()
        .map(|h| {
            let kind = (h.doc_type.as_str(), h.source.as_str());
            if let Some(&(_, named)) = known.iter().find(|(k, _)| *k == kind) {
                return named;
            }
            let named = kind_named(h, asked);
            known.push((kind, named));
            named
        })
        .collect()
}

/// The question's tokens in order, without glossary expansions.
fn sequence(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    fedsearch_core::text::each_token(text, |t| out.push(t.to_string()));
    out
}

/// Share of the question's adjacent token pairs that the hit's title or snippet shows adjacent
/// (0 for a question of one token).
fn phrases(index: &Index<'_>, shown: &Shown) -> f64 {
    if index.pairs.is_empty() {
        return 0.0;
    }
    index.pairs.iter().filter(|p| shown.pairs.contains(p)).count() as f64 / index.pairs.len() as f64
}

/// What the question asks, for re-scoring: its weighted tokens and the names it names.
pub struct Asked<'a> {
    pub tokens: &'a [(String, f64)],
    /// Each name or id the question names, in every spelling known (lowercased).
    pub names: &'a [Vec<String>],
    /// The numbered names and codes the question holds that `names` does not ("class 7",
    /// "terminal 2", "un38.3": [`fedsearch_core::text::numbered_names`],
    /// [`fedsearch_core::text::codes`]), lowercased: the `names` feature counts them too, but they
    /// name no record.
    pub numbered: Vec<String>,
    /// The question's letter-and-digit words of two characters ([`short_codes`]): a hit whose
    /// metadata value one is shows a name the question names.
    pub short_codes: Vec<String>,
    /// The question's own tokens in order ([`Asked::sequence`]).
    pub sequence: Vec<String>,
    /// The question asks for a rule or procedure ([`crate::intent::asks_for_rule`]).
    pub asks_for_rule: bool,
    /// The sources that hold reference material (no `routing.time_phrases`).
    pub reference_sources: HashSet<String>,
    /// The state of the records the question asks for ([`crate::intent::asks_for_state`]).
    pub state: Option<AskedState>,
    /// The deployment's own open and done status values (`rerank.state_values`).
    pub state_values: &'a StateValues,
    /// The ids the question names (routing's entity patterns: `TCK-5002`, `SO20261001`).
    pub ids: &'a [String],
    /// The glossary expansions the weighted tokens came from: a token only a phrase of several
    /// tokens gave (`服务单` → 服务, 务单; "support ticket") counts only where the hit shows the phrase.
    pub expansions: &'a [String],
    /// The glossary concepts the question holds: a hit that shows any term of one is credited
    /// with the concept's every term in coverage (a Chinese page shows 逾期 and is credited
    /// with "overdue" too), so a page in the other language is not held to part of the question.
    pub concepts: &'a [crate::analysis::Concept],
    /// The question asks for every item that matches ([`crate::analysis::asks_for_list`]): no
    /// variety is imposed.
    pub list: bool,
    /// The question asks what a word means ([`crate::intent::asks_for_definition`]): a glossary
    /// page keeps its whole score.
    pub definition: bool,
    /// Per source, the question's own time window it was sent (`SubQuery.time_range_from_question`;
    /// seconds, both ends included): a hit dated outside it keeps [`OUTSIDE_WINDOW_SHARE`].
    pub windows: HashMap<String, (i64, i64)>,
    /// The days the question's time phrase names, whole ("this week" to its Sunday): a hit dated
    /// outside its window whose text names one of them is not outside it ([`NamedDays`]).
    pub named_days: Option<NamedDays>,
    /// Documents found about a row among the first hits ([`crate::referenced::found_about`]):
    /// the question's window dated the row ("yesterday's order"), not them.
    pub about_records: HashSet<String>,
    /// The records sources (`kind: sql`).
    pub record_sources: HashSet<String>,
    /// The question asks why ([`crate::intent::asks_why`]).
    pub why: bool,
    /// The question asks which of something a selected records source holds
    /// ([`crate::search`]'s `asks_which_records`: "哪些退款", "which invoices"); worked out only
    /// for a list or a rule-cued question, the two it changes.
    pub which_records: bool,
}

impl<'a> Asked<'a> {
    /// What `question` asks with only its tokens and names: no rule, no reference sources.
    pub fn new(question: &str, tokens: &'a [(String, f64)], names: &'a [Vec<String>]) -> Self {
        Asked {
            tokens,
            names,
            numbered: numbered(question, names),
            short_codes: short_codes(question),
            sequence: sequence(question),
            asks_for_rule: false,
            reference_sources: HashSet::new(),
            state: None,
            state_values: &NO_STATE_VALUES,
            ids: &[],
            expansions: &[],
            concepts: &[],
            list: false,
            definition: false,
            windows: HashMap::new(),
            named_days: None,
            about_records: HashSet::new(),
            record_sources: HashSet::new(),
            why: false,
            which_records: false,
        }
    }
}

/// The numbered names and codes of `question` that are none of the spellings of `names` (an
/// order number is a code and an id the question names: counted once).
fn numbered(question: &str, names: &[Vec<String>]) -> Vec<String> {
    let mut n = fedsearch_core::text::numbered_names(question);
    n.extend(fedsearch_core::text::codes(question));
    n.retain(|x| !names.iter().flatten().any(|spelling| spelling == x));
    n
}

/// Every candidate's features, in the hits' order: each hit's text is tokenized once.
fn features(asked: &Asked<'_>, hits: &[Hit]) -> Vec<RerankFeatures> {
    let question = asked.tokens;
    let index = Index::new(question, &asked.sequence, asked.expansions);
    let needed = !asked.names.is_empty() || !asked.numbered.is_empty() || !index.phrases.is_empty();
    let lowered: Vec<String> = hits.iter().map(|h| if needed { lowered_text(h) } else { String::new() }).collect();
    let shown: Vec<Shown> =
        hits.iter().zip(&lowered).map(|(h, text)| Shown::of(h, &index, question.len(), text)).collect();
    let mut shows = shown_matrix(question, &index, &shown, Shown::shows);
    credit_concepts(&mut shows, &concept_terms(&index, asked.concepts));
    let cov = fedsearch_core::text::coverage_of(question, &shows);
    // Titles are not credited: measured Spruce −0.004, Orca ±0, Kestrel +0.001 (BENCHMARKS.md,
    // session 15).
    let title =
        fedsearch_core::text::coverage_of(question, &shown_matrix(question, &index, &shown, |s, i| s.title[i] > 0));
    let bm25 = bm25(question, &index, &shown);
    let kinds = kinds_named(hits, &naming(question, &index.bound));
    // A rule asked about P1 tickets names no ticket: the runbook answers, a P1 ticket is one case.
    let values = if asked.asks_for_rule { Vec::new() } else { values_named(&asked.short_codes, hits) };
    let best = hits.iter().map(|h| h.fused_score).fold(0.0, f64::max);
    hits.iter()
        .zip(&shown)
        .enumerate()
        .map(|(i, (h, s))| RerankFeatures {
            bm25: bm25[i],
            kind_named: kinds[i],
            phrases: phrases(&index, s),
            rule_reference: if asked.asks_for_rule && asked.reference_sources.contains(&h.source) { 1.0 } else { 0.0 },
            corroborated: if h.duplicates.iter().any(|d| d.source != h.source) { 1.0 } else { 0.0 },
            state: in_asked_state(h, asked),
            named_id: if own_id_named(h, asked.ids) { 1.0 } else { 0.0 },
            fused: if best > 0.0 { h.fused_score / best } else { 0.0 },
            coverage: cov[i],
            title_coverage: title[i],
            names: match asked.named_days.as_ref().and_then(NamedDays::ahead) {
                // A question about days ahead that names nothing else: showing one of its days
                // is showing what it names.
                Some(days) if asked.names.is_empty() && asked.numbered.is_empty() && values.is_empty() => {
                    if days.named_by(h) { 1.0 } else { 0.0 }
                }
                _ => names_shown(h, &lowered[i], asked.names, &asked.numbered, &values),
            },
            reciprocal_rank: reciprocal_rank(h),
            outside_window: if outside_window(h, asked) { 1.0 } else { 0.0 },
            score: 0.0,
        })
        .collect()
}

fn weighted(f: &RerankFeatures, w: &RerankWeights) -> f64 {
    w.fused * f.fused
        + w.coverage * f.coverage
        + w.title_coverage * f.title_coverage
        + w.names * f.names
        + w.reciprocal_rank * f.reciprocal_rank
        + w.bm25 * f.bm25
        + w.kind_named * f.kind_named
        + w.phrases * f.phrases
        + w.rule_reference * f.rule_reference
        + w.corroborated * f.corroborated
        + w.state * f.state
        + w.named_id * f.named_id
}

/// Whether `ids` (the ids the question names) hold `h`'s own local id.
fn own_id_named(h: &Hit, ids: &[String]) -> bool {
    h.id.rsplit(':').next().is_some_and(|local| ids.iter().any(|e| e.eq_ignore_ascii_case(local)))
}

/// When the question asks for records in one state: 1 when `h`'s status says it is in it; −1
/// when the question asks for a list and the status says the other state (a resolved ticket is
/// no answer to "which tickets are still open", but it is one to "is any still open?": no);
/// else 0.
fn in_asked_state(h: &Hit, asked: &Asked<'_>) -> f64 {
    let Some(wanted) = asked.state else { return 0.0 };
    let states = crate::intent::record_states(&h.metadata, asked.state_values);
    if states.contains(&wanted) {
        1.0
    } else if !states.is_empty() && asked.list {
        -1.0
    } else {
        0.0
    }
}

/// What an old version keeps of its score when its current version is among the candidates and
/// the question shows no preference for the old one (measured: 0.5 cost questions about the old
/// edition, 1.0 keeps an unasked old version in the top ten on both tuning companies).
pub const OLD_VERSION_SHARE: f64 = 0.7;

/// What a glossary page ([`crate::intent::is_glossary_title`]) keeps of its score when the
/// question does not ask what a word means: it shares the question's words because it defines
/// every word of the domain, not because it answers.
pub const GLOSSARY_SHARE: f64 = 0.7;

/// What a row of a records source keeps of its score when the question asks for a rule and names
/// no record ([`rule_row`]; measured in session 16: 0.7 and 0.8 read the same, 0.5 lost Kestrel).
pub const RULE_ROW_SHARE: f64 = 0.8;

/// Whether `h` is a row of a records source (`kind: sql`) and the question asks for a rule, a
/// limit or a procedure without naming a record (no id, no name): a row is one case ("After how
/// many days overdue do we stop taking new bookings?" finds an overdue invoice whose text shows
/// every word), the rule is what is asked.
fn rule_row(h: &Hit, asked: &Asked<'_>) -> bool {
    asks_rule_naming_no_record(asked) && asked.record_sources.contains(&h.source)
}

/// Whether the question asks for a rule, a limit or a procedure and names no record (no id, no
/// name): see [`rule_row`].
fn asks_rule_naming_no_record(asked: &Asked<'_>) -> bool {
    asked.asks_for_rule && asked.names.is_empty() && asked.ids.is_empty()
}

/// What a hit dated outside the question's window keeps of its score: its source returned it
/// because it matches the question's words (the window ranks there, it does not filter), after
/// every hit of the window; here it competes, at this share, with hits that answer the period.
/// 0.5 until session 21; 0.3 on the five tuning sets: kestrel-extra +0.002, the rest unchanged
/// (0.7 read kestrel-extra −0.010).
pub const OUTSIDE_WINDOW_SHARE: f64 = 0.3;

/// Whether `h` is dated outside the question's window its source was sent (undated: no), and
/// neither takes effect in it nor names one of its days ([`NamedDays::named_by`]).
fn outside_window(h: &Hit, asked: &Asked<'_>) -> bool {
    let (Some((from, to)), Some(at)) = (asked.windows.get(&h.source), &h.updated_at) else { return false };
    if asked.about_records.contains(&h.id) || !(at.seconds < *from || at.seconds > *to) {
        return false;
    }
    asked.named_days.as_ref().is_none_or(|days| !days.named_by(h))
}

/// The longest run of days ahead whose naming counts as a name the question names
/// ([`NamedDays::ahead`]).
const AHEAD_NAMED_DAYS_MAX: i64 = 7;

/// The longest window whose days a document may be about ([`NamedDays::of`]): a month and a bit.
const NAMED_DAYS_MAX: i64 = 31;

/// How much of a hit's title and snippet is read for the days it names.
const NAMED_DAYS_TEXT_MAX: usize = 1024;

/// The days a question's time phrase names, in the user's zone: its window, and the rest of a
/// period that goes on after today ("this week" asked on Wednesday is Monday to Sunday, since a
/// sailing cancelled for Friday is this week's).
#[derive(Debug, Clone, Copy)]
pub struct NamedDays {
    first: chrono::NaiveDate,
    /// The day after the last one.
    end: chrono::NaiveDate,
    zone: chrono_tz::Tz,
    /// The days lie ahead (这周五 asked on Monday, next week): nothing is dated in them yet, so
    /// a hit that names one of them is about them ([`NamedDays::ahead`]).
    ahead: bool,
}

impl NamedDays {
    /// The days of `window` (the question's time phrase read in `zone`: `Terms::window`); `None`
    /// without one, and when the question asks what was written or changed then ("what notices
    /// were published since October": a notice of August that names October was not).
    /// Hour windows ("past 24 hours") and windows longer than [`NAMED_DAYS_MAX`] (an open-ended
    /// past from 1970, a quarter) name no days a document could name.
    pub fn of(question: &str, window: Option<&fedsearch_timeexpr::Window>, zone: chrono_tz::Tz) -> Option<NamedDays> {
        let w = window?;
        if crate::intent::asks_what_changed(question) {
            return None;
        }
        let local = |t: chrono::DateTime<chrono::Utc>| t.with_timezone(&zone);
        let to = local(w.period_to.unwrap_or(w.to));
        if to.time() != chrono::NaiveTime::MIN {
            return None;
        }
        let (first, end) = (local(w.from).date_naive(), to.date_naive());
        (end > first && (end - first).num_days() <= NAMED_DAYS_MAX).then_some(NamedDays {
            first,
            end,
            zone,
            ahead: w.ahead,
        })
    }

    /// The days when they lie ahead and are a week at most ([`NamedDays::ahead`]), for the `names`
    /// feature: "这周五深圳办公室上班吗" names a day the closure notice names, and no document is dated
    /// there yet. A month ahead is not one of them: "8 月份开船的柜子" is answered by a surcharge in
    /// force from July as much as by a case that names August (Orca o41 0.93 → 0.75 with months).
    fn ahead(&self) -> Option<&NamedDays> {
        (self.ahead && (self.end - self.first).num_days() <= AHEAD_NAMED_DAYS_MAX).then_some(self)
    }

    /// Whether `h` is about these days though dated outside them: a notice written before the
    /// days it announces ("blank sailing, week 27", "系统 2026-07-03 夜间暂停申报") or a version
    /// taking effect in them. Its title and snippet are read as of its own day (its "next week")
    /// and, for named dates without a year, as of the last of these days; a period named in it
    /// counts when it is no longer than these days or a week ("July" is no answer to "this week").
    fn named_by(&self, h: &Hit) -> bool {
        let local = |t: &prost_types::Timestamp| {
            chrono::DateTime::from_timestamp(t.seconds, 0).map(|t| t.with_timezone(&self.zone).date_naive())
        };
        let effective = h.version.as_ref().and_then(|v| v.effective_at.as_ref()).and_then(local);
        if effective.is_some_and(|d| self.first <= d && d < self.end) {
            return true;
        }
        let longest = (self.end - self.first).num_days().max(7);
        let overlaps = |m: &fedsearch_timeexpr::Mention| {
            m.first < self.end && self.first < m.end && (m.end - m.first).num_days() <= longest
        };
        let text = format!("{} {}", h.title, h.snippet);
        let text = &text[..text.floor_char_boundary(NAMED_DAYS_TEXT_MAX)];
        let own_day = h.updated_at.as_ref().and_then(local);
        own_day.is_some_and(|d| fedsearch_timeexpr::mentions(text, d).iter().any(overlaps))
            || self
                .end
                .pred_opt()
                .is_some_and(|last| fedsearch_timeexpr::mentions(text, last).iter().any(|m| m.explicit && overlaps(m)))
    }
}

/// What `h` keeps of its score: less for an old version whose current one is a candidate, for a
/// glossary page the question does not ask for, for a hit dated outside the question's window,
/// for a row when the question asks for a rule and names no record, and for anything but a row of
/// the kind named when the question lists records ([`beside_listed_rows`]).
fn share(h: &Hit, f: &RerankFeatures, old: bool, asked: &Asked<'_>) -> f64 {
    let glossary = !asked.definition && crate::intent::is_glossary_title(&h.title);
    (if rule_row(h, asked) { RULE_ROW_SHARE } else { 1.0 })
        * (if old { OLD_VERSION_SHARE } else { 1.0 })
        * (if glossary { GLOSSARY_SHARE } else { 1.0 })
        * (if f.outside_window > 0.0 { OUTSIDE_WINDOW_SHARE } else { 1.0 })
        * (if beside_listed_rows(h, f, asked) { LISTED_ROWS_FIRST_SHARE } else { 1.0 })
        * (if reference_beside_window_list(h, asked) { WINDOW_LIST_REFERENCE_SHARE } else { 1.0 })
}

/// What reference material (a source without `routing.time_phrases`) keeps when the question
/// lists what happened in a window ("which payment outages did we have last week"): the events
/// of the window answer, the runbook is background. Session 22 on the six tuning sets: 0.7
/// orca-extra +0.002, 0.5 +0.007 and kestrel-extra +0.001, 0.3 the same as 0.5; no question lost.
pub const WINDOW_LIST_REFERENCE_SHARE: f64 = 0.5;

/// Whether the question lists the events of a window (a list question whose time phrase some
/// source was sent, asking for no rule) and `h` is reference material (a knowledge base the
/// question names in its window is not: `search` leaves it out of `reference_sources`).
fn reference_beside_window_list(h: &Hit, asked: &Asked<'_>) -> bool {
    asked.list && !asked.asks_for_rule && !asked.windows.is_empty() && asked.reference_sources.contains(&h.source)
}

/// Re-orders `hits` by the weighted sum of their features (see the module docs) and records the
/// features in each hit's explanation.
pub fn rerank(hits: &mut Vec<Hit>, asked: &Asked<'_>, weights: &RerankWeights) {
    if hits.len() < 2 || weights.is_fused_order() {
        return;
    }
    let mut feats = features(asked, hits);
    let cov: Vec<f64> = feats.iter().map(|f| f.coverage).collect();
    let at: HashMap<&str, usize> = hits.iter().enumerate().map(|(i, h)| (h.id.as_str(), i)).collect();
    let replaced: Vec<bool> = hits.iter().enumerate().map(|(i, h)| old_version_not_asked(h, i, &at, &cov)).collect();
    for ((f, old), h) in feats.iter_mut().zip(&replaced).zip(hits.iter()) {
        f.score = weighted(f, weights) * share(h, f, *old, asked);
    }
    if (asked.why || asks_rule_naming_no_record(asked)) && !asked.list {
        other_rows_give_way(&mut feats, hits, asked);
    }
    // Scores and indices are sorted, not the hits: a hit is a large value to move around.
    let mut scored: Vec<(f64, usize)> = feats.iter().enumerate().map(|(i, f)| (f.score, i)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let order = if asked.list { scored.into_iter().map(|(_, i)| i).collect() } else { varied(&scored, hits) };
    for (h, f) in hits.iter_mut().zip(feats) {
        h.explanation.get_or_insert_with(Default::default).rerank = Some(f);
    }
    let mut slots: Vec<Option<Hit>> = std::mem::take(hits).into_iter().map(Some).collect();
    *hits = order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)).collect();
    current_before_superseded(hits);
}

/// What a records row other than the best-scored one keeps of its score when the question asks
/// about one thing (not a list) and a row is not all it wants: it asks why (the record asked
/// about and the reason answer; the same customer's other bookings show the name the question
/// names and nothing of the why), or it asks for a rule and names no record (the rule answers;
/// one row is an example of it, more rows are more of the same). Session 20: 0.8 lost no
/// question of the tuning companies, 0.6 (why-questions) lost three.
pub const OTHER_ROWS_SHARE: f64 = 0.8;

/// Applies [`OTHER_ROWS_SHARE`] to every records row but the best-scored one.
fn other_rows_give_way(feats: &mut [RerankFeatures], hits: &[Hit], asked: &Asked<'_>) {
    let is_row = |i: usize| asked.record_sources.contains(&hits[i].source);
    let best = (0..hits.len())
        .filter(|&i| is_row(i))
        .max_by(|&a, &b| feats[a].score.total_cmp(&feats[b].score).then(b.cmp(&a)));
    for i in (0..hits.len()).filter(|&i| is_row(i) && Some(i) != best) {
        feats[i].score *= OTHER_ROWS_SHARE;
    }
}

/// What a hit that is not a row of the kind asked for keeps of its score when the question lists
/// records ("最近一个月有哪些退款？金额和状态分别是什么？": a list question whose word after which is in a
/// records source's vocabulary): the rows of the kind it names (`kind_named`) are the answer; the
/// ticket and the procedure about refunds are background (session 20: Spruce s24 0.77 → 0.96, no
/// question of the tuning companies lost; 0.6 lost one).
pub const LISTED_ROWS_FIRST_SHARE: f64 = 0.8;

/// Whether the question lists records ([`LISTED_ROWS_FIRST_SHARE`]) and `h` is not one of its
/// rows: not a records row of a kind it names.
fn beside_listed_rows(h: &Hit, f: &RerankFeatures, asked: &Asked<'_>) -> bool {
    asked.list && asked.which_records && !(asked.record_sources.contains(&h.source) && f.kind_named > 0.0)
}

/// Hits of one group a varied list takes at full score ([`varied`]).
pub const VARIETY_FREE: usize = 3;
/// What each further hit of a group keeps of its score, per hit of that group before it. 0.6
/// until session 21; 0.7 on the five tuning sets: orca-extra +0.011, kestrel-extra +0.001, the
/// rest unchanged (0.8 read the same, 0.5 less): a list of one source's answers is not cut short.
pub const VARIETY_DECAY: f64 = 0.7;

/// A records source's template, else the source: what "more of the same" means for variety.
fn group(h: &Hit) -> (&str, &str) {
    (h.source.as_str(), h.metadata.get("template").map_or("", String::as_str))
}

/// Re-orders `scored` (score and index into `hits`, sorted best first) greedily: each place goes
/// to the best score after the discount of its group's hits already placed beyond
/// [`VARIETY_FREE`]; ties keep the order. Returns the indices in their new order.
fn varied(scored: &[(f64, usize)], hits: &[Hit]) -> Vec<usize> {
    // Each hit's group as a number, found once (the loop below compares every pair).
    let (mut rest, count) = {
        let mut numbers: HashMap<(&str, &str), usize> = HashMap::new();
        let rest: Vec<(f64, usize, usize)> = scored
            .iter()
            .map(|&(score, i)| {
                let next = numbers.len();
                (score, *numbers.entry(group(&hits[i])).or_insert(next), i)
            })
            .collect();
        (rest, numbers.len())
    };
    let mut placed = vec![0usize; count];
    let discounted = |score: f64, group: usize, placed: &[usize]| {
        score * VARIETY_DECAY.powi((placed[group] + 1).saturating_sub(VARIETY_FREE) as i32)
    };
    let mut out = Vec::with_capacity(rest.len());
    while !rest.is_empty() {
        let mut best = 0;
        for i in 1..rest.len() {
            if discounted(rest[i].0, rest[i].1, &placed) > discounted(rest[best].0, rest[best].1, &placed) {
                best = i;
            }
        }
        let (_, group, i) = rest.remove(best);
        placed[group] += 1;
        out.push(i);
    }
    out
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
        let misplaced = {
            let pos: HashMap<&str, usize> = hits.iter().enumerate().map(|(i, h)| (h.id.as_str(), i)).collect();
            hits.iter().enumerate().find_map(|(i, h)| {
                let v = h.version.as_ref().filter(|v| v.status == "superseded")?;
                pos.get(v.superseded_by.as_str()).filter(|&&c| c > i).map(|&c| (i, c))
            })
        };
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

    #[test]
    fn only_a_single_word_names_a_kind_not_a_word_of_an_expansion_phrase() {
        let g = Glossary::new(true, &[]);
        let q = "UN38.3 测试摘要是必须的吗？";
        let expansions = g.expand(q);
        assert!(expansions.iter().any(|e| e == "test case"), "{expansions:?}");
        let tokens = question_tokens(q, &expansions);
        let naming = naming_tokens(&tokens, &expansions);
        assert!(naming.contains("test") && !naming.contains("case"), "{naming:?}");
        assert!(!names_kind(["case", "cases"], &naming));
        assert!(names_kind(["case", "cases"], &naming_tokens(&question_tokens("open cases", &[]), &[])));
    }

    fn rerank_by(hits: &mut Vec<Hit>, q: &[(String, f64)], beta: f64) {
        rerank(hits, &Asked::new("", q, &[]), &RerankWeights::from_coverage_weight(beta));
    }

    fn hit(id: &str, title: &str, score: f64) -> Hit {
        Hit { id: id.into(), title: title.into(), fused_score: score, ..Default::default() }
    }

    /// The features re-scoring recorded in `h`'s explanation.
    fn recorded(h: &Hit) -> &RerankFeatures {
        h.explanation.as_ref().and_then(|e| e.rerank.as_ref()).expect("features are recorded")
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
        rerank_by(&mut hits, &q, 0.5);
        assert_eq!(hits[0].id, "kb:KB-3", "{:?}", hits.iter().map(|h| &h.id).collect::<Vec<_>>());
        let mut same = hits.clone();
        rerank_by(&mut same, &q, 0.0);
        assert_eq!(same.iter().map(|h| &h.id).collect::<Vec<_>>(), hits.iter().map(|h| &h.id).collect::<Vec<_>>());
    }

    #[test]
    fn reference_material_gives_way_to_the_events_of_a_window_a_list_question_asks_for() {
        let g = Glossary::new(true, &[]);
        let hits = || {
            let mut page = hit("wiki:outage_runbook", "payment outage runbook", 1.0);
            page.source = "wiki".into();
            let mut incident = hit("incidents:INC-7", "payment outage", 0.7);
            incident.source = "incidents".into();
            vec![page, incident]
        };
        let weights = RerankWeights::from_coverage_weight(0.4);
        let text = "which payment outages did we have last week";
        let q = question(text, &g);
        let mut asked = Asked::new(text, &q, &[]);
        asked.list = true;
        asked.reference_sources.insert("wiki".into());
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["wiki:outage_runbook", "incidents:INC-7"], "no window: by score");
        asked.windows.insert("incidents".into(), (0, 2_000));
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["incidents:INC-7", "wiki:outage_runbook"], "the window's events first");
        // Not a list, or a rule asked for: the page keeps its place.
        for (list, rule) in [(false, false), (true, true)] {
            (asked.list, asked.asks_for_rule) = (list, rule);
            let mut h = hits();
            rerank(&mut h, &asked, &weights);
            assert_eq!(ids(&h), ["wiki:outage_runbook", "incidents:INC-7"], "list {list}, rule {rule}");
        }
    }

    #[test]
    fn a_hit_dated_outside_the_questions_window_gives_way_to_one_inside_it() {
        let g = Glossary::new(true, &[]);
        let at = |seconds: i64| Some(prost_types::Timestamp { seconds, nanos: 0 });
        let hits = || {
            let mut old = hit("notices:old", "peak season surcharge", 1.0);
            old.source = "notices".into();
            old.updated_at = at(100);
            let mut new = hit("notices:new", "peak season surcharge", 0.8);
            new.source = "notices".into();
            new.updated_at = at(1_000);
            let mut undated = hit("notices:undated", "peak season surcharge", 0.9);
            undated.source = "notices".into();
            vec![old, undated, new]
        };
        let weights = RerankWeights::from_coverage_weight(0.4);
        let q = question("peak season surcharge this week", &g);
        let mut h = hits();
        rerank(&mut h, &Asked::new("peak season surcharge this week", &q, &[]), &weights);
        assert_eq!(ids(&h), ["notices:old", "notices:undated", "notices:new"], "no window: by score");
        let mut asked = Asked::new("peak season surcharge this week", &q, &[]);
        asked.windows.insert("notices".into(), (500, 2_000));
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["notices:undated", "notices:new", "notices:old"], "the old one keeps half");
        // A document found about a row the window dated is not held to the window.
        asked.about_records.insert("notices:old".into());
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["notices:old", "notices:undated", "notices:new"], "about a record");
        asked.about_records.clear();
        asked.windows.clear();
        asked.windows.insert("tickets".into(), (500, 2_000));
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["notices:old", "notices:undated", "notices:new"], "another source's window");
    }

    #[test]
    fn a_notice_written_before_the_days_it_announces_is_not_outside_them() {
        // Asked on Wednesday 1 July 2026 in Shanghai; "this week" is 29 June – 5 July (ISO week 27).
        let clock = crate::rewrite::Clock {
            as_of: chrono::DateTime::parse_from_rfc3339("2026-07-01T09:00:00+08:00").unwrap().to_utc(),
            zone: fedsearch_timeexpr::parse_tz("Asia/Shanghai").unwrap(),
        };
        let june_18 = prost_types::Timestamp { seconds: 1_781_740_800, nanos: 0 };
        let notice = |title: &str, snippet: &str| Hit {
            id: "notices:n".into(),
            source: "notices".into(),
            title: title.into(),
            snippet: snippet.into(),
            updated_at: Some(june_18),
            ..Default::default()
        };
        let text = "which sailings were cancelled this week";
        let g = Glossary::new(true, &[]);
        let q = question(text, &g);
        let mut asked = Asked::new(text, &q, &[]);
        asked.windows.insert("notices".into(), (1_782_662_400, 1_782_921_599));
        let window = |q: &str| fedsearch_timeexpr::resolve(q, clock.as_of, clock.zone);
        asked.named_days = NamedDays::of(text, window(text).as_ref(), clock.zone);
        let outside = |title: &str, snippet: &str| outside_window(&notice(title, snippet), &asked);
        assert!(!outside("COSCO: blank sailing on the AE7 service, week 27", ""), "a week by its number");
        assert!(!outside("海关系统升级", "2026-07-03 22:00 至次日 02:00 暂停申报"), "a day after today, in this week");
        assert!(!outside("Port notice", "The terminal closes on July 3."), "a date without a year");
        assert!(outside("COSCO: blank sailing on the AE7 service, week 23", ""), "another week");
        assert!(outside("Peak season surcharge", "from July 15"), "a day after the week");
        assert!(outside("July schedule", "all sailings of July"), "a month is no answer to this week");
        let mut effective = notice("Surcharge", "");
        effective.version = Some(VersionInfo {
            effective_at: Some(prost_types::Timestamp { seconds: 1_782_957_600, nanos: 0 }),
            ..Default::default()
        });
        assert!(!outside_window(&effective, &asked), "a version taking effect in the week");
        // Asking what was published then holds a notice to its own date.
        let published = "which notices were published this week";
        assert!(NamedDays::of(published, window(published).as_ref(), clock.zone).is_none());
        assert!(NamedDays::of("which sailings were cancelled", None, clock.zone).is_none(), "no time phrase");
        // An open-ended past (from 1970), a quarter and an hour window name no days to look for.
        for q in ["tickets we got more than a week ago", "sailings cancelled in Q2", "alerts in the past 24 hours"] {
            assert!(window(q).is_some() && NamedDays::of(q, window(q).as_ref(), clock.zone).is_none(), "{q}");
        }
    }

    #[test]
    fn a_hit_naming_a_day_ahead_the_question_asks_about_shows_what_it_names() {
        // Asked on Monday 15 June 2026 in Shanghai: "this Friday" is 19 June, ahead.
        let zone = fedsearch_timeexpr::parse_tz("Asia/Shanghai").unwrap();
        let as_of = chrono::DateTime::parse_from_rfc3339("2026-06-15T09:00:00+08:00").unwrap().to_utc();
        let notice = |id: &str, title: &str| Hit {
            id: id.into(),
            source: "advisories".into(),
            title: title.into(),
            fused_score: 0.5,
            updated_at: Some(prost_types::Timestamp { seconds: 1_781_400_000, nanos: 0 }),
            ..Default::default()
        };
        let hits = || {
            vec![
                notice("advisories:gate", "Shenzhen office: terminal gate hours"),
                notice("advisories:closure", "Shenzhen office closed on 2026-06-19"),
            ]
        };
        let g = Glossary::new(true, &[]);
        let weights = RerankWeights::default();
        let ranked = |text: &str| {
            let q = question(text, &g);
            let mut asked = Asked::new(text, &q, &[]);
            let window = fedsearch_timeexpr::resolve(text, as_of, zone);
            asked.named_days = NamedDays::of(text, window.as_ref(), zone);
            let mut h = hits();
            rerank(&mut h, &asked, &weights);
            (ids(&h).iter().map(|s| s.to_string()).collect::<Vec<_>>(), recorded(&h[0]).names)
        };
        assert_eq!(
            ranked("Is the Shenzhen office open this Friday?"),
            (vec!["advisories:closure".into(), "advisories:gate".into()], 1.0)
        );
        // No day ahead: the day named is no name the question names.
        assert_eq!(ranked("Is the Shenzhen office open?").1, 0.0);
        // A month ahead is too long for a day named in it to be the answer.
        let (_, names) = ranked("Is the Shenzhen office open in August?");
        assert_eq!(names, 0.0);
    }

    #[test]
    fn a_row_gives_way_to_the_rule_when_the_question_asks_a_rule_and_names_no_record() {
        let g = Glossary::new(true, &[]);
        let q = "after how many days overdue do we stop new bookings";
        let tokens = question(q, &g);
        let hits = || {
            let mut row = hit("orders:invoices:FI-1", "FI-1 overdue 63 days, new bookings stopped", 1.0);
            row.source = "orders".into();
            let mut policy = hit("wiki:credit", "Credit policy: overdue 60 days stops new bookings", 0.9);
            policy.source = "wiki".into();
            vec![row, policy]
        };
        let weights = RerankWeights::from_coverage_weight(0.4);
        let mut asked = Asked::new(q, &tokens, &[]);
        asked.asks_for_rule = true;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["orders:invoices:FI-1", "wiki:credit"], "not a records source: by score");
        asked.record_sources.insert("orders".into());
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["wiki:credit", "orders:invoices:FI-1"], "the rule first");
        // A question that names the record asks about it.
        let named = vec!["FI-1".to_string()];
        asked.ids = &named;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h)[0], "orders:invoices:FI-1");
        asked.ids = &[];
        asked.asks_for_rule = false;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h)[0], "orders:invoices:FI-1", "no rule asked");
    }

    #[test]
    fn a_why_or_rule_question_keeps_one_row_whole_and_lets_the_answer_above_the_others() {
        let g = Glossary::new(true, &[]);
        let q = "why can youpin not book any more";
        let tokens = question(q, &g);
        let scored = |policy_score: f64| {
            let row = |id: &str, title: &str, score: f64| Hit { source: "shipments".into(), ..hit(id, title, score) };
            let mut policy = hit("wiki:credit", "credit hold: youpin may not book", policy_score);
            policy.source = "wiki".into();
            vec![
                row("shipments:account:CU-1", "youpin: credit hold, may not book", 1.0),
                row("shipments:bookings:BK-1", "youpin book", 0.9),
                policy,
            ]
        };
        let hits = || scored(0.8);
        let weights = RerankWeights::from_coverage_weight(0.4);
        let mut asked = Asked::new(q, &tokens, &[]);
        asked.record_sources.insert("shipments".into());
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h)[1], "shipments:bookings:BK-1", "not a why-question: by score");
        asked.why = true;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["shipments:account:CU-1", "wiki:credit", "shipments:bookings:BK-1"]);
        asked.list = true;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h)[1], "shipments:bookings:BK-1", "a list asks for every row");
        // A rule question that names no record: one row is an example, the rule answers. Its rows
        // keep RULE_ROW_SHARE (0.8 and 0.75 here), the second row 0.8 of that (0.6), the rule 0.67.
        (asked.list, asked.why, asked.asks_for_rule) = (false, false, true);
        let mut h = scored(0.45);
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["shipments:account:CU-1", "wiki:credit", "shipments:bookings:BK-1"]);
    }

    #[test]
    fn a_list_of_records_puts_the_rows_of_the_kind_it_names_first() {
        let g = Glossary::new(true, &[]);
        let q = "which refunds were made this month";
        let tokens = question(q, &g);
        let hits = || {
            let mut ticket = hit("tickets:T-1", "refunds made this month: check", 0.7);
            ticket.source = "tickets".into();
            let mut refund = hit("orders:refunds:RF1", "RF1 refund", 0.95);
            (refund.source, refund.doc_type) = ("orders".into(), "refund".into());
            vec![ticket, refund]
        };
        let weights = RerankWeights::default();
        let mut asked = Asked::new(q, &tokens, &[]);
        asked.record_sources.insert("orders".into());
        asked.list = true;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["tickets:T-1", "orders:refunds:RF1"], "not asked which records: by score");
        asked.which_records = true;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["orders:refunds:RF1", "tickets:T-1"]);
        asked.list = false;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h)[0], "tickets:T-1", "one answer, not a list");
    }

    #[test]
    fn a_glossary_page_gives_way_unless_the_question_asks_what_a_word_means() {
        let g = Glossary::new(true, &[]);
        let hits = || {
            vec![hit("wiki:glossary", "术语表 Glossary: 备用机 loaner", 1.0), hit("wiki:loaner", "备用机 loaner", 0.8)]
        };
        let weights = RerankWeights::from_coverage_weight(0.4);
        let q = question("备用机最多能借多久？", &g);
        let mut h = hits();
        rerank(&mut h, &Asked::new("备用机最多能借多久？", &q, &[]), &weights);
        assert_eq!(ids(&h), ["wiki:loaner", "wiki:glossary"]);
        let q = question("备用机是什么意思？", &g);
        let mut asked = Asked::new("备用机是什么意思？", &q, &[]);
        asked.definition = crate::intent::asks_for_definition("备用机是什么意思？");
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["wiki:glossary", "wiki:loaner"], "a definition question keeps the glossary first");
    }

    #[test]
    fn a_hit_showing_the_person_the_question_names_outranks_one_about_the_topic_only() {
        let g = Glossary::new(true, &[]);
        let q = question("王芳结账时页面转了多少秒才提示支付失败？", &g);
        let hits = || {
            vec![
                hit("wiki:runbook", "支付超时处理手册：结账页面卡住、付款失败", 1.0),
                hit("tickets:T-3", "Payment timeout at checkout (customer Wang Fang)", 0.8),
            ]
        };
        let names = vec![vec!["王芳".to_string(), "wang fang".to_string()]];
        let weights = RerankWeights { names: 0.5, ..RerankWeights::from_coverage_weight(0.4) };
        let mut h = hits();
        rerank(&mut h, &Asked::new("", &q, &names), &weights);
        assert_eq!(h[0].id, "tickets:T-3", "the other spelling counts");
        let f = recorded(&h[0]);
        assert_eq!(f.names, 1.0);
        assert!((f.fused - 0.8).abs() < 1e-9 && f.score > 0.0, "{f:?}");
        let mut h = hits();
        rerank(&mut h, &Asked::new("", &q, &[]), &weights);
        assert_eq!(h[0].id, "wiki:runbook", "without the name the topic wins");
    }

    #[test]
    fn a_short_code_the_question_names_counts_where_it_is_a_hits_field_value() {
        let g = Glossary::new(true, &[]);
        let weights = RerankWeights::default();
        let ticket = |id: &str, title: &str, priority: &str, score: f64| {
            let mut h = hit(id, title, score);
            h.metadata.insert("priority".into(), priority.into());
            h
        };
        let tickets = || {
            vec![
                ticket("tickets:T-2", "Monitor battery lasts 30 minutes this month", "P3", 1.0),
                ticket("tickets:T-1", "Ventilator self-test fails", "P1", 0.9),
            ]
        };
        let names = |h: &Hit| recorded(h).names;
        let text = "Which P1 tickets were opened this month?";
        let q = question(text, &g);
        let asked = Asked::new(text, &q, &[]);
        assert_eq!(asked.short_codes, ["p1"]);
        let mut h = tickets();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["tickets:T-1", "tickets:T-2"], "the P1 ticket first");
        assert_eq!((names(&h[0]), names(&h[1])), (1.0, 0.0));
        // No candidate holds the value: nothing is named ("Q3" in a report's title).
        let text = "Which Q3 tickets were opened this month?";
        let q = question(text, &g);
        let mut h = tickets();
        rerank(&mut h, &Asked::new(text, &q, &[]), &weights);
        assert!(h.iter().all(|h| names(h) == 0.0));
        // A rule asked about P1 tickets names no ticket.
        let text = "How long may a P1 ticket wait before on-call is paged?";
        let q = question(text, &g);
        let mut asked = Asked::new(text, &q, &[]);
        asked.asks_for_rule = true;
        let mut h = tickets();
        rerank(&mut h, &asked, &weights);
        assert!(h.iter().all(|h| names(h) == 0.0));
    }

    #[test]
    fn a_hit_showing_the_numbered_name_the_question_asks_about_outranks_one_sharing_its_other_words() {
        let g = Glossary::new(true, &[]);
        let asked = "Do we accept class 7 radioactive cargo for sea freight?";
        let q = question(asked, &g);
        let weights = RerankWeights::default();
        let mut h = vec![
            hit("guides:RAIL", "Rail freight: cargo accepted, quicker than the sea route", 1.0),
            hit("guides:DG", "Dangerous goods by sea freight: class 1 and class 7 are not accepted", 0.9),
            hit("guides:DG-70", "Sea freight class 70 cargo accepted", 0.9),
        ];
        rerank(&mut h, &Asked::new(asked, &q, &[]), &weights);
        assert_eq!(h[0].id, "guides:DG", "{:?}", h.iter().map(|h| &h.id).collect::<Vec<_>>());
        let names = |h: &Hit| recorded(h).names;
        assert_eq!(names(&h[0]), 1.0);
        assert!(h[1..].iter().all(|h| names(h) == 0.0), "class 70 is not class 7");
        assert!(Asked::new("Do we accept radioactive cargo?", &q, &[]).numbered.is_empty());
        let order = [vec!["so20261001".to_string()]];
        assert_eq!(
            Asked::new("Why has SO20261001 not shipped?", &q, &order).numbered,
            Vec::<String>::new(),
            "an id once"
        );
        let code = "UN38.3 测试摘要是必须的吗？";
        let q = question(code, &g);
        let mut h = vec![
            hit("guides:CUSTOMS", "出口报关资料 测试摘要", 1.0),
            hit("guides:DG", "DG guide: UN38.3 test summary", 0.9),
        ];
        rerank(&mut h, &Asked::new(code, &q, &[]), &weights);
        let of = |id: &str| names(h.iter().find(|h| h.id == id).unwrap());
        assert_eq!((of("guides:DG"), of("guides:CUSTOMS")), (1.0, 0.0), "a code the question holds counts as a name");
    }

    #[test]
    fn coverage_counts_other_language_words_and_ignores_words_no_hit_shows() {
        let g = Glossary::new(true, &[]);
        let q = question("refund fee 咖啡", &g);
        let hits = vec![hit("a:1", "退款 手续费", 1.0), hit("a:2", "nothing here", 1.0)];
        let c = coverage(&q, &hits);
        assert!(c[0] > 0.5 && c[1] == 0.0, "{c:?}");
    }

    #[test]
    fn a_page_in_the_other_language_is_credited_with_the_questions_own_words_for_a_concept() {
        let g = Glossary::new(true, &[]);
        let q = "After how many days overdue do we stop new bookings?";
        let tokens = question(q, &g);
        let concepts = g.concepts(q);
        let hits = vec![
            hit("wiki:credit", "客户信用管理制度：账款逾期 60 天停止接受新订舱", 1.0),
            hit("wiki:en", "Overdue accounts: new bookings stop after 60 days", 1.0),
            hit("wiki:other", "Holiday rota", 1.0),
        ];
        let plain = features(&Asked::new(q, &tokens, &[]), &hits);
        let mut asked = Asked::new(q, &tokens, &[]);
        asked.concepts = &concepts;
        let credited = features(&asked, &hits);
        assert!(credited[0].coverage > plain[0].coverage + 0.2, "{:?} → {:?}", plain[0].coverage, credited[0].coverage);
        assert!(credited[1].coverage >= plain[1].coverage);
        assert_eq!(credited[2].coverage, 0.0, "shows no concept");
        let gap = |f: &[RerankFeatures]| f[1].coverage - f[0].coverage;
        assert!(gap(&credited) < gap(&plain), "the page in the other language draws closer: {credited:?}");
        assert_eq!(credited[0].title_coverage, plain[0].title_coverage, "titles are not credited");
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
        let mut h = hits();
        rerank_by(&mut h, &question("rejection fee", &g), 0.3);
        assert_eq!(ids(&h), ["wiki:p", "kb:x", "wiki:p_2025"]);
        let mut h = hits();
        rerank_by(&mut h, &question("the legacy edition's rejection fee", &g), 0.3);
        assert_eq!(ids(&h), ["wiki:p", "wiki:p_2025", "kb:x"], "asked for: not demoted");
        // Without its current version among the candidates an old version is not demoted.
        let mut h = vec![
            old("wiki:p_2025", "Return policy legacy edition rejection fee", 0.9, "wiki:p"),
            hit("kb:x", "Rejection fee", 0.8),
        ];
        rerank_by(&mut h, &question("rejection fee", &g), 0.3);
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
            let all: Vec<std::collections::HashSet<String>> = hits
                .iter()
                .map(|h| fedsearch_core::text::token_set([h.title.as_str(), h.snippet.as_str(), h.metadata["k"].as_str()]))
                .collect();
            proptest::prop_assert_eq!(coverage(&question, &hits), fedsearch_core::text::coverage(&question, &all));
        }
    }

    fn ids(h: &[Hit]) -> Vec<&str> {
        h.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn the_record_the_question_names_weighs_by_its_weight_not_by_a_rule() {
        let g = Glossary::new(true, &[]);
        let q = question("FSN-2026-07 还有几台输液泵没升级？", &g);
        let hits = || {
            vec![
                hit("records:fsn_open_units:P200-2405040", "P200-2405040 输液泵 FSN-2026-07 pending", 1.0),
                hit("notices:FSN-2026-07", "现场安全通知 FSN-2026-07", 0.9),
            ]
        };
        let named = ["FSN-2026-07".to_string()];
        let mut asked = Asked::new("", &q, &[]);
        asked.ids = &named;
        let mut h = hits();
        rerank(&mut h, &asked, &RerankWeights { named_id: 0.05, ..RerankWeights::from_coverage_weight(0.4) });
        assert_eq!(ids(&h), ["records:fsn_open_units:P200-2405040", "notices:FSN-2026-07"], "a small weight");
        let f = recorded(&h[1]);
        assert_eq!(f.named_id, 1.0);
        let mut h = hits();
        rerank(&mut h, &asked, &RerankWeights { named_id: 1.0, ..RerankWeights::from_coverage_weight(0.4) });
        assert_eq!(h[0].id, "notices:FSN-2026-07", "a large weight puts the named record first");
    }

    #[test]
    fn a_question_for_open_records_prefers_the_open_ones() {
        let g = Glossary::new(true, &[]);
        let q = question("上周有哪些工单还没关？", &g);
        let ticket = |id: &str, status: &str, score: f64| {
            let mut h = hit(id, "工单", score);
            h.metadata.insert("status".into(), status.into());
            h
        };
        let hits = || vec![ticket("t:1", "resolved", 1.0), ticket("t:2", "waiting_customer", 0.9)];
        let weights = RerankWeights { state: 0.5, ..RerankWeights::from_coverage_weight(0.4) };
        let mut asked = Asked::new("", &q, &[]);
        asked.state = crate::intent::asks_for_state("上周有哪些工单还没关？");
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["t:2", "t:1"]);
        // In a list, a hit that says nothing of its state goes above one in the other state; a
        // question whether any is open is answered by the closed ones too.
        let other = || vec![ticket("t:1", "resolved", 1.0), hit("t:4", "工单", 0.8)];
        let mut h = other();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["t:1", "t:4"], "not a list");
        asked.list = true;
        let mut h = other();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["t:4", "t:1"], "a list");
        asked.list = false;
        asked.state = None;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["t:1", "t:2"], "no state asked: the fused order");
        // A deployment's own words: `in Bearbeitung` is open once `rerank.state_values` says so.
        let hits = || vec![hit("t:1", "工单", 1.0), ticket("t:3", "In Bearbeitung", 0.9)];
        asked.state = Some(AskedState::Open);
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["t:1", "t:3"], "an unknown word is no state");
        let own = StateValues::new(&["in bearbeitung"], &[] as &[&str]);
        asked.state_values = &own;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(ids(&h), ["t:3", "t:1"]);
    }

    #[test]
    fn one_answer_questions_get_a_varied_list_and_list_questions_every_row() {
        let g = Glossary::new(true, &[]);
        let q = question("东华医院的设备", &g);
        let row = |n: u32, score: f64| {
            let mut h = hit(&format!("records:installations:D-{n}"), "东华医院 设备", score);
            h.source = "records".into();
            h.metadata.insert("template".into(), "installations".into());
            h
        };
        let hits = || {
            let mut v: Vec<Hit> = (1..=5).map(|n| row(n, 1.0 - f64::from(n) * 0.01)).collect();
            let mut t = hit("tickets:T-1", "东华医院 设备", 0.8);
            t.source = "tickets".into();
            v.push(t);
            v
        };
        let weights = RerankWeights::from_coverage_weight(0.4);
        let mut h = hits();
        rerank(&mut h, &Asked::new("", &q, &[]), &weights);
        let at = |h: &[Hit], id: &str| h.iter().position(|x| x.id == id).unwrap();
        assert_eq!(at(&h, "tickets:T-1"), VARIETY_FREE, "the other source comes right after three rows");
        let mut asked = Asked::new("", &q, &[]);
        asked.list = true;
        let mut h = hits();
        rerank(&mut h, &asked, &weights);
        assert_eq!(at(&h, "tickets:T-1"), 5, "a list question keeps every row first");
    }

    #[test]
    fn a_token_only_an_expansion_phrase_gave_counts_only_with_its_phrase() {
        let expansions = vec!["服务单".to_string(), "ticket".to_string()];
        let q = question_tokens("工单", &expansions);
        let hits = vec![hit("wiki:guide", "服务工程师现场指南", 1.0), hit("t:1", "客户服务单 ticket", 1.0)];
        let mut asked = Asked::new("工单", &q, &[]);
        asked.expansions = &expansions;
        let feats = features(&asked, &hits);
        assert_eq!(feats[0].coverage, 0.0, "服务 alone is not 服务单: {feats:?}");
        assert!(feats[1].coverage > 0.0);
        let mut loose = Asked::new("工单", &q, &[]);
        loose.expansions = &[];
        assert!(features(&loose, &hits)[0].coverage > 0.0, "without the phrases the bigram counts");
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
