//! Benchmark tools for fedsearch: waiting until a service reports `SERVING` on `grpc.health.v1`.
//!
//! `scripts/bench.sh` calls `fedsearch-loadgen --wait-healthy 30s --target URL` for every
//! process it starts, so load only begins once fusion, the adapters and the router all serve.

use std::time::Duration;

use tokio::time::Instant;
use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient};

use crate::BenchError;

/// One health check of the whole server (`service: ""`); `Ok(true)` when it is SERVING.
pub async fn check(uri: &http::Uri) -> Result<bool, BenchError> {
    let channel = tonic::transport::Endpoint::from(uri.clone())
        .connect_timeout(Duration::from_millis(500))
        .timeout(Duration::from_secs(1))
        .connect()
        .await
        .map_err(|_| BenchError::Unavailable(format!("cannot connect to {uri}")))?;
    let response =
        HealthClient::new(channel).check(HealthCheckRequest { service: String::new() }).await.map_err(|e| {
            BenchError::Unavailable(format!(
                "health check of {uri} failed ({})",
                fedsearch_core::grpc::code_name(e.code())
            ))
        })?;
    Ok(response.into_inner().status() == ServingStatus::Serving)
}

/// Polls [`check`] every 100 ms until SERVING or `within` has passed.
pub async fn wait_healthy(uri: &http::Uri, within: Duration) -> Result<(), BenchError> {
    let until = Instant::now() + within;
    loop {
        let last = match check(uri).await {
            Ok(true) => return Ok(()),
            Ok(false) => "reports NOT_SERVING".to_string(),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= until {
            return Err(BenchError::Unavailable(format!(
                "{uri} did not become healthy within {} ms: {last}",
                within.as_millis()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
