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
    FuseInput, FuseOutput, FusedList,
    fuse_input::Input,
    fuse_output::Output,
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
        let span = fuse_span();
        tokio::spawn(
            async move {
                match drive(inbound, &tx).await {
                    Ok(Some(result)) => {
                        let _ = tx.send(Ok(FuseOutput { output: Some(Output::Result(result)) })).await;
                    }
                    Ok(None) => tracing::debug!("caller left before the result"),
                    Err(status) => {
                        tracing::info!(code = ?status.code(), error = %status.message(), "fusion stream refused");
                        let _ = tx.send(Err(fedsearch_core::errors::ensure_details(status))).await;
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
    let result = fuser.finish();
    span.record("hits_out", result.hits.len());
    span.record("duplicates", result.duplicates_merged);
    Ok(Some(result))
}

/// The span of one stream; [`drive`] records its attributes.
fn fuse_span() -> tracing::Span {
    tracing::info_span!(
        "fusion.fuse",
        method = Empty,
        sources = Empty,
        hits_in = Empty,
        hits_out = Empty,
        duplicates = Empty,
    )
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use fedsearch_proto::{
        fusion::{FuseStart, SourceBatch, SourceSpec},
        types::SourceHit,
    };
    use tracing::{
        Subscriber,
        field::{Field, Visit},
        span::{Attributes, Id, Record},
    };
    use tracing_subscriber::{Layer, layer::Context, prelude::*};

    use super::*;

    /// Records the fields of every `fusion.fuse` span.
    #[derive(Clone, Default)]
    struct Fields(Arc<Mutex<Vec<(String, String)>>>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if let Ok(mut f) = self.0.lock() {
                f.push((field.name().to_string(), format!("{value:?}")));
            }
        }
    }

    impl<S: Subscriber> Layer<S> for Fields {
        fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
            if attrs.metadata().name() == "fusion.fuse" {
                self.0.lock().unwrap().push(("name".into(), "fusion.fuse".into()));
            }
        }
        fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
            values.record(&mut self.clone());
        }
    }

    #[test]
    fn the_fuse_span_carries_its_attributes() {
        let fields = Fields::default();
        let subscriber = tracing_subscriber::registry().with(fields.clone());
        let start = FuseStart {
            sources: ["a", "b"]
                .iter()
                .map(|s| SourceSpec { source: s.to_string(), weight: 1.0, ..Default::default() })
                .collect(),
            ..Default::default()
        };
        let hit = |id: &str| SourceHit {
            local_id: id.into(),
            rank: 1,
            url: "https://x.example/same".into(),
            ..Default::default()
        };
        let inputs = vec![
            Ok(FuseInput { input: Some(Input::Start(start)) }),
            Ok(FuseInput { input: Some(Input::Batch(SourceBatch { source: "a".into(), hits: vec![hit("1")] })) }),
            Ok(FuseInput { input: Some(Input::Batch(SourceBatch { source: "b".into(), hits: vec![hit("2")] })) }),
        ];
        let (tx, _rx) = mpsc::channel(4);
        let result = tracing::subscriber::with_default(subscriber, || {
            futures::executor::block_on(drive(futures::stream::iter(inputs), &tx).instrument(fuse_span()))
        });
        assert_eq!(result.unwrap().unwrap().hits.len(), 1);
        let got = fields.0.lock().unwrap().clone();
        for (key, value) in [
            ("name", "fusion.fuse"),
            ("method", "\"rrf\""),
            ("sources", "2"),
            ("hits_in", "2"),
            ("hits_out", "1"),
            ("duplicates", "1"),
        ] {
            assert!(got.iter().any(|(k, v)| k == key && v == value), "{key}={value} not in {got:?}");
        }
    }
}
