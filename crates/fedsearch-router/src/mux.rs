//! Long-lived, multiplexed adapter streams: `streams` `SourceAdapter.Search` streams to every
//! serving replica of an adapter address (each stream on its own HTTP/2 connection), every one
//! carrying many sub-queries tagged by id, their result frames demultiplexed to the search that
//! sent them.
//!
//! The replicas are the ones the address's health checks find serving, as they change
//! ([`fedsearch_core::endpoints::Replicas`]; one IP address is a set of one). Each sub-query goes
//! to the replica with the fewest sub-queries in flight, on its stream with the fewest (ties in
//! turn). A replica that leaves the set is retired: new sub-queries go elsewhere, its streams
//! half-close once the sub-queries in flight on them have ended. A replica that joins (or the
//! same one with a renewed TLS certificate) gets streams of its own, opened by its first
//! sub-query.
//!
//! A sub-query that is given up (its search cancelled, its deadline passed) sends
//! `CancelSubQuery` on the shared stream instead of resetting an HTTP/2 stream. A stream that
//! breaks fails its sub-queries in flight with UNAVAILABLE and is reopened by the next sub-query
//! sent to it; until the health checks have had time to drop a dead replica ([`PASS_OVER`]),
//! a replica whose stream broke gets no sub-query while another one is left, so the retry of a
//! failed sub-query goes to a live replica.
//!
//! The hits of a result frame are not decoded here: each stays the protobuf encoding the
//! adapter sent ([`WireHits`]), forwarded to the fusion service as it came and decoded only
//! where the router reads hits itself ([`crate::fuse`]).

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use fedsearch_core::{endpoints::Replicas, propagation::TraceInjector};
use fedsearch_proto::adapter::{CancelSubQuery, SearchFrame, SubQuery, SubQueryDone, search_frame};
use tokio::{
    sync::{mpsc, watch},
    time::Instant,
};
use tonic::{
    codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
    service::interceptor::InterceptedService,
    transport::{Channel, Endpoint},
};
use tracing::Instrument;

use crate::fanout::WireHits;

/// A `ResultFrame` whose hits stay encoded (wire-compatible with
/// `fedsearch.adapter.v1.ResultFrame`: a repeated message field and a repeated bytes field are
/// the same on the wire).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireResultFrame {
    #[prost(oneof = "WireFrame", tags = "1, 2")]
    pub frame: Option<WireFrame>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum WireFrame {
    #[prost(message, tag = "1")]
    Batch(WireHitBatch),
    #[prost(message, tag = "2")]
    Done(SubQueryDone),
}

/// A `HitBatch` whose hits stay encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireHitBatch {
    #[prost(string, tag = "1")]
    pub sub_query_id: String,
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub hits: Vec<prost::bytes::Bytes>,
}

/// A protobuf codec for any two messages (what tonic-prost's codec does), so that the router
/// can read and write the wire forms above on the contract's methods.
pub(crate) struct WireCodec<E, D>(std::marker::PhantomData<fn(E) -> D>);

impl<E, D> Default for WireCodec<E, D> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

pub(crate) struct WireEncoder<E>(std::marker::PhantomData<fn(E)>);
pub(crate) struct WireDecoder<D>(std::marker::PhantomData<fn() -> D>);

impl<E: prost::Message + Send + 'static, D: prost::Message + Default + Send + 'static> Codec for WireCodec<E, D> {
    type Encode = E;
    type Decode = D;
    type Encoder = WireEncoder<E>;
    type Decoder = WireDecoder<D>;

    fn encoder(&mut self) -> Self::Encoder {
        WireEncoder(std::marker::PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        WireDecoder(std::marker::PhantomData)
    }
}

impl<E: prost::Message> Encoder for WireEncoder<E> {
    type Item = E;
    type Error = tonic::Status;

