//! The fedsearch command line: the arguments and subcommands (clap derive).
//!
//! Values are parsed and checked here (durations, `key=value` pairs, weights), so a bad value
//! is a usage error (exit 2) before any call is made.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Ask a running fedsearch router your own questions, as yourself.
#[derive(Parser, Debug)]
#[command(name = "fedsearch", version, about, propagate_version = true)]
pub struct Cli {
    /// The router's gRPC address: `host:port` (as grpcurl takes it) or `http://host:port`.
    #[arg(long, global = true, env = "FEDSEARCH_ROUTER", default_value = "http://127.0.0.1:50051")]
    pub router: String,

    /// The bearer token (JWT) identifying you; mint a demo one with `fedsearch token --secret <the router's HS256 secret> --user alice`.
    #[arg(long, global = true, env = "FEDSEARCH_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// Print the response as JSON (one JSON object per line with --stream).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Mint a development token (HS256) and print only the token.
    Token(TokenArgs),
    /// Search the sources you may use and print fused, cited hits.
    Search(SearchArgs),
    /// List the sources you may use.
    Sources,
    /// Fetch one document by the `full_text_ref` of a hit.
    Get(GetArgs),
    /// Ask a labeled question set (JSONL) as each question's user and score the answers.
    Eval(EvalArgs),
    /// Adoption per source from the router's feedback file, and the fusion weights it suggests.
    Weights(WeightsArgs),
    /// Check every source of a router config as the token's user: adapter reachable, Describe,
    /// the adapter's self-check (mappings, permission fields, templates, time zones), a probe
    /// query. Prints what to fix, one line each; exits 1 when anything failed.
    Doctor(DoctorArgs),
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// The router's config file (its `auth:` verifies --token; its `sources:` are checked).
    #[arg(long)]
    pub config: std::path::PathBuf,
    /// The probe query's text.
    #[arg(long, default_value = "test")]
    pub probe: String,
    /// Check only these sources (repeatable); default every source.
    #[arg(long = "source")]
    pub sources: Vec<String>,
}

#[derive(Args, Debug)]
pub struct WeightsArgs {
    /// The router's `feedback.path` file (JSONL).
    #[arg(long)]
    pub feedback: std::path::PathBuf,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The labeled questions, one JSON object per line (see eval/README.md).
    #[arg(long)]
    pub questions: std::path::PathBuf,
    /// The users (YAML: `users: { <sub>: { groups: [...], attributes: {...} } }`).
    #[arg(long)]
    pub users: std::path::PathBuf,
    /// The router's HS256 secret, to mint each user's token.
    #[arg(long, env = "FEDSEARCH_JWT_SECRET", hide_env_values = true)]
    pub secret: String,
    /// Hits asked for and scored (nDCG@k, source recall@k).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub top_k: u32,
    /// Also fetch every hit's full text as the user (forbidden ids are looked for there too).
    #[arg(long)]
    pub fetch: bool,
    /// Also ask for an agent context of this many tokens (forbidden ids are looked for there).
    #[arg(long, default_value_t = 0)]
    pub context_tokens: u32,
    /// Name every source the user may use instead of letting the router choose.
    #[arg(long)]
    pub all_sources: bool,
    /// The `as_of` (RFC 3339) of questions that carry none: the instant their data was seeded
    /// at, for data seeded relative to its load time (`scripts/eval.sh` passes the backends'
    /// `FEDSEARCH_SEED_NOW`), so "yesterday" means the same day whenever the eval runs.
    #[arg(long, env = "FEDSEARCH_EVAL_DEFAULT_AS_OF", value_parser = parse_rfc3339)]
    pub default_as_of: Option<chrono::DateTime<chrono::FixedOffset>>,
    /// A previous `--json` report (or `--save` file) to compare with.
    #[arg(long)]
    pub baseline: Option<std::path::PathBuf>,
    /// Also write the JSON report here.
    #[arg(long)]
    pub save: Option<std::path::PathBuf>,
    /// Also write every answer here, one JSON line per question (`id` and the response's `hits`
    /// with their explanations), e.g. to fit `rerank.weights` (scripts/fit-rerank.py).
    #[arg(long)]
    pub dump: Option<std::path::PathBuf>,
    /// Also report, per source, the share of its top-k hits that were relevant (adoption) and
    /// the fusion weight that suggests (adoption relative to the mean, within 0.25..=4).
    #[arg(long)]
    pub suggest_weights: bool,
    /// Fusion options instead of the router's defaults, e.g. to try suggested weights.
    #[command(flatten)]
    pub fusion: FusionArgs,
    /// Fail (exit 1) below this mean nDCG@k.
    #[arg(long)]
    pub min_ndcg: Option<f64>,
    #[arg(long)]
    pub min_routing_recall: Option<f64>,
    #[arg(long)]
    pub min_routing_precision: Option<f64>,
    /// Fail when more old versions than this rank above (or without) their current version.
    #[arg(long)]
    pub max_superseded_first: Option<usize>,
}

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("who").required(true).args(["user", "sub"]))]
pub struct TokenArgs {
    /// The router's HS256 secret (at least 32 bytes).
    #[arg(long, env = "FEDSEARCH_JWT_SECRET", hide_env_values = true)]
    pub secret: String,

