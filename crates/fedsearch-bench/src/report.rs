//! Benchmark tools for fedsearch: latency histograms, error counts and the run report.
//!
//! Latencies are recorded in microseconds in [`hdrhistogram`] histograms (3 significant
//! digits). "Overhead" is a request's latency minus the slowest scripted source's latency:
//! what the router, fusion and the network add on top of the sources themselves.

use std::{collections::BTreeMap, time::Duration};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency recorded exactly (longer ones are clamped to it): 120 s.
const MAX_MICROS: u64 = 120_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("static histogram bounds are valid")
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_MICROS)
}

/// One successful answer, as seen by the load generator.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub latency: Duration,
    /// The largest `latency_ms` the router reported among the sources.
    pub slowest_reported_source: Duration,
    /// Some source did not end `OK`.
    pub partial: bool,
    /// The router fused in-process because the fusion service was not usable.
    pub fusion_fallback: bool,
    /// Some source ended `TIMEOUT`.
    pub timed_out: bool,
    /// Fused hits in the answer.
    pub hits: u32,
}

/// Collects outcomes of one measured run.
#[derive(Debug, Clone)]
pub struct Recorder {
    slowest_source: Duration,
    latency: Histogram<u64>,
    overhead: Histogram<u64>,
    reported_source: Histogram<u64>,
    ok: u64,
    partial: u64,
    fusion_fallback: u64,
    timed_out: u64,
    without_hits: u64,
    errors: BTreeMap<String, u64>,
}

impl Recorder {
    /// `slowest_source` is the latency of the slowest scripted source (`--slowest-source-ms`).
    pub fn new(slowest_source: Duration) -> Self {
        Self {
            slowest_source,
            latency: histogram(),
            overhead: histogram(),
            reported_source: histogram(),
            ok: 0,
            partial: 0,
            fusion_fallback: 0,
            timed_out: 0,
            without_hits: 0,
            errors: BTreeMap::new(),
        }
    }

    pub fn answer(&mut self, a: Answer) {
        self.ok += 1;
        self.partial += u64::from(a.partial);
        self.fusion_fallback += u64::from(a.fusion_fallback);
        self.timed_out += u64::from(a.timed_out);
        self.without_hits += u64::from(a.hits == 0);
        self.latency.saturating_record(micros(a.latency));
        self.overhead.saturating_record(micros(a.latency.saturating_sub(self.slowest_source)));
        self.reported_source.saturating_record(micros(a.slowest_reported_source));
    }

