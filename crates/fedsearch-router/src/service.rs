//! The `fedsearch.v1.FederatedSearch` gRPC service: authentication, load shedding, the
//! mapping from router errors to gRPC status codes (each with `google.rpc` details, see
//! [`fedsearch_core::errors`]) and the audit record of every call happen here, at the edge.

use std::pin::Pin;

use fedsearch_core::Identity;
use fedsearch_proto::api::{
    Document, FeedbackRequest, FeedbackResponse, GetDocumentRequest, ListSourcesRequest, ListSourcesResponse,
    SearchEvent, SearchRequest, SearchResponse,
    federated_search_server::{FederatedSearch, FederatedSearchServer},
    search_event,
};
use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::{admission::Ticket, audit, documents, search, sources, state::RouterState};

pub struct FederatedSearchService {
    state: RouterState,
}

impl FederatedSearchService {
    pub fn new(state: RouterState) -> Self {
        Self { state }
    }

    pub fn into_server(self) -> FederatedSearchServer<Self> {
        FederatedSearchServer::new(self)
    }

    /// Verifies the bearer token, then admits the call ([`crate::admission`]): every method
    /// goes through both. A refusal is audited here.
    fn admit<T>(&self, method: &str, request: &Request<T>) -> Result<(Identity, Ticket), Status> {
        let identity = match self.state.verifier.verify_metadata(request.metadata()) {
            Ok(i) => i,
            Err(e) => {
                let status = fedsearch_core::errors::auth(&e);
                self.state.audit.write(audit::record("grpc", method, None).refused(&status));
                return Err(status);
            }
        };
        tracing::Span::current().record("user", identity.subject.as_str());
        match self.state.admission.admit(&identity.subject) {
            Ok(ticket) => Ok((identity, ticket)),
            Err(status) => {
                self.state.audit.write(audit::record("grpc", method, Some(&identity.subject)).refused(&status));
                Err(status)
            }
        }
    }

    /// A record of `method` for `user`, with the query as configured.
    fn audit_record(&self, method: &str, user: &Identity, query: Option<&str>) -> audit::Record {
        let mut r = audit::record("grpc", method, Some(&user.subject));
        r.query = query.and_then(|q| self.state.audit.query(q));
        r
    }
}

/// Every error leaves with details: an `ErrorInfo` (stable reason, trace id) and, for
/// INVALID_ARGUMENT, a `BadRequest` naming the field.
fn detailed<T>(result: Result<T, Status>) -> Result<T, Status> {
    result.map_err(fedsearch_core::errors::ensure_details)
}

fn search_span(user: &Identity, query_chars: usize) -> tracing::Span {
    tracing::info_span!(
        "router.search",
        user = %user.subject,
        query_chars,
        trace_id = %fedsearch_core::propagation::current_trace_id(),
    )
}

type EventStream = Pin<Box<dyn Stream<Item = Result<SearchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl FederatedSearch for FederatedSearchService {
    async fn search(&self, request: Request<SearchRequest>) -> Result<Response<SearchResponse>, Status> {
        let (user, ticket) = self.admit("Search", &request)?;
        let timeout = fedsearch_core::grpc::grpc_timeout(request.metadata());
        let req = request.into_inner();
        // Without an audit sink there is no record to fill in.
        let record = self.state.audit.enabled().then(|| self.audit_record("Search", &user, Some(&req.query)));
        let span = search_span(&user, req.query.chars().count());
        let result =
            detailed(search::run_admitted(&self.state, &user, ticket, req, timeout, None).instrument(span).await);
        if let Some(record) = record {
            self.state.audit.write(match &result {
                Ok(response) => record.with_response(response),
                Err(status) => record.refused(status),
            });
        }
        Ok(Response::new(result?))
    }

    type SearchStreamStream = EventStream;

    async fn search_stream(
        &self,
        request: Request<SearchRequest>,
    ) -> Result<Response<Self::SearchStreamStream>, Status> {
        let (user, ticket) = self.admit("SearchStream", &request)?;
        let timeout = fedsearch_core::grpc::grpc_timeout(request.metadata());
        let req = request.into_inner();
        let record = self.audit_record("SearchStream", &user, Some(&req.query));
        if let Err(status) = detailed(search::validate(&self.state, &req)) {
            self.state.audit.write(record.refused(&status));
            return Err(status);
        }
        let audit_log = self.state.audit.clone();
        let (out_tx, out_rx) = mpsc::channel::<Result<SearchEvent, Status>>(32);
        let (ev_tx, mut ev_rx) = mpsc::channel::<SearchEvent>(32);
        let state = self.state.clone();
        let span = search_span(&user, req.query.chars().count());
        tokio::spawn(
            async move {
                let forward_tx = out_tx.clone();
                let forward = async move {
                    while let Some(ev) = ev_rx.recv().await {
                        if forward_tx.send(Ok(ev)).await.is_err() {
                            break;
                        }
                    }
                };
                let work = search::run_admitted(&state, &user, ticket, req, timeout, Some(ev_tx));
                tokio::select! {
                    // The caller hung up: dropping `work` cancels every sub-query.
                    _ = out_tx.closed() => {}
                    (result, ()) = async { tokio::join!(work, forward) } => {
                        let result = detailed(result);
                        audit_log.write(match &result {
                            Ok(response) => record.with_response(response),
                            Err(status) => record.refused(status),
                        });
                        let msg = result.map(|r| SearchEvent { event: Some(search_event::Event::Result(r)) });
                        let _ = out_tx.send(msg).await;
                    }
                }
            }
            .instrument(span),
        );
        Ok(Response::new(Box::pin(ReceiverStream::new(out_rx))))
    }

    async fn get_document(&self, request: Request<GetDocumentRequest>) -> Result<Response<Document>, Status> {
        let (user, _ticket) = self.admit("GetDocument", &request)?;
        let req = request.into_inner();
        let mut record = self.audit_record("GetDocument", &user, None);
        let result = detailed(documents::get(&self.state, &user, req.clone()).await);
        if let Ok(doc) = &result {
            record.fetched_ids.push(doc.id.clone());
        } else {
            record.fetched_ids.push(req.full_text_ref.chars().take(256).collect());
        }
        self.state.audit.write(record.outcome(&result));
        Ok(Response::new(result?))
    }

    async fn list_sources(
        &self,
        request: Request<ListSourcesRequest>,
    ) -> Result<Response<ListSourcesResponse>, Status> {
        let (user, _ticket) = self.admit("ListSources", &request)?;
        let sources = sources::list(&self.state.registry, &user);
        let mut record = self.audit_record("ListSources", &user, None);
        record.sources =
            sources.iter().map(|s| audit::SourceOutcome { source: s.name.clone(), state: "listed", hits: 0 }).collect();
        self.state.audit.write(record);
        Ok(Response::new(ListSourcesResponse { sources }))
    }

    async fn feedback(&self, request: Request<FeedbackRequest>) -> Result<Response<FeedbackResponse>, Status> {
        let (user, _ticket) = self.admit("Feedback", &request)?;
        let result = detailed(self.state.feedback.record(&self.state.registry, &user, request.get_ref()).await);
        let record = self.audit_record("Feedback", &user, Some(&request.get_ref().query));
        self.state.audit.write(record.outcome(&result));
        Ok(Response::new(result?))
    }
}
