//! The adapter side of the per-source metrics (names in docs/telemetry.md): sub-queries by
//! source and state with their latency and hits, the backend work inside each (`search`, the
//! adapter's own backend call), and fetches.

use std::sync::LazyLock;

use fedsearch_core::metrics::{meter, seconds_histogram, source_attrs};
use fedsearch_proto::types::SourceState;
use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram},
};
use tokio::time::Instant;

struct AdapterMetrics {
    subquery: Histogram<f64>,
    backend: Histogram<f64>,
    fetch: Histogram<f64>,
    hits: Counter<u64>,
}

static METRICS: LazyLock<AdapterMetrics> = LazyLock::new(|| {
    let m = meter();
    AdapterMetrics {
        subquery: seconds_histogram(
            &m,
            "fedsearch.adapter.subquery.duration",
            "one sub-query in the adapter, from arrival to SubQueryDone, by source and state",
        ),
        backend: seconds_histogram(
            &m,
            "fedsearch.adapter.backend.duration",
            "the adapter's backend work for one sub-query (query building, backend calls, mapping)",
        ),
        fetch: seconds_histogram(&m, "fedsearch.adapter.fetch.duration", "one document fetch, by source and state"),
        hits: m
            .u64_counter("fedsearch.adapter.hits")
            .with_unit("{hit}")
            .with_description("hits the adapter returned, by source")
            .build(),
    }
});

/// Records one sub-query in `fedsearch.adapter.subquery.duration` exactly once, when it ends:
/// with its state by [`SubQueryTimer::done`], or dropped unfinished as `skipped` (cancelled by
/// the router, or its stream gone) or `error` (the adapter panicked). So every sub-query a
/// stream carries is counted when it ends, however long its stream lives.
pub(crate) struct SubQueryTimer {
    source: String,
    started: Instant,
    recorded: bool,
}

impl SubQueryTimer {
    pub(crate) fn start(source: String) -> Self {
        Self { source, started: Instant::now(), recorded: false }
    }

    /// The source label it records under.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    pub(crate) fn done(mut self, state: SourceState, hits: u32) {
        self.recorded = true;
        subquery_done(&self.source, state, self.started, hits);
    }
}

impl Drop for SubQueryTimer {
    fn drop(&mut self) {
        if !self.recorded {
            let state = if std::thread::panicking() { SourceState::Error } else { SourceState::Skipped };
            subquery_done(&self.source, state, self.started, 0);
        }
    }
}

pub(crate) fn subquery_done(source: &str, state: SourceState, started: Instant, hits: u32) {
    let m = &*METRICS;
    m.subquery.record(started.elapsed().as_secs_f64(), &source_attrs(source, state.label()));
    if hits > 0 {
        m.hits.add(hits as u64, &[KeyValue::new("fedsearch.source", source.to_string())]);
    }
}

pub(crate) fn backend_done(source: &str, state: SourceState, started: Instant) {
    METRICS.backend.record(started.elapsed().as_secs_f64(), &source_attrs(source, state.label()));
}

pub(crate) fn fetch_done(source: &str, state: SourceState, started: Instant) {
    METRICS.fetch.record(started.elapsed().as_secs_f64(), &source_attrs(source, state.label()));
}
