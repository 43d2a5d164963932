//! Versions of one document within ONE source: families, labels, and which version is current.
//!
//! Versions are never compared across sources: "Return policy 2025" in the wiki and "Return
//! policy 2026" in the ticket system are not two versions of one document as far as fusion
//! knows. Everything here works on the hits of one source.
//!
//! # Families
//!
//! A hit's family is `SourceHit.version.family` when the source set it (non-empty). Otherwise
//! it is inferred, for hits whose family is not explicit, from two things:
//!
//! - **the title** ([`title_family`]): NFKC, lower-case, with year, date and version markers
//!   removed ("2025", "2025 edition", "(2025版)", "2026 年 9 月起", "October 2026",
//!   "2026-10-01", "v2", "version 3", "第2版") and edition/status words removed ("edition",
//!   "superseded", "current", "旧版", "已废止", "现行", "预览版", ...). Every OTHER number stays in
//!   the key, however short: "Incident 12: API latency" and "Incident 13: API latency" are two
//!   items, and so are release notes 4.3 and 4.4. Keys shorter than [`MIN_FAMILY_CHARS`]
//!   characters are not used.
//! - **the local id** ([`id_family`]): a trailing year or version marker after `_`, `-` or `.`
//!   (`return_policy_2025`, `DOC-API-RATE-2025`, `guide-v2`) is dropped, so `return_policy_2025`
//!   and `return_policy` are one family — provided the two titles keep the same other numbers.
//!   Only a trailing marker counts: `SP-2026-031` is incident 31, not a 2026 version of `SP-031`.
//!
//! Hits sharing an inferred key are one family only when their markers differ: two hits of one
//! source with the same marker (or none, like two tickets both titled "Password reset link
//! expired") are distinct documents, and such an ambiguous key joins nobody. Hits linked by
//! `supersedes` / `superseded_by` (local ids of the same source) are one family as well. All of
//! these join transitively.
//!
//! Title keys, markers and the numbers kept are compared as 64-bit hashes of their text (fixed
//! seed; a collision between two different texts has probability ~2^-64), parsed once per hit
//! on arrival ([`VersionFacts`]); the key's text is parsed again only for the hits whose
//! inferred family name is reported.
//!
//! # Which version is current
//!
//! Within a family of two or more hits, draft hits (`status: draft`) stand aside. A hit is
//! **superseded** by its own word: its explicit `status` when set; else an explicit link
//! (`superseded_by` set, or another hit of the family `supersedes` it); else its title says so
//! ("superseded", "obsolete", "deprecated", "已废止", "旧版", "已被…取代", ...). Among the rest,
//! the **current** version is the first by: explicit status `current`, then supersedes another
//! hit of the family, then the newer `effective_at`, then the newer `updated_at`, then the
//! larger label ([`compare_labels`]), then the smaller `local_id`. Every other non-draft hit of
//! the family is superseded by the current one. When every hit is superseded (only old
//! versions arrived), there is no current one and each keeps the source's own `superseded_by`.
//!
//! A hit alone in its family is superseded only when it says so itself (explicit status, a
//! `superseded_by` link, or its title); it is then reported with the source's `superseded_by`.

use std::{
    borrow::Cow,
    cmp::{Ordering, Reverse},
    collections::HashMap,
};

use fedsearch_core::text::is_cjk;
use fedsearch_proto::types::{SourceHit, VersionInfo};
use prost_types::Timestamp;
use unicode_normalization::UnicodeNormalization;

use crate::swar;

/// Inferred family keys shorter than this (in non-space chars) are not used.
pub const MIN_FAMILY_CHARS: usize = 4;

/// Edition and status words dropped from titles (whole words); `true`: the word says superseded.
const WORD_MARKERS: &[(&str, bool)] = &[
    ("superseded", true),
    ("obsolete", true),
    ("deprecated", true),
    ("outdated", true),
    ("archived", true),
    ("edition", false),
    ("version", false),
    ("ver", false),
    ("revision", false),
    ("rev", false),
    ("current", false),
    ("latest", false),
    ("preview", false),
    ("draft", false),
];

/// For each first letter `a..=z`, the lengths (as bits) of the [`WORD_MARKERS`] starting with
/// it: most words of a title are no marker, found without comparing strings.
const WORD_MARKER_SHAPES: [u16; 26] = {
    let mut shapes = [0u16; 26];
    let mut i = 0;
    while i < WORD_MARKERS.len() {
        let m = WORD_MARKERS[i].0.as_bytes();
        shapes[(m[0] - b'a') as usize] |= 1 << m.len();
        i += 1;
    }
    shapes
};

/// The [`WORD_MARKERS`] entry of `word`, if any.
fn word_marker(word: &str) -> Option<(&'static str, bool)> {
    let b = word.as_bytes();
    let first = *b.first()?;
    let shape = match first {
        b'a'..=b'z' if b.len() < 16 => WORD_MARKER_SHAPES[usize::from(first - b'a')] & (1 << b.len()),
        _ => 0,
    };
    if shape == 0 {
        return None;
    }
    WORD_MARKERS.iter().find(|(m, _)| *m == word).copied()
}

/// Words after which a number is a version label ("version 3", "rev 2").
const VERSION_WORDS: &[&str] = &["edition", "version", "ver", "revision", "rev"];

