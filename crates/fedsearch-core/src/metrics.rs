//! Metrics: one OpenTelemetry meter provider per process, read by Prometheus on the admin port
//! (`/metrics`, see [`crate::admin`]) and optionally pushed over OTLP; plus the tower layer
//! every gRPC server runs, which records `rpc.server.call.duration` per method and status and
//! puts the trace id in the response headers and trailers.
//!
//! Instruments are made from [`meter`] after [`install`] ran (binaries do it first thing in
//! `main`); made before, they record nothing. Attribute values are bounded sets: method names
//! come from the served descriptor sets, never from the request path as sent, and no user id
//! is ever an attribute.

use std::{
    collections::HashSet,
    pin::Pin,
    sync::{LazyLock, OnceLock},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use http_body::Frame;
use opentelemetry::{
    KeyValue,
    metrics::{Histogram, Meter},
};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use prost::Message;

/// Histogram bucket boundaries for durations in seconds: 1 ms to 30 s.
pub const SECONDS_BUCKETS: &[f64] =
    &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The response header (and error trailer) that carries the call's trace id.
pub const TRACE_ID_HEADER: &str = "x-trace-id";

static REGISTRY: OnceLock<prometheus::Registry> = OnceLock::new();

/// The meter of this process's instruments (a no-op meter until [`install`] ran).
pub fn meter() -> Meter {
    opentelemetry::global::meter("fedsearch")
}

/// A duration histogram in seconds with [`SECONDS_BUCKETS`].
pub fn seconds_histogram(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(SECONDS_BUCKETS.to_vec())
        .build()
}

/// Installs the process's meter provider: a Prometheus reader always (rendered by
/// [`render`]), and an OTLP push to `otlp_endpoint` every `otlp_interval` when both are set.
pub fn install(
    service: &str,
    otlp_endpoint: Option<&str>,
    otlp_interval: Option<Duration>,
) -> anyhow::Result<SdkMeterProvider> {
    let registry = REGISTRY.get_or_init(prometheus::Registry::new).clone();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(registry)
        .scope_info_enabled(false)
        .without_target_info()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot build the Prometheus exporter: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_string())
        .with_attribute(KeyValue::new("service.namespace", "fedsearch"))
        .build();
    let mut builder = SdkMeterProvider::builder().with_resource(resource).with_reader(exporter);
    if let (Some(endpoint), Some(interval)) = (otlp_endpoint, otlp_interval) {
        let otlp = opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint.to_string())
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the OTLP metric exporter for {endpoint}: {e}"))?;
        builder = builder.with_reader(PeriodicReader::builder(otlp).with_interval(interval).build());
    }
    let provider = builder.build();
    opentelemetry::global::set_meter_provider(provider.clone());
    Ok(provider)
}

/// The Prometheus text exposition of every instrument (empty before [`install`]).
pub fn render() -> String {
    let Some(registry) = REGISTRY.get() else { return String::new() };
    let mut out = String::new();
    if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&registry.gather(), &mut out) {
        tracing::warn!(error = %e, "encoding metrics failed");
    }
    out
}

/// Every gRPC method path (`/pkg.Service/Method`) of the fedsearch, health and reflection
/// services: the only values `rpc.service`/`rpc.method` take (anything else is `_OTHER`).
static KNOWN_METHODS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let mut known = HashSet::new();
    for set in [fedsearch_proto::FILE_DESCRIPTOR_SET, tonic_health::pb::FILE_DESCRIPTOR_SET] {
        if let Ok(fds) = prost_types::FileDescriptorSet::decode(set) {
            for file in fds.file {
                let package = file.package();
                for service in &file.service {
                    for method in &service.method {
                        known.insert(format!("/{package}.{}/{}", service.name(), method.name()));
                    }
                }
            }
        }
    }
    known.insert("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo".into());
    known
});

fn rpc_labels(path: &str) -> (String, String) {
    if KNOWN_METHODS.contains(path)
        && let Some((service, method)) = path.trim_start_matches('/').split_once('/')
    {
        return (service.to_string(), method.to_string());
    }
    ("_OTHER".into(), "_OTHER".into())
}

struct RpcInstruments {
    duration: Histogram<f64>,
}

static RPC: LazyLock<RpcInstruments> = LazyLock::new(|| RpcInstruments {
    duration: seconds_histogram(
        &meter(),
        "rpc.server.call.duration",
        "duration of incoming gRPC calls, to the end of the response stream",
    ),
});

/// The tower layer of [`crate::grpc::serve`]: per call, `rpc.server.call.duration` with
/// `rpc.system`, `rpc.service`, `rpc.method` and `rpc.grpc.status_code`, and the trace id in
/// the `x-trace-id` response header and in the trailers.
#[derive(Clone, Copy, Debug, Default)]
pub struct RpcMetricsLayer;

