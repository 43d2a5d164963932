//! Logs and traces: JSON log lines carrying the trace id, OpenTelemetry spans exported over
//! OTLP/gRPC when an endpoint is configured.
//!
//! Every JSON line written inside a span of a traced request starts with `"trace_id"` (and
//! `"span_id"`), read from the OpenTelemetry context of the line's span, so a line logged deep
//! in a spawned task (a failing source, a sub-query that finished) joins its trace.
//!
//! With an OTLP endpoint the OpenTelemetry layer records every span for export. Without one
//! (the default) it is not installed: building OpenTelemetry spans that nobody exports was ~9 %
//! of the router's CPU (BENCHMARKS.md, issue 15). A small layer ([`IdsLayer`]) then gives every
//! span only its W3C ids — a fresh trace id for a root, the parent's trace id and flags for a
//! child, the remote parent's after [`set_parent`] — so every request still gets a real trace id
//! (returned to callers and written in logs) and trace context still propagates to the next hop.
//! Read a span's ids with [`span_context`]/[`context`], never with `OpenTelemetrySpanExt`
//! directly: they work in both modes.

use opentelemetry::{
    Context, KeyValue,
    trace::{SpanContext, TraceContextExt as _, TraceFlags, TraceState, TracerProvider as _},
};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::{
    Resource,
    trace::{IdGenerator as _, RandomIdGenerator, SdkTracerProvider},
};
use tracing::{Event, Span, Subscriber, span};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{
    EnvFilter, Layer, Registry,
    fmt::{
        FmtContext, FormatEvent, FormatFields,
        format::{Format, Json, Writer},
    },
    layer::SubscriberExt,
    registry::{LookupSpan, SpanData as _},
    util::SubscriberInitExt,
};

use crate::config::{LogFormat, TelemetryConfig};

/// Keeps the tracer provider alive; call [`Telemetry::shutdown`] to flush spans on exit.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Flushes and stops span export.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.force_flush() {
            tracing::warn!(error = %e, "flushing spans failed");
        }
        let _ = self.provider.shutdown();
    }
}

/// Builds the tracer provider for `service`: batch export to `otlp_endpoint` when set.
pub fn tracer_provider(service: &str, otlp_endpoint: Option<&str>) -> anyhow::Result<SdkTracerProvider> {
    let resource = Resource::builder()
        .with_service_name(service.to_string())
        .with_attribute(KeyValue::new("service.namespace", "fedsearch"))
        .build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    if let Some(endpoint) = otlp_endpoint {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint.to_string())
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the OTLP exporter for {endpoint}: {e}"))?;
        builder = builder.with_batch_exporter(exporter);
    }
    Ok(builder.build())
}

/// Installs the global subscriber for a service. Safe to call twice (the second is a no-op,
/// which in-process tests rely on).
pub fn init(service: &'static str, config: &TelemetryConfig) -> anyhow::Result<Telemetry> {
    let provider = tracer_provider(service, config.otlp_endpoint.as_deref())?;
    let tracer = provider.tracer(service);
    let filter = std::env::var("RUST_LOG")
        .ok()
        .or_else(|| config.log_filter.clone())
        .unwrap_or_else(|| "info,h2=warn,hyper=warn,tower=warn,opentelemetry=warn,rmcp=warn".to_string());
    let filter = EnvFilter::try_new(&filter).map_err(|e| anyhow::anyhow!("invalid log filter `{filter}`: {e}"))?;
    let exporting = config.otlp_endpoint.is_some();
    let otel = exporting.then(|| tracing_opentelemetry::layer().with_tracer(tracer));
    let ids = (!exporting).then_some(IdsLayer);
    let registry = tracing_subscriber::registry().with(filter).with(otel).with(ids);
    let result = match config.log_format {
        LogFormat::Json => registry.with(json_lines(std::io::stderr)).try_init(),
        LogFormat::Pretty => registry.with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr)).try_init(),
    };
    if result.is_err() {
        tracing::debug!("a global subscriber was already installed; keeping it");
    }
    tracing::dispatcher::get_default(|d| {
        let _ = DISPATCH.set(d.downgrade());
    });
    Ok(Telemetry { provider })
}

