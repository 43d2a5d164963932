//! The fedsearch router: authenticates the caller, routes, fans out to adapters, fuses, answers.
//!
//! The path of one query: [`service`] verifies the bearer token and sheds load →
//! [`search::run`] validates and computes the deadline → [`routing::route`] picks sources →
//! [`fanout::start`] opens one adapter stream per source, all at once → batches flow into a
//! [`fuse::FusionSession`] (the fusion service, or in-process as the fallback) → one response
//! with hits, per-source statuses, the routing decision and the trace id.

pub mod admission;
pub mod aliases;
pub mod analysis;
pub mod audit;
pub mod breaker;
pub mod cache;
pub mod config;
pub mod context;
pub mod current;
pub mod describe;
pub mod documents;
pub mod fanout;
pub mod feedback;
pub mod fuse;
pub mod health;
pub mod intent;
pub mod mcp;
pub mod metrics;
pub mod mux;
pub mod referenced;
pub mod registry;
pub mod rerank;
pub mod rewrite;
pub mod routing;
pub mod search;
pub mod service;
pub mod sources;
pub mod state;

use std::future::Future;

pub use config::RouterConfig;
pub use state::RouterState;

/// What `router --check` adds to parsing the config: builds the router's state as start-up does
/// (sources and their channels, TLS and signing-key files, patterns, glossary) without binding a
/// port or calling an adapter.
pub fn check(config: RouterConfig) -> anyhow::Result<()> {
    RouterState::new(config).map(drop)
}

/// Serves the router on `listener` until `shutdown` resolves, then drains.
pub async fn serve(
    config: RouterConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use futures::FutureExt;
    let grace = config.server.shutdown_grace;
    let mcp_addr = mcp::listen_addr(&config);
    let state = RouterState::new(config)?;
    let _observers = metrics::observe_state(&state);
    health::spawn(state.registry.clone(), state.config.circuit_breaker.health_interval);
    let described = describe::spawn(&state.registry, state.config.selection.vocabulary_refresh);
    let _ = tokio::time::timeout(state.config.selection.vocabulary_wait, described).await;
    state.admission.watch_runtime_lag(state.config.limits.max_runtime_lag);
    let shutdown = shutdown.shared();
    if let Some(addr) = mcp_addr {
        let listener = fedsearch_core::grpc::bind(addr).await?;
        tracing::info!(listen = %listener.local_addr()?, "mcp endpoint serving at /mcp");
        let (state, stop) = (state.clone(), shutdown.clone());
        tokio::spawn(async move {
            if let Err(e) = mcp::serve(state, listener, stop).await {
                tracing::error!(error = %e, "mcp endpoint stopped");
            }
        });
    }
    let service = service::FederatedSearchService::new(state);
    let served = fedsearch_core::grpc::Served {
        routes: tonic::service::Routes::new(service.into_server()),
        service_names: vec!["fedsearch.v1.FederatedSearch"],
    };
    fedsearch_core::grpc::serve(listener, served, shutdown, grace).await
}
