//! Entity linking: names in a question become template parameters.
//!
//! A question like "李娜买的投影仪送到了吗？" names a customer, not an order number, so no
//! template's pattern fires. A `lookups` entry in the config is a read-only query listing the
//! values of one parameter and the names they go by:
//!
//! ```yaml
//! lookups:
//!   - name: customers
//!     sql: "SELECT id AS value, name AS label FROM customers"
//!     param: customer_id
//!     refresh: 5m
//! ```
//!
//! Each label is matched as a whole and by its parts in each script (张伟 and "Zhang Wei" from
//! "张伟 Zhang Wei"); a CJK part matches anywhere in the question, a Latin part on word
//! boundaries, case-insensitively; the longest match wins. A linked value fills that parameter
//! of every template that has it, and a template whose pattern would have captured that
//! parameter counts as matched. The vocabulary holds no data a user receives: the templates'
//! permission predicates still decide which rows come back. Tables are loaded on first use and
//! reloaded when older than `refresh`. A failed load keeps the tables it had and is not tried
//! again at once: after the n-th failure in a row, the next try waits 2^(n−1) s (at most
//! [`MAX_BACKOFF`]), so searches do not each wait for a database that is down ([`Reload`]).

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use fedsearch_core::text::is_cjk;

/// The names of one parameter's values.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    pub param: String,
    /// (lowercased name variant, value), longest variants first.
    pub names: Vec<(String, String)>,
}

/// Every loaded lookup.
#[derive(Debug, Clone, Default)]
pub struct Lookups {
    pub tables: Vec<Lookup>,
}

/// The ways a label can be written in a question: whole, its CJK runs, its Latin words.
pub fn variants(label: &str) -> Vec<String> {
    let whole: String = label.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut out = vec![whole.clone()];
    let mut run = String::new();
    for c in whole.chars().chain(std::iter::once(' ')) {
        if is_cjk(c) {
            run.push(c);
        } else {
            if run.chars().count() >= 2 {
                out.push(std::mem::take(&mut run));
            }
            run.clear();
        }
    }
    // A long CJK name is also written in part (杭州青禾物流 → 青禾物流): every 4+ character
    // stretch of it; stretches two labels share are dropped as ambiguous in `Lookup::new`.
    let runs: Vec<Vec<char>> =
        out.iter().filter(|v| v.chars().all(is_cjk) && v.chars().count() > 4).map(|v| v.chars().collect()).collect();
    for chars in runs {
        for len in 4..chars.len() {
            for start in 0..=chars.len() - len {
                out.push(chars[start..start + len].iter().collect());
            }
        }
    }
    let latin: String = whole.chars().map(|c| if is_cjk(c) { ' ' } else { c }).collect();
    let latin = latin.split_whitespace().collect::<Vec<_>>().join(" ");
    if latin.chars().filter(|c| c.is_alphanumeric()).count() >= 4 {
        out.push(latin);
    }
    out.retain(|v| v.chars().count() >= 2);
    out.sort();
    out.dedup();
    out
}

fn boundary(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric() || is_cjk(c))
}

/// Whether `name` (lower-cased) occurs in `text` (lower-cased): CJK anywhere, Latin on word
/// boundaries (a trailing plural `s` allowed).
pub fn found(text: &str, name: &str) -> bool {
    if name.chars().any(is_cjk) {
        return text.contains(name);
    }
    text.match_indices(name).any(|(i, _)| {
        boundary(text, i) && {
            let end = i + name.len();
            text[end..].chars().next().is_none_or(|c| {
                !c.is_alphanumeric()
                    || is_cjk(c)
                    || c == 's' && text[end + 1..].chars().next().is_none_or(|c| !c.is_alphanumeric())
            })
        }
    })
}

impl Lookup {
    pub fn new(param: &str, rows: impl IntoIterator<Item = (String, String)>) -> Lookup {
        let mut names: Vec<(String, String)> = rows
            .into_iter()
            .flat_map(|(value, label)| variants(&label).into_iter().map(move |v| (v, value.clone())))
            .collect();
        names.sort();
        names.dedup();
        // A name that stands for two values says nothing.
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for (n, _) in &names {
            *count.entry(n.clone()).or_default() += 1;
        }
        names.retain(|(n, _)| count[n] == 1);
        names.sort_by(|a, b| b.0.chars().count().cmp(&a.0.chars().count()).then_with(|| a.cmp(b)));
        Lookup { param: param.to_string(), names }
    }
}

impl Lookups {
    /// Parameter → value for every lookup whose names occur in `text`.
    pub fn link(&self, text: &str) -> BTreeMap<String, String> {
        let lowered = text.to_lowercase();
        let mut out = BTreeMap::new();
        for t in &self.tables {
            if let Some((_, value)) = t.names.iter().find(|(name, _)| found(&lowered, name)) {
                out.entry(t.param.clone()).or_insert_with(|| value.clone());
            }
        }
        out
    }
}

