//! Conversion of `_search` responses into source hits and fetched documents.
//!
//! Snippets come from the body highlight (or its `no_match_size` start of the body), with every
//! tag stripped, whitespace collapsed and the length cut at a character boundary.

use std::collections::HashMap;

use fedsearch_adapter_kit::{FetchResponse, SourceHit};
use fedsearch_proto::types::VersionInfo;
use prost_types::Timestamp;
use serde_json::Value;

use crate::config::{SourceConfig, VersionFields};

/// One document of a `_search` response, as the adapter reads it.
#[derive(Debug)]
pub struct RawHit<'a> {
    pub index: &'a str,
    pub id: &'a str,
    pub score: Option<f64>,
    pub source: &'a Value,
    /// The body's highlight passages, as the engine returned them.
    pub highlight: Option<&'a [Value]>,
}

/// The `hits.hits` of a response (malformed entries are skipped).
pub fn raw_hits<'a>(response: &'a Value, body_field: &str) -> Vec<RawHit<'a>> {
    static EMPTY: Value = Value::Null;
    let Some(hits) = response.pointer("/hits/hits").and_then(Value::as_array) else { return Vec::new() };
    hits.iter()
        .filter_map(|h| {
            Some(RawHit {
                index: h.get("_index")?.as_str()?,
                id: h.get("_id")?.as_str()?,
                score: h.get("_score").and_then(Value::as_f64),
                source: h.get("_source").unwrap_or(&EMPTY),
                highlight: h
                    .get("highlight")
                    .and_then(|hl| hl.get(body_field))
                    .and_then(Value::as_array)
                    .map(Vec::as_slice),
            })
        })
        .collect()
}

/// Value at a dotted path of `_source` (`a.b` is either the key `a.b` or `a` → `b`).
fn lookup<'a>(source: &'a Value, path: &str) -> Option<&'a Value> {
    if let Some(v) = source.get(path) {
        return Some(v);
    }
    let (head, rest) = path.split_once('.')?;
    lookup(source.get(head)?, rest)
}

/// A `_source` value as one metadata string: arrays join with `,`; objects and null give none.
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(as_text).collect();
            (!parts.is_empty()).then(|| parts.join(","))
        }
        Value::Null | Value::Object(_) => None,
    }
}

fn text_field(source: &Value, path: &str) -> Option<String> {
    lookup(source, path).and_then(as_text)
}

/// Parses an RFC 3339 date-time, a plain date or epoch milliseconds.
pub fn parse_time(v: &Value) -> Option<Timestamp> {
    match v {
        Value::Number(n) => {
            let ms = n.as_i64()?;
            Some(Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 })
        }
        Value::String(s) => fedsearch_core::time::parse_rfc3339(s).or_else(|| {
            let date = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
            Some(fedsearch_core::time::from_chrono(date.and_hms_opt(0, 0, 0)?.and_utc()))
        }),
        _ => None,
    }
}

/// A highlight's passages, each cut to its share of `chars` around its first match
/// ([`passage`]), joined with an ellipsis (None when there is none). A passage shorter than its
/// share leaves the rest to the others.
fn passages(fragments: &[Value], chars: usize) -> Option<String> {
    let parts: Vec<(Vec<char>, Option<usize>)> = fragments.iter().filter_map(Value::as_str).map(plain_chars).collect();
    let joiners = parts.len().saturating_sub(1) * " … ".chars().count();
    let lens: Vec<usize> = parts.iter().map(|(p, _)| p.len()).collect();
    let mut out = String::new();
    for ((plain, first), share) in parts.into_iter().zip(shares(&lens, chars.saturating_sub(joiners))) {
        let part = passage(plain, first, share);
        let mut part = part.as_str();
        if !out.is_empty() {
            // One ellipsis between two passages, whichever side marks the cut.
            if out.ends_with('…') {
                part = part.trim_start_matches('…');
            }
            out.push_str(if out.ends_with('…') || part.starts_with('…') { " " } else { " … " });
        }
        out.push_str(part);
    }
    (!out.is_empty()).then_some(out)
}