    /// A demo user from the sample company: alice, dave, bob, carol or eve.
    #[arg(long, conflicts_with_all = ["sub", "group", "attr"])]
    pub user: Option<String>,

    /// The subject (`sub` claim).
    #[arg(long)]
    pub sub: Option<String>,

    /// A group (repeatable).
    #[arg(long = "group")]
    pub group: Vec<String>,

    /// An attribute `key=value` (repeatable), e.g. `business_lines=retail,wholesale`.
    #[arg(long = "attr", value_parser = parse_key_value)]
    pub attr: Vec<(String, String)>,

    /// How long the token is valid, e.g. 30m, 1h, 7d.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub ttl: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Fusion {
    /// Reciprocal rank fusion.
    Rrf,
    /// Min-max-normalised source scores times the source weight.
    Weighted,
}

/// How to fuse, for `search` and `eval` (unset: the router's defaults).
#[derive(Args, Debug)]
pub struct FusionArgs {
    /// The fusion method.
    #[arg(long, value_enum)]
    pub fusion: Option<Fusion>,

    /// The RRF rank constant k (default 60 at the router).
    #[arg(long)]
    pub rrf_k: Option<u32>,

    /// A per-source weight `source=2.0` (repeatable, >= 0).
    #[arg(long = "weight", value_parser = parse_weight)]
    pub weight: Vec<(String, f64)>,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// The question.
    pub query: String,

    /// Search only this source (repeatable); default: the router chooses.
    #[arg(long = "source", short = 's')]
    pub source: Vec<String>,

    /// How many fused hits to return (1-50; default 10).
    #[arg(long, short = 'k', value_parser = clap::value_parser!(u32).range(1..=50))]
    pub top_k: Option<u32>,

    /// Only documents updated within this long ago, e.g. 24h, 7d.
    #[arg(long, value_parser = parse_duration, conflicts_with_all = ["from", "to"])]
    pub since: Option<Duration>,

    /// Only documents updated at or after this time (RFC 3339 or YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_time)]
    pub from: Option<prost_types::Timestamp>,

    /// Only documents updated at or before this time (RFC 3339 or YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_time)]
    pub to: Option<prost_types::Timestamp>,
    /// Resolve relative time phrases ("yesterday", 最近一周) against this moment (RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub as_of: Option<prost_types::Timestamp>,
    /// The user's IANA time zone for calendar phrases, e.g. Asia/Shanghai.
    #[arg(long = "tz")]
    pub time_zone: Option<String>,

    /// Only this document type (repeatable), e.g. ticket, incident, policy, order.
    #[arg(long = "type")]
    pub doc_type: Vec<String>,

    /// A hit must carry this tag (repeatable).
    #[arg(long = "tag")]
    pub tag: Vec<String>,

    /// Metadata equality `key=value` (repeatable), e.g. status=open.
    #[arg(long = "eq", value_parser = parse_key_value)]
    pub eq: Vec<(String, String)>,

    #[command(flatten)]
    pub fusion: FusionArgs,

