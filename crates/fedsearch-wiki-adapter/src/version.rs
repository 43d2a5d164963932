//! Version metadata of wiki pages: what a page's own text says about its version, and what
//! page ids imply, as `SourceHit.version`.
//!
//! **Version lines.** Wiki pages state their version in their text, near the top:
//! `Status: superseded — replaced by [[public:return_policy]] (effective 2026-10-01)`,
//! `Status: current, effective 2026-10-01, supersedes [[public:return_policy_2025]]`,
//! `状态：已废止，由 [[public:return_policy]] 取代`, `生效日期：2026-10-01`, or a banner like
//! `**现行版本 / CURRENT**：2026 版，自 2026-10-01 起生效，取代 [[public:return_policy_2025|…]]`.
//! The first `versions.scan_lines` lines of a page are normalised (`[[id|label]]` → `[[id]]`,
//! `**`, `__`, `''`, heading `=` and list bullets removed) and matched against a list of
//! patterns, each of one kind (see [`VersionPatternKind`]); [`default_patterns`] covers English
//! and Chinese, and `versions.patterns` in the config replaces it. Per kind the first match
//! wins. An `effective` date on a line that names a successor is the successor's date and is
//! ignored. Link targets are resolved like DokuWiki does (relative to the page's namespace,
//! lowercased, spaces → `_`).
//!
//! **Page ids.** An id ending in `_<year>` (`public:return_policy_2025`) whose base id
//! (`public:return_policy`) is in the same results is the superseded version of the base page,
//! unless its text says otherwise. Links stated on one page fill in the other page of the pair
//! when both are in the results.
//!
//! **Result.** `family` is the current page's id (following `superseded_by` within the
//! results), `status` is `current`/`superseded` (stated, else implied by the links), `label` a
//! stated label or the id's year, `effective_at` the stated date at 00:00 UTC. A page with no
//! status, link or date gets no `version`.
//!
//! **Reading pages.** Search results carry only a snippet, so [`crate::source`] reads the text
//! of the best-ranked hits (`versions.lookups`) with `wiki.getPage` AS THE USER, concurrently,
//! within the sub-query's deadline. Only pages the user's own search just returned are read, so
//! nobody learns anything about a page they cannot read. The parsed [`Stated`] (never page
//! text) is cached per (page id, mtime): serving it to another user is safe because it is only
//! consulted for pages that user's own search returned, i.e. pages they can read themselves.

use std::collections::HashMap;

use fedsearch_proto::types::VersionInfo;
use regex::Regex;

use crate::config::{VersionPatternConfig, VersionPatternKind};

/// `current` / `superseded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Current,
    Superseded,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Current => "current",
            Status::Superseded => "superseded",
        }
    }
}

/// What one page's text states about its version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stated {
    pub status: Option<Status>,
    pub supersedes: Option<String>,
    pub superseded_by: Option<String>,
    /// `YYYY-MM-DD`.
    pub effective: Option<chrono::NaiveDate>,
    pub label: Option<String>,
}

impl Stated {
    fn is_empty(&self) -> bool {
        self.status.is_none() && self.supersedes.is_none() && self.superseded_by.is_none() && self.effective.is_none()
    }
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    kind: VersionPatternKind,
    regex: Regex,
}

impl Pattern {
    /// Compiles a configured pattern; the error names what is wrong (bad syntax, missing group).
    pub fn compile(config: &VersionPatternConfig) -> Result<Self, String> {
        let regex = Regex::new(&config.regex)
            .map_err(|e| format!("invalid regex: {}", e.to_string().lines().last().unwrap_or("")))?;
        let (kind, group) = match config.kind {
            VersionPatternKind::Supersedes => ("supersedes", Some("id")),
            VersionPatternKind::SupersededBy => ("superseded_by", Some("id")),
            VersionPatternKind::Effective => ("effective", Some("date")),
            VersionPatternKind::Label => ("label", Some("label")),
            VersionPatternKind::Current => ("current", None),
            VersionPatternKind::Superseded => ("superseded", None),
        };
        if let Some(g) = group
            && !regex.capture_names().flatten().any(|n| n == g)
        {
            return Err(format!("a `{kind}` pattern needs a named group `(?P<{g}>…)`"));
        }
        Ok(Self { kind: config.kind, regex })
    }
}

