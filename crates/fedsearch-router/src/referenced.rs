//! The records the answer's documents point to.
//!
//! A ticket about "the order SO20261004 failed to pay", a case note about booking BK26-10452, an
//! incident that lists the orders it hit: the question named none of those records, so the
//! records source (`kind: sql`) heard only words and its templates found nothing, yet the agent
//! needs the order's state beside the ticket. After merging, the router reads the first
//! [`SCAN`] hits (title, snippet, metadata) for ids that a records source's routing patterns
//! recognise, and that the list does not already hold and the question did not name (those were
//! asked already), and asks that source once more with just those ids, as the calling user (the
//! source applies its permission predicate as for any sub-query). Each row found goes just below
//! the hit that named it; the list keeps `top_k` hits. An id a document names may key no row
//! but name a group of them (a recall notice's number, which the devices it still concerns
//! carry): the rows that show it are found then ([`found`]).
//!
//! The other way round, the documents about the records: a row among the first [`SCAN`] hits
//! (the order a question about "yesterday's order" found by its date, a customer's account) has
//! tickets and cases about it that the question's words did not reach — they name the order, not
//! "yesterday". The document sources that answered are asked once more with the rows' ids as
//! entities (a search source pins a document whose id field holds one), and each document that
//! shows one of those ids goes just below its row.
//!
//! Documents the first hits cite by id that the list holds further down (an order on hold "until
//! the battery lot is fitted (FSN-2026-05-U1)") are lifted the same way ([`cited`]): no second
//! round is needed for them.
//!
//! The second round has what is left of the answer's budget, at most [`BUDGET`]; a source that
//! does not answer in time changes nothing. Only [`MAX_IDS`] ids are asked per search.

use std::collections::HashMap;

use fedsearch_proto::types::{Explanation, Hit, SourceHit};
use regex::Regex;
use tokio::{sync::mpsc, time::Instant};

use crate::{
    current::key,
    fanout::{self, Dispatch, SourceEvent},
};

/// How many of the first hits are read for ids.
pub const SCAN: usize = 5;
/// How many ids one search asks for at most.
pub const MAX_IDS: usize = 4;
/// The share of the naming hit's fused score a row starts re-scoring with.
pub const SHARE: f64 = 0.8;
/// The share of the citing hit's fused score a document it cites is lifted to when the question
/// asks why ([`cited`]).
pub const WHY_SHARE: f64 = 1.0;
/// The longest the second round may take.
pub const BUDGET: std::time::Duration = std::time::Duration::from_millis(400);

/// An id a hit names that a records source may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Index of the hit that names it.
    pub at: usize,
    pub source: String,
    pub id: String,
}

/// A records source: its name and the patterns of the ids it holds.
pub struct Records<'a> {
    pub source: &'a str,
    pub patterns: &'a [Regex],
}

/// Whether `hits` already hold record `id` of `source` (any template's row with that key).
fn listed(hits: &[Hit], source: &str, id: &str) -> bool {
    hits.iter().any(|h| {
        (h.source == source && key(&h.id).eq_ignore_ascii_case(id))
            || h.duplicates.iter().any(|d| d.source == source && key(&d.id).eq_ignore_ascii_case(id))
    })
}

