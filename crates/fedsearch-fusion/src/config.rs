//! The `fusion` binary's config file: `server:` and `telemetry:`.
//!
//! ```yaml
//! server:
//!   listen: 127.0.0.1:50052
//!   shutdown_grace: 10s
//! telemetry:
//!   log_format: json
//! ```
//!
//! `FEDSEARCH_*` environment variables override it (`FEDSEARCH_SERVER__LISTEN=...`), see
//! [`fedsearch_core::config`].

use std::{net::SocketAddr, time::Duration};

use fedsearch_core::config::{TelemetryConfig, Validate};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionConfig {
    pub server: ServerConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`); off when unset.
    #[serde(default)]
    pub admin: fedsearch_core::admin::AdminConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:50052`.
    pub listen: SocketAddr,
    /// How long in-flight streams may drain after SIGTERM.
    #[serde(default = "default_grace", with = "fedsearch_core::config::duration")]
    pub shutdown_grace: Duration,
    /// Mutual TLS (the router's certificate name in `allowed_clients`), or `insecure: true`;
    /// the binary refuses to start without one of the two. See [`fedsearch_core::tls`].
    #[serde(default)]
    pub tls: Option<fedsearch_core::tls::TlsConfig>,
}

fn default_grace() -> Duration {
    Duration::from_secs(10)
}

impl Validate for FusionConfig {
    fn validate(&self) -> Result<(), String> {
        self.admin.validate()?;
        if self.server.shutdown_grace > Duration::from_secs(300) {
            return Err("`server.shutdown_grace` must be at most 5m".into());
        }
        if let Some(tls) = &self.server.tls {
            tls.validate_server("server.tls")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use fedsearch_core::config::from_yaml_str;

    use super::*;

    #[test]
    fn the_shipped_config_loads() {
        let yaml = include_str!("../../../deploy/config/fusion.yaml");
        let config: FusionConfig = from_yaml_str(yaml).unwrap();
        assert_eq!(config.server.listen, "127.0.0.1:50052".parse().unwrap());
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = from_yaml_str::<FusionConfig>("server:\n  listen: 127.0.0.1:1\n  lisen: x\n").unwrap_err();
        assert!(err.contains("lisen"), "{err}");
        let err = from_yaml_str::<FusionConfig>("server:\n  listen: nowhere\n").unwrap_err();
        assert!(err.contains("server.listen"), "{err}");
        let err = from_yaml_str::<FusionConfig>("server:\n  listen: 127.0.0.1:1\n  shutdown_grace: 1h\n").unwrap_err();
        assert!(err.contains("shutdown_grace"), "{err}");
        let err = from_yaml_str::<FusionConfig>("server:\n  listen: 127.0.0.1:1\n  shutdown_grace: 10m\n").unwrap_err();
        assert!(err.contains("server.shutdown_grace"), "{err}");
    }
}
