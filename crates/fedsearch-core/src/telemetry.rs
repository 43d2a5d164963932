//! Logs and traces: JSON log lines carrying the trace id, OpenTelemetry spans exported over
//! OTLP/gRPC when an endpoint is configured.
//!
//! Every JSON line written inside a span of a traced request starts with `"trace_id"` (and
//! `"span_id"`), read from the OpenTelemetry context of the line's span, so a line logged deep
//! in a spawned task (a failing source, a sub-query that finished) joins its trace.
//!
//! The OpenTelemetry layer is installed even when export is off, so every request still gets
//! a real trace id (returned to callers and written in logs) and trace context still propagates
//! to the next hop.

use opentelemetry::{
    KeyValue,
    trace::{TraceContextExt as _, TracerProvider as _},
};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing::{Event, Subscriber};
use tracing_subscriber::{
    EnvFilter,
    fmt::{
        FmtContext, FormatEvent, FormatFields,
        format::{Format, Json, Writer},
    },
    layer::SubscriberExt,
    registry::LookupSpan,
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
    let otel = tracing_opentelemetry::layer().with_tracer(tracer);
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    let result = match config.log_format {
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .event_format(TraceJson(
                        tracing_subscriber::fmt::format().json().with_current_span(true).with_span_list(false),
                    ))
                    .with_writer(std::io::stderr),
            )
            .try_init(),
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
        let ids = ctx
            .lookup_current()
            .map(|span| span.id())
            .and_then(|id| Some((id, DISPATCH.get()?.upgrade()?)))
            .and_then(|(id, dispatch)| tracing_opentelemetry::get_otel_context(&id, &dispatch))
            .map(|cx| cx.span().span_context().clone())
            .filter(|sc| sc.is_valid());
        match (ids, line.strip_prefix('{')) {
            (Some(sc), Some(rest)) => {
                write!(writer, "{{\"trace_id\":\"{}\",\"span_id\":\"{}\",{rest}", sc.trace_id(), sc.span_id())
            }
            _ => writer.write_str(&line),
        }
    }
}
