//! Text analysis every service shares: tokens that match across spellings — lowercased Latin
//! words of 2+ letters without stop words, lightly stemmed (`shipments` → `shipment`,
//! `refunded` → `refund`, `shipping` → `ship`; `damaged` and `damage` → `damag`), and every
//! bigram of each run of CJK characters (a one-character run is kept whole), the standard CJK
//! analysis: 发货 in 为什么还没发货 meets 发货 in a description without a dictionary.

use std::{borrow::Cow, collections::HashSet, sync::LazyLock};

const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "are", "was", "were", "has", "have", "had", "why", "what", "when", "which", "who",
    "how", "not", "yet", "did", "does", "can", "could", "should", "would", "will", "this", "that", "these", "those",
    "from", "into", "about", "any", "all", "our", "your", "their", "there", "been", "being", "also", "still", "please",
    "tell", "show", "give", "find", "get", "its", "than", "then", "them", "they", "you", "she", "him", "her", "is",
    "it", "of", "to", "in", "on", "at", "by", "or", "an", "as", "be", "do", "if", "me", "my", "we", "us", "so", "no",
    "up", "out", "there", "here", "where", "whom", "whose", "much", "many", "some", "one", "two", "need", "know",
    "let", "may", "might", "must", "shall", "just", "like", "want", "say", "says", "said", "again", "now", "only",
    "very", "other", "such", "own", "same", "each", "both", "more", "most", "over", "under", "after", "before",
    "because", "while", "since", "until", "happen", "happened", "going", "gets", "got",
];

/// A character no backend should receive: control characters other than tab and line breaks,
/// and Unicode noncharacters (U+FFFE, U+FFFF, U+FDD0–U+FDEF, ...). XML 1.0 (the wiki's XML-RPC)
/// forbids them, and they carry no meaning in a question.
pub fn is_forbidden_char(c: char) -> bool {
    let n = c as u32;
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || (0xFDD0..=0xFDEF).contains(&n) || n & 0xFFFE == 0xFFFE
}

/// The first forbidden character of `text` ([`is_forbidden_char`]), as `U+XXXX`.
pub fn first_forbidden_char(text: &str) -> Option<String> {
    text.chars().find(|&c| is_forbidden_char(c)).map(|c| format!("U+{:04X}", c as u32))
}

/// Whether `c` is a CJK ideograph (including the supplementary planes' extensions) or
/// kana/hangul, which have no spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Light English stemming: plural and past/progressive endings, enough to meet other forms.
pub fn stem(word: &str) -> String {
    stem_cow(word).into_owned()
}

/// [`stem`], borrowing from `word` unless the stem is not a part of it (`policies` → `policy`).
fn stem_cow(word: &str) -> Cow<'_, str> {
    let n = word.len();
    // "shipped" → "ship", "planning" → "plan": one of a doubled final consonant goes too.
    let cut = |k: usize| {
        let base = &word[..n - k];
        let b = base.as_bytes();
        let doubled = b.len() >= 3 && b[b.len() - 1] == b[b.len() - 2] && !b"aeioulsz".contains(&b[b.len() - 1]);
        Cow::Borrowed(if doubled { &base[..base.len() - 1] } else { base })
    };
    if n > 4 && word.ends_with("ies") {
        return Cow::Owned(format!("{}y", &word[..n - 3]));
    }
    if n > 5 && word.ends_with("ing") {
        return cut(3);
    }
    if n > 4 && word.ends_with("ed") && !word.ends_with("eed") {
        return cut(2);
    }
    if n > 4 && (word.ends_with("ses") || word.ends_with("xes") || word.ends_with("ches") || word.ends_with("shes")) {
        return cut(2);
    }
    if n > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        return cut(1);
    }
    Cow::Borrowed(word)
}

