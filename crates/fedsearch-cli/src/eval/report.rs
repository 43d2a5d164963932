//! The evaluation report: per-question rows, a summary, a baseline comparison, thresholds.

use std::{collections::BTreeMap, fmt::Write as _, path::Path, time::Duration};

use fedsearch_proto::api::SearchResponse;
use serde::{Deserialize, Serialize};

use super::{
    labels::Question,
    metrics::{Answer, Scores},
};
use crate::cli::EvalArgs;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuestionResult {
    pub id: String,
    pub user: String,
    #[serde(default)]
    pub lang: Option<String>,
    #[serde(default)]
    pub kinds: Vec<String>,
    pub scores: Scores,
    pub selected: Vec<String>,
    pub strategy: String,
    /// Ids of the returned hits, in order.
    pub top: Vec<String>,
    /// The grade each returned hit earned, in order (0 = not relevant).
    #[serde(default)]
    pub grades: Vec<u8>,
    /// The score each returned hit was ordered by, in order: the router's re-scoring, else the
    /// fused score (what an offline study of a selection rule reads).
    #[serde(default)]
    pub hit_scores: Vec<f64>,
    /// Sources that did not answer OK, as `source=STATE`.
    pub not_ok: Vec<String>,
    pub latency_ms: u64,
}

impl QuestionResult {
    pub fn new(q: &Question, a: &Answer, scores: Scores, r: &SearchResponse, latency: Duration) -> Self {
        use fedsearch_proto::types::SourceState;
        QuestionResult {
            id: q.id.clone(),
            user: q.user.clone(),
            lang: q.lang.clone(),
            kinds: q.kinds.clone(),
            scores,
            selected: a.selected_sources.clone(),
            strategy: r.routing.as_ref().map(|d| d.strategy.clone()).unwrap_or_default(),
            top: r.hits.iter().map(|h| h.id.clone()).collect(),
            grades: super::metrics::grades(q, a),
            hit_scores: r.hits.iter().map(ordered_by).collect(),
            not_ok: r
                .sources
                .iter()
                .filter(|s| s.state() != SourceState::Ok)
                .map(|s| format!("{}={}", s.source, s.state().as_str_name().trim_start_matches("SOURCE_STATE_")))
                .collect(),
            latency_ms: latency.as_millis() as u64,
        }
    }
}

/// The score a hit was ordered by: its re-scoring's, else its fused score.
fn ordered_by(h: &fedsearch_proto::types::Hit) -> f64 {
    h.explanation.as_ref().and_then(|e| e.rerank.as_ref()).map_or(h.fused_score, |r| r.score)
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub questions: usize,
    pub ndcg: f64,
    pub ndcg_median: f64,
    pub p5: f64,
    pub mrr: f64,
    pub routing_recall: f64,
    pub routing_precision: f64,
    pub source_recall: f64,
    /// Share of questions with every expected source in the top k.
    pub source_recall_full: f64,
    pub forbidden: usize,
    pub superseded_first: usize,
    pub latency_p50_ms: u64,
    /// Mean nDCG by language and by kind.
    pub ndcg_by_group: BTreeMap<String, f64>,
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (n, s) = v.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    if n == 0 { 0.0 } else { s / n as f64 }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len().is_multiple_of(2) { (v[m - 1] + v[m]) / 2.0 } else { v[m] }
}