/// The longest wait before trying a failed load again.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The loaded tables and when to load them again.
#[derive(Debug, Default)]
pub struct Reload {
    /// When the tables were loaded (`None`: never).
    loaded_at: Option<Instant>,
    pub tables: Arc<Lookups>,
    /// Failed loads since the last success.
    failures: u32,
    /// No load before this instant (after a failure).
    retry_at: Option<Instant>,
}

impl Reload {
    /// Whether a load is due at `now`: never loaded or older than `refresh`, and not backing off.
    pub fn due(&self, now: Instant, refresh: Duration) -> bool {
        if self.retry_at.is_some_and(|at| now < at) {
            return false;
        }
        self.loaded_at.is_none_or(|at| now.saturating_duration_since(at) >= refresh)
    }

    pub fn loaded(&mut self, now: Instant, tables: Lookups) {
        *self = Reload { loaded_at: Some(now), tables: Arc::new(tables), failures: 0, retry_at: None };
    }

    /// A failed load at `now`: the tables stay, the next try waits (see the module docs).
    pub fn failed(&mut self, now: Instant) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let wait = Duration::from_secs(1u64 << (self.failures - 1).min(16)).min(MAX_BACKOFF);
        self.retry_at = Some(now + wait);
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_load_backs_off_doubling_and_a_success_resets_it() {
        let refresh = Duration::from_secs(300);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut r = Reload::default();
        assert!(r.due(t0, refresh), "never loaded");
        assert_eq!(r.failed(t0), Duration::from_secs(1));
        assert!(!r.due(t0, refresh) && r.due(at(1), refresh));
        assert_eq!(r.failed(at(1)), Duration::from_secs(2));
        assert!(!r.due(at(2), refresh) && r.due(at(3), refresh));
        for _ in 0..20 {
            assert!(r.failed(at(3)) <= MAX_BACKOFF);
        }
        assert_eq!(r.failed(at(3)), MAX_BACKOFF);
        assert!(!r.due(at(62), refresh) && r.due(at(63), refresh));
        r.loaded(at(63), customers());
        assert_eq!(r.tables.tables.len(), 1);
        assert!(!r.due(at(64), refresh), "fresh");
        assert!(r.due(at(363), refresh), "older than refresh");
        assert_eq!(r.failed(at(363)), Duration::from_secs(1), "a success starts the doubling again");
        assert_eq!(r.tables.tables.len(), 1, "a failure keeps the tables");
    }

    fn customers() -> Lookups {
        let rows =
            [("C1001", "张伟 Zhang Wei"), ("C1002", "Alice Wang"), ("C1003", "李娜 Li Na"), ("C1004", "Tom Baker")];
        Lookups { tables: vec![Lookup::new("customer_id", rows.iter().map(|(v, l)| (v.to_string(), l.to_string())))] }
    }

    #[test]
    fn a_label_is_written_whole_or_in_one_script() {
        assert_eq!(variants("张伟 Zhang Wei"), vec!["zhang wei", "张伟", "张伟 zhang wei"]);
        assert_eq!(variants("Tom Baker"), vec!["tom baker"]);
    }

    #[test]
    fn names_in_either_script_link_and_parts_of_words_do_not() {
        let l = customers();
        assert_eq!(l.link("李娜买的投影仪送到了吗？").get("customer_id").map(String::as_str), Some("C1003"));
        assert_eq!(l.link("Was Zhang Wei's refund paid?").get("customer_id").map(String::as_str), Some("C1001"));
        assert_eq!(l.link("When will TOM BAKER get it").get("customer_id").map(String::as_str), Some("C1004"));
        assert!(l.link("Li Nan called").is_empty(), "`li na` inside `li nan` is another name");
        assert!(l.link("天气怎么样").is_empty());
    }

    #[test]
    fn a_long_chinese_name_links_in_part_unless_the_part_is_shared() {
        let rows = [("ORG-301", "杭州青禾物流 Qinghe Logistics"), ("ORG-302", "杭州青禾科技 Qinghe Tech")];
        let l =
            Lookups { tables: vec![Lookup::new("org_id", rows.iter().map(|(v, l)| (v.to_string(), l.to_string())))] };
        assert_eq!(l.link("给青禾物流的补偿为什么还是草稿").get("org_id").map(String::as_str), Some("ORG-301"));
        assert!(l.link("杭州青禾的发票").is_empty(), "杭州青禾 is both");
        assert_eq!(l.link("qinghe tech invoices").get("org_id").map(String::as_str), Some("ORG-302"));
    }
}