    /// The overall search timeout, e.g. 800ms, 3s.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Pack an agent context of at most this many tokens and print it.
    #[arg(long)]
    pub context_tokens: Option<u32>,

    /// Use SearchStream: print the routing and each source's status as they arrive.
    #[arg(long)]
    pub stream: bool,

    /// Print why each hit ranked where it did.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The `full_text_ref` of a hit, e.g. `wiki:public:return_policy`.
    pub full_text_ref: String,
}

/// Parses `250ms`, `3s`, `5m`, `1h`, `7d`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let hint = || format!("`{s}` is not a duration like 800ms, 3s, 5m, 1h or 7d");
    let (digits, secs_per_unit) = if let Some(d) = t.strip_suffix('h') {
        (d, 3_600)
    } else if let Some(d) = t.strip_suffix('d') {
        (d, 86_400)
    } else {
        return fedsearch_core::config::duration::parse(t).map_err(|_| hint());
    };
    let n: u64 = digits.parse().map_err(|_| hint())?;
    n.checked_mul(secs_per_unit).map(Duration::from_secs).ok_or_else(hint)
}

/// Parses `key=value` (the value may contain `=`; the key may not be empty).
pub fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not `key=value`")),
    }
}

/// Parses `source=weight` with a finite weight >= 0.
pub fn parse_weight(s: &str) -> Result<(String, f64), String> {
    let (source, w) = parse_key_value(s).map_err(|_| format!("`{s}` is not `source=weight`"))?;
    match w.trim().parse::<f64>() {
        Ok(w) if w.is_finite() && w >= 0.0 => Ok((source, w)),
        _ => Err(format!("weight in `{s}` must be a number >= 0")),
    }
}

/// Parses an RFC 3339 time, or a `YYYY-MM-DD` date meaning midnight UTC.
pub fn parse_time(s: &str) -> Result<prost_types::Timestamp, String> {
    let t = s.trim();
    if let Some(ts) = fedsearch_core::time::parse_rfc3339(t) {
        return Ok(ts);
    }
    chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|dt| fedsearch_core::time::from_chrono(dt.and_utc()))
        .ok_or_else(|| format!("`{s}` is not a time like 2026-11-01 or 2026-11-01T08:00:00Z"))
}

fn parse_rfc3339(s: &str) -> Result<chrono::DateTime<chrono::FixedOffset>, String> {
    chrono::DateTime::parse_from_rfc3339(s).map_err(|e| format!("`{s}` is not an RFC 3339 time: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_hours_and_days_and_reject_garbage() {
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("800ms"), Ok(Duration::from_millis(800)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("7 weeks").is_err());
        assert!(parse_duration("d").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
        assert!(parse_duration(&format!("{}d", u64::MAX)).is_err());
    }

    #[test]
    fn key_values_and_weights_are_checked() {
        assert_eq!(parse_key_value("status=open"), Ok(("status".into(), "open".into())));
        assert_eq!(parse_key_value("q=a=b"), Ok(("q".into(), "a=b".into())));
        assert!(parse_key_value("=open").is_err());
        assert!(parse_key_value("status").is_err());
        assert_eq!(parse_weight("wiki=2.5"), Ok(("wiki".into(), 2.5)));
        assert!(parse_weight("wiki=-1").is_err());
        assert!(parse_weight("wiki=NaN").is_err());
        assert!(parse_weight("wiki=inf").is_err());
    }

    #[test]
    fn times_accept_rfc3339_and_plain_dates() {
        assert_eq!(parse_time("2026-11-01").unwrap().seconds, 1_793_491_200);
        assert_eq!(parse_time("2026-11-01T08:00:00+08:00").unwrap().seconds, 1_793_491_200);
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn since_conflicts_with_from_and_a_user_preset_with_explicit_claims() {
        use clap::Parser;
        let err =
            Cli::try_parse_from(["fedsearch", "search", "q", "--since", "7d", "--from", "2026-11-01"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
        let err = Cli::try_parse_from(["fedsearch", "token", "--secret", "s", "--user", "alice", "--group", "x"])
            .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
        let err = Cli::try_parse_from(["fedsearch", "token", "--secret", "s"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }
}
