//! The fusion service: deduplicates and fuses per-source result lists into one ranked, explained list.
//!
//! - [`Fuser`] is the library API: the gRPC service uses it, and the router calls it in-process
//!   when the fusion service is unreachable.
//! - [`rank`] documents and implements the ranking (RRF, weighted score, duplicate groups,
//!   representatives, versions, order); [`keys`] the duplicate-detection keys; [`versions`]
//!   the versions of one document within one source (families, current and superseded).
//! - [`service`] is the `fedsearch.fusion.v1.Fusion` gRPC service; [`config`] the binary's
//!   config file; [`serve`] runs it until a shutdown future resolves.

pub mod config;
mod error;
mod fuser;
pub mod keys;
pub mod rank;
pub mod service;
mod swar;
pub mod versions;

use std::future::Future;

pub use config::FusionConfig;
pub use error::FusionError;
pub use fuser::{DEFAULT_TOP_K, Fuser, MAX_SNIPPET_CHARS, MAX_TOP_K};
pub use rank::{DEFAULT_RRF_K, Method};
pub use service::FusionService;

/// The name reported by the health service.
pub const SERVICE_NAME: &str = "fedsearch.fusion.v1.Fusion";

/// Serves fusion (plus health and reflection) on `listener` until `shutdown` resolves, then
/// drains in-flight streams for up to `config.server.shutdown_grace`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: &FusionConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let served = fedsearch_core::grpc::Served {
        routes: tonic::service::Routes::new(FusionService.into_server()),
        service_names: vec![SERVICE_NAME],
    };
    let tls = server_tls(config)?;
    fedsearch_core::grpc::serve_tls(listener, served, shutdown, config.server.shutdown_grace, tls).await
}

/// What `fusion --check` adds to parsing the config: reads the TLS files it names.
pub fn check(config: &FusionConfig) -> anyhow::Result<()> {
    server_tls(config).map(drop)
}

fn server_tls(config: &FusionConfig) -> anyhow::Result<Option<std::sync::Arc<fedsearch_core::tls::ServerTls>>> {
    match &config.server.tls {
        Some(tls) => fedsearch_core::tls::ServerTls::from_config(tls, "server.tls").map_err(anyhow::Error::msg),
        None => Ok(None),
    }
}