/// `total` characters shared by passages of `lens` characters: a passage that fits in an equal
/// share gets its length, the rest is shared again among the longer ones.
fn shares(lens: &[usize], total: usize) -> Vec<usize> {
    let mut out = vec![0; lens.len()];
    let mut open: Vec<usize> = (0..lens.len()).collect();
    let mut left = total;
    while !open.is_empty() {
        let each = left / open.len();
        let (fit, long): (Vec<usize>, Vec<usize>) = open.iter().partition(|&&i| lens[i] <= each);
        if fit.is_empty() {
            long.iter().for_each(|&i| out[i] = each.max(1));
            break;
        }
        for i in fit {
            out[i] = lens[i];
            left -= lens[i];
        }
        open = long;
    }
    out
}

/// How far a cut moves back to fall between two words.
const WORD_SLACK: usize = 16;

/// One highlight passage (a whole sentence: the query asks for `fragment_size` 0) in plain text
/// ([`plain_chars`]; `first`: where its first match starts), cut to about `share` characters
/// starting a quarter of them before its first match. A cut is marked with an ellipsis and falls
/// on a space where one is near, so a code such as `E-218` is never split the way the engine's
/// word breaks split it (at the hyphen).
fn passage(plain: Vec<char>, first: Option<usize>, share: usize) -> String {
    if plain.len() <= share {
        return plain.into_iter().collect();
    }
    let first = first.unwrap_or(0);
    let mut start = first.saturating_sub(share / 4).min(plain.len() - share);
    if start <= WORD_SLACK {
        start = 0;
    } else if let Some(i) = plain[start - WORD_SLACK..start].iter().rposition(|c| *c == ' ') {
        start = start - WORD_SLACK + i + 1;
    } else if let Some(i) = plain.get(start..first).and_then(|w| w.iter().position(|c| *c == ' ')) {
        start += i + 1;
    }
    let mut end = (start + share).min(plain.len());
    if end < plain.len() {
        let from = end.saturating_sub(WORD_SLACK).max(first + 1);
        if let Some(i) = plain.get(from..end).and_then(|w| w.iter().rposition(|c| *c == ' ')) {
            end = from + i;
        }
    }
    let mut out = String::with_capacity(share * 3);
    if start > 0 {
        out.push('…');
    }
    out.extend(plain[start..end].iter().copied().skip_while(|c| *c == ' '));
    while out.ends_with(' ') {
        out.pop();
    }
    if end < plain.len() {
        out.push('…');
    }
    out
}

/// The plain characters of a highlight passage (tags removed, whitespace collapsed) and where
/// its first highlighted match starts among them.
fn plain_chars(raw: &str) -> (Vec<char>, Option<usize>) {
    let mut plain: Vec<char> = Vec::with_capacity(raw.len());
    let mut first = None;
    let mut rest = raw;
    let mut pending_space = false;
    while let Some(c) = rest.chars().next() {
        if c == '<' && rest[1..].starts_with(|n: char| n.is_ascii_alphabetic() || n == '/' || n == '!') {
            if first.is_none() && rest.starts_with(crate::query::PRE_TAG) {
                first = Some(plain.len() + usize::from(pending_space));
            }
            rest = rest.find('>').map_or("", |i| &rest[i + 1..]);
            continue;
        }
        rest = &rest[c.len_utf8()..];
        if c.is_whitespace() {
            pending_space = !plain.is_empty();
            continue;
        }
        if pending_space {
            plain.push(' ');
            pending_space = false;
        }
        plain.push(c);
    }
    (plain, first)
}