/// The stem a token is matched by: [`stem`], less a final silent `e` (not of `ee`, nor of a stem
/// of three letters), so the bare word meets its inflected forms — `damage` meets "damaged"
/// (`damag`), `charge` "charging", `case` "cases", `dispute` "disputed".
pub fn token_stem(word: &str) -> Cow<'_, str> {
    let s = stem_cow(word);
    if s.len() > 3 && s.ends_with('e') && !s.ends_with("ee") {
        match s {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..b.len() - 1]),
            Cow::Owned(mut o) => {
                o.pop();
                Cow::Owned(o)
            }
        }
    } else {
        s
    }
}

/// At most this many other forms of one word ([`word_forms`]).
const MAX_FORMS: usize = 4;

/// Other forms of a lowercase English word that an index without stemming (OpenSearch's
/// `standard` analyzer) keeps apart from it: its base when it is inflected (`damaged` →
/// `damage`, `bookings` → `booking`, `shipping` → `ship`) and the plural of the word and of its
/// base (`surveyor` → `surveyors`, `policy` → `policies`). Spelling only, no dictionary: a base
/// may not be a word (`damag`), which an index simply does not hold. Empty for anything but
/// ASCII letters, for words under three letters and for stop words.
pub fn word_forms(word: &str) -> Vec<String> {
    if word.len() < 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) || is_stop_word(word) {
        return Vec::new();
    }
    let stemmed = stem(word);
    let mut bases = vec![word.to_string()];
    if stemmed != word {
        // -ed and -ing may have dropped a final e (damaged, charging): both spellings of the base.
        let e_dropped = word.ends_with("ed") || word.ends_with("ing");
        bases.push(stemmed.clone());
        if e_dropped && !stemmed.ends_with('e') {
            bases.push(format!("{stemmed}e"));
        }
    }
    let mut forms: Vec<String> = Vec::new();
    let mut push = |f: String| {
        if f != word && f.len() >= 3 && !forms.contains(&f) && forms.len() < MAX_FORMS {
            forms.push(f);
        }
    };
    for b in &bases[1..] {
        push(b.clone());
    }
    // The plural of a base: of the word itself when it is not inflected, else of its bases
    // (a word in -s is a plural already, its base the singular).
    let singular = if stemmed == word { &bases[..] } else { &bases[1..] };
    if !word.ends_with('s') || stemmed == word {
        for b in singular {
            push(plural(b));
        }
    }
    forms
}

/// The regular English plural of a noun: `policy` → `policies`, `box` → `boxes`, `fee` → `fees`.
fn plural(noun: &str) -> String {
    let b = noun.as_bytes();
    let consonant_y = b.len() >= 2 && b[b.len() - 1] == b'y' && !b"aeiou".contains(&b[b.len() - 2]);
    if consonant_y {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// Whether `w` is a stop word (lowercased).
pub fn is_stop_word(w: &str) -> bool {
    static SET: LazyLock<foldhash::HashSet<&'static str>> = LazyLock::new(|| STOP_WORDS.iter().copied().collect());
    // Most words of a text are longer than any stop word: those need no lookup.
    w.len() <= LONGEST_STOP_WORD && SET.contains(w)
}

/// The byte length of the longest of [`STOP_WORDS`] (checked by a test).
const LONGEST_STOP_WORD: usize = 8;

/// The lowercased Latin words of a text (letters, digits, `-`), in order.
pub fn words(lowered: &str) -> impl Iterator<Item = &str> {
    lowered.split(|c: char| (is_cjk(c) || !c.is_alphanumeric()) && c != '-').filter(|w| !w.is_empty())
}

/// Matching tokens of a text: stemmed content words and CJK bigrams, each once, in order.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    each_token(text, |t| {
        if !seen.contains(t) {
            seen.insert(t.to_string());
            out.push(t.to_string());
        }
    });
    out
}

