//! W3C trace-context propagation over gRPC metadata, both directions.
//!
//! Clients wrap their channel with [`TraceInjector`] so every outgoing request carries
//! `traceparent` for the span that is current when the request is made. Servers use
//! [`server_span`] (installed by [`crate::grpc::trace_layer`]) to start their server span as a
//! child of the incoming context. A sub-query sent on a long-lived shared stream carries its own
//! context in a map ([`current_map`], read back with [`extract_map`]).

use std::collections::HashMap;

use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapPropagator},
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (http::HeaderName::try_from(key), http::HeaderValue::try_from(value)) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Writes the current span's context into `headers` as `traceparent`/`tracestate`.
pub fn inject_current(headers: &mut http::HeaderMap) {
    let cx = crate::telemetry::context(&Span::current());
    TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
}

/// Reads a remote parent context from `headers`.
pub fn extract(headers: &http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// The current span's context as W3C `traceparent`/`tracestate` entries (empty when tracing is
/// off): what a sub-query carries in `SubQuery.trace_context`.
pub fn current_map() -> HashMap<String, String> {
    let cx = crate::telemetry::context(&Span::current());
    let mut map = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut map);
    map
}

/// Reads a remote parent context from W3C `traceparent`/`tracestate` entries (an invalid
/// context when there is none or it does not parse).
pub fn extract_map(map: &HashMap<String, String>) -> Context {
    TraceContextPropagator::new().extract(map)
}

/// The hex trace id of the current span, or "" when tracing is off.
pub fn current_trace_id() -> String {
    let sc = crate::telemetry::span_context(&Span::current());
    if sc.is_valid() { sc.trace_id().to_string() } else { String::new() }
}

/// A tonic interceptor that injects the current trace context into outgoing metadata.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceInjector;

impl tonic::service::Interceptor for TraceInjector {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let mut headers = http::HeaderMap::new();
        inject_current(&mut headers);
        for (k, v) in headers.iter() {
            if let (Ok(key), Ok(val)) = (
                tonic::metadata::MetadataKey::from_bytes(k.as_str().as_bytes()),
                tonic::metadata::MetadataValue::try_from(v.as_bytes()),
            ) {
                request.metadata_mut().insert(key, val);
            }
        }
        Ok(request)
    }
}

/// Starts the server span for an incoming gRPC request, as a child of its remote context.
pub fn server_span<B>(request: &http::Request<B>) -> Span {
    let path = request.uri().path();
    let (service, method) = path.trim_start_matches('/').split_once('/').unwrap_or((path, ""));
    let span = tracing::info_span!(
        "grpc.server",
        otel.name = %path.trim_start_matches('/'),
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = %service,
        rpc.method = %method,
        trace_id = tracing::field::Empty,
    );
    let parent = extract(request.headers());
    crate::telemetry::set_parent(&span, parent);
    let trace_id = {
        let sc = crate::telemetry::span_context(&span);
        if sc.is_valid() { sc.trace_id().to_string() } else { String::new() }
    };
    if !trace_id.is_empty() {
        span.record("trace_id", trace_id.as_str());
    }
    span
}
