//! The title parser as it was before it wrote into reusable buffers (tokens borrowed from a
//! freshly lowered title, every part an owned `String`): the reference the proptests in
//! `tests.rs` compare [`super::parse_title`] with.

use std::borrow::Cow;

use fedsearch_core::text::is_cjk;
use unicode_normalization::UnicodeNormalization;

use super::{CJK_MARKERS, MONTHS, TitleFamily, VERSION_WORDS, WORD_MARKERS, is_v_label, is_year};

/// A token of a lowered title, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// Digits, with `.`, `-` or `/` between digits kept: "12", "4.4", "2026-10-01".
    Num(&'a str),
    /// A run of non-CJK letters and digits starting with a letter: "api", "v2", "sev2".
    Word(&'a str),
    /// One CJK character.
    Cjk(char),
}

/// The title NFKC-normalised and lower-cased. ASCII text is its own NFKC form, so it skips the
/// normaliser (most titles; the profile showed it), and is borrowed when already lower-case.
pub(super) fn lowered(title: &str) -> Cow<'_, str> {
    if !title.is_ascii() {
        Cow::Owned(title.nfkc().flat_map(char::to_lowercase).collect())
    } else if title.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(title.to_ascii_lowercase())
    } else {
        Cow::Borrowed(title)
    }
}

/// The tokens of a lowered title (byte offsets advance over whole chars only).
pub(super) fn tokenize(s: &str) -> Vec<Tok<'_>> {
    let bytes = s.as_bytes();
    let at = |i: usize| s[i..].chars().next();
    let digit_at = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_digit);
    let mut toks = Vec::new();
    let mut i = 0;
    while let Some(c) = at(i) {
        let start = i;
        if c.is_ascii_digit() {
            while i < s.len() && (digit_at(i) || (matches!(bytes[i], b'.' | b'-' | b'/') && digit_at(i + 1))) {
                i += 1;
            }
            toks.push(Tok::Num(&s[start..i]));
        } else if is_cjk(c) {
            toks.push(Tok::Cjk(c));
            i += c.len_utf8();
        } else if c.is_alphanumeric() {
            while let Some(d) = at(i) {
                let dot_in_number = d == '.' && s[start..i].ends_with(|p: char| p.is_ascii_digit()) && digit_at(i + 1);
                let word_char = d.is_alphanumeric() && !is_cjk(d);
                if !(word_char || dot_in_number) {
                    break;
                }
                i += d.len_utf8();
            }
            toks.push(Tok::Word(&s[start..i]));
        } else {
            i += c.len_utf8();
        }
    }
    toks
}

/// `2026-10-01`, `2026/10`, `2026.09`: a year, then a month 1..=12, then maybe a day.
fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split(['-', '/', '.']).collect();
    let month_ok = |m: &str| m.len() <= 2 && m.parse::<u32>().is_ok_and(|m| (1..=12).contains(&m));
    let day_ok = |d: &str| d.len() <= 2 && d.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d));
    match parts.as_slice() {
        [y, m] => is_year(y) && month_ok(m),
        [y, m, d] => is_year(y) && month_ok(m) && day_ok(d),
        _ => false,
    }
}

fn month_number(word: &str) -> Option<u32> {
    MONTHS.iter().find(|(m, _)| *m == word).map(|(_, n)| *n)
}

fn small_number(t: Option<&Tok>, max: u32) -> Option<u32> {
    match t {
        Some(Tok::Num(n)) if n.len() <= 2 => n.parse().ok().filter(|v| (1..=max).contains(v)),
        _ => None,
    }
}