/// Every token of `text` in order, repeats included (see [`tokens`]), borrowed where it can be:
/// callers that only look tokens up allocate nothing per token.
pub fn each_token(text: &str, mut push: impl FnMut(&str)) {
    let lowered = text.to_lowercase();
    for w in words(&lowered) {
        let w = w.trim_matches('-');
        if w.chars().count() >= 2 && !is_stop_word(w) && w.chars().any(char::is_alphabetic) {
            push(&token_stem(w));
        }
    }
    // Each run of CJK characters: its bigrams (a one-character run whole), as slices.
    let mut chars = lowered.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !is_cjk(c) {
            continue;
        }
        let mut prev = start;
        let mut run_len = 1;
        while let Some(&(i, d)) = chars.peek() {
            if !is_cjk(d) {
                break;
            }
            chars.next();
            push(&lowered[prev..i + d.len_utf8()]);
            prev = i;
            run_len += 1;
        }
        if run_len == 1 {
            push(&lowered[start..start + c.len_utf8()]);
        }
    }
}

/// The tokens of `question` with weight 1, then the tokens of each `extra` term that the
/// question does not have (other-language synonyms, router terms) with `extra_weight`.
pub fn weighted_tokens(question: &str, extra: &[String], extra_weight: f64) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = tokens(question).into_iter().map(|t| (t, 1.0)).collect();
    let mut seen: HashSet<String> = out.iter().map(|(t, _)| t.clone()).collect();
    for t in extra.iter().flat_map(|e| tokens(e)) {
        if seen.insert(t.clone()) {
            out.push((t, extra_weight));
        }
    }
    out
}

/// Words after which a number is a date or an amount, not part of a name: months ("November
/// 2026") and words of quantity ("within 30", "last 7").
const NOT_NAMING: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "within",
    "last",
    "next",
    "past",
    "first",
    "top",
    "least",
    "every",
    "per",
    "around",
    "nearly",
    "almost",
    "total",
    "max",
    "min",
    "maximum",
    "minimum",
    "approx",
    "approximately",
    "exactly",
    "extra",
    "another",
    "additional",
];

/// Words before which a number is an amount: "class 7 days" is seven days of something.
const UNITS: &[&str] = &[
    "day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours", "minute", "minutes", "second",
    "seconds", "working", "calendar", "business", "percent", "times", "kg", "km", "pcs", "units", "items", "people",
    "persons",
];

/// The numbered names a text holds, lowercased, each once: a word of two or more letters that is
/// not a stop word, a month or a word of quantity, followed by a number of one to four digits
/// that no unit follows ("class 7", "Terminal 2", "incident 12"; not "November 2026", "within 30
/// days", "gate 5 days"). The number tells one item from its neighbours. A pair split by
/// punctuation ("cargo. 7 items") is none.
pub fn numbered_names(text: &str) -> Vec<String> {
    let raw: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    for (i, pair) in raw.windows(2).enumerate() {
        let (name, number) = (pair[0], pair[1]);
        let lowered = name.trim_start_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        let is_name = lowered.len() >= 2
            && lowered.bytes().all(|b| b.is_ascii_alphabetic())
            && !is_stop_word(&lowered)
            && !NOT_NAMING.contains(&lowered.as_str());
        let digits = number.trim_end_matches(['.', ',', '?', '!', ';', ':', ')']);
        let is_number = (1..=4).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
        let unit_follows = (digits.len() < number.len() && number.ends_with('%'))
            || raw.get(i + 2).is_some_and(|next| {
                let next = next.trim_end_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
                digits.len() == number.len() && UNITS.contains(&next.as_str())
            });
        let pair = format!("{lowered} {digits}");
        if is_name && is_number && !unit_follows && !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

/// The codes a text holds, lowercased, each once: a run of ASCII letters, digits, `-` and `.`
/// that starts with a letter and holds a digit, three characters or more ("UN38.3", "B2606",
/// "E-217", "KM-D100"; not "30km", "Q3"). Like a numbered name, a code tells one thing from its
/// neighbours.
pub fn codes(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for run in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.')) {
        let code = run.trim_matches(|c: char| c == '-' || c == '.');
        let starts_with_letter = code.starts_with(|c: char| c.is_ascii_alphabetic());
        if code.len() >= 3 && starts_with_letter && code.bytes().any(|b| b.is_ascii_digit()) {
            let lowered = code.to_ascii_lowercase();
            if !out.contains(&lowered) {
                out.push(lowered);
            }
        }
    }
    out
}

/// The tokens of several texts (a hit's title, snippet and metadata values), as one set.
pub fn token_set<'a>(parts: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let mut set = HashSet::new();
    for part in parts {
        each_token(part, |t| {
            if !set.contains(t) {
                set.insert(t.to_string());
            }
        });
    }
    set
}

