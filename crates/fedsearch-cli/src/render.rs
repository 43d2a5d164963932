//! The fedsearch command line: readable text for every response (the only module that formats).
//!
//! Columns are padded by display width (`unicode-width`), so Chinese text lines up with ASCII.
//! Text from the server is shown on one line with control characters removed, so a hostile title
//! or snippet cannot move the cursor or fake other output.

use std::fmt::Write as _;

use fedsearch_proto::{
    api::{AgentContext, Document, FusedSnapshot, FusionReport, RoutingDecision, SearchResponse, SourceInfo},
    types::{Hit, SourceState, SourceStatus},
};
use prost_types::Timestamp;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// How many metadata pairs a hit shows.
const MAX_METADATA: usize = 6;
/// The widest a snippet line gets, in display columns.
const SNIPPET_WIDTH: usize = 200;

/// Server text on one line: control characters become spaces, runs of whitespace one space.
pub fn clean(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// `s` cut to at most `max` display columns, with `…` when cut (never inside a character).
pub fn truncate(s: &str, max: usize) -> String {
    if s.width() <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` followed by spaces up to `width` display columns.
fn pad(s: &str, width: usize) -> String {
    let mut out = s.to_string();
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(s.width())));
    out
}

/// Rows (under an optional header), each column as wide as its widest cell; columns listed in
/// `right` are right-aligned (numbers), and the last column is not padded.
fn table(header: Option<&[&str]>, rows: &[Vec<String>], right: &[usize]) -> String {
    let header: Option<Vec<String>> = header.map(|h| h.iter().map(|c| c.to_string()).collect());
    let all: Vec<&Vec<String>> = header.iter().chain(rows).collect();
    let mut widths: Vec<usize> = Vec::new();
    for row in &all {
        widths.resize(widths.len().max(row.len()), 0);
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.width());
        }
    }
    let mut out = String::new();
    for row in all {
        let last = row.len().saturating_sub(1);
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| match (right.contains(&i), i == last) {
                (true, _) => format!("{}{c}", " ".repeat(widths[i].saturating_sub(c.width()))),
                (false, true) => c.clone(),
                (false, false) => pad(c, widths[i]),
            })
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
    out
}

/// `2026-11-29 08:30 UTC`, or `-` when unset.
fn datetime(ts: Option<&Timestamp>) -> String {
    ts.and_then(fedsearch_core::time::to_chrono)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or("-".into())
}

/// `2026-11-29`, or `-` when unset.
fn date(ts: Option<&Timestamp>) -> String {
    ts.and_then(fedsearch_core::time::to_chrono).map(|t| t.format("%Y-%m-%d").to_string()).unwrap_or("-".into())
}

fn state_label(state: i32) -> &'static str {
    SourceState::try_from(state).map(SourceState::label).unwrap_or("unknown")
}

/// The routing decision: strategy, then each selected (and not selected) source with its reason.
pub fn routing(r: &RoutingDecision) -> String {
    let mut out = format!("routing: {}\n", clean(&r.strategy));
    let rows: Vec<Vec<String>> = r
        .selected
        .iter()
        .map(|s| {
            let mut why = clean(&s.reason);
            if !s.query.is_empty() {
                why.push_str(&format!(" → sent `{}` ({})", clean(&s.query), clean(&s.rewrite)));
            }
            vec!["selected".into(), clean(&s.source), why]
        })
        .chain(r.not_selected.iter().map(|s| vec!["not selected".into(), clean(&s.source), clean(&s.reason)]))
        .collect();
    if !rows.is_empty() {
        out.push_str(&table(None, &rows, &[]));
    }
    out
}

fn status_row(s: &SourceStatus) -> Vec<String> {
    // "OK" next to an ok state says nothing.
    let code = if s.code == "OK" { "" } else { s.code.as_str() };
    let message = match (code.is_empty(), s.message.is_empty()) {
        (true, _) => clean(&s.message),
        (false, true) => clean(code),
        (false, false) => format!("{}: {}", clean(code), clean(&s.message)),
    };
    vec![
        clean(&s.source),
        state_label(s.state).into(),
        s.hit_count.to_string(),
        format!("{} ms", s.latency_ms),
        message,
    ]
}

const STATUS_HEADER: [&str; 5] = ["SOURCE", "STATE", "HITS", "LATENCY", "MESSAGE"];

/// The per-source status table.
pub fn status_table(statuses: &[SourceStatus]) -> String {
    let rows: Vec<Vec<String>> = statuses.iter().map(status_row).collect();
    format!("sources:\n{}", table(Some(&STATUS_HEADER), &rows, &[2, 3]))
}

/// One status as it arrives on a stream.
pub fn status_line(s: &SourceStatus) -> String {
    let [source, state, hits, latency, message] = <[String; 5]>::try_from(status_row(s)).unwrap_or_default();
    let hits = if hits == "1" { "1 hit".to_string() } else { format!("{hits} hits") };
    let mut line = format!("  {source}: {state}, {hits} in {latency}");
    if !message.is_empty() {
        let _ = write!(line, " ({message})");
    }
    line.push('\n');
    line
}

/// A fused snapshot on a stream: how many hits so far and which sources are done.
pub fn snapshot(s: &FusedSnapshot) -> String {
    let done: Vec<String> = s.sources_done.iter().map(|d| clean(d)).collect();
    let hits = if s.hits.len() == 1 { "1 fused hit".to_string() } else { format!("{} fused hits", s.hits.len()) };
    format!("  … {hits} so far (done: {})\n", done.join(", "))
}

/// The fused hits, numbered, each with its source, date, snippet, citation and duplicates.
pub fn hits(hits: &[Hit], explain: bool) -> String {
    if hits.is_empty() {
        return "no hits\n".into();
    }
    let num_width = hits.len().to_string().len();
    let indent = " ".repeat(num_width + 2);
    let mut out = String::new();
    for (i, h) in hits.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let title = if h.title.trim().is_empty() { clean(&h.id) } else { clean(&h.title) };
        let _ = writeln!(out, "{:>num_width$}. {title}", i + 1);
        let mut facts = vec![clean(&h.source)];
        if !h.doc_type.is_empty() {
            facts.push(clean(&h.doc_type));
        }
        facts.push(date(h.updated_at.as_ref()));
        let mut meta: Vec<(&String, &String)> = h.metadata.iter().collect();
        // The handling state matters most to a reader: status and priority first, then A-Z.
        meta.sort_by_key(|(k, _)| (!matches!(k.as_str(), "status" | "priority" | "state"), k.as_str()));
        let meta: Vec<String> =
            meta.iter().take(MAX_METADATA).map(|(k, v)| format!("{}={}", clean(k), truncate(&clean(v), 40))).collect();
        if !meta.is_empty() {
            facts.push(meta.join(" "));
        }
        let _ = writeln!(out, "{indent}{}", facts.join(" · "));
        let snippet = clean(&h.snippet);
        if !snippet.is_empty() {
            let _ = writeln!(out, "{indent}{}", truncate(&snippet, SNIPPET_WIDTH));
        }
        let mut cite = Vec::new();
        if !h.url.is_empty() {
            cite.push(clean(&h.url));
        }
        if !h.full_text_ref.is_empty() {
            cite.push(format!("ref {}", clean(&h.full_text_ref)));
        }
        if !cite.is_empty() {
            let _ = writeln!(out, "{indent}cite: {}", cite.join(" · "));
        }
        if !h.duplicates.is_empty() {
            let dups: Vec<String> = h
                .duplicates
                .iter()
                .map(|d| {
                    let mut s = format!("{} {} (#{}", clean(&d.source), clean(&d.id), d.rank_in_source);
                    if !d.matched_on.is_empty() {
                        let _ = write!(s, ", same {}", clean(&d.matched_on));
                    }
                    s.push(')');
                    s
                })
                .collect();
            let _ = writeln!(out, "{indent}also found in: {}", dups.join("; "));
        }
        if explain {
            let why = h.explanation.as_ref().map(|e| clean(&e.summary)).filter(|s| !s.is_empty());
            let _ = writeln!(
                out,
                "{indent}why: {} (fused score {:.4})",
                why.as_deref().unwrap_or("no explanation"),
                h.fused_score
            );
        }
    }
    out
}

/// The fusion report on one line.
pub fn fusion(f: &FusionReport) -> String {
    let mut out = format!("fusion: {}", clean(&f.method));
    if f.rrf_k > 0 {
        let _ = write!(out, " k={}", f.rrf_k);
    }
    let _ = write!(out, ", {} duplicates merged", f.duplicates_merged);
    if f.in_process_fallback {
        out.push_str(", fused in the router (fusion service unreachable)");
    }
    if !f.message.is_empty() {
        let _ = write!(out, " ({})", clean(&f.message));
    }
    out.push('\n');
    out
}

/// The packed agent context: budget use, then the text as the agent would get it.
pub fn context(c: &AgentContext) -> String {
    let mut out = format!("context: {} of {} tokens, {} items\n", c.tokens_used, c.token_budget, c.items.len());
    for line in c.text.lines() {
        let _ = writeln!(out, "  | {}", clean(line));
    }
    out
}

/// Everything after the routing and statuses: hits, fusion, context and the trace id.
pub fn search_result(r: &SearchResponse, explain: bool) -> String {
    let mut out = String::from("\n");
    out.push_str(&hits(&r.hits, explain));
    if let Some(f) = &r.fusion {
        out.push('\n');
        out.push_str(&fusion(f));
    }
    if let Some(c) = r.context.as_ref().filter(|c| c.token_budget > 0) {
        out.push_str(&context(c));
    }
    let _ = writeln!(out, "trace: {}", if r.trace_id.is_empty() { "-".into() } else { clean(&r.trace_id) });
    out
}

/// A whole search response.
pub fn search_response(r: &SearchResponse, explain: bool) -> String {
    let mut out = String::new();
    if let Some(routing_decision) = &r.routing {
        out.push_str(&routing(routing_decision));
        out.push('\n');
    }
    out.push_str(&status_table(&r.sources));
    out.push_str(&search_result(r, explain));
    out
}

/// The sources the caller may use: name, kind, description, when (not) to use.
pub fn sources(list: &[SourceInfo]) -> String {
    if list.is_empty() {
        return "no sources available to you\n".into();
    }
    let name_width = list.iter().map(|s| clean(&s.name).width()).max().unwrap_or(0);
    let kind_width = list.iter().map(|s| clean(&s.kind).width()).max().unwrap_or(0);
    let indent = " ".repeat(name_width + kind_width + 4);
    let mut out = String::new();
    for s in list {
        let _ = writeln!(
            out,
            "{}  {}  {}",
            pad(&clean(&s.name), name_width),
            pad(&clean(&s.kind), kind_width),
            clean(&s.description)
        );
        if !s.when_to_use.is_empty() {
            let _ = writeln!(out, "{indent}use for: {}", clean(&s.when_to_use));
        }
        if !s.when_not_to_use.is_empty() {
            let _ = writeln!(out, "{indent}not for: {}", clean(&s.when_not_to_use));
        }
        let mut facts = Vec::new();
        if !s.tags.is_empty() {
            facts.push(format!("tags {}", clean(&s.tags.join(", "))));
        }
        if !s.supported_filters.is_empty() {
            facts.push(format!("filters {}", clean(&s.supported_filters.join(", "))));
        }
        facts.push(format!("weight {}", s.weight));
        if s.timeout_ms > 0 {
            facts.push(format!("timeout {} ms", s.timeout_ms));
        }
        if !s.freshness.is_empty() {
            facts.push(format!("freshness {}", clean(&s.freshness)));
        }
        if !s.cost.is_empty() {
            facts.push(format!("cost {}", clean(&s.cost)));
        }
        if s.cache_ttl_ms > 0 {
            facts.push(format!("cached {} s", s.cache_ttl_ms / 1000));
        }
        let _ = writeln!(out, "{indent}{}", facts.join(" · "));
    }
    out
}

/// One document: title, source, url, updated, type, metadata, then the content as sent.
pub fn document(d: &Document) -> String {
    let mut out = format!("{}\n", clean(&d.title));
    let mut rows = vec![
        vec!["source".to_string(), clean(&d.source)],
        vec!["id".to_string(), clean(&d.id)],
        vec!["url".to_string(), clean(&d.url)],
        vec!["updated".to_string(), datetime(d.updated_at.as_ref())],
        vec!["type".to_string(), clean(&d.doc_type)],
    ];
    let mut meta: Vec<(&String, &String)> = d.metadata.iter().collect();
    meta.sort();
    rows.extend(meta.into_iter().map(|(k, v)| vec![clean(k), clean(v)]));
    rows.retain(|r| !r[1].is_empty());
    out.push_str(&table(None, &rows, &[]));
    out.push('\n');
    let content: String =
        d.content.chars().map(|c| if c.is_control() && c != '\n' && c != '\t' { ' ' } else { c }).collect();
    out.push_str(content.trim_end());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use fedsearch_proto::{
        api::{RoutedSource, SearchResponse},
        types::{DuplicateRef, Explanation},
    };

    use super::*;

    fn ts(s: &str) -> Option<Timestamp> {
        fedsearch_core::time::parse_rfc3339(s)
    }

    /// A response like the demo's "支付超时" question.
    pub(crate) fn sample_response() -> SearchResponse {
        SearchResponse {
            hits: vec![
                Hit {
                    id: "tickets:TCK-5002".into(),
                    source: "tickets".into(),
                    title: "支付超时：订单SO20261004付款失败，客户李娜".into(),
                    snippet: "客户李娜的订单SO20261004\n付款失败，网关超时".into(),
                    url: "https://support.spruce-mall.example/tickets/TCK-5002".into(),
                    updated_at: ts("2026-11-27T09:00:00Z"),
                    rank_in_source: 1,
                    source_score: Some(7.5),
                    fused_score: 0.0325,
                    metadata: HashMap::from([
                        ("status".into(), "in_progress".into()),
                        ("priority".into(), "P1".into()),
                    ]),
                    full_text_ref: "tickets:TCK-5002".into(),
                    duplicates: vec![DuplicateRef {
                        source: "incidents".into(),
                        id: "incidents:INC-2041".into(),
                        url: "https://ops.example/INC-2041".into(),
                        rank_in_source: 2,
                        matched_on: "content".into(),
                    }],
                    doc_type: "ticket".into(),
                    explanation: Some(Explanation {
                        method: "rrf".into(),
                        contributions: vec![],
                        summary: "rrf k=60: tickets#1 1/61 + incidents#2 1/62".into(),
                        rerank: None,
                    }),
                    version: None,
                },
                Hit {
                    id: "wiki:support:runbook_payment_timeout".into(),
                    source: "wiki".into(),
                    title: "Payment timeout runbook".into(),
                    snippet: "Check INC, gateway status, retry".into(),
                    url: "http://127.0.0.1:8080/doku.php?id=support:runbook_payment_timeout".into(),
                    updated_at: ts("2026-11-20T00:00:00Z"),
                    rank_in_source: 1,
                    fused_score: 0.0164,
                    full_text_ref: "wiki:support:runbook_payment_timeout".into(),
                    doc_type: "page".into(),
                    ..Default::default()
                },
            ],
            sources: vec![
                SourceStatus {
                    source: "tickets".into(),
                    state: SourceState::Ok as i32,
                    hit_count: 3,
                    latency_ms: 42,
                    code: "OK".into(),
                    ..Default::default()
                },
                SourceStatus {
                    source: "维基".into(),
                    state: SourceState::Unavailable as i32,
                    hit_count: 0,
                    latency_ms: 1200,
                    message: "adapter unreachable".into(),
                    code: "UNAVAILABLE".into(),
                },
            ],
            routing: Some(RoutingDecision {
                strategy: "rules".into(),
                selected: vec![
                    RoutedSource {
                        source: "tickets".into(),
                        reason: "matched keyword 支付超时".into(),
                        ..Default::default()
                    },
                    RoutedSource {
                        source: "wiki".into(), reason: "matched keyword 手册".into(), ..Default::default()
                    },
                ],
                not_selected: vec![RoutedSource {
                    source: "shop".into(),
                    reason: "no order number".into(),
                    ..Default::default()
                }],
            }),
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            fusion: Some(FusionReport {
                method: "rrf".into(),
                rrf_k: 60,
                in_process_fallback: true,
                duplicates_merged: 1,
                message: String::new(),
            }),
            context: None,
        }
    }

    #[test]
    fn a_search_response_shows_routing_statuses_hits_citations_and_trace() {
        let text = search_response(&sample_response(), false);
        for expected in [
            "routing: rules",
            "selected      tickets  matched keyword 支付超时",
            "not selected  shop     no order number",
            "  tickets  ok              3    42 ms\n",
            "  维基     unavailable     0  1200 ms  UNAVAILABLE: adapter unreachable\n",
            "UNAVAILABLE: adapter unreachable",
            "1. 支付超时：订单SO20261004付款失败，客户李娜",
            "tickets · ticket · 2026-11-27 · priority=P1 status=in_progress",
            "客户李娜的订单SO20261004 付款失败，网关超时",
            "cite: https://support.spruce-mall.example/tickets/TCK-5002 · ref tickets:TCK-5002",
            "also found in: incidents incidents:INC-2041 (#2, same content)",
            "2. Payment timeout runbook",
            "fusion: rrf k=60, 1 duplicates merged, fused in the router (fusion service unreachable)",
            "trace: 4bf92f3577b34da6a3ce929d0e0e4736",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        assert!(!text.contains("why:"), "explanations only with --explain:\n{text}");
        assert!(text.trim_end().ends_with("trace: 4bf92f3577b34da6a3ce929d0e0e4736"), "{text}");
    }

    #[test]
    fn explain_adds_the_summary_and_fused_score() {
        let text = hits(&sample_response().hits, true);
        assert!(text.contains("why: rrf k=60: tickets#1 1/61 + incidents#2 1/62 (fused score 0.0325)"), "{text}");
        assert!(text.contains("why: no explanation (fused score 0.0164)"), "{text}");
    }

    #[test]
    fn chinese_cells_align_with_ascii_ones_by_display_width() {
        let text = status_table(&sample_response().sources);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines.len(), 3, "{text}");
        // The STATE column starts at the same display column on every line.
        let state_col = |line: &str, word: &str| line[..line.find(word).unwrap()].width();
        let header = state_col(lines[0], "STATE");
        assert_eq!(state_col(lines[1], "ok"), header, "{text}");
        assert_eq!(state_col(lines[2], "unavailable"), header, "{text}");
    }

    #[test]
    fn hit_numbers_are_right_aligned_so_titles_line_up() {
        let many: Vec<Hit> =
            (0..10).map(|i| Hit { title: format!("标题 {i}"), source: "s".into(), ..Default::default() }).collect();
        let text = hits(&many, false);
        assert!(text.starts_with(" 1. 标题 0\n"), "{text}");
        assert!(text.contains("\n10. 标题 9\n"), "{text}");
    }

    #[test]
    fn control_characters_from_the_server_cannot_reach_the_terminal() {
        let hit = Hit { title: "evil\u{1b}[2Jtitle\r\nfake".into(), snippet: "a\u{7}b".into(), ..Default::default() };
        let text = hits(&[hit], false);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
        assert!(text.contains("evil [2Jtitle fake"), "{text}");
    }

    #[test]
    fn truncation_is_by_display_width_and_never_splits_a_character() {
        assert_eq!(truncate("支付超时处理手册", 9), "支付超时…");
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("abcdef", 4), "abc…");
        let long = "发".repeat(400);
        assert!(truncate(&long, SNIPPET_WIDTH).width() <= SNIPPET_WIDTH);
    }

    #[test]
    fn a_streamed_status_is_one_line() {
        let s = &sample_response().sources[1];
        assert_eq!(status_line(s), "  维基: unavailable, 0 hits in 1200 ms (UNAVAILABLE: adapter unreachable)\n");
        let snap = FusedSnapshot { hits: sample_response().hits, sources_done: vec!["tickets".into()] };
        assert_eq!(snapshot(&snap), "  … 2 fused hits so far (done: tickets)\n");
        let ok = SourceStatus { hit_count: 1, code: "OK".into(), ..sample_response().sources[0].clone() };
        assert_eq!(status_line(&ok), "  tickets: ok, 1 hit in 42 ms\n");
    }

    #[test]
    fn sources_show_kind_description_and_when_to_use() {
        let list = vec![
            SourceInfo {
                name: "tickets".into(),
                kind: "search".into(),
                description: "工单 support tickets".into(),
                when_to_use: "customer complaints".into(),
                when_not_to_use: "order status".into(),
                weight: 1.0,
                timeout_ms: 800,
                supported_filters: vec!["time_range".into()],
                ..Default::default()
            },
            SourceInfo {
                name: "wiki".into(),
                kind: "wiki".into(),
                description: "policies".into(),
                weight: 2.0,
                ..Default::default()
            },
        ];
        let text = sources(&list);
        assert!(text.starts_with("tickets  search  工单 support tickets\n"), "{text}");
        assert!(text.contains("\n                 use for: customer complaints\n"), "{text}");
        assert!(text.contains("not for: order status"), "{text}");
        assert!(text.contains("filters time_range · weight 1 · timeout 800 ms"), "{text}");
        assert!(text.contains("wiki     wiki    policies\n"), "{text}");
        assert_eq!(sources(&[]), "no sources available to you\n");
    }

    #[test]
    fn a_document_shows_its_header_then_the_content() {
        let doc = Document {
            id: "public:return_policy".into(),
            source: "wiki".into(),
            title: "退货政策 Return policy (2026)".into(),
            content: "非质量问题拒收收取退回运费 12 元\n\nQuality issues are free.\n".into(),
            url: "http://127.0.0.1:8080/doku.php?id=public:return_policy".into(),
            updated_at: ts("2026-10-20T06:30:00Z"),
            metadata: HashMap::from([("namespace".into(), "public".into())]),
            doc_type: "policy".into(),
        };
        let text = document(&doc);
        assert!(text.starts_with("退货政策 Return policy (2026)\n  source     wiki\n"), "{text}");
        assert!(text.contains("  updated    2026-10-20 06:30 UTC\n"), "{text}");
        assert!(text.contains("  namespace  public\n"), "{text}");
        assert!(text.ends_with("\n\n非质量问题拒收收取退回运费 12 元\n\nQuality issues are free.\n"), "{text}");
    }

    #[test]
    fn a_context_and_empty_results_render() {
        let mut r = sample_response();
        r.hits.clear();
        r.context =
            Some(AgentContext { token_budget: 500, tokens_used: 120, items: vec![], text: "[1] a\n[2] b".into() });
        let text = search_result(&r, false);
        assert!(text.contains("no hits\n"), "{text}");
        assert!(text.contains("context: 120 of 500 tokens, 0 items\n  | [1] a\n  | [2] b\n"), "{text}");
    }
}
