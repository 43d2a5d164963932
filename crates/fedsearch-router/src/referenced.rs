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
//! the hit that named it; the list keeps `top_k` hits.
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
        let texts = [h.title.as_str(), h.snippet.as_str()].into_iter().chain(h.metadata.values().map(String::as_str));
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

/// The fused hit for a row of `source` that hit `by` named.
fn hit_of(source: &str, row: SourceHit, by: &Hit) -> Hit {
    let summary = format!("named by {}", by.id);
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
/// score of the hit that named it (the first such hit); a row the list already holds, or one no
/// hit asked for, is left out.
pub fn found(hits: &[Hit], wanted: &[Reference], rows: Vec<(String, SourceHit)>) -> Vec<Hit> {
    let mut out: Vec<Hit> = Vec::new();
    for (source, row) in rows {
        let Some(r) = wanted.iter().find(|r| r.source == source && key(&row.local_id).eq_ignore_ascii_case(&r.id))
        else {
            continue;
        };
        if listed(hits, &source, &r.id) || out.iter().any(|h| h.source == source && key(&h.id) == key(&row.local_id)) {
            continue;
        }
        let mut hit = hit_of(&source, row, &hits[r.at]);
        hit.fused_score *= SHARE;
        out.push(hit);
    }
    out
}

/// Asks the records sources for what the first hits name (see the module docs): the rows, as
/// candidates to re-score with the others.
pub async fn complete(
    registry: &crate::registry::Registry,
    user: &fedsearch_core::Identity,
    wanted: Vec<Reference>,
    round: &Round<'_>,
    hits: &[Hit],
    until: Instant,
) -> Vec<Hit> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let until = until.min(Instant::now() + BUDGET);
    let subs = dispatches(&wanted, round);
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
    found(hits, &wanted, rows)
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
