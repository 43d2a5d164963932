//! The router's side of fusion: a session that hands the sources' batches to the fusion service
//! and falls back to fusing in-process (same algorithm, the `fedsearch-fusion` library) when the
//! service is unreachable, fails or is late. Batches are also kept locally so a late failure
//! loses nothing.
//!
//! The `Fuse` stream opens as the sub-queries go out (its start travels while the sources work).
//! Then, one of two ways:
//! - **Snapshots asked** (SearchStream): each batch and end is forwarded as it arrives, so the
//!   service answers a snapshot after each source.
//! - **No snapshots** (Search): nothing is fused before the last source is done, so the batches
//!   and ends wait in the router and go out together when the session finishes: a few HTTP/2
//!   frames and one wake-up of the service instead of one per batch and end. The service
//!   computes the same list from the same inputs.

use std::time::Duration;

use fedsearch_fusion::Fuser;
use fedsearch_proto::{
    fusion::{
        FuseInput, FuseOutput, FuseStart, FusedList, SourceBatch, SourceEnd, fuse_input, fuse_output,
        fusion_client::FusionClient,
    },
    types::{SourceHit, SourceState},
};
use tokio::{sync::mpsc, time::Instant};

/// Inputs buffered for the fusion service before the session gives up on it.
const FORWARD_BUFFER: usize = 256;
use tonic::{service::interceptor::InterceptedService, transport::Channel};

use fedsearch_core::propagation::TraceInjector;

pub type FusionRpc = FusionClient<InterceptedService<Channel, TraceInjector>>;

/// How the final list was produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FusedBy {
    Service,
    /// In-process, with the reason the service was not used.
    InProcess(String),
}

struct Remote {
    tx: mpsc::Sender<FuseInput>,
    outputs: tonic::Streaming<FuseOutput>,
}

pub struct FusionSession {
    start: FuseStart,
    remote: Option<Remote>,
    fallback_reason: Option<String>,
    record: Vec<(String, Vec<SourceHit>)>,
    ended: Vec<(String, SourceState)>,
    timeout: Duration,
}

impl FusionSession {
    /// Opens a session; `client` is `None` when no fusion service is configured. Opening waits
    /// at most `timeout`, and never past `until`.
    pub async fn open(client: Option<&FusionRpc>, start: FuseStart, timeout: Duration, until: Instant) -> Self {
        let mut session = Self {
            start: start.clone(),
            remote: None,
            fallback_reason: None,
            record: Vec::new(),
            ended: Vec::new(),
            timeout,
        };
        let Some(client) = client else {
            session.fallback_reason = Some("no fusion service configured".into());
            return session;
        };
        let (tx, rx) = mpsc::channel(FORWARD_BUFFER);
        let _ = tx.try_send(FuseInput { input: Some(fuse_input::Input::Start(start)) });
        let mut client = client.clone();
        let until = until.min(Instant::now() + timeout);
        let call = client.fuse(tokio_stream::wrappers::ReceiverStream::new(rx));
        let span = crate::fanout::client_span("", Some("fusion"), crate::fanout::FUSION_FUSE);
        match tokio::time::timeout_at(until, tracing::Instrument::instrument(call, span)).await {
            Ok(Ok(resp)) => session.remote = Some(Remote { tx, outputs: resp.into_inner() }),
            Ok(Err(e)) => {
                session.fail(format!("fusion service unavailable ({})", fedsearch_core::grpc::code_name(e.code())))
            }
            Err(_) => session.fail("fusion service did not answer in time".into()),
        }
        session
    }

    fn fail(&mut self, reason: String) {
        if self.fallback_reason.is_none() {
            crate::metrics::fusion_fallback(&reason);
            tracing::warn!(reason = %reason, "fusing in-process");
            self.fallback_reason = Some(reason);
        }
        self.remote = None;
    }

