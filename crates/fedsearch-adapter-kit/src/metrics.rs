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
