//! The `SourceAdapter` gRPC service around an [`Adapter`]: sub-query fan-in, deadlines,
//! cancellation, per-sub-query status and trace context, and streams that end once their
//! sub-queries are done when the adapter drains.

use std::{collections::HashMap, pin::Pin, sync::Arc, time::Duration};

use fedsearch_proto::{
    adapter::{
        DescribeRequest, DescribeResponse, FetchRequest, FetchResponse, HitBatch, ResultFrame, SearchFrame, SubQuery,
        SubQueryDone, result_frame, search_frame,
        source_adapter_server::{SourceAdapter, SourceAdapterServer},
    },
    types::SourceState,
};
use futures::Stream;
use tokio::{
    sync::{Semaphore, mpsc},
    task::JoinSet,
    time::Instant,
};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument;

use fedsearch_core::assertion::{AssertionError, AssertionVerifier};
use fedsearch_proto::types::UserContext;

use crate::{Adapter, AdapterError, HitSink, error::code_name};

/// Replaces the user of a call by the one its assertion proves (keeping the delegated
/// credential, which is not part of the identity), or says why it cannot.
fn verified_user(
    verifier: Option<&AssertionVerifier>,
    user: &mut Option<UserContext>,
    audience: &str,
    scope: &str,
) -> Result<(), AssertionError> {
    let Some(verifier) = verifier else { return Ok(()) };
    let token = user.as_ref().and_then(|u| u.assertion.as_ref()).map(|a| a.value.as_str()).unwrap_or_default();
    let identity = verifier.verify(token, audience, scope)?;
    let delegated = user.take().and_then(|u| u.delegated_credential);
    let mut ctx = identity.to_user_context();
    ctx.delegated_credential = delegated;
    *user = Some(ctx);
    Ok(())
}

/// Sub-queries above this limit are refused.
pub const MAX_LIMIT: u32 = 200;
/// Limit used when a sub-query says 0.
pub const DEFAULT_LIMIT: u32 = 10;

/// The gRPC face of an adapter.
pub struct AdapterService<A> {
    adapter: Arc<A>,
    permits: Arc<Semaphore>,
    default_timeout: Duration,
    /// The logical sources the adapter describes: the only values of the metrics' source label.
    sources: Arc<std::collections::HashSet<String>>,
    /// Verifies the router's identity assertions; `None` believes the plain `UserContext`.
    verifier: Option<Arc<AssertionVerifier>>,
    /// Turns true when the adapter starts draining (SIGTERM): every stream then takes no more
    /// sub-queries and ends once the ones it runs are done.
    drain: tokio::sync::watch::Receiver<bool>,
}

impl<A: Adapter> AdapterService<A> {
    pub fn new(adapter: A, max_concurrent: usize, default_timeout: Duration) -> Self {
        let sources = Arc::new(adapter.describe().sources.into_iter().map(|s| s.name).collect());
        Self {
            adapter: Arc::new(adapter),
            permits: Arc::new(Semaphore::new(max_concurrent)),
            default_timeout,
            sources,
            verifier: None,
            drain: tokio::sync::watch::channel(false).1,
        }
    }

    /// Ends every stream once its in-flight sub-queries are done when `drain` turns true, so a
    /// draining adapter's long-lived streams end cleanly instead of at the grace period.
    pub fn with_drain(self, drain: tokio::sync::watch::Receiver<bool>) -> Self {
        Self { drain, ..self }
    }

    /// Requires a valid router-signed assertion on every sub-query and fetch (when `Some`),
    /// and uses the user it asserts instead of the plain `UserContext` fields.
    pub fn with_verifier(self, verifier: Option<Arc<AssertionVerifier>>) -> Self {
        Self { verifier, ..self }
    }

    pub fn into_server(self) -> SourceAdapterServer<Self> {
        SourceAdapterServer::new(self)
    }
}

type ResultStream = Pin<Box<dyn Stream<Item = Result<ResultFrame, Status>> + Send>>;

fn done(id: &str, state: SourceState, code: &str, message: String, hits: u32, started: Instant) -> ResultFrame {
    ResultFrame {
        frame: Some(result_frame::Frame::Done(SubQueryDone {
            sub_query_id: id.to_string(),
            state: state as i32,
            code: code.to_string(),
            message,
            hit_count: hits,
            latency_ms: started.elapsed().as_millis() as u64,
        })),
    }
}

