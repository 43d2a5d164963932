//! The `fedsearch.v1.FederatedSearch` gRPC service: authentication, load shedding and the
//! mapping from router errors to gRPC status codes happen here, at the edge.

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

use crate::{admission::Ticket, documents, search, sources, state::RouterState};

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
    /// goes through both.
    fn admit<T>(&self, request: &Request<T>) -> Result<(Identity, Ticket), Status> {
        let identity = self.state.verifier.verify_metadata(request.metadata())?;
        tracing::Span::current().record("user", identity.subject.as_str());
        let ticket = self.state.admission.admit(&identity.subject)?;
        Ok((identity, ticket))
    }
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
        let (user, ticket) = self.admit(&request)?;
        let timeout = fedsearch_core::grpc::grpc_timeout(request.metadata());
        let req = request.into_inner();
        let span = search_span(&user, req.query.chars().count());
        let response = search::run_admitted(&self.state, &user, ticket, req, timeout, None).instrument(span).await?;
        Ok(Response::new(response))
    }

    type SearchStreamStream = EventStream;

    async fn search_stream(
        &self,
        request: Request<SearchRequest>,
    ) -> Result<Response<Self::SearchStreamStream>, Status> {
        let (user, ticket) = self.admit(&request)?;
        let timeout = fedsearch_core::grpc::grpc_timeout(request.metadata());
        let req = request.into_inner();
        search::validate(&self.state, &req)?;
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
        let (user, _ticket) = self.admit(&request)?;
        Ok(Response::new(documents::get(&self.state, &user, request.into_inner()).await?))
    }

    async fn list_sources(
        &self,
        request: Request<ListSourcesRequest>,
    ) -> Result<Response<ListSourcesResponse>, Status> {
        let (user, _ticket) = self.admit(&request)?;
        Ok(Response::new(ListSourcesResponse { sources: sources::list(&self.state.registry, &user) }))
    }

    async fn feedback(&self, request: Request<FeedbackRequest>) -> Result<Response<FeedbackResponse>, Status> {
        let (user, _ticket) = self.admit(&request)?;
        Ok(Response::new(self.state.feedback.record(&self.state.registry, &user, request.get_ref()).await?))
    }
}
