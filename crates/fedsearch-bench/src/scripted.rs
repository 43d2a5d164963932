//! Benchmark tools for fedsearch: the `scripted-adapter` process.
//!
//! One logical source per process, answering every sub-query after a fixed latency with a
//! fixed number of hits ([`BenchAdapter`]), behind the same `serve_adapter` the real adapters
//! use, so the router pays the real gRPC and stream costs.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, ServerConfig, SourceDescription,
    SourceHit, SubQuery, testing::make_hits,
};

use crate::{BenchError, loopback, timer::PreciseTimer};

/// Most hits a scripted source holds (the kit refuses sub-query limits above 200).
pub const MAX_HITS: usize = 200;
/// Highest scripted latency accepted.
pub const MAX_LATENCY_MS: u64 = 60_000;

#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "scripted-adapter",
    about = "a SourceAdapter with fixed latency and hits, for benchmarks (loopback only)"
)]
pub struct ScriptedArgs {
    /// Loopback address to listen on, e.g. 127.0.0.1:50061.
    #[arg(long)]
    pub listen: SocketAddr,
    /// The logical source name the router sends as `SubQuery.source`.
    #[arg(long)]
    pub source: String,
    /// Time each sub-query takes before it answers.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Hits per answer (capped by the sub-query's limit).
    #[arg(long, default_value_t = 20)]
    pub hits: usize,
    /// Sub-queries served at once; more wait their turn.
    #[arg(long, default_value_t = 4096)]
    pub max_concurrent: usize,
}

impl ScriptedArgs {
    /// Checks the flags and builds the adapter and its server settings.
    pub fn build(&self) -> Result<(BenchAdapter, ServerConfig), BenchError> {
        let listen = loopback::listen(self.listen)?;
        if self.source.is_empty()
            || self.source.len() > 64
            || !self.source.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(BenchError::InvalidArgument("--source must be 1..=64 of a-z, 0-9, '_' or '-'".into()));
        }
        if self.latency_ms > MAX_LATENCY_MS {
            return Err(BenchError::InvalidArgument(format!("--latency-ms must be at most {MAX_LATENCY_MS}")));
        }
        if self.hits > MAX_HITS {
            return Err(BenchError::InvalidArgument(format!("--hits must be at most {MAX_HITS}")));
        }
        if !(1..=100_000).contains(&self.max_concurrent) {
            return Err(BenchError::InvalidArgument("--max-concurrent must be within 1..=100000".into()));
        }
        let adapter = BenchAdapter {
            source: self.source.clone(),
            hits: make_hits(&self.source, self.hits).into(),
            latency: Duration::from_millis(self.latency_ms),
            timer: PreciseTimer::start().map_err(BenchError::Timer)?,
        };
        let config = ServerConfig {
            listen,
            shutdown_grace: Duration::from_secs(2),
            max_concurrent_subqueries: self.max_concurrent,
            default_timeout: Duration::from_secs(5),
            tls: None,
            identity: None,
        };
        Ok((adapter, config))
    }
}

/// The scripted source of a benchmark: every sub-query for `source` answers after `latency`
/// with the first `limit` of `hits`, in one batch.
///
/// Not the kit's test double (`testing::ScriptedAdapter`): that one keeps a copy of every
/// sub-query it was asked (a long run grew each adapter to ~200 MB), clones its whole script per
/// sub-query and sleeps the last 2 ms on a blocking thread. This one waits on the process's
/// [`PreciseTimer`]: tokio's millisecond timer answered up to a millisecond late, which the
/// benchmark counted as fedsearch's overhead.
pub struct BenchAdapter {
    source: String,
    hits: Arc<[SourceHit]>,
    latency: Duration,
    timer: PreciseTimer,
}

