//! Serving a set of gRPC services the same way everywhere: server spans from the incoming
//! trace context, call metrics and the trace id in every response ([`crate::metrics`]),
//! `grpc.health.v1` health, reflection, and graceful shutdown (NOT_SERVING, stop accepting,
//! drain in-flight calls within a grace period).

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
    serve_tls(listener, served, shutdown, grace, None).await
}

/// [`serve`], over mutual TLS when `tls` is set ([`crate::tls`]: every connection's client
/// certificate is checked at its handshake, with the certificate files of the moment).
pub async fn serve_tls(
    listener: TcpListener,
    served: Served,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    tls: Option<std::sync::Arc<crate::tls::ServerTls>>,
) -> anyhow::Result<()> {
    let (reporter, health_service) = tonic_health::server::health_reporter();
    set_all(&reporter, &served.service_names, ServingStatus::Serving).await;
    crate::admin::set_ready(true);
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
        crate::admin::set_ready(false);
        set_all(&health_for_stop, &names, ServingStatus::NotServing).await;
        tracing::info!("not serving any more; draining in-flight calls");
        let _ = stop_tx.send(());
    };
    let router = limited_server()
        .layer(trace_layer())
        .layer(crate::metrics::RpcMetricsLayer)
        .layer(tower::util::MapResponseLayer::new(caller_statuses))
        .add_routes(routes);
    let server: std::pin::Pin<Box<dyn Future<Output = Result<(), tonic::transport::Error>> + Send>> = match tls {
        // Without TCP_NODELAY small gRPC frames wait on Nagle + delayed ACK (~40 ms a call).
        None => Box::pin(router.serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            signal,
        )),
        Some(tls) => Box::pin(router.serve_with_incoming_shutdown(crate::tls::incoming(listener, tls), signal)),
    };
    tokio::pin!(server);
    tokio::select! {
        res = &mut server => res.map_err(|e| anyhow::anyhow!("server error: {e}"))?,
        _ = async { let _ = stop_rx.await; tokio::time::sleep(grace).await } => {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "in-flight calls did not drain in time; exiting");
        }
    }
    Ok(())
}

/// HTTP/2 limits every fedsearch server sets, so one client cannot hold unbounded streams,
/// headers or frames: streams per connection, header list size, frame size, and resets.
pub const MAX_CONCURRENT_STREAMS: u32 = 256;
pub const MAX_HEADER_LIST_BYTES: u32 = 16 * 1024;

fn limited_server() -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .http2_max_header_list_size(MAX_HEADER_LIST_BYTES)
        .max_frame_size(16 * 1024)
        .http2_max_pending_accept_reset_streams(Some(64))
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
}

/// The longest `grpc-message` a server sends; longer ones (which may echo a caller's input) are
/// cut at a character boundary.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 512;

/// Fixes the status of calls that failed before reaching a handler, in the response headers
/// (trailers-only responses): a request tonic could not decode (malformed protobuf, invalid
/// UTF-8) is the caller's fault — INVALID_ARGUMENT, not INTERNAL — and no message is longer than
/// [`MAX_STATUS_MESSAGE_BYTES`].
pub fn caller_statuses<B>(mut response: http::Response<B>) -> http::Response<B> {
    let headers = response.headers_mut();
    let decode_failed = headers.get("grpc-status").is_some_and(|s| s == "13")
        && headers.get("grpc-message").and_then(|m| m.to_str().ok()).is_some_and(|m| {
            let m = m.replace("%20", " ");
            m.starts_with("failed to decode Protobuf message")
        });
    if decode_failed {
        headers.insert("grpc-status", http::HeaderValue::from_static("3"));
        headers.insert("grpc-message", http::HeaderValue::from_static("the request is not a valid protobuf message"));
    }
    if let Some(long) = headers.get("grpc-message").filter(|m| m.len() > MAX_STATUS_MESSAGE_BYTES) {
        let text = percent_encoding::percent_decode(long.as_bytes()).decode_utf8_lossy().into_owned();
        if let Ok(v) = http::HeaderValue::from_str(&encode_cut(&text, MAX_STATUS_MESSAGE_BYTES)) {
            headers.insert("grpc-message", v);
        }
    }
    response
}

