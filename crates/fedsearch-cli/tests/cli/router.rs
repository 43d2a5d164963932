//! A tiny in-test `FederatedSearch` server: verifies the bearer token like the router does,
//! records what it was asked, and answers with canned responses from the sample company.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use fedsearch_core::auth::{Identity, JwtConfig, JwtVerifier};
use fedsearch_proto::{
    api::{
        Document, FusedSnapshot, FusionReport, GetDocumentRequest, ListSourcesRequest, ListSourcesResponse,
        RoutedSource, RoutingDecision, SearchEvent, SearchRequest, SearchResponse, SourceInfo,
        federated_search_server::{FederatedSearch, FederatedSearchServer},
        search_event::Event,
    },
    types::{DuplicateRef, Explanation, Hit, SourceState, SourceStatus},
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

pub const SECRET: &str = "cli-test-secret-0123456789abcdef0123456789";

/// What the server was asked, with the verified caller.
#[derive(Debug, Clone)]
pub struct Seen {
    pub identity: Identity,
    pub request: SearchRequest,
    pub grpc_timeout: Option<Duration>,
}

#[derive(Clone)]
struct FakeRouter {
    verifier: JwtVerifier,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// When set, the stream pauses after its first status until this fires.
    gate: Arc<Mutex<Option<oneshot::Receiver<()>>>>,
}

/// A running fake router.
pub struct Running {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    gate: Arc<Mutex<Option<oneshot::Receiver<()>>>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Makes the next stream wait after its first source status until the returned sender fires.
    pub fn gate_stream(&self) -> oneshot::Sender<()> {
        let (tx, rx) = oneshot::channel();
        *self.gate.lock().unwrap() = Some(rx);
        tx
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn start() -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let verifier = JwtVerifier::new(&JwtConfig { hs256_secret: Some(SECRET.into()), ..Default::default() }).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Mutex::new(None));
    let service = FakeRouter { verifier, seen: seen.clone(), gate: gate.clone() };
    let served = fedsearch_core::grpc::Served {
        routes: tonic::service::Routes::new(FederatedSearchServer::new(service)),
        service_names: vec!["fedsearch.v1.FederatedSearch"],
    };
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(fedsearch_core::grpc::serve(
        listener,
        served,
        async {
            let _ = stopped.await;
        },
        Duration::from_millis(100),
    ));
    Running { url: format!("http://{addr}"), seen, gate, stop: Some(stop) }
}

impl FakeRouter {
    fn caller<T>(&self, request: &Request<T>) -> Result<Identity, Status> {
        Ok(self.verifier.verify_metadata(request.metadata())?)
    }

    fn record(&self, request: &Request<SearchRequest>) -> Result<(), Status> {
        let identity = self.caller(request)?;
        if request.get_ref().query.trim().is_empty() {
            return Err(Status::invalid_argument("query must not be empty"));
        }
        let grpc_timeout = fedsearch_core::grpc::grpc_timeout(request.metadata());
        self.seen.lock().unwrap().push(Seen { identity, request: request.get_ref().clone(), grpc_timeout });
        Ok(())
    }
}

fn ts(days_ago: i64) -> Option<prost_types::Timestamp> {
    Some(fedsearch_core::time::from_chrono(chrono::Utc::now() - chrono::Duration::days(days_ago)))
}

pub fn routing() -> RoutingDecision {
    RoutingDecision {
        strategy: "rules".into(),
        selected: vec![
            RoutedSource { source: "tickets".into(), reason: "keyword 支付超时".into(), ..Default::default() },
            RoutedSource { source: "wiki".into(), reason: "runbooks and policies".into(), ..Default::default() },
        ],
        not_selected: vec![RoutedSource {
            source: "shop".into(),
            reason: "no order number in the question".into(),
            ..Default::default()
        }],
    }
}

pub fn statuses() -> [SourceStatus; 2] {
    [
        SourceStatus {
            source: "tickets".into(),
            state: SourceState::Ok as i32,
            hit_count: 2,
            latency_ms: 37,
            ..Default::default()
        },
        SourceStatus {
            source: "wiki".into(),
            state: SourceState::Timeout as i32,
            hit_count: 0,
            latency_ms: 800,
            message: "no answer within 800 ms".into(),
            code: "DEADLINE_EXCEEDED".into(),
        },
    ]
}

pub fn hits() -> Vec<Hit> {
    vec![
        Hit {
            id: "tickets:TCK-5002".into(),
            source: "tickets".into(),
            title: "支付超时：订单SO20261004付款失败，客户李娜".into(),
            snippet: "订单SO20261004付款失败，支付网关超时".into(),
            url: "https://support.spruce-mall.example/tickets/TCK-5002".into(),
            updated_at: ts(2),
            rank_in_source: 1,
            source_score: Some(8.25),
            fused_score: 0.0328,
            metadata: HashMap::from([
                ("status".into(), "in_progress".into()),
                ("order_no".into(), "SO20261004".into()),
            ]),
            full_text_ref: "tickets:TCK-5002".into(),
            duplicates: vec![DuplicateRef {
                source: "incidents".into(),
                id: "incidents:INC-2041".into(),
                url: "https://ops.spruce-mall.example/INC-2041".into(),
                rank_in_source: 1,
                matched_on: "content".into(),
            }],
            doc_type: "ticket".into(),
            explanation: Some(Explanation {
                method: "rrf".into(),
                contributions: vec![],
                summary: "rrf k=60: tickets#1 1/61 + incidents#1 1/61".into(),
                rerank: None,
            }),
            version: None,
        },
        Hit {
            id: "tickets:TCK-5003".into(),
            source: "tickets".into(),
            title: "Payment timeout at checkout for order SO20261006 (customer 王芳)".into(),
            snippet: "resolved after gateway recovery".into(),
            url: "https://support.spruce-mall.example/tickets/TCK-5003".into(),
            updated_at: ts(2),
            rank_in_source: 2,
            fused_score: 0.0161,
            full_text_ref: "tickets:TCK-5003".into(),
            doc_type: "ticket".into(),
            ..Default::default()
        },
    ]
}

pub const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";

pub fn response() -> SearchResponse {
    SearchResponse {
        hits: hits(),
        sources: statuses().to_vec(),
        routing: Some(routing()),
        trace_id: TRACE_ID.into(),
        fusion: Some(FusionReport { method: "rrf".into(), rrf_k: 60, duplicates_merged: 1, ..Default::default() }),
        context: None,
    }
}

type EventStream = ReceiverStream<Result<SearchEvent, Status>>;

#[tonic::async_trait]
impl FederatedSearch for FakeRouter {
    async fn search(&self, request: Request<SearchRequest>) -> Result<Response<SearchResponse>, Status> {
        self.record(&request)?;
        Ok(Response::new(response()))
    }

    type SearchStreamStream = EventStream;

    async fn search_stream(&self, request: Request<SearchRequest>) -> Result<Response<EventStream>, Status> {
        self.record(&request)?;
        let gate = self.gate.lock().unwrap().take();
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            let [first, second] = statuses();
            let send = |e: Event| {
                let tx = tx.clone();
                async move { tx.send(Ok(SearchEvent { event: Some(e) })).await.is_ok() }
            };
            let _ = send(Event::Routing(routing())).await && send(Event::SourceStatus(first)).await;
            if let Some(gate) = gate {
                // The test releases this only after it has read the first status from the CLI.
                let _ = tokio::time::timeout(Duration::from_secs(20), gate).await;
            }
            let _ = send(Event::SourceStatus(second)).await
                && send(Event::Snapshot(FusedSnapshot {
                    hits: hits(),
                    sources_done: vec!["tickets".into(), "wiki".into()],
                }))
                .await
                && send(Event::Result(response())).await;
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_document(&self, request: Request<GetDocumentRequest>) -> Result<Response<Document>, Status> {
        let identity = self.caller(&request)?;
        match request.get_ref().full_text_ref.as_str() {
            "wiki:public:return_policy" => Ok(Response::new(Document {
                id: "public:return_policy".into(),
                source: "wiki".into(),
                title: "退货政策 Return policy (2026)".into(),
                content: "非质量问题拒收收取退回运费 12 元。\nQuality issues are free.".into(),
                url: "http://127.0.0.1:8080/doku.php?id=public:return_policy".into(),
                updated_at: ts(40),
                metadata: HashMap::from([("namespace".into(), "public".into())]),
                doc_type: "policy".into(),
            })),
            r if r.starts_with("wiki:finance:") && !identity.groups.iter().any(|g| g == "finance") => {
                Err(Status::permission_denied("you may not read this document"))
            }
            _ => Err(Status::not_found("no such document")),
        }
    }

    async fn list_sources(
        &self,
        request: Request<ListSourcesRequest>,
    ) -> Result<Response<ListSourcesResponse>, Status> {
        let identity = self.caller(&request)?;
        let mut sources = vec![SourceInfo {
            name: "wiki".into(),
            kind: "wiki".into(),
            description: "公司维基 policies and runbooks".into(),
            when_to_use: "policies, how-tos".into(),
            weight: 1.0,
            timeout_ms: 800,
            tool_spec_json: r#"{"type":"function","function":{"name":"search_wiki"}}"#.into(),
            ..Default::default()
        }];
        if identity.groups.iter().any(|g| g == "support") {
            sources.insert(
                0,
                SourceInfo {
                    name: "tickets".into(),
                    kind: "search".into(),
                    description: "support tickets".into(),
                    when_to_use: "customer complaints, order problems".into(),
                    when_not_to_use: "company policy".into(),
                    weight: 1.5,
                    ..Default::default()
                },
            );
        }
        Ok(Response::new(ListSourcesResponse { sources }))
    }

    async fn feedback(
        &self,
        _request: Request<fedsearch_proto::api::FeedbackRequest>,
    ) -> Result<Response<fedsearch_proto::api::FeedbackResponse>, Status> {
        Err(Status::unimplemented("the CLI does not send feedback"))
    }
}