/// CJK edition and status phrases dropped from titles (longest first where one contains
/// another); `true`: the phrase says superseded.
const CJK_MARKERS: &[(&str, bool)] = &[
    ("已废止", true),
    ("已作废", true),
    ("已过期", true),
    ("废止", true),
    ("作废", true),
    ("旧版", true),
    ("已被", true),
    ("现行版", false),
    ("最新版", false),
    ("修订版", false),
    ("预览版", false),
    ("正式版", false),
    ("新版", false),
    ("现行", false),
    ("取代", false),
    ("版本", false),
    ("生效", false),
    ("版", false),
];

/// Month names and abbreviations with their number (dropped next to a year: "October 2026").
const MONTHS: &[(&str, u32)] = &[
    ("january", 1),
    ("jan", 1),
    ("february", 2),
    ("feb", 2),
    ("march", 3),
    ("mar", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("june", 6),
    ("jun", 6),
    ("july", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sept", 9),
    ("sep", 9),
    ("october", 10),
    ("oct", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
    ("dec", 12),
];

/// Trailing id suffixes (after `_`, `-` or `.`) that mark a version besides years and `vN`.
const ID_WORD_MARKERS: &[&str] = &["old", "legacy", "draft", "preview", "archived", "superseded"];

/// What a title says about the version it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleFamily {
    /// The title without its version markers: equal keys (within one source) may be versions
    /// of one document.
    pub key: String,
    /// The year, date or version label(s) found, e.g. `"2025"`, `"2026-09"`, `"v2"`; empty when
    /// none.
    pub label: String,
    /// Every marker removed, in order (two titles with the same markers are not two versions).
    pub markers: String,
    /// The title says it is superseded ("superseded", "已废止", "旧版", ...).
    pub says_superseded: bool,
    /// The numbers kept in the key, in order.
    numbers: String,
}

/// The family of a title (see the module doc); `None` when the key is too short to use.
pub fn title_family(title: &str) -> Option<TitleFamily> {
    let parts = parse_title(title);
    usable_key(&parts.key).then_some(parts)
}

/// A local id without its trailing version marker: `(stem, label)`, e.g.
/// `return_policy_2025` → `("return_policy", "2025")`; `None` when the id has no such marker.
pub fn id_family(local_id: &str) -> Option<(&str, String)> {
    let i = local_id.rfind(['_', '-', '.'])?;
    let (stem, suffix) = (&local_id[..i], &local_id[i + 1..]);
    // Lower-cased only when it has to be (most ids' suffixes are digits or lower-case already).
    let suffix = if suffix.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        Cow::Borrowed(suffix)
    } else {
        Cow::Owned(suffix.to_lowercase())
    };
    let marker = is_year(&suffix) || is_v_label(&suffix) || ID_WORD_MARKERS.contains(&&*suffix);
    (marker && stem.chars().filter(|c| c.is_alphanumeric()).count() >= 2).then(|| (stem, suffix.into_owned()))
}

/// Natural order of version labels: digit runs compare as numbers ("v10" > "v9",
/// "2026.10" > "2026.9" > "2025"), other runs as text; a label that is a prefix of the other
/// sorts first.
pub fn compare_labels(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (da, ra) = split_digits(a);
                let (db, rb) = split_digits(b);
                let (ta, tb) = (trim_zeros(da), trim_zeros(db));
                let order = ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb));
                if order != Ordering::Equal {
                    return order;
                }
                (a, b) = (ra, rb);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.to_ascii_lowercase().cmp(&y.to_ascii_lowercase()).then(x.cmp(y));
                }
                (a, b) = (&a[1..], &b[1..]);
            }
        }
    }
}

fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b'0').count().min(s.len().saturating_sub(1));
    &s[n..]
}

/// The version facts of one hit that do not depend on the other hits: computed once, on
/// arrival.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionFacts {
    /// What the title says.
    title: TitleFacts,
    /// The id's stem and label when the id ends in a version marker.
    id: Option<(String, String)>,
    /// The hit's explicit status ([`explicit_status`]).
    status: Option<&'static str>,
}

/// What [`resolve`] needs of a [`TitleFamily`]: the key, markers and numbers as hashes (they
/// are only compared for equality; the key's text is parsed again for the few hits whose
/// family is named), the label when the key is usable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TitleFacts {
    /// The hash of the key, `None` when the key is too short to use ([`title_family`]).
    key: Option<u64>,
    /// The label when the key is usable (else empty).
    label: String,
    markers: u64,
    numbers: u64,
    says_superseded: bool,
}

impl TitleFacts {
    fn of(title: &str) -> Self {
        SCRATCH.with_borrow_mut(|sc| {
            let says_superseded = parse_title_into(title, sc);
            let usable = usable_key(&sc.key);
            TitleFacts {
                key: usable.then(|| fact_hash(&sc.key)),
                label: if usable { sc.label.clone() } else { String::new() },
                markers: fact_hash(&sc.markers),
                numbers: fact_hash(&sc.numbers),
                says_superseded,
            }
        })
    }
}

impl VersionFacts {
    pub fn of(hit: &SourceHit) -> Self {
        Self {
            title: TitleFacts::of(&hit.title),
            id: id_family(&hit.local_id).map(|(stem, label)| (stem.to_string(), label)),
            status: explicit_status(hit),
        }
    }

