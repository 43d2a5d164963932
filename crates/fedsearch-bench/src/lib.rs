//! Benchmark tools for fedsearch: a scripted adapter process and a gRPC load generator for the router.
//!
//! `make bench` (scripts/bench.sh) starts fusion, three `scripted-adapter` processes with fixed
//! latencies and the router as separate processes on loopback, then drives the router's
//! `Search` with `fedsearch-loadgen` and writes BENCHMARKS.md. The library holds everything
//! the two thin binaries do, so it is unit- and integration-tested:
//!
//! - [`loopback`]: both tools refuse anything but loopback addresses;
//! - [`scripted`]: the `scripted-adapter` process (a `ScriptedAdapter` behind `serve_adapter`);
//! - [`load`]: open-loop (fixed rate) and closed-loop (fixed concurrency) drivers;
//! - [`report`]: latency histograms, error counts and the Markdown/JSON report;
//! - [`health`]: waiting for a service's `grpc.health.v1` status;
//! - [`timer`]: the scripted sources' timer, exact to the kernel's timer slack.

pub mod error;
pub mod health;
pub mod load;
pub mod loopback;
pub mod report;
pub mod scripted;
pub mod timer;

pub use error::BenchError;