/// The JSON log lines layer: each line with its trace and span id in front ([`TraceJson`]) and
/// its span's fields ([`SpanJson`]).
fn json_lines<S, W>(writer: W) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + 'static,
{
    tracing_subscriber::fmt::layer()
        .json()
        .fmt_fields(SpanJson)
        .event_format(TraceJson(tracing_subscriber::fmt::format().json().with_current_span(true).with_span_list(false)))
        .with_writer(writer)
}

/// A span's fields as one JSON object, written field by field when the span opens and extended
/// in place when a field is recorded later. The stock `JsonFields` builds a map of JSON values
/// per span and parses and re-serializes the whole object on every `record`: with a dozen spans
/// per search and no line logged in most of them, that was ~4 % of the router's CPU (issue 15).
/// A field recorded twice appears twice; a reader keeps the last.
struct SpanJson;

impl<'w> FormatFields<'w> for SpanJson {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        mut writer: Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        write!(writer, "{{{}}}", JsonPairs::of(fields))
    }

    fn add_fields(
        &self,
        current: &'w mut tracing_subscriber::fmt::FormattedFields<Self>,
        fields: &span::Record<'_>,
    ) -> std::fmt::Result {
        let pairs = JsonPairs::of(fields);
        if pairs.is_empty() {
            return Ok(());
        }
        let object = &mut current.fields;
        match object.pop() {
            Some('}') if object.ends_with('{') => {}
            Some('}') => object.push(','),
            _ => object.replace_range(.., "{"),
        }
        object.push_str(&pairs);
        object.push('}');
        Ok(())
    }
}

/// Writes fields as `"name":value` pairs separated by commas, as the stock JSON visitor
/// renders them: numbers and booleans as such, everything else as a string of its `Debug`
/// (or `Display`, for errors); `log.*` and `otel.*` fields skipped, a raw `r#` name unprefixed.
struct JsonPairs(String);

impl JsonPairs {
    /// `fields` as comma-separated pairs (no braces).
    fn of(fields: impl tracing_subscriber::field::RecordFields) -> String {
        let mut pairs = JsonPairs(String::new());
        fields.record(&mut pairs);
        pairs.0
    }

    /// Appends `"name":json`, `json` already a JSON value.
    fn push(&mut self, field: &tracing::field::Field, json: &str) {
        let name = field.name();
        // `log.*` carry a `log` record's origin; `otel.*` (name, kind, status) are instructions
        // to the OpenTelemetry layer, not attributes of the span.
        if name.starts_with("log.") || name.starts_with("otel.") {
            return;
        }
        if !self.0.is_empty() {
            self.0.push(',');
        }
        let name = name.strip_prefix("r#").unwrap_or(name);
        // Field names are Rust identifiers joined by dots: nothing to escape, as a rule.
        if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') {
            self.0.push('"');
            self.0.push_str(name);
            self.0.push('"');
        } else {
            self.0.push_str(&quoted(name));
        }
        self.0.push(':');
        self.0.push_str(json);
    }
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "null".to_string())
}

impl tracing::field::Visit for JsonPairs {
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.push(field, &serde_json::Value::from(value).to_string());
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.push(field, &value.to_string());
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.push(field, &value.to_string());
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.push(field, if value { "true" } else { "false" });
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.push(field, &quoted(value));
    }

    fn record_error(&mut self, field: &tracing::field::Field, value: &(dyn std::error::Error + 'static)) {
        self.push(field, &quoted(&value.to_string()));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.push(field, &quoted(&format!("{value:?}")));
    }
}

/// The process's subscriber, to read a span's OpenTelemetry context while formatting a line.
static DISPATCH: std::sync::OnceLock<tracing::dispatcher::WeakDispatch> = std::sync::OnceLock::new();

/// The JSON line format with the trace and span id of the event's span in front.
struct TraceJson(Format<Json>);

