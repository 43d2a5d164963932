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
//! boundaries, case-insensitively; the longest match wins. A question may name several values of
//! one lookup ("compare the invoices of 张伟 and Li Na"): they are all linked, in the order named,
//! at most `max_values` ([`DEFAULT_MAX_VALUES`]). A template that declares the parameter
//! `multi: true` receives every one of them as a list (one bound placeholder each); a
//! single-valued parameter receives the first named ([`Linked`]). Linked values fill that
//! parameter of every template that has it, and a template whose pattern would have captured that
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

/// How many values of one lookup a question links unless `lookups[].max_values` says otherwise.
pub const DEFAULT_MAX_VALUES: usize = 8;

/// The names of one parameter's values.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    pub param: String,
    /// (lowercased name variant, value), longest variants first.
    pub names: Vec<(String, String)>,
    /// The most values one text links; the ones named later are dropped.
    pub max_values: usize,
}

/// What a question names: for each lookup's parameter, the values in the order they are named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Linked {
    /// Parameter → values, first named first, each once, at most the lookup's `max_values`.
    pub values: BTreeMap<String, Vec<String>>,
    /// Parameter → its lookup's `max_values`, when the text named more values than that.
    pub capped: BTreeMap<String, usize>,
}

impl Linked {
    /// The value named first for `param` (what a single-valued parameter receives).
    pub fn first(&self, param: &str) -> Option<&str> {
        self.values.get(param).and_then(|v| v.first()).map(String::as_str)
    }
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
        out.extend(short_names(&latin));
        out.push(latin);
    }
    out.retain(|v| v.chars().count() >= 2);
    out.sort();
    out.dedup();
    out
}

/// Legal forms people leave out when they name a company ("Nordlicht Möbel" for Nordlicht Möbel
/// GmbH).
const LEGAL_FORMS: &[&str] = &[
    "ag", "bhd", "bv", "co", "co.", "company", "corp", "corp.", "gmbh", "hk", "inc", "inc.", "kg", "limited", "llc",
    "ltd", "ltd.", "nv", "plc", "pte", "pte.", "pty", "pvt", "s.a.", "sa", "sdn", "srl",
];

/// Words too common to name a company on their own (the first word of many company names).
const GENERIC_FIRST_WORDS: &[&str] = &[
    "asia",
    "beijing",
    "china",
    "dongguan",
    "east",
    "euro",
    "first",
    "general",
    "global",
    "golden",
    "great",
    "guangzhou",
    "hangzhou",
    "international",
    "national",
    "ningbo",
    "north",
    "pacific",
    "royal",
    "shanghai",
    "shenzhen",
    "south",
    "suzhou",
    "united",
    "west",
];

/// The shorter ways a Latin name is said: without its legal form, and its leading words — two or
/// more, or the first alone when it is distinctive (six letters or more, not a generic word):
/// "Kessler Maschinenbau AG" is also "kessler maschinenbau" and "kessler". A short name two
/// labels share is dropped as ambiguous in [`Lookup::new`].
fn short_names(latin: &str) -> Vec<String> {
    let mut words: Vec<&str> = latin.split(' ').collect();
    while words.len() > 1 && words.last().is_some_and(|w| LEGAL_FORMS.contains(&w.trim_end_matches(','))) {
        words.pop();
    }
    let mut out = Vec::new();
    for k in 1..=words.len() {
        let first = words[0];
        let distinctive =
            first.chars().filter(|c| c.is_alphabetic()).count() >= 6 && !GENERIC_FIRST_WORDS.contains(&first);
        if k >= 2 || distinctive {
            out.push(words[..k].join(" "));
        }
    }
    out
}

fn boundary(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric() || is_cjk(c))
}

/// Whether `name` (lower-cased) occurs in `text` (lower-cased): CJK anywhere, Latin on word
/// boundaries (a trailing plural `s` allowed).
pub fn found(text: &str, name: &str) -> bool {
    found_at(text, name).is_some()
}

/// Where `name` first occurs in `text` (see [`found`]).
fn found_at(text: &str, name: &str) -> Option<usize> {
    occurrences(text, name).next()
}

