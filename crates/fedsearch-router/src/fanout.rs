//! Fan-out: one sub-query per selected source, all sent at once on the adapters' long-lived
//! streams ([`crate::mux`]; or a stream each with `streams: 0`), each bounded by min(source
//! timeout, overall deadline). Every source ends with exactly one
//! status; a slow, failing or crashed source never fails the search.

use std::time::Duration;

use fedsearch_core::Identity;
use fedsearch_proto::{
    adapter::{SearchFrame, SubQuery, SubQueryDone, search_frame},
    types::{Filters, Secret, SourceHit, SourceState, SourceStatus},
};
use tokio::{sync::mpsc, task::JoinSet, time::Instant};
use tracing::Instrument;

use fedsearch_core::grpc::code_name;

use crate::{
    breaker::{Admission, Blame, Outcome},
    mux::{WireFrame, WireResultFrame},
    registry::{Registry, Source},
};

/// What a source task reports to the search loop.
#[derive(Debug)]
pub enum SourceEvent {
    Batch { source: String, hits: WireHits },
    Done(SourceStatus),
}

/// A source's hits as the adapter encoded them: each `SourceHit`'s protobuf bytes, slices of
/// the frame they arrived in. The router passes them on to the fusion service as they came and
/// decodes them only where it reads hits itself (fusing in-process, the answer cache).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireHits(pub Vec<prost::bytes::Bytes>);

impl WireHits {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The encoding of decoded hits.
    pub fn encode(hits: &[SourceHit]) -> Self {
        Self(hits.iter().map(|h| prost::Message::encode_to_vec(h).into()).collect())
    }

    /// The hits. One that does not decode (an adapter that broke the contract) is left out: the
    /// same hit makes the fusion service refuse the whole stream.
    pub fn decode(&self) -> Vec<SourceHit> {
        self.0
            .iter()
            .filter_map(|b| {
                <SourceHit as prost::Message>::decode(b.as_ref())
                    .map_err(|e| tracing::warn!(error = %e, "a hit that does not decode was left out"))
                    .ok()
            })
            .collect()
    }
}

/// The decoded hits (see [`WireHits::decode`]).
impl IntoIterator for WireHits {
    type Item = SourceHit;
    type IntoIter = std::vec::IntoIter<SourceHit>;

    fn into_iter(self) -> Self::IntoIter {
        self.decode().into_iter()
    }
}

/// One sub-query to send.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub source: String,
    pub text: String,
    pub filters: Option<Filters>,
    pub limit: u32,
    pub template: String,
    pub params: std::collections::HashMap<String, String>,
    pub credential: Option<Secret>,
    /// The question as asked, the extracted terms (with glossary expansions) and entities.
    pub original_text: String,
    pub terms: Vec<String>,
    pub entities: Vec<String>,
    /// The moment relative time refers to, and the user's time zone.
    pub as_of: Option<prost_types::Timestamp>,
    /// Whether the caller gave `as_of` (else it is "now", which the answer cache ignores).
    pub explicit_as_of: bool,
    pub time_zone: String,
    /// Whether `filters.time_range` was read from the question's time phrase (see
    /// `SubQuery.time_range_from_question`).
    pub time_range_from_question: bool,
}

/// Starts every dispatch at once. The returned set owns the tasks: dropping it cancels every
/// sub-query (which is how client cancellation reaches the adapters).
pub fn start(
    registry: &Registry,
    user: &Identity,
    dispatches: Vec<Dispatch>,
    deadline: Instant,
    events: mpsc::Sender<SourceEvent>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for d in dispatches {
        let registry = registry.clone();
        let user = user.clone();
        let events = events.clone();
        let span = tracing::info_span!(
            "router.dispatch",
            otel.name = %format!("router.dispatch {}", d.source),
            source = %d.source,
            state = tracing::field::Empty,
            hits = tracing::field::Empty,
        );
        tasks.spawn(
            async move {
                // Routing only selects registered sources; still, every dispatch ends with a status.
                let Some(source) = registry.get(&d.source) else {
                    let status = status(&d.source, SourceState::Error, "INTERNAL", "unknown source", 0, Instant::now());
                    let _ = events.send(SourceEvent::Done(status)).await;
                    return;
                };
                let started = Instant::now();
                let status = run_source(source, &user, d, deadline, &events).await;
                crate::metrics::source_done(
                    &status.source,
                    status.state().label(),
                    started.elapsed().as_secs_f64(),
                    status.hit_count,
                );
                let span = tracing::Span::current();
                span.record("state", status.state().label());
                span.record("hits", status.hit_count);
                let _ = events.send(SourceEvent::Done(status)).await;
            }
            .instrument(span),
        );
    }
    tasks
}