    fn says_superseded(&self) -> bool {
        self.title.says_superseded
    }

    fn numbers(&self) -> u64 {
        self.title.numbers
    }
}

/// The resolved status of one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Nothing known.
    Unknown,
    Current,
    Superseded,
    Draft,
}

impl Status {
    /// The `VersionInfo.status` string.
    pub fn label(&self) -> &'static str {
        match self {
            Status::Unknown => "",
            Status::Current => "current",
            Status::Superseded => "superseded",
            Status::Draft => "draft",
        }
    }
}

/// The newer version of a superseded hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Newer {
    /// Not superseded, or superseded without a known newer version.
    None,
    /// The hit at this index of the input.
    Present(usize),
    /// A local id (the source's own `superseded_by`) that is not among the input hits.
    Absent(String),
}

/// One hit's place among the versions of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The explicit family, else the inferred one (the family's smallest inferred key), else empty.
    pub family: String,
    /// The explicit label, else the label found in the title or id.
    pub label: String,
    pub status: Status,
    pub newer: Newer,
    /// Whether there is anything to report: an explicit `version`, a family of two or more
    /// hits, or a hit that says it is superseded. When `false`, a fused hit carries no version.
    pub known: bool,
}

impl Resolved {
    /// The `VersionInfo` of `hit` resolved as `self`, with `superseded_by` as given (see
    /// [`Newer`]); `None` when nothing is known.
    pub fn version_info(&self, hit: &SourceHit, superseded_by: String) -> Option<VersionInfo> {
        if !self.known {
            return None;
        }
        let explicit = hit.version.clone().unwrap_or_default();
        Some(VersionInfo {
            family: self.family.clone(),
            label: self.label.clone(),
            effective_at: explicit.effective_at,
            status: self.status.label().to_string(),
            supersedes: explicit.supersedes,
            superseded_by,
        })
    }
}

/// Resolves the versions of hits of ONE source, each with its [`VersionFacts::of`] (see the
/// module doc); the result is in input order and does not depend on that order.
pub fn resolve(hits: &[(&SourceHit, &VersionFacts)]) -> Vec<Resolved> {
    let by_id: IdIndex = hits.iter().enumerate().map(|(i, (h, _))| (h.local_id.as_str(), i)).collect();
    resolve_with(hits, &|id| by_id.get(id).copied())
}

/// Whether `hit` alone could make [`resolve`] know anything of the hits of its source: it has
/// an explicit `version`, an id with a version marker ([`id_family`]) or a title that may hold
/// a marker ([`title_may_have_markers`]). When no hit of a source can, every hit of it resolves
/// to an unknown status, no newer version and nothing to report (`known: false`), so the
/// caller can skip resolving: families then form only through title keys whose markers differ
/// (every hit's are empty) and id stems (each id is its own, the hits' ids being distinct), no
/// hit names another, and nothing says superseded (a status word in a title is a marker).
pub(crate) fn may_tell(hit: &SourceHit) -> bool {
    hit.version.is_some() || id_family(&hit.local_id).is_some() || title_may_have_markers(&hit.title)
}

/// `false` only when [`parse_title`] finds no marker in `title` (conservative: `true` for
/// every non-ASCII title). A marker is a year or a date (a number starting with one), a `vN`
/// label or one of [`WORD_MARKERS`] (the version words among them); a number after or before a
/// version word comes with that word. Read by runs of letters and digits found eight bytes at
/// a time ([`crate::swar`]): a number token starts a run, a word token starts a run or follows
/// the digits that start it, and a marker word or a `vN` label is the whole of that (a longer
/// token that takes in `.` and more digits is no marker word, and its `vN` start still counts).
/// So every marker shows in a run, and a run may show one that is none (`2025` in `12-2025`).
fn title_may_have_markers(title: &str) -> bool {
    if !title.is_ascii() {
        return true;
    }
    let bytes = title.as_bytes();
    if bytes.len() > 64 {
        return ascii_tokens_have_markers(bytes);
    }
    // Bit k: byte k is a letter or digit.
    let mut runs = 0u64;
    for (k, word) in bytes.chunks(8).enumerate() {
        runs |= u64::from(swar::bits(swar::upper_and_alnum(swar::load(word)).1)) << (8 * k);
    }
    while runs != 0 {
        let start = runs.trailing_zeros();
        let len = (!(runs >> start)).trailing_zeros();
        let run = &bytes[start as usize..(start + len) as usize];
        let first = run[0];
        if first.is_ascii_digit() {
            let digits = run.iter().take_while(|b| b.is_ascii_digit()).count();
            // A year or a date starts with four digits, 19xx or 20xx.
            if (digits == 4 && matches!(&run[..2], b"19" | b"20"))
                || (digits < run.len() && ascii_word_is_marker(&run[digits..]))
            {
                return true;
            }
        } else if (first | 0x20 == b'v' || marker_shape(first | 0x20, run.len())) && ascii_word_is_marker(run) {
            // Most words are neither by their first letter and length: no call for them.
            return true;
        }
        // Clears the lowest run: adding its lowest bit carries through it.
        runs &= runs.wrapping_add(runs & runs.wrapping_neg());
    }
    false
}