/// The ids the first [`SCAN`] hits name that a records source recognises, in hit order, without
/// the ones the list holds or the question named (`asked`), at most [`MAX_IDS`].
pub fn wanted(hits: &[Hit], records: &[Records<'_>], asked: &[String]) -> Vec<Reference> {
    let mut out: Vec<Reference> = Vec::new();
    for (at, h) in hits.iter().enumerate().take(SCAN) {
        let texts = shown(&h.title, &h.snippet, &h.metadata);
        for text in texts {
            for r in records {
                for m in r.patterns.iter().flat_map(|p| p.find_iter(text)) {
                    let id = m.as_str();
                    let known = asked.iter().any(|a| a.eq_ignore_ascii_case(id))
                        || listed(hits, r.source, id)
                        || out.iter().any(|o| o.source == r.source && o.id.eq_ignore_ascii_case(id));
                    if !known && out.len() < MAX_IDS {
                        out.push(Reference { at, source: r.source.to_string(), id: id.to_string() });
                    }
                }
            }
        }
    }
    out
}

/// The ids of the rows among the first [`SCAN`] hits (hits of a `records` source, each row's
/// key: `orders:orders_placed:SO20261001` → `SO20261001`, when one of that source's patterns
/// matches the whole key: a row keyed `42` or `active` names nothing a document would show) that
/// the question did not name (`asked`), as one reference per document source to ask
/// (`documents`), at most [`MAX_IDS`] ids.
pub fn about(hits: &[Hit], records: &[Records<'_>], documents: &[&str], asked: &[String]) -> Vec<Reference> {
    let whole = |p: &Regex, id: &str| p.find(id).is_some_and(|m| m.start() == 0 && m.end() == id.len());
    let mut ids: Vec<(usize, &str)> = Vec::new();
    for (at, h) in hits.iter().enumerate().take(SCAN) {
        let id = key(&h.id);
        let known =
            asked.iter().any(|a| a.eq_ignore_ascii_case(id)) || ids.iter().any(|(_, i)| i.eq_ignore_ascii_case(id));
        let record = records.iter().any(|r| r.source == h.source && r.patterns.iter().any(|p| whole(p, id)));
        if record && !known && ids.len() < MAX_IDS {
            ids.push((at, id));
        }
    }
    documents
        .iter()
        .flat_map(|d| ids.iter().map(move |&(at, id)| Reference { at, source: d.to_string(), id: id.to_string() }))
        .collect()
}

/// What a hit shows, in order: its title, its snippet and its metadata values.
fn shown<'a>(title: &'a str, snippet: &'a str, metadata: &'a HashMap<String, String>) -> impl Iterator<Item = &'a str> {
    [title, snippet].into_iter().chain(metadata.values().map(String::as_str))
}

/// Whether one of `texts` shows `id` as a whole token, in any case ([`holds_token`]).
fn shows_token<'a>(mut texts: impl Iterator<Item = &'a str>, id: &str) -> bool {
    let id = id.to_lowercase();
    texts.any(|text| holds_token(&text.to_lowercase(), &id))
}

/// Whether `lowered` holds `id` (both lower-cased) as a whole token: not inside a longer id
/// (`FSN-2026-05` is not in `FSN-2026-05-U1`, nor `T-1` in `KT-1`), while a sentence's hyphen or
/// full stop after it ends it ("see FSN-2026-05.").
fn holds_token(lowered: &str, id: &str) -> bool {
    // The characters on one side of a match, nearest first: is the match part of a longer id?
    fn goes_on(mut side: impl Iterator<Item = char>) -> bool {
        match side.next() {
            Some(c) if c.is_alphanumeric() => true,
            Some('-' | '_' | '.' | '/') => side.next().is_some_and(char::is_alphanumeric),
            _ => false,
        }
    }
    lowered
        .match_indices(id)
        .any(|(i, _)| !goes_on(lowered[..i].chars().rev()) && !goes_on(lowered[i + id.len()..].chars()))
}

/// Whether `row` shows `id` in its title, snippet or metadata, as a whole token.
fn shows_id(row: &SourceHit, id: &str) -> bool {
    shows_token(shown(&row.title, &row.snippet, &row.metadata), id)
}