/// What a sub-query's status says about the source's health. `full_budget`: the source had
/// its whole configured timeout (a timeout under a caller's shorter deadline says nothing).
pub(crate) fn outcome(s: &SourceStatus, full_budget: bool) -> Outcome {
    match s.state() {
        SourceState::Ok => Outcome::Success,
        SourceState::Timeout if full_budget => Outcome::Failure(Blame::Unclear),
        // The adapter itself could not be reached: nothing in the request caused that.
        SourceState::Unavailable if s.message == UNREACHABLE => Outcome::Failure(Blame::Source),
        SourceState::Unavailable => Outcome::Failure(Blame::Unclear),
        SourceState::Error => match s.code.as_str() {
            "INVALID_ARGUMENT"
            | "FAILED_PRECONDITION"
            | "NOT_FOUND"
            | "RESOURCE_EXHAUSTED"
            | "CANCELLED"
            | "UNAUTHENTICATED"
            | "PERMISSION_DENIED"
            | "OUT_OF_RANGE" => Outcome::Neutral,
            _ => Outcome::Failure(Blame::Unclear),
        },
        _ => Outcome::Neutral,
    }
}

/// The message of a transport failure to reach the adapter (see [`status_from_rpc_error`]).
const UNREACHABLE: &str = "adapter unreachable";

fn status(
    source: &str,
    state: SourceState,
    code: &str,
    message: impl Into<String>,
    hits: u32,
    started: Instant,
) -> SourceStatus {
    SourceStatus {
        source: source.to_string(),
        state: state as i32,
        hit_count: hits,
        latency_ms: started.elapsed().as_millis() as u64,
        message: message.into(),
        code: code.to_string(),
    }
}

async fn run_source(
    source: &Source,
    user: &Identity,
    d: Dispatch,
    deadline: Instant,
    events: &mpsc::Sender<SourceEvent>,
) -> SourceStatus {
    let started = Instant::now();
    let name = source.name().to_string();
    let explicit_as_of = d.explicit_as_of;
    let sub_query = sub_query(source, user, d);
    // Answers for the same user and the same sub-query are reused for `cache_ttl`. A request
    // carrying a delegated credential is never cached: the credential may change what it sees.
    let cache_key = match (&source.cache, &sub_query.user) {
        (Some(_), Some(u)) if u.delegated_credential.is_none() => Some(crate::cache::key(&sub_query, explicit_as_of)),
        _ => None,
    };
    if let (Some(cache), Some(key)) = (&source.cache, &cache_key) {
        let found = cache.get(key).await;
        crate::metrics::cache(&name, found.is_some());
        if let Some(hit) = found {
            let n = hit.hits.len() as u32;
            let age = hit.stored.elapsed().as_secs();
            let _ = events.send(SourceEvent::Batch { source: name.clone(), hits: WireHits::encode(&hit.hits) }).await;
            return status(&name, SourceState::Ok, "OK", format!("from cache ({age} s old)"), n, started);
        }
    }
    let permit = match source.breaker.admit() {
        Admission::Allowed(permit) => permit,
        Admission::Open(retry_in) => {
            return status(
                &name,
                SourceState::CircuitOpen,
                "UNAVAILABLE",
                format!("suspended after repeated failures; next try in {} s", retry_in.as_secs().max(1)),
                0,
                started,
            );
        }
    };
    let subject = user.subject.clone();
    let until = deadline.min(started + source.config.timeout);
    let budget = until.saturating_duration_since(started);
    let full_budget = budget >= source.config.timeout;
    let mut hits = 0u32;
    let mut kept = cache_key.as_ref().map(|_| Vec::new());
    let work = stream_source(source, sub_query, budget, events, &mut hits, kept.as_mut()).instrument(client_span(
        &source.config.adapter.url,
        None,
        ADAPTER_SEARCH,
    ));
    let status = match tokio::time::timeout_at(until, work).await {
        Ok(s) => {
            if let (Some(cache), Some(key), Some(kept), SourceState::Ok) = (&source.cache, cache_key, kept, s.state()) {
                cache.insert(key, crate::cache::Cached::new(WireHits(kept).decode())).await;
            }
            SourceStatus { latency_ms: started.elapsed().as_millis() as u64, ..s }
        }
        Err(_) => status(
            &name,
            SourceState::Timeout,
            "DEADLINE_EXCEEDED",
            format!("no complete answer within {} ms; kept {hits} hits that arrived", budget.as_millis()),
            hits,
            started,
        ),
    };
    permit.record(outcome(&status, full_budget), &subject);
    status
}

