//! The admin HTTP port every service can open (`admin: { listen: ... }`): Prometheus
//! `/metrics`, `/healthz` (the process is up) and `/readyz` (it serves gRPC and is not
//! draining), for scrapers and load balancers that do not speak gRPC health.
//!
//! It is a separate listener so the public port carries no operational endpoints and a
//! network policy can open the admin port to the monitoring namespace only.

use std::{
    net::SocketAddr,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use serde::Deserialize;

use crate::config::TelemetryConfig;

/// The `admin:` section of every service's config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// HTTP address of `/metrics`, `/healthz` and `/readyz`, e.g. `127.0.0.1:9464`. Off when
    /// unset (metrics are still recorded, and pushed over OTLP when configured).
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// Push metrics over OTLP to `telemetry.otlp_endpoint` this often, e.g. `30s`. Off when
    /// unset.
    #[serde(default, with = "crate::config::duration::option")]
    pub otlp_metrics_interval: Option<Duration>,
}

impl AdminConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.otlp_metrics_interval.is_some_and(|d| d < Duration::from_secs(1)) {
            return Err("`admin.otlp_metrics_interval` must be at least 1s".into());
        }
        Ok(())
    }
}

static READY: AtomicBool = AtomicBool::new(false);

/// Marks the process ready (gRPC serving) or not (starting, draining): what `/readyz` says.
pub fn set_ready(ready: bool) {
    READY.store(ready, Ordering::Relaxed);
}

/// Keeps the meter provider; [`Admin::shutdown`] flushes a last OTLP push.
pub struct Admin {
    provider: opentelemetry_sdk::metrics::SdkMeterProvider,
    /// Where the admin HTTP server listens, when it does.
    pub local_addr: Option<SocketAddr>,
}

impl Admin {
    pub fn shutdown(self) {
        let _ = self.provider.force_flush();
        let _ = self.provider.shutdown();
    }
}

/// Installs the metrics pipeline of `service` and, when `admin.listen` is set, serves the admin
/// port in the background for the life of the process (it keeps answering `/readyz` with 503
/// while the service drains).
pub async fn start(service: &str, admin: &AdminConfig, telemetry: &TelemetryConfig) -> anyhow::Result<Admin> {
    let provider = crate::metrics::install(service, telemetry.otlp_endpoint.as_deref(), admin.otlp_metrics_interval)?;
    let local_addr = match admin.listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr} (admin): {e}"))?;
            let local = listener.local_addr()?;
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, router()).await {
                    tracing::error!(error = %e, "admin endpoint stopped");
                }
            });
            tracing::info!(listen = %local, "admin endpoint serving /metrics, /healthz, /readyz");
            Some(local)
        }
        None => None,
    };
    Ok(Admin { provider, local_addr })
}

/// The admin routes.
pub fn router() -> axum::Router {
    use axum::{http::StatusCode, response::IntoResponse, routing::get};
    async fn metrics() -> impl IntoResponse {
        ([(http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], crate::metrics::render())
    }
    async fn healthz() -> &'static str {
        "ok\n"
    }
    async fn readyz() -> (StatusCode, &'static str) {
        if READY.load(Ordering::Relaxed) {
            (StatusCode::OK, "ready\n")
        } else {
            (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
        }
    }
    axum::Router::new().route("/metrics", get(metrics)).route("/healthz", get(healthz)).route("/readyz", get(readyz))
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    async fn status_of(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let code = response.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        (code, response)
    }

    #[tokio::test]
    async fn readyz_follows_serving_while_healthz_and_metrics_always_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router()).await });
        set_ready(false);
        assert_eq!(status_of(addr, "/readyz").await.0, 503, "not serving yet, or draining");
        assert_eq!(status_of(addr, "/healthz").await.0, 200);
        set_ready(true);
        assert_eq!(status_of(addr, "/readyz").await.0, 200);
        let (code, metrics) = status_of(addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(metrics.contains("text/plain; version=0.0.4"), "{metrics}");
        assert_eq!(status_of(addr, "/nope").await.0, 404);
    }

    #[test]
    fn a_push_interval_under_a_second_is_refused() {
        let c = AdminConfig { listen: None, otlp_metrics_interval: Some(Duration::from_millis(500)) };
        assert!(c.validate().unwrap_err().contains("admin.otlp_metrics_interval"));
        assert!(AdminConfig::default().validate().is_ok());
    }
}
