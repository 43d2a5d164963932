//! Long-lived, multiplexed adapter streams: a small pool of `SourceAdapter.Search` streams per
//! adapter address (each on its own HTTP/2 connection), every one carrying many sub-queries
//! tagged by id, their result frames demultiplexed to the search that sent them.
//!
//! A sub-query that is given up (its search cancelled, its deadline passed) sends
//! `CancelSubQuery` on the shared stream instead of resetting an HTTP/2 stream. A stream that
//! breaks fails its sub-queries in flight with UNAVAILABLE and is reopened by the next sub-query.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
};

use fedsearch_proto::{
    adapter::{CancelSubQuery, ResultFrame, SearchFrame, SubQuery, SubQueryDone, result_frame, search_frame},
    types::SourceHit,
};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::registry::AdapterClient;

/// What one sub-query hears from its stream.
#[derive(Debug)]
pub enum Reply {
    Batch(Vec<SourceHit>),
    Done(SubQueryDone),
    /// The stream broke (or ended) before this sub-query's `SubQueryDone`.
    Broken(tonic::Status),
}

/// The sub-queries in flight on one stream, by id.
#[derive(Debug, Default)]
struct Table {
    waiting: Mutex<HashMap<String, mpsc::UnboundedSender<Reply>>>,
    broken: AtomicBool,
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
    fn route(&self, frame: ResultFrame) {
        match frame.frame {
            Some(result_frame::Frame::Batch(b)) => {
                if let Some(tx) = self.lock().get(&b.sub_query_id) {
                    let _ = tx.send(Reply::Batch(b.hits));
                }
            }
            Some(result_frame::Frame::Done(d)) => {
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

/// One connection's stream, opened on first use and reopened after it breaks.
#[derive(Debug)]
struct Slot {
    client: AdapterClient,
    live: Mutex<Option<Arc<Link>>>,
}

impl Slot {
    /// The open stream, or a new one. Opening does not wait for the adapter: sub-queries queue
    /// on the new stream at once (an adapter may wait for the first frame before it answers the
    /// call), and if the call fails they fail with its status.
    fn link(&self) -> Arc<Link> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        match live.as_ref().filter(|l| l.usable()) {
            Some(link) => link.clone(),
            None => {
                let link = Arc::new(open(&self.client));
                *live = Some(link.clone());
                link
            }
        }
    }
}

/// Opens a stream and starts its reader. The stream is nobody's child span: it outlives the
/// search that happened to open it.
fn open(client: &AdapterClient) -> Link {
    let (out, rx) = mpsc::unbounded_channel();
    let mut client = client.clone();
    let table = Arc::new(Table::default());
    let reader = table.clone();
    let call = async move {
        let request = tonic::Request::new(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
        match client.search(request).await {
            Ok(response) => read(response.into_inner(), reader).await,
            Err(e) => reader.break_with(&e),
        }
    };
    tokio::spawn(call.instrument(tracing::Span::none()));
    Link { out, table }
}

/// Routes the stream's frames until it ends; then fails what is still in flight with the
/// adapter's status, or UNAVAILABLE when the stream just ended or its connection broke.
async fn read(mut inbound: tonic::Streaming<ResultFrame>, table: Arc<Table>) {
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

/// The streams to one adapter address.
#[derive(Debug)]
pub struct StreamPool {
    slots: Vec<Slot>,
    next: AtomicUsize,
    ids: AtomicU64,
}

impl StreamPool {
    /// A pool over `clients`, one stream each (one per connection); at least one client.
    pub fn new(clients: Vec<AdapterClient>) -> Self {
        assert!(!clients.is_empty(), "a stream pool needs a client");
        let slots = clients.into_iter().map(|client| Slot { client, live: Mutex::new(None) }).collect();
        Self { slots, next: AtomicUsize::new(0), ids: AtomicU64::new(1) }
    }

    /// A fresh sub-query id, unique on every stream of the pool for its lifetime.
    pub fn next_id(&self) -> String {
        self.ids.fetch_add(1, Ordering::Relaxed).to_string()
    }

    /// How many streams the pool keeps.
    pub fn size(&self) -> usize {
        self.slots.len()
    }

    /// Sends `query` (its id from [`StreamPool::next_id`]) on the next stream in turn.
    pub fn send(&self, query: SubQuery) -> Result<Call, tonic::Status> {
        let slot = &self.slots[self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()];
        let link = slot.link();
        let id = query.id.clone();
        let replies = link.table.register(&id).ok_or_else(|| tonic::Status::unavailable("adapter stream broke"))?;
        if link.out.send(SearchFrame { frame: Some(search_frame::Frame::SubQuery(query)) }).is_err() {
            link.table.forget(&id);
            return Err(tonic::Status::unavailable("adapter stream closed"));
        }
        Ok(Call { link, id, replies, finished: false })
    }
}

/// One sub-query in flight. Dropped before its end, it cancels the sub-query on the stream.
#[derive(Debug)]
pub struct Call {
    link: Arc<Link>,
    id: String,
    replies: mpsc::UnboundedReceiver<Reply>,
    finished: bool,
}

impl Call {
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