/// An outgoing gRPC method, named once (the span's name is `service/method`, written out so that
/// no span formats it).
#[derive(Clone, Copy)]
pub struct Rpc {
    pub service: &'static str,
    pub method: &'static str,
    pub name: &'static str,
}

macro_rules! rpc {
    ($service:literal, $method:literal) => {
        Rpc { service: $service, method: $method, name: concat!($service, "/", $method) }
    };
}

pub const ADAPTER_SEARCH: Rpc = rpc!("fedsearch.adapter.v1.SourceAdapter", "Search");
pub const ADAPTER_FETCH: Rpc = rpc!("fedsearch.adapter.v1.SourceAdapter", "Fetch");
pub const FUSION_FUSE: Rpc = rpc!("fedsearch.fusion.v1.Fusion", "Fuse");

/// The client span of an outgoing gRPC call to `endpoint` (SpanKind::Client, with the peer's
/// name and address), so service graphs see the router → adapter and router → fusion edges.
/// The trace context injected into the call is this span's. `peer` overrides the peer
/// service name, which is otherwise the endpoint's host. A sub-query on a shared stream records
/// the replica that took it (`network.peer.address`, `network.peer.port`).
pub fn client_span(endpoint: &str, peer: Option<&str>, rpc: Rpc) -> tracing::Span {
    let authority = endpoint.split("://").nth(1).unwrap_or(endpoint).split('/').next().unwrap_or_default();
    let (host, port) = authority.rsplit_once(':').unwrap_or((authority, ""));
    tracing::info_span!(
        "grpc.client",
        otel.name = rpc.name,
        otel.kind = "client",
        rpc.system = "grpc",
        rpc.service = rpc.service,
        rpc.method = rpc.method,
        peer.service = %peer.unwrap_or(host),
        server.address = %host,
        server.port = %port,
        network.peer.address = tracing::field::Empty,
        network.peer.port = tracing::field::Empty,
        sub_query_id = tracing::field::Empty,
    )
}

/// The sub-query one source receives: the rewritten text, the verified user (with the
/// credential delegated for this source only) and the source-side name.
fn sub_query(source: &Source, user: &Identity, d: Dispatch) -> SubQuery {
    let mut ctx = user.to_user_context();
    ctx.delegated_credential = d.credential;
    SubQuery {
        id: "1".into(),
        source: source.target.clone(),
        text: d.text,
        filters: d.filters,
        limit: d.limit,
        deadline: None,
        user: Some(ctx),
        params: d.params,
        template: d.template,
        original_text: d.original_text,
        terms: d.terms,
        entities: d.entities,
        as_of: d.as_of,
        time_zone: d.time_zone,
        trace_context: Default::default(),
        time_range_from_question: d.time_range_from_question,
    }
}

/// `sub_query` with its user proven afresh for `budget`: an assertion is accepted once, and
/// its scope names the sub-query's id.
fn signed(source: &Source, mut sub_query: SubQuery, budget: Duration) -> SubQuery {
    if let (Some(signer), Some(user)) = (&source.signer, sub_query.user.as_mut()) {
        let scope = fedsearch_core::assertion::search_scope(&sub_query.id);
        signer.sign_context(user, &sub_query.source, &scope, std::time::SystemTime::now() + budget);
    }
    sub_query
}

