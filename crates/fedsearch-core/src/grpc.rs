//! Serving a set of gRPC services the same way everywhere: server spans from the incoming
//! trace context, `grpc.health.v1` health, reflection, and graceful shutdown (NOT_SERVING,
//! stop accepting, drain in-flight calls within a grace period).

use std::{future::Future, time::Duration};

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic_health::{ServingStatus, server::HealthReporter};
use tower_http::trace::{MakeSpan, TraceLayer};

use crate::propagation::server_span;

/// Makes the `grpc.server` span of each incoming request (see [`server_span`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct MakeServerSpan;

impl<B> MakeSpan<B> for MakeServerSpan {
    fn make_span(&mut self, request: &http::Request<B>) -> tracing::Span {
        server_span(request)
    }
}

/// The tower layer every fedsearch server runs: one span per request, parented remotely.
pub fn trace_layer() -> TraceLayer<
    tower_http::classify::SharedClassifier<tower_http::classify::GrpcErrorsAsFailures>,
    MakeServerSpan,
    tower_http::trace::DefaultOnRequest,
    tower_http::trace::DefaultOnResponse,
    tower_http::trace::DefaultOnBodyChunk,
    tower_http::trace::DefaultOnEos,
    LogFailure,
> {
    TraceLayer::new_for_grpc().make_span_with(MakeServerSpan).on_failure(LogFailure)
}

/// Logs failed calls: the caller's mistakes (bad input, no token, not found, denied) at debug,
/// everything else at warn.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogFailure;

impl tower_http::trace::OnFailure<tower_http::classify::GrpcFailureClass> for LogFailure {
    fn on_failure(&mut self, class: tower_http::classify::GrpcFailureClass, latency: Duration, _span: &tracing::Span) {
        use tower_http::classify::GrpcFailureClass;
        let latency_ms = latency.as_millis() as u64;
        match class {
            GrpcFailureClass::Code(code) => {
                let code = tonic::Code::from_i32(code.get());
                match code {
                    tonic::Code::InvalidArgument
                    | tonic::Code::Unauthenticated
                    | tonic::Code::PermissionDenied
                    | tonic::Code::NotFound
                    | tonic::Code::Cancelled => {
                        tracing::debug!(code = code_name(code), latency_ms, "call refused")
                    }
                    _ => tracing::warn!(code = code_name(code), latency_ms, "call failed"),
                }
            }
            GrpcFailureClass::Error(e) => tracing::warn!(error = %e, latency_ms, "call failed"),
        }
    }
}

/// What to serve.
pub struct Served {
    /// The services (router, adapter, fusion...).
    pub routes: Routes,
    /// Fully-qualified names reported by the health service, e.g. `fedsearch.v1.FederatedSearch`.
    pub service_names: Vec<&'static str>,
}

/// Serves `served` plus health and reflection on `listener` until `shutdown` resolves, then
/// reports NOT_SERVING, stops accepting and waits up to `grace` for in-flight calls.
pub async fn serve(
    listener: TcpListener,
    served: Served,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    let (reporter, health_service) = tonic_health::server::health_reporter();
    set_all(&reporter, &served.service_names, ServingStatus::Serving).await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(fedsearch_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| anyhow::anyhow!("cannot build the reflection service: {e}"))?;
    let routes = served.routes.add_service(health_service).add_service(reflection);
    let names = served.service_names.clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let health_for_stop = reporter.clone();
    let signal = async move {
        shutdown.await;
        set_all(&health_for_stop, &names, ServingStatus::NotServing).await;
        tracing::info!("not serving any more; draining in-flight calls");
        let _ = stop_tx.send(());
    };
    let server =
        tonic::transport::Server::builder().layer(trace_layer()).add_routes(routes).serve_with_incoming_shutdown(
            // Without TCP_NODELAY small gRPC frames wait on Nagle + delayed ACK (~40 ms a call).
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            signal,
        );
    tokio::pin!(server);
    tokio::select! {
        res = &mut server => res.map_err(|e| anyhow::anyhow!("server error: {e}"))?,
        _ = async { let _ = stop_rx.await; tokio::time::sleep(grace).await } => {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "in-flight calls did not drain in time; exiting");
        }
    }
    Ok(())
}

async fn set_all(reporter: &HealthReporter, names: &[&'static str], status: ServingStatus) {
    reporter.set_service_status("", status).await;
    for name in names {
        reporter.set_service_status(*name, status).await;
    }
}

/// Binds `addr`, failing with one clear line when it is taken.
pub async fn bind(addr: std::net::SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))
}

/// A lazily-connecting, long-lived channel to `endpoint` (shared by all queries).
pub fn lazy_channel(endpoint: &str, connect_timeout: Duration) -> anyhow::Result<tonic::transport::Channel> {
    let ep = tonic::transport::Endpoint::from_shared(endpoint.to_string())
        .map_err(|e| anyhow::anyhow!("invalid endpoint `{endpoint}`: {e}"))?
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    Ok(ep.connect_lazy())
}

/// The canonical name of a gRPC code, as used in `SourceStatus.code`.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Reads the `grpc-timeout` request header (e.g. `250m`, `3S`) as a duration.
pub fn grpc_timeout(metadata: &tonic::metadata::MetadataMap) -> Option<Duration> {
    let v = metadata.get("grpc-timeout")?.to_str().ok()?;
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (num, unit) = v.split_at(v.len() - 1);
    let n: u64 = num.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_header_parses() {
        let mut md = tonic::metadata::MetadataMap::new();
        md.insert("grpc-timeout", "250m".parse().unwrap());
        assert_eq!(grpc_timeout(&md), Some(Duration::from_millis(250)));
        md.insert("grpc-timeout", "3S".parse().unwrap());
        assert_eq!(grpc_timeout(&md), Some(Duration::from_secs(3)));
        md.insert("grpc-timeout", "x".parse().unwrap());
        assert_eq!(grpc_timeout(&md), None);
    }
}