const LINK: &str = r"\[\[(?P<id>[^\]|#?]+)";
const DATE: &str = r"(?P<date>\d{4}-\d{1,2}-\d{1,2}|\d{4}/\d{1,2}/\d{1,2}|\d{4}年\d{1,2}月\d{1,2}日)";

/// The built-in patterns (English and Chinese), all case-insensitive.
pub fn default_patterns() -> Vec<VersionPatternConfig> {
    use VersionPatternKind::*;
    let superseded_words = "superseded|obsolete|deprecated|retired|archived|replaced|已废止|已作废|废止|作废|已过期|已失效|失效|已被取代|已取代|历史版本";
    let current_words = "current|active|in effect|valid|现行|有效|生效中|当前|最新";
    let list = [
        (Superseded, format!(r"(?i)^(?:status|状态|版本状态)\s*[:：]\s*(?:{superseded_words})")),
        (Superseded, r"(?i)^(?:已废止|已作废|已失效|已过期|历史版本)\s*(?:/\s*(?:superseded|obsolete|deprecated)\s*)?[:：]".into()),
        (Superseded, r"(?i)^(?:superseded|obsolete|deprecated)\s*[:：]".into()),
        (Superseded, r"(?i)\bthis (?:page|version|policy|document|edition|runbook) (?:is|has been|was) (?:now )?(?:superseded|obsolete|deprecated|replaced)".into()),
        (Current, format!(r"(?i)^(?:status|状态|版本状态)\s*[:：]\s*(?:{current_words})")),
        (Current, r"(?i)^(?:现行版本|当前版本|最新版本)\s*(?:/\s*current\s*)?[:：]".into()),
        (Current, r"(?i)^current(?: version)?\s*[:：]".into()),
        (Current, r"(?i)^this is the current\b".into()),
        (SupersededBy, format!(r"(?i)\b(?:superseded|replaced) by\s*{LINK}")),
        (SupersededBy, format!(r"(?:由|被)\s*{LINK}[^\]]*\]\]\s*(?:所)?(?:取代|替代|代替|替换)")),
        (Supersedes, format!(r"(?i)\b(?:supersedes|replaces)\s*{LINK}")),
        (Supersedes, format!(r"(?:取代|替代|代替|替换)了?\s*{LINK}")),
        (Supersedes, format!(r"(?i)^(?:previous version|上一版本|旧版本|旧版)\s*[:：]\s*{LINK}")),
        (Effective, format!(r"(?i)\b(?:effective|in effect|valid)(?:\s+(?:from|on|since|as of|date))?\s*[:：]?\s*{DATE}")),
        (Effective, format!(r"(?:生效日期|生效时间|生效)\s*[:：]?\s*{DATE}")),
        (Effective, format!(r"自\s*{DATE}\s*起?\s*(?:生效|施行|执行|实施)")),
        (Label, r"(?i)(?P<label>(?:19|20)\d{2})\s*(?:版|年版|edition)".into()),
        (Label, r"(?i)\b(?:version|版本)\s*[:：]?\s*(?P<label>v?\d+(?:\.\d+)*)\b".into()),
    ];
    list.into_iter().map(|(kind, regex)| VersionPatternConfig { kind, regex }).collect()
}

/// Reads version lines from page text.
#[derive(Debug, Clone)]
pub struct Parser {
    patterns: Vec<Pattern>,
    scan_lines: usize,
}

/// A line with links reduced to `[[target]]` and inline markup removed.
fn normalise_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("[[") {
        out.push_str(&rest[..i]);
        match rest[i + 2..].find("]]") {
            Some(end) => {
                let inner = &rest[i + 2..i + 2 + end];
                out.push_str("[[");
                out.push_str(inner.split('|').next().unwrap_or("").trim());
                out.push_str("]]");
                rest = &rest[i + 2 + end + 2..];
            }
            None => {
                out.push_str("[[");
                rest = &rest[i + 2..];
            }
        }
    }
    out.push_str(rest);
    let out = out.replace("**", "").replace("__", "").replace("''", "");
    out.trim().trim_matches('=').trim().trim_start_matches(['*', '-']).trim().to_string()
}