/// Opens a stream of its own with the sub-query as its first frame. The sender stays open until
/// we stop reading, so the adapter sees a half-close only if we finish first (which it treats
/// as "no more").
async fn open_stream(
    source: &Source,
    sub_query: SubQuery,
    budget: Duration,
) -> Result<(mpsc::Sender<SearchFrame>, tonic::Streaming<crate::mux::WireResultFrame>), tonic::Status> {
    let (tx, rx) = mpsc::channel(1);
    let sub_query = signed(source, sub_query, budget);
    let _ = tx.try_send(SearchFrame { frame: Some(search_frame::Frame::SubQuery(sub_query)) });
    let mut client = crate::mux::grpc(source.channel.clone());
    let frames = tokio_stream::wrappers::ReceiverStream::new(rx);
    Ok((tx, crate::mux::adapter_search(&mut client, frames, Some(budget)).await?))
}

/// What a source's answer so far is collected into.
struct Collected<'a> {
    name: String,
    events: &'a mpsc::Sender<SourceEvent>,
    hits: &'a mut u32,
    kept: Option<&'a mut Vec<prost::bytes::Bytes>>,
}

impl Collected<'_> {
    /// Counts, keeps (for the answer cache) and forwards one batch.
    async fn batch(&mut self, hits: WireHits) {
        *self.hits += hits.len() as u32;
        if let Some(kept) = self.kept.as_deref_mut() {
            kept.extend(hits.0.iter().cloned());
        }
        let _ = self.events.send(SourceEvent::Batch { source: self.name.clone(), hits }).await;
    }

    fn done(&self, done: SubQueryDone, started: Instant) -> SourceStatus {
        let state = SourceState::try_from(done.state).unwrap_or(SourceState::Error);
        status(&self.name, state, &done.code, done.message, *self.hits, started)
    }
}

async fn stream_source(
    source: &Source,
    mut sub_query: SubQuery,
    budget: Duration,
    events: &mpsc::Sender<SourceEvent>,
    hits: &mut u32,
    kept: Option<&mut Vec<prost::bytes::Bytes>>,
) -> SourceStatus {
    sub_query.deadline = Some(fedsearch_core::time::to_timestamp(std::time::SystemTime::now() + budget));
    // The context of this call (the client span under the dispatch span), so that on a shared
    // stream the adapter's sub-query span joins this search's trace, not the stream's.
    sub_query.trace_context = fedsearch_core::propagation::current_map();
    let out = Collected { name: source.name().to_string(), events, hits, kept };
    match &source.streams {
        Some(pool) => stream_shared(source, pool, sub_query, budget, out).await,
        None => stream_own(source, sub_query, budget, out).await,
    }
}

/// The sub-query on one of the adapter's long-lived streams ([`crate::mux`]). Dropping this
/// future (deadline, cancelled search) cancels the sub-query on its stream.
async fn stream_shared(
    source: &Source,
    pool: &crate::mux::StreamPool,
    mut sub_query: SubQuery,
    budget: Duration,
    mut out: Collected<'_>,
) -> SourceStatus {
    use crate::mux::Reply;
    let started = Instant::now();
    let mut retried = false;
    loop {
        sub_query.id = pool.next_id();
        tracing::Span::current().record("sub_query_id", sub_query.id.as_str());
        let left = budget.saturating_sub(started.elapsed());
        let failure = match pool.send(signed(source, sub_query.clone(), left)).await {
            Ok(mut call) => {
                // The replica the pool chose: which pod answered, for the trace.
                let span = tracing::Span::current();
                span.record("network.peer.address", tracing::field::display(call.replica().ip()));
                span.record("network.peer.port", call.replica().port());
                loop {
                    match call.next().await {
                        Reply::Batch(hits) => out.batch(hits).await,
                        Reply::Done(done) => return out.done(done, started),
                        Reply::Broken(e) => break e,
                    }
                }
            }
            Err(e) => e,
        };
        // Not answered at all (a stream that broke, a replica that just died): once more when
        // half the budget is left — on another replica, as the pool passes over one whose
        // stream just broke while another is serving. Never after hits were forwarded.
        if !retried && *out.hits == 0 && failure.code() == tonic::Code::Unavailable && started.elapsed() < budget / 2 {
            retried = true;
            continue;
        }
        return status_from_rpc_error(&out.name, &failure, *out.hits, started);
    }
}