/// Sub-queries one stream may run at once; more are answered RESOURCE_EXHAUSTED. A router keeps
/// a few long-lived streams per adapter and sends every search's sub-query on them, so this is
/// about as many as a connection carried as separate streams (`MAX_CONCURRENT_STREAMS` × 4);
/// the adapter-wide `max_concurrent_subqueries` still bounds the backend work.
pub const MAX_SUBQUERIES_PER_STREAM: usize = 1024;

fn check(query: &mut SubQuery) -> Result<(), AdapterError> {
    let texts = [("text", &query.text), ("original_text", &query.original_text), ("template", &query.template)];
    let lists = query.terms.iter().map(|t| ("terms", t)).chain(query.entities.iter().map(|e| ("entities", e)));
    let params = query.params.iter().flat_map(|(k, v)| [("params", k), ("params", v)]);
    for (field, value) in texts.into_iter().chain(lists).chain(params) {
        if let Some(c) = fedsearch_core::text::first_forbidden_char(value) {
            return Err(AdapterError::InvalidArgument(format!(
                "{field} must not contain control characters or noncharacters (found {c})"
            )));
        }
    }
    if query.limit == 0 {
        query.limit = DEFAULT_LIMIT;
    }
    if query.limit > MAX_LIMIT {
        return Err(AdapterError::InvalidArgument(format!("limit must be at most {MAX_LIMIT}")));
    }
    match &query.user {
        Some(user) if !user.subject.is_empty() => Ok(()),
        _ => Err(AdapterError::Unauthenticated("sub-query carries no user context".into())),
    }
}

/// Runs one sub-query to completion and returns its `SubQueryDone`.
#[allow(clippy::too_many_arguments)]
async fn run_one<A: Adapter>(
    adapter: Arc<A>,
    permits: Arc<Semaphore>,
    mut query: SubQuery,
    out: mpsc::Sender<Result<ResultFrame, Status>>,
    default_timeout: Duration,
    stream_deadline: Option<tokio::time::Instant>,
    timer: crate::metrics::SubQueryTimer,
    verifier: Option<Arc<AssertionVerifier>>,
) -> ResultFrame {
    let started = Instant::now();
    let id = query.id.clone();
    // Who the user is comes from the router's signature, checked before anything else.
    let scope = fedsearch_core::assertion::search_scope(&id);
    if let Err(e) = verified_user(verifier.as_deref(), &mut query.user, &query.source, &scope) {
        tracing::info!(sub_query_id = %id, reason = e.reason().as_str(), "sub-query refused: {e}");
        timer.done(SourceState::Denied, 0);
        return done(&id, SourceState::Denied, "UNAUTHENTICATED", e.to_string(), 0, started);
    }
    // The stream's relative budget (grpc-timeout), measured on this host's clock, wins over an
    // absolute deadline written by another host (clock skew would shrink or stretch it).
    if let Some(until) = stream_deadline {
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        query.deadline = Some(fedsearch_core::time::to_timestamp(std::time::SystemTime::now() + left));
    }
    if let Err(e) = check(&mut query) {
        timer.done(e.state(), 0);
        return done(&id, e.state(), code_name(e.code()), e.to_string(), 0, started);
    }
    let budget = crate::remaining(&query, default_timeout);
    let (sink, mut batches) = HitSink::channel(8);
    let notes = sink.clone_notes();
    let work = async {
        let _permit =
            permits.acquire_owned().await.map_err(|_| AdapterError::Unavailable("adapter is shutting down".into()))?;
        adapter.search(query, sink).await
    };
    let forward = async {
        let mut hits = 0u32;
        while let Some(batch) = batches.recv().await {
            hits += batch.len() as u32;
            let frame = ResultFrame {
                frame: Some(result_frame::Frame::Batch(HitBatch { sub_query_id: id.clone(), hits: batch })),
            };
            if out.send(Ok(frame)).await.is_err() {
                break;
            }
        }
        hits
    };
    let backend_started = Instant::now();
    let (result, hits) = tokio::join!(tokio::time::timeout(budget, work), forward);
    let state = match &result {
        Ok(Ok(())) => SourceState::Ok,
        Ok(Err(e)) => e.state(),
        Err(_) => SourceState::Timeout,
    };
    crate::metrics::backend_done(timer.source(), state, backend_started);
    timer.done(state, hits);
    match result {
        Ok(Ok(())) => done(&id, SourceState::Ok, "OK", notes.notes(), hits, started),
        Ok(Err(e)) => {
            tracing::warn!(sub_query_id = %id, code = code_name(e.code()), error = %e, "sub-query failed");
            // What the adapter noted before failing (a follow-up lookup that timed out after
            // the hits found so far) travels with the error.
            let message = match notes.notes() {
                n if n.is_empty() => e.to_string(),
                n => format!("{e}; {n}"),
            };
            done(&id, e.state(), code_name(e.code()), message, hits, started)
        }
        Err(_) => done(
            &id,
            SourceState::Timeout,
            "DEADLINE_EXCEEDED",
            format!("no answer within {} ms", budget.as_millis()),
            hits,
            started,
        ),
    }
}