impl<S, N> FormatEvent<S, N> for TraceJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> std::fmt::Result {
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let ids = ctx.lookup_current().and_then(|span| match span.extensions().get::<Ids>() {
            Some(ids) => Some(ids.0.clone()),
            None => DISPATCH
                .get()?
                .upgrade()
                .and_then(|dispatch| tracing_opentelemetry::get_otel_context(&span.id(), &dispatch))
                .map(|cx| cx.span().span_context().clone()),
        });
        let ids = ids.filter(|sc| sc.is_valid());
        match (ids, line.strip_prefix('{')) {
            (Some(sc), Some(rest)) => {
                write!(writer, "{{\"trace_id\":\"{}\",\"span_id\":\"{}\",{rest}", sc.trace_id(), sc.span_id())
            }
            _ => writer.write_str(&line),
        }
    }
}

/// A span's W3C ids when no exporter is configured (the extension [`IdsLayer`] keeps).
#[derive(Clone, Debug)]
struct Ids(SpanContext);

/// Gives each new span its [`Ids`]: the parent's trace id, flags and state with a fresh span id,
/// or, for a root, a fresh trace id, sampled (as the SDK's default `ParentBased(AlwaysOn)` would).
struct IdsLayer;

impl<S> Layer<S> for IdsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        _attrs: &span::Attributes<'_>,
        id: &span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        // The registry has already resolved the parent (explicit, or the current span).
        let Some(span) = ctx.span(id) else { return };
        let parent = span.parent().and_then(|p| p.extensions().get::<Ids>().map(|ids| ids.0.clone()));
        span.extensions_mut().insert(Ids(new_child(parent.as_ref())));
    }
}

/// The ids of a new span under `parent` (a root when `None` or invalid).
fn new_child(parent: Option<&SpanContext>) -> SpanContext {
    let generator = RandomIdGenerator::default();
    match parent.filter(|p| p.is_valid()) {
        Some(p) => {
            SpanContext::new(p.trace_id(), generator.new_span_id(), p.trace_flags(), false, p.trace_state().clone())
        }
        None => SpanContext::new(
            generator.new_trace_id(),
            generator.new_span_id(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
    }
}

/// Runs `f` on the [`Ids`] of `span`, when [`IdsLayer`] is installed.
fn with_ids<T>(span: &Span, f: impl FnOnce(&mut Ids) -> T) -> Option<T> {
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        let data = registry.span_data(id)?;
        let mut extensions = data.extensions_mut();
        extensions.get_mut::<Ids>().map(f)
    })
    .flatten()
}

/// The W3C span context of `span` (invalid when tracing is off or the span is disabled).
pub fn span_context(span: &Span) -> SpanContext {
    with_ids(span, |ids| ids.0.clone()).unwrap_or_else(|| span.context().span().span_context().clone())
}

/// `span` as an OpenTelemetry context, for injecting `traceparent` into an outgoing call.
pub fn context(span: &Span) -> Context {
    match with_ids(span, |ids| ids.0.clone()) {
        Some(sc) => Context::new().with_remote_span_context(sc),
        None => span.context(),
    }
}

