//! Benchmark tools for fedsearch: the `fedsearch-loadgen` load generator for the router's `Search`.
//!
//! Two modes, both bounded in time and in request count:
//! - open loop (`--rate R`): requests are sent on a fixed schedule whether or not earlier ones
//!   have answered, which is how independent agents arrive; latency is timed from each send;
//! - closed loop (`--concurrency N`): N workers each send the next request as soon as the last
//!   one answered, which finds the peak throughput.
//!
//! All requests share a small pool of HTTP/2 channels opened once (`--channels`), and carry one
//! HS256 bearer token minted at start from the secret in `FEDSEARCH_BENCH_SECRET`. Only
//! loopback targets are accepted.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use fedsearch_core::config::duration;
use fedsearch_proto::{
    api::{SearchRequest, SearchResponse, federated_search_client::FederatedSearchClient},
    types::SourceState,
};
use tokio::{task::JoinSet, time::Instant};
use tonic::{
    Status,
    metadata::{Ascii, MetadataValue},
    transport::Channel,
};

use crate::{
    BenchError, health, loopback,
    report::{self, Answer, Recorder, Report, RunInfo},
};

/// Upper bounds that keep one run from becoming a flood.
pub const MAX_RATE: f64 = 20_000.0;
pub const MAX_CONCURRENCY: u32 = 1024;
pub const MAX_DURATION: Duration = Duration::from_secs(600);
pub const MAX_REQUESTS: u64 = 5_000_000;
pub const MAX_CHANNELS: usize = 64;

#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "fedsearch-loadgen",
    about = "gRPC load generator for the fedsearch router's Search (loopback targets only)"
)]
pub struct LoadgenArgs {
    /// The router (or, with --wait-healthy, any fedsearch service), e.g. http://127.0.0.1:50051.
    #[arg(long)]
    pub target: String,
    /// Only wait until the target reports SERVING on grpc.health.v1 (up to this long), then exit.
    #[arg(long, value_parser = duration::parse)]
    pub wait_healthy: Option<Duration>,
    /// HS256 secret the router verifies tokens with (at least 32 bytes).
    #[arg(long, env = "FEDSEARCH_BENCH_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Open loop: requests per second.
    #[arg(long, conflicts_with = "concurrency")]
    pub rate: Option<f64>,
    /// Closed loop: requests in flight at once.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// How long the measured part lasts (250ms, 15s, 1m).
    #[arg(long, default_value = "10s", value_parser = duration::parse)]
    pub duration: Duration,
    /// Load applied before measuring, not recorded.
    #[arg(long, default_value = "2s", value_parser = duration::parse)]
    pub warmup: Duration,
    /// Latency of the slowest scripted source; overhead = latency − this.
    #[arg(long, default_value_t = 0)]
    pub slowest_source_ms: u64,
    /// gRPC deadline of each request.
    #[arg(long, default_value = "5s", value_parser = duration::parse)]
    pub timeout: Duration,
    /// The request's own `timeout` field (unset by default); the router answers by the smaller
    /// of it and the gRPC deadline.
    #[arg(long, value_parser = duration::parse)]
    pub request_timeout: Option<Duration>,
    /// HTTP/2 channels shared by all requests.
    #[arg(long, default_value_t = 4)]
    pub channels: usize,
    /// Stop after this many requests even if the duration has not passed.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_requests: u64,
    /// Open loop: requests waiting for an answer at most; beyond, a send is skipped and counted
    /// as LOADGEN_BACKLOG.
    #[arg(long, default_value_t = 10_000)]
    pub max_outstanding: usize,
    #[arg(long, default_value = "refund for a delayed order")]
    pub query: String,
    #[arg(long, default_value_t = 10)]
    pub top_k: u32,
    /// Token subject.
    #[arg(long, default_value = "bench-user")]
    pub subject: String,
    /// Spread requests over this many users (`<subject>-0` … in turn), so per-user limits do not
    /// stand in for the router's capacity.
    #[arg(long, default_value_t = 1)]
    pub users: u32,
    /// Token groups (repeat the flag).
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// Name of the run in the report.
    #[arg(long)]
    pub label: Option<String>,
    /// Print the report as one JSON line instead of a Markdown row.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long)]
    pub json_out: Option<std::path::PathBuf>,
    /// Print the Markdown table header before the row.
    #[arg(long)]
    pub markdown_header: bool,
}

