//! Benchmark tools for fedsearch: loopback-only targets and listen addresses.
//!
//! A load generator pointed at the wrong host is a denial-of-service tool; these checks make
//! both binaries refuse anything but `127.0.0.0/8`, `::1` and `localhost`.

use std::net::{IpAddr, SocketAddr};

use crate::BenchError;

/// Parses `http://127.0.0.1:PORT` (or `[::1]`, `localhost`) and refuses any other host or scheme.
pub fn target(url: &str) -> Result<http::Uri, BenchError> {
    let uri: http::Uri =
        url.parse().map_err(|_| BenchError::InvalidArgument(format!("--target `{url}` is not a valid URL")))?;
    if uri.scheme_str() != Some("http") {
        return Err(BenchError::InvalidArgument("--target must start with http://".into()));
    }
    let host = uri.host().unwrap_or_default();
    if uri.port_u16().is_none() {
        return Err(BenchError::InvalidArgument("--target must name a port, e.g. http://127.0.0.1:50051".into()));
    }
    let host_ip = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost") || host_ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return Err(BenchError::NotLoopback(format!(
            "--target host `{host}` is not loopback; only 127.0.0.1, ::1 or localhost"
        )));
    }
    Ok(uri)
}

/// Refuses a listen address that is not loopback.
pub fn listen(addr: SocketAddr) -> Result<SocketAddr, BenchError> {
    if addr.ip().is_loopback() {
        Ok(addr)
    } else {
        Err(BenchError::NotLoopback(format!("--listen `{addr}` is not loopback; use 127.0.0.1:PORT")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_targets_are_accepted() {
        for ok in ["http://127.0.0.1:50051", "http://localhost:1", "http://[::1]:8080", "http://127.0.0.2:9"] {
            assert!(target(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn other_hosts_schemes_and_missing_ports_are_refused() {
        for bad in ["http://10.0.0.1:50051", "http://example.com:80", "http://0.0.0.0:80"] {
            assert!(matches!(target(bad), Err(BenchError::NotLoopback(_))), "{bad}");
        }
        for bad in ["https://127.0.0.1:443", "http://127.0.0.1", "not a url"] {
            assert!(matches!(target(bad), Err(BenchError::InvalidArgument(_))), "{bad}");
        }
    }

    #[test]
    fn only_loopback_listen_addresses_are_accepted() {
        assert!(listen("127.0.0.1:0".parse().unwrap()).is_ok());
        assert!(listen("[::1]:0".parse().unwrap()).is_ok());
        assert!(matches!(listen("0.0.0.0:5000".parse().unwrap()), Err(BenchError::NotLoopback(_))));
    }
}