    /// Forwards without waiting: a fusion service that stops reading (stalled, not dead) fills
    /// the buffer, and the session fuses in-process instead of holding the search.
    fn forward(&mut self, input: fuse_input::Input) {
        let Some(remote) = &self.remote else { return };
        match remote.tx.try_send(FuseInput { input: Some(input) }) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.fail("fusion service is not keeping up".into()),
            Err(mpsc::error::TrySendError::Closed(_)) => self.fail("fusion service stream closed".into()),
        }
    }

    /// Whether batches and ends go to the service at [`FusionSession::finish`] rather than as
    /// they arrive: no snapshots were asked.
    fn buffered(&self) -> bool {
        !self.start.snapshots
    }

    /// Forwards what was recorded, one batch per source (its hits in arrival order), then every
    /// end (a buffered session, as it finishes): at most two inputs per source, whatever number of
    /// batches the adapters sent.
    fn forward_recorded(&mut self) {
        if self.remote.is_none() {
            return;
        }
        let mut per_source: Vec<SourceBatch> = Vec::new();
        for (source, hits) in &self.record {
            match per_source.iter_mut().find(|b| &b.source == source) {
                Some(batch) => batch.hits.extend(hits.iter().cloned()),
                None => per_source.push(SourceBatch { source: source.clone(), hits: hits.clone() }),
            }
        }
        let batches = per_source.into_iter().map(fuse_input::Input::Batch);
        let ends = self
            .ended
            .iter()
            .map(|(source, state)| fuse_input::Input::End(SourceEnd { source: source.clone(), state: *state as i32 }));
        let inputs: Vec<fuse_input::Input> = batches.chain(ends).collect();
        for input in inputs {
            self.forward(input);
        }
    }

    pub async fn add_batch(&mut self, source: &str, hits: Vec<SourceHit>) {
        if self.remote.is_some() && !self.buffered() {
            self.forward(fuse_input::Input::Batch(SourceBatch { source: source.to_string(), hits: hits.clone() }));
        }
        self.record.push((source.to_string(), hits));
    }

    pub async fn end_source(&mut self, source: &str, state: SourceState) {
        if !self.buffered() {
            self.forward(fuse_input::Input::End(SourceEnd { source: source.to_string(), state: state as i32 }));
        }
        self.ended.push((source.to_string(), state));
    }

    /// Reads any snapshot the service has ready, without waiting.
    pub fn try_snapshot(&mut self) -> Option<FusedList> {
        let remote = self.remote.as_mut()?;
        let next = futures::FutureExt::now_or_never(remote.outputs.message())?;
        match next {
            Ok(Some(FuseOutput { output: Some(fuse_output::Output::Snapshot(s)) })) => Some(s),
            _ => None,
        }
    }

    /// A snapshot computed in-process over what arrived so far (used for SearchStream when the
    /// service is not in use).
    pub fn local_snapshot(&self) -> Option<FusedList> {
        self.replay().ok().map(|f| f.snapshot())
    }

    /// An in-process fuser fed with everything recorded so far (only on the fallback paths).
    fn replay(&self) -> Result<Fuser, fedsearch_fusion::FusionError> {
        let mut fuser = Fuser::new(&self.start)?;
        for (s, hits) in &self.record {
            fuser.add_batch(s, hits.clone());
        }
        for (s, _) in &self.ended {
            fuser.end_source(s);
        }
        Ok(fuser)
    }

    /// The same, consuming the record: the final fallback moves the hits instead of cloning them.
    fn into_fuser(self) -> Result<Fuser, fedsearch_fusion::FusionError> {
        let mut fuser = Fuser::new(&self.start)?;
        for (s, hits) in self.record {
            fuser.add_batch(&s, hits);
        }
        for (s, _) in &self.ended {
            fuser.end_source(s);
        }
        Ok(fuser)
    }

    /// Closes the session and returns the fused list, waiting for the service at most the
    /// configured timeout and never past `until` (then fusing in-process).
    pub async fn finish(mut self, until: Instant) -> (FusedList, FusedBy) {
        if self.buffered() {
            self.forward_recorded();
        }
        if let Some(remote) = self.remote.take() {
            let Remote { tx, mut outputs } = remote;
            drop(tx);
            let wait = async { result(&mut outputs).await.map(|list| (list, outputs)) };
            let until = until.min(Instant::now() + self.timeout);
            match tokio::time::timeout_at(until, wait).await {
                Ok(Ok((list, mut outputs))) => {
                    // The trailers are read off the answer's path (see `fanout::drain`).
                    tokio::spawn(async move { crate::fanout::drain(&mut outputs).await });
                    return (list, FusedBy::Service);
                }
                Ok(Err(reason)) => self.fail(reason),
                Err(_) => self.fail("fusion service did not answer in time".into()),
            }
        }
        let reason = self.fallback_reason.clone().unwrap_or_default();
        let list = match self.into_fuser() {
            Ok(fuser) => fuser.finish(),
            Err(e) => {
                tracing::error!(error = %e, "in-process fusion refused the options");
                FusedList::default()
            }
        };
        (list, FusedBy::InProcess(reason))
    }
}

/// The final list of a `Fuse` stream, skipping snapshots; `Err` says why there is none.
async fn result(outputs: &mut tonic::Streaming<FuseOutput>) -> Result<FusedList, String> {
    loop {
        match outputs.message().await {
            Ok(Some(FuseOutput { output: Some(fuse_output::Output::Result(list)) })) => return Ok(list),
            Ok(Some(_)) => continue,
            Ok(None) => return Err("fusion service ended without a result".to_string()),
            Err(e) => return Err(format!("fusion service failed ({})", fedsearch_core::grpc::code_name(e.code()))),
        }
    }
}