/// Open or closed loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Open { rate: f64 },
    Closed { concurrency: u32 },
}

/// One checked run.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub label: String,
    pub mode: Mode,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    pub slowest_source: Duration,
    pub max_requests: u64,
    pub max_outstanding: usize,
    pub request: SearchRequest,
}

fn invalid(msg: impl Into<String>) -> BenchError {
    BenchError::InvalidArgument(msg.into())
}

impl LoadgenArgs {
    /// Checks every bound; the error names the flag.
    pub fn spec(&self) -> Result<LoadSpec, BenchError> {
        let mode = match (self.rate, self.concurrency) {
            (Some(rate), None) => {
                if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE) {
                    return Err(invalid(format!("--rate must be within (0, {MAX_RATE}]")));
                }
                Mode::Open { rate }
            }
            (None, Some(concurrency)) => {
                if !(1..=MAX_CONCURRENCY).contains(&concurrency) {
                    return Err(invalid(format!("--concurrency must be within 1..={MAX_CONCURRENCY}")));
                }
                Mode::Closed { concurrency }
            }
            _ => {
                return Err(invalid("give exactly one of --rate (open loop) or --concurrency (closed loop)"));
            }
        };
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return Err(invalid("--duration must be positive and at most 10m"));
        }
        if self.warmup > Duration::from_secs(60) {
            return Err(invalid("--warmup must be at most 60s"));
        }
        if self.timeout.is_zero() || self.timeout > Duration::from_secs(60) {
            return Err(invalid("--timeout must be positive and at most 60s"));
        }
        if self.request_timeout.is_some_and(|t| t.is_zero() || t > Duration::from_secs(60)) {
            return Err(invalid("--request-timeout must be positive and at most 60s"));
        }
        if !(1..=MAX_REQUESTS).contains(&self.max_requests) {
            return Err(invalid(format!("--max-requests must be within 1..={MAX_REQUESTS}")));
        }
        if !(1..=100_000).contains(&self.max_outstanding) {
            return Err(invalid("--max-outstanding must be within 1..=100000"));
        }
        if !(1..=MAX_CHANNELS).contains(&self.channels) {
            return Err(invalid(format!("--channels must be within 1..={MAX_CHANNELS}")));
        }
        if !(1..=10_000).contains(&self.users) {
            return Err(invalid("--users must be within 1..=10000"));
        }
        if self.slowest_source_ms > 600_000 {
            return Err(invalid("--slowest-source-ms must be at most 600000"));
        }
        if self.query.trim().is_empty() || self.query.chars().count() > 1024 {
            return Err(invalid("--query must be 1..=1024 characters"));
        }
        let label = self.label.clone().unwrap_or_else(|| match mode {
            Mode::Open { rate } => format!("open {rate} q/s"),
            Mode::Closed { concurrency } => format!("closed x{concurrency}"),
        });
        if label.contains(['|', '\n']) {
            return Err(invalid("--label must not contain '|' or newlines"));
        }
        Ok(LoadSpec {
            label,
            mode,
            duration: self.duration,
            warmup: self.warmup,
            timeout: self.timeout,
            slowest_source: Duration::from_millis(self.slowest_source_ms),
            max_requests: self.max_requests,
            max_outstanding: self.max_outstanding,
            request: SearchRequest {
                query: self.query.clone(),
                top_k: self.top_k,
                timeout: self.request_timeout.and_then(|t| prost_types::Duration::try_from(t).ok()),
                ..Default::default()
            },
        })
    }

    /// Mints one bearer token per user (`--users`), valid for the whole run plus five minutes.
    pub fn tokens(&self, spec: &LoadSpec) -> Result<Vec<String>, BenchError> {
        let secret = self
            .secret
            .as_deref()
            .ok_or_else(|| invalid("set FEDSEARCH_BENCH_SECRET (or --secret) to the router's auth.hs256_secret"))?;
        if secret.len() < fedsearch_core::auth::MIN_SECRET_LEN {
            return Err(invalid(format!(
                "the signing secret must be at least {} bytes",
                fedsearch_core::auth::MIN_SECRET_LEN
            )));
        }
        let ttl = spec.warmup + spec.duration + spec.timeout + Duration::from_secs(300);
        let subjects: Vec<String> = match self.users {
            1 => vec![self.subject.clone()],
            n => (0..n).map(|i| format!("{}-{i}", self.subject)).collect(),
        };
        subjects
            .iter()
            .map(|subject| {
                fedsearch_core::auth::mint_hs256(secret, subject, &self.groups, BTreeMap::new(), ttl).map_err(invalid)
            })
            .collect()
    }
}

