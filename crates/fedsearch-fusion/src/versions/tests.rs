//! Unit tests of title and id families and of which version is current.

use fedsearch_proto::types::{SourceHit, VersionInfo};
use prost_types::Timestamp;

use super::*;

fn key(title: &str) -> Option<String> {
    title_family(title).map(|t| t.key)
}

fn hit(id: &str, title: &str) -> SourceHit {
    SourceHit { local_id: id.into(), title: title.into(), ..Default::default() }
}

fn with_version(mut h: SourceHit, v: VersionInfo) -> SourceHit {
    h.version = Some(v);
    h
}

fn ts(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp { seconds, nanos: 0 })
}

#[test]
fn years_editions_and_status_words_are_markers() {
    let policy = key("退货政策（2026 版） Return Policy 2026").unwrap();
    assert_eq!(policy, "退货政策 return policy");
    assert_eq!(key("退货政策（2025 版，已废止） Return Policy 2025 (superseded)").unwrap(), policy);
    assert_eq!(key("API rate limits (2025 edition, superseded)"), key("API rate limits (October 2026)"));
    assert_eq!(key("数据保留策略（2025 版，已废止）"), key("数据保留策略（2026 年 9 月起）"));
    assert_eq!(
        key("Nimbus Workspace 4.4 预览版发布说明（已被正式版取代）"),
        key("Nimbus Workspace 4.4 发布说明（2026 年 11 月）")
    );
    assert_eq!(key("Expense policy (2025版)"), key("Expense policy v2"));
    assert_eq!(key("Expense policy version 3"), key("旧版 Expense policy"));
    assert_eq!(key("Expense policy, effective 2026-10-01").unwrap(), "expense policy effective");
    let t = title_family("数据保留策略（2026 年 9 月起）").unwrap();
    assert_eq!(t.label, "2026-09");
    assert!(!t.says_superseded);
    assert_eq!(title_family("API rate limits (October 2026)").unwrap().label, "2026-10");
    assert_eq!(title_family("Guide v2.1").unwrap().label, "v2.1");
    for old in [
        "Return Policy 2025 (superseded)",
        "旧版 报销制度",
        "数据保留策略（2025 版，已废止）",
        "Nimbus 4.4 预览版（已被正式版取代）",
    ] {
        assert!(title_family(old).unwrap().says_superseded, "{old}");
    }
    assert!(!title_family("报销制度（2026 版，取代 2025 版）").unwrap().says_superseded);
}

#[test]
fn other_numbers_stay_in_the_key_however_short() {
    assert_ne!(key("Incident 12: API latency"), key("Incident 13: API latency"));
    assert_eq!(key("Incident 12: API latency").unwrap(), "incident 12 api latency");
    assert_ne!(key("Release notes: Nimbus Workspace 4.3 (October 2026)"), key("Release notes: Nimbus Workspace 4.4"));
    assert_ne!(key("Dashboard charts render blank in Safari 17"), key("Dashboard charts render blank in Safari 16"));
    assert_ne!(key("SO20261001 earbuds"), key("SO20261002 earbuds"));
    assert_ne!(key("Floor 3 printer 2025"), key("Floor 4 printer 2026"));
    // Too short once the markers are gone.
    assert_eq!(key("FAQ 2025"), None);
}

#[test]
fn ids_lose_a_trailing_year_or_version_only() {
    assert_eq!(id_family("public:return_policy_2025"), Some(("public:return_policy", "2025".to_string())));
    assert_eq!(id_family("DOC-API-RATE-2026"), Some(("DOC-API-RATE", "2026".to_string())));
    assert_eq!(id_family("guide-v2"), Some(("guide", "v2".to_string())));
    assert_eq!(id_family("SP-2026-031"), None);
    assert_eq!(id_family("NIM-1201"), None);
    assert_eq!(id_family("return_policy"), None);
}

#[test]
fn labels_compare_naturally() {
    assert_eq!(compare_labels("v10", "v9"), Ordering::Greater);
    assert_eq!(compare_labels("2026.10", "2026.9"), Ordering::Greater);
    assert_eq!(compare_labels("2026-09", "2025"), Ordering::Greater);
    assert_eq!(compare_labels("4.4", "4.4-preview"), Ordering::Less);
    assert_eq!(compare_labels("007", "7"), Ordering::Equal);
}

