//! A scripted adapter with fixed hits, latency and failures: the stand-in source for the
//! router's and fusion's own tests and for `make bench`. Never used in place of a real
//! backend in an adapter's tests.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use fedsearch_proto::{
    adapter::{DescribeResponse, FetchRequest, FetchResponse, SourceDescription, SubQuery},
    types::SourceHit,
};
use tokio::sync::Notify;

use crate::{Adapter, AdapterError, HitSink};

/// What a scripted source does with a sub-query.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Waits `latency`, then answers with the hits.
    Answer,
    /// Waits `latency`, then fails.
    Fail(AdapterError),
    /// Never answers.
    Hang,
    /// Sends the first hit, then panics.
    PanicAfterFirstBatch,
}

#[derive(Debug, Clone)]
pub struct Script {
    pub hits: Vec<SourceHit>,
    pub latency: Duration,
    pub behaviour: Behaviour,
}

impl Script {
    pub fn answer(hits: Vec<SourceHit>, latency: Duration) -> Self {
        Self { hits, latency, behaviour: Behaviour::Answer }
    }
}

/// Sleeps for `d` with the OS timer's precision. tokio's timer has a 1 ms resolution and
/// rounds up, so a scripted 30 ms source would answer after ~31 ms, and a benchmark would book
/// that extra millisecond as router overhead. So the runtime's timer waits all but the last
/// 2 ms, and a blocking-pool thread sleeps what is left exactly: a thread per sub-query for
/// about 2 ms instead of for the whole latency (at 1,000 sub-queries/s a blocking thread per
/// sub-query in flight cost the scripted source hundreds of threads and their stacks).
async fn precise_sleep(d: Duration) {
    const EXACT: Duration = Duration::from_millis(2);
    let until = tokio::time::Instant::now() + d;
    if d > EXACT {
        tokio::time::sleep_until(until - EXACT).await;
    }
    let rest = until.saturating_duration_since(tokio::time::Instant::now());
    if !rest.is_zero() && tokio::task::spawn_blocking(move || std::thread::sleep(rest)).await.is_err() {
        tokio::time::sleep_until(until).await;
    }
}

/// Makes `n` distinct hits for `source` (urls `https://<source>.example/doc/<i>`).
pub fn make_hits(source: &str, n: usize) -> Vec<SourceHit> {
    (1..=n)
        .map(|i| SourceHit {
            local_id: format!("doc-{i}"),
            title: format!("{source} document {i}"),
            snippet: format!("snippet {i} from {source}"),
            url: format!("https://{source}.example/doc/{i}"),
            rank: i as u32,
            score: Some(1.0 / i as f64),
            full_text_ref: format!("doc-{i}"),
            doc_type: "doc".into(),
            ..Default::default()
        })
        .collect()
}

/// Waits until `target` sub-queries have arrived (across sources), to prove they were all in
/// flight at once.
#[derive(Debug, Default)]
pub struct Gate {
    target: usize,
    arrived: AtomicUsize,
    notify: Notify,
}

impl Gate {
    pub fn new(target: usize) -> Arc<Self> {
        Arc::new(Self { target, arrived: AtomicUsize::new(0), notify: Notify::new() })
    }

    pub async fn arrive_and_wait(&self) {
        let n = self.arrived.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.target {
            self.notify.notify_waiters();
            return;
        }
        loop {
            let notified = self.notify.notified();
            if self.arrived.load(Ordering::SeqCst) >= self.target {
                return;
            }
            notified.await;
        }
    }
}

/// Counts what happened, for assertions.
#[derive(Debug, Default)]
pub struct Record {
    pub seen: Mutex<Vec<SubQuery>>,
    pub started: AtomicUsize,
    pub finished: AtomicUsize,
    pub cancelled: AtomicUsize,
}

struct CancelGuard<'a> {
    record: &'a Record,
    done: bool,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.record.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[derive(Clone)]
pub struct ScriptedAdapter {
    name: String,
    scripts: Arc<HashMap<String, Script>>,
    gate: Option<Arc<Gate>>,
    pub record: Arc<Record>,
}

impl ScriptedAdapter {
    pub fn new(name: &str, scripts: HashMap<String, Script>) -> Self {
        Self { name: name.into(), scripts: Arc::new(scripts), gate: None, record: Arc::default() }
    }

    /// Every sub-query waits at `gate` before it answers.
    pub fn with_gate(mut self, gate: Arc<Gate>) -> Self {
        self.gate = Some(gate);
        self
    }
}

impl Adapter for ScriptedAdapter {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: self.name.clone(),
            sources: self
                .scripts
                .keys()
                .map(|k| SourceDescription { name: k.clone(), kind: "scripted".into(), ..Default::default() })
                .collect(),
        }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        self.record.started.fetch_add(1, Ordering::SeqCst);
        self.record.seen.lock().unwrap_or_else(|e| e.into_inner()).push(query.clone());
        let mut guard = CancelGuard { record: &self.record, done: false };
        let script = self
            .scripts
            .get(&query.source)
            .ok_or_else(|| AdapterError::NotFound(format!("no source `{}`", query.source)))?
            .clone();
        if let Some(gate) = &self.gate {
            gate.arrive_and_wait().await;
        }
        if !script.latency.is_zero() {
            precise_sleep(script.latency).await;
        }
        let limit = query.limit as usize;
        let result = match script.behaviour {
            Behaviour::Answer => {
                sink.send(script.hits.into_iter().take(limit).collect()).await;
                Ok(())
            }
            Behaviour::Fail(e) => Err(e),
            Behaviour::Hang => std::future::pending().await,
            Behaviour::PanicAfterFirstBatch => {
                sink.send(script.hits.into_iter().take(1).collect()).await;
                tokio::task::yield_now().await;
                panic!("scripted panic");
            }
        };
        guard.done = true;
        self.record.finished.fetch_add(1, Ordering::SeqCst);
        result
    }

    async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        let script = self
            .scripts
            .get(&request.source)
            .ok_or_else(|| AdapterError::NotFound(format!("no source `{}`", request.source)))?;
        let hit = script
            .hits
            .iter()
            .find(|h| h.full_text_ref == request.reference)
            .ok_or_else(|| AdapterError::NotFound("no such document".into()))?;
        Ok(FetchResponse {
            id: hit.local_id.clone(),
            title: hit.title.clone(),
            content: format!("full text of {}", hit.title),
            url: hit.url.clone(),
            ..Default::default()
        })
    }
}