/// Plain text of a highlight fragment or body: tags removed, whitespace collapsed, at most
/// `max_chars` characters (an ellipsis marks a cut and counts toward the limit).
pub fn snippet(raw: &str, max_chars: usize) -> String {
    let (plain, _) = plain_chars(raw);
    if plain.len() <= max_chars {
        return plain.into_iter().collect();
    }
    let mut cut: String = plain[..max_chars.saturating_sub(1)].iter().collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// The id a source reports for a document: the configured id field, else `_id`; qualified
/// with the index when the source spans several indices.
fn local_id(source: &SourceConfig, hit: &RawHit<'_>) -> String {
    let id = source.fields.id.as_deref().and_then(|f| text_field(hit.source, f)).unwrap_or_else(|| hit.id.to_string());
    if source.single_index() { id } else { format!("{}/{id}", hit.index) }
}

/// The adapter-side reference Fetch takes: `<index>/<_id>`.
pub fn full_text_ref(hit: &RawHit<'_>) -> String {
    format!("{}/{}", hit.index, hit.id)
}

/// Splits a Fetch reference into (`index`, `_id`).
pub fn parse_ref(reference: &str) -> Option<(&str, &str)> {
    let (index, id) = reference.split_once('/')?;
    (!index.is_empty() && !id.is_empty() && !index.contains(['*', ',', ' '])).then_some((index, id))
}

fn metadata(source: &SourceConfig, doc: &Value) -> HashMap<String, String> {
    source.metadata_fields.iter().filter_map(|f| Some((f.clone(), text_field(doc, f)?))).collect()
}

fn doc_type(source: &SourceConfig, doc: &Value) -> String {
    text_field(doc, &source.fields.doc_type).unwrap_or_else(|| source.doc_types[0].clone())
}

/// The document's version metadata from the source's `version_fields`: `effective_at` parsed
/// like the timestamp field, `status` lower-cased, the rest as written. None when the source
/// has no `version_fields` or the document has none of them.
fn version(source: &SourceConfig, doc: &Value) -> Option<VersionInfo> {
    let v = source.version_fields.as_ref()?;
    let text = |field: &Option<String>| field.as_deref().and_then(|f| text_field(doc, f)).unwrap_or_default();
    let info = VersionInfo {
        family: text(&v.family),
        label: text(&v.label),
        effective_at: v.effective_at.as_deref().and_then(|f| lookup(doc, f)).and_then(parse_time),
        status: status(v, &text(&v.status)),
        supersedes: text(&v.supersedes),
        superseded_by: text(&v.superseded_by),
    };
    (info != VersionInfo::default()).then_some(info)
}

/// The status value as fusion reads it: trimmed and lower-cased, the source's own word replaced
/// by its meaning from `status_values`.
fn status(v: &VersionFields, raw: &str) -> String {
    let word = raw.trim().to_lowercase();
    v.status_values.get(&word).cloned().unwrap_or(word)
}

/// One search hit at 1-based `rank`.
pub fn to_source_hit(source: &SourceConfig, hit: &RawHit<'_>, rank: u32) -> SourceHit {
    let f = &source.fields;
    let snippet_text = hit
        .highlight
        .and_then(|h| passages(h, source.snippet_chars))
        .or_else(|| text_field(hit.source, &f.body))
        .map(|raw| snippet(&raw, source.snippet_chars))
        .unwrap_or_default();
    SourceHit {
        local_id: local_id(source, hit),
        title: text_field(hit.source, &f.title).unwrap_or_default(),
        snippet: snippet_text,
        url: f.url.as_deref().and_then(|u| text_field(hit.source, u)).unwrap_or_default(),
        updated_at: lookup(hit.source, &f.timestamp).and_then(parse_time),
        rank,
        score: hit.score,
        metadata: metadata(source, hit.source),
        full_text_ref: full_text_ref(hit),
        doc_type: doc_type(source, hit.source),
        content_fingerprint: String::new(),
        version: version(source, hit.source),
    }
}

/// The full document of a Fetch.
pub fn to_fetch_response(source: &SourceConfig, hit: &RawHit<'_>) -> FetchResponse {
    let f = &source.fields;
    FetchResponse {
        id: local_id(source, hit),
        title: text_field(hit.source, &f.title).unwrap_or_default(),
        content: text_field(hit.source, &f.body).unwrap_or_default(),
        url: f.url.as_deref().and_then(|u| text_field(hit.source, u)).unwrap_or_default(),
        updated_at: lookup(hit.source, &f.timestamp).and_then(parse_time),
        metadata: metadata(source, hit.source),
        doc_type: doc_type(source, hit.source),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::{FieldMapping, VersionFields};

    fn source(index: &str) -> SourceConfig {
        SourceConfig {
            name: "tickets".into(),
            index: index.into(),
            description: String::new(),
            when_to_use: String::new(),
            doc_types: vec!["ticket".into()],
            fields: FieldMapping::default(),
            search_fields: vec!["title".into()],
            minimum_should_match: None,
            match_type: Default::default(),
            operator: None,
            id_fields: vec![],
            version_fields: None,
            snippet_chars: 40,
            snippet_fragments: 3,
            metadata_fields: vec!["status".into(), "order_no".into(), "owner.team".into(), "missing".into()],
            filterable_fields: vec![],
            expansion_boost: 0.5,
            inflection_boost: 0.0,
        }
    }

    fn response() -> Value {
        json!({ "timed_out": false, "hits": { "hits": [
            { "_index": "tickets", "_id": "TCK-5002", "_score": 3.5,
              "_source": { "title": "支付超时：订单SO20261004付款失败", "updated_at": "2026-11-27T15:16:51Z",
                           "doc_type": "ticket", "url": "https://helpdesk.example/TCK-5002",
                           "status": "in_progress", "order_no": ["SO20261004", "SO20261006"],
                           "owner": { "team": "support-wholesale" } },
              "highlight": { "body": ["付款时<em>支付</em>网关<em>超时</em>，订单状态为 payment_failed"] } },
            { "_index": "tickets", "_id": "TCK-4990", "_score": 1.0,
              "_source": { "title": "old", "updated_at": 1_700_000_000_123_i64 } },
            { "_id": "no-index" }
        ] } })
    }

    #[test]
    fn a_snippet_joins_the_highlights_passages() {
        let resp = json!({ "hits": { "hits": [
            { "_index": "guides", "_id": "GD-DG", "_score": 2.0, "_source": { "title": "DG guide" },
              "highlight": { "body": ["<em>Sea</em> freight DG bookings", "<em>Class</em> <em>7</em>: no"] } }
        ] } });
        let raw = raw_hits(&resp, "body");
        let hit = to_source_hit(&source("guides"), &raw[0], 1);
        assert_eq!(hit.snippet, "Sea freight DG bookings … Class 7: no");
    }

    fn passage_of(raw: &str, share: usize) -> String {
        let (plain, first) = plain_chars(raw);
        passage(plain, first, share)
    }

    #[test]
    fn a_long_passage_is_cut_around_its_match_between_words() {
        let sentence = "New error code table: <em>E</em>-215 blower temperature, <em>E</em>-216 inspiratory \
            flow sensor, <em>E</em>-217 expiratory flow sensor fault (device cannot ventilate; take out of \
            service and call service), <em>E</em>-<em>218</em> pressure transducer drift.";
        // The engine's own 80-character passages ended "… flow sensor, E-" and began "218 pressure".
        let cut = passage_of(sentence, 80);
        assert_eq!(cut, "New error code table: E-215 blower temperature, E-216 inspiratory flow sensor,…");
        let late = "Background words that say nothing about the question at all, repeated here to fill the \
            sentence, until the code <em>E</em>-<em>218</em> pressure transducer drift appears near its end.";
        let cut = passage_of(late, 80);
        assert!(cut.starts_with('…') && cut.contains("E-218 pressure transducer"), "{cut}");
        assert!(!cut.contains("E- ") && cut.chars().count() <= 82, "{cut}");
        let words_kept =
            cut.trim_matches('…').split(' ').all(|w| late.replace("<em>", "").replace("</em>", "").contains(w));
        assert!(words_kept, "every word whole: {cut}");
        assert_eq!(passage_of("短句<em>支付</em>超时", 80), "短句支付超时", "a short passage stays whole");
        assert_eq!(shares(&[10, 300, 50], 180), vec![10, 120, 50], "short passages leave the rest to long ones");
        assert_eq!(shares(&[300, 300], 180), vec![90, 90]);
        let joined = passages(&[json!(sentence), json!(late)], 160).unwrap();
        assert!(joined.contains("flow… sentence, until the code E-218 pressure transducer"), "{joined}");
        assert_eq!(joined.matches('…').count(), 1, "one ellipsis between two cut passages: {joined}");
    }

    #[test]
    fn hits_carry_rank_ids_metadata_and_a_plain_snippet() {
        let s = source("tickets");
        let resp = response();
        let raw = raw_hits(&resp, "body");
        assert_eq!(raw.len(), 2, "malformed entries are skipped");
        let hit = to_source_hit(&s, &raw[0], 1);
        assert_eq!(hit.local_id, "TCK-5002");
        assert_eq!(hit.full_text_ref, "tickets/TCK-5002");
        assert_eq!(hit.rank, 1);
        assert_eq!(hit.score, Some(3.5));
        assert_eq!(hit.snippet, "付款时支付网关超时，订单状态为 payment_failed");
        assert_eq!(hit.url, "https://helpdesk.example/TCK-5002");
        assert_eq!(hit.doc_type, "ticket");
        assert_eq!(hit.updated_at.unwrap().seconds, 1_795_792_611);
        assert_eq!(hit.metadata["status"], "in_progress");
        assert_eq!(hit.metadata["order_no"], "SO20261004,SO20261006");
        assert_eq!(hit.metadata["owner.team"], "support-wholesale");
        assert!(!hit.metadata.contains_key("missing"));

        let second = to_source_hit(&s, &raw[1], 2);
        assert_eq!(second.doc_type, "ticket", "falls back to the source's first doc type");
        assert_eq!(second.updated_at.unwrap(), Timestamp { seconds: 1_700_000_000, nanos: 123_000_000 });
        assert_eq!(second.snippet, "");
    }

    #[test]
    fn version_fields_map_into_version_info() {
        let mut s = source("kb");
        s.version_fields = Some(VersionFields {
            family: Some("policy".into()),
            label: Some("edition".into()),
            status: Some("lifecycle.state".into()),
            effective_at: Some("effective".into()),
            supersedes: Some("replaces".into()),
            superseded_by: None,
            status_values: [("freigegeben".to_string(), "current".to_string())].into(),
        });
        let resp = json!({ "hits": { "hits": [
            { "_index": "kb", "_id": "KB-2026", "_source": { "title": "Refund policy 2026",
              "policy": "refund-policy", "edition": 2026, "lifecycle": { "state": "Current" },
              "effective": "2026-01-01", "replaces": "KB-2025" } },
            { "_index": "kb", "_id": "KB-9", "_source": { "title": "no version fields" } }
        ] } });
        let raw = raw_hits(&resp, "body");
        let v = to_source_hit(&s, &raw[0], 1).version.unwrap();
        assert_eq!(v.family, "refund-policy");
        assert_eq!(v.label, "2026");
        assert_eq!(v.status, "current");
        assert_eq!(v.effective_at.unwrap().seconds, 1_767_225_600);
        assert_eq!(v.supersedes, "KB-2025");
        assert_eq!(v.superseded_by, "");
        assert_eq!(to_source_hit(&s, &raw[1], 2).version, None, "no version field present");
        assert_eq!(to_source_hit(&source("kb"), &raw[0], 1).version, None, "no version_fields configured");
        // The source's own word, through `status_values` (other words pass on lower-cased).
        let resp = json!({ "hits": { "hits": [
            { "_index": "kb", "_id": "KB-1", "_source": { "lifecycle": { "state": " freigegeben " } } },
            { "_index": "kb", "_id": "KB-2", "_source": { "lifecycle": { "state": "Obsolete" } } }
        ] } });
        let raw = raw_hits(&resp, "body");
        assert_eq!(to_source_hit(&s, &raw[0], 1).version.unwrap().status, "current");
        assert_eq!(to_source_hit(&s, &raw[1], 2).version.unwrap().status, "obsolete");
    }

    #[test]
    fn multi_index_sources_qualify_local_ids_with_the_index() {
        let resp = response();
        let raw = raw_hits(&resp, "body");
        assert_eq!(to_source_hit(&source("tickets-*"), &raw[0], 1).local_id, "tickets/TCK-5002");
    }

    #[test]
    fn snippets_are_plain_bounded_and_cut_at_char_boundaries() {
        assert_eq!(snippet("a <em>b</em>\n\n  c <br/>d", 100), "a b c d");
        assert_eq!(snippet("1 < 2 and 3 > 2", 100), "1 < 2 and 3 > 2");
        let cjk = "支付超时".repeat(100);
        let s = snippet(&cjk, 10);
        assert_eq!(s.chars().count(), 10);
        assert!(s.ends_with('…') && s.starts_with("支付超时支付超时支"));
        assert!(snippet(&"x".repeat(1000), 300).chars().count() <= 300);
        assert_eq!(snippet("", 10), "");
    }

    #[test]
    fn references_round_trip_and_reject_patterns() {
        assert_eq!(parse_ref("tickets/TCK-1"), Some(("tickets", "TCK-1")));
        assert_eq!(parse_ref("tickets/a/b"), Some(("tickets", "a/b")));
        assert_eq!(parse_ref("tick*/x"), None);
        assert_eq!(parse_ref("tickets"), None);
        assert_eq!(parse_ref("/x"), None);
    }

    #[test]
    fn fetch_returns_the_full_body() {
        let doc = json!({ "hits": { "hits": [{ "_index": "kb", "_id": "KB-101",
            "_source": { "title": "t", "body": "full body text", "updated_at": "2026-10-30" } }] } });
        let raw = raw_hits(&doc, "body");
        let r = to_fetch_response(&source("kb"), &raw[0]);
        assert_eq!(r.content, "full body text");
        assert_eq!(r.id, "KB-101");
        assert!(r.updated_at.is_some());
    }
}