/// A small pool of channels to the router, opened once and shared by every request.
pub struct Pool {
    clients: Vec<FederatedSearchClient<Channel>>,
    next: AtomicUsize,
    authorizations: Vec<MetadataValue<Ascii>>,
    next_user: AtomicUsize,
}

impl Pool {
    /// Opens `channels` connections to `target` now, so no request pays for connecting.
    /// Requests take the `tokens` in turn.
    pub async fn connect(target: &http::Uri, channels: usize, tokens: &[String]) -> Result<Self, BenchError> {
        let authorizations = tokens
            .iter()
            .map(|t| format!("Bearer {t}").parse().map_err(|_| invalid("the minted token is not valid metadata")))
            .collect::<Result<Vec<_>, _>>()?;
        if authorizations.is_empty() {
            return Err(invalid("no token to send"));
        }
        let mut clients = Vec::with_capacity(channels);
        for _ in 0..channels {
            let channel = tonic::transport::Endpoint::from(target.clone())
                .connect_timeout(Duration::from_secs(2))
                .tcp_nodelay(true)
                .connect()
                .await
                .map_err(|_| BenchError::Unavailable(format!("cannot connect to {target}")))?;
            clients.push(FederatedSearchClient::new(channel));
        }
        Ok(Self { clients, next: AtomicUsize::new(0), authorizations, next_user: AtomicUsize::new(0) })
    }

    /// One `Search` on the next channel in turn.
    pub async fn search(&self, request: SearchRequest, timeout: Duration) -> Result<SearchResponse, Status> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.clients.len();
        let mut client = self.clients[i].clone();
        let mut call = tonic::Request::new(request);
        call.set_timeout(timeout);
        let user = self.next_user.fetch_add(1, Ordering::Relaxed) % self.authorizations.len();
        call.metadata_mut().insert("authorization", self.authorizations[user].clone());
        client.search(call).await.map(tonic::Response::into_inner)
    }
}

/// What one answer tells the recorder.
fn answer(response: &SearchResponse, latency: Duration) -> Answer {
    Answer {
        latency,
        slowest_reported_source: Duration::from_millis(
            response.sources.iter().map(|s| s.latency_ms).max().unwrap_or(0),
        ),
        partial: response.sources.iter().any(|s| s.state() != SourceState::Ok),
        timed_out: response.sources.iter().any(|s| s.state() == SourceState::Timeout),
        hits: response.hits.len() as u32,
        fusion_fallback: response.fusion.as_ref().is_some_and(|f| f.in_process_fallback),
    }
}

type Shared = Arc<Mutex<Recorder>>;

fn lock(rec: &Shared) -> std::sync::MutexGuard<'_, Recorder> {
    rec.lock().unwrap_or_else(|e| e.into_inner())
}

async fn one(pool: &Pool, spec: &LoadSpec, rec: &Shared) {
    let sent = Instant::now();
    let result = pool.search(spec.request.clone(), spec.timeout).await;
    let latency = sent.elapsed();
    match result {
        Ok(response) => lock(rec).answer(answer(&response, latency)),
        Err(status) => lock(rec).error(fedsearch_core::grpc::code_name(status.code())),
    }
}