/// The sub-query on a stream of its own (`streams: 0`).
async fn stream_own(source: &Source, sub_query: SubQuery, budget: Duration, mut out: Collected<'_>) -> SourceStatus {
    let started = Instant::now();
    let (tx, mut stream) = match open_stream(source, sub_query.clone(), budget).await {
        Ok(opened) => opened,
        // Not reached at all (e.g. a replica that just died): another replica may answer, once.
        Err(e) if e.code() == tonic::Code::Unavailable && started.elapsed() < budget / 2 => {
            match open_stream(source, sub_query, budget.saturating_sub(started.elapsed())).await {
                Ok(opened) => opened,
                Err(e) => return status_from_rpc_error(&out.name, &e, 0, started),
            }
        }
        Err(e) => return status_from_rpc_error(&out.name, &e, 0, started),
    };
    loop {
        match stream.message().await {
            Ok(Some(WireResultFrame { frame: Some(WireFrame::Batch(batch)) })) => out.batch(WireHits(batch.hits)).await,
            Ok(Some(WireResultFrame { frame: Some(WireFrame::Done(done)) })) => {
                // Half-close, then read the stream to its end: dropping an unfinished stream
                // makes h2 reset it, and a long-lived connection is closed after 1024 resets.
                // Off the answer's path: the status is known now.
                drop(tx);
                drain_later(stream);
                return out.done(done, started);
            }
            Ok(Some(WireResultFrame { frame: None })) => {}
            Ok(None) => {
                return status(
                    &out.name,
                    SourceState::Error,
                    "INTERNAL",
                    "adapter ended the stream without a status",
                    *out.hits,
                    started,
                );
            }
            Err(e) => return status_from_rpc_error(&out.name, &e, *out.hits, started),
        }
    }
}

/// Reads what is left of a finished stream (the trailers) off the answer's path: at once when
/// it has ended already (the trailers came with the last message), else briefly in a task.
pub(crate) fn drain_later<T: Send + 'static>(mut stream: tonic::Streaming<T>) {
    if !matches!(futures::FutureExt::now_or_never(stream.message()), Some(Ok(None) | Err(_))) {
        tokio::spawn(async move { drain(&mut stream).await });
    }
}

/// Reads what is left of a finished stream (the trailers), briefly.
pub(crate) async fn drain<T>(stream: &mut tonic::Streaming<T>) {
    let _ =
        tokio::time::timeout(Duration::from_millis(100), async { while let Ok(Some(_)) = stream.message().await {} })
            .await;
}

/// Maps a transport/RPC failure to a per-source state with a message safe to show.
fn status_from_rpc_error(source: &str, e: &tonic::Status, hits: u32, started: Instant) -> SourceStatus {
    use tonic::Code;
    let (state, code, message) = match e.code() {
        Code::Unavailable => (SourceState::Unavailable, "UNAVAILABLE", UNREACHABLE.to_string()),
        Code::DeadlineExceeded => {
            (SourceState::Timeout, "DEADLINE_EXCEEDED", "adapter did not answer in time".to_string())
        }
        // tonic's client-side timeout ends the call as CANCELLED "Timeout expired": the adapter
        // was hung (e.g. stopped), not cancelled.
        Code::Cancelled if e.message().contains("Timeout expired") => {
            (SourceState::Timeout, "DEADLINE_EXCEEDED", "adapter did not answer in time".to_string())
        }
        Code::Cancelled => (SourceState::Error, "CANCELLED", "adapter stream was cancelled".to_string()),
        Code::Unauthenticated | Code::PermissionDenied => {
            (SourceState::Denied, code_name(e.code()), e.message().to_string())
        }
        Code::InvalidArgument => (SourceState::Error, "INVALID_ARGUMENT", e.message().to_string()),
        Code::Unknown | Code::Internal => (
            SourceState::Error,
            code_name(e.code()),
            if hits > 0 { "adapter stream broke mid-answer".to_string() } else { "adapter failed".to_string() },
        ),
        other => (SourceState::Error, code_name(other), "adapter failed".to_string()),
    };
    tracing::warn!(source, code = code, error = %e.message(), "source failed");
    status(source, state, code, message, hits, started)
}