impl Adapter for BenchAdapter {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "scripted-adapter".into(),
            sources: vec![SourceDescription {
                name: self.source.clone(),
                kind: "scripted".into(),
                ..Default::default()
            }],
        }
    }

    async fn search(&self, query: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        if query.source != self.source {
            return Err(AdapterError::NotFound(format!("no source `{}`", query.source)));
        }
        if !self.latency.is_zero() {
            self.timer.sleep(self.latency).await;
        }
        sink.send(self.hits.iter().take(query.limit as usize).cloned().collect()).await;
        Ok(())
    }

    /// Benchmarks only search; there is no document to fetch.
    async fn fetch(&self, _request: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("a scripted benchmark source has no documents to fetch".into()))
    }
}

/// The whole `scripted-adapter` process: check flags, start quiet telemetry, serve until
/// SIGTERM/SIGINT.
pub async fn main(args: ScriptedArgs) -> anyhow::Result<()> {
    let (adapter, config) = match args.build() {
        Ok(built) => built,
        Err(e) => {
            eprintln!("scripted-adapter: {e}");
            std::process::exit(2);
        }
    };
    let telemetry = fedsearch_core::telemetry::init("scripted-adapter", &Default::default())?;
    let listener = fedsearch_core::grpc::bind(config.listen).await?;
    tracing::info!(source = %args.source, latency_ms = args.latency_ms, hits = args.hits, listen = %listener.local_addr()?, "serving");
    let result =
        fedsearch_adapter_kit::serve_adapter(adapter, listener, &config, fedsearch_core::shutdown::signal()).await;
    telemetry.shutdown();
    result
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn args(extra: &[&str]) -> ScriptedArgs {
        let mut v = vec!["scripted-adapter", "--listen", "127.0.0.1:0", "--source", "tickets"];
        v.extend_from_slice(extra);
        ScriptedArgs::try_parse_from(v).unwrap()
    }

    #[test]
    fn flags_build_an_adapter_for_the_named_source() {
        let (adapter, config) = args(&["--latency-ms", "30", "--hits", "5"]).build().unwrap();
        let d = adapter.describe();
        assert_eq!(d.sources.len(), 1);
        assert_eq!(d.sources[0].name, "tickets");
        assert_eq!(config.max_concurrent_subqueries, 4096);
    }

    #[tokio::test]
    async fn a_sub_query_gets_the_first_limit_hits_after_the_latency_and_another_source_is_not_found() {
        let (adapter, _) = args(&["--latency-ms", "20", "--hits", "5"]).build().unwrap();
        let query = |source: &str| SubQuery { source: source.into(), limit: 3, ..Default::default() };
        let (sink, mut batches) = HitSink::channel(4);
        let started = tokio::time::Instant::now();
        adapter.search(query("tickets"), sink).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(20), "it waits the scripted latency");
        let batch = batches.recv().await.unwrap();
        assert_eq!(batch.iter().map(|h| h.rank).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(batches.recv().await.is_none(), "one batch, then the sink closes");
        let (sink, _rx) = HitSink::channel(1);
        assert!(matches!(adapter.search(query("other"), sink).await, Err(AdapterError::NotFound(_))));
    }

    #[test]
    fn bad_flags_are_refused_with_the_flag_named() {
        fn refusal(a: ScriptedArgs) -> BenchError {
            a.build().err().expect("the flags should be refused")
        }
        for (extra, needle) in [
            (vec!["--latency-ms", "600000"], "--latency-ms"),
            (vec!["--hits", "100000"], "--hits"),
            (vec!["--max-concurrent", "0"], "--max-concurrent"),
        ] {
            let err = refusal(args(&extra)).to_string();
            assert!(err.contains(needle), "{err}");
        }
        let err = refusal(ScriptedArgs::try_parse_from(["x", "--listen", "0.0.0.0:1", "--source", "a"]).unwrap());
        assert!(matches!(err, BenchError::NotLoopback(_)));
        let err = refusal(ScriptedArgs::try_parse_from(["x", "--listen", "127.0.0.1:1", "--source", "a b"]).unwrap());
        assert!(err.to_string().contains("--source"));
    }
}