/// Runs one phase of `length`; returns its recorder and how long it took (first send to last
/// answer).
async fn phase(pool: &Arc<Pool>, spec: &Arc<LoadSpec>, length: Duration) -> (Recorder, Duration) {
    let rec: Shared = Arc::new(Mutex::new(Recorder::new(spec.slowest_source)));
    let start = Instant::now();
    let end = start + length;
    match spec.mode {
        Mode::Open { rate } => {
            let period = Duration::from_secs_f64(1.0 / rate);
            let total = ((rate * length.as_secs_f64()).round() as u64).clamp(1, spec.max_requests);
            let outstanding = Arc::new(AtomicUsize::new(0));
            let mut tasks = JoinSet::new();
            for i in 0..total {
                tokio::time::sleep_until(start + period.mul_f64(i as f64)).await;
                while tasks.try_join_next().is_some() {}
                if outstanding.load(Ordering::Relaxed) >= spec.max_outstanding {
                    lock(&rec).error("LOADGEN_BACKLOG");
                    continue;
                }
                outstanding.fetch_add(1, Ordering::Relaxed);
                let (pool, spec, rec, outstanding) = (pool.clone(), spec.clone(), rec.clone(), outstanding.clone());
                tasks.spawn(async move {
                    one(&pool, &spec, &rec).await;
                    outstanding.fetch_sub(1, Ordering::Relaxed);
                });
            }
            while tasks.join_next().await.is_some() {}
        }
        Mode::Closed { concurrency } => {
            let issued = Arc::new(AtomicU64::new(0));
            let mut workers = JoinSet::new();
            for _ in 0..concurrency {
                let (pool, spec, rec, issued) = (pool.clone(), spec.clone(), rec.clone(), issued.clone());
                workers.spawn(async move {
                    while Instant::now() < end && issued.fetch_add(1, Ordering::Relaxed) < spec.max_requests {
                        one(&pool, &spec, &rec).await;
                    }
                });
            }
            while workers.join_next().await.is_some() {}
        }
    }
    let elapsed = start.elapsed();
    let rec = lock(&rec).clone();
    (rec, elapsed)
}

/// Warms up (not recorded), then measures for `spec.duration`.
pub async fn run(pool: Arc<Pool>, spec: LoadSpec) -> Report {
    let spec = Arc::new(spec);
    if !spec.warmup.is_zero() {
        let _ = phase(&pool, &spec, spec.warmup).await;
    }
    let (rec, elapsed) = phase(&pool, &spec, spec.duration).await;
    let (mode, rate, concurrency) = match spec.mode {
        Mode::Open { rate } => ("open", Some(rate), None),
        Mode::Closed { concurrency } => ("closed", None, Some(concurrency)),
    };
    let info = RunInfo {
        label: spec.label.clone(),
        mode: mode.into(),
        rate,
        concurrency,
        duration_s: spec.duration.as_secs_f64(),
    };
    rec.report(info, elapsed)
}

fn fail(code: i32, e: impl std::fmt::Display) -> ! {
    eprintln!("fedsearch-loadgen: {e}");
    std::process::exit(code);
}