    /// A failed call, by its gRPC code name (or a load-generator reason such as `LOADGEN_BACKLOG`).
    pub fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_string()).or_default() += 1;
    }

    pub fn ok(&self) -> u64 {
        self.ok
    }

    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The report for a run that lasted `elapsed` (first send to last answer).
    pub fn report(&self, run: RunInfo, elapsed: Duration) -> Report {
        let secs = elapsed.as_secs_f64();
        Report {
            achieved_qps: if secs > 0.0 { round2(self.ok as f64 / secs) } else { 0.0 },
            sent: self.ok + self.error_total(),
            ok: self.ok,
            errors: self.errors.clone(),
            error_total: self.error_total(),
            partial: self.partial,
            fusion_fallback: self.fusion_fallback,
            timed_out: self.timed_out,
            without_hits: self.without_hits,
            elapsed_s: round2(secs),
            slowest_source_ms: self.slowest_source.as_millis() as u64,
            latency_ms: Percentiles::of(&self.latency, self.ok),
            overhead_ms: Percentiles::of(&self.overhead, self.ok),
            router_reported_slowest_source_ms: Percentiles::of(&self.reported_source, self.ok),
            run,
        }
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What was asked of the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunInfo {
    pub label: String,
    /// `open` (fixed rate) or `closed` (fixed concurrency).
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    pub duration_s: f64,
}

/// p50/p95/p99/max in milliseconds (`null` in JSON when nothing was recorded).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Percentiles {
    fn of(h: &Histogram<u64>, count: u64) -> Self {
        if count == 0 {
            return Self { p50: None, p95: None, p99: None, max: None };
        }
        let ms = |us: u64| Some(round2(us as f64 / 1000.0));
        Self {
            p50: ms(h.value_at_quantile(0.50)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}

/// The result of one run, printed as a Markdown table row and/or JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub run: RunInfo,
    pub sent: u64,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    pub error_total: u64,
    /// Answers where at least one source did not end OK.
    pub partial: u64,
    /// Answers fused in-process because the fusion service was not usable.
    pub fusion_fallback: u64,
    /// Answers where at least one source ended `TIMEOUT`.
    pub timed_out: u64,
    /// Answers with no fused hit.
    pub without_hits: u64,
    pub elapsed_s: f64,
    pub achieved_qps: f64,
    pub slowest_source_ms: u64,
    pub latency_ms: Percentiles,
    /// Latency minus `slowest_source_ms`.
    pub overhead_ms: Percentiles,
    /// The slowest source's latency as the router measured it (its `SourceStatus.latency_ms`).
    pub router_reported_slowest_source_ms: Percentiles,
}

/// The header matching [`Report::markdown_row`].
pub fn markdown_header() -> String {
    "| run | mode | offered | sent | ok | errors | partial | achieved q/s | p50 ms | p95 ms | p99 ms | max ms | overhead p50 ms | overhead p95 ms | overhead p99 ms |\n\
     |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        .to_string()
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.2}"))
}

impl Report {
    pub fn markdown_row(&self) -> String {
        let offered = match (self.run.rate, self.run.concurrency) {
            (Some(r), _) => format!("{r} q/s"),
            (None, Some(c)) => format!("{c} conc."),
            (None, None) => "–".into(),
        };
        let errors = if self.errors.is_empty() {
            "0".to_string()
        } else {
            self.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")
        };
        format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
            self.run.label,
            self.run.mode,
            offered,
            self.sent,
            self.ok,
            errors,
            self.partial,
            self.achieved_qps,
            cell(self.latency_ms.p50),
            cell(self.latency_ms.p95),
            cell(self.latency_ms.p99),
            cell(self.latency_ms.max),
            cell(self.overhead_ms.p50),
            cell(self.overhead_ms.p95),
            cell(self.overhead_ms.p99),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunInfo {
        RunInfo { label: "t".into(), mode: "open".into(), rate: Some(100.0), concurrency: None, duration_s: 1.0 }
    }

    fn answer(ms: u64) -> Answer {
        Answer {
            latency: Duration::from_millis(ms),
            slowest_reported_source: Duration::from_millis(30),
            partial: false,
            fusion_fallback: false,
            timed_out: false,
            hits: 10,
        }
    }

    #[test]
    fn overhead_is_latency_minus_the_slowest_source() {
        let mut r = Recorder::new(Duration::from_millis(30));
        for ms in 31..=130 {
            r.answer(answer(ms));
        }
        let rep = r.report(run(), Duration::from_secs(2));
        assert_eq!(rep.ok, 100);
        assert_eq!(rep.achieved_qps, 50.0);
        let (p50, o50) = (rep.latency_ms.p50.unwrap(), rep.overhead_ms.p50.unwrap());
        assert!((p50 - 80.0).abs() < 0.2, "{p50}");
        assert!((o50 - 50.0).abs() < 0.2, "{o50}");
        assert!((rep.overhead_ms.max.unwrap() - 100.0).abs() < 0.2);
        assert!(rep.overhead_ms.p99.unwrap() <= rep.overhead_ms.max.unwrap());
    }

    #[test]
    fn faster_than_the_source_counts_as_zero_overhead_not_a_panic() {
        let mut r = Recorder::new(Duration::from_millis(30));
        r.answer(answer(5));
        let rep = r.report(run(), Duration::from_secs(1));
        assert!(rep.overhead_ms.max.unwrap() < 0.01);
    }

    #[test]
    fn errors_are_counted_by_code_and_shown_in_the_row() {
        let mut r = Recorder::new(Duration::ZERO);
        r.error("UNAVAILABLE");
        r.error("UNAVAILABLE");
        r.error("RESOURCE_EXHAUSTED");
        r.answer(Answer { partial: true, ..answer(1) });
        r.answer(Answer { partial: true, timed_out: true, ..answer(1) });
        r.answer(Answer { hits: 0, ..answer(1) });
        let rep = r.report(run(), Duration::from_secs(1));
        assert_eq!((rep.timed_out, rep.without_hits), (1, 1));
        assert_eq!(rep.sent, 6);
        assert_eq!(rep.error_total, 3);
        assert_eq!(rep.errors["UNAVAILABLE"], 2);
        assert_eq!(rep.partial, 2);
        let row = rep.markdown_row();
        assert!(row.contains("RESOURCE_EXHAUSTED: 1, UNAVAILABLE: 2"), "{row}");
        assert_eq!(row.matches('|').count(), markdown_header().lines().next().unwrap().matches('|').count());
    }

    #[test]
    fn an_empty_run_reports_no_percentiles_and_serialises() {
        let rep = Recorder::new(Duration::ZERO).report(run(), Duration::ZERO);
        assert_eq!(rep.latency_ms.p50, None);
        assert_eq!(rep.achieved_qps, 0.0);
        let json = serde_json::to_value(&rep).unwrap();
        assert!(json["latency_ms"]["p99"].is_null());
        assert_eq!(json["run"]["mode"], "open");
        assert!(rep.markdown_row().contains("–"));
    }
}