/// The hits for the documents returned about the rows ([`about`]): each document that shows one
/// of the ids its source was asked for, as a candidate just below the first row of that id
/// ([`SHARE`] of its fused score). A document the list already holds further down (found by
/// the question's words, weakly) is not repeated: it is lifted to that score instead (`hits`
/// is changed). Returns the new hits and the ids of the documents found about a dated row: the
/// question's window dated that row ("yesterday's order"), not them, so they are not held to
/// it. A row with no date (a customer, a hospital's account) names who, not when: a ticket
/// about the hospital is still held to "in September".
pub fn found_about(hits: &mut [Hit], wanted: &[Reference], rows: Vec<(String, SourceHit)>) -> (Vec<Hit>, Vec<String>) {
    let mut out: Vec<Hit> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for (source, row) in rows {
        let Some(r) = wanted.iter().find(|r| r.source == source && shows_id(&row, &r.id)) else { continue };
        let id = format!("{source}:{}", row.local_id);
        let floor = hits[r.at].fused_score * SHARE;
        let dated = hits[r.at].updated_at.is_some();
        if let Some(h) = hits.iter_mut().find(|h| h.id == id || h.duplicates.iter().any(|d| d.id == id)) {
            if h.fused_score < floor {
                h.fused_score = floor;
                if dated {
                    ids.push(h.id.clone());
                }
            }
            continue;
        }
        if out.iter().any(|h| h.id == id) {
            continue;
        }
        let mut hit = hit_of(&source, row, &hits[r.at], "about");
        hit.fused_score = floor;
        if dated {
            ids.push(hit.id.clone());
        }
        out.push(hit);
    }
    (out, ids)
}

/// The shortest key a hit is found cited by: shorter ones (`42`, `A1`) stand for too much else.
const MIN_CITED_KEY: usize = 4;

/// The documents the first [`SCAN`] hits cite by id (an order on hold "until battery lot B2609 is
/// fitted (FSN-2026-05-U1)", a ticket that names its recall notice): each listed hit of another
/// source whose key a first hit shows is lifted to [`SHARE`] of that hit's fused score, as a
/// document found about a row is, unless it scores that already; for a question that asks why
/// (`why`), to [`WHY_SHARE`] of it: the document a record cites is then the reason asked for.
/// Returns the ids lifted.
pub fn cited(hits: &mut [Hit], why: bool) -> Vec<String> {
    let keys: Vec<String> = hits.iter().map(|h| key(&h.id).to_lowercase()).collect();
    let mut lifted = Vec::new();
    let share = if why { WHY_SHARE } else { SHARE };
    for at in 0..hits.len().min(SCAN) {
        let by = &hits[at];
        let floor = by.fused_score * share;
        let lowered: Vec<String> = shown(&by.title, &by.snippet, &by.metadata).map(str::to_lowercase).collect();
        let source = by.source.clone();
        for (j, id) in keys.iter().enumerate() {
            let h = &hits[j];
            if j == at || h.source == source || h.fused_score >= floor || id.len() < MIN_CITED_KEY {
                continue;
            }
            if lowered.iter().any(|text| holds_token(text, id)) {
                lifted.push(h.id.clone());
                hits[j].fused_score = floor;
            }
        }
    }
    lifted
}

/// What every second-round sub-query shares with the search: its clock, explicit filters and
/// the caller's credentials per source.
pub struct Round<'a> {
    pub filters: Option<fedsearch_proto::types::Filters>,
    pub credentials: &'a HashMap<String, fedsearch_proto::types::Secret>,
    pub as_of: Option<prost_types::Timestamp>,
    pub explicit_as_of: bool,
    pub time_zone: String,
}

/// One sub-query per source, carrying only that source's ids (no template: the source's
/// patterns pick the lookup).
pub fn dispatches(wanted: &[Reference], round: &Round<'_>) -> Vec<Dispatch> {
    let mut by_source: Vec<(String, Vec<String>)> = Vec::new();
    for r in wanted {
        match by_source.iter_mut().find(|(s, _)| *s == r.source) {
            Some((_, ids)) => ids.push(r.id.clone()),
            None => by_source.push((r.source.clone(), vec![r.id.clone()])),
        }
    }
    by_source
        .into_iter()
        .map(|(source, ids)| {
            let text = ids.join(" ");
            Dispatch {
                credential: round.credentials.get(&source).cloned(),
                source,
                text: text.clone(),
                filters: round.filters.clone(),
                limit: (ids.len() as u32 * 2).max(4),
                template: String::new(),
                params: HashMap::new(),
                original_text: text,
                terms: ids.clone(),
                entities: ids,
                as_of: round.as_of,
                explicit_as_of: round.explicit_as_of,
                time_range_from_question: false,
                time_zone: round.time_zone.clone(),
            }
        })
        .collect()
}