/// Each hit's share of the question it shows, 0..=1: Σ weight × IDF over the question's tokens
/// the hit shows / the same over the tokens any hit shows. IDF is over `shown` (the hits), so a
/// token every hit shows counts little and one no hit shows does not count at all.
pub fn coverage(question: &[(String, f64)], shown: &[HashSet<String>]) -> Vec<f64> {
    let shows: Vec<Vec<bool>> = shown.iter().map(|s| question.iter().map(|(t, _)| s.contains(t)).collect()).collect();
    coverage_of(question, &shows)
}

/// [`coverage`] from what each hit shows of each question token (`shows[hit][token]`), for a
/// caller that has counted the tokens itself.
pub fn coverage_of(question: &[(String, f64)], shows: &[Vec<bool>]) -> Vec<f64> {
    let n = shows.len() as f64;
    let idf: Vec<Option<f64>> = (0..question.len())
        .map(|i| {
            let df = shows.iter().filter(|s| s[i]).count();
            (df > 0).then(|| (1.0 + n / df as f64).ln())
        })
        .collect();
    let total: f64 = question.iter().zip(&idf).filter_map(|((_, w), i)| i.map(|i| i * w)).sum();
    shows
        .iter()
        .map(|s| {
            if total <= 0.0 {
                return 0.0;
            }
            let got: f64 = question
                .iter()
                .zip(&idf)
                .enumerate()
                .filter(|(t, _)| s[*t])
                .filter_map(|(_, ((_, w), i))| i.map(|i| i * w))
                .sum();
            got / total
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_followed_by_a_number_is_a_numbered_name() {
        assert_eq!(numbered_names("Do we accept class 7 radioactive cargo?"), ["class 7"]);
        assert_eq!(
            numbered_names("Incident 12 and incident 13, Terminal 2."),
            ["incident 12", "incident 13", "terminal 2"]
        );
        assert!(numbered_names("What changed in November 2026?").is_empty(), "a month and a year are a date");
        assert!(numbered_names("in 2026 for 7 days").is_empty(), "a stop word names nothing");
        assert!(numbered_names("refunds within 30 days, the last 7").is_empty(), "amounts");
        assert!(numbered_names("gate 5 days late, class 3% more").is_empty(), "a unit follows");
        assert!(numbered_names("the cargo. 7 items later").is_empty(), "punctuation splits the pair");
        assert!(numbered_names("order 12345 and P200 7").is_empty(), "five digits are an id; P200 is no word");
        assert!(numbered_names("class 7A, 运输 7").is_empty());
    }

    #[test]
    fn a_run_of_letters_and_digits_that_starts_with_a_letter_is_a_code() {
        assert_eq!(codes("UN38.3 测试摘要是必须的吗？"), ["un38.3"]);
        assert_eq!(codes("哪些除颤仪装的还是 B2606 电池, E-217 and KM-D100."), ["b2606", "e-217", "km-d100"]);
        assert!(codes("30km in Q3, 2026-10-20, 5.5 and words").is_empty());
    }

    #[test]
    fn a_bare_word_and_its_inflected_forms_share_a_token() {
        for (a, b) in [("damage", "damaged"), ("charge", "charging"), ("case", "cases"), ("dispute", "disputed")] {
            assert_eq!(tokens(a), tokens(b), "{a} / {b}");
        }
        assert_eq!(tokens("fee free use"), ["fee", "free", "use"], "ee and three letters keep their e");
    }

    #[test]
    fn a_word_has_its_base_and_plural_forms() {
        let forms = |w: &str| word_forms(w);
        assert_eq!(forms("surveyor"), ["surveyors"]);
        assert_eq!(forms("surveyors"), ["surveyor"]);
        assert_eq!(forms("policy"), ["policies"]);
        assert_eq!(forms("policies"), ["policy"]);
        assert_eq!(forms("damaged"), ["damag", "damage", "damags", "damages"]);
        assert_eq!(forms("bookings"), ["booking"]);
        assert_eq!(forms("shipping"), ["ship", "shipe", "ships", "shipes"]);
        assert_eq!(forms("box"), ["boxes"]);
        assert!(forms("the").is_empty() && forms("SO2026").is_empty() && forms("退款").is_empty());
        for w in ["surveyor", "damaged", "bookings", "policy", "shipping"] {
            assert!(forms(w).len() <= MAX_FORMS && !forms(w).contains(&w.to_string()), "{w}");
        }
    }

    #[test]
    fn every_stop_word_is_one_and_no_other_word_is() {
        assert_eq!(STOP_WORDS.iter().map(|w| w.len()).max(), Some(LONGEST_STOP_WORD));
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
        }
        for w in ["refund", "policy", "th", "thee", "because2", "订单", ""] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn controls_and_noncharacters_are_forbidden_and_ordinary_text_is_not() {
        for bad in ['\u{0}', '\u{7}', '\u{1b}', '\u{fffe}', '\u{ffff}', '\u{fdd0}', '\u{1fffe}', '\u{10ffff}'] {
            assert!(is_forbidden_char(bad), "{:X}", bad as u32);
        }
        for good in ['a', '\t', '\n', '\r', '发', '\u{fffd}', '\u{20000}', '€'] {
            assert!(!is_forbidden_char(good), "{:X}", good as u32);
        }
        assert_eq!(first_forbidden_char("退款\u{ffff}政策").as_deref(), Some("U+FFFF"));
        assert_eq!(first_forbidden_char("refund policy 退款"), None);
    }

    #[test]
    fn tokens_are_stemmed_words_and_cjk_bigrams() {
        assert_eq!(tokens("Why was SO20261001 not shipped?"), vec!["so20261001", "ship"]);
        assert_eq!(tokens("为什么还没发货"), vec!["为什", "什么", "么还", "还没", "没发", "发货"]);
        assert_eq!(tokens("Refunds 退款 refund"), vec!["refund", "退款"]);
        assert!(tokens("the of and").is_empty());
        // One-character runs whole, bigrams per run, words first, each token once.
        assert_eq!(tokens("发 退款政策 the policies, 退款 发"), vec!["policy", "发", "退款", "款政", "政策"]);
        assert_eq!(
            token_set(["Shipped 发货", "planning 货"]),
            ["ship", "发货", "plan", "货"].into_iter().map(String::from).collect::<HashSet<String>>()
        );
        assert_eq!(stem("policies"), "policy");
    }

    #[test]
    fn coverage_is_the_idf_weighted_share_of_the_question_a_hit_shows() {
        let set = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<HashSet<String>>();
        let q = vec![("refund".to_string(), 1.0), ("watch".to_string(), 1.0), ("nowhere".to_string(), 1.0)];
        let c = coverage(&q, &[set(&["refund", "watch"]), set(&["refund"]), set(&[])]);
        assert!((c[0] - 1.0).abs() < 1e-12, "every token any hit shows: {c:?}");
        assert!(c[1] > 0.0 && c[1] < 0.5, "refund is in two hits, watch in one: {c:?}");
        assert_eq!(c[2], 0.0);
        assert!(coverage(&q, &[]).is_empty());
    }
}