fn parse_date(s: &str) -> Option<chrono::NaiveDate> {
    let digits: Vec<u32> =
        s.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).filter_map(|p| p.parse().ok()).collect();
    match digits[..] {
        [y, m, d] => chrono::NaiveDate::from_ymd_opt(y as i32, m, d),
        _ => None,
    }
}

/// A link target as the page id DokuWiki would resolve it to from `page_id`, if it is one.
pub fn resolve_link(page_id: &str, target: &str) -> Option<String> {
    let t = target.trim();
    if t.contains("://") || t.contains('>') || t.starts_with("mailto:") || t.is_empty() {
        return None;
    }
    let ns = crate::dokuwiki::namespace_of(page_id);
    let joined = if let Some(abs) = t.strip_prefix(':') {
        abs.to_string()
    } else if let Some(rel) = t.strip_prefix(".:").or_else(|| t.strip_prefix('.').filter(|r| !r.starts_with('.'))) {
        if ns.is_empty() { rel.to_string() } else { format!("{ns}:{rel}") }
    } else if let Some(rel) = t.strip_prefix("..:") {
        let parent = crate::dokuwiki::namespace_of(ns);
        if parent.is_empty() { rel.to_string() } else { format!("{parent}:{rel}") }
    } else if t.contains(':') || ns.is_empty() {
        t.to_string()
    } else {
        format!("{ns}:{t}")
    };
    let id: String = joined
        .to_lowercase()
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect::<String>()
        .trim_matches(':')
        .to_string();
    crate::dokuwiki::valid_page_id(&id).then_some(id)
}