/// The fused hit for a row of `source` that hit `by` named (`how`: "named by"), or a document
/// about the row `by` ("about").
fn hit_of(source: &str, row: SourceHit, by: &Hit, how: &str) -> Hit {
    let summary = format!("{how} {}", by.id);
    Hit {
        id: format!("{source}:{}", row.local_id),
        source: source.to_string(),
        title: row.title,
        snippet: row.snippet,
        url: row.url,
        updated_at: row.updated_at,
        rank_in_source: row.rank,
        source_score: row.score,
        fused_score: by.fused_score,
        metadata: row.metadata,
        full_text_ref: if row.full_text_ref.is_empty() {
            String::new()
        } else {
            format!("{source}:{}", row.full_text_ref)
        },
        doc_type: row.doc_type,
        explanation: Some(Explanation { method: "referenced".into(), summary, ..Default::default() }),
        version: row.version,
        ..Default::default()
    }
}

/// The hits for the rows returned: each as a candidate whose fused score is [`SHARE`] of the
/// score of the hit that named it (the first such hit). A row is asked for when it is keyed by
/// an id asked for, or when it shows an id that a document (not a row of its own source) named
/// and that no returned row is keyed by: a group's id, such as the recall notice whose devices
/// still wait for it ([`names_a_group`]). A row the list already holds, or one no hit asked
/// for, is left out.
pub fn found(hits: &[Hit], wanted: &[Reference], rows: Vec<(String, SourceHit)>) -> Vec<Hit> {
    // Whether each reference names a group, decided once for all rows.
    let groups: Vec<bool> = wanted.iter().map(|r| names_a_group(hits, r, &rows)).collect();
    let mut out: Vec<Hit> = Vec::new();
    for (source, row) in rows {
        let row_key = key(&row.local_id);
        let Some(r) = wanted.iter().zip(&groups).find_map(|(r, &group)| {
            let asked = r.source == source && (row_key.eq_ignore_ascii_case(&r.id) || (group && shows_id(&row, &r.id)));
            asked.then_some(r)
        }) else {
            continue;
        };
        if listed(hits, &source, row_key) || out.iter().any(|h| h.source == source && key(&h.id) == row_key) {
            continue;
        }
        let mut hit = hit_of(&source, row, &hits[r.at], "named by");
        hit.fused_score *= SHARE;
        out.push(hit);
    }
    out
}

/// Whether `r` names a group of rows rather than one: a document named it (a row naming its
/// customer asks for the customer, not for every row that shows the customer), not as its own
/// id (a notice shows its number whatever it is asked about: "what was the root cause" of a
/// recall asks for no devices), and no returned row of its source (`rows`) is keyed by it.
fn names_a_group(hits: &[Hit], r: &Reference, rows: &[(String, SourceHit)]) -> bool {
    let by = &hits[r.at];
    by.source != r.source
        && !key(&by.id).eq_ignore_ascii_case(&r.id)
        && !rows.iter().any(|(s, row)| *s == r.source && key(&row.local_id).eq_ignore_ascii_case(&r.id))
}

