//! The router's side of fusion: a session that hands the sources' batches to the fusion service
//! and falls back to fusing in-process (same algorithm, the `fedsearch-fusion` library) when the
//! service is unreachable, fails or is late. Batches are also kept locally so a late failure
//! loses nothing.
//!
//! The `Fuse` stream opens as the sub-queries go out (its start travels while the sources work).
//! Then, one of two ways:
//! - **Snapshots asked** (SearchStream): each batch and end is forwarded as it arrives, so the
//!   service answers a snapshot after each source.
//! - **No snapshots** (Search): nothing is fused before the last source is done, so the
//!   stream opens when the session finishes, with the start, the batches and the ends in one
//!   request: one write and one wake-up of the service instead of one for the start and one
//!   per batch and end. The service computes the same list from the same inputs.
//!
//! The hits go to the service as the adapters encoded them ([`WireHits`]); they are decoded
//! here only to fuse in-process.

use std::time::Duration;

use fedsearch_fusion::Fuser;
use fedsearch_proto::{
    fusion::{FuseOutput, FuseStart, FusedList, SourceEnd, fuse_output},
    types::SourceState,
};
use tokio::{sync::mpsc, time::Instant};
use tonic::transport::Channel;

use crate::{
    fanout::WireHits,
    mux::{Grpc, WireCodec},
};

/// Inputs buffered for the fusion service before the session gives up on it.
const FORWARD_BUFFER: usize = 256;

/// A `FuseInput` whose batches' hits stay encoded (wire-compatible with
/// `fedsearch.fusion.v1.FuseInput`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireFuseInput {
    #[prost(oneof = "WireInput", tags = "1, 2, 3")]
    pub input: Option<WireInput>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum WireInput {
    #[prost(message, tag = "1")]
    Start(FuseStart),
    #[prost(message, tag = "2")]
    Batch(WireSourceBatch),
    #[prost(message, tag = "3")]
    End(SourceEnd),
}

/// A `SourceBatch` whose hits stay encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WireSourceBatch {
    #[prost(string, tag = "1")]
    pub source: String,
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub hits: Vec<prost::bytes::Bytes>,
}

/// The client of the fusion service (`fedsearch.fusion.v1.Fusion`), injecting the current trace
/// context into every call.
#[derive(Clone)]
pub struct FusionRpc(Grpc);

impl FusionRpc {
    pub fn new(channel: Channel) -> Self {
        Self(crate::mux::grpc(channel))
    }

    /// `Fusion.Fuse` with `inputs` as the request stream.
    async fn fuse<S>(&self, inputs: S) -> Result<tonic::Streaming<FuseOutput>, tonic::Status>
    where
        S: futures::Stream<Item = WireFuseInput> + Send + 'static,
    {
        let mut client = self.0.clone();
        client.ready().await.map_err(|e| {
            let e: tonic::codegen::StdError = e.into();
            tonic::Status::unknown(format!("Service was not ready: {e}"))
        })?;
        let mut request = tonic::Request::new(inputs);
        request.extensions_mut().insert(tonic::GrpcMethod::new("fedsearch.fusion.v1.Fusion", "Fuse"));
        let path = http::uri::PathAndQuery::from_static("/fedsearch.fusion.v1.Fusion/Fuse");
        Ok(client.streaming(request, path, WireCodec::<WireFuseInput, FuseOutput>::default()).await?.into_inner())
    }
}

fn input(input: WireInput) -> WireFuseInput {
    WireFuseInput { input: Some(input) }
}

/// How the final list was produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FusedBy {
    Service,
    /// In-process, with the reason the service was not used.
    InProcess(String),
}

struct Remote {
    tx: mpsc::Sender<WireFuseInput>,
    outputs: tonic::Streaming<FuseOutput>,
}

pub struct FusionSession {
    start: FuseStart,
    /// The service, until a buffered session calls it as it finishes.
    client: Option<FusionRpc>,
    remote: Option<Remote>,
    fallback_reason: Option<String>,
    record: Vec<(String, WireHits)>,
    ended: Vec<(String, SourceState)>,
    timeout: Duration,
}

/// Why the call could not be made.
fn unavailable(e: &tonic::Status) -> String {
    format!("fusion service unavailable ({})", fedsearch_core::grpc::code_name(e.code()))
}

const LATE: &str = "fusion service did not answer in time";