/// The whole `fedsearch-loadgen` process. Exit 2 on bad flags, 1 when the target is unreachable.
pub async fn main(args: LoadgenArgs) -> anyhow::Result<()> {
    let target = loopback::target(&args.target).unwrap_or_else(|e| fail(2, e));
    if let Some(within) = args.wait_healthy {
        health::wait_healthy(&target, within).await.unwrap_or_else(|e| fail(1, e));
        eprintln!("fedsearch-loadgen: {target} is serving");
        return Ok(());
    }
    let spec = args.spec().unwrap_or_else(|e| fail(2, e));
    let tokens = args.tokens(&spec).unwrap_or_else(|e| fail(2, e));
    let pool = Pool::connect(&target, args.channels, &tokens).await.unwrap_or_else(|e| fail(1, e));
    let report = run(Arc::new(pool), spec).await;
    let json = serde_json::to_string(&report)?;
    if let Some(path) = &args.json_out {
        std::fs::write(path, format!("{json}\n"))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if args.json {
        println!("{json}");
    } else {
        if args.markdown_header {
            println!("{}", report::markdown_header());
        }
        println!("{}", report.markdown_row());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn try_parse(flags: &str) -> Result<LoadgenArgs, clap::Error> {
        let base = ["fedsearch-loadgen", "--target", "http://127.0.0.1:1"];
        LoadgenArgs::try_parse_from(base.into_iter().chain(flags.split_whitespace()))
    }

    /// Flags after a valid target and secret; `extra` is split on whitespace.
    fn parse(extra: &str) -> LoadgenArgs {
        try_parse(&format!("--secret 0123456789abcdef0123456789abcdef {extra}")).unwrap()
    }

    #[test]
    fn rate_or_concurrency_chooses_the_mode() {
        assert_eq!(parse("--rate 500").spec().unwrap().mode, Mode::Open { rate: 500.0 });
        assert_eq!(parse("--concurrency 8").spec().unwrap().mode, Mode::Closed { concurrency: 8 });
        let err = parse("").spec().unwrap_err().to_string();
        assert!(err.contains("--rate") && err.contains("--concurrency"), "{err}");
        assert!(try_parse("--rate 1 --concurrency 1").is_err());
    }

    #[test]
    fn out_of_bounds_flags_are_refused_with_the_flag_named() {
        for (flags, needle) in [
            ("--rate 0", "--rate"),
            ("--rate 1000000", "--rate"),
            ("--rate NaN", "--rate"),
            ("--concurrency 0", "--concurrency"),
            ("--concurrency 100000", "--concurrency"),
            ("--rate 10 --duration 11m", "--duration"),
            ("--rate 10 --duration 0s", "--duration"),
            ("--rate 10 --channels 0", "--channels"),
            ("--rate 10 --max-requests 0", "--max-requests"),
            ("--rate 10 --timeout 0s", "--timeout"),
            ("--rate 10 --request-timeout 0s", "--request-timeout"),
            ("--rate 10 --label a|b", "--label"),
            ("--rate 10 --users 0", "--users"),
        ] {
            let err = parse(flags).spec().unwrap_err().to_string();
            assert!(err.contains(needle), "expected {needle} in {err}");
        }
        let mut blank = parse("--rate 10");
        blank.query = "  ".into();
        assert!(blank.spec().unwrap_err().to_string().contains("--query"));
        assert!(try_parse("--rate 1 --duration soon").is_err());
    }

    #[test]
    fn the_token_verifies_with_the_same_secret_and_a_short_secret_is_refused() {
        let args = parse("--rate 10 --group support");
        let spec = args.spec().unwrap();
        let tokens = args.tokens(&spec).unwrap();
        let config =
            fedsearch_core::JwtConfig { hs256_secret: args.secret.clone().map(Into::into), ..Default::default() };
        let verifier = fedsearch_core::JwtVerifier::new(&config).unwrap();
        let id = verifier.verify(&tokens[0]).unwrap();
        assert_eq!(id.subject, "bench-user");
        assert_eq!(id.groups, vec!["support".to_string()]);
        let many = parse("--rate 10 --users 3");
        let subjects: Vec<String> =
            many.tokens(&spec).unwrap().iter().map(|t| verifier.verify(t).unwrap().subject).collect();
        assert_eq!(subjects, ["bench-user-0", "bench-user-1", "bench-user-2"]);

        let mut other = args.clone();
        other.secret = Some("short".into());
        let err = other.tokens(&spec).unwrap_err().to_string();
        assert!(err.contains("32 bytes"), "{err}");
        other.secret = None;
        let err = other.tokens(&spec).unwrap_err().to_string();
        assert!(err.contains("FEDSEARCH_BENCH_SECRET"), "{err}");
    }

    #[test]
    fn the_request_timeout_goes_in_the_request_and_is_unset_by_default() {
        let spec = parse("--rate 10 --request-timeout 200ms").spec().unwrap();
        assert_eq!(spec.request.timeout, Some(prost_types::Duration { seconds: 0, nanos: 200_000_000 }));
        assert_eq!(spec.timeout, Duration::from_secs(5), "the gRPC deadline keeps its default");
        assert_eq!(parse("--rate 10").spec().unwrap().request.timeout, None);
    }

    #[test]
    fn the_default_label_names_the_level() {
        assert_eq!(parse("--rate 250").spec().unwrap().label, "open 250 q/s");
        assert_eq!(parse("--concurrency 64").spec().unwrap().label, "closed x64");
    }
}