pub(super) fn parse_title(title: &str) -> TitleFamily {
    let lowered = lowered(title);
    let toks = tokenize(&lowered);
    let mut kept: Vec<Tok> = Vec::with_capacity(toks.len());
    let mut markers: Vec<Cow<str>> = Vec::new();
    let mut labels: Vec<Cow<str>> = Vec::new();
    let mut says_superseded = false;
    let mut i = 0;
    let cjk_at = |j: usize, c: char| toks.get(j) == Some(&Tok::Cjk(c));
    while i < toks.len() {
        match toks[i] {
            Tok::Num(n) if is_date(n) => {
                markers.push(n.into());
                labels.push(n.into());
                i += 1;
            }
            Tok::Num(n) if is_year(n) => {
                let mut label = Cow::Borrowed(n);
                i += 1;
                // 2026 年 [9 月 [1 日]] [起]
                if cjk_at(i, '年') {
                    i += 1;
                    if let Some(m) = small_number(toks.get(i), 12).filter(|_| cjk_at(i + 1, '月')) {
                        label = format!("{n}-{m:02}").into();
                        i += 2;
                        if small_number(toks.get(i), 31).is_some() && (cjk_at(i + 1, '日') || cjk_at(i + 1, '号')) {
                            i += 2;
                        }
                    }
                    if cjk_at(i, '起') {
                        i += 1;
                    }
                }
                // October 2026 / 2026 October
                let month_before = match kept.last() {
                    Some(Tok::Word(w)) => month_number(w),
                    _ => None,
                };
                if let Some(m) = month_before {
                    kept.pop();
                    label = format!("{n}-{m:02}").into();
                } else if let Some(Tok::Word(w)) = toks.get(i)
                    && let Some(m) = month_number(w)
                {
                    label = format!("{n}-{m:02}").into();
                    i += 1;
                }
                markers.push(label.clone());
                labels.push(label);
            }
            Tok::Num(n) => {
                let after_version_word = i > 0 && matches!(toks[i - 1], Tok::Word(w) if VERSION_WORDS.contains(&w));
                let before_edition =
                    cjk_at(i + 1, '版') || matches!(toks.get(i + 1), Some(Tok::Word("edition" | "version")));
                if after_version_word || before_edition {
                    if i > 0 && cjk_at(i - 1, '第') && kept.last() == Some(&Tok::Cjk('第')) {
                        kept.pop();
                    }
                    markers.push(n.into());
                    labels.push(n.into());
                } else {
                    kept.push(toks[i]);
                }
                i += 1;
            }
            Tok::Word(w) if is_v_label(w) => {
                markers.push(w.into());
                labels.push(w.into());
                i += 1;
            }
            Tok::Word(w) => {
                match WORD_MARKERS.iter().find(|(m, _)| *m == w) {
                    Some(&(m, superseded)) => {
                        says_superseded |= superseded;
                        markers.push(m.into());
                    }
                    None => kept.push(toks[i]),
                }
                i += 1;
            }
            Tok::Cjk(_) => {
                let phrase = CJK_MARKERS.iter().find(|(m, _)| m.chars().enumerate().all(|(k, c)| cjk_at(i + k, c)));
                match phrase {
                    Some(&(m, superseded)) => {
                        says_superseded |= superseded;
                        markers.push(m.into());
                        i += m.chars().count();
                    }
                    None => {
                        kept.push(toks[i]);
                        i += 1;
                    }
                }
            }
        }
    }
    let mut key = String::with_capacity(lowered.len());
    let mut numbers = String::new();
    let mut prev_cjk = false;
    for t in kept {
        match t {
            Tok::Cjk(c) => {
                if !prev_cjk && !key.is_empty() {
                    key.push(' ');
                }
                key.push(c);
                prev_cjk = true;
            }
            Tok::Num(s) | Tok::Word(s) => {
                if !key.is_empty() {
                    key.push(' ');
                }
                key.push_str(s);
                prev_cjk = false;
                if let Tok::Num(s) = t {
                    if !numbers.is_empty() {
                        numbers.push(' ');
                    }
                    numbers.push_str(s);
                }
            }
        }
    }
    labels.dedup();
    TitleFamily { key, label: labels.join(" "), markers: markers.join(" "), says_superseded, numbers }
}