/// The sub-query's own trace context when it names another trace than the stream's: a
/// sub-query on a long-lived stream shared by many searches. `None` keeps the stream's span as
/// the parent: an older router sent none, or the stream is the sub-query's own (its server span
/// is already in that trace, between the router's call and the sub-query).
fn own_parent(query: &SubQuery) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::TraceContextExt as _;
    if query.trace_context.is_empty() {
        return None;
    }
    let cx = fedsearch_core::propagation::extract_map(&query.trace_context);
    let remote = cx.span().span_context().clone();
    let stream = fedsearch_core::telemetry::span_context(&tracing::Span::current());
    (remote.is_valid() && remote.trace_id() != stream.trace_id()).then_some(cx)
}

/// The `adapter.subquery` span, opened under the stream's span. Parented on the sub-query's own
/// context ([`own_parent`]) it is the server side of the router's call (kind server), as the
/// stream's server span is for a stream of its own.
fn subquery_span(query: &SubQuery) -> tracing::Span {
    let parent = own_parent(query);
    let span = tracing::info_span!(
        "adapter.subquery",
        otel.name = %format!("adapter.subquery {}", query.source),
        otel.kind = if parent.is_some() { "server" } else { "internal" },
        source = %query.source,
        sub_query_id = %query.id,
    );
    if let Some(parent) = parent {
        fedsearch_core::telemetry::set_parent(&span, parent);
    }
    span
}