/// [`title_may_have_markers`] of a long ASCII title, token by token ([`scan_ascii`]).
fn ascii_tokens_have_markers(bytes: &[u8]) -> bool {
    scan_ascii(bytes, |t| match t {
        // `is_year` or `is_date`: four digits, 19xx or 20xx, alone or before a separator.
        Tok::Num(a, b) => {
            let t = &bytes[a as usize..b as usize];
            t.len() >= 4
                && matches!(&t[..2], b"19" | b"20")
                && t[2].is_ascii_digit()
                && t[3].is_ascii_digit()
                && (t.len() == 4 || matches!(t[4], b'-' | b'/' | b'.'))
        }
        Tok::Word(a, b) => ascii_word_is_marker(&bytes[a as usize..b as usize]),
        Tok::Cjk(_) => true,
    })
}

/// Whether an ASCII word token (any case, starting with a letter) is a `vN` label or one of
/// [`WORD_MARKERS`] (as [`is_v_label`] and [`word_marker`] read it lowered).
fn ascii_word_is_marker(word: &[u8]) -> bool {
    let first = word[0].to_ascii_lowercase();
    let rest = &word[1..];
    if first == b'v'
        && !rest.is_empty()
        && rest.split(|&b| b == b'.').all(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit))
    {
        return true;
    }
    marker_shape(first, word.len()) && WORD_MARKERS.iter().any(|(m, _)| m.as_bytes().eq_ignore_ascii_case(word))
}

/// Whether one of [`WORD_MARKERS`] starts with the lower-case letter `first` and is `len` long.
fn marker_shape(first: u8, len: usize) -> bool {
    match first {
        b'a'..=b'z' if len < 16 => WORD_MARKER_SHAPES[usize::from(first - b'a')] & (1 << len) != 0,
        _ => false,
    }
}

/// [`resolve`] with the hits' index by local id: `by_id(id)` is the index of the hit whose
/// local id is `id`, if any.
pub(crate) fn resolve_with(
    hits: &[(&SourceHit, &VersionFacts)],
    by_id: &dyn Fn(&str) -> Option<usize>,
) -> Vec<Resolved> {
    let n = hits.len();
    let facts = |i: usize| hits[i].1;
    let explicit_family = |i: usize| hits[i].0.version.as_ref().map(|v| v.family.trim()).filter(|f| !f.is_empty());
    let mut parent: Vec<usize> = (0..n).collect();

    // Explicit families, then valid inferred title and id buckets, then links.
    let mut explicit_keys: Vec<(&str, usize)> = Vec::new();
    let mut title_keys: Vec<(u64, usize)> = Vec::with_capacity(n);
    let mut id_keys: Vec<(&str, usize)> = Vec::with_capacity(n);
    for (i, (hit, fact)) in hits.iter().enumerate() {
        if let Some(f) = explicit_family(i) {
            explicit_keys.push((f, i));
            continue;
        }
        if let Some(key) = fact.title.key {
            title_keys.push((key, i));
        }
        let id_key = fact.id.as_ref().map_or(hit.local_id.as_str(), |(stem, _)| stem.as_str());
        id_keys.push((id_key, i));
    }
    let mut members = Vec::new();
    for_each_bucket(&mut explicit_keys, &mut members, |m| join_all(&mut parent, m));
    for_each_bucket(&mut title_keys, &mut members, |m| {
        let markers = |&i: &usize| facts(i).title.markers;
        if m.len() > 1 && all_distinct(m, markers) {
            join_all(&mut parent, m);
        }
    });
    for_each_bucket(&mut id_keys, &mut members, |m| {
        let label = |&i: &usize| facts(i).id.as_ref().map_or("", |(_, l)| l.as_str());
        let numbers = facts(m[0]).numbers();
        if m.len() > 1 && all_distinct(m, label) && m.iter().all(|&i| facts(i).numbers() == numbers) {
            join_all(&mut parent, m);
        }
    });
    for (i, (hit, _)) in hits.iter().enumerate() {
        if let Some(v) = &hit.version {
            for link in [&v.supersedes, &v.superseded_by] {
                if let Some(j) = by_id(link.trim()) {
                    union(&mut parent, i, j);
                }
            }
        }
    }

    // Families: the hits sharing a root, each in input order.
    let mut by_root: Vec<(usize, usize)> = (0..n).map(|i| (find(&mut parent, i), i)).collect();
    by_root.sort_unstable();
    let mut out: Vec<Option<Resolved>> = vec![None; n];
    for family in by_root.chunk_by(|a, b| a.0 == b.0) {
        members.clear();
        members.extend(family.iter().map(|&(_, i)| i));
        resolve_family(hits, &members, by_id, &mut out);
    }
    out.into_iter().map(|r| r.expect("every hit is in one family")).collect()
}

/// Each hit's index by local id (foldhash: ids are the source's, and this map lives for one
/// call).
type IdIndex<'a> = HashMap<&'a str, usize, foldhash::fast::FixedState>;

/// Calls `f` with the members of each bucket of `pairs` (equal keys), members in input order.
fn for_each_bucket<K: Ord>(pairs: &mut [(K, usize)], members: &mut Vec<usize>, mut f: impl FnMut(&[usize])) {
    pairs.sort_unstable();
    for bucket in pairs.chunk_by(|a, b| a.0 == b.0) {
        members.clear();
        members.extend(bucket.iter().map(|&(_, i)| i));
        f(members);
    }
}

