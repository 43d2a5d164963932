//! `fedsearch.adapter.v1.AdapterDiagnosticsService`: an adapter's self-checks against its own
//! backend (index mappings and permission fields, SQL templates and their columns, time zones,
//! its credentials), served beside `SourceAdapter` by [`crate::serve_adapter`] and read by
//! `fedsearch doctor`.
//!
//! An adapter opts in by implementing [`crate::Adapter::diagnose`]; the default answers
//! UNIMPLEMENTED ("this adapter has no self-check"). Messages follow the rules of every adapter
//! error: no credentials, hosts or backend traces — field, index, template and column names
//! from the config are fine.

use std::sync::Arc;

use fedsearch_proto::adapter::{
    DescribeResponse, FetchRequest, FetchResponse, SubQuery,
    adapter_diagnostics_service_server::{AdapterDiagnosticsService, AdapterDiagnosticsServiceServer},
};
pub use fedsearch_proto::adapter::{DiagnoseRequest, DiagnoseResponse, Diagnostic, DiagnosticSeverity};
use tonic::{Request, Response, Status};

use crate::{Adapter, AdapterError, HitSink};

/// The gRPC service name (for health and reflection).
pub const SERVICE_NAME: &str = "fedsearch.adapter.v1.AdapterDiagnosticsService";

/// One finding. `fix` says what to change ("" when nothing).
pub fn finding(
    source: &str,
    severity: DiagnosticSeverity,
    check: &str,
    message: impl Into<String>,
    fix: impl Into<String>,
) -> Diagnostic {
    Diagnostic {
        source: source.to_string(),
        severity: severity as i32,
        check: check.to_string(),
        message: message.into(),
        fix: fix.into(),
    }
}

/// A passed check.
pub fn ok(source: &str, check: &str, message: impl Into<String>) -> Diagnostic {
    finding(source, DiagnosticSeverity::Ok, check, message, "")
}

/// A problem that makes the source fail or answer wrongly.
pub fn error(source: &str, check: &str, message: impl Into<String>, fix: impl Into<String>) -> Diagnostic {
    finding(source, DiagnosticSeverity::Error, check, message, fix)
}

/// Works, but probably not as intended.
pub fn warning(source: &str, check: &str, message: impl Into<String>, fix: impl Into<String>) -> Diagnostic {
    finding(source, DiagnosticSeverity::Warning, check, message, fix)
}

/// Whether `source` is asked for by a request's `sources` (empty: every source).
pub fn wanted(sources: &[String], source: &str) -> bool {
    sources.is_empty() || sources.iter().any(|s| s == source)
}

/// The diagnostics service around a shared adapter.
pub struct DiagnosticsService<A> {
    adapter: Arc<A>,
}

impl<A: Adapter> DiagnosticsService<A> {
    pub fn new(adapter: Arc<A>) -> Self {
        Self { adapter }
    }

    pub fn into_server(self) -> AdapterDiagnosticsServiceServer<Self> {
        AdapterDiagnosticsServiceServer::new(self)
    }
}

#[tonic::async_trait]
impl<A: Adapter> AdapterDiagnosticsService for DiagnosticsService<A> {
    async fn diagnose(&self, request: Request<DiagnoseRequest>) -> Result<Response<DiagnoseResponse>, Status> {
        let sources = request.into_inner().sources;
        let known: Vec<String> = self.adapter.describe().sources.into_iter().map(|s| s.name).collect();
        if let Some(unknown) = sources.iter().find(|s| !known.contains(s)) {
            return Err(Status::invalid_argument(format!("unknown source `{unknown}`")));
        }
        match self.adapter.diagnose(sources).await {
            Some(diagnostics) => Ok(Response::new(DiagnoseResponse { diagnostics })),
            None => Err(Status::unimplemented("this adapter has no self-check")),
        }
    }
}

/// A shared adapter is an adapter (the search and the diagnostics services hold one each).
impl<A: Adapter> Adapter for Arc<A> {
    fn describe(&self) -> DescribeResponse {
        A::describe(self)
    }

    fn search(&self, query: SubQuery, sink: HitSink) -> impl Future<Output = Result<(), AdapterError>> + Send {
        A::search(self, query, sink)
    }

    fn fetch(&self, request: FetchRequest) -> impl Future<Output = Result<FetchResponse, AdapterError>> + Send {
        A::fetch(self, request)
    }

    fn diagnose(&self, sources: Vec<String>) -> impl Future<Output = Option<Vec<Diagnostic>>> + Send {
        A::diagnose(self, sources)
    }
}