/// Resolves once the adapter starts draining; never when nothing can tell it to.
async fn draining(mut drain: tokio::sync::watch::Receiver<bool>) {
    if drain.wait_for(|d| *d).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[tonic::async_trait]
impl<A: Adapter> SourceAdapter for AdapterService<A> {
    async fn describe(&self, _request: Request<DescribeRequest>) -> Result<Response<DescribeResponse>, Status> {
        Ok(Response::new(self.adapter.describe()))
    }

    type SearchStream = ResultStream;

    async fn search(&self, request: Request<Streaming<SearchFrame>>) -> Result<Response<Self::SearchStream>, Status> {
        let stream_deadline =
            fedsearch_core::grpc::grpc_timeout(request.metadata()).map(|t| tokio::time::Instant::now() + t);
        let mut inbound = request.into_inner();
        let (out_tx, out_rx) = mpsc::channel::<Result<ResultFrame, Status>>(64);
        let adapter = self.adapter.clone();
        let permits = self.permits.clone();
        let default_timeout = self.default_timeout;
        let known = self.sources.clone();
        let verifier = self.verifier.clone();
        let drain = draining(self.drain.clone());
        let driver = async move {
            tokio::pin!(drain);
            let mut tasks: JoinSet<ResultFrame> = JoinSet::new();
            let mut running: HashMap<String, tokio::task::AbortHandle> = HashMap::new();
            let mut ids: HashMap<tokio::task::Id, String> = HashMap::new();
            let mut inbound_open = true;
            // Draining, a stream takes no more sub-queries once it has carried one: its first
            // still runs (a stream per sub-query opened just before the drain is answered).
            let (mut drain_seen, mut carried) = (false, false);
            loop {
                if drain_seen && carried && inbound_open {
                    tracing::debug!(running = running.len(), "draining: ending the stream after its sub-queries");
                    inbound_open = false;
                }
                if !inbound_open && tasks.is_empty() {
                    break;
                }
                tokio::select! {
                    frame = inbound.message(), if inbound_open => match frame {
                        Ok(Some(SearchFrame { frame: Some(search_frame::Frame::SubQuery(q)) })) => {
                            if q.id.is_empty() || running.contains_key(&q.id) {
                                let _ = out_tx.send(Err(Status::invalid_argument(
                                    "every sub-query needs a unique, non-empty id",
                                ))).await;
                                break;
                            }
                            let label = if known.contains(&q.source) { q.source.clone() } else { "_OTHER".to_string() };
                            let timer = crate::metrics::SubQueryTimer::start(label);
                            if running.len() >= MAX_SUBQUERIES_PER_STREAM {
                                timer.done(SourceState::Error, 0);
                                let refused = done(&q.id, SourceState::Error, "RESOURCE_EXHAUSTED", format!(
                                    "at most {MAX_SUBQUERIES_PER_STREAM} sub-queries run at once on one stream"
                                ), 0, Instant::now());
                                if out_tx.send(Ok(refused)).await.is_err() {
                                    break;
                                }
                                continue;
                            }
                            let span = subquery_span(&q);
                            let id = q.id.clone();
                            let handle = tasks.spawn(
                                run_one(adapter.clone(), permits.clone(), q, out_tx.clone(), default_timeout, stream_deadline, timer, verifier.clone())
                                    .instrument(span),
                            );
                            ids.insert(handle.id(), id.clone());
                            running.insert(id, handle);
                            carried = true;
                        }
                        Ok(Some(SearchFrame { frame: Some(search_frame::Frame::Cancel(c)) })) => {
                            if let Some(handle) = running.get(&c.id) {
                                handle.abort();
                            }
                        }
                        Ok(Some(SearchFrame { frame: None })) => {}
                        Ok(None) => inbound_open = false,
                        // A frame that does not decode is the caller's fault: say so, then stop.
                        Err(status) if status.code() == tonic::Code::Internal
                            && status.message().starts_with("failed to decode") =>
                        {
                            let _ = out_tx.send(Err(Status::invalid_argument("a sub-query frame is not a valid protobuf message"))).await;
                            break;
                        }
                        Err(status) => {
                            tracing::debug!(code = ?status.code(), "router closed the sub-query stream; cancelling");
                            break;
                        }
                    },
                    Some(joined) = tasks.join_next_with_id() => {
                        let frame = match joined {
                            Ok((tid, frame)) => { if let Some(id) = ids.remove(&tid) { running.remove(&id); } frame }
                            Err(e) => {
                                let id = ids.remove(&e.id()).unwrap_or_default();
                                running.remove(&id);
                                if e.is_cancelled() {
                                    done(&id, SourceState::Skipped, "CANCELLED", "cancelled by the router".into(), 0, Instant::now())
                                } else {
                                    tracing::error!(sub_query_id = %id, "adapter panicked while running a sub-query");
                                    done(&id, SourceState::Error, "INTERNAL", "internal adapter error".into(), 0, Instant::now())
                                }
                            }
                        };
                        if out_tx.send(Ok(frame)).await.is_err() {
                            break;
                        }
                    }
                    _ = &mut drain, if !drain_seen => drain_seen = true,
                    _ = out_tx.closed() => break,
                }
            }
            // Dropping the JoinSet aborts whatever still runs (router gone).
        };
        tokio::spawn(driver.in_current_span());
        Ok(Response::new(Box::pin(ReceiverStream::new(out_rx))))
    }

    async fn fetch(&self, request: Request<FetchRequest>) -> Result<Response<FetchResponse>, Status> {
        let mut request = request.into_inner();
        if request.reference.is_empty() {
            return Err(fedsearch_core::errors::invalid_field(
                fedsearch_core::errors::Reason::InvalidArgument,
                "reference",
                "reference must not be empty",
            ));
        }
        let scope = fedsearch_core::assertion::fetch_scope(&request.reference);
        if let Err(e) = verified_user(self.verifier.as_deref(), &mut request.user, &request.source, &scope) {
            tracing::info!(reason = e.reason().as_str(), "fetch refused: {e}");
            return Err(e.status());
        }
        if request.user.as_ref().is_none_or(|u| u.subject.is_empty()) {
            return Err(fedsearch_core::errors::status(
                tonic::Code::Unauthenticated,
                fedsearch_core::errors::Reason::TokenMissing,
                "fetch carries no user context",
            ));
        }
        let span = tracing::info_span!("adapter.fetch", source = %request.source);
        let source = if self.sources.contains(&request.source) { request.source.clone() } else { "_OTHER".into() };
        let started = Instant::now();
        let result = tokio::time::timeout(self.default_timeout, self.adapter.fetch(request).instrument(span)).await;
        let state = match &result {
            Ok(Ok(_)) => SourceState::Ok,
            Ok(Err(e)) => e.state(),
            Err(_) => SourceState::Timeout,
        };
        crate::metrics::fetch_done(&source, state, started);
        match result {
            Ok(Ok(doc)) => Ok(Response::new(doc)),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(fedsearch_core::errors::status(
                tonic::Code::DeadlineExceeded,
                fedsearch_core::errors::Reason::DeadlineExceeded,
                "the source did not answer in time",
            )),
        }
    }
}