/// Asks the sources of `wanted` for its ids (see the module docs): every answer, with its
/// source, for [`found`] (rows by id) or [`found_about`] (documents that show an id).
pub async fn ask(
    registry: &crate::registry::Registry,
    user: &fedsearch_core::Identity,
    wanted: &[Reference],
    round: &Round<'_>,
    until: Instant,
) -> Vec<(String, SourceHit)> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let until = until.min(Instant::now() + BUDGET);
    let subs = dispatches(wanted, round);
    let expected = subs.len();
    let (tx, mut rx) = mpsc::channel::<SourceEvent>(64);
    // Dropped at the end: a source still working is cancelled.
    let _tasks = fanout::start(registry, user, subs, until, tx);
    let mut rows: Vec<(String, SourceHit)> = Vec::new();
    let mut done = 0;
    while done < expected {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(SourceEvent::Batch { source, hits })) => rows.extend(hits.into_iter().map(|h| (source.clone(), h))),
            Ok(Some(SourceEvent::Done(_))) => done += 1,
            Ok(None) | Err(_) => break,
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, title: &str, meta: &[(&str, &str)]) -> Hit {
        Hit {
            id: id.into(),
            source: id.split(':').next().unwrap().into(),
            title: title.into(),
            metadata: meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        }
    }

    fn orders() -> Vec<Regex> {
        vec![Regex::new(r"SO\d{8}").unwrap(), Regex::new(r"RF\d{4}").unwrap()]
    }

    #[test]
    fn ids_the_first_hits_name_are_wanted_unless_listed_or_asked() {
        let p = orders();
        let records = [Records { source: "orders", patterns: &p }];
        let hits = vec![
            hit("tickets:T-1", "Payment failed for SO20261004", &[("order_no", "SO20261004"), ("refund", "RF3002")]),
            hit("orders:order_by_number:SO20261001", "SO20261001 earbuds", &[]),
            hit("tickets:T-2", "Where is SO20261001?", &[("order_no", "SO20261001")]),
        ];
        let w = wanted(&hits, &records, &["RF3002".to_string()]);
        assert_eq!(w, vec![Reference { at: 0, source: "orders".into(), id: "SO20261004".into() }], "{w:?}");
        assert!(wanted(&hits, &[], &[]).is_empty(), "no records source, nothing asked");
    }

    fn row(id: &str, title: &str, meta: &[(&str, &str)]) -> SourceHit {
        SourceHit {
            local_id: id.into(),
            title: title.into(),
            metadata: meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_rows_among_the_first_hits_are_asked_of_every_document_source() {
        let hits = vec![
            hit("orders:orders_placed:SO20261001", "SO20261001 earbuds", &[]),
            hit("tickets:T-1", "Where is my parcel?", &[]),
            hit("orders:refund_by_id:RF3002", "RF3002", &[]),
        ];
        let p = orders();
        let records = [Records { source: "orders", patterns: &p }];
        let a = about(&hits, &records, &["tickets", "wiki"], &["RF3002".to_string()]);
        let pairs: Vec<(usize, &str, &str)> = a.iter().map(|r| (r.at, r.source.as_str(), r.id.as_str())).collect();
        assert_eq!(pairs, [(0, "tickets", "SO20261001"), (0, "wiki", "SO20261001")], "RF3002 was asked already");
        assert!(about(&hits, &[], &["tickets"], &[]).is_empty(), "no records source: no rows");
        assert!(about(&hits, &records, &[], &[]).is_empty(), "no document source: nothing to ask");
        let far = [vec![hit("tickets:T-0", "x", &[]); SCAN], hits.clone()].concat();
        assert!(about(&far, &records, &["tickets"], &[]).is_empty(), "only the first hits are read");
        let keyed = vec![hit("orders:by_row:42", "row 42", &[]), hit("orders:x:SO20261001-B", "SO20261001-B", &[])];
        assert!(about(&keyed, &records, &["tickets"], &[]).is_empty(), "a key no pattern matches whole names nothing");
    }

    #[test]
    fn documents_that_show_a_rows_id_go_below_it_and_weak_ones_already_listed_are_lifted() {
        let mut hits = vec![
            hit("orders:orders_placed:SO20261001", "SO20261001 earbuds", &[]),
            hit("kb:KB-1", "Shipping times", &[]),
            hit("tickets:T-9", "Backorder", &[("order_no", "SO20261001")]),
        ];
        hits[0].fused_score = 1.0;
        hits[0].updated_at = Some(prost_types::Timestamp { seconds: 1_790_000_000, nanos: 0 });
        hits[1].fused_score = 0.9;
        hits[2].fused_score = 0.01;
        let p = orders();
        let wanted = about(&hits, &[Records { source: "orders", patterns: &p }], &["tickets"], &[]);
        let rows = || {
            vec![
                ("tickets".to_string(), row("T-1", "Where is SO20261001?", &[])),
                ("tickets".to_string(), row("T-2", "Where is SO202610012?", &[])),
                ("tickets".to_string(), row("T-3", "Coffee grinder", &[])),
                ("tickets".to_string(), row("T-9", "Backorder", &[("order_no", "SO20261001")])),
            ]
        };
        let mut undated = hits.clone();
        let (new, ids) = found_about(&mut hits, &wanted, rows());
        assert_eq!(
            new.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
            ["tickets:T-1"],
            "only documents showing the id"
        );
        assert!((new[0].fused_score - SHARE).abs() < 1e-9);
        assert_eq!(new[0].explanation.as_ref().unwrap().summary, "about orders:orders_placed:SO20261001");
        assert!((hits[2].fused_score - SHARE).abs() < 1e-9, "the listed document is lifted, not repeated");
        assert_eq!(ids, ["tickets:T-1", "tickets:T-9"], "about a dated row: not held to the question's window");
        // A row with no date (an account) names who, not when: its documents come along, lifted,
        // but stay held to the window.
        undated[0].updated_at = None;
        let (new, ids) = found_about(&mut undated, &wanted, rows());
        assert_eq!(new.len(), 1);
        assert!((undated[2].fused_score - SHARE).abs() < 1e-9);
        assert!(ids.is_empty(), "{ids:?}");
    }

    #[test]
    fn at_most_max_ids_and_only_from_the_first_hits() {
        let p = orders();
        let records = [Records { source: "orders", patterns: &p }];
        let many = (0..10).map(|i| format!("SO2026100{i}")).collect::<Vec<_>>().join(" ");
        let mut hits = vec![hit("incidents:I-1", &many, &[])];
        assert_eq!(wanted(&hits, &records, &[]).len(), MAX_IDS);
        let mut deep = (0..SCAN).map(|i| hit(&format!("kb:K{i}"), "no ids", &[])).collect::<Vec<_>>();
        deep.push(hit("tickets:T-9", "SO20269999", &[]));
        assert!(wanted(&deep, &records, &[]).is_empty());
        hits.clear();
    }

    #[test]
    fn rows_become_candidates_scored_from_the_hit_that_named_them() {
        let mut by = hit("tickets:T-1", "SO20261004 SO20261006", &[]);
        by.fused_score = 0.5;
        let hits = vec![by, hit("orders:order_by_number:SO20261006", "SO20261006", &[])];
        let wanted = vec![
            Reference { at: 0, source: "orders".into(), id: "SO20261004".into() },
            Reference { at: 0, source: "orders".into(), id: "SO20261006".into() },
        ];
        let row = |id: &str| {
            let local_id = format!("order_by_number:{id}");
            ("orders".to_string(), SourceHit { local_id, title: id.into(), ..Default::default() })
        };
        let f = found(&hits, &wanted, vec![row("SO20261004"), row("SO20261004"), row("SO20261006"), row("SO99999999")]);
        let ids: Vec<&str> = f.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["orders:order_by_number:SO20261004"], "once; not a listed row; not an unasked one");
        assert!((f[0].fused_score - 0.5 * SHARE).abs() < 1e-12);
        assert_eq!(f[0].explanation.as_ref().unwrap().summary, "named by tickets:T-1");
    }

    #[test]
    fn rows_that_show_a_group_id_a_document_named_are_candidates_and_a_named_row_is_one() {
        let row = |local_id: &str, notice: &str| {
            let metadata = [("fsn".to_string(), notice.to_string())].into_iter().collect();
            ("records".to_string(), SourceHit { local_id: local_id.into(), metadata, ..Default::default() })
        };
        let ids = |f: Vec<Hit>| f.into_iter().map(|h| h.id).collect::<Vec<_>>();
        let notice = hit("notices:FSN-2026-05-U1", "update 1 to FSN-2026-05", &[]);
        let wanted = vec![Reference { at: 0, source: "records".into(), id: "FSN-2026-05".into() }];
        let rows = vec![row("open_units:D100-1", "FSN-2026-05"), row("open_units:D100-2", "FSN-2026-07")];
        assert_eq!(
            ids(found(std::slice::from_ref(&notice), &wanted, rows.clone())),
            ["records:open_units:D100-1"],
            "the devices the notice's number still concerns; not another notice's"
        );
        let keyed = [rows.clone(), vec![row("notice_row:FSN-2026-05", "")]].concat();
        assert_eq!(
            ids(found(std::slice::from_ref(&notice), &wanted, keyed)),
            ["records:notice_row:FSN-2026-05"],
            "an id some row is keyed by names that row, not the rows that show it"
        );
        let itself = hit("notices:FSN-2026-05", "FSN-2026-05: root cause", &[]);
        assert!(
            found(&[itself], &wanted, rows.clone()).is_empty(),
            "a notice shows its own number whatever it is asked about"
        );
        let by_row = hit("records:by_status:BK-1", "on hold", &[("customer_id", "FSN-2026-05")]);
        assert!(
            found(&[by_row], &wanted, rows).is_empty(),
            "a row that names a customer asks for the customer, not for every row of that customer"
        );
    }

    #[test]
    fn a_document_a_first_hit_cites_by_id_is_lifted_below_it() {
        let scored = |id: &str, snippet: &str, score: f64| Hit {
            snippet: snippet.into(),
            fused_score: score,
            ..hit(id, "", &[])
        };
        let mut hits = vec![
            scored("orders:on_hold:KO-0467", "shipments stopped until lot B2609 is fitted (FSN-2026-05-U1)", 1.0),
            scored("manuals:MAN-D100", "AED manual", 0.9),
            scored("notices:FSN-2026-05", "the first notice", 0.3),
            scored("notices:FSN-2026-05-U1", "lot B2606 recalled too", 0.2),
            scored("orders:on_hold:KO-0423", "also FSN-2026-05-U1", 0.1),
        ];
        let lifted = cited(&mut hits, false);
        assert_eq!(
            lifted,
            ["notices:FSN-2026-05-U1"],
            "a whole id only (not FSN-2026-05 inside it), another source only"
        );
        assert!((hits[3].fused_score - SHARE).abs() < 1e-12);
        assert_eq!((hits[2].fused_score, hits[4].fused_score), (0.3, 0.1));
        // Asked why: the cited notice is the reason, lifted to the order's whole score.
        hits[3].fused_score = 0.2;
        assert_eq!(cited(&mut hits, true), ["notices:FSN-2026-05-U1"]);
        assert!((hits[3].fused_score - WHY_SHARE).abs() < 1e-12);
        // A hit that scores the floor already keeps its score; short keys are never cited.
        let mut hits =
            vec![scored("orders:o:KO-1", "see T12 and FSN-2026-07", 1.0), scored("notices:FSN-2026-07", "", 0.9)];
        hits.push(scored("tickets:T12", "", 0.1));
        assert!(cited(&mut hits, false).is_empty(), "{hits:?}");
        assert_eq!(hits[1].fused_score, 0.9);
    }

    #[test]
    fn one_sub_query_per_source_with_only_its_ids_and_its_credential() {
        let credentials = HashMap::from([
            ("orders".to_string(), fedsearch_proto::types::Secret { value: "o".into() }),
            ("tickets".to_string(), fedsearch_proto::types::Secret { value: "t".into() }),
        ]);
        let round = Round {
            filters: None,
            credentials: &credentials,
            as_of: None,
            explicit_as_of: true,
            time_zone: "Asia/Shanghai".into(),
        };
        let wanted = vec![
            Reference { at: 0, source: "orders".into(), id: "SO20261004".into() },
            Reference { at: 1, source: "orders".into(), id: "RF3002".into() },
        ];
        let d = dispatches(&wanted, &round);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].source.as_str(), d[0].text.as_str()), ("orders", "SO20261004 RF3002"));
        assert_eq!(d[0].entities, vec!["SO20261004", "RF3002"]);
        assert!(d[0].template.is_empty() && d[0].params.is_empty(), "the source picks its lookup");
        assert_eq!(d[0].credential.as_ref().map(|c| c.value.as_str()), Some("o"), "the source's own credential");
        assert_eq!(d[0].time_zone, "Asia/Shanghai");
    }
}
