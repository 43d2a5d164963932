//! The `fedsearch.fusion.v1.Fusion` gRPC service: one [`Fuser`] per `Fuse` stream.
//!
//! Protocol: the first message must be a `FuseStart`; then `SourceBatch` and `SourceEnd` in any
//! interleaving, for declared sources only; then the caller half-closes. When
//! `FuseStart.snapshots` is set a `snapshot` follows each source's (first) `SourceEnd`; the
//! stream always ends with exactly one `result`. A protocol violation or a bad `FuseStart` ends
//! the stream with INVALID_ARGUMENT (see [`FusionError`]). Each stream runs in the span
//! `fusion.fuse` with the attributes `method`, `sources`, `hits_in`, `hits_out` and `duplicates`.

use std::pin::Pin;

use fedsearch_proto::fusion::{
    FuseInput, FuseOutput, FusedList, fuse_input::Input, fuse_output::Output,
    fusion_server::{Fusion, FusionServer},
};
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{Instrument, field::Empty};

use crate::{Fuser, FusionError};

/// Hits accepted in one stream; more is refused with INVALID_ARGUMENT.
pub const MAX_HITS_PER_STREAM: usize = 10_000;

/// The gRPC face of [`Fuser`]. Stateless: every stream has its own fuser.
#[derive(Debug, Default, Clone, Copy)]
pub struct FusionService;

impl FusionService {
    pub fn into_server(self) -> FusionServer<Self> {
        FusionServer::new(self)
    }
}

type OutputStream = Pin<Box<dyn Stream<Item = Result<FuseOutput, Status>> + Send>>;

#[tonic::async_trait]
impl Fusion for FusionService {
    type FuseStream = OutputStream;

    async fn fuse(&self, request: Request<Streaming<FuseInput>>) -> Result<Response<Self::FuseStream>, Status> {
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(4);
        let span = tracing::info_span!(
            "fusion.fuse",
            method = Empty,
            sources = Empty,
            hits_in = Empty,
            hits_out = Empty,
            duplicates = Empty,
        );
        tokio::spawn(
            async move {
                match drive(inbound, &tx).await {
                    Ok(Some(result)) => {
                        let span = tracing::Span::current();
                        span.record("hits_out", result.hits.len());
                        span.record("duplicates", result.duplicates_merged);
                        let _ = tx.send(Ok(FuseOutput { output: Some(Output::Result(result)) })).await;
                    }
                    Ok(None) => tracing::debug!("caller left before the result"),
                    Err(status) => {
                        tracing::info!(code = ?status.code(), error = %status.message(), "fusion stream refused");
                        let _ = tx.send(Err(status)).await;
                    }
                }
            }
            .instrument(span),
        );
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// Runs one stream to its final list. `Ok(None)`: the caller went away (nothing to answer).
async fn drive<S>(mut inbound: S, out: &mpsc::Sender<Result<FuseOutput, Status>>) -> Result<Option<FusedList>, Status>
where
    S: Stream<Item = Result<FuseInput, Status>> + Unpin,
{
    let span = tracing::Span::current();
    let start = match next(&mut inbound).await? {
        Some(Input::Start(start)) => start,
        Some(_) => return Err(FusionError::NoStart.into()),
        None => return Err(FusionError::NoStart.into()),
    };
    let mut fuser = Fuser::new(&start)?;
    span.record("method", fuser.method().label());
    span.record("sources", start.sources.len());
    while let Some(input) = next(&mut inbound).await? {
        match input {
            Input::Start(_) => return Err(FusionError::SecondStart.into()),
            Input::Batch(batch) => {
                check_source(&fuser, &batch.source)?;
                if fuser.is_ended(&batch.source) {
                    return Err(FusionError::BatchAfterEnd(batch.source).into());
                }
                if batch.hits.iter().any(|h| h.local_id.is_empty()) {
                    return Err(FusionError::MissingLocalId(batch.source).into());
                }
                if fuser.hits_in() + batch.hits.len() > MAX_HITS_PER_STREAM {
                    return Err(FusionError::TooManyHits(MAX_HITS_PER_STREAM).into());
                }
                fuser.add_batch(&batch.source, batch.hits);
                span.record("hits_in", fuser.hits_in());
            }
            Input::End(end) => {
                check_source(&fuser, &end.source)?;
                if fuser.is_ended(&end.source) {
                    continue;
                }
                fuser.end_source(&end.source);
                if start.snapshots {
                    let snapshot = FuseOutput { output: Some(Output::Snapshot(fuser.snapshot())) };
                    if out.send(Ok(snapshot)).await.is_err() {
                        return Ok(None);
                    }
                }
            }
        }
    }
    span.record("hits_in", fuser.hits_in());
    Ok(Some(fuser.finish()))
}

/// The next input, skipping empty frames; `None` once the caller half-closed or went away.
async fn next<S>(inbound: &mut S) -> Result<Option<Input>, Status>
where
    S: Stream<Item = Result<FuseInput, Status>> + Unpin,
{
    loop {
        match inbound.next().await {
            None => return Ok(None),
            Some(Ok(FuseInput { input: Some(input) })) => return Ok(Some(input)),
            Some(Ok(FuseInput { input: None })) => continue,
            Some(Err(status)) => {
                tracing::debug!(code = ?status.code(), "caller closed the fusion stream");
                return Ok(None);
            }
        }
    }
}

fn check_source(fuser: &Fuser, source: &str) -> Result<(), FusionError> {
    if fuser.is_declared(source) { Ok(()) } else { Err(FusionError::UndeclaredSource(source.to_string())) }
}