impl Parser {
    pub fn new(patterns: &[VersionPatternConfig], scan_lines: usize) -> Result<Self, String> {
        let patterns = patterns
            .iter()
            .enumerate()
            .map(|(i, p)| Pattern::compile(p).map_err(|e| format!("pattern {i}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns, scan_lines })
    }

    /// The built-in patterns.
    pub fn with_defaults(scan_lines: usize) -> Self {
        Self::new(&default_patterns(), scan_lines).expect("built-in version patterns compile")
    }

    /// What the page `page_id`'s text states about its version.
    pub fn parse(&self, page_id: &str, text: &str) -> Stated {
        let mut stated = Stated::default();
        for raw in text.lines().filter(|l| !l.trim().is_empty()).take(self.scan_lines) {
            let line = normalise_line(raw);
            let names_successor =
                self.patterns.iter().any(|p| p.kind == VersionPatternKind::SupersededBy && p.regex.is_match(&line));
            for p in &self.patterns {
                let Some(caps) = p.regex.captures(&line) else { continue };
                let group = |g: &str| caps.name(g).map(|m| m.as_str().to_string());
                match p.kind {
                    VersionPatternKind::Current => {
                        stated.status.get_or_insert(Status::Current);
                    }
                    VersionPatternKind::Superseded => {
                        stated.status.get_or_insert(Status::Superseded);
                    }
                    VersionPatternKind::Supersedes => {
                        if stated.supersedes.is_none() {
                            stated.supersedes =
                                group("id").and_then(|t| resolve_link(page_id, &t)).filter(|id| id != page_id);
                        }
                    }
                    VersionPatternKind::SupersededBy => {
                        if stated.superseded_by.is_none() {
                            stated.superseded_by =
                                group("id").and_then(|t| resolve_link(page_id, &t)).filter(|id| id != page_id);
                        }
                    }
                    VersionPatternKind::Effective => {
                        if stated.effective.is_none() && !names_successor {
                            stated.effective = group("date").as_deref().and_then(parse_date);
                        }
                    }
                    VersionPatternKind::Label => {
                        if stated.label.is_none() {
                            stated.label = group("label").filter(|l| !l.is_empty());
                        }
                    }
                }
            }
        }
        stated
    }
}

/// `public:return_policy_2025` → (`public:return_policy`, `2025`).
pub fn year_suffix(id: &str) -> Option<(&str, &str)> {
    let (base, year) = id.rsplit_once('_')?;
    let ok = year.len() == 4
        && year.bytes().all(|b| b.is_ascii_digit())
        && (year.starts_with("19") || year.starts_with("20"));
    (ok && !base.is_empty() && !base.ends_with(':')).then_some((base, year))
}

/// The `version` of every hit, in order: `hits` pairs a page id with what its text stated
/// (`None` when it was not read).
pub fn infer(hits: &[(String, Option<Stated>)]) -> Vec<Option<VersionInfo>> {
    let index: HashMap<&str, usize> = hits.iter().enumerate().map(|(i, (id, _))| (id.as_str(), i)).collect();
    let mut facts: Vec<Stated> = hits.iter().map(|(_, s)| s.clone().unwrap_or_default()).collect();
    let stated_status: Vec<Option<Status>> = facts.iter().map(|s| s.status).collect();

    // `_<year>` ids whose base page is in the results (newest year first, so it is what the base supersedes)
    let mut older: Vec<(usize, usize, &str)> = hits
        .iter()
        .enumerate()
        .filter_map(|(i, (id, _))| year_suffix(id).and_then(|(base, year)| index.get(base).map(|b| (i, *b, year))))
        .collect();
    older.sort_by(|a, b| b.2.cmp(a.2));
    for (old, base, year) in older {
        facts[old].label.get_or_insert_with(|| year.to_string());
        if stated_status[old] == Some(Status::Current) {
            continue; // its own text says otherwise
        }
        if facts[old].superseded_by.is_none() {
            facts[old].superseded_by = Some(hits[base].0.clone());
        }
        if stated_status[base] != Some(Status::Superseded) && facts[base].supersedes.is_none() {
            facts[base].supersedes = Some(hits[old].0.clone());
        }
    }
    // a link stated on one page of a pair fills in the other
    for i in 0..facts.len() {
        if let Some(&j) = facts[i].superseded_by.as_deref().and_then(|n| index.get(n))
            && facts[j].supersedes.is_none()
            && j != i
        {
            facts[j].supersedes = Some(hits[i].0.clone());
        }
        if let Some(&j) = facts[i].supersedes.as_deref().and_then(|o| index.get(o))
            && facts[j].superseded_by.is_none()
            && stated_status[j] != Some(Status::Current)
            && j != i
        {
            facts[j].superseded_by = Some(hits[i].0.clone());
        }
    }
    for f in &mut facts {
        if f.status.is_none() {
            f.status = if f.superseded_by.is_some() {
                Some(Status::Superseded)
            } else if f.supersedes.is_some() {
                Some(Status::Current)
            } else {
                None
            };
        }
    }
    let successor: HashMap<&str, &str> = hits
        .iter()
        .zip(&facts)
        .filter_map(|((id, _), f)| f.superseded_by.as_deref().map(|s| (id.as_str(), s)))
        .collect();
    hits.iter()
        .zip(facts.iter())
        .map(|((id, _), f)| {
            if f.is_empty() {
                return None;
            }
            let mut family = id.as_str();
            if f.status == Some(Status::Superseded) {
                family = f.superseded_by.as_deref().or_else(|| year_suffix(id).map(|(b, _)| b)).unwrap_or(id);
                for _ in 0..8 {
                    match successor.get(family) {
                        Some(next) if *next != id => family = next,
                        _ => break,
                    }
                }
            }
            Some(VersionInfo {
                family: family.to_string(),
                label: f.label.clone().or_else(|| year_suffix(id).map(|(_, y)| y.to_string())).unwrap_or_default(),
                effective_at: f
                    .effective
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|t| fedsearch_core::time::from_chrono(t.and_utc())),
                status: f.status.map(|s| s.as_str().to_string()).unwrap_or_default(),
                supersedes: f.supersedes.clone().unwrap_or_default(),
                superseded_by: f.superseded_by.clone().unwrap_or_default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parser() -> Parser {
        Parser::with_defaults(40)
    }

    fn date(s: &str) -> Option<chrono::NaiveDate> {
        chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
    }

    #[test]
    fn english_status_lines() {
        let s = parser().parse(
            "public:return_policy_2025",
            "====== Returns 2025 ======\nStatus: superseded — replaced by [[public:return_policy]] (effective 2026-10-01)\n",
        );
        assert_eq!(s.status, Some(Status::Superseded));
        assert_eq!(s.superseded_by.as_deref(), Some("public:return_policy"));
        assert_eq!(s.effective, None, "the date on the successor's line is the successor's");

        let s = parser().parse(
            "public:return_policy",
            "Status: current, effective 2026-10-01, supersedes [[public:return_policy_2025|the 2025 policy]]",
        );
        assert_eq!(s.status, Some(Status::Current));
        assert_eq!(s.supersedes.as_deref(), Some("public:return_policy_2025"));
        assert_eq!(s.effective, date("2026-10-01"));
    }

    #[test]
    fn chinese_status_lines_and_relative_links() {
        let s = parser().parse("hr:leave_2024", "状态：已废止，由 [[leave]] 取代\n生效日期：2024-01-01");
        assert_eq!(s.status, Some(Status::Superseded));
        assert_eq!(s.superseded_by.as_deref(), Some("hr:leave"));
        assert_eq!(s.effective, date("2024-01-01"));
        let s = parser().parse("hr:leave", "状态：现行\n生效日期：2025年3月1日\n取代 [[:hr:leave_2024]]");
        assert_eq!(
            (s.status, s.supersedes.as_deref(), s.effective),
            (Some(Status::Current), Some("hr:leave_2024"), date("2025-03-01"))
        );
    }

    #[test]
    fn the_sample_return_policies_state_their_versions() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample/wiki/public");
        let current = std::fs::read_to_string(format!("{root}/return_policy.txt")).unwrap();
        let old = std::fs::read_to_string(format!("{root}/return_policy_2025.txt")).unwrap();
        let c = parser().parse("public:return_policy", &current);
        assert_eq!(c.status, Some(Status::Current));
        assert_eq!(c.supersedes.as_deref(), Some("public:return_policy_2025"));
        assert_eq!(c.effective, date("2026-10-01"));
        assert_eq!(c.label.as_deref(), Some("2026"));
        let o = parser().parse("public:return_policy_2025", &old);
        assert_eq!(o.status, Some(Status::Superseded));
        assert_eq!(o.superseded_by.as_deref(), Some("public:return_policy"));
        assert_eq!(o.effective, None);
        assert_eq!(o.label.as_deref(), Some("2025"));
    }

    #[test]
    fn the_nimbus_pages_state_their_versions() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/nimbus/wiki");
        let parse = |id: &str| {
            let text = std::fs::read_to_string(format!("{root}/{}.txt", id.replace(':', "/"))).unwrap();
            parser().parse(id, &text)
        };
        let d = date;
        for (old, new, effective) in [
            ("nimbus:eng:oncall_policy_2025", "nimbus:eng:oncall_policy", "2026-09-01"),
            ("nimbus:hr:public:leave_policy_2025", "nimbus:hr:public:leave_policy", "2026-07-01"),
            ("nimbus:finance:refund_credit_policy_2025", "nimbus:finance:refund_credit_policy", "2026-10-01"),
        ] {
            let o = parse(old);
            assert_eq!(
                (o.status, o.superseded_by.as_deref(), o.effective),
                (Some(Status::Superseded), Some(new), None),
                "{old}"
            );
            let n = parse(new);
            assert_eq!(
                (n.status, n.supersedes.as_deref(), n.effective),
                (Some(Status::Current), Some(old), d(effective)),
                "{new}"
            );
        }
        for id in [
            "nimbus:eng:deploy_runbook",
            "nimbus:eng:incident_response",
            "nimbus:hr:performance_review_2026",
            "nimbus:support:escalation_guide",
        ] {
            let s = parse(id);
            assert_eq!(
                (s.status, s.supersedes, s.superseded_by, s.effective),
                (Some(Status::Current), None, None, None),
                "{id}"
            );
        }
        assert_eq!(parse("nimbus:hr:public:expense_policy").effective, d("2026-09-15"));
    }

    #[test]
    fn ordinary_text_states_nothing() {
        let s = parser().parse(
            "support:runbook_x",
            "====== Payment timeout ======\nCheck the gateway. The fee is 12.\n  * Retry after 5 minutes\nSee [[public:return_policy]].",
        );
        assert_eq!(s, Stated::default());
        // only the first scan_lines lines count
        let late = format!("{}Status: superseded", "line\n".repeat(50));
        assert_eq!(parser().parse("a:b", &late).status, None);
    }

    #[test]
    fn links_resolve_like_dokuwiki() {
        assert_eq!(resolve_link("public:a", "b").as_deref(), Some("public:b"));
        assert_eq!(resolve_link("public:a", ":start").as_deref(), Some("start"));
        assert_eq!(resolve_link("public:x:a", "..:b").as_deref(), Some("public:b"));
        assert_eq!(resolve_link("public:a", ".:b").as_deref(), Some("public:b"));
        assert_eq!(resolve_link("public:a", "Other NS:Return Policy").as_deref(), Some("other_ns:return_policy"));
        assert_eq!(resolve_link("public:a", "https://example.com"), None);
        assert_eq!(resolve_link("public:a", "wp>Refund"), None);
    }

    #[test]
    fn configured_patterns_are_checked() {
        let bad = VersionPatternConfig { kind: VersionPatternKind::SupersededBy, regex: "replaced by (.*)".into() };
        assert!(Pattern::compile(&bad).unwrap_err().contains("(?P<id>"));
        let custom = [VersionPatternConfig { kind: VersionPatternKind::Superseded, regex: "^VERALTET".into() }];
        let p = Parser::new(&custom, 10).unwrap();
        assert_eq!(p.parse("a:b", "VERALTET seit 2020").status, Some(Status::Superseded));
        assert_eq!(p.parse("a:b", "Status: superseded").status, None);
    }

    #[test]
    fn year_suffixed_ids_are_superseded_by_their_base_in_the_same_results() {
        let hits = vec![
            ("public:return_policy".to_string(), None),
            ("public:return_policy_2025".to_string(), None),
            ("public:shipping_policy".to_string(), None),
            ("public:holiday_2024".to_string(), None),
        ];
        let v = infer(&hits);
        let current = v[0].as_ref().unwrap();
        assert_eq!(
            (current.family.as_str(), current.status.as_str(), current.supersedes.as_str()),
            ("public:return_policy", "current", "public:return_policy_2025")
        );
        let old = v[1].as_ref().unwrap();
        assert_eq!(
            (old.family.as_str(), old.status.as_str(), old.superseded_by.as_str(), old.label.as_str()),
            ("public:return_policy", "superseded", "public:return_policy", "2025")
        );
        assert!(v[2].is_none() && v[3].is_none(), "{v:?}");
    }

    #[test]
    fn stated_links_fill_the_other_page_and_stated_status_wins() {
        let new = Stated { status: Some(Status::Current), supersedes: Some("a:old".into()), ..Default::default() };
        let v = infer(&[("a:new".into(), Some(new)), ("a:old".into(), None)]);
        let old = v[1].as_ref().unwrap();
        assert_eq!(
            (old.status.as_str(), old.superseded_by.as_str(), old.family.as_str()),
            ("superseded", "a:new", "a:new")
        );
        // a year-suffixed page that says it is current is not demoted
        let says_current = Stated { status: Some(Status::Current), ..Default::default() };
        let v = infer(&[("a:plan".into(), None), ("a:plan_2027".into(), Some(says_current))]);
        let p2027 = v[1].as_ref().unwrap();
        assert_eq!((p2027.status.as_str(), p2027.superseded_by.as_str()), ("current", ""));
        assert!(v[0].is_none(), "{v:?}");
        // chains: family is the newest page
        let mid = Stated { superseded_by: Some("a:v3".into()), ..Default::default() };
        let first = Stated { superseded_by: Some("a:v2".into()), ..Default::default() };
        let v = infer(&[("a:v1".into(), Some(first)), ("a:v2".into(), Some(mid)), ("a:v3".into(), None)]);
        assert_eq!(v[0].as_ref().unwrap().family, "a:v3");
        assert_eq!(v[2].as_ref().unwrap().status, "current");
        assert_eq!(v[2].as_ref().unwrap().supersedes, "a:v2");
    }
}