#[test]
fn inferred_families_join_within_the_source_and_the_newest_label_is_current() {
    let hits = [
        hit("a", "Return Policy 2025"),
        hit("b", "Return Policy 2026"),
        hit("c", "Incident 12: API latency"),
        hit("d", "Incident 13: API latency"),
    ];
    let r = resolve_hits(&hits);
    assert_eq!(r[1].status, Status::Current);
    assert_eq!((r[0].status.clone(), r[0].newer.clone()), (Status::Superseded, Newer::Present(1)));
    assert_eq!(r[0].family, "return policy");
    assert_eq!(r[0].label, "2025");
    // Different incidents: no family, nothing to report.
    for i in [2, 3] {
        assert_eq!((r[i].status.clone(), r[i].known), (Status::Unknown, false), "{i}");
    }
}

#[test]
fn identical_titles_without_markers_are_distinct_documents() {
    let hits = [hit("T1", "Password reset link expired"), hit("T2", "Password reset link expired")];
    assert!(resolve_hits(&hits).iter().all(|r| !r.known && r.status == Status::Unknown));
    // An ambiguous key joins nobody, not even a marked title.
    let hits = [hit("a", "VPN guide"), hit("b", "VPN guide"), hit("c", "VPN guide 2024")];
    assert!(resolve_hits(&hits).iter().all(|r| !r.known));
}

#[test]
fn ids_with_a_trailing_marker_join_when_the_titles_keep_the_same_numbers() {
    let mut old = hit("public:return_policy_2025", "Old returns page");
    old.updated_at = ts(1);
    let mut new = hit("public:return_policy", "Returns and refunds");
    new.updated_at = ts(2);
    let r = resolve_hits(&[old.clone(), new.clone()]);
    assert_eq!(r[0].newer, Newer::Present(1));
    assert_eq!(r[1].status, Status::Current);
    let r = resolve_hits(&[hit("x_2025", "Floor 3 plan"), hit("x", "Floor 4 plan")]);
    assert!(r.iter().all(|r| !r.known));
}

#[test]
fn explicit_status_beats_links_dates_and_labels() {
    let v = |status: &str, effective: i64, label: &str| VersionInfo {
        family: "f".into(),
        status: status.into(),
        effective_at: ts(effective),
        label: label.into(),
        ..Default::default()
    };
    let hits = [
        with_version(hit("new", "x"), v("superseded", 200, "9")),
        with_version(hit("old", "x"), v("current", 100, "1")),
    ];
    let r = resolve_hits(&hits);
    assert_eq!(r[1].status, Status::Current);
    assert_eq!(r[0].newer, Newer::Present(1));
}

#[test]
fn status_words_sources_use_are_read_and_unknown_ones_leave_it_to_the_links() {
    for (raw, want) in [
        ("Obsolete", Some("superseded")),
        ("  ARCHIVED ", Some("superseded")),
        ("已废止", Some("superseded")),
        ("active", Some("current")),
        ("in_force", Some("current")),
        ("现行", Some("current")),
        ("Work-In-Progress", None),
        ("wip", Some("draft")),
        ("征求意见稿", Some("draft")),
        ("", None),
        ("pending legal review", None),
    ] {
        assert_eq!(canonical_status(raw), want, "{raw:?}");
    }
    // `obsolete` with a link: old (it counted as current before the words were read).
    let link = |status: &str| VersionInfo { status: status.into(), superseded_by: "b".into(), ..Default::default() };
    let hits = [with_version(hit("a", "p"), link("obsolete")), hit("b", "q")];
    let r = resolve_hits(&hits);
    assert_eq!((r[0].status.clone(), r[0].newer.clone()), (Status::Superseded, Newer::Present(1)));
    // An unknown word is no status: the link decides, and nothing unknown is passed on.
    let hits = [with_version(hit("a", "p"), link("under legal review")), hit("b", "q")];
    let r = resolve_hits(&hits);
    assert_eq!((r[0].status.clone(), r[0].newer.clone()), (Status::Superseded, Newer::Present(1)));
    let lone = resolve_hits(&[with_version(
        hit("c", "r"),
        VersionInfo { status: "under legal review".into(), ..Default::default() },
    )]);
    assert_eq!(lone[0].status, Status::Unknown);
    let active =
        resolve_hits(&[with_version(hit("c", "r"), VersionInfo { status: "Active".into(), ..Default::default() })]);
    assert_eq!(active[0].status, Status::Current);
}