/// `text` percent-encoded as gRPC does, cut at a character boundary so the encoding stays
/// within `max` bytes, with `…` appended when cut.
fn encode_cut(text: &str, max: usize) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b' ').add(b'"').add(b'%');
    let mut out = String::new();
    for c in text.chars() {
        let mut buf = [0u8; 4];
        let piece = percent_encoding::utf8_percent_encode(c.encode_utf8(&mut buf), SET).to_string();
        if out.len() + piece.len() > max {
            out.push_str("%E2%80%A6");
            break;
        }
        out.push_str(&piece);
    }
    out
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
    Ok(client_endpoint(endpoint, connect_timeout)?.connect_lazy())
}

/// How every fedsearch client connects to a service: connect timeout, TCP_NODELAY, HTTP/2
/// keep-alive on idle connections too.
pub fn client_endpoint(url: &str, connect_timeout: Duration) -> anyhow::Result<tonic::transport::Endpoint> {
    Ok(tonic::transport::Endpoint::from_shared(url.to_string())
        .map_err(|e| anyhow::anyhow!("invalid endpoint `{url}`: {e}"))?
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true)
        // A cancelled call resets its stream; frames the server had already sent for it are
        // ignored only while h2 remembers the reset (10 by default), and each frame for a
        // forgotten one counts toward the 1024 "local error resets" after which h2 closes the
        // connection — a burst of cancellations (a client going away mid-load) then failed
        // every call on that channel. Remember a burst's worth, for as long as frames in flight
        // take to arrive.
        .http2_max_concurrent_reset_streams(4 * MAX_CONCURRENT_STREAMS as usize)
        .http2_reset_stream_duration(Duration::from_secs(5)))
}

/// Whether the service behind `channel` answers `grpc.health.v1.Health/Check` (service "")
/// with SERVING within `timeout`.
pub async fn is_serving(channel: tonic::transport::Channel, timeout: Duration) -> bool {
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient};
    let mut request = tonic::Request::new(HealthCheckRequest { service: String::new() });
    request.set_timeout(timeout);
    matches!(
        tokio::time::timeout(timeout, HealthClient::new(channel).check(request)).await,
        Ok(Ok(r)) if r.get_ref().status == ServingStatus::Serving as i32
    )
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

    fn trailers_only(status: &str, message: &str) -> http::Response<()> {
        let mut r = http::Response::new(());
        r.headers_mut().insert("grpc-status", status.parse().unwrap());
        r.headers_mut().insert("grpc-message", message.parse().unwrap());
        r
    }

    #[test]
    fn undecodable_requests_are_the_callers_fault() {
        let r =
            caller_statuses(trailers_only("13", "failed%20to%20decode%20Protobuf%20message:%20invalid%20wire%20type"));
        assert_eq!(r.headers()["grpc-status"], "3");
        let r = caller_statuses(trailers_only("13", "internal%20adapter%20error"));
        assert_eq!(r.headers()["grpc-status"], "13", "other internal errors stay internal");
    }

    #[test]
    fn long_messages_are_cut_without_breaking_an_escape() {
        let long = "%E5%8F%91".repeat(200);
        let r = caller_statuses(trailers_only("3", &long));
        let m = r.headers()["grpc-message"].to_str().unwrap();
        assert!(m.len() <= MAX_STATUS_MESSAGE_BYTES + 9, "{}", m.len());
        let decoded: Vec<u8> = percent_decode(m);
        assert!(String::from_utf8(decoded).is_ok(), "every escape is whole: {m}");
        let short = caller_statuses(trailers_only("3", "query%20is%20empty"));
        assert_eq!(short.headers()["grpc-message"], "query%20is%20empty");
    }

    fn percent_decode(s: &str) -> Vec<u8> {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    }
}