/// Makes the remote context `parent` (read from an incoming request) the parent of `span`:
/// `span` and the spans opened under it from now on join `parent`'s trace. Call it before
/// opening children. An invalid `parent` leaves `span` a root.
pub fn set_parent(span: &Span, parent: Context) {
    let remote = parent.span().span_context().clone();
    if with_ids(span, |ids| {
        if remote.is_valid() {
            ids.0 = SpanContext::new(
                remote.trace_id(),
                ids.0.span_id(),
                remote.trace_flags(),
                false,
                remote.trace_state().clone(),
            );
        }
    })
    .is_none()
    {
        let _ = span.set_parent(parent);
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanId, TraceId};

    use super::*;

    fn without_exporter() -> impl Subscriber + for<'a> LookupSpan<'a> {
        tracing_subscriber::registry().with(EnvFilter::new("info")).with(Some(IdsLayer))
    }

    /// Log lines written to memory.
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_carries_its_span_fields_as_json_with_the_ones_recorded_later() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = without_exporter().with(json_lines(move || writer.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                "call",
                otel.name = "docs/Search",
                otel.kind = "client",
                source = "docs",
                quote = "say \"hi\"\n",
                r#type = 3u64,
                ratio = 0.5,
                nan = f64::NAN,
                below = -2i64,
                ok = true,
                state = tracing::field::Empty,
                hits = tracing::field::Empty,
            );
            span.record("state", "OK");
            span.record("hits", 7i64);
            span.in_scope(|| tracing::warn!(reason = "slow", "call failed"));
            tracing::info_span!("bare").in_scope(|| tracing::warn!("no fields"));
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{text}");
        let span = &lines[0]["span"];
        assert_eq!(span["name"], "call");
        assert!(span.get("otel.name").is_none() && span.get("otel.kind").is_none(), "{span}");
        assert_eq!(span["source"], "docs");
        assert_eq!(span["quote"], "say \"hi\"\n");
        assert_eq!(span["type"], 3);
        assert_eq!(span["ratio"], 0.5);
        assert_eq!(span["nan"], serde_json::Value::Null);
        assert_eq!(span["below"], -2);
        assert_eq!(span["ok"], true);
        assert_eq!(span["state"], "OK");
        assert_eq!(span["hits"], 7);
        assert_eq!(lines[0]["fields"]["reason"], "slow");
        assert!(lines[0]["trace_id"].as_str().is_some_and(|t| t.len() == 32), "{}", lines[0]);
        assert_eq!(lines[1]["span"], serde_json::json!({"name": "bare"}));
    }

    #[test]
    fn without_an_exporter_a_root_gets_a_trace_and_its_children_share_it() {
        tracing::subscriber::with_default(without_exporter(), || {
            let root = tracing::info_span!("root");
            let root_sc = span_context(&root);
            assert!(root_sc.is_valid() && root_sc.is_sampled());
            let child = root.in_scope(|| tracing::info_span!("child"));
            let explicit = tracing::info_span!(parent: &root, "explicit");
            for span in [&child, &explicit] {
                let sc = span_context(span);
                assert_eq!(sc.trace_id(), root_sc.trace_id());
                assert_ne!(sc.span_id(), root_sc.span_id());
            }
            let other = tracing::info_span!("other root");
            assert_ne!(span_context(&other).trace_id(), root_sc.trace_id());
            let disabled = tracing::debug_span!("filtered out");
            assert!(!span_context(&disabled).is_valid());
        });
    }

    #[test]
    fn without_an_exporter_a_remote_parent_is_adopted_and_injected() {
        tracing::subscriber::with_default(without_exporter(), || {
            let trace = TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap();
            let remote = SpanContext::new(
                trace,
                SpanId::from_hex("b7ad6b7169203331").unwrap(),
                TraceFlags::SAMPLED,
                true,
                TraceState::default(),
            );
            let server = tracing::info_span!("server");
            let own = span_context(&server).span_id();
            set_parent(&server, Context::new().with_remote_span_context(remote));
            let sc = span_context(&server);
            assert_eq!((sc.trace_id(), sc.span_id()), (trace, own));
            let child = server.in_scope(|| tracing::info_span!("call"));
            let mut headers = http::HeaderMap::new();
            child.in_scope(|| crate::propagation::inject_current(&mut headers));
            let traceparent = headers["traceparent"].to_str().unwrap();
            assert_eq!(
                traceparent,
                format!("00-{trace}-{}-01", span_context(&child).span_id()),
                "the child's own span id goes out as the parent of the next hop"
            );
            assert_eq!(child.in_scope(crate::propagation::current_trace_id), trace.to_string());
            let map = child.in_scope(crate::propagation::current_map);
            assert_eq!(map.get("traceparent").map(String::as_str), Some(traceparent), "{map:?}");
            let back = crate::propagation::extract_map(&map);
            assert_eq!(back.span().span_context().span_id(), span_context(&child).span_id());
            let none = tracing::debug_span!("filtered out").in_scope(crate::propagation::current_map);
            assert!(none.is_empty(), "no context, no entries: {none:?}");
            assert!(!crate::propagation::extract_map(&none).span().span_context().is_valid());

            let root = tracing::info_span!("no traceparent");
            let before = span_context(&root);
            set_parent(&root, Context::new());
            assert_eq!(span_context(&root).trace_id(), before.trace_id(), "an invalid parent leaves a root");
        });
    }
}
