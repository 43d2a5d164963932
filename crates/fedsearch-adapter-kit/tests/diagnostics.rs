//! The diagnostics service the kit serves beside `SourceAdapter`: an adapter without a
//! self-check answers UNIMPLEMENTED, one with a self-check gets exactly the sources asked for,
//! and an unknown source is INVALID_ARGUMENT before the adapter runs.

use std::collections::HashMap;

use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, ServerConfig, SourceDescription,
    SubQuery,
    diagnostics::{Diagnostic, error, ok, wanted},
    serve_adapter,
    testing::ScriptedAdapter,
};
use fedsearch_proto::adapter::{DiagnoseRequest, adapter_diagnostics_service_client::AdapterDiagnosticsServiceClient};

/// Two sources; `a` is healthy, `b` has a missing field.
struct SelfChecking;

impl Adapter for SelfChecking {
    fn describe(&self) -> DescribeResponse {
        let source = |name: &str| SourceDescription { name: name.into(), ..Default::default() };
        DescribeResponse { adapter: "self-checking".into(), sources: vec![source("a"), source("b")] }
    }
    async fn search(&self, _query: SubQuery, _sink: HitSink) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn fetch(&self, _request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("none".into()))
    }
    async fn diagnose(&self, sources: Vec<String>) -> Option<Vec<Diagnostic>> {
        let mut out = Vec::new();
        if wanted(&sources, "a") {
            out.push(ok("a", "mapping", "fine"));
        }
        if wanted(&sources, "b") {
            out.push(error("b", "field", "`x` is missing", "map `x`"));
        }
        Some(out)
    }
}

async fn serve<A: Adapter>(adapter: A) -> AdapterDiagnosticsServiceClient<tonic::transport::Channel> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig::loopback(addr);
    tokio::spawn(async move { serve_adapter(adapter, listener, &config, std::future::pending()).await });
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect_lazy();
    AdapterDiagnosticsServiceClient::new(channel)
}

#[tokio::test]
async fn an_adapter_without_a_self_check_answers_unimplemented() {
    let mut client = serve(ScriptedAdapter::new("scripted", HashMap::new())).await;
    // the listener is bound before the server task starts: the call waits in its backlog
    let status = client.diagnose(DiagnoseRequest::default()).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    assert_eq!(status.message(), "this adapter has no self-check");
}

#[tokio::test]
async fn findings_are_those_of_the_sources_asked_for_and_unknown_sources_are_refused() {
    let mut client = serve(SelfChecking).await;
    let all = client.diagnose(DiagnoseRequest::default()).await.unwrap().into_inner().diagnostics;
    assert_eq!(all.iter().map(|d| d.source.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let b = client.diagnose(DiagnoseRequest { sources: vec!["b".into()] }).await.unwrap().into_inner().diagnostics;
    assert_eq!(b.len(), 1);
    assert_eq!((b[0].check.as_str(), b[0].fix.as_str()), ("field", "map `x`"));
    let err = client.diagnose(DiagnoseRequest { sources: vec!["c".into()] }).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().contains("`c`"), "{}", err.message());
}