/// [`resolve`] for owned hits (computes the facts).
pub fn resolve_hits(hits: &[SourceHit]) -> Vec<Resolved> {
    let facts: Vec<VersionFacts> = hits.iter().map(VersionFacts::of).collect();
    let pairs: Vec<(&SourceHit, &VersionFacts)> = hits.iter().zip(&facts).collect();
    resolve(&pairs)
}

/// The hit's explicit status as one of `current`, `superseded` or `draft` ([`canonical_status`]);
/// a value none of them names (`"under review by legal"`) counts as no status, so that the
/// links, dates and title decide.
fn explicit_status(hit: &SourceHit) -> Option<&'static str> {
    hit.version.as_ref().and_then(|v| canonical_status(&v.status))
}

/// Status words sources use, each with what it means here. Lower-case; matched after trimming
/// and folding `_`/`-` to spaces.
const STATUS_WORDS: &[(&str, &str)] = &[
    ("current", "current"),
    ("active", "current"),
    ("valid", "current"),
    ("effective", "current"),
    ("in effect", "current"),
    ("in force", "current"),
    ("live", "current"),
    ("latest", "current"),
    ("published", "current"),
    ("released", "current"),
    ("现行", "current"),
    ("现行有效", "current"),
    ("有效", "current"),
    ("生效", "current"),
    ("已生效", "current"),
    ("当前", "current"),
    ("最新", "current"),
    ("已发布", "current"),
    ("superseded", "superseded"),
    ("obsolete", "superseded"),
    ("deprecated", "superseded"),
    ("outdated", "superseded"),
    ("archived", "superseded"),
    ("retired", "superseded"),
    ("withdrawn", "superseded"),
    ("replaced", "superseded"),
    ("expired", "superseded"),
    ("inactive", "superseded"),
    ("historic", "superseded"),
    ("historical", "superseded"),
    ("legacy", "superseded"),
    ("old", "superseded"),
    ("旧版", "superseded"),
    ("废止", "superseded"),
    ("已废止", "superseded"),
    ("作废", "superseded"),
    ("已作废", "superseded"),
    ("失效", "superseded"),
    ("已失效", "superseded"),
    ("过期", "superseded"),
    ("已过期", "superseded"),
    ("停用", "superseded"),
    ("已停用", "superseded"),
    ("已替代", "superseded"),
    ("已被取代", "superseded"),
    ("历史版本", "superseded"),
    ("draft", "draft"),
    ("preview", "draft"),
    ("proposed", "draft"),
    ("pending", "draft"),
    ("in review", "draft"),
    ("under review", "draft"),
    ("wip", "draft"),
    ("草案", "draft"),
    ("草稿", "draft"),
    ("征求意见稿", "draft"),
    ("预览", "draft"),
    ("预览版", "draft"),
    ("待审批", "draft"),
];

/// What a source's `version.status` value means: `current`, `superseded` or `draft`, from the
/// words sources commonly use ("active", "obsolete", "已废止", "draft"); `None` for an empty or
/// unknown value. A source with other words maps them itself (es-adapter
/// `version_fields.status_values`).
pub fn canonical_status(raw: &str) -> Option<&'static str> {
    let folded = raw.trim().to_lowercase().replace(['_', '-'], " ");
    STATUS_WORDS.iter().find(|(word, _)| *word == folded).map(|(_, status)| *status)
}

fn timestamp(t: Option<&Timestamp>) -> (i64, i32) {
    t.map_or((i64::MIN, 0), |t| (t.seconds, t.nanos))
}

