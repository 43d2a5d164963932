//! The router's instruments (names, units and attributes listed in docs/telemetry.md): per
//! source requests, states, latency and hits; the answer cache; breaker state and
//! transitions; admission (in flight, limit, refusals by reason — never by user); fusion
//! fallbacks; audit writes. Made once per process from [`fedsearch_core::metrics::meter`].

use std::sync::LazyLock;

use fedsearch_core::metrics::{meter, seconds_histogram};
use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram},
};

pub struct RouterMetrics {
    pub source_duration: Histogram<f64>,
    pub source_hits: Counter<u64>,
    pub cache: Counter<u64>,
    pub refusals: Counter<u64>,
    pub fusion_fallbacks: Counter<u64>,
    pub audit_records: Counter<u64>,
    pub mcp_tool_calls: Counter<u64>,
}

static METRICS: LazyLock<RouterMetrics> = LazyLock::new(|| {
    let m = meter();
    RouterMetrics {
        source_duration: seconds_histogram(
            &m,
            "fedsearch.router.source.duration",
            "one source's sub-query as the router saw it, by source and final state",
        ),
        source_hits: m
            .u64_counter("fedsearch.router.source.hits")
            .with_unit("{hit}")
            .with_description("hits received from each source")
            .build(),
        cache: m
            .u64_counter("fedsearch.router.cache.requests")
            .with_unit("{request}")
            .with_description("answer-cache look-ups of sources with cache_ttl, by result (hit, miss)")
            .build(),
        refusals: m
            .u64_counter("fedsearch.router.admission.refusals")
            .with_unit("{call}")
            .with_description("calls refused at admission, by reason (overloaded, user_in_flight, user_rate)")
            .build(),
        fusion_fallbacks: m
            .u64_counter("fedsearch.router.fusion.fallbacks")
            .with_unit("{search}")
            .with_description("searches fused in-process because the fusion service failed, by reason")
            .build(),
        audit_records: m
            .u64_counter("fedsearch.router.audit.records")
            .with_unit("{record}")
            .with_description("audit records by sink (file, postgres) and outcome (written, failed, dropped)")
            .build(),
        mcp_tool_calls: m
            .u64_counter("fedsearch.router.mcp.tool_calls")
            .with_unit("{call}")
            .with_description("MCP tool calls by tool and outcome (ok, error)")
            .build(),
    }
});

pub fn get() -> &'static RouterMetrics {
    &METRICS
}

/// One source's sub-query ended.
pub fn source_done(source: &str, state: &'static str, seconds: f64, hits: u32) {
    let m = get();
    m.source_duration.record(seconds, &fedsearch_core::metrics::source_attrs(source, state));
    if hits > 0 {
        m.source_hits.add(hits as u64, &[KeyValue::new("fedsearch.source", source.to_string())]);
    }
}

pub fn cache(source: &str, hit: bool) {
    get().cache.add(
        1,
        &[
            KeyValue::new("fedsearch.source", source.to_string()),
            KeyValue::new("fedsearch.cache.result", if hit { "hit" } else { "miss" }),
        ],
    );
}

pub fn refused(reason: &'static str) {
    get().refusals.add(1, &[KeyValue::new("fedsearch.admission.reason", reason)]);
}

/// A bounded category of a fusion fallback reason (the reason text itself varies).
pub fn fusion_fallback(reason: &str) {
    let category = if reason.contains("not keeping up") {
        "slow"
    } else if reason.contains("in time") {
        "timeout"
    } else if reason.contains("unavailable") {
        "unavailable"
    } else if reason.contains("closed") || reason.contains("ended") {
        "stream_closed"
    } else {
        "failed"
    };
    get().fusion_fallbacks.add(1, &[KeyValue::new("fedsearch.fusion.fallback_reason", category)]);
}

pub fn audit(sink: &'static str, outcome: &'static str) {
    get().audit_records.add(1, &[KeyValue::new("fedsearch.audit.sink", sink), KeyValue::new("outcome", outcome)]);
}

pub fn mcp_tool(tool: &'static str, ok: bool) {
    get().mcp_tool_calls.add(
        1,
        &[KeyValue::new("fedsearch.mcp.tool", tool), KeyValue::new("outcome", if ok { "ok" } else { "error" })],
    );
}

/// Observable instruments read from the router's state at each collection: in-flight calls,
/// the adaptive limit, each source's breaker state (0 closed, 1 half-open, 2 open) and its
/// transitions. Call once after the state is built; the instruments report while the returned
/// value lives.
pub fn observe_state(state: &crate::RouterState) -> StateObservers {
    let m = meter();
    let admission = state.admission.clone();
    let in_flight = m
        .i64_observable_gauge("fedsearch.router.in_flight")
        .with_unit("{call}")
        .with_description("calls admitted and not yet finished")
        .with_callback(move |o| o.observe(admission.in_flight() as i64, &[]))
        .build();
    let admission = state.admission.clone();
    let limit = m
        .i64_observable_gauge("fedsearch.router.concurrency_limit")
        .with_unit("{call}")
        .with_description("the adaptive limit on calls in flight")
        .with_callback(move |o| o.observe(admission.limit() as i64, &[]))
        .build();
    let registry = state.registry.clone();
    let breaker = m
        .i64_observable_gauge("fedsearch.router.breaker.state")
        .with_unit("{state}")
        .with_description("circuit breaker state per source: 0 closed, 1 half-open, 2 open")
        .with_callback(move |o| {
            for s in registry.all() {
                o.observe(s.breaker.state() as i64, &[KeyValue::new("fedsearch.source", s.name().to_string())]);
            }
        })
        .build();
    let registry = state.registry.clone();
    let transitions = m
        .u64_observable_counter("fedsearch.router.breaker.transitions")
        .with_unit("{transition}")
        .with_description("circuit breaker transitions per source, by the state entered")
        .with_callback(move |o| {
            for s in registry.all() {
                for (to, n) in s.breaker.transitions() {
                    o.observe(
                        n,
                        &[
                            KeyValue::new("fedsearch.source", s.name().to_string()),
                            KeyValue::new("fedsearch.breaker.to", to),
                        ],
                    );
                }
            }
        })
        .build();
    StateObservers { _gauges: vec![in_flight, limit, breaker], _counters: vec![transitions] }
}

/// Keeps the observable instruments of [`observe_state`] registered.
pub struct StateObservers {
    _gauges: Vec<opentelemetry::metrics::ObservableGauge<i64>>,
    _counters: Vec<opentelemetry::metrics::ObservableCounter<u64>>,
}