impl Summary {
    pub fn of(results: &[QuestionResult]) -> Summary {
        let s = |f: fn(&Scores) -> f64| mean(results.iter().map(|r| f(&r.scores)));
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in results {
            let lang = r.lang.iter().map(|l| format!("lang:{l}"));
            for g in lang.chain(r.kinds.iter().map(|k| format!("kind:{k}"))) {
                groups.entry(g).or_default().push(r.scores.ndcg);
            }
        }
        let mut latencies: Vec<u64> = results.iter().map(|r| r.latency_ms).collect();
        latencies.sort_unstable();
        Summary {
            questions: results.len(),
            ndcg: s(|x| x.ndcg),
            ndcg_median: median(results.iter().map(|r| r.scores.ndcg).collect()),
            p5: s(|x| x.p5),
            mrr: s(|x| x.mrr),
            routing_recall: s(|x| x.routing_recall),
            routing_precision: s(|x| x.routing_precision),
            source_recall: s(|x| x.source_recall),
            source_recall_full: mean(results.iter().map(|r| f64::from(u8::from(r.scores.source_recall >= 1.0)))),
            forbidden: results.iter().map(|r| r.scores.forbidden.len()).sum(),
            superseded_first: results.iter().map(|r| r.scores.superseded_first.len()).sum(),
            latency_p50_ms: latencies.get(latencies.len() / 2).copied().unwrap_or(0),
            ndcg_by_group: groups.into_iter().map(|(g, v)| (g, mean(v.into_iter()))).collect(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub summary: Summary,
    pub questions: Vec<QuestionResult>,
}

pub fn json(summary: &Summary, results: &[QuestionResult]) -> String {
    let report = Report { summary: summary.clone(), questions: results.to_vec() };
    serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
}

pub fn read_baseline(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a `fedsearch eval --json` report: {e}", path.display()))
}

fn summary_rows(s: &Summary) -> Vec<(&'static str, f64)> {
    vec![
        ("nDCG@k", s.ndcg),
        ("nDCG@k median", s.ndcg_median),
        ("P@5", s.p5),
        ("MRR", s.mrr),
        ("routing recall", s.routing_recall),
        ("routing precision", s.routing_precision),
        ("source recall@k", s.source_recall),
        ("all sources@k", s.source_recall_full),
    ]
}

pub fn text(summary: &Summary, results: &[QuestionResult], baseline: Option<&Report>, k: u32) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<8} {:<6} {:>5} {:>4} {:>4} {:>5} {:>5}  selected / not ok / top ids",
        "id", "user", "nDCG", "P@5", "MRR", "rRec", "rPrec"
    );
    for r in results {
        let s = &r.scores;
        let mut flags = String::new();
        if !s.forbidden.is_empty() {
            let _ = write!(flags, " FORBIDDEN {:?}", s.forbidden);
        }
        if !s.superseded_first.is_empty() {
            let _ = write!(flags, " SUPERSEDED-FIRST {:?}", s.superseded_first);
        }
        let top: Vec<&str> = r.top.iter().take(5).map(String::as_str).collect();
        let _ = writeln!(
            out,
            "{:<8} {:<6} {:>5.2} {:>4.1} {:>4.2} {:>5.2} {:>5.2}  [{}] [{}] {}{}",
            r.id,
            r.user,
            s.ndcg,
            s.p5,
            s.mrr,
            s.routing_recall,
            s.routing_precision,
            r.selected.join(","),
            r.not_ok.join(","),
            top.join(" "),
            flags
        );
    }
    let _ = writeln!(out, "\n{} questions, k = {k}", summary.questions);
    let base = baseline.map(|b| summary_rows(&b.summary));
    for (i, (name, v)) in summary_rows(summary).into_iter().enumerate() {
        match &base {
            Some(b) => {
                let _ = writeln!(out, "{name:<20} {v:.3}  (baseline {:.3}, {:+.3})", b[i].1, v - b[i].1);
            }
            None => {
                let _ = writeln!(out, "{name:<20} {v:.3}");
            }
        }
    }
    let _ = writeln!(out, "{:<20} {}", "forbidden ids shown", summary.forbidden);
    let _ = writeln!(out, "{:<20} {}", "superseded first", summary.superseded_first);
    let _ = writeln!(out, "{:<20} {} ms", "latency p50", summary.latency_p50_ms);
    for (g, v) in &summary.ndcg_by_group {
        let _ = writeln!(out, "  nDCG {g:<22} {v:.3}");
    }
    if let Some(b) = baseline {
        let before: BTreeMap<&str, f64> = b.questions.iter().map(|q| (q.id.as_str(), q.scores.ndcg)).collect();
        for r in results {
            if let Some(old) = before.get(r.id.as_str())
                && (r.scores.ndcg - old).abs() >= 0.05
            {
                let _ = writeln!(out, "  {} nDCG {old:.2} → {:.2}", r.id, r.scores.ndcg);
            }
        }
    }
    out
}