fn resolve_family(
    input: &[(&SourceHit, &VersionFacts)],
    members: &[usize],
    by_id: &dyn Fn(&str) -> Option<usize>,
    out: &mut [Option<Resolved>],
) {
    let hits = |i: usize| input[i].0;
    let facts = |i: usize| input[i].1;
    let explicit = |i: usize| hits(i).version.as_ref();
    let superseded_by_link = |i: usize| explicit(i).map_or("", |v| v.superseded_by.trim());
    let supersedes_link = |i: usize| explicit(i).map_or("", |v| v.supersedes.trim());
    // The member of the family that says it supersedes `i`, if any (smallest local id).
    let superseder = |i: usize| {
        members
            .iter()
            .copied()
            .filter(|&j| j != i && supersedes_link(j) == hits(i).local_id)
            .min_by(|&a, &b| hits(a).local_id.cmp(&hits(b).local_id))
    };
    let says_superseded = |i: usize| match facts(i).status {
        Some(s) => s == "superseded",
        None => !superseded_by_link(i).is_empty() || superseder(i).is_some() || facts(i).says_superseded(),
    };
    let is_draft = |i: usize| facts(i).status == Some("draft");
    let supersedes_member = |i: usize| by_id(supersedes_link(i)).is_some_and(|j| members.contains(&j));
    let label = |i: usize| {
        let explicit_label = explicit(i).map_or("", |v| v.label.trim());
        if !explicit_label.is_empty() {
            return explicit_label;
        }
        match (facts(i).title.label.as_str(), &facts(i).id) {
            ("", Some((_, l))) => l.as_str(),
            (l, _) => l,
        }
    };
    let current = members.iter().copied().filter(|&i| !says_superseded(i) && !is_draft(i)).min_by(|&a, &b| {
        let rank = |i: usize| {
            (
                Reverse(facts(i).status == Some("current")),
                Reverse(supersedes_member(i)),
                Reverse(timestamp(explicit(i).and_then(|v| v.effective_at.as_ref()))),
                Reverse(timestamp(hits(i).updated_at.as_ref())),
            )
        };
        rank(a)
            .cmp(&rank(b))
            .then_with(|| compare_labels(label(b), label(a)))
            .then_with(|| hits(a).local_id.cmp(&hits(b).local_id))
    });
    // Inferred family name: the smallest inferred key (title, else id stem) among the members,
    // computed when a member needs it (title keys are parsed again: the facts keep a hash).
    let mut inferred: Option<String> = None;
    let mut inferred_name = || {
        inferred
            .get_or_insert_with(|| {
                members
                    .iter()
                    .filter_map(|&i| match (facts(i).title.key, &facts(i).id) {
                        (Some(_), _) => Some(parse_title(&hits(i).title).key),
                        (None, Some((stem, _))) => Some(stem.clone()),
                        (None, None) => None,
                    })
                    .min()
                    .unwrap_or_default()
            })
            .clone()
    };
    let family = members.len() > 1;
    for &i in members {
        let status = if is_draft(i) {
            Status::Draft
        } else if Some(i) == current {
            if family || facts(i).status.is_some() { Status::Current } else { Status::Unknown }
        } else if says_superseded(i) || current.is_some() {
            Status::Superseded
        } else {
            // Not the family's current one, and nothing says it is old: what it says of itself.
            match facts(i).status {
                Some("current") => Status::Current,
                _ => Status::Unknown,
            }
        };
        let newer = if status != Status::Superseded {
            Newer::None
        } else if let Some(c) = current {
            Newer::Present(c)
        } else {
            match superseded_by_link(i) {
                "" => superseder(i).map_or(Newer::None, Newer::Present),
                id => by_id(id).map_or_else(|| Newer::Absent(id.to_string()), Newer::Present),
            }
        };
        let family_name = match explicit(i).map(|v| v.family.trim()).filter(|f| !f.is_empty()) {
            Some(f) => f.to_string(),
            None if family || status == Status::Superseded => inferred_name(),
            None => String::new(),
        };
        out[i] = Some(Resolved {
            family: family_name,
            label: label(i).to_string(),
            known: explicit(i).is_some() || family || status == Status::Superseded,
            status,
            newer,
        });
    }
}

fn all_distinct<K: Ord>(members: &[usize], key: impl Fn(&usize) -> K) -> bool {
    let mut keys: Vec<K> = members.iter().map(key).collect();
    keys.sort_unstable();
    keys.windows(2).all(|w| w[0] != w[1])
}

fn join_all(parent: &mut [usize], members: &[usize]) {
    for &m in &members[1..] {
        union(parent, members[0], m);
    }
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb)] = ra.min(rb);
    }
}

// ---- title parsing ----

/// A token of a lowered title: a byte range of it (or the char, for CJK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// Digits, with `.`, `-` or `/` between digits kept: "12", "4.4", "2026-10-01".
    Num(u32, u32),
    /// A run of non-CJK letters and digits starting with a letter: "api", "v2", "sev2".
    Word(u32, u32),
    /// One CJK character.
    Cjk(char),
}

impl Tok {
    /// The token's text in `lowered` (empty for CJK, whose char is in the token).
    fn text(self, lowered: &str) -> &str {
        match self {
            Tok::Num(a, b) | Tok::Word(a, b) => &lowered[a as usize..b as usize],
            Tok::Cjk(_) => "",
        }
    }
}

/// The buffers of one title parse, reused from title to title (one per thread): parsing a
/// title allocates nothing once they have grown.
#[derive(Debug, Default)]
struct TitleScratch {
    lowered: String,
    toks: Vec<Tok>,
    kept: Vec<Tok>,
    /// The results: see [`TitleFamily`].
    key: String,
    label: String,
    markers: String,
    numbers: String,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<TitleScratch> = std::cell::RefCell::default();
}

/// Lowers `title` into `out`: NFKC-normalised and lower-cased. ASCII text is its own NFKC form,
/// so it skips the normaliser (most titles; the profile showed it).
fn lower_into(title: &str, out: &mut String) {
    out.clear();
    if title.is_ascii() {
        out.push_str(title);
        out.make_ascii_lowercase();
    } else {
        out.extend(title.nfkc().flat_map(char::to_lowercase));
    }
}