impl FusionSession {
    /// Opens a session; `client` is `None` when no fusion service is configured. A session
    /// that forwards as it goes (snapshots asked) opens its stream now, waiting at most
    /// `timeout` and never past `until`; a buffered one calls the service as it finishes.
    pub async fn open(client: Option<&FusionRpc>, start: FuseStart, timeout: Duration, until: Instant) -> Self {
        let mut session = Self {
            start,
            client: None,
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
        if session.buffered() {
            session.client = Some(client.clone());
            return session;
        }
        let (tx, rx) = mpsc::channel(FORWARD_BUFFER);
        let _ = tx.try_send(input(WireInput::Start(session.start.clone())));
        let until = until.min(Instant::now() + timeout);
        let call = client.fuse(tokio_stream::wrappers::ReceiverStream::new(rx));
        let span = crate::fanout::client_span("", Some("fusion"), crate::fanout::FUSION_FUSE);
        match tokio::time::timeout_at(until, tracing::Instrument::instrument(call, span)).await {
            Ok(Ok(outputs)) => session.remote = Some(Remote { tx, outputs }),
            Ok(Err(e)) => session.fail(unavailable(&e)),
            Err(_) => session.fail(LATE.into()),
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
    fn forward(&mut self, wire: WireInput) {
        let Some(remote) = &self.remote else { return };
        match remote.tx.try_send(input(wire)) {
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

    /// What a buffered session sends as it finishes: the start, one batch per source (its hits
    /// in arrival order), then every end: at most two inputs per source, whatever number of
    /// batches the adapters sent.
    fn recorded(&self) -> Vec<WireFuseInput> {
        let mut per_source: Vec<WireSourceBatch> = Vec::new();
        for (source, hits) in &self.record {
            match per_source.iter_mut().find(|b| &b.source == source) {
                Some(batch) => batch.hits.extend(hits.0.iter().cloned()),
                None => per_source.push(WireSourceBatch { source: source.clone(), hits: hits.0.clone() }),
            }
        }
        let start = std::iter::once(WireInput::Start(self.start.clone()));
        let batches = per_source.into_iter().map(WireInput::Batch);
        let ends = self
            .ended
            .iter()
            .map(|(source, state)| WireInput::End(SourceEnd { source: source.clone(), state: *state as i32 }));
        start.chain(batches).chain(ends).map(input).collect()
    }

    pub async fn add_batch(&mut self, source: &str, hits: WireHits) {
        if self.remote.is_some() {
            self.forward(WireInput::Batch(WireSourceBatch { source: source.to_string(), hits: hits.0.clone() }));
        }
        self.record.push((source.to_string(), hits));
    }

    pub async fn end_source(&mut self, source: &str, state: SourceState) {
        if self.remote.is_some() {
            self.forward(WireInput::End(SourceEnd { source: source.to_string(), state: state as i32 }));
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
            fuser.add_batch(s, hits.decode());
        }
        for (s, _) in &self.ended {
            fuser.end_source(s);
        }
        Ok(fuser)
    }

    /// Closes the session and returns the fused list, waiting for the service at most the
    /// configured timeout and never past `until` (then fusing in-process).
    pub async fn finish(mut self, until: Instant) -> (FusedList, FusedBy) {
        let until = until.min(Instant::now() + self.timeout);
        let outputs = if let Some(client) = self.client.take() {
            let inputs = futures::stream::iter(self.recorded());
            let span = crate::fanout::client_span("", Some("fusion"), crate::fanout::FUSION_FUSE);
            match tokio::time::timeout_at(until, tracing::Instrument::instrument(client.fuse(inputs), span)).await {
                Ok(Ok(outputs)) => Some(outputs),
                Ok(Err(e)) => {
                    self.fail(unavailable(&e));
                    None
                }
                Err(_) => {
                    self.fail(LATE.into());
                    None
                }
            }
        } else {
            // Half-closes the stream of a session that forwarded as it went.
            self.remote.take().map(|Remote { outputs, .. }| outputs)
        };
        if let Some(mut outputs) = outputs {
            let wait = async { result(&mut outputs).await.map(|list| (list, outputs)) };
            match tokio::time::timeout_at(until, wait).await {
                Ok(Ok((list, outputs))) => {
                    // The trailers are read off the answer's path (see `fanout::drain`).
                    crate::fanout::drain_later(outputs);
                    return (list, FusedBy::Service);
                }
                Ok(Err(reason)) => self.fail(reason),
                Err(_) => self.fail(LATE.into()),
            }
        }
        let reason = self.fallback_reason.clone().unwrap_or_default();
        let list = match self.replay() {
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

#[cfg(test)]
mod tests {
    use fedsearch_proto::{
        adapter::{HitBatch, ResultFrame, SubQueryDone, result_frame},
        fusion::{FuseInput, SourceBatch, SourceSpec, fuse_input},
        types::{SourceHit, VersionInfo},
    };
    use prost::Message;

    use super::*;
    use crate::mux::{WireFrame, WireResultFrame};

    fn hits() -> Vec<SourceHit> {
        let hit = |id: &str, title: &str| SourceHit {
            local_id: id.into(),
            title: title.into(),
            snippet: "支付超时 <em>问题</em>".into(),
            url: format!("https://kb.example/{id}"),
            updated_at: Some(prost_types::Timestamp { seconds: 1_780_000_000, nanos: 5 }),
            rank: 2,
            score: Some(0.75),
            metadata: [("status".to_string(), "open".to_string())].into_iter().collect(),
            version: Some(VersionInfo { label: "v2".into(), ..Default::default() }),
            ..Default::default()
        };
        vec![hit("KB-1", "退款"), hit("KB-2", "Refunds"), SourceHit { local_id: "KB-3".into(), ..Default::default() }]
    }

    #[test]
    fn hits_pass_from_the_adapters_to_fusion_as_the_contracts_messages_would() {
        let hits = hits();
        // An adapter's batch, read with its hits still encoded.
        let batch = HitBatch { sub_query_id: "7".into(), hits: hits.clone() };
        let frame = ResultFrame { frame: Some(result_frame::Frame::Batch(batch)) }.encode_to_vec();
        let Some(WireFrame::Batch(batch)) = WireResultFrame::decode(frame.as_slice()).unwrap().frame else {
            panic!("a batch");
        };
        assert_eq!(batch.sub_query_id, "7");
        let wire = WireHits(batch.hits);
        assert_eq!(wire.len(), 3);
        assert_eq!(wire.decode(), hits, "decoded where the router reads them");
        assert_eq!(wire, WireHits::encode(&hits));
        let done =
            SubQueryDone { sub_query_id: "7".into(), state: 1, code: "OK".into(), hit_count: 3, ..Default::default() };
        let frame = ResultFrame { frame: Some(result_frame::Frame::Done(done.clone())) }.encode_to_vec();
        assert_eq!(WireResultFrame::decode(frame.as_slice()).unwrap().frame, Some(WireFrame::Done(done)));

        // On to the fusion service: the same bytes as the decoded inputs.
        let start = FuseStart {
            top_k: 40,
            sources: vec![SourceSpec { source: "docs".into(), weight: 0.5, one_set: true }],
            snapshots: false,
            ..Default::default()
        };
        let end = SourceEnd { source: "docs".into(), state: SourceState::Ok as i32 };
        let pairs = [
            (WireInput::Start(start.clone()), fuse_input::Input::Start(start)),
            (
                WireInput::Batch(WireSourceBatch { source: "docs".into(), hits: wire.0.clone() }),
                fuse_input::Input::Batch(SourceBatch { source: "docs".into(), hits }),
            ),
            (WireInput::End(end.clone()), fuse_input::Input::End(end)),
        ];
        for (ours, contract) in pairs {
            assert_eq!(input(ours).encode_to_vec(), FuseInput { input: Some(contract) }.encode_to_vec());
        }
    }

    #[test]
    fn a_hit_that_does_not_decode_is_left_out() {
        let mut wire = WireHits::encode(&hits());
        wire.0.insert(1, prost::bytes::Bytes::from_static(b"\x0a\x05ab"));
        let ids: Vec<String> = wire.decode().into_iter().map(|h| h.local_id).collect();
        assert_eq!(ids, ["KB-1", "KB-2", "KB-3"]);
    }

    #[tokio::test]
    async fn a_buffered_session_sends_the_start_every_batch_and_every_end_in_one_request() {
        let start = FuseStart {
            top_k: 10,
            sources: ["a", "b"].map(|s| SourceSpec { source: s.into(), weight: 1.0, ..Default::default() }).into(),
            ..Default::default()
        };
        let mut session = FusionSession::open(None, start, Duration::from_secs(1), Instant::now()).await;
        let wire = WireHits::encode(&hits());
        session.add_batch("a", WireHits(wire.0[..1].to_vec())).await;
        session.add_batch("b", WireHits(wire.0[1..].to_vec())).await;
        session.add_batch("a", WireHits(wire.0[2..].to_vec())).await;
        session.end_source("b", SourceState::Ok).await;
        session.end_source("a", SourceState::Timeout).await;
        let sent: Vec<String> = session
            .recorded()
            .into_iter()
            .map(|i| match i.input.unwrap() {
                WireInput::Start(_) => "start".to_string(),
                WireInput::Batch(b) => format!("batch {} {}", b.source, b.hits.len()),
                WireInput::End(e) => format!("end {}", e.source),
            })
            .collect();
        assert_eq!(sent, ["start", "batch a 2", "batch b 2", "end b", "end a"]);
        // Without the service the same record is fused in-process.
        let (list, by) = session.finish(Instant::now() + Duration::from_secs(1)).await;
        assert_eq!(by, FusedBy::InProcess("no fusion service configured".into()));
        assert_eq!(list.hits.len(), 4);
    }
}