impl<S> tower::Layer<S> for RpcMetricsLayer {
    type Service = RpcMetricsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RpcMetricsService { inner }
    }
}

#[derive(Clone, Debug)]
pub struct RpcMetricsService<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for RpcMetricsService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let (service, method) = rpc_labels(request.uri().path());
        let recorder = Recorder { service, method, started: Instant::now() };
        let trace_id = crate::propagation::current_trace_id();
        let future = self.inner.call(request);
        Box::pin(async move {
            let mut response = future.await?;
            let trace_value = http::HeaderValue::from_str(&trace_id).ok().filter(|_| !trace_id.is_empty());
            if let Some(v) = &trace_value {
                response.headers_mut().insert(TRACE_ID_HEADER, v.clone());
            }
            // A trailers-only response (most errors) has its status in the headers.
            if let Some(code) = grpc_status(response.headers()) {
                recorder.record(code);
                return Ok(response);
            }
            Ok(response.map(|inner| {
                tonic::body::Body::new(RecordingBody { inner, recorder: Some(recorder), trace_id: trace_value })
            }))
        })
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<i64> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

struct Recorder {
    service: String,
    method: String,
    started: Instant,
}

impl Recorder {
    fn record(self, code: i64) {
        RPC.duration.record(
            self.started.elapsed().as_secs_f64(),
            &[
                KeyValue::new("rpc.system", "grpc"),
                KeyValue::new("rpc.service", self.service),
                KeyValue::new("rpc.method", self.method),
                KeyValue::new("rpc.grpc.status_code", code),
            ],
        );
    }
}

/// A response body that records the call when its trailers pass (or CANCELLED when it is
/// dropped unfinished), and adds the trace id to the trailers.
struct RecordingBody {
    inner: tonic::body::Body,
    recorder: Option<Recorder>,
    trace_id: Option<http::HeaderValue>,
}

impl http_body::Body for RecordingBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) if frame.is_trailers() => {
                let mut trailers = frame.into_trailers().unwrap_or_default();
                if let Some(r) = this.recorder.take() {
                    r.record(grpc_status(&trailers).unwrap_or(2));
                }
                if let Some(v) = &this.trace_id {
                    trailers.insert(TRACE_ID_HEADER, v.clone());
                }
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
            Poll::Ready(None) => {
                if let Some(r) = this.recorder.take() {
                    r.record(2);
                }
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RecordingBody {
    fn drop(&mut self) {
        if let Some(r) = self.recorder.take() {
            r.record(1);
        }
    }
}

static TLS_REFUSED: LazyLock<opentelemetry::metrics::Counter<u64>> = LazyLock::new(|| {
    meter()
        .u64_counter("fedsearch.tls.handshakes.refused")
        .with_unit("{handshake}")
        .with_description(
            "incoming TLS handshakes that failed or timed out (no certificate, another CA, a name not allowed)",
        )
        .build()
});

/// Counts one refused incoming TLS handshake ([`crate::tls::incoming`]).
pub fn tls_handshake_failed() {
    TLS_REFUSED.add(1, &[]);
}

/// Attributes shared by the per-source instruments.
pub fn source_attrs(source: &str, state: &'static str) -> [KeyValue; 2] {
    [KeyValue::new("fedsearch.source", source.to_string()), KeyValue::new("fedsearch.source.state", state)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_served_methods_become_labels() {
        assert_eq!(
            rpc_labels("/fedsearch.v1.FederatedSearch/Search"),
            ("fedsearch.v1.FederatedSearch".into(), "Search".into())
        );
        assert_eq!(rpc_labels("/grpc.health.v1.Health/Check").1, "Check");
        assert_eq!(rpc_labels("/fedsearch.v1.FederatedSearch/Nope").0, "_OTHER");
        assert_eq!(rpc_labels("/x/../../etc").1, "_OTHER");
    }

    #[test]
    fn installed_instruments_render_with_semantic_names_and_units() {
        let _provider = install("metrics-test", None, None).unwrap();
        let h = seconds_histogram(&meter(), "fedsearch.test.duration", "a test histogram");
        h.record(0.02, &[KeyValue::new("fedsearch.source", "orders")]);
        meter().u64_counter("fedsearch.test.hits").with_unit("{hit}").build().add(3, &[]);
        let text = render();
        assert!(text.contains("fedsearch_test_duration_seconds_bucket{fedsearch_source=\"orders\""), "{text}");
        assert!(text.contains("fedsearch_test_hits_total 3"), "{text}");
    }
}