/// Every place `name` occurs in `text` (see [`found`]).
pub(crate) fn occurrences<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    let cjk = name.chars().any(is_cjk);
    text.match_indices(name).map(|(i, _)| i).filter(move |&i| {
        cjk || boundary(text, i) && {
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
        Lookup { param: param.to_string(), names, max_values: DEFAULT_MAX_VALUES }
    }

    /// The same lookup linking at most `max_values` values per text.
    pub fn with_max_values(self, max_values: usize) -> Lookup {
        Lookup { max_values, ..self }
    }

    /// The values named in `lowered` (a lower-cased text), in the order named, each once. The
    /// text is read left to right: where several names start at one place the longest is the
    /// one meant, and a name inside a longer one already read (`kessler` in "kessler
    /// maschinenbau") is not named again.
    fn named(&self, lowered: &str) -> Vec<String> {
        // (where, rank of the name: longest first, where it ends, value)
        let mut found: Vec<(usize, usize, usize, &str)> = self
            .names
            .iter()
            .enumerate()
            .flat_map(|(order, (name, value))| {
                occurrences(lowered, name).map(move |at| (at, order, at + name.len(), value.as_str()))
            })
            .collect();
        found.sort_unstable();
        let mut out: Vec<String> = Vec::new();
        let mut read_to = 0;
        for (at, _, end, value) in found {
            if at < read_to {
                continue;
            }
            read_to = end;
            if !out.iter().any(|v| v == value) {
                out.push(value.to_string());
            }
        }
        out
    }
}

impl Lookups {
    /// The values every lookup's names link in `text`, in the order named. When a text names
    /// several values of one lookup ("恒泰机械 的货发给 Kessler"), the first is what a single-valued
    /// parameter receives; a list (`multi`) parameter receives them all, up to the lookup's
    /// `max_values`. Two lookups of one parameter: the first in config order that names any.
    pub fn link(&self, text: &str) -> Linked {
        let lowered = text.to_lowercase();
        let mut out = Linked::default();
        for t in &self.tables {
            if out.values.contains_key(&t.param) {
                continue;
            }
            let mut named = t.named(&lowered);
            if named.is_empty() {
                continue;
            }
            if named.len() > t.max_values {
                named.truncate(t.max_values);
                out.capped.insert(t.param.clone(), t.max_values);
            }
            out.values.insert(t.param.clone(), named);
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
        assert_eq!(l.link("李娜买的投影仪送到了吗？").first("customer_id"), Some("C1003"));
        assert_eq!(l.link("Was Zhang Wei's refund paid?").first("customer_id"), Some("C1001"));
        assert_eq!(l.link("When will TOM BAKER get it").first("customer_id"), Some("C1004"));
        assert!(l.link("Li Nan called").values.is_empty(), "`li na` inside `li nan` is another name");
        assert!(l.link("天气怎么样").values.is_empty());
    }

    #[test]
    fn a_company_links_by_its_name_without_the_legal_form_or_by_its_distinctive_first_word() {
        let rows = [
            ("CU-2001", "Nordlicht Möbel GmbH"),
            ("CU-2006", "Kessler Maschinenbau AG"),
            ("CU-1003", "深圳迅达电子 Xunda Electronics"),
            ("CU-1016", "深圳迅达科技 Xunda Technology"),
            ("CU-3007", "珠江玩具 Pearl Delta Toys Ltd"),
            ("CU-9001", "Global Freight Partners Ltd"),
            ("CU-5001", "Harbourline Pte. Ltd."),
        ];
        let l = Lookups {
            tables: vec![Lookup::new("customer_id", rows.iter().map(|(v, l)| (v.to_string(), l.to_string())))],
        };
        let linked = |q: &str| l.link(q).first("customer_id").map(str::to_string);
        assert_eq!(linked("Nordlicht Möbel says the strike days should not count").as_deref(), Some("CU-2001"));
        assert_eq!(linked("Kessler's machine parts that left Shanghai").as_deref(), Some("CU-2006"));
        assert_eq!(linked("pearl delta toys claim").as_deref(), Some("CU-3007"));
        assert_eq!(linked("Xunda Technology invoices").as_deref(), Some("CU-1016"));
        assert_eq!(linked("what did Xunda order"), None, "xunda is two customers");
        assert_eq!(linked("the Pearl River Delta typhoon"), None, "pearl is too short to stand alone");
        assert_eq!(linked("global freight rates this week"), Some("CU-9001".into()), "two leading words name it");
        assert_eq!(linked("global rates"), None, "a generic first word never stands alone");
        assert_eq!(linked("Harbourline's invoices").as_deref(), Some("CU-5001"), "Pte. Ltd. is a legal form");
        assert_eq!(short_names("harbourline pte. ltd."), ["harbourline"]);
        let rows = [("CU-1108", "上海恒泰机械 Hengtai Machinery"), ("CU-2006", "Kessler Maschinenbau AG")];
        let l = Lookups {
            tables: vec![Lookup::new("customer_id", rows.iter().map(|(v, l)| (v.to_string(), l.to_string())))],
        };
        assert_eq!(
            l.link("恒泰机械 7 月中旬发给 Kessler 的那批机器配件").first("customer_id"),
            Some("CU-1108"),
            "two customers: the one named first"
        );
        assert_eq!(l.link("Kessler's parts from Hengtai Machinery").first("customer_id"), Some("CU-2006"));
    }

    #[test]
    fn a_long_chinese_name_links_in_part_unless_the_part_is_shared() {
        let rows = [("ORG-301", "杭州青禾物流 Qinghe Logistics"), ("ORG-302", "杭州青禾科技 Qinghe Tech")];
        let l =
            Lookups { tables: vec![Lookup::new("org_id", rows.iter().map(|(v, l)| (v.to_string(), l.to_string())))] };
        assert_eq!(l.link("给青禾物流的补偿为什么还是草稿").first("org_id"), Some("ORG-301"));
        assert!(l.link("杭州青禾的发票").values.is_empty(), "杭州青禾 is both");
        assert_eq!(l.link("qinghe tech invoices").first("org_id"), Some("ORG-302"));
    }

    #[test]
    fn every_value_a_question_names_is_linked_in_the_order_named() {
        let l = customers();
        let all = |q: &str| l.link(q).values.get("customer_id").cloned().unwrap_or_default();
        assert_eq!(all("compare the orders of Tom Baker and 张伟"), ["C1004", "C1001"]);
        assert_eq!(all("张伟和李娜的订单，还有 Zhang Wei 的退款"), ["C1001", "C1003"], "each value once");
        assert_eq!(all("张伟 Zhang Wei 的订单"), ["C1001"], "the whole label is one name");
        assert_eq!(all("李娜买的投影仪送到了吗？"), ["C1003"]);
        assert!(l.link("Li Nan and Tom Bakery").values.is_empty());
        let rows = [("CU-2006", "Kessler Maschinenbau AG"), ("CU-2007", "Maschinenbau Nord GmbH")];
        let l = Lookups {
            tables: vec![Lookup::new("customer_id", rows.iter().map(|(v, l)| (v.to_string(), l.to_string())))],
        };
        assert_eq!(
            l.link("kessler maschinenbau nord").values["customer_id"],
            ["CU-2006"],
            "a name inside a longer one already read is not named again"
        );
    }

    #[test]
    fn a_question_links_at_most_max_values_values_of_one_lookup() {
        let rows: Vec<(String, String)> =
            (1..=10).map(|i| (format!("E{i:02}"), format!("Estate{i:02} Gardens"))).collect();
        let l = Lookups { tables: vec![Lookup::new("estate", rows.clone())] };
        let every: Vec<String> = (1..=10).map(|i| format!("estate{i:02} gardens")).collect();
        let linked = l.link(&format!("invoices of {}", every.join(", ")));
        let want: Vec<String> = (1..=DEFAULT_MAX_VALUES).map(|i| format!("E{i:02}")).collect();
        assert_eq!(linked.values["estate"], want, "the first {DEFAULT_MAX_VALUES} named");
        assert_eq!(linked.capped.get("estate"), Some(&DEFAULT_MAX_VALUES));
        let l = Lookups { tables: vec![Lookup::new("estate", rows).with_max_values(2)] };
        let linked = l.link("Estate07 Gardens vs Estate03 Gardens");
        assert_eq!(
            (linked.values["estate"].clone(), linked.capped.is_empty()),
            (vec!["E07".into(), "E03".into()], true)
        );
        let linked = l.link("Estate07 Gardens, Estate03 Gardens and Estate05 Gardens");
        assert_eq!(linked.values["estate"], ["E07", "E03"]);
        assert_eq!(linked.first("estate"), Some("E07"));
        assert_eq!(linked.capped.get("estate"), Some(&2));
    }
}