/// Fails when any forbidden id was shown or a threshold was missed; names every miss.
pub fn check(s: &Summary, args: &EvalArgs) -> Result<(), String> {
    let mut missed = Vec::new();
    if s.forbidden > 0 {
        missed.push(format!("{} forbidden ids were shown", s.forbidden));
    }
    for (name, value, min) in [
        ("nDCG", s.ndcg, args.min_ndcg),
        ("routing recall", s.routing_recall, args.min_routing_recall),
        ("routing precision", s.routing_precision, args.min_routing_precision),
    ] {
        if let Some(min) = min
            && value < min
        {
            missed.push(format!("{name} {value:.3} < {min}"));
        }
    }
    if let Some(max) = args.max_superseded_first
        && s.superseded_first > max
    {
        missed.push(format!("{} superseded-first > {max}", s.superseded_first));
    }
    if missed.is_empty() { Ok(()) } else { Err(format!("eval thresholds missed: {}", missed.join("; "))) }
}

/// Adoption per source (share of its shown hits that earned a grade) and the weight it
/// suggests: adoption relative to the mean over sources, clamped to 0.25..=4.
pub fn suggested_weights(results: &[QuestionResult]) -> Vec<(String, usize, f64, f64)> {
    let mut by: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in results {
        for (id, g) in r.top.iter().zip(&r.grades) {
            count(&mut by, id, *g > 0);
        }
    }
    weights_of(by)
}

fn count(by: &mut BTreeMap<String, (usize, usize)>, id: &str, adopted: bool) {
    let e = by.entry(id.split(':').next().unwrap_or_default().to_string()).or_default();
    e.0 += 1;
    e.1 += usize::from(adopted);
}

/// The same from the router's feedback file: a shown id is adopted when the agent used it.
pub fn weights_from_feedback(jsonl: &str) -> Result<Vec<(String, usize, f64, f64)>, String> {
    #[derive(Deserialize)]
    struct Line {
        #[serde(default)]
        used: Vec<String>,
        #[serde(default)]
        rejected: Vec<String>,
        #[serde(default)]
        shown: Vec<String>,
    }
    let mut by: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (n, raw) in jsonl.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let line: Line = serde_json::from_str(raw).map_err(|e| format!("feedback line {}: {e}", n + 1))?;
        let shown: Vec<&String> = if line.shown.is_empty() {
            line.used.iter().chain(&line.rejected).collect()
        } else {
            line.shown.iter().collect()
        };
        for id in shown {
            count(&mut by, id, line.used.contains(id));
        }
    }
    if by.is_empty() {
        return Err("the feedback file has no reports".into());
    }
    Ok(weights_of(by))
}

fn weights_of(by: BTreeMap<String, (usize, usize)>) -> Vec<(String, usize, f64, f64)> {
    let adoption: Vec<(String, usize, f64)> =
        by.into_iter().map(|(s, (n, rel))| (s, n, if n == 0 { 0.0 } else { rel as f64 / n as f64 })).collect();
    let mean = mean(adoption.iter().map(|a| a.2));
    adoption
        .into_iter()
        .map(|(s, n, a)| {
            let w = if mean > 0.0 { (a / mean).clamp(0.25, 4.0) } else { 1.0 };
            (s, n, a, (w * 100.0).round() / 100.0)
        })
        .collect()
}

pub fn weights_text(rows: &[(String, usize, f64, f64)]) -> String {
    let mut out = String::from("\nsource       shown  adoption  suggested weight\n");
    for (s, n, a, w) in rows {
        let _ = writeln!(out, "{s:<12} {n:>5}  {a:>8.3}  {w:.2}");
    }
    let flags: Vec<String> = rows.iter().map(|(s, _, _, w)| format!("--weight {s}={w}")).collect();
    let _ = writeln!(out, "try: {}", flags.join(" "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_gives_adoption_and_weights_relative_to_the_mean() {
        let jsonl = r#"{"used":["kb:1"],"shown":["kb:1","kb:2","wiki:a"]}
{"used":["wiki:a","wiki:b"],"rejected":["kb:3"]}
"#;
        let rows = weights_from_feedback(jsonl).unwrap();
        let kb = rows.iter().find(|r| r.0 == "kb").unwrap();
        let wiki = rows.iter().find(|r| r.0 == "wiki").unwrap();
        assert_eq!((kb.1, wiki.1), (3, 3));
        assert!((kb.2 - 1.0 / 3.0).abs() < 1e-9 && (wiki.2 - 2.0 / 3.0).abs() < 1e-9);
        assert!((kb.3 - 0.67).abs() < 1e-9 && (wiki.3 - 1.33).abs() < 1e-9, "{rows:?}");
        assert!(weights_from_feedback("").is_err());
        assert!(weights_from_feedback("not json").unwrap_err().contains("line 1"));
    }
}
