//! How a result row becomes a `SourceHit` (search) or a `FetchResponse` (fetch), following the
//! template's `hit:` mapping: id, title, snippet (≤ 300 characters, cut at a character
//! boundary), url, updated_at, doc_type and metadata columns.

use std::collections::HashMap;

use fedsearch_adapter_kit::{FetchResponse, SourceHit};

use crate::{
    db::{Cell, Record},
    template::Template,
    timefmt::TimeSettings,
};

/// The longest snippet, in characters.
pub const SNIPPET_CHARS: usize = 300;

fn get<'a>(record: &'a Record, column: &str) -> Option<&'a Cell> {
    record.iter().find(|(name, _)| name.eq_ignore_ascii_case(column)).map(|(_, cell)| cell)
}

/// A column's value as text; `None` when missing, NULL or empty.
pub fn cell_text(record: &Record, column: &str) -> Option<String> {
    get(record, column).and_then(Cell::as_text).filter(|s| !s.is_empty())
}

fn text(record: &Record, column: &str) -> String {
    get(record, column).and_then(Cell::as_text).unwrap_or_default()
}

/// Collapses whitespace and cuts to `max` characters (never inside a character), adding `…`.
pub fn snippet(raw: &str, max: usize) -> String {
    let clean: String = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    if clean.chars().count() <= max {
        return clean;
    }
    let mut out: String = clean.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A title/snippet spec: a column name, or a pattern with `{column}` placeholders (NULL → "").
fn field(spec: &str, record: &Record) -> String {
    if spec.contains('{') { fill(spec, record, |v| v) } else { text(record, spec) }
}

/// Fills `{column}` placeholders with percent-encoded column values.
fn url(pattern: &str, record: &Record) -> String {
    fill(pattern, record, |v| percent_encode(&v))
}

fn fill(pattern: &str, record: &Record, encode: impl Fn(String) -> String) -> String {
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        match rest[start..].find('}') {
            Some(end) => {
                out.push_str(&encode(text(record, &rest[start + 1..start + end])));
                rest = &rest[start + end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn updated_at(record: &Record, column: Option<&str>, time: &TimeSettings) -> Option<prost_types::Timestamp> {
    let at = match get(record, column?)? {
        Cell::Time { at, .. } => (*at)?,
        Cell::Text(s) => time.parse_text(s)?,
        Cell::Int(secs) => return Some(prost_types::Timestamp { seconds: *secs, nanos: 0 }),
        _ => return None,
    };
    Some(prost_types::Timestamp { seconds: at.timestamp(), nanos: at.timestamp_subsec_nanos() as i32 })
}

fn metadata(template: &Template, record: &Record) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for column in &template.hit.metadata {
        if let Some(v) = get(record, column).and_then(Cell::as_text) {
            out.insert(column.clone(), v);
        }
    }
    out
}

/// The row id, or `None` when the id column is missing or NULL.
pub fn row_id(template: &Template, record: &Record) -> Option<String> {
    get(record, &template.hit.id).and_then(Cell::as_text).filter(|s| !s.is_empty())
}

/// One search hit; `rank` is 1-based within the sub-query.
pub fn to_hit(template: &Template, record: &Record, rank: u32, time: &TimeSettings) -> Option<SourceHit> {
    let id = row_id(template, record)?;
    let hit = &template.hit;
    let mut meta = metadata(template, record);
    meta.insert("template".into(), template.name.clone());
    Some(SourceHit {
        local_id: format!("{}:{id}", template.name),
        title: field(&hit.title, record),
        snippet: hit.snippet.as_deref().map(|c| snippet(&field(c, record), SNIPPET_CHARS)).unwrap_or_default(),
        url: hit.url.as_deref().map(|u| url(u, record)).unwrap_or_default(),
        updated_at: updated_at(record, hit.updated_at.as_deref(), time),
        rank,
        score: None,
        metadata: meta,
        full_text_ref: template.fetch.as_ref().map(|entity| format!("{entity}:{id}")).unwrap_or_default(),
        doc_type: hit.doc_type.clone(),
        content_fingerprint: String::new(),
        version: None,
    })
}

/// The full record of a fetch: `content` is one `column: value` line per content column.
pub fn to_fetch(template: &Template, record: &Record, time: &TimeSettings) -> Option<FetchResponse> {
    let id = row_id(template, record)?;
    let hit = &template.hit;
    let lines: Vec<String> = record
        .iter()
        .filter(|(name, _)| hit.content.is_empty() || hit.content.iter().any(|c| c.eq_ignore_ascii_case(name)))
        .filter_map(|(name, cell)| cell.as_text().map(|v| format!("{name}: {v}")))
        .collect();
    Some(FetchResponse {
        id: format!("{}:{id}", template.name),
        title: field(&hit.title, record),
        content: lines.join("\n"),
        url: hit.url.as_deref().map(|u| url(u, record)).unwrap_or_default(),
        updated_at: updated_at(record, hit.updated_at.as_deref(), time),
        metadata: metadata(template, record),
        doc_type: hit.doc_type.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_cuts_at_a_character_boundary_and_is_cjk_safe() {
        let long = "仓库缺货，预计2天后发货 ".repeat(40);
        let s = snippet(&long, SNIPPET_CHARS);
        assert_eq!(s.chars().count(), SNIPPET_CHARS);
        assert!(s.ends_with('…'));
        assert_eq!(snippet("  a \n b  ", 300), "a b");
    }

    #[test]
    fn url_placeholders_are_percent_encoded() {
        let record: Record = vec![("order_no".into(), Cell::Text("SO 1/张".into()))];
        assert_eq!(
            url("https://shop.example/orders/{order_no}", &record),
            "https://shop.example/orders/SO%201%2F%E5%BC%A0"
        );
    }

    #[test]
    fn title_patterns_fill_columns_and_skip_nulls() {
        let record: Record = vec![("no".into(), Cell::Text("SO1".into())), ("note".into(), Cell::Null)];
        assert_eq!(field("{no} ({note})", &record), "SO1 ()");
        assert_eq!(field("no", &record), "SO1");
    }

    #[test]
    fn updated_at_reads_iso_text_local_text_and_unix_seconds() {
        let record: Record = vec![
            ("a".into(), Cell::Text("2026-11-28T09:15:00Z".into())),
            ("b".into(), Cell::Int(10)),
            ("c".into(), Cell::Text("2026-11-28 17:15:00".into())),
        ];
        let utc = TimeSettings::default();
        assert_eq!(updated_at(&record, Some("a"), &utc).unwrap().seconds, 1_795_857_300);
        assert_eq!(updated_at(&record, Some("b"), &utc).unwrap().seconds, 10);
        assert!(updated_at(&record, Some("missing"), &utc).is_none());
        let shanghai = TimeSettings::new(Some("Asia/Shanghai"), Some("%Y-%m-%d %H:%M:%S")).unwrap();
        assert_eq!(updated_at(&record, Some("c"), &shanghai).unwrap().seconds, 1_795_857_300, "local text in the zone");
    }
}