#[test]
fn links_beat_dates() {
    let hits = [
        with_version(hit("a", "p"), VersionInfo { supersedes: "b".into(), effective_at: ts(1), ..Default::default() }),
        with_version(hit("b", "q"), VersionInfo { effective_at: ts(2), ..Default::default() }),
    ];
    let r = resolve_hits(&hits);
    assert_eq!(r[0].status, Status::Current);
    assert_eq!((r[1].status.clone(), r[1].newer.clone()), (Status::Superseded, Newer::Present(0)));
    let hits = [
        with_version(
            hit("a", "p"),
            VersionInfo { superseded_by: "b".into(), effective_at: ts(9), ..Default::default() },
        ),
        with_version(hit("b", "q"), VersionInfo { effective_at: ts(2), ..Default::default() }),
    ];
    assert_eq!(resolve_hits(&hits)[0].newer, Newer::Present(1));
}

#[test]
fn effective_at_beats_updated_at_which_beats_the_label() {
    let v = |effective: Option<Timestamp>, label: &str| VersionInfo {
        family: "f".into(),
        effective_at: effective,
        label: label.into(),
        ..Default::default()
    };
    let mut a = with_version(hit("a", ""), v(ts(2), "1"));
    a.updated_at = ts(1);
    let mut b = with_version(hit("b", ""), v(ts(1), "2"));
    b.updated_at = ts(2);
    assert_eq!(resolve_hits(&[a, b.clone()])[0].status, Status::Current);
    let mut c = with_version(hit("c", ""), v(None, "1"));
    c.updated_at = ts(3);
    let d = with_version(hit("d", ""), v(None, "2"));
    assert_eq!(resolve_hits(&[c.clone(), d.clone()])[0].status, Status::Current);
    c.updated_at = None;
    assert_eq!(resolve_hits(&[c, d])[1].status, Status::Current);
}

#[test]
fn a_lone_old_version_keeps_its_mark_and_the_sources_pointer() {
    let old = with_version(
        hit("DOC-2025", "Rate limits"),
        VersionInfo { status: "superseded".into(), superseded_by: "DOC-2026".into(), ..Default::default() },
    );
    let r = resolve_hits(&[old]);
    assert_eq!((r[0].status.clone(), r[0].newer.clone()), (Status::Superseded, Newer::Absent("DOC-2026".into())));
    let r = resolve_hits(&[hit("p", "Return Policy 2025 (superseded)")]);
    assert_eq!((r[0].status.clone(), r[0].newer.clone(), r[0].known), (Status::Superseded, Newer::None, true));
}

#[test]
fn drafts_stand_aside_and_results_do_not_depend_on_input_order() {
    let d = with_version(hit("d", "Policy 2027"), VersionInfo { status: "draft".into(), ..Default::default() });
    let hits = vec![hit("a", "Policy 2025"), hit("b", "Policy 2026"), d];
    let r = resolve_hits(&hits);
    assert_eq!(r[2].status, Status::Draft);
    assert_eq!(r[1].status, Status::Current);
    assert_eq!(r[0].newer, Newer::Present(1));
    let mut reversed = hits.clone();
    reversed.reverse();
    let mut again = resolve_hits(&reversed);
    again.reverse();
    // Indices point into the reversed input: map them back.
    for r in &mut again {
        if let Newer::Present(i) = r.newer {
            r.newer = Newer::Present(hits.len() - 1 - i);
        }
    }
    assert_eq!(again, r);
}

/// The tokenizer this module had before tokens were borrowed from the lowered title: over a
/// `Vec<char>`, each token an owned `String`. The proptest below checks both cut titles alike.
fn tokenize_by_chars(title: &str) -> Vec<(u8, String)> {
    let chars: Vec<char> = title.nfkc().flat_map(char::to_lowercase).collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let digit_at = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            let mut s = String::new();
            while i < chars.len() && (digit_at(i) || (matches!(chars[i], '.' | '-' | '/') && digit_at(i + 1))) {
                s.push(chars[i]);
                i += 1;
            }
            toks.push((0, s));
        } else if is_cjk(c) {
            toks.push((2, c.to_string()));
            i += 1;
        } else if c.is_alphanumeric() {
            let mut s = String::new();
            while i < chars.len() {
                let d = chars[i];
                let dot_in_number = d == '.' && s.ends_with(|p: char| p.is_ascii_digit()) && digit_at(i + 1);
                if !((d.is_alphanumeric() && !is_cjk(d)) || dot_in_number) {
                    break;
                }
                s.push(d);
                i += 1;
            }
            toks.push((1, s));
        } else {
            i += 1;
        }
    }
    toks
}

