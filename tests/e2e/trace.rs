//! One OpenTelemetry trace covers the whole query: an in-process OTLP receiver collects the
//! spans every process exports, and the test checks the parent/child links across processes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use fedsearch_proto::api::SearchRequest;
use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    },
    common::v1::any_value,
};

use crate::harness::{Stack, StackOptions, authed};

#[derive(Debug, Clone)]
struct Collected {
    service: String,
    name: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent: Vec<u8>,
    kind: i32,
    attributes: HashMap<String, String>,
}

#[derive(Default, Clone)]
struct Receiver(Arc<Mutex<Vec<Collected>>>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut out = self.0.lock().unwrap();
        for rs in request.into_inner().resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| r.attributes.iter())
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref())
                .and_then(|v| match &v.value {
                    Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for s in ss.spans {
                    out.push(Collected {
                        service: service.clone(),
                        name: s.name,
                        trace_id: s.trace_id,
                        span_id: s.span_id,
                        parent: s.parent_span_id,
                        kind: s.kind,
                        attributes: s
                            .attributes
                            .iter()
                            .filter_map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                Some(any_value::Value::StringValue(v)) => Some((kv.key.clone(), v.clone())),
                                Some(any_value::Value::IntValue(v)) => Some((kv.key.clone(), v.to_string())),
                                _ => None,
                            })
                            .collect(),
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

#[tokio::test]
async fn one_trace_links_router_adapters_backends_and_fusion() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let receiver = Receiver::default();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(receiver.clone()))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let stack =
        Stack::start(StackOptions { otlp_endpoint: Some(format!("http://{addr}")), ..Default::default() }).await;
    let mut c = stack.client().await;
    let q = SearchRequest {
        query: "SO20261004 支付超时".into(),
        sources: vec!["orders".into(), "tickets".into(), "wiki".into()],
        ..Default::default()
    };
    let resp = c.search(authed(q, "alice")).await.unwrap().into_inner();
    let trace_id = resp.trace_id.clone();
    assert_eq!(trace_id.len(), 32, "a W3C trace id is returned");

    // Wait until every process has exported its part of this trace.
    let want_services = ["router", "fusion", "es-adapter", "sql-adapter", "wiki-adapter"];
    let mut spans = Vec::new();
    for _ in 0..100 {
        spans = receiver.0.lock().unwrap().iter().filter(|s| hex(&s.trace_id) == trace_id).cloned().collect::<Vec<_>>();
        let subqueries = spans.iter().filter(|s| s.name.starts_with("adapter.subquery")).count();
        if want_services.iter().all(|svc| spans.iter().any(|s| s.service == *svc)) && subqueries >= 3 {
            // Give stragglers of the same batch a moment.
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue_collect(&receiver, &trace_id, &mut spans);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let by_id: HashMap<Vec<u8>, &Collected> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let parent_of = |s: &Collected| by_id.get(&s.parent).copied();
    let find = |service: &str, name: &str| -> &Collected {
        spans
            .iter()
            .find(|s| s.service == service && s.name == name)
            .unwrap_or_else(|| panic!("no span `{name}` from {service}; got {:#?}", names(&spans)))
    };

    let root = find("router", "fedsearch.v1.FederatedSearch/Search");
    let search = find("router", "router.search");
    assert_eq!(parent_of(search).map(|p| p.span_id.clone()), Some(root.span_id.clone()));
    for (source, adapter) in [("orders", "sql-adapter"), ("tickets", "es-adapter"), ("wiki", "wiki-adapter")] {
        let dispatch = find("router", &format!("router.dispatch {source}"));
        assert_eq!(parent_of(dispatch).map(|p| p.name.as_str()), Some("router.search"), "{source}");
        // The outgoing call is a client span (with the peer) under the dispatch span...
        let client = spans
            .iter()
            .find(|s| {
                s.service == "router"
                    && s.name == "fedsearch.adapter.v1.SourceAdapter/Search"
                    && s.parent == dispatch.span_id
            })
            .unwrap_or_else(|| panic!("no client span under router.dispatch {source}; {:#?}", names(&spans)));
        assert_eq!(client.kind, SPAN_KIND_CLIENT, "{source}: the router's call is a client span");
        assert_eq!(client.attributes.get("rpc.system").map(String::as_str), Some("grpc"));
        assert!(client.attributes.get("peer.service").is_some_and(|p| !p.is_empty()), "{:?}", client.attributes);
        // On the shared streams (the default) the replica that took the sub-query is named.
        assert_eq!(client.attributes.get("network.peer.address").map(String::as_str), Some("127.0.0.1"), "{source}");
        assert!(client.attributes.get("network.peer.port").is_some_and(|p| p.parse::<u16>().is_ok()), "{source}");
        // ... and the adapter's server side is its child, across processes: on a shared
        // stream (the default) the sub-query span itself, parented on the context the
        // sub-query carries; on a stream of its own (`streams: 0`) the stream's server span,
        // with the sub-query span under it.
        let server = spans
            .iter()
            .find(|s| s.service == adapter && s.kind == SPAN_KIND_SERVER && s.parent == client.span_id)
            .unwrap_or_else(|| {
                panic!("{adapter}: no server span under the client span of {source}; {:#?}", names(&spans))
            });
        let sub = spans
            .iter()
            .find(|s| {
                s.service == adapter
                    && s.name.starts_with("adapter.subquery")
                    && (s.span_id == server.span_id || s.parent == server.span_id)
            })
            .unwrap_or_else(|| {
                panic!("{adapter}: no adapter.subquery span in the search's trace; {:#?}", names(&spans))
            });
        assert_eq!(sub.attributes.get("source").map(String::is_empty), Some(false), "{:?}", sub.attributes);
        // ... and the backend call is traced under the sub-query.
        let backend: Vec<_> = spans.iter().filter(|s| s.service == adapter && s.parent == sub.span_id).collect();
        assert!(!backend.is_empty(), "{adapter}: no backend call span under {}; {:#?}", sub.name, names(&spans));
    }
    let fuse = find("router", "router.fuse");
    assert_eq!(parent_of(fuse).map(|p| p.name.as_str()), Some("router.search"));
    let fusion_client = spans
        .iter()
        .find(|s| s.service == "router" && s.name == "fedsearch.fusion.v1.Fusion/Fuse")
        .unwrap_or_else(|| panic!("no client span to fusion; {:#?}", names(&spans)));
    assert_eq!((fusion_client.kind, fusion_client.parent.clone()), (SPAN_KIND_CLIENT, fuse.span_id.clone()));
    assert_eq!(fusion_client.attributes.get("peer.service").map(String::as_str), Some("fusion"));
    let fusion_server = find("fusion", "fedsearch.fusion.v1.Fusion/Fuse");
    assert_eq!(fusion_server.parent, fusion_client.span_id, "fusion's server span is a child of the client span");
}

/// OTLP `Span.SpanKind` values.
const SPAN_KIND_SERVER: i32 = 2;
const SPAN_KIND_CLIENT: i32 = 3;

fn continue_collect(receiver: &Receiver, trace_id: &str, spans: &mut Vec<Collected>) {
    *spans = receiver.0.lock().unwrap().iter().filter(|s| hex(&s.trace_id) == trace_id).cloned().collect();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn names(spans: &[Collected]) -> Vec<String> {
    spans.iter().map(|s| format!("{}: {}", s.service, s.name)).collect()
}