    fn encode(&mut self, item: E, buf: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        item.encode(buf).map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

impl<D: prost::Message + Default> Decoder for WireDecoder<D> {
    type Item = D;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<D>, tonic::Status> {
        D::decode(buf).map(Some).map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

/// A gRPC client over a channel that injects the current trace context into every call: what
/// the generated clients are, for calls whose messages are the wire forms above.
pub(crate) type Grpc = tonic::client::Grpc<InterceptedService<Channel, TraceInjector>>;

pub(crate) fn grpc(channel: Channel) -> Grpc {
    tonic::client::Grpc::new(InterceptedService::new(channel, TraceInjector))
}

/// `SourceAdapter.Search`, its result frames read with their hits still encoded; `timeout` is
/// sent as the call's `grpc-timeout`.
pub(crate) async fn adapter_search<S>(
    client: &mut Grpc,
    frames: S,
    timeout: Option<Duration>,
) -> Result<tonic::Streaming<WireResultFrame>, tonic::Status>
where
    S: futures::Stream<Item = SearchFrame> + Send + 'static,
{
    client.ready().await.map_err(|e| {
        let e: tonic::codegen::StdError = e.into();
        tonic::Status::unknown(format!("Service was not ready: {e}"))
    })?;
    let mut request = tonic::Request::new(frames);
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    request.extensions_mut().insert(tonic::GrpcMethod::new("fedsearch.adapter.v1.SourceAdapter", "Search"));
    let path = http::uri::PathAndQuery::from_static("/fedsearch.adapter.v1.SourceAdapter/Search");
    Ok(client.streaming(request, path, WireCodec::<SearchFrame, WireResultFrame>::default()).await?.into_inner())
}

/// How long a replica whose stream broke is passed over while another replica is left: two
/// health-check rounds, by when a dead or draining replica has left the set.
pub const PASS_OVER: Duration = fedsearch_core::endpoints::CHECK_EVERY.saturating_mul(2);

/// What one sub-query hears from its stream.
#[derive(Debug)]
pub enum Reply {
    Batch(WireHits),
    Done(SubQueryDone),
    /// The stream broke (or ended) before this sub-query's `SubQueryDone`.
    Broken(tonic::Status),
}

/// The sub-queries in flight on one stream, by id.
#[derive(Debug, Default)]
struct Table {
    waiting: Mutex<HashMap<String, mpsc::UnboundedSender<Reply>>>,
    broken: AtomicBool,
    /// When the stream broke.
    broken_at: OnceLock<Instant>,
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Reply>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `id`; `None` once the stream is broken.
    fn register(&self, id: &str) -> Option<mpsc::UnboundedReceiver<Reply>> {
        let mut waiting = self.lock();
        if self.broken.load(Ordering::Acquire) {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        waiting.insert(id.to_string(), tx);
        Some(rx)
    }

    fn forget(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// Hands one result frame to its sub-query (frames of a forgotten one are dropped).
    fn route(&self, frame: WireResultFrame) {
        match frame.frame {
            Some(WireFrame::Batch(b)) => {
                if let Some(tx) = self.lock().get(&b.sub_query_id) {
                    let _ = tx.send(Reply::Batch(WireHits(b.hits)));
                }
            }
            Some(WireFrame::Done(d)) => {
                if let Some(tx) = self.lock().remove(&d.sub_query_id) {
                    let _ = tx.send(Reply::Done(d));
                }
            }
            None => {}
        }
    }

    /// Marks the stream broken and fails every sub-query in flight on it.
    fn break_with(&self, status: &tonic::Status) {
        let waiting = {
            let mut waiting = self.lock();
            let _ = self.broken_at.set(Instant::now());
            self.broken.store(true, Ordering::Release);
            std::mem::take(&mut *waiting)
        };
        for tx in waiting.into_values() {
            let _ = tx.send(Reply::Broken(status.clone()));
        }
    }
}

/// One open stream: its sending half and its table. Dropping the last `Link` half-closes the
/// stream, and the adapter ends it once its sub-queries are done.
#[derive(Debug)]
struct Link {
    out: mpsc::UnboundedSender<SearchFrame>,
    table: Arc<Table>,
}

impl Link {
    fn usable(&self) -> bool {
        !self.table.broken.load(Ordering::Acquire) && !self.out.is_closed()
    }
}

/// Opens one stream (on the connection of its slot).
type Opener = Box<dyn Fn() -> Link + Send + Sync>;

/// Makes the opener of one slot: a connection of its own to the replica at the address.
type Connect = Box<dyn Fn(SocketAddr, &Endpoint) -> Opener + Send + Sync>;

/// One connection's stream, opened on first use and reopened after it breaks.
struct Slot {
    open: Opener,
    live: Mutex<Option<Arc<Link>>>,
}

impl Slot {
    fn live(&self) -> std::sync::MutexGuard<'_, Option<Arc<Link>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open stream, or a new one. Opening does not wait for the adapter: sub-queries queue
    /// on the new stream at once (an adapter may wait for the first frame before it answers the
    /// call), and if the call fails they fail with its status.
    fn link(&self) -> Arc<Link> {
        let mut live = self.live();
        match live.as_ref().filter(|l| l.usable()) {
            Some(link) => link.clone(),
            None => {
                let link = Arc::new((self.open)());
                *live = Some(link.clone());
                link
            }
        }
    }

    /// Sub-queries in flight on the open stream.
    fn in_flight(&self) -> usize {
        self.live().as_ref().filter(|l| l.usable()).map_or(0, |l| l.table.lock().len())
    }

    /// Whether the stream broke in the [`PASS_OVER`] before `now` (and was not reopened).
    fn broke_lately(&self, now: Instant) -> bool {
        self.live().as_ref().and_then(|l| l.table.broken_at.get().copied()).is_some_and(|at| at + PASS_OVER > now)
    }
}

/// One serving replica and its streams.
struct Replica {
    addr: SocketAddr,
    /// The endpoint the streams connect with (a new one: a renewed certificate).
    endpoint: Arc<Endpoint>,
    slots: Vec<Slot>,
}

impl Replica {
    fn in_flight(&self) -> usize {
        self.slots.iter().map(Slot::in_flight).sum()
    }

    /// Whether a stream to it broke in the last [`PASS_OVER`].
    fn broke_lately(&self, now: Instant) -> bool {
        self.slots.iter().any(|s| s.broke_lately(now))
    }
}

/// A stream on a connection of its own to `endpoint`, connecting on its first stream.
fn connect_adapter(endpoint: &Endpoint) -> Opener {
    let endpoint = endpoint.clone();
    let client: OnceLock<Grpc> = OnceLock::new();
    Box::new(move || open(client.get_or_init(|| grpc(endpoint.connect_lazy()))))
}

/// Opens a stream and starts its reader. The stream is nobody's child span: it outlives the
/// search that happened to open it.
fn open(client: &Grpc) -> Link {
    let (out, rx) = mpsc::unbounded_channel();
    let mut client = client.clone();
    let table = Arc::new(Table::default());
    let reader = table.clone();
    let call = async move {
        let frames = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
        match adapter_search(&mut client, frames, None).await {
            Ok(inbound) => read(inbound, reader).await,
            Err(e) => reader.break_with(&e),
        }
    };
    tokio::spawn(call.instrument(tracing::Span::none()));
    Link { out, table }
}

/// Routes the stream's frames until it ends; then fails what is still in flight with the
/// adapter's status, or UNAVAILABLE when the stream just ended or its connection broke.
async fn read(mut inbound: tonic::Streaming<WireResultFrame>, table: Arc<Table>) {
    let end = loop {
        match inbound.message().await {
            Ok(Some(frame)) => table.route(frame),
            Ok(None) => break tonic::Status::unavailable("the adapter ended the stream"),
            // A transport failure (the connection dropped: a killed adapter) carries its cause;
            // a status the adapter sent does not.
            Err(e) if std::error::Error::source(&e).is_some() => {
                break tonic::Status::unavailable(format!("adapter stream broke: {}", e.message()));
            }
            Err(e) => break e,
        }
    };
    tracing::debug!(code = ?end.code(), error = %end.message(), "adapter stream ended");
    table.break_with(&end);
}

/// The serving replicas as the pool last read them.
struct Seen {
    replicas: watch::Receiver<Replicas>,
    /// Whether the health checks have ended a round yet.
    checked: bool,
    current: Arc<[Arc<Replica>]>,
}

/// The streams to one adapter address: `per_replica` to every serving replica.
pub struct StreamPool {
    per_replica: usize,
    connect: Connect,
    seen: Mutex<Seen>,
    /// Waits for the first round of health checks.
    first_round: watch::Receiver<Replicas>,
    turn: AtomicUsize,
    ids: AtomicU64,
}

impl std::fmt::Debug for StreamPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let replicas: Vec<SocketAddr> = self.lock().current.iter().map(|r| r.addr).collect();
        f.debug_struct("StreamPool").field("per_replica", &self.per_replica).field("replicas", &replicas).finish()
    }
}

impl StreamPool {
    /// A pool of `per_replica` streams (at least one) to every replica in `replicas`.
    pub fn new(per_replica: usize, replicas: watch::Receiver<Replicas>) -> Self {
        Self::with_connect(per_replica, replicas, Box::new(|_, endpoint| connect_adapter(endpoint)))
    }

    fn with_connect(per_replica: usize, replicas: watch::Receiver<Replicas>, connect: Connect) -> Self {
        assert!(per_replica > 0, "a stream pool needs a stream per replica");
        let first_round = replicas.clone();
        let mut replicas = replicas;
        let set = replicas.borrow_and_update().clone();
        let seen = Seen { replicas, checked: false, current: Arc::new([]) };
        let pool = Self {
            per_replica,
            connect,
            seen: Mutex::new(seen),
            first_round,
            turn: AtomicUsize::new(0),
            ids: AtomicU64::new(1),
        };
        pool.follow(&mut pool.lock(), set);
        pool
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh sub-query id, unique on every stream of the pool for its lifetime.
    pub fn next_id(&self) -> String {
        self.ids.fetch_add(1, Ordering::Relaxed).to_string()
    }

    /// The replicas now (following the published set), and whether the health checks have
    /// ended a round yet.
    fn current(&self) -> (Arc<[Arc<Replica>]>, bool) {
        let mut seen = self.lock();
        let changed = {
            let set = seen.replicas.borrow_and_update();
            set.has_changed().then(|| set.clone())
        };
        if let Some(set) = changed {
            self.follow(&mut seen, set);
        }
        (seen.current.clone(), seen.checked)
    }

    /// Takes `set` as the replicas: the ones that stay keep their streams, the others are
    /// retired, new ones (or ones with a new endpoint: a renewed certificate) get slots.
    fn follow(&self, seen: &mut Seen, set: Replicas) {
        let was = std::mem::replace(&mut seen.current, Arc::new([]));
        let mut next = Vec::with_capacity(set.serving.len());
        for (addr, endpoint) in set.serving {
            match was.iter().find(|r| r.addr == addr && Arc::ptr_eq(&r.endpoint, &endpoint)) {
                Some(kept) => next.push(kept.clone()),
                None => {
                    tracing::info!(replica = %addr, "adapter replica joined the stream pool");
                    let slots = (0..self.per_replica)
                        .map(|_| Slot { open: (self.connect)(addr, &endpoint), live: Mutex::new(None) })
                        .collect();
                    next.push(Arc::new(Replica { addr, endpoint, slots }));
                }
            }
        }
        for gone in was.iter().filter(|r| !next.iter().any(|n| Arc::ptr_eq(n, r))) {
            // Its streams half-close once the sub-queries in flight on them have ended.
            tracing::info!(replica = %gone.addr, in_flight = gone.in_flight(), "adapter replica left the stream pool");
        }
        seen.current = next.into();
        seen.checked = set.checked;
    }

    /// The replica and stream for the next sub-query: the fewest sub-queries in flight, ties
    /// in turn, passing over replicas whose stream broke lately while another is left.
    fn pick(&self, replicas: &[Arc<Replica>]) -> Option<(Arc<Replica>, usize)> {
        let n = replicas.len();
        if n == 0 {
            return None;
        }
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let lately: Vec<bool> = replicas.iter().map(|r| r.broke_lately(now)).collect();
        let all_broke = lately.iter().all(|b| *b);
        let replica = (0..n)
            .map(|i| (turn + i) % n)
            .filter(|&i| all_broke || !lately[i])
            .min_by_key(|&i| replicas[i].in_flight())
            .map(|i| replicas[i].clone())?;
        let m = replica.slots.len();
        let slot = (0..m).map(|i| (turn / n + i) % m).min_by_key(|&i| replica.slots[i].in_flight())?;
        Some((replica, slot))
    }

    /// Sends `query` (its id from [`StreamPool::next_id`]) to the replica with the fewest
    /// sub-queries in flight. Before the first round of health checks has ended it waits for it
    /// (the caller's deadline bounds the wait); with no replica serving it fails UNAVAILABLE.
    pub async fn send(&self, query: SubQuery) -> Result<Call, tonic::Status> {
        let (mut replicas, checked) = self.current();
        if !checked {
            let _ = self.first_round.clone().wait_for(|r| r.checked).await;
            replicas = self.current().0;
        }
        let (replica, slot) =
            self.pick(&replicas).ok_or_else(|| tonic::Status::unavailable("no adapter replica is serving"))?;
        let link = replica.slots[slot].link();
        let id = query.id.clone();
        let replies = link.table.register(&id).ok_or_else(|| tonic::Status::unavailable("adapter stream broke"))?;
        if link.out.send(SearchFrame { frame: Some(search_frame::Frame::SubQuery(query)) }).is_err() {
            link.table.forget(&id);
            return Err(tonic::Status::unavailable("adapter stream closed"));
        }
        Ok(Call { link, id, replies, finished: false, replica: replica.addr })
    }
}

/// One sub-query in flight. Dropped before its end, it cancels the sub-query on the stream.
#[derive(Debug)]
pub struct Call {
    link: Arc<Link>,
    id: String,
    replies: mpsc::UnboundedReceiver<Reply>,
    finished: bool,
    replica: SocketAddr,
}

impl Call {
    /// The replica the sub-query went to.
    pub fn replica(&self) -> SocketAddr {
        self.replica
    }

    /// The next batch, the end, or the stream's failure.
    pub async fn next(&mut self) -> Reply {
        let reply = self
            .replies
            .recv()
            .await
            .unwrap_or_else(|| Reply::Broken(tonic::Status::unavailable("adapter stream broke")));
        if !matches!(reply, Reply::Batch(_)) {
            self.finished = true;
        }
        reply
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.finished && self.link.table.forget(&self.id) {
            let cancel = CancelSubQuery { id: std::mem::take(&mut self.id) };
            let _ = self.link.out.send(SearchFrame { frame: Some(search_frame::Frame::Cancel(cancel)) });
        }
    }
}

#[cfg(test)]
mod tests {
    //! The pool's choice of replica and stream, and how it follows the replica set, over
    //! scripted streams: each stream opened is recorded with the replica it went to, the frames
    //! sent on it and its table (to answer or break it).

    use std::collections::BTreeMap;

    use super::*;

    /// One scripted stream.
    struct Opened {
        replica: SocketAddr,
        frames: mpsc::UnboundedReceiver<SearchFrame>,
        table: Arc<Table>,
    }

    #[derive(Clone, Default)]
    struct Script(Arc<Mutex<Vec<Opened>>>);

    impl Script {
        fn connect(&self) -> Connect {
            let opened = self.0.clone();
            Box::new(move |replica, _| {
                let opened = opened.clone();
                Box::new(move || {
                    let (out, frames) = mpsc::unbounded_channel();
                    let table = Arc::new(Table::default());
                    opened.lock().unwrap().push(Opened { replica, frames, table: table.clone() });
                    Link { out, table }
                })
            })
        }

        /// How many streams were opened to each replica.
        fn streams(&self) -> BTreeMap<SocketAddr, usize> {
            let mut out = BTreeMap::new();
            for o in self.0.lock().unwrap().iter() {
                *out.entry(o.replica).or_default() += 1;
            }
            out
        }

        /// Ends the sub-query `id` on whichever stream carries it.
        fn answer(&self, id: &str) {
            let done = SubQueryDone { sub_query_id: id.into(), ..Default::default() };
            for o in self.0.lock().unwrap().iter() {
                o.table.route(WireResultFrame { frame: Some(WireFrame::Done(done.clone())) });
            }
        }

        /// Breaks every stream opened to `replica` (its process died).
        fn kill(&self, replica: SocketAddr) {
            for o in self.0.lock().unwrap().iter().filter(|o| o.replica == replica) {
                o.table.break_with(&tonic::Status::unavailable("adapter stream broke: connection reset"));
            }
        }

        /// Whether every stream opened to `replica` is half-closed (no sender left) once the
        /// frames sent on it are read.
        fn all_closed(&self, replica: SocketAddr) -> bool {
            self.0.lock().unwrap().iter_mut().filter(|o| o.replica == replica).all(Opened::closed)
        }

        /// Whether the `i`th stream opened is half-closed.
        fn closed(&self, i: usize) -> bool {
            self.0.lock().unwrap()[i].closed()
        }
    }

    impl Opened {
        fn closed(&mut self) -> bool {
            while self.frames.try_recv().is_ok() {}
            matches!(self.frames.try_recv(), Err(mpsc::error::TryRecvError::Disconnected))
        }
    }

    fn addr(i: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, i], 7000))
    }

    fn endpoint() -> Arc<Endpoint> {
        Arc::new(Endpoint::from_static("http://127.0.0.1:7000"))
    }

    fn serving(replicas: &[(SocketAddr, &Arc<Endpoint>)]) -> Replicas {
        Replicas { checked: true, serving: replicas.iter().map(|(a, e)| (*a, Arc::clone(e))).collect() }
    }

    fn pool(per_replica: usize, set: Replicas) -> (StreamPool, watch::Sender<Replicas>, Script) {
        let (publish, replicas) = watch::channel(set);
        let script = Script::default();
        (StreamPool::with_connect(per_replica, replicas, script.connect()), publish, script)
    }

    async fn send(pool: &StreamPool) -> Call {
        let query = SubQuery { id: pool.next_id(), ..Default::default() };
        pool.send(query).await.expect("a stream")
    }

    fn count(calls: &[Call]) -> BTreeMap<SocketAddr, usize> {
        let mut out = BTreeMap::new();
        for c in calls {
            *out.entry(c.replica()).or_default() += 1;
        }
        out
    }

    #[tokio::test]
    async fn sub_queries_go_to_every_replica_and_stream_by_fewest_in_flight() {
        let (a, b) = (endpoint(), endpoint());
        let (pool, _publish, script) = pool(2, serving(&[(addr(1), &a), (addr(2), &b)]));
        // Four at once: one on each of the 2 x 2 streams.
        let mut calls = Vec::new();
        for _ in 0..4 {
            calls.push(send(&pool).await);
        }
        assert_eq!(count(&calls), BTreeMap::from([(addr(1), 2), (addr(2), 2)]));
        assert_eq!(script.streams(), BTreeMap::from([(addr(1), 2), (addr(2), 2)]), "a stream per slot");
        // Two end on the second replica: the next two go there, one on each of its streams.
        let on_b: Vec<String> = calls.iter().filter(|c| c.replica() == addr(2)).map(|c| c.id.clone()).collect();
        for id in &on_b {
            script.answer(id);
        }
        let (c1, c2) = (send(&pool).await, send(&pool).await);
        assert_eq!((c1.replica(), c2.replica()), (addr(2), addr(2)));
        assert!(!Arc::ptr_eq(&c1.link, &c2.link), "one on each of its streams");
        assert_eq!(script.streams().values().sum::<usize>(), 4, "no stream opened again");
        // One at a time (nothing in flight), they take turns over every replica.
        drop((calls, c1, c2));
        let mut seen = BTreeMap::new();
        for _ in 0..8 {
            let call = send(&pool).await;
            *seen.entry(call.replica()).or_insert(0) += 1;
            script.answer(&call.id.clone());
        }
        assert_eq!(seen, BTreeMap::from([(addr(1), 4), (addr(2), 4)]));
    }

    #[tokio::test]
    async fn a_replica_that_leaves_is_retired_after_its_sub_queries_and_one_that_joins_gets_streams() {
        let (a, b, c) = (endpoint(), endpoint(), endpoint());
        let (pool, publish, script) = pool(1, serving(&[(addr(1), &a), (addr(2), &b)]));
        let (first, second) = (send(&pool).await, send(&pool).await);
        let on_b = if first.replica() == addr(2) { first } else { second };
        assert_eq!(on_b.replica(), addr(2));
        // The second replica leaves: new sub-queries go to the first only, even though the
        // first has more in flight; the one in flight on the second goes on.
        publish.send_replace(serving(&[(addr(1), &a)]));
        let after: Vec<Call> = vec![send(&pool).await, send(&pool).await, send(&pool).await];
        assert_eq!(count(&after), BTreeMap::from([(addr(1), 3)]));
        assert!(!script.all_closed(addr(2)), "the stream stays open while a sub-query is in flight on it");
        script.answer(&on_b.id.clone());
        drop(on_b);
        assert!(script.all_closed(addr(2)), "the retired replica's stream half-closed once its sub-query ended");
        // A third joins: with nothing in flight it takes the next sub-queries.
        publish.send_replace(serving(&[(addr(1), &a), (addr(3), &c)]));
        let joined: Vec<Call> = vec![send(&pool).await, send(&pool).await];
        assert_eq!(count(&joined), BTreeMap::from([(addr(3), 2)]));
        assert_eq!(script.streams().get(&addr(3)), Some(&1));
        drop(after);
    }

    #[tokio::test]
    async fn a_renewed_endpoint_replaces_the_replicas_streams() {
        let a = endpoint();
        let (pool, publish, script) = pool(1, serving(&[(addr(1), &a)]));
        let old = send(&pool).await;
        // The same replica with a new endpoint (a renewed certificate): a new stream.
        let renewed = endpoint();
        publish.send_replace(serving(&[(addr(1), &renewed)]));
        let new = send(&pool).await;
        assert!(!Arc::ptr_eq(&old.link, &new.link));
        assert_eq!(script.streams(), BTreeMap::from([(addr(1), 2)]));
        assert!(!script.closed(0), "the old stream stays while its sub-query is in flight");
        drop(old);
        assert!(script.closed(0), "then it half-closes");
        assert!(!script.closed(1));
    }

    #[tokio::test]
    async fn a_replica_whose_stream_broke_is_passed_over_while_another_is_left() {
        let (a, b) = (endpoint(), endpoint());
        let (pool, _publish, script) = pool(2, serving(&[(addr(1), &a), (addr(2), &b)]));
        let calls: Vec<Call> = vec![send(&pool).await, send(&pool).await];
        assert_eq!(count(&calls), BTreeMap::from([(addr(1), 1), (addr(2), 1)]));
        // The first dies before the health checks notice: its sub-query fails UNAVAILABLE, and
        // the retry (and every sub-query after it) goes to the second although the first has
        // nothing in flight.
        script.kill(addr(1));
        let mut failed = calls.into_iter().find(|c| c.replica() == addr(1)).unwrap();
        assert!(matches!(failed.next().await, Reply::Broken(s) if s.code() == tonic::Code::Unavailable));
        let retries: Vec<Call> = vec![send(&pool).await, send(&pool).await, send(&pool).await];
        assert_eq!(count(&retries), BTreeMap::from([(addr(2), 3)]));
        assert_eq!(script.streams().get(&addr(1)), Some(&1), "no stream reopened to the dead replica");
        // Both broke: the pool still tries (a stream is reopened).
        script.kill(addr(2));
        let call = send(&pool).await;
        assert!(call.link.usable(), "a new stream");
        assert_eq!(script.streams().values().sum::<usize>(), 4);
    }

    #[tokio::test]
    async fn a_replica_is_tried_again_once_its_break_is_old() {
        let (a, b) = (endpoint(), endpoint());
        let (pool, _publish, script) = pool(1, serving(&[(addr(1), &a), (addr(2), &b)]));
        let first = send(&pool).await;
        let dead = first.replica();
        drop(first);
        // Its stream broke longer than PASS_OVER ago (a restart the health checks never saw).
        let long_ago = Instant::now().checked_sub(PASS_OVER * 2).expect("an instant that long ago");
        for o in script.0.lock().unwrap().iter().filter(|o| o.replica == dead) {
            o.table.broken_at.set(long_ago).unwrap();
            o.table.broken.store(true, Ordering::Release);
        }
        // Sub-queries reach it again.
        let calls: Vec<Call> = vec![send(&pool).await, send(&pool).await];
        assert!(calls.iter().any(|c| c.replica() == dead), "{:?}", count(&calls));
    }

    #[tokio::test]
    async fn before_the_first_health_checks_a_sub_query_waits_and_with_none_serving_it_fails() {
        let (pool, publish, _script) = pool(1, Replicas::default());
        let pool = Arc::new(pool);
        let waiting = {
            let pool = pool.clone();
            tokio::spawn(async move { send(&pool).await.replica() })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        let a = endpoint();
        publish.send_replace(serving(&[(addr(1), &a)]));
        assert_eq!(waiting.await.unwrap(), addr(1));
        publish.send_replace(serving(&[]));
        let err = pool.send(SubQuery::default()).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unavailable);
    }
}
