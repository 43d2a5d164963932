//! Channels to a service that may run as several replicas.
//!
//! An address is one URL or a comma-separated list of them. A URL whose host is an IP address
//! is one endpoint; a URL whose host is a name is every address the name resolves to, resolved
//! again every `resolve_every` — a Kubernetes headless Service gives one address per ready pod.
//! Every endpoint is asked for its gRPC health each [`CHECK_EVERY`]; the ones that answer
//! SERVING feed one channel that balances requests over them (tower's power-of-two-choices
//! balancer, by in-flight requests). A replica that dies, hangs or drains (NOT_SERVING) leaves
//! the balancer at its next check, and one that comes back, or a new pod, joins it (outlier
//! ejection by active health checks). A single IP endpoint is a plain lazily-connecting channel.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    time::Duration,
};

use tonic::transport::{Channel, channel::Change};

/// One URL of an address list, checked.
#[derive(Debug, Clone)]
struct Target {
    scheme: String,
    host: String,
    port: u16,
    ip: Option<std::net::IpAddr>,
}

fn parse(url: &str) -> anyhow::Result<Target> {
    let uri: http::Uri = url.trim().parse().map_err(|e| anyhow::anyhow!("invalid endpoint `{url}`: {e}"))?;
    let scheme = uri.scheme_str().ok_or_else(|| anyhow::anyhow!("endpoint `{url}` needs http:// or https://"))?;
    let host = uri.host().ok_or_else(|| anyhow::anyhow!("endpoint `{url}` has no host"))?;
    let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    Ok(Target { scheme: scheme.to_string(), host: bare.to_string(), port, ip: bare.parse().ok() })
}

/// A channel to every replica behind `address` (see the module doc).
pub fn replicated_channel(
    address: &str,
    connect_timeout: Duration,
    resolve_every: Duration,
) -> anyhow::Result<Channel> {
    let targets = address.split(',').map(parse).collect::<anyhow::Result<Vec<_>>>()?;
    if let [one] = targets.as_slice()
        && one.ip.is_some()
    {
        return crate::grpc::lazy_channel(address.trim(), connect_timeout);
    }
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(64);
    tokio::spawn(async move {
        let scheme = targets.first().map_or("http", |t| t.scheme.as_str()).to_string();
        let url = |addr: &SocketAddr| format!("{scheme}://{addr}");
        // Every known address, with a channel of its own for the health checks.
        let mut known: BTreeMap<SocketAddr, Channel> = BTreeMap::new();
        let mut balanced: BTreeSet<SocketAddr> = BTreeSet::new();
        let mut resolved_at: Option<tokio::time::Instant> = None;
        loop {
            if resolved_at.is_none_or(|t| t.elapsed() >= resolve_every) {
                let wanted = resolve_all(&targets).await;
                // A name that resolves to nothing right now (DNS hiccup) keeps what it had.
                if !wanted.is_empty() {
                    known.retain(|a, _| wanted.contains(a));
                    for addr in wanted {
                        if let std::collections::btree_map::Entry::Vacant(e) = known.entry(addr)
                            && let Ok(ep) = crate::grpc::client_endpoint(&url(&addr), connect_timeout)
                        {
                            e.insert(ep.connect_lazy());
                        }
                    }
                }
                resolved_at = Some(tokio::time::Instant::now());
            }
            let checks = known
                .iter()
                .map(|(addr, ch)| async move { (*addr, crate::grpc::is_serving(ch.clone(), CHECK_EVERY / 2).await) });
            let healthy: BTreeSet<SocketAddr> =
                futures::future::join_all(checks).await.into_iter().filter(|(_, ok)| *ok).map(|(a, _)| a).collect();
            for gone in balanced.difference(&healthy) {
                tracing::info!(endpoint = %gone, "endpoint left the balancer (not serving)");
                if changes.send(Change::Remove(*gone)).await.is_err() {
                    return;
                }
            }
            for new in healthy.difference(&balanced) {
                let Ok(ep) = crate::grpc::client_endpoint(&url(new), connect_timeout) else { continue };
                if changes.send(Change::Insert(*new, ep)).await.is_err() {
                    return;
                }
            }
            balanced = healthy;
            tokio::time::sleep(CHECK_EVERY).await;
        }
    });
    Ok(channel)
}

/// How often every endpoint of a replicated address is health-checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

async fn resolve_all(targets: &[Target]) -> BTreeSet<SocketAddr> {
    let mut out = BTreeSet::new();
    for t in targets {
        match t.ip {
            Some(ip) => {
                out.insert(SocketAddr::new(ip, t.port));
            }
            None => match tokio::net::lookup_host((t.host.as_str(), t.port)).await {
                Ok(addrs) => out.extend(addrs),
                Err(e) => tracing::warn!(host = %t.host, error = %e, "cannot resolve an endpoint's name"),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_into_hosts_ports_and_ips() {
        let t = parse("http://es-adapter.fedsearch.svc:50061").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.ip), ("es-adapter.fedsearch.svc", 50061, None));
        let t = parse(" http://127.0.0.2:7 ").unwrap();
        assert_eq!(t.ip, Some("127.0.0.2".parse().unwrap()));
        assert_eq!(parse("https://[::1]").unwrap().port, 443);
        assert!(parse("127.0.0.1:50061").is_err(), "a scheme is needed");
    }

    #[tokio::test]
    async fn every_listed_ip_and_every_address_of_a_name_is_an_endpoint() {
        let targets = vec![
            parse("http://127.0.0.1:7001").unwrap(),
            parse("http://127.0.0.2:7001").unwrap(),
            parse("http://localhost:7002").unwrap(),
        ];
        let all = resolve_all(&targets).await;
        assert!(all.contains(&"127.0.0.1:7001".parse().unwrap()));
        assert!(all.contains(&"127.0.0.2:7001".parse().unwrap()));
        assert!(all.iter().any(|a| a.port() == 7002 && a.ip().is_loopback()), "{all:?}");
    }
}