/// The tokens of a lowered title (byte offsets advance over whole chars only).
fn tokenize(s: &str, toks: &mut Vec<Tok>) {
    toks.clear();
    if s.is_ascii() {
        return tokenize_ascii(s.as_bytes(), toks);
    }
    let bytes = s.as_bytes();
    let digit_at = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_digit);
    let char_at = |i: usize| -> char {
        match bytes[i] {
            b @ 0..0x80 => char::from(b),
            _ => s[i..].chars().next().unwrap_or(char::REPLACEMENT_CHARACTER),
        }
    };
    let mut i = 0;
    while i < s.len() {
        let start = i;
        let c = char_at(i);
        if c.is_ascii_digit() {
            while i < s.len() && (digit_at(i) || (matches!(bytes[i], b'.' | b'-' | b'/') && digit_at(i + 1))) {
                i += 1;
            }
            toks.push(Tok::Num(start as u32, i as u32));
        } else if is_cjk(c) {
            toks.push(Tok::Cjk(c));
            i += c.len_utf8();
        } else if c.is_alphanumeric() {
            while i < s.len() {
                let d = char_at(i);
                // `i > start`: the word's first char is alphanumeric, never the dot.
                let dot_in_number = d == '.' && bytes[i - 1].is_ascii_digit() && digit_at(i + 1);
                let word_char =
                    if d.is_ascii() { d.is_ascii_alphanumeric() } else { d.is_alphanumeric() && !is_cjk(d) };
                if !(word_char || dot_in_number) {
                    break;
                }
                i += d.len_utf8();
            }
            toks.push(Tok::Word(start as u32, i as u32));
        } else {
            i += c.len_utf8();
        }
    }
}

/// [`tokenize`] for ASCII text (most titles).
fn tokenize_ascii(bytes: &[u8], toks: &mut Vec<Tok>) {
    scan_ascii(bytes, |t| {
        toks.push(t);
        false
    });
}

/// The tokens of ASCII text (any case: bytes are chars, none CJK, and a char is alphanumeric
/// when it is ASCII alphanumeric), each given to `visit` until it returns `true`; returns
/// whether it did.
fn scan_ascii(bytes: &[u8], mut visit: impl FnMut(Tok) -> bool) -> bool {
    let n = bytes.len();
    let digit_at = |j: usize| j < n && bytes[j].is_ascii_digit();
    let mut i = 0;
    while i < n {
        let start = i;
        let b = bytes[i];
        let tok = if b.is_ascii_digit() {
            i += 1;
            while i < n && (bytes[i].is_ascii_digit() || (matches!(bytes[i], b'.' | b'-' | b'/') && digit_at(i + 1))) {
                i += 1;
            }
            Tok::Num(start as u32, i as u32)
        } else if b.is_ascii_alphabetic() {
            i += 1;
            while i < n
                && (bytes[i].is_ascii_alphanumeric()
                    || (bytes[i] == b'.' && bytes[i - 1].is_ascii_digit() && digit_at(i + 1)))
            {
                i += 1;
            }
            Tok::Word(start as u32, i as u32)
        } else {
            i += 1;
            continue;
        };
        if visit(tok) {
            return true;
        }
    }
    false
}

fn is_year(s: &str) -> bool {
    s.len() == 4 && (s.starts_with("19") || s.starts_with("20")) && s.bytes().all(|b| b.is_ascii_digit())
}