fn owned(lowered: &str, toks: &[Tok]) -> Vec<(u8, String)> {
    toks.iter()
        .map(|&t| match t {
            Tok::Num(..) => (0, t.text(lowered).to_string()),
            Tok::Word(..) => (1, t.text(lowered).to_string()),
            Tok::Cjk(c) => (2, c.to_string()),
        })
        .collect()
}

fn lowered(title: &str) -> String {
    let mut out = String::new();
    lower_into(title, &mut out);
    out
}

proptest::proptest! {
    /// The ASCII fast path of title parsing reads exactly what the NFKC path reads.
    #[test]
    fn ascii_titles_read_the_same_without_the_normaliser(title in "[ -~]{0,40}") {
        let general: String = title.nfkc().flat_map(char::to_lowercase).collect();
        proptest::prop_assert_eq!(lowered(&title), general);
    }

    /// Borrowed tokens over byte offsets cut every title as the char-by-char tokenizer did.
    #[test]
    fn borrowed_tokens_are_the_char_tokens(
        title in "[ -~]{0,40}|\\PC{0,30}|([0-9]{1,4}[./-]?|v[0-9]|[a-zA-Z]{1,6}|[年月日版第起]| |Ⅻ|ﬁ|２|。){0,12}"
    ) {
        let lowered = lowered(&title);
        let mut toks = Vec::new();
        tokenize(&lowered, &mut toks);
        proptest::prop_assert_eq!(owned(&lowered, &toks), tokenize_by_chars(&title));
        let reference = reference::lowered(&title);
        let reference_toks: Vec<(u8, String)> = reference::tokenize(&reference)
            .into_iter()
            .map(|t| match t {
                reference::Tok::Num(s) => (0, s.to_string()),
                reference::Tok::Word(s) => (1, s.to_string()),
                reference::Tok::Cjk(c) => (2, c.to_string()),
            })
            .collect();
        proptest::prop_assert_eq!(owned(&lowered, &toks), reference_toks);
    }

    /// A title the marker screen passes has no marker (so its source, should no other hit
    /// tell anything, can skip resolving).
    #[test]
    fn titles_the_screen_passes_have_no_marker(
        title in "[ -~]{0,40}|\\PC{0,30}|((19|20)[0-9]{2}|[0-9]{1,5}|[0-9]{4}[./-][0-9]{1,2}([./-][0-9]{1,2})?|[vV][0-9](\\.[0-9]){0,2}\\.?|\
            (edition|Version|VER|rev|revision|superseded|Obsolete|current|draft|latest|jan|october|may|api|policy)|\
            [a-zA-Z]{1,6}|[年月版第已废止旧]|已废止| |, |-|/|\\.|\\(){0,14}",
        // Long titles too (the token path past 64 bytes).
        repeat in 1usize..12,
    ) {
        for title in [title.clone(), title.repeat(repeat)] {
            if !title_may_have_markers(&title) {
                let parsed = parse_title(&title);
                proptest::prop_assert!(parsed.markers.is_empty() && !parsed.says_superseded, "{:?}", parsed);
            }
        }
    }

    /// The parser over reused buffers reads every title as the one that allocated every part
    /// did (titles made of markers, months, years, dates, CJK phrases and plain words).
    #[test]
    fn the_buffered_parser_reads_titles_as_the_reference_does(
        title in "[ -~]{0,40}|\\PC{0,30}|((19|20)[0-9]{2}|[0-9]{1,2}|[0-9]{4}[./-][0-9]{1,2}([./-][0-9]{1,2})?|v[0-9](\\.[0-9])?|\
            (edition|version|ver|rev|revision|superseded|obsolete|current|draft|jan|october|may|sept|api|policy|guide)|\
            [a-zA-Z]{1,6}|[年月日号版第起已废止旧新现行被取代预览正式]|已废止|旧版|预览版|现行版| |, |\\(|Ⅻ|ﬁ|２|。){0,14}"
    ) {
        let got = parse_title(&title);
        proptest::prop_assert_eq!(&got, &reference::parse_title(&title));
        // Twice: the buffers left by one title change nothing for the next.
        proptest::prop_assert_eq!(parse_title(&title), got);
    }
}