/// `v2`, `v2.1`.
fn is_v_label(s: &str) -> bool {
    s.strip_prefix('v').is_some_and(|rest| {
        !rest.is_empty() && rest.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// `2026-10-01`, `2026/10`, `2026.09`: a year, then a month 1..=12, then maybe a day.
fn is_date(s: &str) -> bool {
    let month_ok = |m: &str| m.len() <= 2 && m.parse::<u32>().is_ok_and(|m| (1..=12).contains(&m));
    let day_ok = |d: &str| d.len() <= 2 && d.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d));
    // A year, a separator and a month at least.
    if s.len() < 6 || !matches!(s.as_bytes()[4], b'-' | b'/' | b'.') {
        return false;
    }
    let mut parts = s.split(['-', '/', '.']);
    let (Some(y), Some(m), d) = (parts.next(), parts.next(), parts.next()) else { return false };
    parts.next().is_none() && is_year(y) && month_ok(m) && d.is_none_or(day_ok)
}

fn month_number(word: &str) -> Option<u32> {
    MONTHS.iter().find(|(m, _)| *m == word).map(|(_, n)| *n)
}

fn small_number(lowered: &str, t: Option<&Tok>, max: u32) -> Option<u32> {
    match t {
        Some(&t @ Tok::Num(a, b)) if b - a <= 2 => t.text(lowered).parse().ok().filter(|v| (1..=max).contains(v)),
        _ => None,
    }
}

/// Appends `part` to the space-separated list `out`.
fn push_part(out: &mut String, part: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(part);
}

/// Parses `title` into `sc.key`, `sc.label`, `sc.markers` and `sc.numbers` (see
/// [`TitleFamily`]); returns whether the title says it is superseded.
fn parse_title_into(title: &str, sc: &mut TitleScratch) -> bool {
    let TitleScratch { lowered, toks, kept, key, label, markers, numbers } = sc;
    lower_into(title, lowered);
    let lowered = lowered.as_str();
    tokenize(lowered, toks);
    let toks = toks.as_slice();
    kept.clear();
    key.clear();
    label.clear();
    markers.clear();
    numbers.clear();
    // The last label pushed (a byte range of `label`): consecutive equal labels count once.
    let mut last_label = 0..0;
    let mut push_label = |label: &mut String, new: &str| {
        if last_label.is_empty() || label[last_label.clone()] != *new {
            push_part(label, new);
            last_label = label.len() - new.len()..label.len();
        }
    };
    let mut says_superseded = false;
    let mut i = 0;
    let cjk_at = |j: usize, c: char| toks.get(j) == Some(&Tok::Cjk(c));
    let word_at = |j: usize| match toks.get(j) {
        Some(&t @ Tok::Word(..)) => Some(t.text(lowered)),
        _ => None,
    };
    while i < toks.len() {
        match toks[i] {
            t @ Tok::Num(..) if is_date(t.text(lowered)) => {
                let n = t.text(lowered);
                push_part(markers, n);
                push_label(label, n);
                i += 1;
            }
            t @ Tok::Num(..) if is_year(t.text(lowered)) => {
                let n = t.text(lowered);
                let mut month = None;
                i += 1;
                // 2026 年 [9 月 [1 日]] [起]
                if cjk_at(i, '年') {
                    i += 1;
                    if let Some(m) = small_number(lowered, toks.get(i), 12).filter(|_| cjk_at(i + 1, '月')) {
                        month = Some(m);
                        i += 2;
                        if small_number(lowered, toks.get(i), 31).is_some()
                            && (cjk_at(i + 1, '日') || cjk_at(i + 1, '号'))
                        {
                            i += 2;
                        }
                    }
                    if cjk_at(i, '起') {
                        i += 1;
                    }
                }
                // October 2026 / 2026 October
                let month_before = match kept.last() {
                    Some(&t @ Tok::Word(..)) => month_number(t.text(lowered)),
                    _ => None,
                };
                if let Some(m) = month_before {
                    kept.pop();
                    month = Some(m);
                } else if let Some(m) = word_at(i).and_then(month_number) {
                    month = Some(m);
                    i += 1;
                }
                // `2026` or `2026-09` (a year is 4 ASCII digits).
                let mut ym = [0u8; 7];
                ym[..4].copy_from_slice(n.as_bytes());
                let year_label = match month {
                    Some(m) => {
                        ym[4] = b'-';
                        ym[5] = b'0' + (m / 10) as u8;
                        ym[6] = b'0' + (m % 10) as u8;
                        std::str::from_utf8(&ym).unwrap_or(n)
                    }
                    None => n,
                };
                push_part(markers, year_label);
                push_label(label, year_label);
            }
            t @ Tok::Num(..) => {
                let n = t.text(lowered);
                let after_version_word = i > 0 && word_at(i - 1).is_some_and(|w| VERSION_WORDS.contains(&w));
                let before_edition = cjk_at(i + 1, '版') || matches!(word_at(i + 1), Some("edition" | "version"));
                if after_version_word || before_edition {
                    if i > 0 && cjk_at(i - 1, '第') && kept.last() == Some(&Tok::Cjk('第')) {
                        kept.pop();
                    }
                    push_part(markers, n);
                    push_label(label, n);
                } else {
                    kept.push(t);
                }
                i += 1;
            }
            t @ Tok::Word(..) => {
                let w = t.text(lowered);
                if is_v_label(w) {
                    push_part(markers, w);
                    push_label(label, w);
                } else {
                    match word_marker(w) {
                        Some((m, superseded)) => {
                            says_superseded |= superseded;
                            push_part(markers, m);
                        }
                        None => kept.push(t),
                    }
                }
                i += 1;
            }
            t @ Tok::Cjk(_) => {
                let phrase = CJK_MARKERS.iter().find(|(m, _)| m.chars().enumerate().all(|(k, c)| cjk_at(i + k, c)));
                match phrase {
                    Some(&(m, superseded)) => {
                        says_superseded |= superseded;
                        push_part(markers, m);
                        i += m.chars().count();
                    }
                    None => {
                        kept.push(t);
                        i += 1;
                    }
                }
            }
        }
    }
    let mut prev_cjk = false;
    for &t in kept.iter() {
        match t {
            Tok::Cjk(c) => {
                if !prev_cjk && !key.is_empty() {
                    key.push(' ');
                }
                key.push(c);
                prev_cjk = true;
            }
            Tok::Num(..) | Tok::Word(..) => {
                push_part(key, t.text(lowered));
                prev_cjk = false;
                if let Tok::Num(..) = t {
                    push_part(numbers, t.text(lowered));
                }
            }
        }
    }
    says_superseded
}

/// What a title says about the version it is (see [`TitleFamily`]), with its own buffers.
fn parse_title(title: &str) -> TitleFamily {
    SCRATCH.with_borrow_mut(|sc| {
        let says_superseded = parse_title_into(title, sc);
        TitleFamily {
            key: sc.key.clone(),
            label: sc.label.clone(),
            markers: sc.markers.clone(),
            says_superseded,
            numbers: sc.numbers.clone(),
        }
    })
}

/// Whether a family key is long enough to use ([`MIN_FAMILY_CHARS`] non-space chars).
fn usable_key(key: &str) -> bool {
    // Chars are the bytes that do not continue a UTF-8 sequence.
    key.bytes().filter(|&b| b & 0xc0 != 0x80 && b != b' ').count() >= MIN_FAMILY_CHARS
}

/// The hash title keys, markers and numbers are compared by (fixed seed: deterministic).
fn fact_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x7665_7273_696f_6e73).hash_one(s)
}

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
